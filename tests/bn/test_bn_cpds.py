"""CPDs from noisy tables and the released network (Algorithm 1; the note's [C3], [C4])."""

from __future__ import annotations

import numpy as np
import pytest
from bn_helpers import load

from dpgm import Domain, MarkovRandomField
from dpgm.bn import (
    NoisyTables,
    cpds_from_tables,
    network_from_model,
    noisy_joint,
    noisy_total,
    normalised_columns,
    release_network,
)


def test_noisy_joint_variants_of_c3():
    tables = NoisyTables(np.array([[3.0, -1.0], [0.0, 0.0]]), np.array([6.0, 2.0]), 1.0)
    conditional = noisy_joint(tables)
    np.testing.assert_allclose(conditional, [[0.75, 0.0], [0.125, 0.125]])
    np.testing.assert_allclose(noisy_joint(tables, "joint"), [[1.0, 0.0], [0.0, 0.0]])


def test_columns_are_clipped_normalised_and_uniform_without_mass():
    got = normalised_columns(np.array([[2.0, -1.0, 6.0], [-3.0, -0.5, -2.0]]))
    np.testing.assert_allclose(got, [[0.25, 0.0, 0.75], [1 / 3, 1 / 3, 1 / 3]])


def test_noisy_total_weights_the_roots_by_inverse_variance():
    roots = [NoisyTables(np.zeros(2), np.array(100.0), 1.0),
             NoisyTables(np.zeros(2), np.array(130.0), 2.0)]  # 4 times the weight
    child = NoisyTables(np.zeros((2, 2)), np.array([1e6, 1e6]), 3.0)  # not a root
    assert noisy_total({"a": roots[0], "b": roots[1], "c": child}) == pytest.approx(124.0)
    assert noisy_total({"a": NoisyTables(np.zeros(2), np.array(-5.0), 1.0)}) == 0.0


def test_without_consistency_each_cpd_is_its_own_tables_columns():
    parents = {"a": (), "b": ("a",)}
    noisy = {"a": NoisyTables(np.array([3.0, 1.0]), np.array(4.0), 1.0),
             "b": NoisyTables(np.array([[1.0, -2.0], [0.0, 0.0]]), np.array([5.0, 1.0]), 1.0)}
    cpds = cpds_from_tables(parents, noisy, consistency=False)
    np.testing.assert_allclose(cpds["a"], [0.75, 0.25])
    np.testing.assert_allclose(cpds["b"], [[1.0, 0.0], [0.5, 0.5]])
    consistent = cpds_from_tables(parents, noisy)
    for cpd in consistent.values():
        np.testing.assert_allclose(cpd.sum(-1), 1.0)


def test_the_released_network_speaks_the_domains_labels_in_the_parents_order():
    domain = Domain(["a", "b"], [2, 3], {"b": ["x", "y", "z"]})
    parents = {"b": (), "a": ("b",)}  # b first: the network keeps this order
    cpds = {"b": np.full(3, 1 / 3), "a": np.full((3, 2), 0.5)}
    network = release_network(domain, parents, cpds, 12.5, "n").check()
    assert network.variables == ["b", "a"] and network.total == 12.5
    assert network.states == {"a": ["0", "1"], "b": ["x", "y", "z"]}


def test_cpds_read_off_a_model_are_the_networks_own():
    network = load("asia")
    parents = {v: tuple(network.parents[v]) for v in network.variables}
    model: MarkovRandomField = network.to_markov_random_field(total=50.0)
    read = network_from_model(model, parents)
    assert read.total == pytest.approx(50.0)
    for v in network.variables:
        np.testing.assert_allclose(read.cpds[v], network.cpds[v], atol=1e-10)
