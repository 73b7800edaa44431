"""Junction trees: running intersection, coverage, and width on real networks."""

from __future__ import annotations

import os
from itertools import combinations
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from brute_force import random_cliques, random_domain

from dpgm import Domain
from dpgm.inference import JunctionTree, elimination_order, interaction_graph
from dpgm.inference.junction_tree import HEURISTICS, TreeSizes, clique_cells
from dpgm.io import read_bif

BN_DIR = Path(os.environ.get("DPGM_BN_DIR", Path(__file__).parents[1] / "data" / "bn"))


def check_tree(tree: JunctionTree, cliques) -> None:
    """Structure, coverage and the running-intersection property."""
    domain = tree.domain
    n = len(tree.cliques)
    # a rooted spanning tree: order is a permutation, root first, parents before children
    assert sorted(tree.order) == list(range(n))
    assert tree.parent[tree.order[0]] == -1
    assert sum(p == -1 for p in tree.parent) == 1
    position = {i: k for k, i in enumerate(tree.order)}
    for i, p in enumerate(tree.parent):
        if p >= 0:
            assert position[p] < position[i]
            assert i in tree.children[p]
    # cliques are in domain order, maximal, and cover every attribute and input clique
    for c in tree.cliques:
        assert c == domain.canonical(c)
    sets = [frozenset(c) for c in tree.cliques]
    for i, a in enumerate(sets):
        assert not any(a <= b for j, b in enumerate(sets) if j != i)
    assert set().union(*sets) == set(domain.attrs)
    for c in cliques:
        i = tree.find(c)
        assert i is not None and set(c) <= sets[i]
    # running intersection: the cliques holding any attribute form a connected subtree
    graph = nx.Graph()
    graph.add_nodes_from(range(n))
    graph.add_edges_from((i, p) for i, p in enumerate(tree.parent) if p >= 0)
    assert nx.is_tree(graph)
    for a in domain.attrs:
        holders = [i for i in range(n) if a in sets[i]]
        assert nx.is_connected(graph.subgraph(holders)), a
    # separators are what child and parent share
    for i, p in enumerate(tree.parent):
        expected = () if p < 0 else tuple(a for a in tree.cliques[i] if a in sets[p])
        assert tree.separator(i) == expected


@pytest.mark.parametrize("seed", range(30))
def test_random_clique_sets(seed):
    rng = np.random.default_rng(seed)
    domain = random_domain(rng, 3, 9)
    cliques = random_cliques(rng, domain)
    extra = [
        tuple(str(a) for a in rng.choice(domain.attrs, size=int(rng.integers(1, 4)), replace=False))
        for _ in range(int(rng.integers(0, 4)))
    ]
    cliques = cliques + extra
    edges = set(map(frozenset, interaction_graph(domain, cliques).edges))
    for heuristic in ["auto", *HEURISTICS]:
        tree = JunctionTree.build(domain, cliques, heuristic)
        check_tree(tree, cliques)
        assert tree.heuristic in HEURISTICS
        # the triangulated graph is chordal and contains the interaction graph
        chordal = nx.Graph()
        chordal.add_nodes_from(domain.attrs)
        for c in tree.cliques:
            chordal.add_edges_from((a, b) for a in c for b in c if a < b)
        assert nx.is_chordal(chordal)
        assert edges <= set(map(frozenset, chordal.edges))


def test_auto_picks_the_smallest_tree():
    rng = np.random.default_rng(7)
    for _ in range(10):
        domain = random_domain(rng, 5, 9)
        cliques = random_cliques(rng, domain)
        auto = JunctionTree.build(domain, cliques).size()
        assert auto == min(JunctionTree.build(domain, cliques, h).size() for h in HEURISTICS)
        assert clique_cells(domain, cliques) == auto


def test_tree_sizes_equal_the_built_trees_and_their_cache_answers_the_same():
    """TreeSizes answers as JunctionTree.build would, kept per base: a second pass over the
    same base (every answer from the cache) and a fresh instance give the same sizes."""
    rng = np.random.default_rng(11)
    for _ in range(8):
        domain = random_domain(rng, 4, 8)
        base = random_cliques(rng, domain)
        tree = JunctionTree.build(domain, base)
        sizes = TreeSizes(domain)
        assert sizes.cells(base) == tree.size()
        for _ in range(2):  # the second pass answers from the cache
            for extra in combinations(domain.attrs, 2):
                exact = JunctionTree.build(domain, list(tree.cliques) + [extra]).size()
                for cap in (exact - 1, exact, 2 * exact):
                    assert sizes.fits(tree.cliques, extra, cap) == (exact <= cap)
                assert sizes.cells(tree.cliques, extra) == exact
                assert TreeSizes(domain).cells(tree.cliques, extra) == exact
        assert sizes.cells([]) == sum(domain.shape)  # every attribute a clique of its own


def test_tree_sizes_of_an_attribute_of_one_value_and_a_clique_inside_the_base():
    domain = Domain(["a", "b", "c", "d"], [3, 1, 4, 2])
    base = [("a", "b"), ("b", "c"), ("c", "d"), ("a", "d")]
    sizes = TreeSizes(domain)
    for extra in [("a",), ("a", "b"), ("b", "d"), ("a", "c"), ()]:
        assert sizes.cells(base, extra) == JunctionTree.build(domain, [*base, extra]).size()
    assert sizes.cells(base) == JunctionTree.build(domain, base).size()


def test_disconnected_components_and_isolated_attributes():
    domain = Domain(["a", "b", "c", "d", "e"], [2, 3, 2, 2, 4])
    tree = JunctionTree.build(domain, [("a", "b"), ("c", "d")])  # e appears in no clique
    check_tree(tree, [("a", "b"), ("c", "d"), ("e",)])
    assert set(tree.cliques) == {("a", "b"), ("c", "d"), ("e",)}
    assert tree.separator(tree.find(["e"])) in {(), ("e",)}


def test_cycle_is_triangulated():
    domain = Domain(list("abcd"), [2, 2, 2, 2])
    cycle = [("a", "b"), ("b", "c"), ("c", "d"), ("d", "a")]
    tree = JunctionTree.build(domain, cycle)
    check_tree(tree, cycle)
    assert len(tree.cliques) == 2 and all(len(c) == 3 for c in tree.cliques)


def test_find_and_steiner_subtree():
    rng = np.random.default_rng(3)
    domain = random_domain(rng, 8, 10)
    tree = JunctionTree.build(domain, random_cliques(rng, domain))
    for c in tree.cliques:
        assert tree.cliques[tree.find(c)] == c
    assert tree.find(["zzz"]) is None
    graph = nx.Graph((i, p) for i, p in enumerate(tree.parent) if p >= 0)
    graph.add_nodes_from(range(len(tree.cliques)))
    for k in range(1, 5):
        attrs = list(rng.choice(domain.attrs, size=k, replace=False))
        nodes = tree.steiner_subtree(attrs)
        assert set(attrs) <= set().union(*(tree.cliques[i] for i in nodes))
        assert nx.is_connected(graph.subgraph(nodes))
        assert nodes == [i for i in tree.order if i in nodes]  # root first


def test_elimination_order_rejects_unknown_heuristic():
    graph = interaction_graph(Domain(["a"], [2]), [("a",)])
    with pytest.raises(ValueError, match="unknown heuristic"):
        elimination_order(graph, {"a": 2}, "best")


def test_chain_of_1000_triples_builds():
    n = 1000
    domain = Domain([f"x{i:04d}" for i in range(n)], [3] * n)
    cliques = [domain.attrs[i : i + 3] for i in range(n - 2)]
    tree = JunctionTree.build(domain, cliques)
    assert max(len(c) for c in tree.cliques) == 3
    assert len(tree.cliques) == n - 2
    assert tree.size() == (n - 2) * 27


@pytest.mark.skipif(not (BN_DIR / "alarm.bif").exists(), reason="BIF data not found")
def test_alarm_moral_graph_has_small_cliques(record_property):
    network = read_bif(BN_DIR / "alarm.bif")
    cliques = network.moral_cliques()
    tree = JunctionTree.build(network.domain, cliques)
    check_tree(tree, cliques)
    width = max(len(c) for c in tree.cliques)
    # pgmpy's default junction-tree heuristic yields a 19-attribute clique on this graph
    assert width <= 6
    record_property("alarm_max_clique_attributes", width)
    record_property("alarm_total_cells", tree.size())
    assert tree.size() < 10_000
