"""SWIFT: its structure (a junction tree of width 3 within the cell budget), its ledger
(the picks at their stated ε, the cliques measured at once with what is left) and its
accuracy where the noise is small."""

from __future__ import annotations

import math
from itertools import combinations

import networkx as nx
import numpy as np
import pytest
from mechanism_helpers import PublicOnly

from dpgm import Dataset, Domain, MarkovRandomField
from dpgm.mechanisms import SWIFT
from dpgm.privacy import cdp_rho

FAST = {"iters": 100}


def _chain(n: int = 20_000, width: int = 8, seed: int = 0) -> Dataset:
    """A chain a0 - a1 - ... with strong links: the tree to find is the chain."""
    rng = np.random.default_rng(seed)
    domain = Domain([f"a{i}" for i in range(width)], [3] * width)
    potentials = {(f"a{i}", f"a{i + 1}"): 2.5 * np.eye(3) for i in range(width - 1)}
    return MarkovRandomField(domain, potentials, total=n).sample(n, rng=rng)


@pytest.fixture(scope="module")
def chain() -> Dataset:
    return _chain()


def test_the_structure_is_a_junction_tree_of_width_three_within_the_budget(chain):
    mechanism = SWIFT(50.0, **FAST)
    model = mechanism.fit(chain, rng=0)
    graph = nx.Graph()
    graph.add_nodes_from(chain.domain.attrs)
    for clique in mechanism.cliques:
        graph.add_edges_from(combinations(clique, 2))
    assert nx.is_chordal(graph)
    assert max(len(c) for c in mechanism.cliques) == 3
    assert len(mechanism.tree_edges) == 7  # a spanning tree
    assert len(mechanism.triangles) == 3  # (d - 1) // 2 at most, each on two tree edges
    cells = sum(chain.domain.shape) + sum(chain.domain.size(c) for c in mechanism.cliques)
    assert cells <= mechanism.max_model_cells
    # the chain's links are the tree at this ε
    assert {frozenset(e) for e in mechanism.tree_edges} == {
        frozenset((f"a{i}", f"a{i + 1}")) for i in range(7)}
    for clique in mechanism.cliques:  # each measured clique is answered by the model
        truth = chain.marginal(clique) / chain.total
        assert 0.5 * np.abs(model.marginal(clique) / model.total - truth).sum() < 0.01


def test_a_small_cell_budget_limits_the_picks(chain):
    mechanism = SWIFT(50.0, max_model_cells=24 + 9 * 4, **FAST)  # one-ways and 4 pairs
    mechanism.fit(chain, rng=1)
    assert len(mechanism.tree_edges) == 4 and not mechanism.triangles
    assert mechanism.budget.remaining == pytest.approx(0.0, abs=1e-12)


def test_the_ledger_charges_each_pick_and_measures_with_what_is_left(chain):
    epsilon = 2.0
    mechanism = SWIFT(epsilon, **FAST)
    mechanism.fit(chain, rng=2)
    rho = cdp_rho(epsilon, mechanism.delta)
    entries = mechanism.budget.to_json()["entries"]
    picks = [e for e in entries if e["label"].startswith("select")]
    triangles = [e for e in picks if e["label"] == "select triangle"]
    assert len(picks) - len(triangles) == len(mechanism.tree_edges)
    # each triangle a pick, and one more where "no more triangles" ended the phase
    assert len(triangles) - len(mechanism.triangles) in (0, 1)
    most = 7 + 3  # (d - 1) + (d - 1) // 2
    per_pick = 8.0 * 0.1 * rho / most / 8.0  # ε²/8 with ε = sqrt(8·0.1ρ/P)
    assert all(e["rho"] == pytest.approx(per_pick, rel=1e-9) for e in picks)
    assert entries[0]["label"] == "one-way marginals"
    assert entries[0]["rho"] == pytest.approx(0.1 * rho, rel=1e-9)
    assert entries[-1]["label"] == "the junction tree's cliques"
    assert sum(e["rho"] for e in entries) == pytest.approx(rho, rel=1e-9)
    assert math.isclose(mechanism.budget.remaining, 0.0, abs_tol=1e-12)


def test_a_workload_of_one_way_marginals_spends_everything_on_them(chain):
    mechanism = SWIFT(1.0, **FAST)
    mechanism.fit(chain, workload=[("a0",), ("a1",)], rng=3)
    entries = mechanism.budget.to_json()["entries"]
    assert [e["label"] for e in entries] == ["one-way marginals"]
    assert not mechanism.cliques


def test_the_workload_weights_the_pairs_it_names():
    """A workload of pairs across the chain: the tree is drawn among its pairs only."""
    data = _chain(5000, width=5, seed=4)
    workload = [("a0", "a2"), ("a2", "a4"), ("a1", "a3"), ("a0", "a1")]
    mechanism = SWIFT(20.0, **FAST)
    mechanism.fit(data, workload=workload, rng=5)
    allowed = {frozenset(w) for w in workload}
    assert all(frozenset(e) in allowed for e in mechanism.tree_edges)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"select_share": 0.6, "one_way_share": 0.4}, "must leave some of the budget"),
    ({"select_share": 0.0}, "select_share"),
    ({"max_model_cells": 0}, "max_model_cells"),
])
def test_bad_settings_are_refused_at_construction(kwargs, message):
    with pytest.raises(Exception, match=message):
        SWIFT(1.0, **kwargs)


def test_a_cell_budget_below_the_one_way_model_is_refused_before_reading():
    with pytest.raises(Exception, match="one-way marginals alone"):
        SWIFT(1.0, max_model_cells=10).fit(PublicOnly(Domain(["a", "b"], [6, 6])))
