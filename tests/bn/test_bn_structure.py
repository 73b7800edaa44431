"""A Bayesian network's public structure and its graph features (the note's A5, A6)."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
from bn_helpers import NETWORKS, load
from bn_oracles import sensitivity_by_derivative

from dpgm import Domain
from dpgm.bn import (
    check_structure_type,
    children,
    families,
    heights,
    node_features,
    sensitivity,
    structure_parents,
)
from dpgm.errors import DomainError, ParameterError
from dpgm.models import BayesianNetwork


def parents_of(network: BayesianNetwork) -> dict[str, tuple[str, ...]]:
    return {v: tuple(network.parents[v]) for v in network.variables}


def sizes_of(network: BayesianNetwork) -> dict[str, int]:
    return network.domain.to_dict()


# -- A5, A6: the graph features ------------------------------------------------------------
def figure_two() -> dict[str, tuple[str, ...]]:
    return {"A": (), "B": (), "C": ("A", "B"), "D": ("C",), "E": ("C",), "F": ("D", "E")}


def test_sensitivity_of_the_figure_two_example():
    parents, sizes = figure_two(), dict.fromkeys("ABCDEF", 2)
    got = {v: sensitivity(parents, sizes, v) for v in parents}
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
        assert sensitivity_by_derivative(randomised, v) == pytest.approx(
            sensitivity(parents, sizes, v), abs=1e-12)
    leaf = next(v for v in network.variables if not network.children(v))
    assert sensitivity_by_derivative(randomised, leaf) == 0.0


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
    assert expected == pytest.approx(sensitivity(parents, sizes_of(network), node), abs=1e-9)


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
    features = node_features(parents_of(network), sizes_of(network))
    for node, (h, o, delta, weight) in REFERENCE[name].items():
        got = features[node]
        assert (got.height, got.out_degree) == (h, o), node
        assert got.sensitivity == pytest.approx(delta, abs=5e-4), node
        assert got.weight == pytest.approx(weight, abs=5e-3), node


# -- the structure, as a user gives it -------------------------------------------------------
def test_structure_forms_and_their_errors():
    domain = Domain(["a", "b", "c"], [2, 3, 2])
    as_mapping = structure_parents({"b": ["a"], "c": ("a", "b")}, domain)
    assert as_mapping == {"a": (), "b": ("a",), "c": ("a", "b")}
    graph = nx.DiGraph([("b", "c"), ("a", "c"), ("a", "b")])
    assert structure_parents(graph, domain) == as_mapping
    with pytest.raises(DomainError, match="not in the data's domain"):
        structure_parents({"z": ["a"]}, domain)
    with pytest.raises(DomainError, match="cycle"):
        structure_parents({"a": ["b"], "b": ["a"]}, domain)
    with pytest.raises(ParameterError, match="string"):
        structure_parents({"b": "a"}, domain)
    with pytest.raises(DomainError, match="no node for the attributes"):
        structure_parents(nx.DiGraph([("a", "b")]), domain)
    network = load("asia")
    wrong = Domain(network.variables, [3] * len(network.variables))
    with pytest.raises(DomainError, match="states in the structure"):
        structure_parents(network, wrong)
    with pytest.raises(ParameterError, match="structure must be"):
        check_structure_type([("a", "b")])
    with pytest.raises(ParameterError, match="structure must be"):
        structure_parents([("a", "b")], domain)


def test_families_children_and_heights_of_the_figure_two_example():
    parents = figure_two()
    assert families(parents) == [("A",), ("B",), ("A", "B", "C"), ("C", "D"), ("C", "E"),
                                 ("D", "E", "F")]
    assert children(parents) == {"A": ["C"], "B": ["C"], "C": ["D", "E"], "D": ["F"],
                                 "E": ["F"], "F": []}
    assert heights(parents) == {"A": 3, "B": 3, "C": 2, "D": 1, "E": 1, "F": 0}
