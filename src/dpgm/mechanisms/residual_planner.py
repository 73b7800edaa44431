"""ResidualPlanner (Xiao, He, Zhang & Kifer, NeurIPS 2023): the optimal Gaussian mechanism
for a workload of marginals, with exact variances.

**Plan** (public facts only: the domain, the workload and ρ; made before the data are
read). Every marginal of the workload is the sum of the *residuals* of its subsets of
attributes (:mod:`dpgm.residuals`); the closure of the workload under subsets is
measured, each residual once, with the entry variances that minimise the workload's
loss for the budget: ``loss="sum"``, the total variance over every cell of every
workload marginal (closed form), ``"max"``, the largest cell variance of any workload
marginal, or ``"error"``, the sum over the workload's marginals of the standard
deviation of their answers scaled by the answers' size (Private-PGM's workload error of
the raw answers). Where the workload asks prefix ranges of its numeric attributes
(:class:`~dpgm.workload.Workload`'s ``numeric``), their residuals are measured with
:func:`~dpgm.residuals.prefix_strategy` and the loss counts the ranges' variances
instead of the cells' (ResidualPlanner's extension to other queries of each
attribute).

**Privacy accounting** (ρ-zCDP, reported as (ε, δ); neighbours differ by adding or
removing one record). The residual of ``B`` is ``(⊗_{i∈B} Lᵢ) μ_B``, ``Lᵢ`` orthonormal
rows orthogonal to 1: one record adds one column, of squared L2 norm
``p_B = Π_{i∈B}(nᵢ-1)/nᵢ`` (1 for a ranged attribute's factor, whose columns have norm
at most 1). Gaussian noise of variance ``u_B`` per entry
(:func:`~dpgm.privacy.measure.measure_linear`, charged before the data are read) is
``p_B/(2u_B)``-zCDP; the plan's charges sum to ρ = ``cdp_rho(ε, δ)`` (the record count,
the residual of ∅, among them). Everything after is post-processing.

**Estimators** (post-processing):

* ``"pgm"``: Private-PGM (L2 loss) on the residual measurements, which weighs each by
  its noise exactly; a :class:`~dpgm.models.MarkovRandomField` whose error bars are the
  plan's exact variances (:mod:`dpgm.models.uncertainty`; with prefix ranges, whose
  measurements are not orthonormal residuals, its general least squares). Exact
  inference where the workload's junction tree fits ``max_cells``, else
  (``inference="auto"``) convex approximate inference.
* ``"original"``: ResidualPlanner's own reconstruction, each workload marginal the sum
  of its residuals' answers (unbiased, consistent across marginals, possibly negative),
  as a :class:`~dpgm.models.tables.TableModel` (not sampled: its tables are not one
  distribution).

Every workload marginal's cells have the variance :meth:`ResidualPlanner.variance`
(the same for every cell; along ranged attributes, the mean variance of its prefix
ranges), for both estimators' inputs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from itertools import combinations

import numpy as np

from dpgm.dataset import Dataset
from dpgm.domain import Domain
from dpgm.errors import DpgmError, ModelTooLargeError, ParameterError
from dpgm.estimation.algorithms import DEFAULT_MAX_CELLS
from dpgm.inference.junction_tree import TreeSizes
from dpgm.measurement import KroneckerQuery, Measurement
from dpgm.mechanisms.base import Mechanism, Progress, WorkloadLike
from dpgm.memory import MEASURED_CELL_BYTES
from dpgm.models.tables import TableModel
from dpgm.privacy.budget import PrivacyBudget
from dpgm.privacy.measure import measure_linear
from dpgm.random import Randomness
from dpgm.residuals import (
    LOSSES,
    ResidualPlan,
    bases_bytes,
    check_residual_basis,
    plan_residuals,
    prefix_strategy,
    prefix_strategy_cached,
    reconstruct,
)
from dpgm.validation import integer, number, one_of
from dpgm.workload import Workload

INFERENCE = ("auto", "exact", "convex")
#: a ranged attribute with more values than this gets a line before its prefix-range
#: strategy is computed (cubic in the size: 400 values take seconds, 800 tens of them)
SLOW_STRATEGY_SIZE = 300


def smallest_holders(workload: list[tuple[str, ...]],
                     domain: Domain) -> dict[frozenset, tuple[str, ...]]:
    """For every subset of a workload marginal, the smallest marginal that holds it (the
    first in workload order among equals): one pass over each marginal's subsets."""
    holders: dict[frozenset, tuple[str, ...]] = {}
    for clique in sorted(workload, key=domain.size):  # stable: equals keep their order
        for k in range(len(clique) + 1):
            for subset in combinations(clique, k):
                holders.setdefault(frozenset(subset), clique)
    return holders


def check_bases(mechanism: Mechanism, domain: Domain, attrs: Iterable[str],
                ranged: Iterable[str] = ()) -> None:
    """Refuse, before any data are read, residual bases of ``attrs`` too large for the
    mechanism's ``max_memory``: each is a dense (n − 1) × n matrix, so its memory grows as
    the square of the attribute's size; the prefix-range strategy of the ``ranged`` ones
    as well."""
    sizes = {a: domain[a] for a in attrs}
    if not sizes:
        return
    largest = max(sizes, key=sizes.get)
    needed = bases_bytes(sizes.values(), [domain[a] for a in ranged])
    mechanism.check_memory(f"the residual bases of {len(sizes)} attribute(s), the largest "
                           f"{largest!r} of {sizes[largest]:,} values", needed,
                           alternative=f"give {largest!r} fewer values in the schema, or "
                           "use a mechanism that measures marginals directly (aim, mst)")


def measure_residuals(data: Dataset, plan: ResidualPlan, budget: PrivacyBudget,
                      rng: np.random.Generator | None,
                      bases: Mapping[str, np.ndarray] | None = None) -> list[Measurement]:
    """Each residual of ``plan`` with Gaussian noise of its planned variance, charged to
    ``budget`` (``plan.rhos``, ρ-zCDP each, before the data are read), stated on the
    smallest of the plan's marginals that holds it: its other attributes summed out (the
    same answers), so that estimation fits the workload's tables alone rather than a
    table per subset as well. ``bases``: another residual basis for some attributes
    (such as :func:`~dpgm.residuals.ordered_basis`; public: the same sensitivity and
    variances), Helmert's for the others."""
    domain = data.domain
    bases = {} if bases is None else bases
    for attr, basis in bases.items():
        check_residual_basis(attr, basis, domain[attr])
        if attr in plan.ranged:
            raise ParameterError(f"{attr!r} is measured with the plan's prefix-range "
                                 "strategy; it takes no other basis")
    # the charges come one residual at a time: refuse them all before the first where the
    # ledger cannot take the whole plan, so that nothing is read or spent in vain
    budget.require(float(plan.rhos.sum()), "the plan's residuals")
    holders = smallest_holders(plan.workload, domain)
    measurements = []
    for subset, rho in zip(plan.subsets, plan.rhos):
        holder = holders[frozenset(subset)]
        home = tuple(a for a in domain.attrs if a in holder)  # B's order: the domain's
        # the plan's factor only for the attributes without another basis (Helmert's of
        # an ordered attribute would be an unused n x n array in the cache)
        query = KroneckerQuery([(bases[a] if a in bases else plan.factor(a)) if a in subset
                                else np.ones((1, domain[a])) for a in home])
        measurements.append(measure_linear(
            data, home, query, rho=float(rho), budget=budget, rng=rng,
            label=f"residual of {' × '.join(subset)}" if subset else "record count"))
    return measurements


class ResidualPlanner(Mechanism):
    """ResidualPlanner on a workload of marginals (default: all 2-way marginals); ``fit``
    returns a Private-PGM model (``"pgm"``) or the reconstructed marginals
    (``"original"``). ``loss``: ``"sum"`` or ``"max"`` of the workload's cell variances,
    or ``"error"``, the workload error of the raw answers (see :mod:`dpgm.residuals`).
    The workload's numeric attributes are asked prefix ranges, and planned for them.
    ``iters``: Private-PGM iterations; ``inference``: ``"auto"``, ``"exact"`` or
    ``"convex"``; ``max_cells``: the largest junction tree of exact inference. See the
    module docstring for the plan and the privacy accounting.
    """

    privacy = "zcdp"
    plans_ranges = True  # plans for the workload's prefix ranges
    estimators = ("pgm", "original")

    def __init__(
        self,
        epsilon: float | None = None,
        delta: float | None = None,
        *,
        rho: float | None = None,
        loss: str = "sum",
        estimator: str = "pgm",
        iters: int = 1000,
        inference: str = "auto",
        max_cells: float = DEFAULT_MAX_CELLS,
        max_memory: float | None = None,
        progress: Progress | None = None,
    ):
        super().__init__(epsilon, delta, rho=rho, estimator=estimator, max_memory=max_memory,
                         progress=progress)
        self.loss = one_of("loss", loss, LOSSES)
        self.iters = integer("iters", iters, least=1)
        self.inference = one_of("inference", inference, INFERENCE)
        self.max_cells = int(number("max_cells", max_cells, low=1))

    def _reset(self) -> None:
        super()._reset()
        #: the residuals measured and their noise (set by plan, from public facts)
        self.residual_plan: ResidualPlan | None = None

    def plan(self, domain: Domain, workload: Workload) -> None:
        """The residuals, their variances and the estimation route (public facts)."""
        super().plan(domain, workload)
        self._route(domain, workload)
        attrs = {a for c in workload.cliques for a in c}
        # first: a prefix strategy too large to hold would take hours before the refusal
        ranged = attrs & workload.numeric
        check_bases(self, domain, attrs, ranged)
        for size in sorted({domain[a] for a in ranged}):
            if size > SLOW_STRATEGY_SIZE and not prefix_strategy_cached(size):
                names = ", ".join(repr(a) for a in sorted(ranged) if domain[a] == size)
                self._say(f"planning prefix ranges of {names} ({size:,} values): "
                          "its strategy takes time that grows as the cube of the size")
                prefix_strategy(size)  # now, after the line; kept for the measurement
        self.residual_plan = plan_residuals(domain, workload.cliques,
                                            self.new_budget().total, self.loss,
                                            ranged=workload.numeric)
        entries = sum(math.prod(domain[a] - 1 for a in s) for s in self.residual_plan.subsets)
        self.check_memory(f"the plan's {entries:,} noisy residual entries",
                          MEASURED_CELL_BYTES * entries,
                          alternative="use a workload with fewer or smaller marginals")
        self.check_tables(domain, workload.cliques, "the workload's marginals")

    def variance(self, attrs) -> float | None:
        """The variance of each cell of the marginal on ``attrs`` reconstructed from the
        planned residuals (None where they do not hold it); along the workload's numeric
        attributes, the mean variance of its prefix ranges. After ``fit`` or ``check``."""
        if self.residual_plan is None:
            raise DpgmError("call fit (or check) first: there is no plan yet")
        return self.residual_plan.variance(attrs)

    def _fit(self, data: Dataset, workload: Workload, randomness: Randomness):
        """Measure the planned residuals with ρ in all; estimate (see the module docstring)."""
        plan, budget, domain = self.residual_plan, self.budget, data.domain
        self._say(f"planned {len(plan.subsets)} residuals for {len(workload.cliques)} "
                  f"marginals (loss={self.loss}: {plan.value:.4g})")
        measurements = measure_residuals(data, plan, budget, randomness.noise)
        self.measurements = measurements
        self._say(f"measured {len(measurements)} residuals (Gaussian, rho={budget.total:.4g} "
                  "in all)")
        if self.estimator == "original":
            answers = {frozenset(s): m.values for s, m in zip(plan.subsets, measurements)}
            # a ranged attribute's answers map back through the strategy's pseudo-inverse
            back = {a: np.linalg.pinv(plan.factor(a)).T for a in plan.ranged}
            tables = {c: reconstruct(domain, c, answers, back) for c in workload.cliques}
            return TableModel(domain, tables, float(answers[frozenset()][0]))
        inference = self._route(domain, workload)
        model = self.estimate(
            domain, measurements, method="accelerated", iters=self.iters,
            inference=inference, max_cells=self.max_cells,
            callback=self._iteration_reporter(self.iters, "estimation: loss at iteration"))
        self._say(f"estimated the model ({inference} inference), total≈{model.total:.0f}")
        return model

    def _route(self, domain: Domain, workload: Workload) -> str:
        """The inference Private-PGM uses (public facts only)."""
        if self.estimator != "pgm":
            return "none"
        size = TreeSizes(domain).cells(workload.cliques)
        if size <= self.max_cells and self.inference in ("auto", "exact"):
            return "exact"
        if self.inference == "exact":
            raise ModelTooLargeError(
                f"the junction tree of the workload needs {size:,} cells, over max_cells="
                f"{self.max_cells:,}; use inference='convex' (approximate) or a workload "
                "with smaller or fewer marginals")
        return "convex"

    def check_synthesizable(self, domain: Domain, workload: WorkloadLike | None = None) -> None:
        """Refuse the original estimator (its marginals are not one distribution) and an
        approximate model (its potentials fit approximate marginals, not records drawn
        from its exact distribution)."""
        if self.estimator == "pgm" and self._route(
                domain, self.workload_for(domain, workload)) == "convex":
            raise DpgmError(
                "the workload's junction tree is too large for exact inference, so "
                "ResidualPlanner's model would be approximate, and records drawn from it do "
                "not follow its marginals; use a workload with fewer or smaller marginals, "
                "or aim-rp (which measures what it selects)")
        if self.estimator == "original":
            raise DpgmError(
                "ResidualPlanner's original estimator keeps one reconstructed table per "
                "workload marginal; they are not one distribution and cannot be sampled. "
                "Use the Private-PGM estimator for synthetic data")
