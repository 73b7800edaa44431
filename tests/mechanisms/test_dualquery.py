"""DualQuery: budget accounting, the query player's law, the data player, the likelihood loss."""

from __future__ import annotations

import math
from itertools import product

import numpy as np
import pytest
from mechanism_helpers import PublicOnly, Untouchable
from scipy import stats
from scipy.special import logsumexp

import dpgm.mechanisms.dualquery as dq_module
from dpgm import Dataset, Domain, DpgmError, MarkovRandomField
from dpgm.errors import BudgetExceededError, ModelTooLargeError
from dpgm.mechanisms.dualquery import (
    DualQuery,
    DualQueryLoss,
    QuerySet,
    best_record,
    draw_queries,
    dualquery_scores,
)
from dpgm.privacy import DEFAULT_DELTA, PrivacyBudget, cdp_rho
from dpgm.workload import Workload

N = 2000
ROUNDS, SAMPLES = 30, 4


def _small_data(seed: int = 0, n: int = N) -> Dataset:
    """4 attributes of sizes 2-5 from a random chain model."""
    rng = np.random.default_rng(seed)
    domain = Domain(["a", "b", "c", "d"], [3, 4, 5, 2])
    pairs = [("a", "b"), ("b", "c"), ("c", "d")]
    potentials = {p: 1.5 * rng.normal(size=domain.project(p).shape) for p in pairs}
    return MarkovRandomField(domain, potentials, total=n).sample(n, rng=seed + 100)


WORKLOAD = Workload([("a", "b"), ("b", "c"), ("c", "d"), ("a", "d")], numeric=["c"])


@pytest.fixture(scope="module")
def data() -> Dataset:
    return _small_data()


@pytest.fixture(scope="module")
def fitted(data):
    mechanism = DualQuery(2.0, 1e-3, estimator="original", rounds=ROUNDS, samples=SAMPLES)
    records = mechanism.fit(data, WORKLOAD, rng=3)
    return mechanism, records


def _random_tables(queries: QuerySet, rng, scale: float = 10.0) -> list[np.ndarray]:
    return [scale * rng.random(s) + 0.1 for s in queries.shapes]


# -- budget ------------------------------------------------------------------------------
@pytest.mark.parametrize(("epsilon", "delta"), [(0.1, 1e-3), (1.0, 1e-3), (4.0, 1e-6)])
def test_spends_exactly_its_budget(data, epsilon, delta):
    mechanism = DualQuery(epsilon, delta, estimator="original", rounds=12, samples=3)
    mechanism.fit(data, WORKLOAD, rng=0)
    budget = mechanism.budget
    rho = cdp_rho(epsilon, delta)
    assert budget.total == pytest.approx(rho, rel=1e-12)
    assert budget.spent_rho == pytest.approx(rho, rel=1e-9)
    assert budget.remaining == pytest.approx(0.0, abs=1e-9 * rho)
    spent_eps, spent_delta = budget.spent_epsilon_delta()
    assert spent_eps == pytest.approx(epsilon, rel=1e-6)
    assert spent_delta == delta


def test_ledger_has_the_count_then_one_entry_per_round(fitted):
    mechanism, _ = fitted
    ledger = mechanism.budget.ledger
    rho = mechanism.budget.total
    assert ledger[0].label == "record count"
    assert ledger[0].rho == pytest.approx(0.02 * rho, rel=1e-12)
    draws = ledger[1:]
    # round 1 is uniform and free; rounds 2..T each charge one entry for their `samples`
    # draws of ε_t = 2η(t−1)
    assert len(draws) == ROUNDS - 1
    eta = mechanism.eta
    for t, entry in zip(range(2, ROUNDS + 1), draws):
        assert entry.label == f"round {t}: draw query (x{SAMPLES})"
        assert entry.rho == pytest.approx(SAMPLES * (2 * eta * (t - 1)) ** 2 / 8, rel=1e-12)
    assert math.fsum(e.rho for e in draws) == pytest.approx(0.98 * rho, rel=1e-9)
    assert eta == pytest.approx(
        math.sqrt(2 * 0.98 * rho / (SAMPLES * sum((t - 1) ** 2 for t in range(1, ROUNDS + 1)))),
        rel=1e-12,
    )


def test_rounds_derived_from_the_learning_rate(data):
    """rounds=None: the most rounds whose η is still ≥ ν/n̂; then η spends ρ exactly."""
    mechanism = DualQuery(3.0, estimator="original", samples=5, nu=1.5)
    records = mechanism.fit(data, WORKLOAD, rng=0)
    rounds, eta, n_hat = mechanism.rounds_used, mechanism.eta, mechanism.total
    rest = 0.98 * mechanism.budget.total
    assert len(records) == rounds and rounds > 2
    assert eta * n_hat >= 1.5
    assert DualQuery.learning_rate(rest, 5, rounds + 1) * n_hat < 1.5
    assert mechanism.budget.spent_rho == pytest.approx(cdp_rho(3.0, DEFAULT_DELTA), rel=1e-9)
    assert DualQuery.derived_rounds(rest, 5, 1e-9, 40) == 40  # capped by max_rounds
    assert DualQuery.derived_rounds(rest, 5, 1e3, 40) == 2  # never fewer than 2


def test_pgm_estimator_spends_the_same(data):
    mechanism = DualQuery(1.0, rounds=8, samples=2, iters=5)
    mechanism.fit(data, WORKLOAD, rng=0)
    assert mechanism.budget.spent_rho == pytest.approx(cdp_rho(1.0, DEFAULT_DELTA), rel=1e-9)


def test_refuses_to_overspend(data, monkeypatch):
    # a draw that costs more than what is left is refused and recorded nowhere
    scores = np.arange(6.0)
    budget = PrivacyBudget(rho=0.01)
    cost = (2 * 0.1 * 3) ** 2 / 8  # ε_t = 2η·done = 0.6: 0.045 > 0.01
    with pytest.raises(BudgetExceededError):
        draw_queries(scores, 3, 0.1, 2, np.random.default_rng(0), budget)
    assert budget.ledger == [] and budget.spent_rho == 0.0
    assert cost > budget.total
    # a learning rate 5% too large overspends during the rounds: fit stops there
    real = DualQuery.learning_rate
    monkeypatch.setattr(DualQuery, "learning_rate", staticmethod(lambda *a: 1.05 * real(*a)))
    mechanism = DualQuery(1.0, estimator="original", rounds=10, samples=2)
    with pytest.raises(BudgetExceededError, match="round 10"):
        mechanism.fit(data, WORKLOAD, rng=0)
    assert mechanism.budget.spent_rho <= mechanism.budget.total * (1 + 1e-9)


# -- outputs -----------------------------------------------------------------------------
def test_original_returns_the_records(fitted, data):
    mechanism, records = fitted
    assert isinstance(records, Dataset)
    assert records is mechanism.result is mechanism.records
    assert len(records) == ROUNDS and records.domain == data.domain
    assert mechanism.draws.shape == (ROUNDS, SAMPLES)
    assert mechanism.model is None
    assert mechanism.total == pytest.approx(N, rel=0.02)


def test_progress_lines(data):
    lines: list[str] = []
    DualQuery(1.0, rounds=5, samples=2, iters=20, progress=lines.append).fit(data, WORKLOAD, rng=0)
    assert any("record count" in line for line in lines)
    assert sum(line.startswith("round ") and "draws" in line for line in lines) == 5
    assert any("estimated the model" in line for line in lines)


def test_default_workload_is_all_two_way(data, monkeypatch):
    seen = []
    real = dq_module.QuerySet

    def spy(workload, domain):
        seen.append(workload)
        return real(workload, domain)

    monkeypatch.setattr(dq_module, "QuerySet", spy)
    DualQuery(1.0, estimator="original", rounds=3, samples=2).fit(data, rng=0)
    assert len(seen[0].cliques) == 6 and all(len(c) == 2 for c in seen[0].cliques)


# -- reproducibility ---------------------------------------------------------------------
# -- the query player: the draws follow Q^t ∝ exp(η·S_t) -------------------------------
def _softmax(x: np.ndarray) -> np.ndarray:
    w = np.exp(x - x.max())
    return w / w.sum()


def test_round_draws_follow_the_exponential_mechanism():
    """Tiny domain, three fixed past records: many draws of round 4 against exp(η·S_4).

    Chi-square goodness of fit at significance 1e-3, and the same test rejects the law
    with η doubled. The draws charge ε = 2η·3 (sensitivity 3) each, in one ledger entry.
    """
    data = _small_data(1, n=300)
    domain = Domain(["a", "b"], [3, 4])
    data = data.project(["a", "b"])
    workload = Workload([("a", "b")], numeric=["b"])
    queries = QuerySet(workload, domain)
    answers, totals = queries.answers([data.marginal(("a", "b"))])
    past = np.array([[0, 1], [2, 3], [0, 0]])
    hits = queries.hits(past)
    n_hat = 310.0
    scores = dualquery_scores(answers, totals, hits, 3, n_hat)
    assert scores.shape == (24,)
    eta = 2.5 / np.ptp(scores)  # probabilities spread over the candidates
    law = _softmax(eta * scores)
    assert law.max() < 0.5

    repeats = 6000
    budget = PrivacyBudget(rho=1e6)
    picks = draw_queries(scores, 3, eta, repeats, np.random.default_rng(11), budget)
    assert len(budget.ledger) == 1
    assert budget.ledger[0].rho == pytest.approx(repeats * (2 * eta * 3) ** 2 / 8, rel=1e-12)
    observed = np.bincount(picks, minlength=24)

    def pvalue(probs):
        big = probs * repeats >= 5  # pool the rare candidates into one cell
        obs = np.append(observed[big], observed[~big].sum())
        exp = np.append(probs[big], probs[~big].sum()) * repeats
        keep = exp > 0
        return stats.chisquare(obs[keep], exp[keep]).pvalue

    assert pvalue(law) > 1e-3
    assert pvalue(_softmax(2 * eta * scores)) < 1e-3
    assert pvalue(np.full(24, 1 / 24)) < 1e-3


def test_first_round_is_uniform_and_free():
    budget = PrivacyBudget(rho=1.0)
    picks = draw_queries(np.zeros(10), 0, 0.3, 5000, np.random.default_rng(0), budget)
    assert budget.ledger == []
    assert stats.chisquare(np.bincount(picks, minlength=10)).pvalue > 1e-3


def test_scores_match_their_definition():
    domain = Domain(["a", "b"], [2, 3])
    workload = Workload([("a", "b")], numeric=["b"])
    queries = QuerySet(workload, domain)
    table = np.array([[5.0, 1.0, 2.0], [0.0, 3.0, 4.0]])
    answers, totals = queries.answers([table])
    past = np.array([[0, 1], [1, 0]])
    scores = dualquery_scores(answers, totals, queries.hits(past), 2, 20.0)
    for p in range(len(queries)):
        _, q = queries.table(p)
        y = float((q * table).sum())
        expected = sum(y - 20.0 * q[tuple(x)] for x in past)
        assert scores[p] == pytest.approx(expected)


def test_fit_draws_from_the_true_scores(data, monkeypatch):
    """The mechanism feeds draw_queries S_t from the data's answers and its past records."""
    calls = []
    real = dq_module.draw_queries

    def spy(scores, done, eta, samples, rng, budget=None, uniform=None):
        calls.append((scores.copy(), done, eta, samples))
        return real(scores, done, eta, samples, rng, budget, uniform)

    monkeypatch.setattr(dq_module, "draw_queries", spy)
    mechanism = DualQuery(1.0, estimator="original", rounds=6, samples=3)
    records = mechanism.fit(data, WORKLOAD, rng=2).records
    queries = QuerySet(WORKLOAD, data.domain)
    answers, totals = queries.answers([data.marginal(c) for c in WORKLOAD])
    assert [c[1] for c in calls] == list(range(6))
    for t, (scores, _, eta, samples) in enumerate(calls):
        assert eta == mechanism.eta and samples == 3
        expected = dualquery_scores(answers, totals, queries.hits(records[:t]), t, mechanism.total)
        np.testing.assert_allclose(scores, expected, rtol=1e-12, atol=1e-9)


# -- the data player ---------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(4))
def test_best_record_satisfies_the_most_picked_queries(seed):
    domain = Domain(["a", "b", "c"], [3, 4, 3])
    workload = Workload([("a", "b"), ("b", "c"), ("a", "c")], numeric=["b"])
    queries = QuerySet(workload, domain)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(queries), size=6)

    def satisfied(record):
        count = 0
        for p in picks:
            clique, table = queries.table(p)
            count += table[tuple(record[list(domain.axes(clique))])]
        return count

    best = max(satisfied(np.array(x)) for x in product(*map(range, domain.shape)))
    record = best_record(queries, picks, np.random.default_rng(seed))
    assert satisfied(record) == best


def test_best_record_breaks_ties_at_random_but_reproducibly():
    domain = Domain(["a", "b", "c"], [3, 4, 5])
    queries = QuerySet(Workload([("a", "b")]), domain)
    pick = [2 * queries.size - 1]  # the complement of (a=2, b=3): satisfied by most records
    found = np.array([best_record(queries, pick, np.random.default_rng(s)) for s in range(200)])
    assert not np.any((found[:, 0] == 2) & (found[:, 1] == 3))
    assert len({tuple(r) for r in found}) > 20  # c (in no query) and the ties vary
    np.testing.assert_array_equal(
        best_record(queries, pick, np.random.default_rng(5)),
        best_record(queries, pick, np.random.default_rng(5)),
    )


# -- the likelihood loss -----------------------------------------------------------------
def _tiny_loss(seed: int = 0):
    rng = np.random.default_rng(seed)
    domain = Domain(["a", "b", "c"], [2, 3, 4])
    workload = Workload([("b", "a"), ("c", "b"), ("a", "c")], numeric=["c", "b"])
    queries = QuerySet(workload, domain)
    rounds, samples = 6, 3
    records = np.column_stack([rng.integers(0, n, size=rounds) for n in domain.shape])
    draws = rng.integers(0, len(queries), size=(rounds, samples))
    return queries, DualQueryLoss(queries, records, draws, 0.05, 30.0), records, draws


def test_loss_equals_the_direct_negative_log_likelihood():
    queries, loss, records, draws = _tiny_loss()
    rng = np.random.default_rng(1)
    tables = _random_tables(queries, rng)
    candidates = [queries.table(p) for p in range(len(queries))]
    y = np.array([(q * tables[queries.cliques.index(c)]).sum() for c, q in candidates])
    hit = np.array(
        [[q[tuple(x[list(queries.domain.axes(c))])] for c, q in candidates] for x in records]
    )
    nll = 0.0
    for t in range(len(records)):
        score = sum(y - 30.0 * hit[tau] for tau in range(t)) if t else np.zeros(len(y))
        log_q = 0.05 * score - logsumexp(0.05 * score)
        nll -= log_q[draws[t]].sum()
    assert loss(tables)[0] == pytest.approx(nll, rel=1e-12)


def test_loss_gradient_matches_finite_differences():
    queries, loss, _, _ = _tiny_loss(2)
    tables = _random_tables(queries, np.random.default_rng(3))
    _, grads = loss(tables)
    h = 1e-5
    for k, table in enumerate(tables):
        for idx in np.ndindex(table.shape):
            up = [t.copy() for t in tables]
            down = [t.copy() for t in tables]
            up[k][idx] += h
            down[k][idx] -= h
            numeric = (loss(up)[0] - loss(down)[0]) / (2 * h)
            assert grads[k][idx] == pytest.approx(numeric, rel=1e-6, abs=1e-7)


def test_loss_is_convex_and_its_lipschitz_bound_holds():
    queries, loss, _, _ = _tiny_loss(4)
    rng = np.random.default_rng(5)
    for _ in range(5):
        a, b = _random_tables(queries, rng), _random_tables(queries, rng)
        mid = [(x + y) / 2 for x, y in zip(a, b)]
        assert loss(mid)[0] <= (loss(a)[0] + loss(b)[0]) / 2 + 1e-9
    # curvature along "add one record x" (one cell of every clique) is at most lipschitz
    domain = queries.domain
    base = _random_tables(queries, rng)
    h = 1e-2
    for x in product(*map(range, domain.shape)):
        step = [np.zeros(s) for s in queries.shapes]
        for k, clique in enumerate(queries.cliques):
            step[k][tuple(x[domain.attrs.index(a)] for a in clique)] = h
        up = loss([b + s for b, s in zip(base, step)])[0]
        down = loss([b - s for b, s in zip(base, step)])[0]
        curvature = (up - 2 * loss(base)[0] + down) / h**2
        assert curvature <= loss.lipschitz * (1 + 1e-4)


def test_loss_at_the_data_is_the_likelihood_of_the_mechanisms_draws(fitted, data):
    mechanism, _ = fitted
    queries = mechanism.loss.queries
    answers, totals = queries.answers([data.marginal(c) for c in WORKLOAD])
    records = mechanism.records.records
    nll = 0.0
    for t, picks in enumerate(mechanism.draws):
        scores = dualquery_scores(answers, totals, queries.hits(records[:t]), t, mechanism.total)
        log_q = mechanism.eta * scores - logsumexp(mechanism.eta * scores)
        nll -= log_q[picks].sum()
    tables = [data.marginal(c) for c in WORKLOAD]
    assert mechanism.loss(tables)[0] == pytest.approx(nll, rel=1e-10)


# -- accuracy ----------------------------------------------------------------------------
def test_both_estimators_are_accurate_and_pgm_beats_the_records(data):
    errors = {}
    for estimator in ("original", "pgm"):
        mechanism = DualQuery(10.0, estimator=estimator, samples=20, iters=100)
        result = mechanism.fit(data, WORKLOAD, rng=0)
        errors[estimator] = WORKLOAD.error(data, result)
        if estimator == "pgm":
            assert isinstance(result, MarkovRandomField) and mechanism.model is result
            assert result.total == pytest.approx(mechanism.total)
    # rounds derived from ν = 2: T = 92 records; the model fits the draws' likelihood
    assert errors["original"] < 0.1
    assert errors["pgm"] < 0.03
    assert errors["pgm"] < 0.5 * errors["original"]


# -- parameters --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"epsilon": 1.0, "samples": 0}, DpgmError, "samples must be an integer >= 1"),
        ({"epsilon": 1.0, "samples": 2.5}, DpgmError, "samples must be an integer >= 1"),
        ({"epsilon": 1.0, "rounds": 1}, DpgmError, "rounds must be an integer >= 2"),
        ({"epsilon": 1.0, "rounds": True}, DpgmError, "rounds must be an integer >= 2"),
        ({"epsilon": 1.0, "count_share": 0}, DpgmError, r"count_share must be in \(0"),
        ({"epsilon": 1.0, "count_share": 1.0}, DpgmError, r"count_share must be in \(0"),
        ({"epsilon": 1.0, "nu": 0.0}, DpgmError, "nu must be > 0"),
        ({"epsilon": 1.0, "nu": float("inf")}, DpgmError, "nu must be a finite number > 0"),
        ({"epsilon": 1.0, "max_rounds": 1}, DpgmError, "max_rounds must be an integer >= 2"),
        ({"epsilon": 1.0, "iters": 0}, DpgmError, "iters must be an integer >= 1"),
        ({"epsilon": 1.0, "max_cells": 0}, DpgmError, "max_cells must be >= 1"),
        ({"epsilon": 1.0, "max_cells": 0.5}, DpgmError, "max_cells must be >= 1"),
    ],
)
def test_bad_parameters_fail_at_construction(kwargs, error, message):
    with pytest.raises(error, match=message):
        DualQuery(**kwargs).fit(Untouchable(), rng=0)


def test_too_large_model_fails_before_spending(data):
    mechanism = DualQuery(1.0, rounds=3, max_cells=10)
    with pytest.raises(ModelTooLargeError, match="over max_cells=10"):
        mechanism.fit(PublicOnly(data.domain), WORKLOAD, rng=0)
    assert mechanism.budget is None


