"""The CGM paper's random models: graphs and Dirichlet potentials."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from dpgm.datasets.synthetic import connected_erdos_renyi, dirichlet_model, third_order_chain
from dpgm.errors import ParameterError


def test_third_order_chain_has_the_papers_24_edges_for_ten_nodes():
    edges = third_order_chain(10)
    assert len(edges) == 9 + 8 + 7 == 24
    assert ("x0", "x3") in edges and ("x0", "x4") not in edges
    assert third_order_chain(2) == [("x0", "x1")]


@pytest.mark.parametrize("seed", range(5))
def test_erdos_renyi_graphs_are_connected_and_reproducible(seed):
    edges = connected_erdos_renyi(10, 0.3, rng=seed)
    graph = nx.Graph(edges)
    assert graph.number_of_nodes() == 10 and nx.is_connected(graph)
    assert edges == connected_erdos_renyi(10, 0.3, rng=seed)
    with pytest.raises(ParameterError, match="raise p"):
        connected_erdos_renyi(10, 0.01, rng=seed, attempts=3)


def test_dirichlet_model_potentials_are_log_dirichlet_draws():
    model = dirichlet_model(third_order_chain(5), 3, rng=0, total=100.0)
    assert model.domain.attrs == ("x0", "x1", "x2", "x3", "x4")
    assert model.domain.shape == (3,) * 5
    for factor in model.potentials.values():
        assert factor.values.shape == (3, 3)
        assert np.exp(factor.values).sum() == pytest.approx(1.0)
    assert model.marginal(("x0",)).sum() == pytest.approx(100.0)
    again = dirichlet_model(third_order_chain(5), 3, rng=0)
    assert all(np.array_equal(a.values, b.values)
               for a, b in zip(model.potentials.values(), again.potentials.values()))
    with pytest.raises(ParameterError, match="at least one edge"):
        dirichlet_model([], 3)
