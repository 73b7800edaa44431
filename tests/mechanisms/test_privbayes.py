"""PrivBayes: budget accounting, the R score's sensitivity, θ-usefulness, the selection law,
reproducibility, both estimators, failure modes."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from mechanism_helpers import Untouchable
from scipy import optimize, stats
from selection_helpers import tree_law, triple

import dpgm.mechanisms.base as base_module
from dpgm import Dataset, Domain, DpgmError, MarkovRandomField
from dpgm.errors import BudgetExceededError
from dpgm.evaluation import tv_distance
from dpgm.measurement import Measurement
from dpgm.mechanisms.network_selection import select_network
from dpgm.mechanisms.privbayes import R_SENSITIVITY, PrivBayes, parent_sets, r_score
from dpgm.models import BayesianNetwork
from dpgm.privacy import PrivacyBudget

ITERS = 100
FAMILIES = [("a",), ("a", "b"), ("a", "b", "c"), ("c", "d")]  # the true network's families


def _network_data(seed: int = 0, n: int = 4000) -> Dataset:
    """A known Bayesian network: a → b, (a, b) → c, c → d."""
    rng = np.random.default_rng(seed)
    a = rng.choice(3, size=n, p=[0.5, 0.3, 0.2])
    b = np.where(rng.random(n) < 0.8, a, rng.integers(0, 3, n))
    c = np.where(rng.random(n) < 0.9, (a + b) % 2, rng.integers(0, 2, n))
    d = np.where(rng.random(n) < 0.85, 2 * c + (rng.random(n) < 0.3), rng.integers(0, 4, n))
    return Dataset(np.column_stack([a, b, c, d]), Domain(["a", "b", "c", "d"], [3, 3, 2, 4]))


@pytest.fixture(scope="module")
def data() -> Dataset:
    return _network_data()


# -- budget ------------------------------------------------------------------------------
@pytest.mark.parametrize("estimator", ["pgm", "original"])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 7.0])
def test_spends_exactly_epsilon(data, estimator, epsilon):
    mechanism = PrivBayes(epsilon, estimator=estimator, iters=20)
    mechanism.fit(data, rng=0)
    budget = mechanism.budget
    assert budget.mode == "pure"
    assert budget.spent_epsilon == pytest.approx(epsilon, rel=1e-9)
    assert budget.remaining == pytest.approx(0.0, abs=1e-9 * epsilon)
    d = len(data.domain)
    labels = [e.label for e in budget.ledger]
    assert labels == ["record count"] + [f"round {t}: select" for t in range(1, d)] + ["marginals"]
    eps1 = 0.5 * epsilon
    assert budget.ledger[0].epsilon == pytest.approx(0.05 * eps1, rel=1e-12)
    for entry in budget.ledger[1:-1]:
        assert entry.epsilon == pytest.approx(0.95 * eps1 / (d - 1), rel=1e-12)
    assert budget.ledger[-1].epsilon == pytest.approx(epsilon - eps1, rel=1e-12)


def test_budget_split_follows_beta_and_count_share(data):
    mechanism = PrivBayes(2.0, beta=0.3, count_share=0.2, iters=10)
    mechanism.fit(data, rng=1)
    ledger = mechanism.budget.ledger
    assert ledger[0].epsilon == pytest.approx(0.2 * 0.6, rel=1e-12)
    assert math.fsum(e.epsilon for e in ledger[1:-1]) == pytest.approx(0.8 * 0.6, rel=1e-12)
    assert ledger[-1].epsilon == pytest.approx(1.4, rel=1e-12)
    # the marginals' Laplace noise: scale m / ε₂ per cell, std sqrt(2) times that
    marginals = mechanism.measurements[1:]
    scale = len(marginals) / 1.4
    for m in marginals:
        assert m.std == pytest.approx(math.sqrt(2) * scale, rel=1e-12)
    assert mechanism.measurements[0].std == pytest.approx(math.sqrt(2) / 0.12, rel=1e-12)


def _spent_before(monkeypatch, amount):
    real = PrivacyBudget

    def partly_spent(epsilon, delta=None):
        budget = real(epsilon=epsilon, delta=delta)
        budget.charge(epsilon=amount, label="another release")
        return budget

    monkeypatch.setattr(base_module, "PrivacyBudget", partly_spent)


def test_refuses_to_overspend_in_the_structure_rounds(data, monkeypatch):
    """A ledger that another release spent 0.6 of: count 0.025 and two rounds of
    0.475/3 fit, round 3's selection does not; it is not recorded, no marginal is
    measured and nothing is returned."""
    _spent_before(monkeypatch, 0.6)
    mechanism = PrivBayes(1.0, iters=10)
    with pytest.raises(BudgetExceededError, match="round 3: select"):
        mechanism.fit(data, rng=0)
    budget = mechanism.budget
    assert budget.spent_epsilon == pytest.approx(0.6 + 0.025 + 2 * 0.475 / 3, rel=1e-9)
    assert [e.label for e in budget.ledger][-1] == "round 2: select"
    assert len(mechanism.measurements) == 1  # the count only
    assert mechanism.result is None and mechanism.model is None


def test_refuses_to_overspend_on_the_marginals(data, monkeypatch):
    _spent_before(monkeypatch, 0.3)
    mechanism = PrivBayes(1.0, estimator="original")
    with pytest.raises(BudgetExceededError, match="marginals"):
        mechanism.fit(data, rng=0)
    assert mechanism.budget.spent_epsilon == pytest.approx(0.8, rel=1e-9)
    assert mechanism.budget.ledger[-1].label == "round 3: select"
    assert len(mechanism.measurements) == 1
    assert mechanism.result is None


# -- the score and its sensitivity -------------------------------------------------------
def test_r_score_values():
    independent = np.multiply.outer([1.0, 3.0], [2.0, 2.0, 4.0])
    assert r_score(independent) == pytest.approx(0.0, abs=1e-12)
    assert r_score(np.array([[5.0, 0.0], [0.0, 5.0]])) == pytest.approx(5.0)  # ½·4·2.5
    assert r_score(np.array([3.0, 4.0])) == 0.0  # no parents
    assert r_score(np.zeros((2, 3))) == 0.0
    table = np.random.default_rng(0).integers(0, 9, size=(3, 2, 4)).astype(float)
    n = table.sum()
    expected = 0.5 * np.abs(table - table.sum((1, 2))[:, None, None] * table.sum(0)[None] / n).sum()
    assert r_score(table) == pytest.approx(expected, rel=1e-12)


def test_r_score_sensitivity_bound_on_random_tables():
    """Add or remove one record in many random small count tables: |ΔS| <= Δ = 2."""
    rng = np.random.default_rng(1)
    shapes = [(2,), (2, 2), (3, 2), (2, 3, 2), (4, 3), (2, 2, 2, 2), (5, 1, 3)]
    worst = 0.0
    for trial in range(3000):
        shape = shapes[trial % len(shapes)]
        high = [1, 2, 4, 20][trial % 4]
        table = rng.integers(0, high + 1, size=shape).astype(float)
        if rng.random() < 0.3:  # empty some rows / columns, where the bound is tightest
            table[rng.integers(shape[0])] = 0.0
        neighbour = table.copy()
        filled = np.flatnonzero(table.ravel())
        if filled.size and rng.random() < 0.5:
            neighbour.ravel()[rng.choice(filled)] -= 1.0  # remove a record
        else:
            neighbour.ravel()[rng.integers(table.size)] += 1.0  # add a record
        worst = max(worst, abs(r_score(neighbour) - r_score(table)))
    assert R_SENSITIVITY == 2.0
    assert worst <= R_SENSITIVITY + 1e-9
    assert worst > 1.0  # the random search gets near the bound, so it tests something


@pytest.mark.parametrize("rows", [[1.0, 2.0], [5.0, 7.0, 1.0]])
def test_r_score_sensitivity_is_tight(rows):
    """An independent table (S = 0) plus a record with a new child value and a new
    parent value: S' = 2N/(N + 1), the docstring's extreme case, which tends to 2."""
    counts = np.multiply.outer(rows, [3.0, 1.0, 2.0])
    table = np.zeros((len(rows) + 1, 4))
    table[:-1, :-1] = counts
    n = counts.sum()
    assert r_score(table) == pytest.approx(0.0, abs=1e-12)
    table[-1, -1] = 1.0
    assert r_score(table) == pytest.approx(2 * n / (n + 1), rel=1e-12)


# -- θ-usefulness ------------------------------------------------------------------------
def test_parent_sets_are_the_maximal_useful_ones():
    domain = Domain(["a", "b", "c", "x", "y", "z", "w"], [2, 3, 50, 4, 30, 200, 5])
    net = ["a", "b", "c"]
    # limit 25 parent cells: (a, b) = 6 fits; a, b alone are inside it; c = 50 does not fit
    assert parent_sets(domain, "x", net, 2, 100) == [("a", "b")]
    # limit 60: (a, b) and (c,) are both maximal; (a, c) = 100 and (b, c) = 150 do not fit
    assert parent_sets(domain, "x", net, 2, 240) == [("a", "b"), ("c",)]
    # limit 100/30: a and b fit alone but not together
    assert parent_sets(domain, "y", net, 2, 100) == [("a",), ("b",)]
    # nothing fits, not even the empty set: fall back to no parents
    assert parent_sets(domain, "z", net, 2, 100) == [()]
    # everything fits: the sets of size min(k, |V|)
    assert parent_sets(domain, "w", net, 2, math.inf) == [("a", "b"), ("a", "c"), ("b", "c")]
    assert parent_sets(domain, "w", net, 1, math.inf) == [("a",), ("b",), ("c",)]
    assert parent_sets(domain, "w", ["a"], 2, math.inf) == [("a",)]
    assert parent_sets(domain, "w", net, 3, math.inf) == [("a", "b", "c")]


def test_chosen_cliques_are_useful_at_small_epsilon():
    """With ε = 0.3 on 4000 records the threshold τ = n̂·ε₂/(dθ) is about 37 cells, so
    some (child, parents) tables are too big and the structure must avoid them."""
    domain = Domain(["a", "b", "c", "d", "e"], [3, 4, 2, 5, 6])
    rng = np.random.default_rng(3)
    records = np.column_stack([rng.integers(0, s, 4000) for s in domain.shape])
    records[:, 1] = np.where(rng.random(4000) < 0.7, records[:, 0], records[:, 1])
    data = Dataset(records, domain)
    for seed in range(4):
        mechanism = PrivBayes(0.3, estimator="original")
        mechanism.fit(data, rng=seed)
        tau = mechanism.total * 0.15 / (5 * 4.0)
        for child, parents in mechanism.network[1:]:
            assert domain.size((child, *parents)) <= tau or parents == ()


# -- the structure ------------------------------------------------------------------------
def test_network_structure_and_measured_cliques(data):
    mechanism = PrivBayes(2.0, iters=10)
    mechanism.fit(data, rng=4)
    network = mechanism.network
    assert len(network) == len(data.domain)
    assert network[0][1] == ()
    assert sorted(child for child, _ in network) == sorted(data.domain.attrs)
    seen = set()
    for i, (child, parents) in enumerate(network):
        assert child not in seen and set(parents) <= seen  # a DAG in the order chosen
        assert len(parents) == min(2, i)  # every table is small: full degree
        seen.add(child)
    # the first k + 1 cliques are nested: only the third and fourth are measured
    cliques = [data.domain.canonical((c, *p)) for c, p in network]
    assert mechanism.measured == cliques[2:]
    assert [m.clique for m in mechanism.measurements[1:]] == mechanism.measured


def test_selection_follows_exponential_mechanism():
    """Many seeded runs of the structure step (degree 1, θ-usefulness off) on 3 binary
    attributes: the 12 possible networks against their law by a chi-square test at
    significance 1e-3; the law with ε doubled must be rejected."""
    data = triple()
    attrs = data.domain.attrs
    scores = {
        frozenset((u, v)): r_score(data.marginal((u, v)))
        for i, u in enumerate(attrs)
        for v in attrs[i + 1 :]
    }
    assert scores[frozenset("xy")] > scores[frozenset("xz")] > scores[frozenset("yz")]
    # ε per round such that, with x first, y is chosen in round 1 with probability 0.7
    gap = scores[frozenset("xy")] - scores[frozenset("xz")]
    epsilon = optimize.brentq(lambda e: 1 / (1 + math.exp(-e * gap / 4)) - 0.7, 1e-9, 10)
    law = tree_law(scores, epsilon)
    assert sum(law.values()) == pytest.approx(1.0)

    mechanism = PrivBayes(1.0, degree=1)
    repeats = 3000
    outcomes = Counter()
    for seed in range(repeats):
        budget = PrivacyBudget(epsilon=2 * epsilon)
        network = select_network(data, mechanism.degree, epsilon, math.inf, budget,
                                 np.random.default_rng(seed))
        assert budget.remaining == pytest.approx(0.0, abs=1e-12)
        outcomes[tuple(network)] += 1
    assert set(outcomes) <= set(law)
    keys = sorted(law)
    observed = np.array([outcomes[k] for k in keys])
    assert stats.chisquare(observed, repeats * np.array([law[k] for k in keys])).pvalue > 1e-3
    wrong = tree_law(scores, 2 * epsilon)
    assert stats.chisquare(observed, repeats * np.array([wrong[k] for k in keys])).pvalue < 1e-3


def test_fixed_first_attribute_hook():
    data = triple()
    budget = PrivacyBudget(epsilon=100.0)
    network = select_network(data, PrivBayes(1.0).degree, 50.0, math.inf, budget,
                             np.random.default_rng(0), first="z")
    assert network[0] == ("z", ())
    assert network[1] == ("x", ("z",))  # the highest score by far at large ε
    assert network[2] == ("y", ("x", "z"))


# -- reproducibility ---------------------------------------------------------------------
def test_generator_seed_equivalent_to_int_seed(data):
    a = PrivBayes(1.0, estimator="original").fit(data, rng=5)
    b = PrivBayes(1.0, estimator="original").fit(data, rng=np.random.default_rng(5))
    np.testing.assert_array_equal(a.records, b.records)


# -- both estimators ---------------------------------------------------------------------
@pytest.mark.parametrize("estimator", ["pgm", "original"])
def test_accurate_at_large_epsilon(data, estimator):
    mechanism = PrivBayes(50.0, estimator=estimator, iters=200)
    result = mechanism.fit(data, rng=2)
    assert mechanism.result is result
    if estimator == "pgm":
        assert isinstance(result, MarkovRandomField) and mechanism.model is result
        bound = 0.01
    else:
        assert isinstance(result, Dataset) and mechanism.model is None
        assert len(result) == round(mechanism.total)
        assert result.domain == data.domain
        bound = 0.04  # the records are a sample: sampling error of about sqrt(cells/n)
    assert abs(mechanism.total - len(data)) < 100
    for clique in FAMILIES:
        assert tv_distance(data.marginal(clique), result.marginal(clique)) < bound, clique


def test_original_returns_round_n_hat_records(data):
    mechanism = PrivBayes(0.05, estimator="original")
    synthetic = mechanism.fit(data, rng=11)
    assert isinstance(synthetic, Dataset)
    assert len(synthetic) == round(mechanism.total)
    assert mechanism.total == max(1.0, mechanism.measurements[0].values[0])
    assert len(synthetic) != len(data)  # the count is noisy


def test_the_network_clips_normalises_and_samples_through_bayesian_network():
    """Negative noisy counts are clipped to 0; a parent configuration with no mass is uniform;
    the network is a BayesianNetwork in the order chosen, and its records are in the domain's."""
    domain = Domain(["q", "p"], [3, 2])
    mechanism = PrivBayes(1.0, estimator="original")
    mechanism.network = [("p", ()), ("q", ("p",))]
    noisy = np.array([[2.0, -1.0, 6.0], [-3.0, -0.5, -2.0]])  # axes (p, q); measured (q, p)
    network = mechanism._network(domain, [Measurement(("q", "p"), noisy.T.ravel(), 1.0)], 9.0)
    assert isinstance(network, BayesianNetwork) and network.variables == ["p", "q"]
    assert network.parents == {"p": (), "q": ("p",)} and network.total == 9.0
    np.testing.assert_allclose(network.cpds["p"], [1.0, 0.0])
    np.testing.assert_allclose(network.cpds["q"], [[0.25, 0.0, 0.75], [1 / 3, 1 / 3, 1 / 3]])
    sample = mechanism._sample(network, domain, 20000, np.random.default_rng(0))
    assert sample.domain == domain
    assert np.all(sample.records[:, 1] == 0)
    np.testing.assert_allclose(
        np.bincount(sample.records[:, 0], minlength=3) / 20000, [0.25, 0.0, 0.75], atol=0.015
    )


def test_original_keeps_its_network(data):
    mechanism = PrivBayes(1.0, estimator="original")
    mechanism.fit(data, rng=3)
    network = mechanism.bayesian_network
    assert [(v, network.parents[v]) for v in network.variables] == mechanism.network
    network.check()
    pgm = PrivBayes(1.0, iters=5)
    pgm.fit(data, rng=3)
    assert pgm.bayesian_network is None  # Private-PGM releases a model, not this network


# -- other inputs ------------------------------------------------------------------------
def test_single_attribute_spends_whole_budget(data):
    mechanism = PrivBayes(1.0, estimator="original")
    synthetic = mechanism.fit(data.project(["d"]), rng=0)
    assert mechanism.network == [("d", ())]
    assert [e.label for e in mechanism.budget.ledger] == ["record count", "marginals"]
    assert mechanism.budget.spent_epsilon == pytest.approx(1.0, rel=1e-9)
    assert synthetic.domain == Domain(["d"], [4])


def test_progress_lines_and_workload_refused(data):
    lines: list[str] = []
    PrivBayes(1.0, iters=10, progress=lines.append).fit(data, rng=1)
    with pytest.raises(DpgmError, match="measures no workload"):
        PrivBayes(1.0, iters=10).fit(data, workload=[("a", "b", "c")], rng=1)
    assert len(lines) == 1 + 3 + 2
    assert "record count" in lines[0] and "round 1/3" in lines[1] and "marginals" in lines[4]
    with pytest.raises(DpgmError):
        PrivBayes(1.0).fit(data, workload=[("a", "nope")], rng=1)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"epsilon": 1.0, "degree": 0}, DpgmError, "degree must be an integer >= 1"),
        ({"epsilon": 1.0, "degree": 1.5}, DpgmError, "degree must be an integer >= 1"),
        ({"epsilon": 1.0, "degree": True}, DpgmError, "degree must be an integer >= 1"),
        ({"epsilon": 1.0, "beta": 0.0}, DpgmError, r"beta must be in \(0, 1\)"),
        ({"epsilon": 1.0, "beta": 1.0}, DpgmError, r"beta must be in \(0, 1\)"),
        ({"epsilon": 1.0, "count_share": 1.5}, DpgmError, r"count_share must be in \(0, 1\)"),
        ({"epsilon": 1.0, "count_share": 0}, DpgmError, r"count_share must be in \(0, 1\)"),
        ({"epsilon": 1.0, "theta": 0}, DpgmError, "theta must be > 0"),
        ({"epsilon": 1.0, "theta": float("inf")}, DpgmError, "theta must be a finite number"),
        ({"epsilon": 1.0, "iters": 0}, DpgmError, "iters must be an integer >= 1"),
    ],
)
def test_bad_parameters_fail_at_construction(kwargs, error, message):
    with pytest.raises(error, match=message):
        PrivBayes(**kwargs).fit(Untouchable(), rng=0)


