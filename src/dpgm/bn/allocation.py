"""How Algorithm 2 splits the budget over a network's nodes (Eq. 5, 6 and 10, and ours).

Every input is Stage I's noisy output or a public fact (the graph, the domain, the floor),
so the allocation is post-processing. The implementation note is
``docs/notes/bn-data-dependent.md``; its choices [C5], [C6] and erratum [E3] are cited below.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dpgm.bn.cpds import NoisyTables
from dpgm.errors import ParameterError

#: a noisy count is capped here before it enters Eq. 6's error or our allocation (public:
#: no table of real records holds more; only noise reaches it)
MAX_COUNT = 2.0**53
#: the "error" allocation gives no node less than e^-LOG_SPAN of the even split
LOG_SPAN = 40.0
_BISECTIONS = 60  # halvings of each search: far below float64 resolution of a budget


def parameter_error(cpd: np.ndarray, tables: NoisyTables, floor: float = 1.0) -> float:
    """Eq. 6's δ̃_i: mean over the CPD's cells of Θ̂·sqrt(1/T̂_pa[u]² + 1/T̂_i[x, u]²),
    with every noisy count floored at ``floor`` ([C5]; never true counts, [E3]) and capped
    at MAX_COUNT (only noise gets there), so that δ̃_i lies in public bounds
    (:func:`error_bounds`)."""
    family = np.clip(tables.family, floor, MAX_COUNT)
    parent = np.clip(tables.parents, floor, MAX_COUNT)[..., None]
    # hypot(1/a, 1/b) is the square root above, without squaring a tiny floor to infinity
    return float(np.mean(cpd * np.hypot(1.0 / parent, 1.0 / family)))


def error_bounds(size: int, floor: float) -> tuple[float, float]:
    """Public bounds on :func:`parameter_error` for a node of ``size`` states: its CPD's
    columns sum to 1, so the mean of Θ̂ over the cells is 1/k, and each square root lies
    in [√2/MAX_COUNT, √2/floor] (the lower bound halved for rounding)."""
    return math.sqrt(2.0) / (2.0 * MAX_COUNT * size), math.sqrt(2.0) / (floor * size)


def allocate(total: float, weights: Sequence[float], errors: Sequence[float]) -> np.ndarray:
    """The budgets ε_i > 0, Σ ε_i = ``total``, that minimise Σ W_i δ̃_i / ε_i (Eq. 5):
    ε_i ∝ √(W_i δ̃_i), the normalised form of Eq. 10 ([C6])."""
    # √W·√δ̃ rather than √(W·δ̃), and the shares before ``total``: no product overflows
    root = np.sqrt(np.asarray(weights, dtype=np.float64)) * np.sqrt(
        np.asarray(errors, dtype=np.float64))
    if not np.all(np.isfinite(root)) or np.any(root <= 0):
        raise ParameterError(f"weights and errors must be finite and > 0, got {root**2}")
    return total * (root / root.sum())


def allocate_expected_error(
    total: float, sizes: Sequence[int], counts: Sequence[np.ndarray]
) -> np.ndarray:
    """Budgets ε_i > 0, Σ ε_i = ``total``, that minimise the mean over nodes of each
    node's expected mean column L1 error, given its estimated column counts ``counts``.

    Our allocation, not the paper's: it minimises (a model of) the error that is reported,
    the CPD error per parent configuration, instead of Eq. 5's Σ W_i δ̃_i / ε_i. A column
    u estimated from counts C[u] with Laplace noise of scale 2/ε_i in each of its k_i
    cells is off by about z = 2·k_i/(ε_i·C[u]) in L1 while that is small, and by at most
    about 1 when the noise swamps the counts: the error is modelled as z/(1 + z), averaged
    over the node's columns, a_u/(ε_i + a_u) with a_u = 2·k_i/C[u]: convex in ε_i, so the
    minimum under Σ ε_i = ``total`` is where every node's slope, the mean of
    a_u/(ε_i + a_u)², equals one multiplier λ (or the node sits at a bound). Found by
    bisection on λ, each node's ε_i(λ) by a vectorised bisection of its own (a general
    solver took minutes on a thousand nodes); post-processing of the counts given, each
    budget at least e^−LOG_SPAN of the even split (counts capped at MAX_COUNT).
    """
    sizes = np.asarray(sizes, dtype=np.float64)
    n = sizes.size
    scales = [2.0 * k / np.clip(np.ravel(c), 1e-9, MAX_COUNT) for k, c in zip(sizes, counts)]
    lengths = np.array([a.size for a in scales])
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    a = np.concatenate(scales)
    owner = np.repeat(np.arange(n), lengths)
    # in logs throughout: e^-LOG_SPAN·total/n may be below the smallest double
    low, high = math.log(total) - math.log(n) - LOG_SPAN, math.log(total)

    def slopes(log_budgets: np.ndarray) -> np.ndarray:  # decreasing in each budget
        spread = np.exp(log_budgets)[owner] + a
        # a/(ε + a)² as (a/(ε + a))/(ε + a): the square would overflow at huge budgets
        return np.add.reduceat(a / spread / spread, starts) / lengths

    def budgets(multiplier: float) -> np.ndarray:  # each node's log ε_i where its slope = λ
        below, above = np.full(n, low), np.full(n, high)
        for _ in range(_BISECTIONS):
            middle = (below + above) / 2
            steep = slopes(middle) > multiplier  # still too steep: more budget
            below = np.where(steep, middle, below)
            above = np.where(steep, above, middle)
        return (below + above) / 2

    # Σ ε_i(λ) falls as λ grows; λ lies between the flattest and the steepest slope
    small = math.log(max(float(slopes(np.full(n, high)).min()), 1e-300))
    large = math.log(max(float(slopes(np.full(n, low)).max()), 1e-300))
    for _ in range(_BISECTIONS):
        middle = (small + large) / 2
        if np.exp(budgets(math.exp(middle))).sum() > total:
            small = middle
        else:
            large = middle
    chosen = budgets(math.exp((small + large) / 2))
    budgets_ = np.exp(chosen - chosen.max())  # the same shares, no overflow
    return total * (budgets_ / budgets_.sum())
