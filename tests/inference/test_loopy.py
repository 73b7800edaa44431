"""Loopy BP: exact on trees, the Bethe approximation on loops, warm starts, reports."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest
from brute_force import joint, marginal

from dpgm import Domain, MarkovRandomField
from dpgm.errors import ParameterError
from dpgm.inference.loopy import LoopyPlan


def potentials_for(plan: LoopyPlan, rng, scale: float = 1.0) -> list[np.ndarray]:
    return [scale * rng.normal(size=s) for s in plan.shapes]


def against_brute_force(domain, cliques, rng, scale):
    """Loopy BP's beliefs and log Z, the exact marginals and log Z, on random potentials."""
    plan = LoopyPlan(domain, cliques)
    thetas = potentials_for(plan, rng, scale)
    beliefs, log_z = plan.calibrate(thetas)
    assert plan.result.converged
    p, exact_log_z = joint(domain, dict(zip(plan.cliques, thetas)))
    exact = [marginal(domain, p, clique) for clique in plan.cliques]
    return beliefs, log_z, exact, exact_log_z


TREES = [
    (Domain(list("abcd"), [2, 3, 2, 4]), [("a", "b"), ("b", "c"), ("c", "d")]),
    (Domain(list("abcdef"), [2, 3, 2, 2, 3, 2]), [("a", "b", "c"), ("c", "d"), ("d", "e", "f")]),
    (Domain(list("abcde"), [3, 2, 2, 3, 2]), [("a", "b"), ("a", "c"), ("a", "d"), ("e",)]),
]


@pytest.mark.parametrize(("domain", "cliques"), TREES)
@pytest.mark.parametrize("seed", range(3))
def test_exact_on_trees(domain, cliques, seed):
    beliefs, log_z, exact, exact_log_z = against_brute_force(
        domain, cliques, np.random.default_rng(seed), 1.5)
    for belief, truth in zip(beliefs, exact):
        np.testing.assert_allclose(belief, truth, atol=1e-9)
    assert log_z == pytest.approx(exact_log_z, abs=1e-9)


def test_bethe_accuracy_on_small_loops():
    """A 4-cycle and a 5-node graph with two loops, weak couplings: close to exact."""
    rng = np.random.default_rng(7)
    for cliques in ([("a", "b"), ("b", "c"), ("c", "d"), ("a", "d")],
                    [("a", "b"), ("b", "c"), ("c", "d"), ("a", "d"), ("b", "e"), ("d", "e")]):
        names = sorted({a for c in cliques for a in c})
        domain = Domain(names, [2, 3, 2, 3, 2][: len(names)])
        beliefs, log_z, exact, exact_log_z = against_brute_force(domain, cliques, rng, 0.3)
        for belief, truth in zip(beliefs, exact):
            assert 0.5 * np.abs(belief - truth).sum() < 0.01
            assert not np.allclose(belief, truth, atol=1e-9)  # approximate
        assert abs(log_z - exact_log_z) < 0.01


def test_warm_start_reuses_the_fixed_point_and_reset_forgets_it():
    domain = Domain(list("abcd"), [2, 2, 2, 2])
    plan = LoopyPlan(domain, [("a", "b"), ("b", "c"), ("c", "d"), ("a", "d")])
    thetas = potentials_for(plan, np.random.default_rng(0), 0.5)
    plan.calibrate(thetas)
    cold = plan.result.iterations
    plan.calibrate(thetas)
    assert plan.result.converged and plan.result.iterations <= 2 < cold
    plan.reset()
    plan.calibrate(thetas)
    assert plan.result.iterations == cold


def test_non_convergence_is_reported():
    domain = Domain(list("abc"), [2, 2, 2])
    plan = LoopyPlan(domain, [("a", "b"), ("b", "c"), ("a", "c")], damping=0.0, max_iters=3)
    plan.calibrate(potentials_for(plan, np.random.default_rng(1), 3.0))
    assert not plan.result.converged and plan.result.iterations == 3
    assert plan.result.change > plan.tol


def test_layout_marginals_and_cliques():
    domain = Domain(list("abcd"), [2, 3, 2, 2])
    plan = LoopyPlan(domain, [("a", "b"), ("b",), ("b", "a"), ("c", "b")])
    # (b,) and the repeated (b, a) are absorbed; d, in no clique, gets a factor of its own
    assert plan.cliques == [("a", "b"), ("b", "c"), ("d",)]
    assert plan.find(("b",)) == 0 and plan.find(("d",)) == 2 and plan.find(("a", "d")) is None
    flat, log_z = plan.marginals(np.zeros(int(plan.offsets[-1])), 100.0)
    for table in plan.unpack(flat):
        assert table.sum() == pytest.approx(100.0)
        np.testing.assert_allclose(table, 100.0 / table.size)
    assert log_z == pytest.approx(np.log(2 * 3 * 2 * 2))
    with pytest.raises(ParameterError, match="one log-potential table per clique"):
        plan.calibrate([np.zeros((2, 3))])
    with pytest.raises(ParameterError, match="damping"):
        LoopyPlan(domain, [("a", "b")], damping=1.0)


def test_structural_zeros_stay_zero():
    domain = Domain(list("abc"), [2, 2, 2])
    plan = LoopyPlan(domain, [("a", "b"), ("b", "c")])
    zero = np.zeros((2, 2))
    zero[1, 1] = -np.inf
    beliefs, _ = plan.calibrate([zero, np.zeros((2, 2))])
    assert plan.result.converged and beliefs[0][1, 1] == 0.0
    np.testing.assert_allclose(beliefs[0], [[1 / 3, 1 / 3], [1 / 3, 0.0]], atol=1e-12)


def test_convex_counting_has_one_fixed_point_with_consistent_beliefs():
    domain = Domain(list("abcd"), [2, 3, 2, 3])
    rng = np.random.default_rng(5)
    cliques = [("a", "b"), ("b", "c"), ("c", "d"), ("a", "d"), ("a", "c")]
    thetas = [2.0 * rng.normal(size=domain.project(c).shape) for c in cliques]
    first = LoopyPlan(domain, cliques, counting="convex")
    beliefs, _ = first.calibrate(thetas)
    assert first.result.converged
    # a different start (messages from other potentials) reaches the same beliefs
    second = LoopyPlan(domain, cliques, counting="convex")
    second.calibrate([-t for t in thetas])
    again, _ = second.calibrate(thetas)
    for one, two in zip(beliefs, again):
        np.testing.assert_allclose(one, two, atol=1e-7)
    # the cliques agree on every shared attribute
    for (i, c), (j, d) in combinations(list(enumerate(first.cliques)), 2):
        for a in set(c) & set(d):
            left = beliefs[i].sum(axis=tuple(k for k, x in enumerate(c) if x != a))
            right = beliefs[j].sum(axis=tuple(k for k, x in enumerate(d) if x != a))
            np.testing.assert_allclose(left, right, atol=1e-7)


def test_the_completion_is_exact_inside_a_tree_and_keeps_the_beliefs():
    domain = Domain(list("abcde"), [2, 3, 2, 2, 3])
    rng = np.random.default_rng(6)
    chain = [("a", "b"), ("b", "c"), ("c", "d"), ("d", "e")]
    model = MarkovRandomField(
        domain, {c: rng.normal(size=domain.project(c).shape) for c in chain}, total=1.0)
    plan = LoopyPlan(domain, chain)
    beliefs, _ = plan.calibrate([model.potentials[c].values for c in plan.cliques])
    for attrs in [("a", "b", "c"), ("d", "c", "b"), ("b", "c", "d", "e")]:
        np.testing.assert_allclose(plan.completion(attrs, beliefs), model.marginal(attrs),
                                   atol=1e-8)
    # across a gap the completion is the maximum-entropy table: a and c independent given
    # nothing else, with their beliefs as marginals
    gap = plan.completion(("a", "c"), beliefs)
    np.testing.assert_allclose(gap, np.outer(model.marginal(("a",)), model.marginal(("c",))),
                               atol=1e-8)
