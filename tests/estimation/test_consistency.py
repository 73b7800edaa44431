"""Mutual consistency (App. 8.2.1 of Roy Chowdhury et al.): agreement, idempotence, mass."""

from __future__ import annotations

import numpy as np
import pytest
from bn_helpers import load

from dpgm.bn import families
from dpgm.estimation.consistency import _project, intersection_closure, mutual_consistency


def random_tables(cliques, sizes, seed):
    rng = np.random.default_rng(seed)
    return [rng.normal(1.0, 0.5, size=[sizes[a] for a in c]) for c in cliques]


def assert_agree(cliques, tables, atol):
    for shared in intersection_closure(cliques):
        attrs = tuple(sorted(shared))
        holders = [t for t, c in enumerate(cliques) if shared <= set(c)]
        first = _project(tables[holders[0]], cliques[holders[0]], attrs)
        for t in holders[1:]:
            np.testing.assert_allclose(_project(tables[t], cliques[t], attrs), first, atol=atol)


CLIQUES = [("a", "b", "c"), ("c", "b", "d"), ("d", "e"), ("a", "e"), ("b",), ("e", "c", "a")]
SIZES = {"a": 2, "b": 3, "c": 4, "d": 2, "e": 3}


def test_closure_is_every_intersection_and_sorted():
    closure = intersection_closure([("a", "b"), ("b", "c"), ("a", "b", "c", "d")])
    assert closure == [frozenset(), frozenset("b"), frozenset("ab"), frozenset("bc"),
                       frozenset("abcd")]


@pytest.mark.parametrize("seed", range(3))
def test_tables_agree_on_every_shared_set_keep_mass_and_are_idempotent(seed):  # A7
    tables = random_tables(CLIQUES, SIZES, seed)
    # equal totals, as for probability tables: then every table keeps its mass
    tables = [t / t.sum() for t in tables]
    weights = np.random.default_rng(seed).uniform(0.1, 2, len(CLIQUES))
    out = mutual_consistency(CLIQUES, tables, weights)
    assert_agree(CLIQUES, out, atol=1e-9)
    for before, after in zip(tables, out):
        assert after.sum() == pytest.approx(before.sum(), abs=1e-12)
    again = mutual_consistency(CLIQUES, out, weights)
    for once, twice in zip(out, again):
        np.testing.assert_allclose(twice, once, atol=1e-12)


def test_weighted_mean_of_eq_17():
    # two tables sharing a: the result's projection is the weighted mean of theirs
    left, right = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[5.0, 1.0], [0.0, 0.0]])
    out = mutual_consistency([("a", "b"), ("a", "c")], [left, right], [3.0, 1.0])
    target = (3 * left.sum(1) + right.sum(1)) / 4
    np.testing.assert_allclose(out[0].sum(1), target)
    np.testing.assert_allclose(out[1].sum(1), target)
    # spread evenly over the cells of each a-slice
    np.testing.assert_allclose(out[0] - left, ((target - left.sum(1)) / 2)[:, None] * [1, 1])


@pytest.mark.parametrize("name", ["asia", "sachs", "child", "alarm"])
def test_consistent_inputs_are_unchanged(name):  # A7: exact MLE joint tables
    network = load(name)
    data = network.sample(2000, rng=1)
    cliques = families({v: network.parents[v] for v in network.variables})
    tables = [data.marginal(c) / len(data) for c in cliques]
    out = mutual_consistency(cliques, tables, np.arange(1, len(cliques) + 1))
    for before, after in zip(tables, out):
        np.testing.assert_allclose(after, before, atol=1e-12)


@pytest.mark.parametrize(("name", "count", "shared", "largest"),
                         [("asia", 13, 7, 3), ("sachs", 15, 9, 4), ("child", 33, 15, 3),
                          ("alarm", 56, 31, 5)])
def test_attribute_sets_of_the_four_networks(name, count, shared, largest):  # the note's §2.5
    network = load(name)
    cliques = families({v: network.parents[v] for v in network.variables})
    closure = intersection_closure(cliques)
    assert len(closure) == count
    assert sum(sum(s <= set(c) for c in cliques) >= 2 for s in closure) == shared
    assert max(len(s) for s in closure) == largest
