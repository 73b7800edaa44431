"""The data access of private Frank–Wolfe for nodewise logistic regression on spins
(Zhang, Kamath, Kulkarni & Wu 2020, Alg. 1, in the implementation note's corrected form).

For every node i of a binary model at once, the regression of z_i on x = (z_{−i}, 1) with
weights w in the L1 ball of radius r. A Frank–Wolfe step moves w towards one vertex ±r·e_j
of the ball, the one minimising ⟨s, g⟩ with g = Σ_m ∇ℓ(w; x^m, y^m) the summed gradient of
the logistic loss (∇ℓ = −y·σ(−y⟨w, x⟩)·x). Only the chosen vertex of each node is released.

Guarantee (add/remove neighbours, ρ-zCDP): one record moves every g_j by at most 1
(|σ| ≤ 1, |x_j| ≤ 1), so each vertex's score −⟨s, g⟩/r has sensitivity 1. The default
selection is the exponential mechanism with ε_t = √(8ρ/(p·(T−1))) per node and step,
ε_t²/8-zCDP each (bounded range), p·(T−1) of them: ρ in all — the note's correction of the
paper, whose Laplace scale does not give the ρ it claims (its scores are not monotone).
``selection="laplace"`` is the paper's shape with the noise that is right for it:
report-noisy-min with Laplace(2/ε_t) per vertex, ε_t = √(2ρ/(p·(T−1))), ε_t-DP hence
ε_t²/2-zCDP per draw. ``selection="paper"`` is Alg. 1 as printed, for comparison only:
Laplace(1/ε_t) with ε_t = √(ρ/(p·T)), the scale of a Laplace mechanism for one score,
which the paper takes for ε_t-DP; report-noisy-min over non-monotone scores is only
2ε_t-DP at that scale, so the ρ it claims does not hold. It warns, and is charged what
it provably costs, 2ε_t²·p·(T−1) = 2ρ·(T−1)/T. The whole cost is charged before the
data are read; step T is refused.

The object also keeps the Frank–Wolfe iterate w_t (a function of the released choices
alone, so public) and the records' margins ⟨w_t, x⟩, which :meth:`FrankWolfeSelections.move`
updates in O(n·p) per step (each node's w moves towards one vertex); a step then costs one
n × p × p product, for the gradients (in single precision). ``rho=None`` gives the
non-private algorithm (the exact minimising vertex, nothing charged): the reference the
private one tends to.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from dpgm.dataset import Dataset, require_dataset
from dpgm.errors import (
    BudgetExceededError,
    DataError,
    ParameterError,
    PrivacyParameterError,
    PrivacyWarning,
    user_stacklevel,
)
from dpgm.privacy.budget import PrivacyBudget
from dpgm.privacy.exponential import exponential_mechanism_rows, selection_rho
from dpgm.privacy.noise import laplace_noise
from dpgm.random import RngLike, as_generator
from dpgm.validation import integer, one_of, positive

SELECTIONS = ("em", "laplace", "paper")


def paper_cost(rho: float, steps: int) -> float:
    """What Alg. 1's printed noise at a claimed ρ provably costs: 2ρ·(T − 1)/T."""
    return 2.0 * rho * (steps - 1) / steps


def logistic_gradients(spins: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Σ_m ∇ℓ for every node at once: column i is node i's gradient over x = (z_{−i}, 1),
    its bias in row i; ``weights`` has the same layout (column i: node i's w)."""
    z = spins.astype(np.float64)
    bias = np.diag(weights)
    margins = z @ weights - z * bias + bias  # x^m for node i has 1 where z_i was
    return _gradients(z, margins)


def _gradients(z: np.ndarray, margins: np.ndarray) -> np.ndarray:
    slopes = z * margins
    np.exp(slopes, out=slopes)
    slopes += 1.0
    np.divide(-z, slopes, out=slopes)  # −y·σ(−y·m)
    gradients = (z.T @ slopes).astype(np.float64)
    gradients[np.diag_indices_from(gradients)] = slopes.sum(axis=0, dtype=np.float64)
    return gradients


class FrankWolfeSelections:
    """Frank–Wolfe on every node of binary ``data`` at once, its vertex choices private
    (see the module).

    ``radius`` r of the L1 ball, ``steps`` T (T − 1 selections per node), ``rho`` the whole
    zCDP cost, charged to ``budget`` at construction (``rho=None``: non-private, for
    reference). ``rng=None`` (a release) draws with OpenDP; a seed makes the run
    reproducible (research only). Each step is :meth:`select` then :meth:`move`.
    """

    def __init__(self, data: Dataset, *, radius: float, steps: int, rho: float | None,
                 budget: PrivacyBudget | None, rng: RngLike = None, selection: str = "em",
                 label: str = "private Frank-Wolfe"):
        data = require_dataset(data)
        if any(size != 2 for size in data.domain.shape):
            raise DataError("Frank-Wolfe on spins needs binary attributes")
        self.radius = positive("radius", radius)
        self.steps = integer("steps", steps, least=2)
        self.selection = one_of("selection", selection, SELECTIONS)
        self.nodes = p = len(data.domain)
        self.private = rho is not None
        self.epsilon = math.inf
        if self.private:
            rho = positive("rho", rho, error=PrivacyParameterError)
            if not isinstance(budget, PrivacyBudget) or budget.mode != "zcdp":
                raise PrivacyParameterError("private Frank-Wolfe is rho-zCDP: give a zCDP budget")
            draws = p * (self.steps - 1)
            accounting = ""
            if self.selection == "em":
                self.epsilon = math.sqrt(8.0 * rho / draws)
                cost = draws * selection_rho(self.epsilon, 1.0, rng is None)
            elif self.selection == "laplace":
                self.epsilon = math.sqrt(2.0 * rho / draws)
                cost = draws * self.epsilon**2 / 2.0
            else:  # the paper's scale 1/ε_claimed gives report-noisy-min ε = 2·ε_claimed
                claimed = math.sqrt(rho / (p * self.steps))
                self.epsilon = 2.0 * claimed
                cost = paper_cost(rho, self.steps)
                accounting = (f"paper-literal Laplace scale: claims rho={rho:g}, "
                              f"provably rho={cost:g}")
                warnings.warn(
                    f"selection='paper' is Alg. 1's printed Laplace scale, for comparison "
                    f"only: it is not {rho:g}-zCDP as the paper claims (its scores are not "
                    f"monotone); charged its provable cost, rho={cost:g}",
                    PrivacyWarning, stacklevel=user_stacklevel())
            if cost > rho * (1.0 + 1e-9) and self.selection == "em":
                self.epsilon *= math.sqrt(rho / cost)  # OpenDP proves more than ε²/8
                cost = rho
            budget.charge(rho=cost, accounting=accounting,
                          label=f"{label}: {self.steps - 1} selections x {p} nodes "
                                f"({self.selection}, epsilon {self.epsilon:.4g} each)")
        #: Laplace scale of report-noisy-min on the scores −⟨s, g⟩/r (2/ε: ε-DP per draw)
        self.noise_scale = (None if not self.private or self.selection == "em"
                            else 2.0 / self.epsilon)
        # the data are read from here on
        if data.weights is not None:
            raise DataError("Frank-Wolfe on spins needs unweighted records")
        # single precision for the n × p arrays: a step is an exp and a product over them,
        # twice as fast, and the selection needs the gradients to a few digits only
        self._z = 2.0 * data.records.astype(np.float32) - 1.0
        self._margins = np.zeros(self._z.shape, dtype=np.float32)  # ⟨w_t, x⟩; w_1 = 0
        self.weights = np.zeros((p, p))  # the iterate: column i node i, its bias at (i, i)
        self._rng = None if rng is None else as_generator(rng)
        self._taken = 0
        self._chosen: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def remaining(self) -> int:
        """Selections left of those paid for."""
        return self.steps - 1 - self._taken

    def select(self) -> tuple[np.ndarray, np.ndarray]:
        """The vertex each node moves towards from the current iterate: its coordinate j
        (the node's own index is its bias) and the sign of ±r·e_j."""
        if self.remaining <= 0:
            raise BudgetExceededError(f"all {self.steps - 1} Frank-Wolfe selections are spent")
        self._taken += 1
        g = _gradients(self._z, self._margins).T  # row i: node i
        if not self.private:  # the exact minimiser of ⟨s, g⟩
            rows = np.argmax(np.abs(g), axis=1)
            chosen = (rows, -np.sign(g[np.arange(self.nodes), rows]))
        else:
            scores = np.concatenate([-g, g], axis=1)  # −⟨s, g⟩/r for +r e_j, then −r e_j
            if self.selection == "em":
                picks = exponential_mechanism_rows(scores, self.epsilon, 1.0, rng=self._rng)
            else:  # report-noisy-min of ⟨s, g⟩/r = report-noisy-max of the scores
                picks = np.argmax(laplace_noise(scores, self.noise_scale, self._rng), axis=1)
            chosen = (picks % self.nodes, np.where(picks < self.nodes, 1.0, -1.0))
        self._chosen = chosen
        return chosen

    def move(self, step: float) -> None:
        """w ← (1 − step)·w + step·(the vertex chosen last), and the margins with it."""
        if self._chosen is None:
            raise ParameterError("select a vertex before moving towards it")
        rows, signs = self._chosen
        self._chosen = None
        nodes = np.arange(self.nodes)
        self.weights *= 1.0 - step
        self.weights[rows, nodes] += step * self.radius * signs
        towards = self._z[:, rows]  # each node's chosen coordinate of x, per record
        towards[:, rows == nodes] = 1.0  # the bias coordinate is 1
        self._margins *= np.float32(1.0 - step)
        towards *= (step * self.radius * signs).astype(np.float32)
        self._margins += towards
