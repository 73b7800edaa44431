"""ResidualPlanner as a mechanism: its answers' spread equals the plan's variances, its
model's error bars are those variances, and what fails on public facts fails first.
(The plan itself is checked against brute force in tests/test_residuals.py; the contract
every learner keeps in test_conformance.py; the privacy claim in tests/audit.)"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest
from mechanism_helpers import PublicOnly, sample_data

from dpgm import Domain
from dpgm.errors import DpgmError, ModelTooLargeError
from dpgm.mechanisms import ResidualPlanner
from dpgm.models.uncertainty import _LeastSquares
from dpgm.residuals import residual_subset

DOMAIN = Domain(["a", "b", "c", "d"], [2, 3, 4, 2])
WORKLOAD = [("a", "b"), ("b", "c"), ("c", "d", "a")]


@pytest.fixture(scope="module")
def data():
    return sample_data(DOMAIN, 2000, seed=5)


def test_reconstructed_marginals_are_unbiased_with_the_planned_variance(data):
    runs = 400
    tables = {c: [] for c in WORKLOAD}
    mechanism = ResidualPlanner(1.0, estimator="original")
    for seed in range(runs):
        model = mechanism.fit(data, WORKLOAD, rng=seed)
        for c in WORKLOAD:
            tables[c].append(model.marginal(c))
    for c in WORKLOAD:
        draws = np.array(tables[c])
        planned = mechanism.variance(c)
        # the sample variance of 400 Gaussian draws is within ±20% with room to spare
        spread = draws.var(axis=0, ddof=1) / planned
        assert 0.8 < spread.mean() < 1.2, c
        # unbiased: the mean is within 4 standard errors of the truth in every cell
        error = np.abs(draws.mean(axis=0) - data.marginal(c)) / np.sqrt(planned / runs)
        assert error.max() < 4.5, c


def test_the_models_error_bars_are_the_plans_variances(data):
    mechanism = ResidualPlanner(1.0, iters=50)
    model = mechanism.fit(data, WORKLOAD, rng=0)
    for attrs in [*WORKLOAD, ("a",), ("d", "c")]:
        _, error = model.marginal(attrs, with_error=True)
        np.testing.assert_allclose(error, np.sqrt(mechanism.variance(attrs)), rtol=1e-9)
    # and the constrained generalised least squares over the measured tables agrees
    squares = _LeastSquares(model)
    for attrs in WORKLOAD:
        rows = squares.rows(tuple(a for a in DOMAIN.attrs if a in attrs))
        np.testing.assert_allclose(squares.variance(rows), mechanism.variance(attrs),
                                   rtol=1e-6)
    with pytest.raises(DpgmError):  # a 3-way residual of (a, b, c) was never measured
        model.with_error(("a", "b", "c"), method="analytic")


def test_every_measurement_is_a_residual_of_the_workloads_closure(data):
    mechanism = ResidualPlanner(1.0, iters=5)
    mechanism.fit(data, WORKLOAD, rng=0)
    measured = [residual_subset(m) for m in mechanism.measurements]
    assert None not in measured
    assert len(set(measured)) == len(measured) == len(mechanism.residual_plan.subsets)
    assert {frozenset(s) for s in measured} == {
        frozenset(s) for c in WORKLOAD for k in range(len(c) + 1)
        for s in combinations(c, k)}
    # each is stated on a workload marginal, so estimation fits the workload's tables
    assert {m.clique for m in mechanism.measurements} <= {
        tuple(a for a in DOMAIN.attrs if a in c) for c in WORKLOAD}
    assert sum(e.rho for e in mechanism.budget.ledger) == pytest.approx(
        mechanism.budget.total, rel=1e-12)


def test_public_facts_fail_before_the_data_are_read():
    wide = Domain([f"x{i}" for i in range(12)], [10] * 12)
    workload = [tuple(wide.attrs[i:i + 3]) for i in range(0, 12, 3)] + [
        tuple(wide.attrs[i::4]) for i in range(4)]
    with pytest.raises(ModelTooLargeError, match="junction tree"):
        ResidualPlanner(1.0, inference="exact", max_cells=1e4).fit(PublicOnly(wide),
                                                                   workload)
    with pytest.raises(DpgmError, match="cannot be sampled"):
        ResidualPlanner(1.0, estimator="original").check_synthesizable(DOMAIN, WORKLOAD)
    with pytest.raises(DpgmError, match="approximate"):
        ResidualPlanner(1.0, max_cells=1e4).check_synthesizable(wide, workload)
    with pytest.raises(DpgmError, match="no plan"):
        ResidualPlanner(1.0).variance(("a",))


def test_the_max_loss_evens_out_the_workloads_variances(data):
    by_sum, by_max = ResidualPlanner(1.0, loss="sum"), ResidualPlanner(1.0, loss="max")
    for m in (by_sum, by_max):
        m.check(DOMAIN, WORKLOAD)
    assert max(by_max.variance(c) for c in WORKLOAD) < max(by_sum.variance(c)
                                                           for c in WORKLOAD)


def test_a_ledger_without_room_for_the_whole_plan_is_refused_before_the_first_residual(
        data):
    from mechanism_helpers import prespent

    from dpgm.errors import BudgetExceededError

    mechanism = prespent(ResidualPlanner(1.0, iters=5), 0.3)
    with pytest.raises(BudgetExceededError):
        mechanism.fit(data, WORKLOAD, rng=0)
    assert [e.label for e in mechanism.budget.ledger] == ["another release"]


@pytest.mark.parametrize("mechanism", ["residual-planner", "aim-rp"])
def test_residual_bases_too_large_for_memory_are_refused_before_reading(mechanism):
    """An attribute of n values has a dense (n − 1) × n residual basis: 60,000 values
    need tens of GB, refused before the data are read or anything is spent (AIM+RP
    measures every attribute's one-way residual, even one its workload leaves out)."""
    from dpgm.mechanisms import AIMResidual
    from dpgm.residuals import bases_bytes

    domain = Domain(["a", "b", "c"], [60_000, 3, 4])
    cls = {"residual-planner": ResidualPlanner, "aim-rp": AIMResidual}[mechanism]
    fitted = cls(1.0, max_memory=bases_bytes([60_000, 3, 4]) - 1)
    with pytest.raises(ModelTooLargeError, match="'a' of 60,000 values"):
        fitted.fit(PublicOnly(domain), workload=[("b", "c"), ("a",)], rng=0)
    if mechanism == "residual-planner":  # refused before its prefix strategy is computed
        from dpgm.workload import Workload

        ranged = cls(1.0, max_memory=bases_bytes([60_000, 3]) - 1)
        with pytest.raises(ModelTooLargeError, match="'a' of 60,000 values"):
            ranged.check(domain, Workload([("a", "b")], numeric=["a"]))
    assert fitted.budget is None or not fitted.budget.ledger  # nothing spent
    small = Domain(["a", "b", "c"], [300, 3, 4])  # 2.9 MB: planned
    cls(1.0, max_memory=bases_bytes([300, 3, 4])).check(small, [("b", "c"), ("a",)])
    if mechanism == "residual-planner":  # a ranged attribute's strategy is counted too
        from dpgm.workload import Workload

        ranges = Workload([("a", "b")], numeric=["a"])
        with pytest.raises(ModelTooLargeError, match="'a' of 300 values"):
            cls(1.0, max_memory=bases_bytes([300, 3])).check(small, ranges)
        cls(1.0, max_memory=bases_bytes([300, 3], ranged=[300])).check(small, ranges)


def test_a_fit_stays_within_the_memory_its_bases_are_counted_for():
    """The count that refuses too large a domain before reading is an upper bound on what
    a fit holds (a fit held 8 n² floats when it was counted as 4 n²)."""
    import tracemalloc

    from dpgm.residuals import bases_bytes

    domain = Domain(["a", "b"], [600, 3])
    data = sample_data(domain, 3000, seed=1)
    ResidualPlanner(1.0, iters=5).fit(data, [("a", "b")], rng=0)  # imports, caches
    from dpgm import residuals

    residuals._basis.cache_clear()
    tracemalloc.start()
    ResidualPlanner(1.0, iters=20).fit(data, [("a", "b")], rng=0)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert 8 * 600**2 < peak < bases_bytes(domain.shape)


def test_a_large_ranged_attribute_is_announced_before_its_strategy_is_computed():
    """Planning prefix ranges of many values takes a while: a line says so first (the
    plan reads public facts only), once for attributes of one size; a small one plans
    silently, and so does a large one whose strategy this process has computed already,
    or one that no workload marginal holds."""
    from dpgm.mechanisms.residual_planner import SLOW_STRATEGY_SIZE
    from dpgm.residuals import _PREFIX_STRATEGIES, prefix_strategy_cached
    from dpgm.workload import Workload

    size = SLOW_STRATEGY_SIZE + 1
    for n in (size, size + 1):
        _PREFIX_STRATEGIES.pop(n, None)  # another test may have computed it
    domain = Domain(["number", "twin", "unused", "flag"], [size, size, size + 1, 2])
    lines = []
    ResidualPlanner(1.0, progress=lines.append).check(domain, Workload(
        [("number", "flag"), ("twin", "flag")], numeric=["number", "twin", "unused"]))
    assert [line for line in lines if "prefix ranges" in line] == [
        f"planning prefix ranges of 'number', 'twin' ({size:,} values): its strategy "
        "takes time that grows as the cube of the size"]
    assert prefix_strategy_cached(size) and not prefix_strategy_cached(size + 1)
    for values, announced in ((SLOW_STRATEGY_SIZE, False), (size, False)):
        domain = Domain(["number", "flag"], [values, 2])
        lines = []
        mechanism = ResidualPlanner(1.0, progress=lines.append)
        mechanism.check(domain, Workload([("number", "flag")], numeric=["number"]))
        said = [line for line in lines if "prefix ranges of 'number'" in line]
        assert bool(said) == announced, lines


def test_prefix_ranges_are_unbiased_with_the_planned_mean_variance(data):
    from dpgm.workload import Workload

    workload = Workload(WORKLOAD, numeric=["c"])  # c is asked prefix ranges
    runs = 400
    answers = {c: [] for c in WORKLOAD}
    mechanism = ResidualPlanner(1.0, estimator="original", loss="error")
    for seed in range(runs):
        model = mechanism.fit(data, workload, rng=seed)
        for c in WORKLOAD:
            answers[c].append(workload.answer(c, model.marginal(c)))
    assert mechanism.residual_plan.ranged == frozenset({"c"})
    for c in WORKLOAD:
        draws = np.array(answers[c])
        planned = mechanism.variance(c)  # the mean over the marginal's ranges
        assert 0.85 < draws.var(axis=0, ddof=1).mean() / planned < 1.15, c
        truth = workload.answer(c, data.marginal(c))
        error = np.abs(draws.mean(axis=0) - truth) / np.sqrt(draws.var(axis=0) / runs)
        assert error.max() < 4.5, c
    # the ranged residuals are measured with the prefix strategy, charged in full
    assert any(residual_subset(m) is None for m in mechanism.measurements)
    assert sum(e.rho for e in mechanism.budget.ledger) == pytest.approx(
        mechanism.budget.total, rel=1e-12)
