"""HDMM (McKenna, Miklau, Hay & Machanavajjhala, VLDB 2018) for marginal and range workloads.

**Strategy** (chosen from the public domain and the workload only, before the data are
read). For each workload clique ``C`` the strategy is a Kronecker product
``A_C = ⊗_{a∈C} A_a``. ``A_a`` is the identity for a categorical attribute (whose
workload factor ``W_a`` is the identity, for which the identity is optimal) and, for a
numeric attribute (``W_a`` the prefix ranges), HDMM's p-Identity strategy
``A(Θ) = [I; Θ]·D`` with ``Θ ≥ 0`` of shape ``p × n`` and ``D = diag(1/(1 + 1ᵀΘ))``
(every column has L1 norm 1), whose ``Θ`` minimises the expected squared error
``tr(W_aᵀW_a (AᵀA)⁻¹)`` (L-BFGS-B, analytic gradient, ``p = n // 16`` as in HDMM, a fixed
random start). The error of ``W_C`` answered from ``A_C`` is the product of the
per-attribute errors and ``‖A_C‖₁ = Π ‖A_a‖₁``, so optimising each factor on its own
gives the best Kronecker strategy for the clique.

**Privacy accounting** (pure ε-DP; neighbours differ by adding or removing one record).
One record adds one column of ``A_C`` to ``A_C μ_C``; every column of every ``A_a`` has
L1 norm 1, so every ``A_C`` has L1 sensitivity 1. Each of the ``k = |W|`` cliques is
measured once, by :func:`~dpgm.privacy.measure.measure_linear` with ``ε/k`` (Laplace
noise of scale ``k/ε`` on every answer), which charges the ledger before reading the
data. By sequential composition the ``k`` measurements are ``k · ε/k = ε``-DP; the
estimators only post-process them. The even split is a simplification: HDMM's
union-of-Kronecker strategies weight the sub-strategies to minimise the total expected
error; here every clique gets the same share, which suits an error measure (Private-PGM
Sec. 5.1) that gives every clique the same weight.

**Estimators** (post-processing):

* ``"pgm"``: Private-PGM (Algorithm 2, L2 loss) on the measurements, the record count
  estimated from them (App. E.1); returns a :class:`~dpgm.models.MarkovRandomField`.
* ``"original"``: HDMM's ordinary least squares (:mod:`dpgm.estimation.least_squares`),
  unconstrained, so tables may be negative. ``least_squares="global"``: one table over the
  whole domain (LSMR), returned as a :class:`~dpgm.models.tables.TableModel` with one
  table; ``"local"`` (Private-PGM's HDMM+LLS): each clique's own least-squares table, a
  ``TableModel`` whose marginals come from one clique's table at a time and whose total is
  the mean of the tables' sums; ``"auto"``: global when the domain has at most
  ``max_cells`` cells, else local.
"""

from __future__ import annotations

import functools

import numpy as np
from scipy import linalg, optimize

from dpgm.dataset import Dataset
from dpgm.domain import Domain
from dpgm.errors import DpgmError, ModelTooLargeError, option
from dpgm.estimation.algorithms import DEFAULT_MAX_CELLS
from dpgm.estimation.least_squares import (
    LSMR_TABLE_COPIES,
    global_least_squares,
    local_least_squares,
)
from dpgm.inference.cliques import Clique
from dpgm.inference.junction_tree import TreeSizes
from dpgm.measurement import KroneckerQuery, Measurement
from dpgm.mechanisms.base import Mechanism, Progress, WorkloadLike
from dpgm.memory import MEASURED_CELL_BYTES, check_cells, check_memory, table_bytes
from dpgm.models.tables import TableModel
from dpgm.privacy.budget import PrivacyBudget
from dpgm.privacy.measure import measure_linear
from dpgm.random import Randomness
from dpgm.validation import integer, number, one_of, optional
from dpgm.workload import Workload, prefix_matrix

KINDS = ("identity", "prefix")
LEAST_SQUARES = ("auto", "global", "local")
#: seed of the (data-independent) random start of every p-Identity optimisation
STRATEGY_SEED = 0


# -- p-Identity strategies ---------------------------------------------------------------
def p_identity(theta: np.ndarray) -> np.ndarray:
    """``A(Θ) = [I; Θ]·D``: the p-Identity strategy, every column of L1 norm 1."""
    theta = np.asarray(theta, dtype=np.float64)
    stacked = np.vstack([np.eye(theta.shape[1]), theta])
    return stacked / stacked.sum(axis=0)


def strategy_error(strategy: np.ndarray, gram: np.ndarray) -> float:
    """``tr(WᵀW (AᵀA)⁻¹)``: expected squared error of the workload (``gram = WᵀW``) up to
    the noise variance, for a strategy of L1 sensitivity 1."""
    return float(np.trace(gram @ np.linalg.inv(strategy.T @ strategy)))


def p_identity_objective(theta: np.ndarray, gram: np.ndarray) -> tuple[float, np.ndarray]:
    """``f(Θ) = tr(WᵀW (A(Θ)ᵀA(Θ))⁻¹)`` and its gradient ``∂f/∂Θ`` (``gram = WᵀW``).

    With ``M = I + ΘᵀΘ`` and ``d = 1 + Θᵀ1``, ``AᵀA = D M D`` with ``D = diag(1/d)``, so
    ``f = tr(Y M⁻¹)`` with ``Y = diag(d) WᵀW diag(d)``, and
    ``∂f/∂Θ = −2 Θ M⁻¹ Y M⁻¹ + 1 gᵀ`` with ``g = ∂f/∂d = 2 (WᵀW ∘ M⁻¹) d``.
    """
    theta = np.asarray(theta, dtype=np.float64)
    p = theta.shape[0]
    d = 1.0 + theta.sum(axis=0)
    # Woodbury: M⁻¹ = I − Θᵀ S⁻¹ Θ with S = I + ΘΘᵀ (p × p), and Θ M⁻¹ = S⁻¹ Θ, so every
    # product is (p × n)(n × n): O(n² p) instead of O(n³)
    factor = linalg.cho_factor(np.eye(p) + theta @ theta.T)
    z = (theta * d) @ gram  # Θ diag(d) WᵀW; Θ Y = z diag(d)
    solved = linalg.cho_solve(factor, np.hstack([theta, z]))
    s_theta, s_z = solved[:, : theta.shape[1]], solved[:, theta.shape[1] :]
    u = s_z * d  # S⁻¹ Θ Y
    diagonal = np.diag(gram)
    value = float(np.dot(diagonal, d**2) - np.sum(u * theta))  # tr(Y) − tr(S⁻¹ΘYΘᵀ)
    # Θ M⁻¹ Y M⁻¹ = S⁻¹ΘY M⁻¹ = U − (U Θᵀ) S⁻¹ Θ
    grad = -2.0 * (u - (u @ theta.T) @ s_theta)
    # (WᵀW ∘ M⁻¹) d = diag(WᵀW) d − colsum(Θ ∘ S⁻¹ Θ diag(d) WᵀW)
    grad += 2.0 * (diagonal * d - np.sum(theta * s_z, axis=0))[None, :]
    return value, grad


def optimize_p_identity(
    workload_matrix: np.ndarray, p: int | None = None, seed: int = STRATEGY_SEED
) -> np.ndarray:
    """The p-Identity strategy of least expected error for ``workload_matrix`` (``n`` columns).

    ``p`` defaults to ``max(1, n // 16)``; the start ``Θ ~ U[0, 1)`` comes from ``seed``
    (never from data). Never worse than the identity, which is returned if it wins.
    """
    w = np.asarray(workload_matrix, dtype=np.float64)
    n = w.shape[1]
    gram = w.T @ w
    if n == 1:
        return np.eye(1)
    p = max(1, n // 16) if p is None else int(p)
    start = np.random.default_rng(seed).random(p * n)

    def objective(flat: np.ndarray) -> tuple[float, np.ndarray]:
        value, grad = p_identity_objective(flat.reshape(p, n), gram)
        return value, grad.ravel()

    found = optimize.minimize(
        objective,
        start,
        jac=True,
        method="L-BFGS-B",
        bounds=optimize.Bounds(0.0, np.inf),
        options={"maxiter": 2000},
    )
    strategy = p_identity(np.maximum(found.x, 0.0).reshape(p, n))
    if strategy_error(strategy, gram) >= float(np.trace(gram)):
        return np.eye(n)  # Θ = 0: the identity itself
    return strategy


@functools.lru_cache(maxsize=256)
def _cached_strategy(size: int, kind: str, p: int | None) -> np.ndarray:
    if kind == "identity":
        strategy = np.eye(size)  # optimal for an identity workload: no need to search
    else:
        strategy = optimize_p_identity(prefix_matrix(size), p)
    strategy.setflags(write=False)  # shared by every caller of the cache
    return strategy


def attribute_strategy(size: int, kind: str = "identity", p: int | None = None) -> np.ndarray:
    """The (read-only, cached) strategy for one attribute's workload factor.

    ``kind`` is ``"identity"`` (a categorical attribute: the identity) or ``"prefix"`` (a
    numeric one: the optimised p-Identity strategy for prefix ranges).
    """
    one_of("kind", kind, KINDS)
    size = integer("size", size, least=1)
    return _cached_strategy(size, kind, None if p is None else int(p))


def _is_identity(matrix: np.ndarray) -> bool:
    return matrix.shape[0] == matrix.shape[1] and np.array_equal(matrix, np.eye(len(matrix)))


# -- the mechanism -----------------------------------------------------------------------


class HDMM(Mechanism):
    """The HDMM mechanism; ``fit`` returns a model (``"pgm"``) or least-squares tables.

    ``iters``: Private-PGM iterations. ``least_squares``: ``"auto"``, ``"global"`` or
    ``"local"`` for the original estimator, global only on domains of at most ``max_cells``
    cells, with at most ``lsmr_iters`` LSMR iterations. ``p``: rows of ``Θ`` in every
    p-Identity strategy (default ``n // 16`` per attribute). See the module docstring
    for the strategy and the privacy accounting.
    """

    privacy = "pure"
    plans_ranges = True  # plans for the workload's prefix ranges
    estimators = ("pgm", "original")

    def __init__(
        self,
        epsilon: float,
        delta: float | None = None,
        *,
        estimator: str = "pgm",
        iters: int = 1000,
        least_squares: str = "auto",
        max_cells: float = 1e7,
        lsmr_iters: int = 1000,
        p: int | None = None,
        max_memory: float | None = None,
        progress: Progress | None = None,
    ):
        super().__init__(
            epsilon, delta, estimator=estimator, max_memory=max_memory, progress=progress
        )
        self.iters = integer("iters", iters, least=1)
        self.least_squares = one_of("least_squares", least_squares, LEAST_SQUARES)
        self.max_cells = number("max_cells", max_cells, low=1)
        self.lsmr_iters = integer("lsmr_iters", lsmr_iters, least=1)
        self.p = optional(integer, "p", p, least=1)

    def _reset(self) -> None:
        super()._reset()
        #: the strategy of each workload clique (set by plan; see :meth:`strategy`)
        self.strategies: dict[Clique, KroneckerQuery] = {}
        #: "global" or "local": the least squares the original estimator used
        self.least_squares_used: str | None = None

    def strategy(self, domain: Domain, workload: Workload) -> dict[Clique, KroneckerQuery]:
        """The strategy ``A_C = ⊗ A_a`` of every workload clique: public inputs only."""
        found = {}
        for clique in workload.cliques:
            factors = [
                attribute_strategy(
                    domain[a], "prefix" if a in workload.numeric else "identity", self.p
                )
                for a in clique
            ]
            found[clique] = KroneckerQuery(factors)
        return found

    def plan(self, domain: Domain, workload: Workload) -> None:
        """The estimation route, the strategies and their answers fit (public facts)."""
        super().plan(domain, workload)
        self._route(domain, workload)
        self.check_tables(domain, workload.cliques, "the workload's marginals")
        numeric = {a for c in workload.cliques for a in c if a in workload.numeric}
        for attr in sorted(numeric):  # dense n x n matrices: W, WᵀW, the strategy, AᵀA
            self.check_memory(
                f"the prefix strategy of {attr!r}", table_bytes(domain[attr] ** 2, copies=4)
            )
        # chosen here, from public facts only, and measured by ``_fit``
        self.strategies = self.strategy(domain, workload)
        rows = sum(q.shape[0] for q in self.strategies.values())
        self.check_memory(f"the strategy's {rows:,} noisy answers", MEASURED_CELL_BYTES * rows)

    def _fit(self, data: Dataset, workload: Workload, randomness: Randomness):
        """Spend ``epsilon`` on ``data`` answering ``workload`` (default: all 2-way marginals)."""
        budget = self.budget
        domain = data.domain
        method = self._route(domain, workload)
        rows = sum(q.shape[0] for q in self.strategies.values())
        self._say(f"chose the strategy: {len(self.strategies)} Kronecker products, {rows:,} rows")

        self.measurements = self._measure(
            data, self.strategies, self.epsilon, budget, randomness.noise
        )
        each = self.epsilon / len(self.strategies)
        self._say(
            f"measured {len(self.measurements)} cliques (Laplace, epsilon={each:.4g} each, "
            f"scale {1 / each:.4g})"
        )

        if self.estimator == "pgm":
            model = self.estimate(
                domain,
                self.measurements,
                method="accelerated",
                iters=self.iters,
                callback=self._iteration_reporter(self.iters, "estimation: loss at iteration"),
            )
            self._say(f"estimated the model: {model.tree.size():,} cells, total≈{model.total:.0f}")
            return model

        self.least_squares_used = method
        if method == "global":
            table = global_least_squares(
                domain, self.measurements, iters=self.lsmr_iters, max_cells=self.max_cells
            )
            result = TableModel(domain, {domain.attrs: table}, float(table.sum()))
        else:
            tables = {m.clique: local_least_squares(m, domain) for m in self.measurements}
            total = float(np.mean([t.sum() for t in tables.values()]))
            result = TableModel(domain, tables, total)
        self._say(
            f"{method} least squares: {len(result.tables)} table(s), total≈{result.total:.0f}"
        )
        return result

    def check_synthesizable(self, domain: Domain, workload: WorkloadLike | None = None) -> None:
        """Refuse local least squares: its per-clique tables are not one distribution."""
        workload = self.workload_for(domain, workload)
        if self._route(domain, workload) == "local":
            why = (
                "least_squares='local'"
                if self.least_squares == "local"
                else f"the domain's {domain.size():,} cells exceed max_cells={self.max_cells:,.0f}"
            )
            raise DpgmError(
                f"HDMM's original estimator keeps one least-squares table per clique ({why}); "
                "they are not one distribution and cannot be sampled. Use the Private-PGM "
                "estimator for synthetic data"
            )

    def _route(self, domain: Domain, workload: Workload) -> str:
        """The estimation route, checked to fit in memory (public facts only)."""
        if self.estimator == "pgm":
            size = TreeSizes(domain).cells(workload.cliques)
            if size > DEFAULT_MAX_CELLS:
                raise ModelTooLargeError(
                    f"the junction tree of the workload needs {size:,} cells, over "
                    f"{DEFAULT_MAX_CELLS:,}; use a workload with smaller or fewer cliques"
                )
            return "pgm"
        cells = domain.size()
        if self.least_squares == "global":
            check_cells(
                "global least squares",
                cells,
                self.max_cells,
                alternative=f"use {option('least_squares', 'local')} or "
                f"{option('estimator', 'pgm')}",
            )
            check_memory(
                "global least squares", table_bytes(cells, LSMR_TABLE_COPIES), self.max_memory
            )
        if self.least_squares == "auto":
            return "global" if cells <= self.max_cells else "local"
        return self.least_squares

    @staticmethod
    def _measure(
        data: Dataset,
        strategies: dict[Clique, KroneckerQuery],
        epsilon: float,
        budget: PrivacyBudget,
        rng: np.random.Generator | None,
    ) -> list[Measurement]:
        """Each clique's strategy answers with Laplace noise, ``epsilon / len(strategies)`` each."""
        each = epsilon / len(strategies)
        measurements = []
        for clique, query in strategies.items():
            m = measure_linear(
                data, clique, query, epsilon=each, budget=budget, rng=rng, label=f"A on {clique}"
            )
            if all(_is_identity(f) for f in query.factors):
                # an all-identity strategy is the marginal itself: recording it as an
                # identity measurement (same answers, same noise) lets estimation use its
                # fast identity path and its cells as direct targets
                m = Measurement(clique, m.values, m.std)
            measurements.append(m)
        return measurements
