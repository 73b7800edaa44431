"""DP-SGD's data access (Abadi et al. 2016): noisy sums of clipped per-record gradients.

For a log-linear model over clique tables, the gradient of one record's loss
−log p(x; θ) = A(θ) − θᵀφ(x) is g(x) = μ(θ) − φ(x), with μ(θ) the model's clique
marginals (probabilities) and φ(x) the record's one-hot cells; ‖g(x)‖² = Σ_C (1 −
2μ_C(x_C) + ‖μ_C‖²) ≤ 2|𝒞|. One step of :class:`NoisyGradientSums` draws a lot (each
record independently with probability q, "Poisson sampling"), clips each gradient of the
lot to L2 norm C, sums, and adds Gaussian noise of standard deviation σC per coordinate.

Guarantee, add/remove neighbours: one record changes the clipped sum by one clipped
gradient, L2 norm ≤ C (a record of weight w ≤ 1 counts w times), so a step is the
Poisson-subsampled Gaussian mechanism with noise multiplier σ; T adaptively chosen steps
are accounted by Rényi DP (dp-accounting's ``RdpAccountant``) and converted to (ε, δ).
The whole (ε, δ) is charged to the budget once, before the data are read; the object then
answers at most T steps. dp-accounting is the optional extra ``dpgm[psgd]``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from scipy.optimize import brentq

from dpgm.dataset import Dataset, require_records
from dpgm.errors import BudgetExceededError, DataError, DpgmError, PrivacyParameterError
from dpgm.privacy.amplification import check_rate, secret_uniforms
from dpgm.privacy.budget import PrivacyBudget
from dpgm.privacy.noise import gaussian_noise
from dpgm.privacy.policy import check_epsilon, check_probability
from dpgm.random import RngLike, as_generator
from dpgm.validation import integer, optional, positive

# Steps of 1e-10 in log σ past Brent's root, to its feasible side (ε ≤ target); σ's bracket
# is the fallback, so the σ returned always meets the target.
_FEASIBLE_STEPS = 60


def _accounting():
    try:
        import dp_accounting
        from dp_accounting import rdp
    except ImportError as error:  # an optional extra: say how to get it
        raise DpgmError(
            "DP-SGD's privacy accounting needs dp-accounting: pip install 'dpgm[psgd]'"
        ) from error
    return dp_accounting, rdp


def sgd_epsilon(noise_multiplier: float, sampling_rate: float, steps: int, delta: float) -> float:
    """ε of ``steps`` Poisson-subsampled Gaussian steps at ``delta`` (RDP accountant)."""
    noise_multiplier = positive("noise_multiplier", noise_multiplier, error=PrivacyParameterError)
    sampling_rate = check_rate(sampling_rate, "sampling_rate")
    steps = integer("steps", steps, least=1)
    delta = check_probability("delta", delta)
    dp_accounting, rdp = _accounting()
    event = dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(
            sampling_rate, dp_accounting.GaussianDpEvent(noise_multiplier)
        ),
        steps,
    )
    # dp-accounting logs, through absl, each order whose series fails to converge; it
    # leaves that order out, which can only make ε larger (safe): keep the logs quiet
    absl = logging.getLogger("absl")
    level = absl.level
    absl.setLevel(logging.ERROR)
    try:
        accountant = rdp.RdpAccountant()  # add/remove neighbours, its default order grid
        accountant.compose(event)
        return float(accountant.get_epsilon(delta))
    finally:
        absl.setLevel(level)


def sgd_noise_multiplier(
    epsilon: float,
    delta: float,
    sampling_rate: float,
    steps: int,
    *,
    largest: float | None = None,
) -> float:
    """The smallest noise multiplier σ whose ``steps`` steps are (``epsilon``, ``delta``)-DP.

    Found by Brent's method on :func:`sgd_epsilon` (decreasing in σ); the returned σ always
    meets the target. If it exceeds ``largest``, the target is called not attainable
    (:class:`PrivacyParameterError`), as in Abadi et al.'s and Bernstein et al.'s practice.
    """
    epsilon = check_epsilon(epsilon)
    largest = optional(positive, "largest", largest)
    hi = _smallest_multiplier(epsilon, check_probability("delta", delta),
                              check_rate(sampling_rate, "sampling_rate"),
                              integer("steps", steps, least=1))
    if largest is not None and hi > largest:
        raise PrivacyParameterError(
            f"(epsilon={epsilon:g}, delta={delta:g}) is not attainable with {steps} steps at "
            f"sampling rate {sampling_rate:g}: it needs noise multiplier {hi:.4g} > {largest:g}"
        )
    return hi  # feasible end: ε(hi) ≤ target


@lru_cache(maxsize=256)  # a pure function of four numbers, each a few dozen accountant runs
def _smallest_multiplier(epsilon: float, delta: float, sampling_rate: float, steps: int) -> float:
    """:func:`sgd_noise_multiplier` on checked arguments, without its ``largest``."""
    def excess(log_sigma: float) -> float:
        return sgd_epsilon(math.exp(log_sigma), sampling_rate, steps, delta) - epsilon

    lo, hi = None, 1.0  # lo: a σ known to miss the target
    while excess(math.log(hi)) > 0:
        lo, hi = hi, 2.0 * hi
        if hi > 1e6:
            raise PrivacyParameterError(f"epsilon={epsilon:g} needs a noise multiplier over 1e6")
    if lo is None:  # σ = 1 meets it: search down to 1e-3
        lo = 1e-3
        if excess(math.log(lo)) <= 0:
            return lo
    # ε(σ) is decreasing and continuous, so a root lies between: Brent's method finds it
    # in about a dozen accountant runs, where bisection took thirty
    root = brentq(excess, math.log(lo), math.log(hi), xtol=1e-12, rtol=1e-12)
    for step in range(1, _FEASIBLE_STEPS):  # to the feasible side of the root
        candidate = math.exp(root + step * 1e-10)
        if candidate >= hi or excess(math.log(candidate)) <= 0:
            return min(candidate, hi)
    return hi


def clipped_gradient_sum(
    cells: np.ndarray, mu: np.ndarray, offsets: np.ndarray, clip: float, weights=None
) -> np.ndarray:
    """Σ_i w_i·g(x_i)·min(1, C/‖g(x_i)‖) for records whose cells (flat indices into the
    clique-table layout, one column per clique) are ``cells``; ``mu`` holds μ(θ) in that
    layout, clique c occupying ``mu[offsets[c]:offsets[c+1]]``."""
    squares = np.add.reduceat(mu * mu, offsets[:-1]) if mu.size else np.zeros(0)
    norms = np.sqrt(np.maximum(
        (1.0 + squares - 2.0 * mu[cells]).sum(axis=1), 0.0))  # ‖μ − φ(x)‖ per record
    scale = np.minimum(1.0, clip / np.maximum(norms, 1e-300))
    if weights is not None:
        scale = scale * weights
    hits = np.bincount(cells.ravel(), weights=np.repeat(scale, cells.shape[1]),
                       minlength=mu.size)
    return scale.sum() * mu - hits


def clipped_individual_gradient_sum(
    cells: np.ndarray, owners: np.ndarray, mu: np.ndarray, offsets: np.ndarray, clip: float
) -> np.ndarray:
    """Σ_u G_u·min(1, C/‖G_u‖) over individuals u, G_u = Σ_{i owned by u} g(x_i) = k_u·μ − c_u
    (k_u records, c_u their summed cell indicators), for records whose cells are ``cells``
    and whose owners are ``owners`` (any labels); layout as in
    :func:`clipped_gradient_sum`. ‖G_u‖² = k_u²‖μ‖² − 2k_u·μᵀc_u + ‖c_u‖²: no per-individual
    vectors are formed."""
    _, owner = np.unique(owners, return_inverse=True)
    groups = int(owner.max(initial=-1)) + 1
    records = np.bincount(owner, minlength=groups).astype(np.float64)  # k_u
    along = np.bincount(owner, weights=mu[cells].sum(axis=1), minlength=groups)  # μᵀc_u
    width = int(offsets[-1])
    keys, counts = np.unique((owner[:, None] * width + cells).ravel(), return_counts=True)
    own = np.bincount(keys // width, weights=counts.astype(np.float64) ** 2,
                      minlength=groups)  # ‖c_u‖²
    norms = np.sqrt(np.maximum(records**2 * float(mu @ mu) - 2.0 * records * along + own, 0.0))
    scale = np.minimum(1.0, clip / np.maximum(norms, 1e-300))
    hits = np.bincount(cells.ravel(), weights=np.repeat(scale[owner], cells.shape[1]),
                       minlength=mu.size)
    return float(scale @ records) * mu - hits


class NoisyGradientSums:
    """Noisy sums of clipped log-likelihood gradients over Poisson lots of ``data``.

    (``epsilon``, ``delta``)-DP for all ``steps`` steps together (add/remove neighbours;
    sensitivity of one step's sum: ``clip`` in L2), charged to ``budget`` (made with
    :meth:`PrivacyBudget.approximate`) at construction. ``cliques`` are the model's
    cliques, each in domain order; gradients are flat over their tables in that order.
    ``rng=None`` (a release) draws lots from the OS's cryptographic source and noise from
    OpenDP; a seed makes the run reproducible (research only). ``noise_multiplier`` (σ)
    may be given, found beforehand from public facts: it is checked against the
    accountant; otherwise the smallest σ that meets (ε, δ) is found here.

    ``individuals`` (the owner of each record) makes the unit of privacy an individual
    who may own several records: lots sample individuals (rate q), and each individual's
    summed gradient is clipped to ``clip``, so that adding or removing one individual
    moves a step's sum by at most ``clip`` and the same accounting holds for them.
    """

    def __init__(
        self,
        data: Dataset,
        cliques: Sequence[tuple[str, ...]],
        *,
        epsilon: float,
        delta: float,
        sampling_rate: float,
        steps: int,
        clip: float,
        budget: PrivacyBudget,
        rng: RngLike = None,
        largest_noise: float | None = None,
        noise_multiplier: float | None = None,
        label: str = "DP-SGD",
        individuals: np.ndarray | None = None,
    ):
        data = require_records(data)
        if individuals is not None:
            individuals = np.asarray(individuals)
            if individuals.shape != (len(data),):  # the count itself is never shown
                raise DataError("individuals must name the owner of each record, in order")
        self.sampling_rate = check_rate(sampling_rate, "sampling_rate")
        self.steps = integer("steps", steps, least=1)
        self.clip = positive("clip", clip, error=PrivacyParameterError)
        epsilon = check_epsilon(epsilon)
        delta = check_probability("delta", delta)
        if not isinstance(budget, PrivacyBudget) or budget.mode != "approx":
            raise PrivacyParameterError(
                "DP-SGD is (epsilon, delta)-DP: give a PrivacyBudget.approximate(epsilon, delta)"
            )
        if noise_multiplier is None:
            noise_multiplier = sgd_noise_multiplier(
                epsilon, delta, self.sampling_rate, self.steps, largest=largest_noise
            )
        self.noise_multiplier = positive("noise_multiplier", noise_multiplier,
                                         error=PrivacyParameterError)
        accounted = sgd_epsilon(self.noise_multiplier, self.sampling_rate, self.steps, delta)
        if accounted > epsilon * (1.0 + 1e-9):  # a given σ is checked, never trusted
            raise PrivacyParameterError(
                f"noise multiplier {self.noise_multiplier:g} gives epsilon={accounted:.6g} over "
                f"{self.steps} steps, more than epsilon={epsilon:g}"
            )
        budget.charge(
            epsilon=epsilon, delta=delta, label=label,
            accounting=(f"RDP (dp-accounting): {self.steps} Poisson-subsampled Gaussian steps, "
                        f"q={self.sampling_rate:g}, noise multiplier {self.noise_multiplier:.6g}, "
                        f"clip {self.clip:g}; epsilon={accounted:.6g} at delta={delta:g}"),
        )
        # the data are read from here on
        if data.weights is not None and data.weights.size and data.weights.max() > 1.0:
            raise DataError("record weights must be at most 1 (sensitivity); rescale them")
        if individuals is not None and data.weights is not None:
            raise DataError("per-individual clipping needs unweighted records")
        domain = data.domain
        shapes = [domain.project(c).shape for c in cliques]
        sizes = [math.prod(s) for s in shapes]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        # each record's cell in each clique table, as flat indices into the layout
        columns = []
        for clique, shape, start in zip(cliques, shapes, self.offsets[:-1]):
            codes = data.records[:, list(domain.axes(clique))]
            flat = np.ravel_multi_index(tuple(codes.T), shape) if len(clique) > 1 else codes[:, 0]
            columns.append(flat.astype(np.int64) + start)
        self._cells = np.stack(columns, axis=1) if columns else np.zeros((len(data), 0), int)
        self._weights = data.weights
        self._owner = None
        if individuals is not None:
            _, self._owner = np.unique(individuals, return_inverse=True)
            self._owner_count = int(self._owner.max(initial=-1)) + 1
        # one generator for all steps (a seed turned into a generator per step would
        # repeat the same lots and noise)
        self._rng = None if rng is None else as_generator(rng)
        self._taken = 0

    @property
    def remaining(self) -> int:
        """Steps left of those paid for."""
        return self.steps - self._taken

    def step(self, mu: np.ndarray) -> np.ndarray:
        """One step: the noisy sum of clipped gradients at model marginals ``mu`` (flat)."""
        if self._taken >= self.steps:
            raise BudgetExceededError(f"all {self.steps} DP-SGD steps paid for are spent")
        mu = np.asarray(mu, dtype=np.float64)
        if mu.shape != (int(self.offsets[-1]),) or not np.all(np.isfinite(mu)):
            raise PrivacyParameterError(
                f"mu must be {int(self.offsets[-1])} finite marginal probabilities"
            )
        self._taken += 1
        if self._owner is not None:
            keep = self._lot(self._owner_count)[self._owner]
            exact = clipped_individual_gradient_sum(
                self._cells[keep], self._owner[keep], mu, self.offsets, self.clip)
        else:
            keep = self._lot(self._cells.shape[0])
            weights = None if self._weights is None else self._weights[keep]
            exact = clipped_gradient_sum(self._cells[keep], mu, self.offsets, self.clip,
                                         weights)
        return gaussian_noise(exact, self.noise_multiplier * self.clip, self._rng)

    def _lot(self, units: int) -> np.ndarray:
        # who is in a lot must stay secret: the OS's cryptographic source on a release
        return secret_uniforms(units, self._rng) < self.sampling_rate
