"""AIM+RP: the budget split between AIM and the plan, the public switch that skips
selection for small workloads, and what the plan measures. (The contract every learner
keeps: test_conformance.py; the privacy claim: tests/audit.)"""

from __future__ import annotations

import numpy as np
import pytest
from mechanism_helpers import PublicOnly, sample_data

from dpgm import Dataset, Domain
from dpgm.errors import DpgmError, ModelTooLargeError, ParameterError
from dpgm.mechanisms import AIMResidual
from dpgm.models import RecordsModel
from dpgm.privacy.quiet import on_records
from dpgm.residuals import residual_subset
from dpgm.workload import Workload

DOMAIN = Domain(["a", "b", "c", "d"], [2, 3, 4, 2])


@pytest.fixture(scope="module")
def data():
    return sample_data(DOMAIN, 3000, seed=2)


def test_a_small_workload_is_measured_without_selection(data):
    mechanism = AIMResidual(1.0, iters=30)
    model = mechanism.fit(data, rng=0)
    assert mechanism.selector is None
    assert all(residual_subset(m) is not None for m in mechanism.measurements)
    assert {frozenset(s) for s in mechanism.residual_plan.subsets} >= {
        frozenset(p) for p in Workload.all_marginals(DOMAIN, 2).cliques}
    assert sum(e.rho for e in mechanism.budget.ledger) == pytest.approx(
        mechanism.budget.total, rel=1e-12)
    # its measurements are residuals: exact error bars for every measured marginal
    _, error = model.marginal(("a", "c"), with_error=True)
    assert error.shape == (2, 4)


def test_the_switch_reads_the_workloads_junction_tree_only():
    wide = Domain([f"x{i}" for i in range(8)], [10] * 8)
    mechanism = AIMResidual(1.0)
    assert mechanism.share(wide, Workload.all_marginals(wide, 2)) == 0.9
    assert mechanism.share(DOMAIN, Workload.all_marginals(DOMAIN, 2)) == 0.0
    assert AIMResidual(1.0, one_shot_cells=10).share(
        DOMAIN, Workload.all_marginals(DOMAIN, 2)) == 0.9
    assert AIMResidual(1.0, selection_share=0.3).share(
        DOMAIN, Workload.all_marginals(DOMAIN, 2)) == 0.3
    AIMResidual(1.0).check(wide)  # AIM's own checks, on public facts alone
    with pytest.raises(DpgmError, match="unknown attribute"):
        AIMResidual(1.0).fit(PublicOnly(wide), workload=[("x0", "zz")])


def test_aim_spends_its_share_and_the_plan_the_rest(data):
    mechanism = AIMResidual(1.0, selection_share=0.5, rounds=8, round_iters=10, iters=30)
    mechanism.fit(data, rng=0)
    rho = mechanism.budget.total
    selected = {id(m) for m in mechanism.selector.measurements}
    residuals = [m for m in mechanism.measurements if id(m) not in selected]
    assert residuals and all(residual_subset(m) is not None for m in residuals)
    assert sum(e.rho for e in mechanism.selector.budget.ledger) == pytest.approx(0.5 * rho)
    assert sum(e.rho for e in mechanism.budget.ledger) == pytest.approx(rho, rel=1e-12)
    assert mechanism.residual_plan.rho == pytest.approx(0.5 * rho)
    # the plan covers every marginal AIM selected (and every attribute)
    chosen = {m.clique for m in mechanism.selector.measurements}
    planned = {frozenset(s) for s in mechanism.residual_plan.subsets}
    assert all(frozenset(c) in planned for c in chosen)


@pytest.mark.parametrize("share", [1.0, -0.1, "half"])
def test_a_share_that_leaves_the_plan_nothing_is_refused(share):
    with pytest.raises(ParameterError):
        AIMResidual(1.0, selection_share=share)


def test_a_ledger_without_room_is_refused_before_aim_reads_anything(data):
    from mechanism_helpers import prespent

    from dpgm.errors import BudgetExceededError

    mechanism = prespent(AIMResidual(1.0, selection_share=0.5, rounds=8), 0.2)
    with pytest.raises(BudgetExceededError):
        mechanism.fit(data, rng=0)
    assert [e.label for e in mechanism.budget.ledger] == ["another release"]


def _residual_factors(mechanism, subset):
    """The query factors of the measurement that answers the residual of ``subset``."""
    (m,) = [m for m in mechanism.measurements if residual_subset(m) == subset]
    return [f for a, f in zip(m.clique, m.query.factors, strict=True) if a in subset]


@pytest.mark.parametrize("denoise", [True, False])
def test_ordered_columns_are_measured_in_the_cosine_basis_and_shrunk(denoise, monkeypatch):
    import numpy as np
    from schema_helpers import SPEC, raw_table

    import dpgm.residuals as residuals
    from dpgm.residuals import ordered_basis, residual_basis
    from dpgm.schema import Schema

    schema = Schema.from_json(SPEC)
    built = []
    monkeypatch.setattr(residuals, "residual_basis",
                        lambda n: built.append(n) or residual_basis(n))
    mechanism = AIMResidual(1.0, selection_share=0.0, iters=20, denoise=denoise)
    mechanism.fit(raw_table(300), schema=schema, workload=[("age", "paid"), ("sex", "job")],
                  rng=0)
    if denoise:  # no Helmert basis is made for an ordered column (an unused n x n array)
        ordered = mechanism.ordered_attributes(schema.domain)
        assert set(built) == {schema.domain[a] for a in schema.domain.attrs
                              if a not in ordered and schema.domain[a] > 1}
    # the schema's numeric and datetime columns, with their missing value where nullable
    assert mechanism.ordered_attributes(schema.domain) == (
        {"age": False, "paid": True, "seen": True})
    age, paid = _residual_factors(mechanism, ("age", "paid"))
    (sex,) = _residual_factors(mechanism, ("sex",))
    np.testing.assert_array_equal(age, ordered_basis(10) if denoise else residual_basis(10))
    np.testing.assert_array_equal(paid, ordered_basis(4, True) if denoise else residual_basis(4))
    np.testing.assert_array_equal(sex, residual_basis(3))  # no order: Helmert's
    # the same charges either way: the basis is public and has the same sensitivity
    assert sum(e.rho for e in mechanism.budget.ledger) == pytest.approx(
        mechanism.budget.total, rel=1e-12)


def test_without_a_schema_no_attribute_is_ordered(data):
    mechanism = AIMResidual(1.0, iters=20)
    mechanism.fit(data, rng=0)
    assert mechanism.ordered_attributes(DOMAIN) == {}


@pytest.mark.parametrize("denoise", [1, "yes", None])
def test_denoise_is_true_or_false(denoise):
    with pytest.raises(ParameterError, match="denoise"):
        AIMResidual(1.0, denoise=denoise)


def test_the_final_estimate_starts_from_aims_model(data, monkeypatch):
    from dpgm.mechanisms.aim import AIM

    returned, starts = [], []
    fit_within, estimate = AIM.fit_within, AIMResidual.estimate
    monkeypatch.setattr(AIM, "fit_within",
                        lambda self, *a, **k: returned.append(fit_within(self, *a, **k))
                        or returned[-1])
    monkeypatch.setattr(AIMResidual, "estimate",
                        lambda self, *a, **k: starts.append(k.get("warm_start"))
                        or estimate(self, *a, **k))
    AIMResidual(1.0, selection_share=0.5, rounds=4, round_iters=5, iters=10).fit(data, rng=0)
    assert returned[0] is not None and starts == [returned[0]]


def test_the_one_shot_fit_weights_the_count_and_the_one_way_answers(data, monkeypatch):
    from dpgm.mechanisms import aim_residual as module

    seen = []
    estimate = AIMResidual.estimate
    monkeypatch.setattr(AIMResidual, "estimate",
                        lambda self, *a, **k: seen.append(k.get("weights"))
                        or estimate(self, *a, **k))
    mechanism = AIMResidual(1.0, iters=300)
    model = mechanism.fit(data, rng=0)
    orders = [len(residual_subset(m)) for m in mechanism.measurements]
    assert seen[-1] == [module.LOW_ORDER_WEIGHT if k < 2 else 1.0 for k in orders]
    assert {0, 1, 2} <= set(orders)
    # the model keeps the plan's noise for its error bars, not the weighted one
    assert [m.std for m in model.measured.measurements] == [
        m.std for m in mechanism.measurements]

    def one_way_misfit(weight):
        monkeypatch.setattr(module, "LOW_ORDER_WEIGHT", weight)
        mechanism = AIMResidual(0.1, iters=300)
        model = mechanism.fit(few, rng=0)
        return sum(float(np.sum((m.answer(model.marginal(m.clique)) - m.values) ** 2))
                   for m in mechanism.measurements if len(residual_subset(m)) == 1)

    # few records at a small epsilon: no nonnegative table fits the noisy pairs, and the
    # fit with the plan's weights leaves the one-way answers further behind
    few = sample_data(DOMAIN, 300, seed=2)
    assert one_way_misfit(module.LOW_ORDER_WEIGHT) < 0.7 * one_way_misfit(1.0)
    assert seen[-1] == [1.0] * len(orders)
    # AIM's route keeps the plan's weights
    AIMResidual(1.0, selection_share=0.5, rounds=4, round_iters=5, iters=10).fit(data, rng=0)
    assert seen[-1] is None


# -- the records estimator -------------------------------------------------------------------
def test_records_follow_every_pair_and_stand_for_the_noisy_count(data):
    mechanism = AIMResidual(1000.0, estimator="records")
    model = mechanism.fit(data, rng=0)
    assert isinstance(model, RecordsModel)
    assert mechanism.selector is None  # no selection: the whole budget on the plan
    assert sum(e.rho for e in mechanism.budget.ledger) == pytest.approx(
        mechanism.budget.total, rel=1e-12)
    assert model.total == pytest.approx(len(data), abs=5) and model.total != len(data)
    assert len(model.records) == round(model.total)
    for pair in Workload.all_marginals(DOMAIN, 2).cliques:
        real = data.marginal(pair) / len(data)
        fitted = model.marginal(pair) / model.total
        assert 0.5 * np.abs(real - fitted).sum() < 0.01, pair


def test_records_are_post_processing_of_the_one_shot_plans_release(data):
    fits = [AIMResidual(1.0, selection_share=0.0, iters=5), AIMResidual(1.0, estimator="records")]
    for mechanism in fits:
        mechanism.fit(data, rng=7)
    first, second = ([(m.clique, np.asarray(m.values).tobytes()) for m in f.measurements]
                     for f in fits)
    assert first == second


def test_records_refuse_a_share_and_refinement_before_reading():
    with pytest.raises(ParameterError, match="selection_share"):
        AIMResidual(1.0, estimator="records", selection_share=0.5)
    mechanism = AIMResidual(1.0, estimator="records")
    with pytest.raises(ParameterError, match="one resolution"):
        mechanism.fit(PublicOnly(Domain(["a", "b"], [4, 3])), refine={"a": 2}, rng=0)
    # a memory limit too small for the fewest records fitted: refused, not an empty model
    from dpgm.mechanisms.aim_residual import CELL_BYTES, FITTED_COPIES, MIN_FITTED_RECORDS

    one_record = len(DOMAIN) * CELL_BYTES * FITTED_COPIES
    small = AIMResidual(1.0, estimator="records",
                        max_memory=MIN_FITTED_RECORDS * one_record - 1)
    with pytest.raises(ModelTooLargeError, match="at least 1,000 records"):
        small.fit(PublicOnly(DOMAIN), rng=0)


def test_a_large_table_is_fitted_as_a_sample_that_stands_for_the_noisy_count(data,
                                                                              monkeypatch):
    import dpgm.mechanisms.aim_residual as module

    monkeypatch.setattr(module, "MAX_FITTED_RECORDS", 500)
    model = AIMResidual(1000.0, estimator="records").fit(data, rng=1)
    assert len(model.records) == 500
    assert model.total == pytest.approx(len(data), abs=5)
    for pair in Workload.all_marginals(DOMAIN, 2).cliques:
        real = data.marginal(pair) / len(data)
        assert 0.5 * np.abs(real - model.marginal(pair) / model.total).sum() < 0.02, pair


def test_records_fit_the_pairs_a_workload_names_and_leave_the_others_free(data):
    workload = [("a", "b"), ("c", "d")]
    model = AIMResidual(1000.0, estimator="records").fit(data, workload=workload, rng=2)
    for pair in workload:
        real = data.marginal(pair) / len(data)
        assert 0.5 * np.abs(real - model.marginal(pair) / model.total).sum() < 0.01, pair


def test_every_pair_measured_the_pairs_off_the_forest_lean_on_it(monkeypatch):
    """Without selection, a pair off the Chow–Liu forest of the denoised pair tables is
    shrunk towards the pair the forest implies, not towards independence: on a chain
    a -> b -> c -> d its answers land nearer the truth (post-processing: the release is
    the same)."""
    rng = np.random.default_rng(5)
    n = 4000
    a = rng.integers(0, 4, n)
    b = (a + (rng.random(n) < 0.2)) % 5
    c = (b + (rng.random(n) < 0.2)) % 6
    d = (c // 2 + (rng.random(n) < 0.1)) % 4
    data = Dataset(np.column_stack([a, b, c, d]), Domain(["a", "b", "c", "d"], [4, 5, 6, 4]))

    off_chain = {frozenset("ac"), frozenset("ad"), frozenset("bd")}

    def error(mechanism):  # of the pairs off the chain (the forest's edges are unchanged)
        squared = 0.0
        for m in mechanism.measurements:
            if frozenset(residual_subset(m)) in off_chain:
                truth = m.query @ data.marginal(m.clique).ravel()
                squared += float(((m.values - truth) ** 2).sum())
        return squared

    errors = {}
    for lean in (True, False):
        if not lean:
            monkeypatch.setattr(AIMResidual, "_shrink_towards_forest",
                                staticmethod(lambda domain, workload, raw, shrunk, *_: shrunk))
        fits = [AIMResidual(0.3, iters=5) for _ in range(4)]
        for seed, mechanism in enumerate(fits):
            mechanism.fit(data, rng=seed)
        errors[lean] = [error(m) for m in fits]
    assert np.mean(errors[True]) < 0.8 * np.mean(errors[False]), errors


def test_the_forest_pulls_a_pairs_fast_bands_and_leaves_its_slow_ones_shrunk_to_zero(
        monkeypatch):
    """Off the forest, a pair with an ordered attribute keeps the entries that are in a
    slow band (``FOREST_FREE_BANDS``) on each of its ordered attributes as shrunk
    towards zero: its trend, and with it any partial effect the forest does not explain.
    Every other entry of a pair off the forest, and every pair of unordered attributes
    off it, is pulled towards the forest."""
    from itertools import combinations

    import pandas as pd

    import dpgm.mechanisms.aim_residual as module
    from dpgm.residuals import frequency_bands
    from dpgm.schema import Schema

    bins, ordered = 16, "xyw"
    schema = Schema.from_json({"columns": {
        "g": {"kind": "categorical", "labels": list("abcdef")},
        "h": {"kind": "categorical", "labels": list("uvw")},
        "k": {"kind": "categorical", "labels": list("uvw")},
        **{c: {"kind": "numeric", "lower": 0, "upper": 1, "bins": bins} for c in ordered}}})
    rng = np.random.default_rng(11)
    n = 3000
    g = rng.integers(0, 6, n)
    x = np.clip(0.1 + 0.15 * g + rng.normal(0, 0.05, n), 0, 0.999)
    y = np.clip(x + 0.05 * (g % 2) + rng.normal(0, 0.05, n), 0, 0.999)
    w = np.clip(y + rng.normal(0, 0.05, n), 0, 0.999)
    h = np.where(rng.random(n) < 0.8, g % 3, rng.integers(0, 3, n))
    k = np.where(rng.random(n) < 0.8, h, rng.integers(0, 3, n))
    frame = pd.DataFrame({"g": np.array(list("abcdef"))[g], "h": np.array(list("uvw"))[h],
                          "k": np.array(list("uvw"))[k], "x": x, "y": y, "w": w})
    seen = {}
    pull, forest = AIMResidual._shrink_towards_forest, module.forest_pairs

    def watched(domain, workload, raw, shrunk, bases, bands):
        seen.update(shrunk=shrunk, pulled=pull(domain, workload, raw, shrunk, bases, bands))
        return seen["pulled"]

    def forest_seen(*args):
        seen["edges"], implied = forest(*args)
        return seen["edges"], implied

    monkeypatch.setattr(AIMResidual, "_shrink_towards_forest", staticmethod(watched))
    monkeypatch.setattr(module, "forest_pairs", forest_seen)
    AIMResidual(1.0, iters=5, estimator="records").fit(frame, schema=schema, rng=0)
    slow = frequency_bands(bins) <= module.FOREST_FREE_BANDS
    assert slow.any() and not slow.all()
    moved = {}
    for before, after in zip(seen["shrunk"], seen["pulled"]):
        subset = tuple(residual_subset(before) or ())
        if len(subset) != 2 or np.array_equal(before.values, after.values):
            continue
        moved[frozenset(subset)] = sum(a in ordered for a in subset)
        rows = [slow if a in ordered else np.ones(schema.domain[a] - 1, bool)
                for a in subset]
        kept = (np.all([r.ravel() for r in np.meshgrid(*rows, indexing="ij")], axis=0)
                if moved[frozenset(subset)] else np.zeros(before.values.size, bool))
        np.testing.assert_array_equal(after.values[kept], before.values[kept])
        assert np.all(after.values[~kept] != before.values[~kept]), subset
    # every pair off the forest is pulled, those of two, one and no ordered attributes
    every = {frozenset(p) for p in combinations(schema.domain.attrs, 2)}
    assert set(moved) == every - {frozenset(e) for e in seen["edges"]}
    assert set(moved.values()) == {0, 1, 2}, moved


# -- the route of estimator="auto" (the default) ---------------------------------------------
def _count_entries(mechanism):
    from dpgm.mechanisms.aim_residual import COUNT_LABEL

    return [e for e in mechanism.budget.ledger if e.label == COUNT_LABEL]


def test_auto_takes_the_records_where_the_noisy_count_fills_the_pair_cells(data):
    from dpgm.mechanisms.aim_residual import COUNT_SHARE

    # one_shot_cells=1: the workload's junction tree counts as too large for one model
    mechanism = AIMResidual(1.0, one_shot_cells=1)
    model = mechanism.fit(data, rng=0)
    rho = mechanism.budget.total
    assert mechanism.route == "records" and isinstance(model, RecordsModel)
    (count,) = _count_entries(mechanism)
    assert count.rho == pytest.approx(COUNT_SHARE * rho)
    assert mechanism.residual_plan.rho == pytest.approx((1 - COUNT_SHARE) * rho)
    assert sum(e.rho for e in mechanism.budget.ledger) == pytest.approx(rho, rel=1e-12)


def test_auto_takes_aim_where_the_pair_cells_are_too_many_for_the_count():
    from dpgm.mechanisms.aim_residual import COUNT_SHARE, SELECTION_SHARE

    # 40 records over 15 pairs of 100 cells: even a count a few noise scales too high
    # leaves the records per cell over the noise variance far below RECORDS_SIGNAL
    wide = Domain([f"x{i}" for i in range(6)], [10] * 6)
    few = sample_data(wide, 40, seed=3)
    mechanism = AIMResidual(1.0, one_shot_cells=1, rounds=6, round_iters=5, iters=10)
    model = mechanism.fit(few, rng=0)
    rho = mechanism.budget.total
    assert mechanism.route == "pgm" and not isinstance(model, RecordsModel)
    assert len(_count_entries(mechanism)) == 1
    available = (1 - COUNT_SHARE) * rho
    assert mechanism.selector.budget.total == pytest.approx(SELECTION_SHARE * available)
    assert mechanism.residual_plan.rho == pytest.approx((1 - SELECTION_SHARE) * available)
    assert sum(e.rho for e in mechanism.budget.ledger) == pytest.approx(rho, rel=1e-12)


def test_the_route_reads_the_released_count_and_public_facts_only(data, monkeypatch):
    """The same records take either route as the released count says: the branch is
    post-processing of the count."""
    import dpgm.mechanisms.aim_residual as module

    measure = module.measure_record_count

    def count_of(value):
        def patched(*args, **kwargs):
            m = measure(*args, **kwargs)
            return type(m)(m.clique, np.array([value]), m.std, m.query)
        return patched

    routes = []
    for value in (1.0, 1e6):
        monkeypatch.setattr(module, "measure_record_count", count_of(value))
        mechanism = AIMResidual(1.0, one_shot_cells=1, rounds=4, round_iters=5, iters=10)
        mechanism.fit(data, rng=0)
        routes.append(mechanism.route)
    assert routes == ["pgm", "records"]


def test_the_signal_grows_with_the_count_and_with_rho():
    wide = Domain([f"x{i}" for i in range(5)], [4] * 5)
    workload = Workload.all_marginals(wide, 2)
    mechanism = AIMResidual(1.0)
    base = mechanism.records_signal(wide, workload, 1000.0, 0.1)
    # the plan's cell variances are inversely proportional to rho (Gaussian noise)
    assert mechanism.records_signal(wide, workload, 2000.0, 0.1) == pytest.approx(2 * base)
    assert mechanism.records_signal(wide, workload, 1000.0, 0.4) == pytest.approx(4 * base)
    # 1000 records over 10 pairs of 16 cells: 6.25 a cell, over the cells' noise variance
    plan = mechanism.residual_plan  # none before a fit
    assert plan is None
    from dpgm.residuals import plan_residuals

    plan = plan_residuals(wide, list(workload.cliques), 0.1, "sum")
    assert base == pytest.approx(1000.0 / 160 / plan.variance(("x0", "x1")))


@pytest.mark.parametrize("options, fit", [
    ({}, {}),  # the workload's tree is small: the one-shot model, no count
    ({"one_shot_cells": 1, "estimator": "pgm"}, {}),
    ({"one_shot_cells": 1, "selection_share": 0.5}, {}),
    ({"one_shot_cells": 1}, {"zeros": "a=0,b=0"}),
    ({"one_shot_cells": 1}, {"refine": {"c": 2}}),
    ({"one_shot_cells": 1, "max_memory": 1_000 * 4 * 8 * 4 - 1}, {}),  # < 1,000 records
])
def test_auto_spends_nothing_on_a_count_where_records_are_out(data, options, fit):
    if fit.get("zeros"):  # a structural zero: only Private-PGM holds it
        from dpgm.constraints import Forbidden

        mask = np.zeros((2, 3), dtype=bool)
        mask[0, 0] = True
        fit = {"zeros": [Forbidden(("a", "b"), mask)]}
    mechanism = AIMResidual(1.0, rounds=8, round_iters=5, iters=10, **options)
    mechanism.fit(data, rng=0, **fit)
    assert mechanism.route == "pgm" and not _count_entries(mechanism)
    assert sum(e.rho for e in mechanism.budget.ledger) == pytest.approx(
        mechanism.budget.total, rel=1e-12)


def _parity_data(n: int = 3000) -> Dataset:
    """c's low bit is the parity of a and b: a triple that no pair holds."""
    rng = np.random.default_rng(21)
    a, b = rng.integers(0, 2, n), rng.integers(0, 3, n)
    c = (a + b) % 2 + 2 * rng.integers(0, 2, n)
    return Dataset(np.column_stack([a, b, c, rng.integers(0, 2, n)]), DOMAIN)


def _triple_tv(model, data: Dataset) -> float:
    synthetic = model.synthetic_data(len(data), rng=3)
    real = data.marginal(("a", "b", "c"))
    return 0.5 * np.abs(synthetic.marginal(("a", "b", "c")) / len(synthetic)
                        - real / len(data)).sum()


def test_the_records_fit_a_workloads_triple():
    data = _parity_data()
    pairs = [("a", "b"), ("a", "c"), ("b", "c"), ("c", "d")]
    with_triple = AIMResidual(rho=50.0, estimator="records")
    model = with_triple.fit(data, workload=[("a", "b", "c"), ("c", "d")], rng=0)
    assert any(residual_subset(m) == ("a", "b", "c") for m in with_triple.measurements)
    pairs_only = AIMResidual(rho=50.0, estimator="records").fit(data, workload=pairs, rng=0)
    fitted, without = _triple_tv(model, data), _triple_tv(pairs_only, data)
    assert fitted < 0.03 and fitted < 0.3 * without


def test_auto_may_take_the_records_with_a_triple_in_the_workload(data):
    mechanism = AIMResidual(1.0, one_shot_cells=1)
    model = mechanism.fit(data, workload=[("a", "b", "c"), ("c", "d")], rng=0)
    assert mechanism.route == "records" and isinstance(model, RecordsModel)
    assert any(residual_subset(m) == ("a", "b", "c") for m in mechanism.measurements)
    assert sum(e.rho for e in mechanism.budget.ledger) == pytest.approx(
        mechanism.budget.total, rel=1e-12)


def test_the_signal_reads_the_pairs_inside_a_larger_marginal():
    from dpgm.residuals import plan_residuals

    workload = Workload([("a", "b", "c"), ("c", "d")])
    plan = plan_residuals(DOMAIN, list(workload.cliques), 0.1, "sum")
    pairs = [("a", "b"), ("a", "c"), ("b", "c"), ("c", "d")]  # 6 + 8 + 12 + 8 cells
    variance = np.mean([plan.variance(p) for p in pairs])
    assert AIMResidual(1.0).records_signal(DOMAIN, workload, 680.0, 0.1) == pytest.approx(
        680.0 / 34 / variance)


def test_the_records_fit_is_told_the_expected_squared_noise_of_its_targets(data, monkeypatch):
    """The noise the records' fit is given is the expected squared distance of the
    (undenoised) pair tables it fits from the real ones: averaged over noise draws."""
    import dpgm.mechanisms.aim_residual as module

    seen = []

    def captured(domain, targets, start, rng, **options):  # the fit itself is not the point
        seen.append(({c: np.array(t) for c, t in targets.items()}, options["noise"]))
        return start

    monkeypatch.setattr(module, "fit_records", captured)
    for seed in range(40):
        AIMResidual(0.5, estimator="records", denoise=False).fit(data, rng=seed)
    squared = [sum(((t - data.marginal(c)) ** 2).sum() for c, t in targets.items())
               for targets, _ in seen]
    noise = {round(n, 6) for _, n in seen}
    assert len(noise) == 1  # public: the plan's, the same for every draw
    # 40 draws of a sum over 44 cells of squared noise: within 10% of its mean
    assert np.mean(squared) == pytest.approx(noise.pop(), rel=0.1)


# -- rare values merged (compress=True, the default) -------------------------------------------
def _numeric_table(n: int = 3000):
    """x's bins of 0-30 and 60-100 are empty, y's last bin is; g never takes c or d."""
    import pandas as pd

    from dpgm.schema import Schema

    schema = Schema.from_json({"columns": {
        "x": {"kind": "numeric", "lower": 0, "upper": 100, "bins": 10, "integer": True},
        "y": {"kind": "numeric", "lower": 0, "upper": 10, "bins": 5, "nullable": True},
        "g": {"kind": "categorical", "labels": ["a", "b", "c", "d"]},
        "h": {"kind": "categorical", "labels": ["u", "v"]}}})
    rng = np.random.default_rng(4)
    x = rng.integers(30, 60, n)
    y = np.clip((x - 30) / 4 + rng.normal(0, 1, n), 0, 7.9)
    frame = pd.DataFrame({"x": x, "y": y, "g": np.where(x < 45, "a", "b"),
                          "h": rng.choice(["u", "v"], n)})
    frame.loc[::10, "y"] = np.nan
    return frame, schema


@pytest.mark.parametrize("estimator", ["pgm", "records"])
def test_rare_bins_are_merged_and_the_model_answers_on_the_schemas_domain(estimator):
    from dpgm.mechanisms.aim_residual import RARE_LABEL, RARE_SHARE

    frame, schema = _numeric_table()
    domain = schema.domain
    # one_shot_cells=1: the workload counts as too large for the one-shot model
    mechanism = AIMResidual(1.0, estimator=estimator, one_shot_cells=1, rounds=8,
                            round_iters=10, iters=50)
    model = mechanism.fit(frame, schema=schema, rng=0)
    compression = mechanism.compression
    x = compression.mappings["x"]
    assert np.all(np.diff(x) >= 0) and x[2] < x[3] < x[4] < x[5] < x[6]  # full bins apart
    assert compression.compressed["x"] < domain["x"]
    # y's missing value keeps its own last code; categorical columns are never merged
    assert np.sum(compression.mappings["y"] == compression.compressed["y"] - 1) == 1
    assert compression.compressed["g"] == 4 and compression.compressed["h"] == 2
    # the ordered columns' one-way marginals are charged first, RARE_SHARE of the budget
    rho = mechanism.budget.total
    first = mechanism.budget.ledger[0]
    assert first.label == RARE_LABEL and first.rho == pytest.approx(RARE_SHARE * rho)
    assert sum(e.rho for e in mechanism.budget.ledger) == pytest.approx(rho, rel=1e-12)
    # the model is read on the schema's domain, each merged bin's share spread evenly
    # (records: each drawn among the bins its code stands for)
    assert model.domain == domain
    counts = model.marginal(("x",))
    if estimator == "pgm":
        for code in range(compression.compressed["x"]):
            np.testing.assert_allclose(counts[x == code], counts[x == code][0])
    assert counts[:3].sum() + counts[6:].sum() < 0.03 * counts.sum()
    with on_records():
        real = schema.encode(frame)
    truth = real.marginal(("x", "g")) / len(real)
    assert 0.5 * np.abs(model.marginal(("x", "g")) / model.total - truth).sum() < 0.05
    synthetic = model.synthetic_data(500, rng=0)
    assert synthetic["x"].between(0, 100).all()


def test_no_merging_without_compress_an_ordered_column_or_a_large_workload(data):
    from dpgm.mechanisms.aim_residual import RARE_LABEL

    frame, schema = _numeric_table()
    runs = [(frame, schema, {"compress": False, "one_shot_cells": 1}),
            # the workload fits the one-shot model: every pair measured finely
            (frame, schema, {}),
            # no schema, so no ordered column
            (data, None, {"one_shot_cells": 1})]
    for table, table_schema, options in runs:
        mechanism = AIMResidual(1.0, rounds=8, round_iters=5, iters=20, **options)
        mechanism.fit(table, schema=table_schema, rng=0)
        assert mechanism.compression is None
        assert all(e.label != RARE_LABEL for e in mechanism.budget.ledger)
    refined = AIMResidual(1.0, estimator="pgm", one_shot_cells=1, rounds=8, round_iters=5,
                          iters=10)
    refined.fit(frame, schema=schema, refine={"x": 2}, rng=0)
    assert refined.compression is None


@pytest.mark.parametrize("compress", [1, "yes", None])
def test_compress_is_true_or_false(compress):
    with pytest.raises(ParameterError, match="compress"):
        AIMResidual(1.0, compress=compress)


def test_ordered_columns_keep_their_order_when_their_rare_bins_merge():
    from schema_helpers import SPEC, raw_table

    from dpgm.schema import Schema

    schema = Schema.from_json(SPEC)
    frame = raw_table(3000)
    frame["age"] = frame["age"] % 30 + 35  # the bins of ages 0-30 and 70-100 are empty
    mechanism = AIMResidual(1.0, selection_share=0.0, one_shot_cells=1, iters=20)
    model = mechanism.fit(frame, schema=schema, rng=0)
    compression = mechanism.compression
    for attr, missing in mechanism.ordered_attributes(schema.domain).items():
        codes = compression.mappings[attr]
        ordinary = codes[:-1] if missing else codes
        assert np.all(np.diff(ordinary) >= 0), attr  # runs merged in place
        if missing:  # the missing value keeps a code of its own, the last
            assert codes[-1] == compression.compressed[attr] - 1
            assert np.sum(codes == codes[-1]) == 1
    ages = compression.mappings["age"]
    # ages 40-60 fill two bins, kept apart; some of the empty bins merged
    assert ages[3] < ages[4] < ages[5] < ages[6]
    assert compression.compressed["age"] < schema.domain["age"]
    synthetic = model.synthetic_data(1000, rng=0)
    assert synthetic["age"].between(0, 100).all()


def test_the_merged_bins_read_the_released_one_ways_and_public_facts_only(monkeypatch):
    """With the rare-values measurement's answers held fixed, two tables whose bins are
    filled wholly differently get the same merged domain: which bins merge is
    post-processing of what was released, not a second look at the records."""
    import dpgm.mechanisms.aim_residual as module
    from dpgm.mechanisms.aim_residual import RARE_LABEL

    frame, schema = _numeric_table()
    spread = frame.copy()  # every bin of x and y full
    rng = np.random.default_rng(9)
    spread["x"] = rng.integers(0, 101, len(frame))
    spread["y"] = rng.uniform(0, 10, len(frame))

    def merged(table):
        mechanism = AIMResidual(1.0, one_shot_cells=1, rounds=4, round_iters=5, iters=10)
        mechanism.fit(table, schema=schema, rng=0)
        return mechanism.compression.mappings

    free = [merged(frame), merged(spread)]
    assert not np.array_equal(free[0]["x"], free[1]["x"])  # the data do tell them apart

    measure, released = module.measure_marginals, {}

    def fixed(data, cliques, **kwargs):
        found = measure(data, cliques, **kwargs)
        if kwargs.get("label") != RARE_LABEL:
            return found
        if not released:  # the first table's answers, released once and reused
            released.update({m.clique: m.values for m in found})
        return [type(m)(m.clique, released[m.clique], m.std, m.query) for m in found]

    monkeypatch.setattr(module, "measure_marginals", fixed)
    held = [merged(frame), merged(spread)]
    for attr in schema.domain.attrs:
        np.testing.assert_array_equal(held[0][attr], held[1][attr])
        np.testing.assert_array_equal(held[0][attr], free[0][attr])


@pytest.mark.parametrize("estimator", ["pgm", "records"])
def test_the_records_fold_the_rare_values_one_ways_into_the_plans(estimator, monkeypatch):
    """On the records' route the rare values' one-way answers are folded into the plan's
    one-way residuals (Private-PGM fits them on the other route): the fold is called with
    the ordered columns' answers on the merged domain, and its residuals are the ones
    fitted."""
    import dpgm.mechanisms.aim_residual as module

    frame, schema = _numeric_table()
    calls, fold = [], module.fold_one_ways

    def spy(residuals, marginals):
        folded = fold(residuals, marginals)
        calls.append((marginals, folded))
        return folded

    monkeypatch.setattr(module, "fold_one_ways", spy)
    mechanism = AIMResidual(1.0, estimator=estimator, one_shot_cells=1, rounds=4,
                            round_iters=5, iters=10)
    mechanism.fit(frame, schema=schema, rng=0)
    if estimator == "pgm":
        assert not calls
        return
    (marginals, folded), = calls
    compressed = mechanism.compression.compressed
    assert sorted(marginals) == ["x", "y"]
    assert all(m.values.size == compressed[a] for a, m in marginals.items())
    fitted = [m for m in mechanism.measurements if residual_subset(m) == ("x",)]
    made = [m for m in folded if residual_subset(m) == ("x",)]
    assert len(fitted) == 1 and fitted[0] is made[0]  # the folded residual is the one fitted
