"""The inference-engine protocol: the exact and the loopy engine answer through one interface,
and agree where loopy belief propagation is exact (a tree-shaped factor graph)."""

from __future__ import annotations

import numpy as np
import pytest

from dpgm import Domain
from dpgm.inference import Engine, JunctionTree, LoopyPlan, MessagePlan

DOMAIN = Domain(list("abcd"), [2, 3, 2, 3])
CHAIN = [("a", "b"), ("b", "c"), ("c", "d")]


def engines() -> list[Engine]:
    return [MessagePlan(JunctionTree.build(DOMAIN, CHAIN)),
            LoopyPlan(DOMAIN, CHAIN, tol=1e-12, max_iters=5000)]


def test_both_engines_implement_the_protocol():
    exact, loopy = engines()
    assert exact.tree is not None and loopy.tree is None
    assert exact.description == "exact"
    assert loopy.description == "approximate (loopy belief propagation, bethe)"
    for engine in (exact, loopy):
        assert engine.domain == DOMAIN
        assert sorted(map(set, engine.cliques), key=sorted) == sorted(map(set, CHAIN), key=sorted)
        assert int(engine.offsets[-1]) == sum(int(np.prod(s)) for s in engine.shapes)
        for clique in CHAIN:
            assert set(engine.cliques[engine.find(clique[::-1])]) == set(clique)
        assert engine.find(("a", "d")) is None
        tables = [np.arange(int(np.prod(s)), dtype=float).reshape(s) for s in engine.shapes]
        for table, back in zip(tables, engine.unpack(engine.pack(tables)), strict=True):
            np.testing.assert_array_equal(table, back)


def test_on_a_tree_the_engines_give_the_same_marginals_and_log_partition():
    rng = np.random.default_rng(4)
    potentials = {c: rng.normal(size=DOMAIN.project(c).shape) for c in CHAIN}
    answers = []
    for engine in engines():
        tables = [np.zeros(shape) for shape in engine.shapes]
        for clique, table in potentials.items():  # in domain order, as the engine's cliques
            tables[engine.find(clique)] = table
        theta = engine.pack(tables)
        flat, log_z = engine.marginals(theta, 250.0)
        tables = {frozenset(c): t for c, t in zip(engine.cliques, engine.unpack(flat),
                                                  strict=True)}
        for table in tables.values():
            assert table.sum() == pytest.approx(250.0)
        answers.append((tables, log_z))
    (exact, exact_z), (loopy, loopy_z) = answers
    assert loopy_z == pytest.approx(exact_z, abs=1e-9)
    for key, table in exact.items():
        np.testing.assert_allclose(loopy[key], table, atol=1e-8)
