"""MST: budget accounting, reproducibility, the spanning tree, compression, selection."""

from __future__ import annotations

import math
from collections import Counter
from itertools import combinations

import networkx as nx
import numpy as np
import pytest
from mechanism_helpers import Untouchable
from scipy import optimize, stats

import dpgm.mechanisms.mst as mst_module
from dpgm import Dataset, Domain, DpgmError, MarkovRandomField, Measurement, estimate
from dpgm.datasets import ADULT_PAIRS
from dpgm.errors import BudgetExceededError, ParameterError, PrivacyParameterError
from dpgm.evaluation import tv_distance
from dpgm.mechanisms import MST, DomainCompression
from dpgm.models.compression import CompressedModel
from dpgm.privacy import PrivacyBudget, cdp_rho

N = 2000
ITERS = 100


def _small_data(seed: int = 0, n: int = N) -> Dataset:
    """6 attributes of sizes 2-8 sampled from a random tree-plus-cycle model; values 5-7 of
    ``c`` and value 5 of ``e`` are made very rare (so that MST merges them)."""
    rng = np.random.default_rng(seed)
    domain = Domain(["a", "b", "c", "d", "e", "f"], [2, 3, 8, 4, 6, 5])
    pairs = [("a", "b"), ("b", "c"), ("c", "d"), ("d", "e"), ("e", "f"), ("a", "f")]
    potentials = {p: 1.5 * rng.normal(size=domain.project(p).shape) for p in pairs}
    potentials[("c",)] = np.array([0, 0, 0, 0, 0, -9, -9, -9], dtype=float)
    potentials[("e",)] = np.array([0, 0, 0, 0, 0, -9], dtype=float)
    model = MarkovRandomField(domain, potentials, total=n)
    return model.sample(n, rng=seed + 100)


@pytest.fixture(scope="module")
def data() -> Dataset:
    return _small_data()


@pytest.fixture(scope="module")
def fitted(data):
    mechanism = MST(1.0, 1e-9, iters=ITERS)
    model = mechanism.fit(data, rng=3)
    return mechanism, model


# -- budget ------------------------------------------------------------------------------
@pytest.mark.parametrize(("epsilon", "delta"), [(0.1, 1e-9), (1.0, 1e-9), (4.0, 1e-5)])
def test_spends_exactly_its_budget(data, epsilon, delta):
    mechanism = MST(epsilon, delta, iters=20)
    mechanism.fit(data, rng=0)
    budget = mechanism.budget
    rho = cdp_rho(epsilon, delta)
    assert budget.total == pytest.approx(rho, rel=1e-12)
    assert budget.spent_rho == pytest.approx(rho, rel=1e-9)
    assert budget.remaining == pytest.approx(0.0, abs=1e-9 * rho)
    spent_eps, spent_delta = budget.spent_epsilon_delta()
    assert spent_eps == pytest.approx(epsilon, rel=1e-6)
    assert spent_delta == delta


def test_ledger_has_one_way_selection_rounds_and_two_way(fitted, data):
    mechanism, _ = fitted
    ledger = mechanism.budget.ledger
    d = len(data.domain)
    labels = [e.label for e in ledger]
    assert labels == ["one-way marginals"] + ["select pair"] * (d - 1) + ["two-way marginals"]
    third = mechanism.budget.total / 3
    assert ledger[0].rho == pytest.approx(third, rel=1e-12)
    assert ledger[-1].rho == pytest.approx(third, rel=1e-12)
    rounds = ledger[1:-1]
    assert math.fsum(e.rho for e in rounds) == pytest.approx(third, rel=1e-9)
    # every round is an exponential mechanism of the same epsilon, charged eps^2/8
    eps_round = math.sqrt(8 * third / (d - 1))
    for entry in rounds:
        assert entry.rho == pytest.approx(eps_round**2 / 8, rel=1e-12)


def test_measurements_one_way_then_tree_pairs(fitted, data):
    mechanism, _ = fitted
    d = len(data.domain)
    one_way, two_way = mechanism.measurements[:d], mechanism.measurements[d:]
    assert [m.clique for m in one_way] == [(a,) for a in data.domain]
    assert [m.clique for m in two_way] == [tuple(e) for e in mechanism.tree_edges]


# -- tree and model ----------------------------------------------------------------------
def test_selected_edges_form_a_spanning_tree(fitted, data):
    mechanism, _ = fitted
    edges = mechanism.tree_edges
    assert len(edges) == len(data.domain) - 1
    graph = nx.Graph()
    graph.add_nodes_from(data.domain.attrs)
    graph.add_edges_from(edges)
    assert nx.is_tree(graph)
    assert set(graph.nodes) == set(data.domain.attrs)


@pytest.mark.parametrize("seed", range(4))
def test_spanning_tree_for_other_seeds_and_budgets(data, seed):
    mechanism = MST(0.05 * (seed + 1), iters=5)
    mechanism.fit(data, rng=seed)
    graph = nx.Graph(mechanism.tree_edges)
    assert nx.is_tree(graph) and set(graph.nodes) == set(data.domain.attrs)


def test_model_on_original_domain_with_total_close_to_n(fitted, data):
    mechanism, model = fitted
    assert isinstance(model, MarkovRandomField)
    assert mechanism.model is model
    assert model.domain == data.domain
    assert model.total == pytest.approx(len(data), rel=0.03)
    for attr in data.domain:
        assert model.marginal([attr]).shape == (data.domain[attr],)
    # compression happened (rare values of c merged) and was expanded back
    c_one_way = mechanism.measurements[data.domain.attrs.index("c")]
    assert c_one_way.values.size < data.domain["c"]
    c = model.marginal(["c"])
    np.testing.assert_allclose(c[5:], c[5], rtol=1e-8)  # merged mass spread uniformly
    # and the model is useful: one-way TV errors are small at epsilon = 1
    for attr in data.domain:
        assert tv_distance(data.marginal([attr]), model.marginal([attr])) < 0.05


def test_no_compression_keeps_the_domain(data):
    mechanism = MST(1.0, compress=False, iters=20)
    model = mechanism.fit(data, rng=3)
    assert model.domain == data.domain
    for m in mechanism.measurements[: len(data.domain)]:
        assert m.values.size == data.domain[m.clique[0]]
    assert mechanism.budget.spent_rho == pytest.approx(mechanism.budget.total, rel=1e-9)


def test_progress_lines(data):
    lines: list[str] = []
    MST(1.0, iters=5, progress=lines.append).fit(data, rng=0)
    assert len(lines) >= 4
    assert any("one-way" in line for line in lines)
    assert any("selected 5 pairs" in line for line in lines)


def test_a_workload_is_refused_not_ignored(data):
    with pytest.raises(ParameterError, match="measures no workload"):
        MST(1.0, iters=10).fit(data, workload=[("a", "b", "c")], rng=1)


# -- reproducibility ---------------------------------------------------------------------
def test_generator_seed_equivalent_to_int_seed(data):
    a = MST(1.0, iters=10).fit(data, rng=5)
    b = MST(1.0, iters=10).fit(data, rng=np.random.default_rng(5))
    np.testing.assert_array_equal(a.marginal(["c", "d"]), b.marginal(["c", "d"]))


# -- parameters --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"epsilon": 1.0, "iters": 0}, DpgmError, "iters must be an integer >= 1"),
        ({"epsilon": 1.0, "iters": -5}, DpgmError, "iters must be an integer >= 1"),
    ],
)
def test_bad_parameters_fail_at_construction(kwargs, error, message):
    with pytest.raises(error, match=message):
        MST(**kwargs).fit(Untouchable(), rng=0)
    assert issubclass(PrivacyParameterError, DpgmError)
    assert issubclass(DpgmError, ValueError)


def test_single_attribute_spends_whole_budget(data):
    mechanism = MST(1.0, iters=10)
    model = mechanism.fit(data.project(["c"]), rng=0)
    assert model.domain == Domain(["c"], [8])
    assert mechanism.budget.spent_rho == pytest.approx(mechanism.budget.total, rel=1e-9)


# -- the selection step is the exponential mechanism ------------------------------------
def _dependent_triple(seed: int = 0, n: int = N) -> Dataset:
    """x and y strongly dependent (y = x with probability 0.8), z independent of both."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 3, size=n)
    y = np.where(rng.random(n) < 0.8, x, rng.integers(0, 3, size=n))
    z = rng.integers(0, 3, size=n)
    return Dataset(np.column_stack([x, y, z]), Domain(["x", "y", "z"], [3, 3, 3]))


def test_selection_follows_exponential_mechanism(monkeypatch):
    """Repeat MST._select on 3 attributes with many seeds.

    The candidates are the 3 pairs; round 1 picks pair i with probability ∝ exp(ε·s_i/2)
    (ε = sqrt(8ρ/2), scores s_i = L1 gap to the independent model, sensitivity 1); round 2
    picks one of the two pairs left, again ∝ exp(ε·s/2). The 6 ordered outcomes are
    compared with those probabilities by a chi-square test and the round-1 frequency of
    the dependent pair by an exact binomial test, each at false-alarm rate 1e-3.
    """
    data = _dependent_triple()
    one_way = [Measurement((a,), data.marginal([a]), 1.0) for a in data.domain]
    independent = estimate(data.domain, one_way, iters=100)
    pairs = list(combinations(data.domain.attrs, 2))
    scores = np.array([np.abs(data.marginal(p) - independent.marginal(p)).sum() for p in pairs])
    dep = pairs.index(("x", "y"))
    others = np.delete(scores, dep)
    assert scores[dep] > 10 * others.max()  # the dependent pair stands out

    # the independent model does not depend on the seed: compute it once (MST._select
    # calls the module's estimate; patching the method instead cached nothing)
    def cached_estimate(domain, measurements, iters):
        assert domain == data.domain and measurements is one_way and iters == 100
        return independent

    monkeypatch.setattr(mst_module, "estimate", cached_estimate)

    def softmax(s, epsilon):
        w = np.exp(epsilon * (s - s.max()) / 2)
        return w / w.sum()

    # epsilon (per round) such that round 1 picks the dependent pair with probability 0.6
    rounds = 2
    epsilon = optimize.brentq(lambda e: softmax(scores, e)[dep] - 0.6, 1e-9, 1.0)
    rho = epsilon**2 * rounds / 8

    first = softmax(scores, epsilon)
    expected = {}
    for i in range(3):
        rest = [j for j in range(3) if j != i]
        second = softmax(scores[rest], epsilon)
        for j, q in zip(rest, second):
            expected[(pairs[i], pairs[j])] = first[i] * q
    assert first[dep] == pytest.approx(0.6, abs=1e-6)

    mechanism = MST(1.0)
    repeats = 3000
    outcomes = Counter()
    for seed in range(repeats):
        budget = PrivacyBudget(rho=rho)
        chosen = mechanism._select(data, one_way, rho, budget, np.random.default_rng(seed))
        assert budget.spent_rho == pytest.approx(rho, rel=1e-9)
        assert len(chosen) == 2
        outcomes[tuple(chosen)] += 1

    assert set(outcomes) <= set(expected)
    keys = sorted(expected)
    observed = np.array([outcomes[k] for k in keys])
    probs = np.array([expected[k] for k in keys])
    assert stats.chisquare(observed, repeats * probs).pvalue > 1e-3
    hits = sum(count for (a, _), count in outcomes.items() if a == pairs[dep])
    assert stats.binomtest(hits, repeats, first[dep]).pvalue > 1e-3


def test_selection_finds_the_dependent_pair_at_large_epsilon():
    data = _dependent_triple(1)
    for seed in range(5):
        mechanism = MST(2.0, iters=10)
        mechanism.fit(data, rng=seed)
        assert ("x", "y") in mechanism.tree_edges


# -- the bundled Adult data --------------------------------------------------------------


def test_adult_accuracy():
    from dpgm.datasets import load_adult
    from dpgm.evaluation import mean_tv

    adult = load_adult()
    mechanism = MST(1.0)
    model = mechanism.fit(adult, rng=0)
    assert model.domain == adult.domain
    assert mechanism.budget.spent_rho == pytest.approx(cdp_rho(1.0, 1e-9), rel=1e-9)
    synthetic = model.synthetic_data(rng=1)
    assert abs(len(synthetic) - len(adult)) < 0.01 * len(adult)
    assert mean_tv(adult, synthetic, 1) < 0.012
    pair_tv = [tv_distance(adult.marginal(p), synthetic.marginal(p)) for p in ADULT_PAIRS]
    assert np.mean(pair_tv) < 0.08


def test_refuses_to_overspend_and_records_nothing_more(data, monkeypatch):
    # a two-way measurement asking 5% more than its third is refused before any noise
    real = mst_module.measure_marginals

    def greedy(data, cliques, *, rho, label, **kwargs):
        if label == "two-way marginals":
            rho *= 1.05
        return real(data, cliques, rho=rho, label=label, **kwargs)

    monkeypatch.setattr(mst_module, "measure_marginals", greedy)
    mechanism = MST(1.0, iters=10)
    with pytest.raises(BudgetExceededError):
        mechanism.fit(data, rng=0)
    budget = mechanism.budget
    assert not any("two-way" in entry.label for entry in budget.ledger)
    assert budget.spent_rho == pytest.approx(2 * budget.total / 3)


def test_attributes_of_a_hundred_thousand_values():
    """Expanding the merged values back would need a 1e10-cell table: the model stays
    compressed and answers on the original domain all the same."""
    domain = Domain(["a", "b", "c"], [100_000, 100_000, 3])
    rng = np.random.default_rng(0)
    a = rng.integers(0, 100_000, 3000)
    records = np.column_stack([a, (7 * a) % 100_000, rng.integers(0, 3, 3000)])
    mechanism = MST(1.0, iters=20)
    model = mechanism.fit(Dataset(records, domain), rng=0)
    assert isinstance(model, CompressedModel) and model.domain == domain
    one_way = model.marginal(("a",))
    assert one_way.shape == (100_000,) and one_way.sum() == pytest.approx(model.total)
    synthetic = model.synthetic_data(rng=1)
    assert synthetic.domain == domain and len(synthetic) == round(model.total)
    assert synthetic.records[:, 0].max() < 100_000


def test_compressed_model_answers_as_the_expanded_one():
    domain = Domain(["x", "y", "z"], [6, 5, 3])
    one_way = [
        Measurement(("x",), [90.0, 1.0, 50.0, 2.0, 0.5, 40.0], 5.0),
        Measurement(("y",), [60.0, 60.0, 1.0, 1.0, 60.0], 5.0),
        Measurement(("z",), [100.0, 50.0, 30.0], 5.0),
    ]
    compression, restated = DomainCompression.from_one_way(domain, one_way)
    rng = np.random.default_rng(2)
    small = compression.compressed
    potentials = {p: rng.normal(size=small.project(p).shape) for p in [("x", "y"), ("y", "z")]}
    fitted = MarkovRandomField(small, potentials, total=200.0)
    lazy, expanded = CompressedModel(compression, fitted), compression.expand(fitted)
    for attrs in [("x",), ("y", "x"), ("x", "y", "z")]:
        np.testing.assert_allclose(lazy.marginal(attrs), expanded.marginal(attrs), rtol=1e-9)
    # decoding draws uniformly among the values that share a code
    codes = np.full(60_000, compression.mappings["x"][1])
    values = compression.decode("x", codes, np.random.default_rng(0))
    merged = np.flatnonzero(compression.mappings["x"] == compression.mappings["x"][1])
    assert set(np.unique(values)) == set(merged)
    counts = np.bincount(values, minlength=6)[merged]
    assert np.all(np.abs(counts / 60_000 - 1 / len(merged)) < 0.01)
