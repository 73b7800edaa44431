"""AIM: budget accounting, selection law, annealing, model-size filter, reproducibility."""

from __future__ import annotations

import math
from collections import Counter
from itertools import combinations

import numpy as np
import pytest
from mechanism_helpers import PublicOnly, Untouchable
from scipy import optimize, stats

import dpgm.mechanisms.aim as aim_module
import dpgm.mechanisms.base as base_module
from dpgm import Dataset, Domain, DpgmError, MarkovRandomField
from dpgm.errors import BudgetExceededError, ModelTooLargeError
from dpgm.evaluation import tv_distance
from dpgm.inference.junction_tree import JunctionTree
from dpgm.mechanisms.aim import AIM, anneals, downward_closure
from dpgm.privacy import PrivacyBudget, cdp_rho

FAST = {"round_iters": 10, "iters": 30}
BIAS = math.sqrt(2 / math.pi)


def _quad(seed: int = 0, n: int = 3000) -> Dataset:
    """a (2 values), b (3), c (4), e (3): b follows a, c follows b, e independent."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, n)
    b = np.where(rng.random(n) < 0.8, a + rng.integers(0, 2, n), rng.integers(0, 3, n))
    c = np.where(rng.random(n) < 0.7, b, rng.integers(0, 4, n))
    e = rng.integers(0, 3, n)
    return Dataset(np.column_stack([a, b, c, e]), Domain(["a", "b", "c", "e"], [2, 3, 4, 3]))


@pytest.fixture(scope="module")
def data() -> Dataset:
    return _quad()


@pytest.fixture(scope="module")
def fitted(data):
    mechanism = AIM(1.0, **FAST)
    model = mechanism.fit(data, rng=3)
    return mechanism, model


# -- budget ------------------------------------------------------------------------------
@pytest.mark.parametrize(("epsilon", "delta"), [(0.2, 1e-9), (1.0, 1e-9), (5.0, 1e-6)])
def test_spends_exactly_its_budget(data, epsilon, delta):
    mechanism = AIM(epsilon, delta, **FAST)
    mechanism.fit(data, rng=0)
    budget = mechanism.budget
    rho = cdp_rho(epsilon, delta)
    assert budget.total == pytest.approx(rho, rel=1e-12)
    assert math.fsum(e.rho for e in budget.ledger) == pytest.approx(rho, rel=1e-12)
    assert budget.remaining == pytest.approx(0.0, abs=1e-12 * rho)
    assert budget.spent_epsilon_delta()[0] == pytest.approx(epsilon, rel=1e-6)


def test_ledger_follows_the_schedule(fitted, data):
    """One-way marginals, then (select, measure) per round; each round's charges are
    ε_select²/8 and 1/(2σ²) of its σ and ε; σ halves and ε doubles after annealing."""
    mechanism, _ = fitted
    ledger = mechanism.budget.ledger
    history = mechanism.history
    rho, d = mechanism.budget.total, len(data.domain)
    rounds = 16 * d
    sigma0 = math.sqrt(rounds / (2 * 0.9 * rho))
    eps0 = math.sqrt(8 * 0.1 * rho / rounds)
    assert ledger[0].label == "one-way marginals"
    assert ledger[0].rho == pytest.approx(d / (2 * sigma0**2), rel=1e-12)
    assert len(ledger) == 1 + 2 * len(history)
    assert history[0].sigma == pytest.approx(sigma0) and history[0].epsilon == pytest.approx(eps0)
    for t, h in enumerate(history, start=1):
        select, measure = ledger[2 * t - 1], ledger[2 * t]
        assert (select.label, measure.label) == (f"round {t}: select", f"round {t}: measure")
        assert select.rho == pytest.approx(h.epsilon**2 / 8, rel=1e-9)
        assert measure.rho == pytest.approx(1 / (2 * h.sigma**2), rel=1e-9)
        assert mechanism.measurements[d + t - 1].std == pytest.approx(h.sigma, rel=1e-9)
        assert mechanism.measurements[d + t - 1].clique == h.clique
    for before, after in zip(history[:-2], history[1:-1]):
        factor = 2.0 if before.annealed else 1.0
        assert after.sigma == pytest.approx(before.sigma / factor, rel=1e-12)
        assert after.epsilon == pytest.approx(before.epsilon * factor, rel=1e-12)
    assert any(h.annealed for h in history[:-1])  # the schedule was exercised


def test_last_round_spends_the_remainder(fitted):
    """The last round gets exactly what was left R: (1 − α)R to select, αR to measure, and
    it is the first round at which R was less than two rounds at the current σ and ε."""
    mechanism, _ = fitted
    ledger = mechanism.budget.ledger
    rho = mechanism.budget.total
    before_last = math.fsum(e.rho for e in ledger[:-2])
    left = rho - before_last
    select, measure = ledger[-2], ledger[-1]
    assert select.rho + measure.rho == pytest.approx(left, rel=1e-12)
    assert select.rho == pytest.approx(0.1 * left, rel=1e-9)
    assert measure.rho == pytest.approx(0.9 * left, rel=1e-9)
    # every earlier round left at least two rounds' worth at its own prices
    spent = ledger[0].rho
    history = mechanism.history
    for t, h in enumerate(history[:-1], start=1):
        sigma, epsilon = h.sigma, h.epsilon
        assert rho - spent >= 2 * (0.5 / sigma**2 + epsilon**2 / 8) * (1 - 1e-12)
        spent += ledger[2 * t - 1].rho + ledger[2 * t].rho
    previous = history[-2]
    sigma = previous.sigma / (2 if previous.annealed else 1)
    epsilon = previous.epsilon * (2 if previous.annealed else 1)
    assert left < 2 * (0.5 / sigma**2 + epsilon**2 / 8)


def test_rounds_never_exceed_t(data):
    for rounds in (4, 6, 9):
        mechanism = AIM(3.0, rounds=rounds, **FAST)
        mechanism.fit(data, rng=rounds)
        assert 1 <= len(mechanism.history) <= rounds
        assert mechanism.budget.remaining == pytest.approx(0.0, abs=1e-12)


def test_refuses_to_overspend_and_records_nothing(data, monkeypatch):
    """A ledger that another release already spent 99% of: the one-way measurement (an
    α·d/T = 5.6% share) does not fit; it is refused before any data are read, recorded
    nothing, and the mechanism produced no model."""
    real = PrivacyBudget

    def nearly_spent(epsilon, delta):
        budget = real(epsilon=epsilon, delta=delta)
        budget.charge(rho=0.99 * budget.total, label="another release")
        return budget

    monkeypatch.setattr(base_module, "PrivacyBudget", nearly_spent)
    mechanism = AIM(1.0, **FAST)
    with pytest.raises(BudgetExceededError, match="one-way marginals"):
        mechanism.fit(data, rng=0)
    assert [e.label for e in mechanism.budget.ledger] == ["another release"]
    assert mechanism.measurements == [] and mechanism.result is None


def test_partly_spent_ledger_is_finished_exactly(data, monkeypatch):
    """Rounds are priced from what is left, so a ledger half spent elsewhere ends exactly full."""
    real = PrivacyBudget

    def half_spent(epsilon, delta):
        budget = real(epsilon=epsilon, delta=delta)
        budget.charge(rho=0.5 * budget.total, label="another release")
        return budget

    monkeypatch.setattr(base_module, "PrivacyBudget", half_spent)
    mechanism = AIM(1.0, **FAST)
    mechanism.fit(data, rng=0)
    assert mechanism.budget.remaining == pytest.approx(0.0, abs=1e-12)
    assert mechanism.budget.spent_rho <= mechanism.budget.total * (1 + 1e-9)


def test_selection_charges_before_choosing_and_refuses_overspend(data):
    candidates = {("a",): 1, ("a", "b"): 2}
    truth = {r: data.marginal(r) for r in candidates}
    budget = PrivacyBudget(rho=1e-4)
    mechanism = AIM(1.0)
    epsilon = math.sqrt(8 * 2e-4)  # costs 2e-4 > 1e-4
    with pytest.raises(BudgetExceededError, match="select"):
        mechanism._select(candidates, truth, truth, 1.0, epsilon, budget, np.random.default_rng(0))
    assert budget.ledger == []


# -- the selection step is the exponential mechanism ------------------------------------
def test_selection_follows_exponential_mechanism(data):
    """Many seeded selections against P(r) ∝ exp(ε·q_r/(2Δ)), Δ = max w_r, with a fixed model.

    Workload {abc, ab}: six candidates of weights 1-5, so Δ = 5 ≠ 1. The model is the
    independent one: its scores differ a lot between candidates. ε is set so the best
    candidate has probability 0.5. The right law passes a chi-square test at 1e-3; ε
    doubled and Δ = 1 are rejected.
    """
    small = data.project(["a", "b", "c"])
    candidates = downward_closure(small.domain, [("a", "b", "c"), ("a", "b")])
    assert set(candidates.values()) == {1, 2, 3, 4, 5}
    truth = {r: small.marginal(r) for r in candidates}
    independent = MarkovRandomField(
        small.domain,
        {(a,): np.log(small.marginal([a]) / len(small)) for a in small.domain},
        total=len(small),
    )
    estimates = {r: independent.marginal(r) for r in candidates}
    sigma = 2.0
    q, sensitivity = aim_module.scores(candidates, truth, estimates, sigma)
    expected_q = [
        w * (np.abs(truth[r] - estimates[r]).sum() - BIAS * sigma * truth[r].size)
        for r, w in candidates.items()
    ]
    np.testing.assert_allclose(q, expected_q)
    assert sensitivity == 5.0

    def law(epsilon, delta):
        w = np.exp(epsilon * (q - q.max()) / (2 * delta))
        return w / w.sum()

    epsilon = optimize.brentq(lambda e: law(e, 5.0).max() - 0.5, 1e-6, 10.0)
    mechanism = AIM(1.0)
    keys = list(candidates)
    repeats = 3000
    counts = Counter()
    for seed in range(repeats):
        budget = PrivacyBudget(rho=1.0)
        pick = mechanism._select(
            candidates, truth, estimates, sigma, epsilon, budget, np.random.default_rng(seed)
        )
        counts[pick] += 1
        assert budget.spent_rho == pytest.approx(epsilon**2 / 8, rel=1e-12)
    observed = np.array([counts[r] for r in keys])

    def pvalue(probs):
        # candidates expected fewer than 5 times are pooled into one cell
        rare = probs * repeats < 5
        obs = np.r_[observed[~rare], observed[rare].sum()]
        exp = np.r_[probs[~rare], probs[rare].sum()] * repeats
        if not rare.any():
            obs, exp = obs[:-1], exp[:-1]
        return stats.chisquare(obs, exp).pvalue

    assert pvalue(law(epsilon, 5.0)) > 1e-3
    assert pvalue(law(2 * epsilon, 5.0)) < 1e-3
    assert pvalue(law(epsilon, 1.0)) < 1e-3


# -- annealing ---------------------------------------------------------------------------
def test_annealing_rule_on_constructed_cases():
    sigma = 3.0
    before = np.full(10, 100.0)
    threshold = BIAS * sigma * 10  # ≈ 23.9
    small_move = (
        before + np.r_[np.full(5, 0.99 * threshold / 10), -np.full(5, 0.99 * threshold / 10)]
    )
    large_move = (
        before + np.r_[np.full(5, 1.01 * threshold / 10), -np.full(5, 1.01 * threshold / 10)]
    )
    assert anneals(before, small_move, sigma)
    assert not anneals(before, large_move, sigma)
    assert anneals(before, before, sigma)
    # the threshold scales with the number of cells: the same move on 20 cells anneals
    assert anneals(np.r_[before, before], np.r_[large_move, before], sigma)


def test_annealing_triggers_when_the_model_stops_moving(monkeypatch):
    """Independent attributes at a small ε: σ is large and a measured pair barely moves the
    model, so round 1 anneals; round 2 then has σ/2 and 2ε, and costs 4 times as much."""
    rng = np.random.default_rng(0)
    independent = Dataset(rng.integers(0, 3, size=(3000, 3)), Domain(["x", "y", "z"], [3, 3, 3]))
    mechanism = AIM(0.5, **FAST)
    mechanism.fit(independent, rng=1)
    first, second = mechanism.history[:2]
    assert first.annealed
    assert second.sigma == pytest.approx(first.sigma / 2) and second.epsilon == pytest.approx(
        2 * first.epsilon
    )
    ledger = mechanism.budget.ledger
    assert ledger[3].rho == pytest.approx(4 * ledger[1].rho)  # selection
    assert ledger[4].rho == pytest.approx(4 * ledger[2].rho)  # measurement


# -- candidates and the model-size filter ------------------------------------------------
def test_downward_closure_and_weights():
    domain = Domain(["a", "b", "c", "e"], [2, 3, 4, 3])
    found = downward_closure(domain, [("c", "a"), ("a", "b"), ("b", "c", "e")])
    assert found[("a",)] == 2 and found[("b",)] == 2 and found[("e",)] == 1
    assert found[("a", "c")] == 2 + 1 + 1  # |ac ∩ ca| + |ac ∩ ab| + |ac ∩ bce|
    assert found[("b", "c", "e")] == 1 + 1 + 3
    assert len(found) == 4 + 5 + 1  # singles, pairs ac ab bc be ce, bce
    assert all(c == domain.canonical(c) for c in found)


def test_default_workload_drops_marginals_over_max_cells(data):
    mechanism = AIM(1.0, max_cells=9, **FAST)
    mechanism.fit(data, rng=0)
    # pairs of at most 9 cells: ab (6), ae (6), be (9); c has 4 values, so cx >= 8: ac (8)
    allowed = {("a", "b"), ("a", "e"), ("b", "e"), ("a", "c")}
    assert {c for c in mechanism.selected if len(c) == 2} <= allowed
    assert all(len(c) <= 2 for c in mechanism.selected)


def test_model_size_filter_excludes_a_candidate_over_the_cap():
    """c and e have 40 values each: a model holding (c, e) needs over 1600 cells, more than
    max_model_size = 0.01 MB (1310 cells) allows at any point, though (c, e) would be
    the best candidate (c = e on most records)."""
    rng = np.random.default_rng(1)
    n = 4000
    c = rng.integers(0, 40, n)
    e = np.where(rng.random(n) < 0.9, c, rng.integers(0, 40, n))
    a = rng.integers(0, 2, n)
    dataset = Dataset(np.column_stack([a, c, e]), Domain(["a", "c", "e"], [2, 40, 40]))
    domain = dataset.domain
    assert JunctionTree.build(domain, [("c", "e")]).size() > 0.01 * 2**20 / 8
    capped = AIM(20.0, max_model_size=0.01, **FAST)
    capped.fit(dataset, rng=0)
    assert ("c", "e") not in capped.selected
    assert all(h.model_cells <= 0.01 * 2**20 / 8 for h in capped.history)
    assert all(h.candidates < 6 for h in capped.history)  # (c, e) never a candidate
    free = AIM(20.0, **FAST)
    free.fit(dataset, rng=0)
    assert ("c", "e") in free.selected


# -- reproducibility ---------------------------------------------------------------------
# -- accuracy ----------------------------------------------------------------------------
@pytest.mark.parametrize("estimator", ["pgm", "original"])
def test_accurate_at_large_epsilon(data, estimator):
    mechanism = AIM(50.0, estimator=estimator, round_iters=30, iters=200)
    model = mechanism.fit(data, rng=2)
    assert isinstance(model, MarkovRandomField) and mechanism.result is model
    assert mechanism.model is model and model.domain == data.domain
    assert model.total == pytest.approx(len(data), rel=0.01)
    for pair in combinations(data.domain.attrs, 2):
        assert tv_distance(data.marginal(pair), model.marginal(pair)) < 0.03
    # the strong dependences were measured
    assert {("a", "b"), ("b", "c")} <= set(mechanism.selected)
    synthetic = model.synthetic_data(rng=0)
    assert tv_distance(data.marginal(("b", "c")), synthetic.marginal(("b", "c"))) < 0.04


def test_progress_lines_and_given_workload(data):
    lines: list[str] = []
    mechanism = AIM(1.0, progress=lines.append, **FAST)
    mechanism.fit(data, workload=[("a", "b", "c")], rng=0)
    assert lines[0].startswith("AIM: at most 64 rounds; the model may grow to")
    assert lines[1].startswith("measured 4 one-way marginals")
    rounds = [line for line in lines if line.startswith("round ")]
    assert len(rounds) == len(mechanism.history)
    assert "sigma=" in rounds[0] and "eps_select=" in rounds[0] and "rho used" in rounds[0]
    assert "final model" in lines[-1]
    # candidates are the subsets of abc only: e is never selected
    assert all("e" not in c for c in mechanism.selected)


def test_the_outlook_before_the_first_round_says_the_largest_model_and_its_time():
    """Public facts only: the domain and the settings, the same for any data."""
    domain = Domain(["a", "b", "c"], [2, 3, 4])
    text = AIM(1.0, max_model_size=2, round_iters=100, iters=1000).outlook(domain)
    assert text.startswith("AIM: at most 48 rounds; the model may grow to 262,144 cells "
                           "(2 MB, max_model_size=)")
    # 262,144 cells x 7e-8 s: 1.8 s a round of 100 iterations, 18 s for 1000
    assert "about 2 s a round and 18 s for the final model, 62 s in all at most" in text
    assert "12 min for the final model" in AIM(1.0, max_model_size=80).outlook(domain)


def test_the_command_line_sets_the_model_size_of_aim_only(tmp_path, capsys):
    from dpgm.cli import main

    data = _quad(n=400)
    data.to_pandas().to_csv(tmp_path / "data.csv", index=False)
    data.domain.save(tmp_path / "domain.json")
    base = ["synth", str(tmp_path / "data.csv"), "--domain", str(tmp_path / "domain.json"),
            "--epsilon", "1", "--seed", "0", "--rows", "10", "--max-model-size", "0.5"]
    assert main(base + ["--mechanism", "aim", "--iters", "20", "--out",
                        str(tmp_path / "aim.csv")]) == 0
    assert "the model may grow to 65,536 cells (0.5 MB, --max-model-size)" in \
        capsys.readouterr().err
    assert main(base + ["--mechanism", "mst", "--out", str(tmp_path / "mst.csv")]) == 2
    assert "--max-model-size does not apply to mst" in capsys.readouterr().err


# -- parameters --------------------------------------------------------------------------



@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"epsilon": 1.0, "rounds": 0}, DpgmError, "rounds must be an integer >= 1"),
        ({"epsilon": 1.0, "alpha": 1.0}, DpgmError, r"alpha must be in \(0, 1\)"),
        ({"epsilon": 1.0, "alpha": 0.0}, DpgmError, r"alpha must be in \(0, 1\)"),
        ({"epsilon": 1.0, "max_model_size": 0}, DpgmError, "max_model_size must be"),
        ({"epsilon": 1.0, "max_cells": 2.5}, DpgmError, "max_cells must be an integer"),
        ({"epsilon": 1.0, "round_iters": 0}, DpgmError, "round_iters must be"),
        ({"epsilon": 1.0, "iters": -1}, DpgmError, "iters must be"),
    ],
)
def test_bad_parameters_fail_at_construction(kwargs, error, message):
    with pytest.raises(error, match=message):
        AIM(**kwargs).fit(Untouchable(), rng=0)


def test_bad_parameters_for_the_domain_fail_before_reading_data(data):
    with pytest.raises(DpgmError, match="rounds must be at least the number of attributes"):
        AIM(1.0, rounds=3).fit(PublicOnly(data.domain), rng=0)
    with pytest.raises(DpgmError, match="max_cells"):
        AIM(1.0, max_cells=5).fit(PublicOnly(data.domain), rng=0)




def test_runs_on_tables_of_more_than_64_attributes():
    domain = Domain([f"x{i}" for i in range(66)], [2] * 66)
    rng = np.random.default_rng(0)
    potentials = {(f"x{i}", f"x{i + 1}"): rng.normal(size=(2, 2)) for i in range(65)}
    data = MarkovRandomField(domain, potentials, total=300).sample(300, rng=0)
    mechanism = AIM(1.0, rounds=66, round_iters=3, iters=10)
    model = mechanism.fit(data, rng=0)
    assert model.domain == domain and len(mechanism.history) >= 1
    assert sum(e.rho for e in mechanism.budget.ledger) == pytest.approx(mechanism.budget.total)


def test_a_workload_clique_over_the_model_size_is_left_out_not_a_crash(data):
    """A 1e9-cell clique can never fit the model: its subsets remain candidates."""
    wide = Domain(["a", "b", "c"], [40_000, 25_000, 2])
    records = np.random.default_rng(1).integers(0, 2, (200, 3))
    lines: list[str] = []
    mechanism = AIM(1.0, rounds=6, round_iters=5, iters=10, progress=lines.append)
    mechanism.fit(Dataset(records, wide), workload=[("a", "b"), ("b", "c")], rng=0)
    assert ("a", "b") not in mechanism.selected
    assert any("over the model size left out" in line for line in lines)


def test_a_size_cap_below_the_one_way_model_is_refused_before_reading():
    """It used to fail after spending on the one-way marginals (no round could select)."""
    from mechanism_helpers import PublicOnly

    domain = Domain(list("abcde"), [4] * 5)  # the one-way model: 20 cells
    mechanism = AIM(1.0, max_model_size=0.0001)  # 12.5 cells
    with pytest.raises(ModelTooLargeError, match="one-way marginals alone .* 20 cells"):
        mechanism.fit(PublicOnly(domain), rng=0)
    assert mechanism.budget is None


def test_cliques_inside_the_model_are_always_candidates():
    """At a cap just above the one-way model no pair ever fits, but the one-way marginals
    (inside the model) stay candidates, as in the reference: every round selects one."""
    from mechanism_helpers import sample_data

    domain = Domain(list("abcde"), [4] * 5)
    mechanism = AIM(1.0, max_model_size=0.00016, rounds=30, round_iters=5, iters=20)
    model = mechanism.fit(sample_data(domain, 2000, seed=0), rng=0)
    assert mechanism.budget.spent_epsilon_delta()[0] == pytest.approx(1.0)
    assert all(len(c) == 1 for c in model.cliques)
