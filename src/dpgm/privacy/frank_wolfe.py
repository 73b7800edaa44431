"""The data access of private Frank–Wolfe for nodewise logistic regressions on discrete
records (Zhang, Kamath, Kulkarni & Wu 2020, Alg. 1, in the implementation note's corrected
form), many regressions at once.

A regression (i, u, v) predicts, for the records whose attribute i takes value u or v,
which of the two (label +1 for u, −1 for v; every other record has label 0 and takes no
part) from features of the other attributes and a bias: their spins (binary attributes),
their one-hot codes, or the parities of up to t − 1 of their spins. Its weights w lie in
the L1 ball of radius r; a Frank–Wolfe step moves w towards the vertex ±r·e_j minimising
⟨s, g⟩, g = Σ_m ∇ℓ(w; x^m, y^m) the summed gradient of the logistic loss
(∇ℓ = −y·σ(−y⟨w, x⟩)·x). Only the chosen vertex of each regression is released. The Ising
learner runs (i, 1, 0) for every i; the pairwise learner (i, u, v) for pairs of values.

Guarantee (add/remove neighbours, ρ-zCDP): one record moves every g_j of a regression it
takes part in by at most 1 (|σ| ≤ 1, |x_j| ≤ 1) and no other regression's, so each
vertex's score −⟨s, g⟩/r has sensitivity 1. A record takes part in at most E regressions
(its *exposure*, a public fact of the list: for each attribute, the most regressions one
of its values enters, summed over attributes), so by parallel composition the T − 1
selections of every regression, each ρ/(E·(T − 1)), cost ρ in all. Selections:

* ``"em"`` (default): the exponential mechanism, ε_t = √(8ρ/(E·(T−1))), ε_t²/8-zCDP each
  (bounded range) — the note's correction of the paper, whose Laplace scale does not give
  the ρ it claims (its scores are not monotone);
* ``"laplace"``: the paper's shape with the noise that is right for it: report-noisy-min
  with Laplace(2/ε_t) per vertex, ε_t = √(2ρ/(E·(T−1))), ε_t-DP hence ε_t²/2-zCDP;
* ``"paper"``: Alg. 1 as printed, for comparison only: Laplace(1/ε_t) with
  ε_t = √(ρ/(E·T)), the scale of a Laplace mechanism for one score, which the paper takes
  for ε_t-DP; report-noisy-min over non-monotone scores is only 2ε_t-DP at that scale,
  so the ρ it claims does not hold. It warns, and is charged what it provably costs,
  2ε_t²·E·(T−1) = 2ρ·(T−1)/T.

The whole cost is charged before the data are read; step T is refused. The object keeps
the iterate (a function of the released choices alone, so public) and the records'
margins ⟨w, x⟩, which :meth:`FrankWolfeSelections.move` updates in O(n) per regression; a
step costs one n × features × regressions product, in single precision. ``rho=None`` gives
the non-private algorithm (the exact minimising vertex, nothing charged).

Floating point: the sensitivity 1 is that of the computed scores, not only of the exact
ones. A record's term (its margin, σ and label, computed element by element from the record
and the public iterate, so the same wherever the record sits) is rounded to a multiple of
2^-14, keeping |term| ≤ 1; the scores are then sums of integers (in units of 2^-14) whose
every partial sum single and double precision hold exactly — SUM_ROWS rows per product,
MAX_RECORDS records in all — so no order or block boundary rounds them. Summing in
single (or double) precision instead makes a score depend on where each record falls: one
removed record then moved a score by 1.008 at n = 10⁵ and 1.046 at 3·10⁶ in single
precision, and a rigorous bound for double precision (γ_d·Σ|terms|, d the summation depth)
grows with n, which is private. Exact sums need no slack and no n; the rounding of the
terms costs accuracy only (at most 2^-15 per record and score).

The implementation note is ``docs/notes/mrf.md`` (its A1 and D3: the corrected selection).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from itertools import combinations

import numpy as np
from scipy.special import expit

from dpgm.dataset import Dataset, require_records
from dpgm.errors import (
    BudgetExceededError,
    DataError,
    ParameterError,
    PrivacyParameterError,
    PrivacyWarning,
    user_stacklevel,
)
from dpgm.privacy.budget import PrivacyBudget
from dpgm.privacy.exponential import epsilon_for, exponential_mechanism_rows, selection_rho
from dpgm.privacy.noise import laplace_noise
from dpgm.random import RngLike, as_generator
from dpgm.validation import integer, one_of, positive

SELECTIONS = ("em", "laplace", "paper")
#: floats of one block of margins in a pass over the records (2 MiB: stays in cache)
CACHE_FLOATS = 2**19
#: a record's term in a score is rounded to a multiple of 2^-TERM_BITS (at most 2^-15 ≈ 3e-5
#: off), so that the scores are exact sums of integers (see _add_block_ticks)
TERM_BITS = 14
#: rows of one single-precision product: partial sums stay integers of at most 2^24 ticks
SUM_ROWS = 2 ** (24 - TERM_BITS)
#: the most records Frank–Wolfe reads, a public limit: a score's sum, at most 2^TERM_BITS
#: ticks per record, must stay an integer that a double holds exactly (below 2^53)
MAX_RECORDS = 2 ** (53 - TERM_BITS)
FEATURES = ("spins", "onehot", "parities")


def paper_cost(rho: float, steps: int) -> float:
    """What Alg. 1's printed noise at a claimed ρ provably costs: 2ρ·(T − 1)/T."""
    return 2.0 * rho * (steps - 1) / steps


def feature_columns(shape: Sequence[int], features: str = "spins", order: int = 2
                    ) -> list[tuple[tuple[int, ...], int]]:
    """The feature columns as (attributes involved, value): ``"spins"`` one column
    ((j,), 1) per binary attribute (2·value − 1), ``"onehot"`` one column ((j,), a) per
    value, ``"parities"`` one column (I, 1) per set I of 1 to ``order`` − 1 binary
    attributes (the product of their spins). The bias is not among them."""
    features = one_of("features", features, FEATURES)
    if features != "onehot" and any(k != 2 for k in shape):
        raise DataError(f"{features} features need binary attributes")
    p = len(shape)
    if features == "spins":
        return [((j,), 1) for j in range(p)]
    if features == "onehot":
        return [((j,), a) for j in range(p) for a in range(shape[j])]
    order = integer("order", order, least=2)
    return [(subset, 1) for size in range(1, order) for subset in combinations(range(p), size)]


def feature_matrix(records: np.ndarray, columns: list[tuple[tuple[int, ...], int]],
                   features: str) -> np.ndarray:
    """The n × (features + 1) design in single precision, the bias last (all ones)."""
    design = np.ones((records.shape[0], len(columns) + 1), dtype=np.float32)
    if features == "onehot":
        for c, ((j,), a) in enumerate(columns):
            design[:, c] = records[:, j] == a
        return design
    spins = 2.0 * records.astype(np.float32) - 1.0
    for c, (subset, _) in enumerate(columns):
        design[:, c] = np.prod(spins[:, list(subset)], axis=1)
    return design


def logistic_gradients(design: np.ndarray, labels: np.ndarray, weights: np.ndarray
                       ) -> np.ndarray:
    """Σ_m ∇ℓ for every regression at once: column c is regression c's summed gradient
    over the design's columns (the bias last), labels in {−1, 0, +1} (0: not taking part),
    ``weights`` (features + 1) × regressions."""
    x = np.asarray(design, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    # expit never overflows: np.exp would warn for margins past 709, a warning whose
    # appearance depends on the records
    return x.T @ (-y * expit(-y * (x @ weights)))


class FrankWolfeSelections:
    """Frank–Wolfe on the logistic ``regressions`` (i, u, v) of ``data`` at once, its vertex
    choices private (see the module).

    ``features`` (and ``order`` for parities) say what regression (i, ·, ·) sees: the
    feature columns not involving attribute i, and the bias. ``radius`` r of the L1 ball,
    ``steps`` T (T − 1 selections per regression), ``rho`` the whole zCDP cost, charged
    to ``budget`` at construction (``rho=None``: non-private, for reference). ``rng=None``
    (a release) draws with OpenDP; a seed makes the run reproducible (research only).
    Each step is :meth:`select` then :meth:`move`.
    """

    def __init__(self, data: Dataset, regressions: Sequence[tuple[int, int, int]], *,
                 radius: float, steps: int, rho: float | None,
                 budget: PrivacyBudget | None, rng: RngLike = None, selection: str = "em",
                 features: str = "spins", order: int = 2, label: str = "private Frank-Wolfe"):
        data = require_records(data)
        shape = data.domain.shape
        self.columns = feature_columns(shape, features, order)
        self.features = features
        self.regressions = _checked_regressions(regressions, shape)
        self.radius = positive("radius", radius)
        self.steps = integer("steps", steps, least=2)
        self.selection = one_of("selection", selection, SELECTIONS)
        #: row c: the design columns regression c may use (those not involving its
        #: attribute, then the bias), the same number for every regression
        allowed = [[c for c, (attrs, _) in enumerate(self.columns) if i not in attrs]
                   + [len(self.columns)] for i, _, _ in self.regressions]
        if len({len(row) for row in allowed}) != 1:
            raise DataError("the regressions need the same number of features: give "
                            "attributes of one size")
        self.allowed = np.array(allowed, dtype=np.int64)
        self.exposure = exposure(self.regressions, shape)
        self.private = rho is not None
        self.epsilon = math.inf
        if self.private:
            rho = positive("rho", rho, error=PrivacyParameterError)
            if not isinstance(budget, PrivacyBudget) or budget.mode != "zcdp":
                raise PrivacyParameterError("private Frank-Wolfe is rho-zCDP: give a zCDP budget")
            self._charge(rho, budget, rng is None, label)
        #: Laplace scale of report-noisy-min on the scores −⟨s, g⟩/r (2/ε: ε-DP per draw)
        self.noise_scale = (None if not self.private or self.selection == "em"
                            else 2.0 / self.epsilon)
        # the data are read from here on
        if data.weights is not None:
            raise DataError("Frank-Wolfe on records needs unweighted records")
        records = data.records
        if records.shape[0] > MAX_RECORDS:  # a public limit on the data (see MAX_RECORDS)
            raise DataError(f"Frank-Wolfe reads at most {MAX_RECORDS} records")
        self._design = feature_matrix(records, self.columns, features)
        self._labels = np.zeros((records.shape[0], len(self.regressions)), dtype=np.float32)
        for c, (i, u, v) in enumerate(self.regressions):
            self._labels[:, c] = (records[:, i] == u).astype(np.float32) - (records[:, i] == v)
        #: the iterate: column c regression c's weights over the design's columns
        self.weights = np.zeros((len(self.columns) + 1, len(self.regressions)))
        self._margins = np.zeros(self._labels.shape, dtype=np.float32)  # ⟨w, x⟩; w_1 = 0
        #: the last move, applied to the margins in the next pass over the records
        self._pending: tuple[np.ndarray, np.ndarray, np.float32] | None = None
        self._rng = None if rng is None else as_generator(rng)
        self._taken = 0
        self._chosen: tuple[np.ndarray, np.ndarray] | None = None

    def _charge(self, rho: float, budget: PrivacyBudget, exact: bool, label: str) -> None:
        draws = self.exposure * (self.steps - 1)  # selections one record takes part in
        accounting = ""
        if self.selection == "em":
            self.epsilon = epsilon_for(rho / draws, 1.0, exact)
            cost = draws * selection_rho(self.epsilon, 1.0, exact)
        elif self.selection == "laplace":
            self.epsilon = math.sqrt(2.0 * rho / draws)
            cost = draws * self.epsilon**2 / 2.0
        else:  # the paper's scale 1/ε_claimed gives report-noisy-min ε = 2·ε_claimed
            self.epsilon = 2.0 * math.sqrt(rho / (self.exposure * self.steps))
            cost = paper_cost(rho, self.steps)
            accounting = f"paper-literal Laplace scale: claims rho={rho:g}, provably rho={cost:g}"
            warnings.warn(
                f"selection='paper' is Alg. 1's printed Laplace scale, for comparison only: "
                f"it is not {rho:g}-zCDP as the paper claims (its scores are not monotone); "
                f"charged its provable cost, rho={cost:g}", PrivacyWarning,
                stacklevel=user_stacklevel())
        regressions = len(self.regressions)
        if regressions > self.exposure:
            accounting = "; ".join(filter(None, [accounting, (
                f"parallel composition: a record takes part in {self.exposure} of the "
                f"{regressions} regressions")]))
        budget.charge(rho=cost, accounting=accounting,
                      label=f"{label}: {self.steps - 1} selections x {regressions} "
                            f"regressions ({self.selection}, epsilon {self.epsilon:.4g} each)")

    @property
    def remaining(self) -> int:
        """Selections left of those paid for."""
        return self.steps - 1 - self._taken

    def start_at(self, weights: np.ndarray) -> None:
        """Move the iterate to ``weights`` (public: any point of the ball)."""
        weights = np.asarray(weights, dtype=np.float64)
        if weights.shape != self.weights.shape:
            raise ParameterError(f"weights must have shape {self.weights.shape}")
        if np.any(np.abs(weights).sum(axis=0) > self.radius * (1 + 1e-9)):
            raise ParameterError("weights must lie in the L1 ball")
        self.weights = weights.copy()
        # column by column, in the same order for every record: a record's margin (hence
        # its term in the scores) must not depend on where it sits in the array, which a
        # BLAS product does not promise
        rows = _block_rows(weights.shape[1])
        used = np.flatnonzero(np.any(weights != 0.0, axis=1))
        for start in range(0, self._design.shape[0], rows):
            design = self._design[start:start + rows]
            margins = np.zeros((design.shape[0], weights.shape[1]))
            for j in used:
                margins += design[:, j, None] * weights[j]
            self._margins[start:start + rows] = margins
        self._pending = None

    @property
    def margins(self) -> np.ndarray:
        """⟨w, x⟩ of every record and regression at the current iterate (n × R)."""
        self._sweep(gradients=False)
        return self._margins

    def _sweep(self, gradients: bool = True) -> np.ndarray | None:
        """Apply the last move to the margins and, if asked, return the summed gradients
        Σ −y·σ(−y·m)·x (design columns × regressions) — in one pass over blocks of rows
        small enough to stay in cache, a few times faster than whole-array passes.

        The sums are exact, so a record's position (which block it falls in, where the
        blocks start) changes nothing: each record's term is its own, rounded to the grid
        2^-TERM_BITS (|term| ≤ 1 stays ≤ 1), and terms on that grid are summed without
        rounding (:func:`_add_block_ticks`). Removing a record then moves every sum by
        exactly its term: the sensitivity 1 holds as computed, with no slack."""
        pending, self._pending = self._pending, None
        if pending is None and not gradients:
            return None
        ticks = np.zeros(self._design.shape[1:] + self._labels.shape[1:]) if gradients else None
        rows = _block_rows(self._labels.shape[1])
        for start in range(0, self._labels.shape[0], rows):
            part = slice(start, start + rows)
            margins, design = self._margins[part], self._design[part]
            if pending is not None:
                columns, coefficients, keep = pending
                towards = np.take(design, columns, axis=1)
                towards *= coefficients
                margins *= keep
                margins += towards
            if gradients:
                labels = self._labels[part]
                slopes = np.multiply(labels, margins)
                # past 88 single precision's exp overflows (a warning that would depend on
                # the records); the term there is below 1e-38, 0 on the grid either way
                np.minimum(slopes, 88.0, out=slopes)
                np.exp(slopes, out=slopes)
                slopes += 1.0
                np.divide(labels, slopes, out=slopes)  # y·σ(−y·m), |·| ≤ 1; 0 where y = 0
                _add_block_ticks(ticks, design, slopes)
        return None if ticks is None else ticks * -(2.0**-TERM_BITS)  # exact

    def select(self) -> tuple[np.ndarray, np.ndarray]:
        """The vertex each regression moves towards from the current iterate: its design
        column (the last is the bias) and the sign of ±r·e_j."""
        if self.remaining <= 0:
            raise BudgetExceededError(f"all {self.steps - 1} Frank-Wolfe selections are spent")
        self._taken += 1
        full = self._sweep()
        g = full[self.allowed, np.arange(len(self.regressions))[:, None]]  # row c: allowed
        width = g.shape[1]
        if not self.private:  # the exact minimiser of ⟨s, g⟩ (the first, on ties)
            picks = np.argmax(np.abs(g), axis=1)
            signs = -np.sign(g[np.arange(len(g)), picks])
        else:
            scores = np.concatenate([-g, g], axis=1)  # −⟨s, g⟩/r for +r e_j, then −r e_j
            if self.selection == "em":
                both = exponential_mechanism_rows(scores, self.epsilon, 1.0, rng=self._rng)
            else:  # report-noisy-min of ⟨s, g⟩/r = report-noisy-max of the scores
                both = np.argmax(laplace_noise(scores, self.noise_scale, self._rng), axis=1)
            picks, signs = both % width, np.where(both < width, 1.0, -1.0)
        chosen = (self.allowed[np.arange(len(picks)), picks], signs)
        self._chosen = chosen
        return chosen

    def move(self, step: float) -> None:
        """w ← (1 − step)·w + step·(the vertex chosen last); the margins follow in the next
        pass over the records."""
        if self._chosen is None:
            raise ParameterError("select a vertex before moving towards it")
        columns, signs = self._chosen
        self._chosen = None
        self._sweep(gradients=False)  # a move not yet applied (none after a select)
        self.weights *= 1.0 - step
        self.weights[columns, np.arange(len(columns))] += step * self.radius * signs
        self._pending = (columns, (step * self.radius * signs).astype(np.float32),
                         np.float32(1.0 - step))


def exposure(regressions: Sequence[tuple[int, int, int]], shape: Sequence[int]) -> int:
    """How many of the ``regressions`` one record can take part in, at most: for each
    attribute, the most regressions one of its values enters, summed (a public fact)."""
    total = 0
    for i, size in enumerate(shape):
        entered = np.zeros(size, dtype=np.int64)
        for node, u, v in regressions:
            if node == i:
                entered[[u, v]] += 1
        total += int(entered.max())
    return total


def _block_rows(regressions: int) -> int:
    """Rows of one block of a pass: CACHE_FLOATS margins, at least 256 rows."""
    return max(256, CACHE_FLOATS // max(regressions, 1))


def _add_block_ticks(total: np.ndarray, design: np.ndarray, slopes: np.ndarray) -> None:
    """Add Σ over the block's rows of x·rint(2^TERM_BITS·slope) to ``total`` (design
    columns × regressions, float64), exactly; ``slopes`` (|·| ≤ 1) is overwritten.

    A record's term, in ticks of 2^-TERM_BITS, is an integer of magnitude at most
    2^TERM_BITS, and x ∈ {0, ±1}: in a single-precision product over SUM_ROWS rows every
    product and partial sum is an integer of magnitude at most 2^24, which single
    precision holds exactly — so the product is exact in any summation order (BLAS
    blocking, FMA, threads) — and the products' sum stays an integer below 2^53 (doubles:
    exact) up to MAX_RECORDS records. So the result depends on the block's records alone,
    not on their order or on where the block starts."""
    slopes *= np.float32(2**TERM_BITS)  # exact: a power of two
    np.rint(slopes, out=slopes)  # the record's own rounding, |·| ≤ 2^TERM_BITS
    rows, regressions = slopes.shape
    whole = rows - rows % SUM_ROWS
    if whole:  # one batched product of SUM_ROWS rows each
        stack = whole // SUM_ROWS
        sums = np.matmul(design[:whole].reshape(stack, SUM_ROWS, -1).transpose(0, 2, 1),
                         slopes[:whole].reshape(stack, SUM_ROWS, regressions))
        total += sums.sum(axis=0, dtype=np.float64)
    if whole < rows:
        total += design[whole:].T @ slopes[whole:]


def _checked_regressions(regressions, shape) -> list[tuple[int, int, int]]:
    checked = []
    for entry in regressions:
        try:
            i, u, v = (int(x) for x in entry)
        except (TypeError, ValueError):
            raise ParameterError(f"a regression is (attribute, value, value), got {entry!r}"
                                 ) from None
        if not (0 <= i < len(shape) and 0 <= u < shape[i] and 0 <= v < shape[i] and u != v):
            raise ParameterError(f"regression {entry!r} does not name an attribute and two of "
                                 "its values")
        checked.append((i, u, v))
    if not checked:
        raise ParameterError("give at least one regression")
    return checked
