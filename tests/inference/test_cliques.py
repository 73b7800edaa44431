"""The clique operations every engine and mechanism shares."""

from __future__ import annotations

from itertools import combinations

import numpy as np

from dpgm import Domain
from dpgm.inference.cliques import maximal, smallest_containing


def test_maximal_keeps_the_first_of_each_in_the_order_first_met():
    assert maximal([("a",), ("a", "b"), ("c",)]) == [("a", "b"), ("c",)]
    assert maximal([("b", "a"), ("c",), ("a", "b"), (), ("c", "d"), ("a",)]) == [
        ("b", "a"), ("c", "d")]
    assert maximal([frozenset("ab"), frozenset("abc")]) == [tuple(frozenset("abc"))]
    assert maximal([]) == []


def test_maximal_agrees_with_pairwise_containment():
    rng = np.random.default_rng(3)
    attrs = list("abcdefg")
    for _ in range(50):
        cliques = [tuple(rng.choice(attrs, size=rng.integers(1, 4), replace=False))
                   for _ in range(rng.integers(1, 12))]
        unique = []
        for c in cliques:
            if not any(set(c) == set(u) for u in unique):
                unique.append(c)
        expected = [c for c in unique if not any(set(c) < set(o) for o in unique)]
        assert maximal(cliques) == expected


def test_smallest_containing_prefers_fewer_cells_then_the_first():
    domain = Domain(list("abcd"), [2, 3, 5, 3])
    cliques = [("a", "b", "c"), ("a", "b"), ("b", "d"), ("a", "d")]
    assert smallest_containing(cliques, ("a",), domain) == 1
    assert smallest_containing(cliques, ("b",), domain) == 1
    assert smallest_containing(cliques, ("d",), domain) == 3
    assert smallest_containing(cliques, ("c", "d"), domain) is None
    for pair in combinations(domain.attrs, 2):
        found = smallest_containing(cliques, pair, domain)
        assert found is None or set(pair) <= set(cliques[found])
