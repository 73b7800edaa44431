"""Private CPD learning on a public structure (Roy Chowdhury et al.): the note's checks A2–A12."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
from bn_helpers import NETWORKS, load
from scipy import optimize

from dpgm import Dataset, Domain
from dpgm.errors import DomainError, ParameterError, PrivacyParameterError
from dpgm.mechanisms import DataDependentBN, DInd
from dpgm.mechanisms import bn_parameters as bp
from dpgm.models import BayesianNetwork
from dpgm.privacy import amplified_epsilon, subsample_epsilon

pytestmark = pytest.mark.filterwarnings("ignore::dpgm.errors.SeedWarning")


def parents_of(network: BayesianNetwork) -> dict[str, tuple[str, ...]]:
    return {v: tuple(network.parents[v]) for v in network.variables}


def sizes_of(network: BayesianNetwork) -> dict[str, int]:
    return network.domain.to_dict()


@pytest.fixture(scope="module")
def asia_data():
    return load("asia").sample(10_000, rng=0)


# -- A2: the ledgers ------------------------------------------------------------------------
@pytest.mark.parametrize("eps", [1.0, 2.5])
def test_ledgers_are_exact(asia_data, eps):
    network = load("asia")
    n = len(network.variables)
    dind = DInd(eps, structure=network)
    dind.fit(asia_data, rng=0)
    assert len(dind.budget.ledger) == 2 * n
    assert math.fsum(e.epsilon for e in dind.budget.ledger) == pytest.approx(eps, rel=1e-12)
    # every table's Laplace scale is 2/E_i = 2n/eps
    assert all(t.std == pytest.approx(math.sqrt(2) * 2 * n / eps) for t in dind.noisy.values())

    ours = DataDependentBN(eps, structure=network)
    ours.fit(asia_data, rng=0)
    inner, outer = ours.stage_one_budget.ledger, ours.budget.ledger
    raw = subsample_epsilon(0.1 * eps, 0.1)
    assert len(inner) == 2 * n
    assert math.fsum(e.epsilon for e in inner) == pytest.approx(raw, rel=1e-12)
    assert amplified_epsilon(raw, 0.1) == pytest.approx(0.1 * eps, rel=1e-12)
    assert len(outer) == 1 + 2 * n and outer[0].epsilon == pytest.approx(0.1 * eps, rel=1e-12)
    assert math.fsum(e.epsilon for e in outer[1:]) == pytest.approx(0.9 * eps, rel=1e-12)
    assert ours.budget.spent_epsilon == pytest.approx(eps, rel=1e-12)
    for v, share in ours.allocation.items():
        assert ours.noisy[v].epsilon == share
        assert ours.noisy[v].std == pytest.approx(math.sqrt(2) * 2 / share)


# -- A4: the allocation ---------------------------------------------------------------------
def objective(eps, weights, errors):
    return float(np.sum(weights * errors / eps))


@pytest.mark.parametrize("seed", range(4))
def test_allocation_is_eq_10_and_the_constrained_minimum(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 9))
    weights, errors = rng.uniform(1, 50, n), rng.uniform(1e-3, 1, n)
    total = 0.9
    eps = bp.allocate(total, weights, errors)
    np.testing.assert_allclose(eps, bp.allocate_product_form(total, weights, errors),
                               rtol=1e-12)
    assert np.all(eps > 0) and eps.sum() == pytest.approx(total, rel=1e-12)
    assert objective(eps, weights, errors) == pytest.approx(
        np.sqrt(weights * errors).sum() ** 2 / total, rel=1e-12)
    found = optimize.minimize(
        objective, np.full(n, total / n), args=(weights, errors), method="SLSQP",
        bounds=[(1e-9, total)] * n,
        constraints=[{"type": "eq", "fun": lambda e: e.sum() - total}],
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    np.testing.assert_allclose(found.x, eps, atol=1e-6)
    np.testing.assert_allclose(bp.allocate(total, weights, 7.5 * errors), eps, rtol=1e-12)


def test_allocation_refuses_non_positive_inputs():
    with pytest.raises(ParameterError, match="> 0"):
        bp.allocate(1.0, [1, 2], [0.1, 0.0])


# -- A5, A6: the graph features ------------------------------------------------------------
def figure_two() -> dict[str, tuple[str, ...]]:
    return {"A": (), "B": (), "C": ("A", "B"), "D": ("C",), "E": ("C",), "F": ("D", "E")}


def test_sensitivity_of_the_figure_two_example():
    parents, sizes = figure_two(), dict.fromkeys("ABCDEF", 2)
    got = {v: bp.sensitivity(parents, sizes, v) for v in parents}
    assert got == {"A": 0.5, "B": 0.5, "C": 0.125, "D": 0.25, "E": 0.25, "F": 0.0}


@pytest.mark.parametrize("name", NETWORKS)
def test_sensitivity_closed_form_equals_eq_8_by_derivative(name):
    network = load(name)
    rng = np.random.default_rng(1)
    random_cpds = {v: rng.dirichlet(np.ones(c.shape[-1]), size=c.shape[:-1])
                   for v, c in network.cpds.items()}
    randomised = BayesianNetwork(network.variables, network.states, network.parents,
                                 random_cpds)
    parents, sizes = parents_of(network), sizes_of(network)
    # the nodes with children (leaves are 0 either way), a few per network to stay quick
    inner = [v for v in network.variables if network.children(v)][:6]
    for v in inner:
        assert bp.sensitivity_by_derivative(randomised, v) == pytest.approx(
            bp.sensitivity(parents, sizes, v), abs=1e-12)
    leaf = next(v for v in network.variables if not network.children(v))
    assert bp.sensitivity_by_derivative(randomised, leaf) == 0.0


def test_sensitivity_by_derivative_on_a_numerical_derivative():
    """Eq. 8 from finite differences of P[Y=y] in one CPD entry (a linear function)."""
    network = load("asia")
    parents = parents_of(network)
    node = "either"
    child = network.children(node)[0]
    cpd = network.cpds[node]
    total = 0.0
    for cell in np.ndindex(cpd.shape):
        bumped = cpd.copy()
        bumped[cell] += 1.0  # not normalised: P[Y] is linear in the entry
        changed = BayesianNetwork(network.variables, network.states, network.parents,
                                  {**network.cpds, node: bumped})
        before = network.model.marginal((child,)) / network.total
        after = changed.model.marginal((child,)) / changed.model.total
        # the MRF renormalises; undo it: Z' = 1 + P[pa = u, X-entry] share
        z = changed.model.log_partition
        total += float(np.sum(after * math.exp(z) - before))
    assert len(network.children(node)) == 2  # xray and dysp; dysp has k = 2 too
    expected = total / cpd.size / network.domain[child]
    assert expected == pytest.approx(bp.sensitivity(parents, sizes_of(network), node), abs=1e-9)


REFERENCE = {  # the note's A6: (height, out-degree, Δ, W)
    "asia": {"smoke": (3, 2, 1 / 2, 18), "asia": (3, 1, 1 / 2, 12),
             "either": (1, 2, 1 / 8, 6.75), "xray": (0, 0, 0, 1), "dysp": (0, 0, 0, 1)},
    "sachs": {"PKC": (5, 5, 1 / 3, 48), "PKA": (4, 6, 1 / 9, 38.889),
              "Plcg": (2, 2, 1 / 3, 12), "Raf": (3, 1, 1 / 27, 8.296),
              "Mek": (2, 1, 1 / 81, 6.074), "Erk": (1, 1, 1 / 27, 4.148),
              "PIP3": (1, 1, 1 / 9, 4.444), "Akt": (0, 0, 0, 1), "Jnk": (0, 0, 0, 1),
              "P38": (0, 0, 0, 1), "PIP2": (0, 0, 0, 1)},
    "child": {"Disease": (3, 7, 0.1845, 37.905)},
    "alarm": {"INTUBATION": (8, 5, 0.3, 70.2), "MINVOLSET": (10, 1, 0.25, 27.5)},
}


@pytest.mark.parametrize("name", NETWORKS)
def test_graph_features_match_the_reference(name):
    network = load(name)
    features = bp.node_features(parents_of(network), sizes_of(network))
    for node, (h, o, delta, weight) in REFERENCE[name].items():
        got = features[node]
        assert (got.height, got.out_degree) == (h, o), node
        assert got.sensitivity == pytest.approx(delta, abs=5e-4), node
        assert got.weight == pytest.approx(weight, abs=5e-3), node


# -- A8, A9: valid CPDs, and the MLE as the noise vanishes ----------------------------------
@pytest.mark.parametrize("cls", [DInd, DataDependentBN])
@pytest.mark.parametrize("estimator", ["original", "pgm"])
@pytest.mark.parametrize("joint", ["conditional", "joint"])
def test_released_cpds_are_valid(asia_data, cls, estimator, joint):
    network = load("asia")
    released = cls(0.5, structure=network, estimator=estimator, joint=joint,
                   iters=50).fit(asia_data, rng=3)
    assert isinstance(released, BayesianNetwork)
    released.check()
    for v in network.variables:
        cpd = released.cpds[v]
        assert cpd.shape == network.cpds[v].shape
        assert np.all(np.isfinite(cpd)) and np.all(cpd >= 0)
        np.testing.assert_allclose(cpd.sum(-1), 1.0, atol=1e-12)
    assert released.states == network.states  # the labels of the BIF's domain


@pytest.mark.parametrize("consistency", [True, False])
def test_huge_budgets_give_the_mle(asia_data, consistency):
    network = load("asia")
    parents = parents_of(network)
    mle = BayesianNetwork.fit_mle(network, asia_data)
    # every parent configuration is observed in 10,000 Asia records
    for v in network.variables:
        assert (asia_data.marginal(parents[v]) > 0).all()
    noisy = bp.measure_node_tables(asia_data, parents, dict.fromkeys(parents, 1e9), None,
                                   np.random.default_rng(0))
    cpds = bp.cpds_from_tables(parents, noisy, consistency=consistency)
    for v in network.variables:
        np.testing.assert_allclose(cpds[v], mle.cpds[v], atol=1e-6)
    ours = DataDependentBN(1e9, structure=network).fit(asia_data, rng=0)
    for v in network.variables:
        np.testing.assert_allclose(ours.cpds[v], mle.cpds[v], atol=1e-6)


def test_noisy_joint_variants_of_c3():
    tables = bp.NoisyTables(np.array([[3.0, -1.0], [0.0, 0.0]]), np.array([6.0, 2.0]), 1.0)
    conditional = bp.noisy_joint(tables)
    np.testing.assert_allclose(conditional, [[0.75, 0.0], [0.125, 0.125]])
    np.testing.assert_allclose(bp.noisy_joint(tables, "joint"), [[1.0, 0.0], [0.0, 0.0]])


# -- Eq. 6 -----------------------------------------------------------------------------------
def test_parameter_error_of_eq_6_with_its_floor():
    cpd = np.array([[0.5, 0.5], [1.0, 0.0]])
    tables = bp.NoisyTables(np.array([[4.0, -3.0], [0.5, 2.0]]), np.array([2.0, -7.0]), 1.0)
    by_hand = np.mean([
        0.5 * math.sqrt(1 / 2**2 + 1 / 4**2), 0.5 * math.sqrt(1 / 2**2 + 1 / 1**2),
        1.0 * math.sqrt(1 / 1**2 + 1 / 1**2), 0.0,
    ])
    assert bp.parameter_error(cpd, tables) == pytest.approx(by_hand)
    floored = bp.parameter_error(cpd, tables, floor=3.0)
    assert floored < by_hand


# -- A10: stage isolation ---------------------------------------------------------------------
def test_stage_one_reads_the_subsample_only_and_the_allocation_nothing(asia_data, monkeypatch):
    network = load("asia")
    reads: list[tuple[int, tuple[str, ...]]] = []
    original = Dataset.marginal

    def spy(self, attrs):
        reads.append((id(self), tuple(attrs)))
        return original(self, attrs)

    monkeypatch.setattr(Dataset, "marginal", spy)
    seen_allocation = []
    allocate = bp.allocate

    def watched(total, weights, errors):
        seen_allocation.append(len(reads))
        return allocate(total, weights, errors)

    monkeypatch.setattr(bp, "allocate", watched)
    learner = DataDependentBN(1.0, structure=network)
    learner.fit(asia_data, rng=4)
    n = len(network.variables)
    assert len(reads) == 4 * n
    stage_one, stage_two = reads[: 2 * n], reads[2 * n:]
    assert {i for i, _ in stage_one} != {id(asia_data)} and len({i for i, _ in stage_one}) == 1
    assert {i for i, _ in stage_two} == {id(asia_data)}
    assert seen_allocation == [2 * n]  # between the stages, nothing was read
    # the Stage-I function's signature takes the subsample and its own budget, no data
    import inspect

    assert list(inspect.signature(bp.stage_one_parameters).parameters)[:3] == [
        "sample", "parents", "budget"]
    assert "data" not in inspect.signature(bp.allocate).parameters


# -- A11: determinism --------------------------------------------------------------------------
@pytest.mark.parametrize("cls", [DInd, DataDependentBN])
def test_same_seed_same_network_bit_for_bit(asia_data, cls):
    network = load("asia")
    first = cls(1.0, structure=network).fit(asia_data, rng=7)
    second = cls(1.0, structure=network).fit(asia_data, rng=7)
    for v in network.variables:
        assert np.array_equal(first.cpds[v], second.cpds[v])
    third = cls(1.0, structure=network).fit(asia_data, rng=8)
    assert any(not np.array_equal(first.cpds[v], third.cpds[v]) for v in network.variables)


def test_unseeded_run_uses_the_exact_samplers(asia_data):
    import warnings

    from dpgm.errors import SeedWarning

    with warnings.catch_warnings():
        warnings.simplefilter("error", SeedWarning)
        released = DataDependentBN(1.0, structure=load("asia")).fit(asia_data)
    released.check()


# -- A12: the networks ------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "nodes", "arcs", "free"),
                         [("asia", 8, 8, 18), ("sachs", 11, 17, 178), ("child", 20, 25, 230),
                          ("alarm", 37, 46, 509)])
def test_network_facts_of_the_paper(name, nodes, arcs, free):
    network = load(name)
    assert len(network.variables) == nodes
    assert network.graph.number_of_edges() == arcs
    assert sum(c.size // c.shape[-1] * (c.shape[-1] - 1) for c in network.cpds.values()) == free


# -- the structure, as a user gives it -------------------------------------------------------
def test_structure_forms_and_their_errors():
    domain = Domain(["a", "b", "c"], [2, 3, 2])
    as_mapping = bp.structure_parents({"b": ["a"], "c": ("a", "b")}, domain)
    assert as_mapping == {"a": (), "b": ("a",), "c": ("a", "b")}
    graph = nx.DiGraph([("b", "c"), ("a", "c"), ("a", "b")])
    assert bp.structure_parents(graph, domain) == as_mapping
    with pytest.raises(DomainError, match="not in the data's domain"):
        bp.structure_parents({"z": ["a"]}, domain)
    with pytest.raises(DomainError, match="cycle"):
        bp.structure_parents({"a": ["b"], "b": ["a"]}, domain)
    with pytest.raises(ParameterError, match="string"):
        bp.structure_parents({"b": "a"}, domain)
    with pytest.raises(DomainError, match="no node for the attributes"):
        bp.structure_parents(nx.DiGraph([("a", "b")]), domain)
    network = load("asia")
    wrong = Domain(network.variables, [3] * len(network.variables))
    with pytest.raises(DomainError, match="states in the structure"):
        bp.structure_parents(network, wrong)
    with pytest.raises(ParameterError, match="structure must be"):
        DInd(1.0, structure=[("a", "b")])


# -- our allocation: the expected CPD error ------------------------------------------------------
def test_expected_error_allocation_is_feasible_and_a_minimum():
    rng = np.random.default_rng(5)
    sizes = [2, 3, 4, 2]
    counts = [rng.uniform(5, 3000, size=int(q)) for q in (1, 4, 6, 12)]
    total = 0.9
    eps = bp.allocate_expected_error(total, sizes, counts)
    assert np.all(eps > 0) and eps.sum() == pytest.approx(total, rel=1e-12)

    def mean_error(budgets):
        return float(np.mean(bp.expected_column_error(np.asarray(budgets), np.asarray(sizes),
                                                      counts)))

    best = mean_error(eps)
    for _ in range(200):  # no feasible point nearby or far does better
        other = eps * np.exp(rng.normal(0, 0.3, size=4))
        assert best <= mean_error(total * other / other.sum()) + 1e-12
    assert best < mean_error(np.full(4, total / 4))
    # a node whose columns have far fewer records needs more budget
    few = bp.allocate_expected_error(total, [2, 2], [np.full(3, 50.0), np.full(3, 5000.0)])
    assert few[0] > few[1]


def test_expected_column_error_model():
    # z = 2k/(eps C) = 2*2/(1*4) = 1 -> 1/2; and near 0 for a huge count
    got = bp.expected_column_error(np.array([1.0, 1.0]), np.array([2, 2]),
                                   [np.array([4.0]), np.array([4e9])])
    np.testing.assert_allclose(got, [0.5, 1e-9], rtol=1e-6)


def test_the_error_allocation_runs_and_spends_exactly(asia_data):
    learner = DataDependentBN(1.0, structure=load("asia"), allocation="error")
    learner.fit(asia_data, rng=2).check()
    assert math.fsum(learner.allocation.values()) == pytest.approx(0.9, rel=1e-12)
    assert learner.budget.spent_epsilon == pytest.approx(1.0, rel=1e-12)
    with pytest.raises(ParameterError, match="allocation must be one of"):
        DataDependentBN(1.0, structure=load("asia"), allocation="best")


# -- noise scales and weights from the options: checked before anything is spent ----------------
def test_an_epsilon_whose_noise_overflows_is_refused_by_the_check():
    """A node budget E_i whose Laplace scale 2/E_i is infinite is known from epsilon, the
    structure and the floor: check() (what fit runs before reading) refuses it."""
    network = load("asia")
    domain = network.domain
    for learner in (DataDependentBN(1e-300, structure=network),
                    DataDependentBN(1e-300, structure=network, allocation="error"),
                    DInd(1e-320, structure=network)):
        with pytest.raises(PrivacyParameterError, match="give a larger epsilon="):
            learner.check(domain)
    DInd(1e-300, structure=network).check(domain)  # scale 1.6e301: finite
    with pytest.raises(ParameterError, match="floor"):
        DataDependentBN(1.0, structure=network, floor=1e-301)


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("options", [{"floor": 1e-200}, {"floor": 1e-200, "allocation": "error"},
                                     {"epsilon": 1e300}, {"epsilon": 1e300, "allocation": "error"}])
def test_extreme_options_are_computed_without_overflow(asia_data, options):
    """epsilon 1e300 (ε² overflowed in the noisy total) and floor 1e-200 (1/floor² was
    infinite in Eq. 6) spent and then failed; they run, with every budget > 0 and finite."""
    options = {"epsilon": 1.0, **options}
    learner = DataDependentBN(options.pop("epsilon"), structure=load("asia"), **options)
    learner.fit(asia_data, rng=0)
    shares = np.array(list(learner.allocation.values()))
    assert np.all(shares > 0) and np.all(np.isfinite(2.0 / shares))
    assert learner.budget.spent_epsilon == pytest.approx(learner.epsilon, rel=1e-9)
    assert DInd(1e300, structure=load("asia")).fit(asia_data, rng=0).total == pytest.approx(
        len(asia_data), rel=1e-9)


def test_the_error_bounds_hold():
    """δ̃_i lies in error_bounds: the floor gives the upper bound, MAX_COUNT the lower."""
    cpd = np.array([[0.5, 0.5], [1.0, 0.0]])
    for family, parent in (([[1e300, 1e300], [1e300, 1e300]], [1e300, 1e300]),
                           ([[-5.0, 0.0], [-1.0, -2.0]], [-3.0, 0.0])):
        tables = bp.NoisyTables(np.array(family), np.array(parent), 1.0)
        for floor in (1.0, 1e-200):
            low, high = bp.error_bounds(2, floor)
            assert low <= bp.parameter_error(cpd, tables, floor) <= high * (1 + 1e-12)
