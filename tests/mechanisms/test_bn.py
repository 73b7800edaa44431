"""The learners of CPDs on a public structure (Roy Chowdhury et al.): the note's checks A2,
A8–A12 (the post-processing's, A4–A6, are in tests/bn)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from bn_helpers import load

from dpgm import Dataset
from dpgm.bn import cpds_from_tables, structure_parents
from dpgm.errors import ParameterError, PrivacyParameterError
from dpgm.mechanisms import DataDependentBN, DInd
from dpgm.mechanisms import bn as learners
from dpgm.models import BayesianNetwork
from dpgm.privacy import amplified_epsilon, subsample_epsilon

pytestmark = pytest.mark.filterwarnings("ignore::dpgm.errors.SeedWarning")


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
    parents = structure_parents(network, network.domain)
    mle = BayesianNetwork.fit_mle(network, asia_data)
    # every parent configuration is observed in 10,000 Asia records
    for v in network.variables:
        assert (asia_data.marginal(parents[v]) > 0).all()
    noisy = learners.measure_node_tables(asia_data, parents, dict.fromkeys(parents, 1e9), None,
                                   np.random.default_rng(0))
    cpds = cpds_from_tables(parents, noisy, consistency=consistency)
    for v in network.variables:
        np.testing.assert_allclose(cpds[v], mle.cpds[v], atol=1e-6)
    ours = DataDependentBN(1e9, structure=network).fit(asia_data, rng=0)
    for v in network.variables:
        np.testing.assert_allclose(ours.cpds[v], mle.cpds[v], atol=1e-6)


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
    allocate = learners.allocate

    def watched(total, weights, errors):
        seen_allocation.append(len(reads))
        return allocate(total, weights, errors)

    monkeypatch.setattr(learners, "allocate", watched)
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

    assert list(inspect.signature(learners.stage_one_parameters).parameters)[:3] == [
        "sample", "parents", "budget"]
    assert "data" not in inspect.signature(learners.allocate).parameters


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


def test_an_unknown_structure_type_is_refused_by_the_constructor():
    with pytest.raises(ParameterError, match="structure must be"):
        DInd(1.0, structure=[("a", "b")])


def test_the_old_module_is_a_deprecated_alias():
    import importlib
    import sys

    import dpgm.bn

    sys.modules.pop("dpgm.mechanisms.bn_parameters", None)
    with pytest.warns(DeprecationWarning, match="dpgm.bn"):
        old = importlib.import_module("dpgm.mechanisms.bn_parameters")
    assert old.DataDependentBN is DataDependentBN and old.DInd is DInd
    assert old.allocate is dpgm.bn.allocate and old.NoisyTables is dpgm.bn.NoisyTables
    assert old.measure_node_tables is learners.measure_node_tables


def test_a_networks_options_record_its_structure_and_allocation():
    """Options that are not plain values (a structure, a rule whose attribute has another
    name) are recorded too, as JSON."""
    import json

    import networkx as nx

    from dpgm.mechanisms import DataDependentBN

    graph = nx.DiGraph([("a", "b"), ("a", "c")])
    options = DataDependentBN(1.0, structure=graph, allocation="error").options()
    assert options["structure"] == {"a": [], "b": ["a"], "c": ["a"]}
    assert options["allocation"] == "error"
    assert json.loads(json.dumps(options, allow_nan=False)) == options
