"""Convex generalised BP on the region graph closed under intersection."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest

from dpgm import Domain
from dpgm.inference.loopy import LoopyPlan
from dpgm.inference.region_graph import RegionGraph, intersection_closure

DOMAIN = Domain(list("abcdef"), [2, 3, 2, 2, 3, 2])
# overlapping triples (sharing pairs) plus pairs closing loops
CLIQUES = [("a", "b", "c"), ("b", "c", "d"), ("c", "d", "e"), ("a", "e"), ("b", "f"),
           ("e", "f")]


def test_the_regions_are_the_cliques_closed_under_intersection_with_direct_edges():
    regions = intersection_closure(DOMAIN, CLIQUES)
    assert regions[: len(CLIQUES)] == CLIQUES
    assert {("b", "c"), ("c", "d"), ("c",), ("a",), ("e",), ("b",), ("f",)} <= set(regions)
    assert len(regions) == len(set(map(frozenset, regions)))
    graph = RegionGraph(DOMAIN, CLIQUES)
    names = graph.regions
    edges = {(names[p], names[c]) for p, c in graph.edges}
    assert (("a", "b", "c"), ("b", "c")) in edges
    assert (("b", "c"), ("c",)) in edges
    assert (("a", "b", "c"), ("c",)) not in edges  # ("b", "c") lies between
    for p, c in graph.edges:
        assert set(names[c]) < set(names[p])


def calibrated(thetas, **options):
    plan = LoopyPlan(DOMAIN, CLIQUES, counting="convex", max_iters=5000, tol=1e-12, **options)
    beliefs, log_z = plan.calibrate(thetas)
    assert plan.result.converged
    return plan, beliefs, log_z


def random_thetas(seed: int, scale: float = 1.5):
    rng = np.random.default_rng(seed)
    return [scale * rng.normal(size=DOMAIN.project(c).shape) for c in CLIQUES]


@pytest.mark.parametrize("seed", range(3))
def test_overlapping_cliques_agree_on_their_whole_overlap(seed):
    plan, beliefs, _ = calibrated(random_thetas(seed))
    for (i, c), (j, d) in combinations(list(enumerate(plan.cliques)), 2):
        common = [a for a in c if a in d]
        if not common:
            continue
        left = beliefs[i].sum(axis=tuple(k for k, x in enumerate(c) if x not in common))
        right = beliefs[j].sum(axis=tuple(k for k, x in enumerate(d) if x not in common))
        np.testing.assert_allclose(left, right, atol=1e-9)  # pairs too, not just attributes


@pytest.mark.parametrize("seed", range(2))
def test_log_z_is_the_variational_optimum_its_gradient_is_the_beliefs(seed):
    """At the maximiser of the concave free energy, ∂ log Z / ∂θ = b (envelope theorem):
    finite differences of the returned log Z equal the returned beliefs."""
    thetas = random_thetas(seed)
    plan, beliefs, log_z = calibrated(thetas)
    rng = np.random.default_rng(seed + 10)
    for _ in range(6):
        k = int(rng.integers(len(thetas)))
        cell = tuple(int(rng.integers(n)) for n in thetas[k].shape)
        h = 1e-5
        values = []
        for sign in (1.0, -1.0):
            moved = [t.copy() for t in thetas]
            moved[k][cell] += sign * h
            values.append(calibrated(moved)[2])
        assert (values[0] - values[1]) / (2 * h) == pytest.approx(beliefs[k][cell], abs=1e-6)
    assert np.isfinite(log_z)


def test_one_fixed_point_from_any_start_and_warm_starts_are_short():
    thetas = random_thetas(7)
    _, beliefs, _ = calibrated(thetas)
    plan = LoopyPlan(DOMAIN, CLIQUES, counting="convex", max_iters=5000, tol=1e-12)
    plan.calibrate([-t for t in thetas])
    again, _ = plan.calibrate(thetas)
    for one, two in zip(beliefs, again):
        np.testing.assert_allclose(one, two, atol=1e-9)
    nudge = np.random.default_rng(8)
    nudged = [t + 1e-2 * nudge.normal(size=t.shape) for t in thetas]
    cold = LoopyPlan(DOMAIN, CLIQUES, counting="convex", max_iters=5000, tol=1e-10)
    cold.calibrate(nudged)
    plan.tol = 1e-10
    plan.calibrate(nudged)
    assert plan.result.iterations < cold.result.iterations


@pytest.mark.parametrize("cliques", [[("a", "b"), ("b", "c"), ("a", "c")],
                                     [("a", "b", "c"), ("b", "c", "d"), ("a", "d")]])
def test_structural_zeros_stay_zero_and_propagate_without_nans(cliques):
    """θ_ab = -inf except at (a, b) = (0, 1): a = 0 and b = 1 everywhere, and the cells
    these rule out are exactly 0 in every region (messages of -inf meet -inf)."""
    domain = Domain(list("abcd"), [2, 2, 2, 2])
    plan = LoopyPlan(domain, cliques, counting="convex", max_iters=3000, tol=1e-10)
    thetas = [np.random.default_rng(9).normal(size=s) for s in plan.shapes]
    first = thetas[0]
    mask = np.full(first.shape, -np.inf)
    mask[0, 1] = 0.0  # (a, b) = (0, 1), whatever else the first clique holds
    thetas[0] = first + mask
    beliefs, log_z = plan.calibrate(thetas)
    assert plan.result.converged and np.isfinite(log_z)
    for clique, belief in zip(plan.cliques, beliefs):
        assert np.all(np.isfinite(belief)) and belief.sum() == pytest.approx(1.0)
        for attr, value in (("a", 0), ("b", 1)):
            if attr in clique:
                axis = clique.index(attr)
                other = np.take(belief, 1 - value, axis=axis)
                assert np.all(other == 0.0)
