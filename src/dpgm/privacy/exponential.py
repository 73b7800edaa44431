"""The exponential mechanism: choose a candidate, favouring high scores, privately.

Neighbouring datasets differ by adding or removing one record (unbounded DP);
``sensitivity`` Δ bounds how much one record can change any candidate's score.

Candidate i is chosen with probability ∝ exp(ε·score_i / (2Δ)), which is ε-DP (McSherry &
Talwar 2007). Its privacy loss is also ε-bounded-range, so it is ε²/8-zCDP (Cesar &
Rogers 2021, "Bounding, Concentrating, and Truncating"), not merely ε²/2: a zCDP budget
is charged ρ = ε²/8, a pure budget ε.

Samplers:

* ``rng=None`` (a release): OpenDP's exact report-noisy-max with Gumbel noise
  (``make_noisy_max`` with a zero-concentrated-divergence output measure, OpenDP >= 0.16),
  which draws exactly this law with arbitrary-precision arithmetic: no candidate's
  probability rounds to zero. Before charging, the ρ that OpenDP's own privacy map proves
  for it is read, and the larger of that and ε²/8 is charged. (Up to OpenDP 0.15 the
  same constructor used permute-and-flip, which is ε-DP but not ε-bounded-range, while
  claiming ε²/8: opendp/opendp#2911. dpgm's tests check the law drawn here is the
  exponential mechanism's, and that a permute-and-flip law would be caught.)
  With many candidates (more than :data:`BLOCKED_ABOVE`), a draw is two exact noisy maxes:
  one over blocks of about √n candidates, scored s·log Σ exp(score/s) with s = 2Δ/ε (a
  function with the same sensitivity Δ), then one inside the chosen block. The product
  of the two laws is the exponential mechanism's law, and the cost is O(√n) per draw.
* a seed or generator: NumPy floats (the Gumbel-max trick for one draw, the inverse CDF
  for several) — reproducible, for research only; draws a
  :class:`~dpgm.errors.SeedWarning` the first time.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from dpgm.errors import ParameterError, PrivacyParameterError
from dpgm.privacy.budget import PrivacyBudget
from dpgm.privacy.policy import check_epsilon, warn_seeded
from dpgm.random import RngLike, as_generator
from dpgm.validation import integer, positive

#: above this many candidates the exact sampler draws a block first, then inside it:
#: OpenDP's exact arithmetic costs about linearly in the candidates, so two draws over
#: about √n each are faster from here on (0.16 against 0.25 ms at 64 candidates, 0.25
#: against 1.0 ms at 512 on the 2-core machine)
BLOCKED_ABOVE = 48


def zcdp_cost(epsilon: float) -> float:
    """ρ of one exponential mechanism with parameter ε (bounded range): ε²/8."""
    return epsilon**2 / 8.0


def exponential_mechanism(
    scores,
    epsilon: float,
    sensitivity: float = 1.0,
    rng: RngLike = None,
    budget: PrivacyBudget | None = None,
    label: str = "",
    size: int | None = None,
) -> int | np.ndarray:
    """Index of the chosen candidate; P(i) ∝ exp(ε·scores[i] / (2·sensitivity)).

    ``size``: that many independent draws (an array of indices), each an exponential
    mechanism, so they cost ``size`` times one draw by sequential composition. A
    ``budget`` is charged (ε per draw in pure mode, ρ per draw in zCDP mode, see the module
    docstring) in one entry before anything is drawn.
    """
    epsilon, sensitivity, values = _checked(scores, epsilon, sensitivity, 1)
    draws = 1 if size is None else integer("size", size, least=1)

    exact = None if rng is not None else _ExactSelector(values, epsilon, sensitivity)
    if budget is not None:
        what = label or "exponential mechanism"
        what = what if size is None else f"{what} (x{draws})"
        if budget.mode != "zcdp":
            budget.charge(epsilon=draws * epsilon, label=what)
        else:
            rho = zcdp_cost(epsilon) if exact is None else exact.rho
            budget.charge(rho=draws * rho, label=what)

    if exact is not None:
        if size is None:
            return exact.draw()
        return np.array([exact.draw() for _ in range(draws)], dtype=np.int64)

    warn_seeded()
    # argmax of (log-weight + standard Gumbel) is distributed as the normalised weights.
    # Subtracting the max score keeps the log-weights <= 0 (it does not change the law); a
    # weight that underflows to exp(-inf) = 0 is already 0 in double precision.
    with np.errstate(over="ignore"):
        logits = (values - values.max()) * (epsilon / (2.0 * sensitivity))
    generator = as_generator(rng)
    if size is not None:
        # many draws from one law: inverse CDF, O(n + size·log n) instead of O(size·n)
        cumulative = np.cumsum(np.exp(logits))
        picks = np.searchsorted(cumulative, generator.random(draws) * cumulative[-1], "right")
        return np.minimum(picks, values.size - 1)
    gumbel = generator.gumbel(size=values.size)
    return int(np.argmax(logits + gumbel))


def _checked(scores, epsilon: float, sensitivity: float, ndim: int
             ) -> tuple[float, float, np.ndarray]:
    """ε, Δ and the scores as floats, checked: ``ndim`` 1 (a vector) or 2 (m × c)."""
    epsilon = check_epsilon(epsilon)
    sensitivity = positive("sensitivity", sensitivity, error=PrivacyParameterError)
    values = np.asarray(scores, dtype=np.float64)
    if values.ndim != ndim or values.size == 0:
        shape = "a non-empty 1-d sequence" if ndim == 1 else "a non-empty m x c array"
        raise ParameterError(f"scores must be {shape}, got shape {values.shape}")
    if not np.all(np.isfinite(values)):
        raise ParameterError("scores must be finite (found NaN or infinity)")
    return epsilon, sensitivity, values


def selection_rho(epsilon: float, sensitivity: float, exact: bool) -> float:
    """ρ charged for one draw: ε²/8, or on the exact (OpenDP) path the larger of that and
    what OpenDP proves for its sampler."""
    rho = zcdp_cost(epsilon)
    if exact:
        rho = max(rho, proven_rho(2.0 * sensitivity / epsilon, sensitivity))
    return rho


def exponential_mechanism_rows(
    scores,
    epsilon: float,
    sensitivity: float = 1.0,
    rng: RngLike = None,
    budget: PrivacyBudget | None = None,
    label: str = "",
) -> np.ndarray:
    """One independent exponential mechanism per row of ``scores`` (m × c): the chosen
    column of each row, P(j | row i) ∝ exp(ε·scores[i, j] / (2·sensitivity)).

    Each row is one selection on the same data (e.g. one Frank–Wolfe step for each of m
    nodes), so the m draws compose sequentially: the ``budget`` is charged m times one
    draw (m·ε pure, m·ρ zCDP with ρ as in :func:`exponential_mechanism`) in one entry,
    before anything is drawn. ``rng=None`` draws each row exactly with OpenDP; a seed
    draws all rows at once by the Gumbel-max trick (research only).
    """
    epsilon, sensitivity, values = _checked(scores, epsilon, sensitivity, 2)
    rows = values.shape[0]
    if budget is not None:
        what = f"{label or 'exponential mechanism'} (x{rows})"
        if budget.mode != "zcdp":
            budget.charge(epsilon=rows * epsilon, label=what)
        else:
            budget.charge(rho=rows * selection_rho(epsilon, sensitivity, rng is None),
                          label=what)
    if rng is None:
        return np.array([_ExactSelector(row, epsilon, sensitivity).draw() for row in values],
                        dtype=np.int64)
    warn_seeded()
    with np.errstate(over="ignore"):
        logits = (values - values.max(axis=1, keepdims=True)) * (epsilon / (2.0 * sensitivity))
    return np.argmax(logits + as_generator(rng).gumbel(size=values.shape), axis=1)


def epsilon_for(rho: float, sensitivity: float, exact: bool) -> float:
    """The ε of one draw whose charge (:func:`selection_rho`) is at most ``rho``: √(8ρ),
    lowered where OpenDP's map proves more than ε²/8 for it."""
    epsilon = math.sqrt(8.0 * rho)
    cost = selection_rho(epsilon, sensitivity, exact)
    if cost > rho * (1.0 + 1e-9):
        epsilon *= math.sqrt(rho / cost) * (1.0 - 1e-9)
    return epsilon


@lru_cache(maxsize=64)
def proven_rho(scale: float, sensitivity: float) -> float:
    """The ρ OpenDP's privacy map proves for its noisy max at ``scale`` on scores that move
    by at most ``sensitivity``."""
    return float(noisy_max_measurement(scale).map(sensitivity))


@lru_cache(maxsize=64)  # the measurement is immutable; building it costs a few tenths of a ms
def noisy_max_measurement(scale: float):
    """OpenDP's exact Gumbel report-noisy-max on float vectors, zCDP output measure."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    return dp.m.make_noisy_max(
        dp.vector_domain(dp.atom_domain(T="f64", nan=False)),
        dp.linf_distance(T="f64"),
        dp.zero_concentrated_divergence(),
        scale=scale,
    )


class _ExactSelector:
    """Exact draws of the exponential mechanism on fixed scores (see the module docstring)."""

    def __init__(self, values: np.ndarray, epsilon: float, sensitivity: float):
        # P(i) ∝ exp(score_i / scale) with scale = 2Δ/ε is the exponential mechanism
        self.scale = 2.0 * sensitivity / epsilon
        self.measurement = noisy_max_measurement(self.scale)
        #: what OpenDP proves for scores that move by at most Δ, never below ε²/8
        self.rho = max(zcdp_cost(epsilon), proven_rho(self.scale, sensitivity))
        # the law is the same for scores shifted by a constant; OpenDP's exact arithmetic is
        # several times faster on scores near 0 than on large ones (e.g. summed gradients)
        self.values = values = values - values.max()
        self.blocks: list[tuple[int, int]] | None = None
        self._lists: dict[int, list[float]] = {}
        # blocked or not is decided by the number of candidates alone (a public fact)
        if values.size > BLOCKED_ABOVE:
            width = math.isqrt(values.size - 1) + 1
            starts = np.arange(0, values.size, width)
            lengths = np.diff(np.append(starts, values.size))
            top = np.maximum.reduceat(values, starts)
            # each term exp((score - top)/s) is in [0, 1] and the top one is 1, so the sum
            # is in [1, width] and the block's score top + s·log(sum) is always finite
            with np.errstate(over="ignore", under="ignore"):
                shifted = (values - np.repeat(top, lengths)) / self.scale
            sums = np.add.reduceat(np.exp(shifted), starts)
            self.blocks = [(int(a), int(min(a + width, values.size))) for a in starts]
            self.block_scores = (top + self.scale * np.log(sums)).tolist()

    def _slice(self, k: int, start: int, stop: int) -> list[float]:
        found = self._lists.get(k)
        if found is None:
            found = self._lists[k] = self.values[start:stop].tolist()
        return found

    def draw(self) -> int:
        if self.blocks is None:
            return int(self.measurement(self._slice(-1, 0, self.values.size)))
        k = int(self.measurement(self.block_scores))
        start, stop = self.blocks[k]
        return start + int(self.measurement(self._slice(k, start, stop)))
