"""MWEM: budget accounting, reproducibility, selection law, both estimators, failure modes."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from brute_force import chi_square_pvalue
from mechanism_helpers import PublicOnly, Untouchable
from scipy import optimize

import dpgm.mechanisms.base as base_module
from dpgm import Dataset, Domain, DpgmError, MarkovRandomField
from dpgm.errors import BudgetExceededError, ModelTooLargeError
from dpgm.mechanisms.mwem import MWEM
from dpgm.models.tables import TableModel
from dpgm.privacy import PrivacyBudget, cdp_rho
from dpgm.workload import Workload

FAST = {"round_iters": 20, "iters": 50}


def _triple(seed: int = 0, n: int = 3000) -> Dataset:
    """a (3 values), b (4, numeric) and c (2): b follows a, c depends on both."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    b = np.where(rng.random(n) < 0.7, a, rng.integers(0, 4, n))
    c = np.where(rng.random(n) < 0.8, (a + b) % 2, rng.integers(0, 2, n))
    return Dataset(np.column_stack([a, b, c]), Domain(["a", "b", "c"], [3, 4, 2]))


WORKLOAD = Workload([("a", "b"), ("c", "b"), ("a", "c")], numeric=["b"])


@pytest.fixture(scope="module")
def data() -> Dataset:
    return _triple()


# -- budget ------------------------------------------------------------------------------
@pytest.mark.parametrize("estimator", ["pgm", "original"])
def test_pure_ledger_spends_exactly_epsilon(data, estimator):
    epsilon, rounds = 0.7, 4
    mechanism = MWEM(epsilon, estimator=estimator, rounds=rounds, **FAST)
    mechanism.fit(data, WORKLOAD, rng=0)
    budget = mechanism.budget
    assert budget.mode == "pure"
    assert budget.spent_epsilon == pytest.approx(epsilon, rel=1e-9)
    assert budget.remaining == pytest.approx(0.0, abs=1e-9 * epsilon)
    ledger = budget.ledger
    labels = [e.label for e in ledger]
    expected = ["record count"]
    for t in range(1, rounds + 1):
        expected += [f"round {t}: select", f"round {t}: measure"]
    assert labels == expected
    assert ledger[0].epsilon == pytest.approx(0.05 * epsilon, rel=1e-12)
    part = 0.95 * epsilon / (2 * rounds)
    for entry in ledger[1:]:
        assert entry.epsilon == pytest.approx(part, rel=1e-9)
    # Laplace noise: std sqrt(2)/epsilon for the count and for every measured query
    assert mechanism.measurements[0].std == pytest.approx(math.sqrt(2) / (0.05 * epsilon))
    for m in mechanism.measurements[1:]:
        assert m.std == pytest.approx(math.sqrt(2) / part, rel=1e-9)
        assert m.query.shape == (1, data.domain.size(m.clique))
    assert len(mechanism.measurements) == 1 + rounds


def test_zcdp_ledger_spends_exactly_rho(data):
    epsilon, delta, rounds = 1.0, 1e-6, 3
    mechanism = MWEM(epsilon, delta, rounds=rounds, total_share=0.1, **FAST)
    mechanism.fit(data, WORKLOAD, rng=0)
    budget = mechanism.budget
    rho = cdp_rho(epsilon, delta)
    assert budget.mode == "zcdp" and budget.total == pytest.approx(rho, rel=1e-12)
    assert budget.spent_rho == pytest.approx(rho, rel=1e-9)
    assert budget.spent_epsilon_delta()[0] == pytest.approx(epsilon, rel=1e-6)
    ledger = budget.ledger
    assert ledger[0].rho == pytest.approx(0.1 * rho, rel=1e-12)
    part = 0.9 * rho / (2 * rounds)
    selects = [e for e in ledger if "select" in e.label]
    measures = [e for e in ledger if "measure" in e.label]
    assert len(selects) == len(measures) == rounds
    for entry in selects + measures:
        assert entry.rho == pytest.approx(part, rel=1e-9)
    # Gaussian noise for the count and the queries
    assert mechanism.measurements[0].std == pytest.approx(1 / math.sqrt(2 * 0.1 * rho))
    for m in mechanism.measurements[1:]:
        assert m.std == pytest.approx(1 / math.sqrt(2 * part), rel=1e-9)


def test_refuses_to_overspend_and_records_nothing_more(data, monkeypatch):
    """A ledger that another release already half spent: the mechanism stops at the first
    charge that does not fit (round 5's measurement), which is not recorded; nothing after
    it is measured and the ledger never exceeds its total."""
    real = PrivacyBudget

    def half_spent(epsilon, delta=None):
        budget = real(epsilon=epsilon, delta=delta)
        budget.charge(epsilon=epsilon / 2, label="another release")
        return budget

    monkeypatch.setattr(base_module, "PrivacyBudget", half_spent)
    mechanism = MWEM(1.0, rounds=10, **FAST)
    with pytest.raises(BudgetExceededError, match="round 5: measure"):
        mechanism.fit(data, WORKLOAD, rng=0)
    budget = mechanism.budget
    assert budget.spent_epsilon <= 1.0
    # 0.5 + count (0.05) + 4 full rounds (4 * 0.095) + round 5's selection (0.0475)
    assert budget.spent_epsilon == pytest.approx(0.9775, rel=1e-9)
    assert [e.label for e in budget.ledger][-1] == "round 5: select"
    assert len(mechanism.measurements) == 5
    assert mechanism.result is None


# -- reproducibility ---------------------------------------------------------------------
def test_both_estimators_start_from_the_same_measurements(data):
    """Same seed: the count and the first round are identical whatever the estimator."""
    runs = {}
    for estimator in ("pgm", "original"):
        mechanism = MWEM(2.0, estimator=estimator, rounds=3, **FAST)
        mechanism.fit(data, WORKLOAD, rng=11)
        runs[estimator] = mechanism
    pgm, original = runs["pgm"], runs["original"]
    assert pgm.total == original.total
    assert pgm.selected[0] == original.selected[0]
    np.testing.assert_array_equal(pgm.measurements[1].values, original.measurements[1].values)


# -- the selection step is the exponential mechanism ------------------------------------
def test_selection_follows_exponential_mechanism():
    """MWEM._select on 2 attributes of size 3 with the workload x, y, (x, y): 15 queries.

    Against the uniform estimate (30 per value, 10 per pair) the scores are known; many
    seeded selections are compared by chi-square with P(i) ∝ exp(ε·s_i/2) (sensitivity
    1) at false-alarm rate 1e-3, and the law with ε doubled must be rejected.
    """
    domain = Domain(["x", "y"], [3, 3])
    pairs = np.array([(0, 0)] * 30 + [(1, 1)] * 20 + [(2, 2)] * 10 + [(0, 1)] * 15 + [(2, 0)] * 15)
    data = Dataset(pairs, domain)
    n = len(data)
    workload = Workload([("x",), ("y",), ("x", "y")])
    truth = {c: workload.answer(c, data.marginal(c)).ravel() for c in workload}
    uniform = TableModel(domain, {}, n, independent=True)

    keys, scores = [], []
    for clique in workload:
        estimate = np.full(domain.project(clique).shape, n / domain.size(clique))
        for index in np.ndindex(*domain.project(clique).shape):
            keys.append((clique, index))
            scores.append(abs(data.marginal(clique)[index] - estimate[index]))
    scores = np.array(scores)
    assert sorted(set(scores)) == [0.0, 5.0, 10.0, 15.0, 20.0]

    def law(epsilon):
        w = np.exp(epsilon * (scores - scores.max()) / 2)
        return w / w.sum()

    # a law far from both uniform and a point mass: the top query has probability 0.2
    epsilon = optimize.brentq(lambda e: law(e).max() - 0.2, 1e-6, 10.0)
    mechanism = MWEM(1.0)
    repeats = 4000
    counts = Counter()
    for seed in range(repeats):
        budget = PrivacyBudget(epsilon=epsilon)
        choice = mechanism._select(
            workload,
            domain,
            truth,
            uniform,
            workload.cliques,
            epsilon,
            budget,
            np.random.default_rng(seed),
        )
        assert budget.spent_epsilon == pytest.approx(epsilon)
        counts[choice] += 1
    assert set(counts) <= set(keys)
    observed = np.array([counts[k] for k in keys])
    assert chi_square_pvalue(observed, law(epsilon)) > 1e-3
    assert chi_square_pvalue(observed, law(2 * epsilon)) < 1e-3
    assert chi_square_pvalue(observed, np.full(len(keys), 1 / len(keys))) < 1e-3


def test_large_epsilon_selects_the_worst_query(data):
    mechanism = MWEM(1e4, estimator="original", rounds=1)
    mechanism.fit(data, WORKLOAD, rng=0)
    uniform = TableModel(data.domain, {}, mechanism.total, independent=True)
    gaps = {
        c: np.abs(WORKLOAD.answer(c, data.marginal(c)) - WORKLOAD.answer(c, uniform.marginal(c)))
        for c in WORKLOAD
    }
    worst = max(gaps, key=lambda c: gaps[c].max())
    index = np.unravel_index(np.argmax(gaps[worst]), gaps[worst].shape)
    assert mechanism.selected == [(worst, tuple(int(i) for i in index))]
    np.testing.assert_array_equal(
        mechanism.measurements[1].query.reshape(gaps[worst].shape),
        WORKLOAD.query(worst, index, data.domain),
    )


# -- estimators --------------------------------------------------------------------------
def _brute_force_mw(domain, measurements, total, passes):
    """Hardt et al.'s MW on the full joint table: after round r, ``passes`` cyclic passes
    over measurements 1..r, each p ← p ⊙ exp(−q(qᵀp − y)/2m)/Z."""
    grid = np.indices(domain.shape).reshape(len(domain), -1)
    p = np.full(grid.shape[1], total / grid.shape[1])
    rows = []
    for m in measurements:
        shape = tuple(domain[a] for a in m.clique)
        cells = np.ravel_multi_index(tuple(grid[domain.attrs.index(a)] for a in m.clique), shape)
        rows.append((m.query.ravel()[cells], m.values[0]))
    for r in range(1, len(rows) + 1):
        for _ in range(passes):
            for q, y in rows[:r]:
                p = p * np.exp(-q * (q @ p - y) / (2 * total))
                p *= total / p.sum()
    return p.reshape(domain.shape)


def test_both_estimators_accurate_and_original_is_brute_force_mw(data):
    uniform = TableModel(data.domain, {}, len(data), independent=True)
    baseline = WORKLOAD.error(data, uniform)
    errors = {}
    for estimator in ("pgm", "original"):
        mechanism = MWEM(50.0, estimator=estimator, rounds=20, round_iters=50, iters=300)
        result = mechanism.fit(data, WORKLOAD, rng=2)
        errors[estimator] = WORKLOAD.error(data, result)
        assert result.total == pytest.approx(len(data), rel=0.01)
        if estimator == "pgm":
            assert isinstance(result, MarkovRandomField) and mechanism.model is result
        else:
            assert isinstance(result, TableModel) and mechanism.model is None
            brute = _brute_force_mw(
                data.domain, mechanism.measurements[1:], mechanism.total, mechanism.mw_passes
            )
            np.testing.assert_allclose(result.marginal(("a", "b", "c")), brute, rtol=1e-9)
        assert mechanism.result is result
    assert baseline > 0.15
    assert errors["pgm"] < 0.02 and errors["original"] < 0.02, (errors, baseline)


def test_factored_tables_stay_independent_until_joined():
    """Queries on disjoint cliques keep separate tables; unmeasured attributes stay uniform."""
    rng = np.random.default_rng(0)
    domain = Domain(["p", "q", "r", "s", "u"], [2, 3, 2, 3, 4])
    records = rng.integers(0, 2, (2000, 5)) * np.array([1, 1, 1, 1, 0])
    data = Dataset(records, domain)
    mechanism = MWEM(30.0, estimator="original", rounds=8)
    result = mechanism.fit(data, [("p", "q"), ("r", "s")], rng=0)
    assert set(result.tables) == {("p", "q"), ("r", "s")}
    assert result.independent
    np.testing.assert_allclose(result.marginal(("u",)), mechanism.total / 4)
    assert Workload([("p", "q"), ("r", "s")]).error(data, result) < 0.05


def test_original_fails_cleanly_when_tables_overlap_and_pgm_runs():
    """12 attributes of size 20, triples that all share x0: two of them need a table of
    20^5 cells (26 MB), over max_memory = 1 MB; Private-PGM's junction tree stays small."""
    rng = np.random.default_rng(0)
    domain = Domain([f"x{i}" for i in range(12)], [20] * 12)
    data = Dataset(rng.integers(0, 20, (500, 12)), domain)
    workload = Workload([("x0", f"x{i}", f"x{i + 1}") for i in range(1, 11, 2)], numeric=["x1"])
    original = MWEM(1.0, estimator="original", rounds=10, max_memory=1e6)
    too_big = r"a table of 3\.2e\+06 cells .* would need"
    with pytest.raises(ModelTooLargeError, match=too_big) as err:
        original.fit(data, workload, rng=0)
    assert "use estimator='pgm'" in str(err.value) and "round " in str(err.value)
    assert isinstance(err.value, DpgmError)
    assert len({c for c, _ in original.selected}) == 2  # failed on the second clique

    pgm = MWEM(1.0, rounds=10, max_memory=1e6, round_iters=5, iters=10)
    model = pgm.fit(data, workload, rng=0)
    assert model.tree.size() < 1e5
    assert pgm.budget.remaining == pytest.approx(0.0, abs=1e-9)



def test_too_large_before_any_data_are_read():
    domain = Domain([f"x{i}" for i in range(4)], [50] * 4)
    workload = [("x0", "x1", "x2")]
    with pytest.raises(ModelTooLargeError, match="would need"):
        MWEM(1.0, estimator="original", max_memory=1e5).fit(PublicOnly(domain), workload, rng=0)
    with pytest.raises(ModelTooLargeError, match="max_cells"):
        MWEM(1.0, max_cells=1e4).fit(PublicOnly(domain), workload, rng=0)


def test_pgm_candidates_keep_the_junction_tree_small():
    """A 4-cycle of pairs (size 10 each): any 3 form a path of 300 cells, all 4 need two
    triples (2000 cells). With max_cells = 500 the cycle is never closed."""
    rng = np.random.default_rng(3)
    domain = Domain(["a", "b", "c", "d"], [10, 10, 10, 10])
    a = rng.integers(0, 10, 3000)
    records = np.column_stack([a, (a + 1) % 10, (a + 2) % 10, (a + 3) % 10])
    data = Dataset(records, domain)
    cycle = [("a", "b"), ("b", "c"), ("c", "d"), ("a", "d")]
    mechanism = MWEM(20.0, rounds=12, max_cells=500, round_iters=5, iters=10)
    model = mechanism.fit(data, cycle, rng=0)
    measured = {c for c, _ in mechanism.selected}
    assert len(measured) == 3
    assert model.tree.size() <= 500
    # the original has no such restriction
    original = MWEM(20.0, estimator="original", rounds=12)
    original.fit(data, cycle, rng=0)
    assert {c for c, _ in original.selected} == set(cycle)


def test_default_workload_is_two_way_and_progress(data):
    lines: list[str] = []
    mechanism = MWEM(5.0, rounds=3, progress=lines.append, **FAST)
    mechanism.fit(data, rng=0)
    assert all(len(c) == 2 for c, _ in mechanism.selected)
    assert len(lines) == 4
    assert "record count" in lines[0]
    assert lines[-1].startswith("round 3/3: query")


# -- parameters --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"epsilon": 1.0, "rounds": 0}, DpgmError, "rounds must be an integer >= 1"),
        ({"epsilon": 1.0, "rounds": 2.5}, DpgmError, "rounds must be an integer >= 1"),
        ({"epsilon": 1.0, "total_share": 0.0}, DpgmError, "total_share must be"),
        ({"epsilon": 1.0, "total_share": 1.0}, DpgmError, r"total_share must be in \(0"),
        ({"epsilon": 1.0, "mw_passes": 0}, DpgmError, "mw_passes must be an integer >= 1"),
        ({"epsilon": 1.0, "round_iters": 0}, DpgmError, "round_iters must be an integer"),
        ({"epsilon": 1.0, "iters": True}, DpgmError, "iters must be an integer >= 1"),
        ({"epsilon": 1.0, "max_cells": float("inf")}, DpgmError, "max_cells must be a finite"),
    ],
)
def test_bad_parameters_fail_at_construction(kwargs, error, message):
    with pytest.raises(error, match=message):
        MWEM(**kwargs).fit(Untouchable(), rng=0)


