"""Private-PGM estimation with loopy belief propagation as the marginal oracle."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest

from dpgm import Domain, MarkovRandomField
from dpgm.errors import ModelTooLargeError, ParameterError
from dpgm.estimation import MarginalOracle, estimate, fit_targets, make_loss
from dpgm.inference import JunctionTree, LoopyPlan, MessagePlan
from dpgm.measurement import Measurement


def exact_measurements(model: MarkovRandomField, cliques) -> list[Measurement]:
    return [Measurement(c, model.marginal(c).ravel(), 1.0) for c in cliques]


def test_on_a_tree_loopy_estimation_finds_the_exact_estimate():
    domain = Domain(list("abcd"), [2, 3, 2, 3])
    rng = np.random.default_rng(0)
    chain = [("a", "b"), ("b", "c"), ("c", "d")]
    truth = MarkovRandomField(domain, {c: rng.normal(size=domain.project(c).shape)
                                       for c in chain}, total=1000.0)
    noisy = [Measurement(m.clique, m.values + rng.normal(0, 5, m.values.size), 5.0)
             for m in exact_measurements(truth, chain)]
    exact = estimate(domain, noisy, total=1000.0, iters=400)
    loopy = estimate(domain, noisy, total=1000.0, iters=400, inference="loopy")
    assert loopy.approximate and not exact.approximate
    for clique in chain:
        np.testing.assert_allclose(loopy.marginal(clique), exact.marginal(clique), atol=1e-3)


def test_the_oracle_runs_on_any_engine():
    """MarginalOracle asks only the Engine protocol: on a chain, where loopy BP is exact,
    both engines give the loss the same tables."""
    domain = Domain(list("abcd"), [2, 3, 2, 3])
    chain = [("a", "b"), ("b", "c"), ("c", "d")]
    truth = MarkovRandomField(domain, {c: np.ones(domain.project(c).shape) for c in chain})
    loss = make_loss("l2", domain, exact_measurements(truth, chain))
    tree = JunctionTree.build(domain, chain)
    oracles = [MarginalOracle(MessagePlan(tree), loss, 10.0),
               MarginalOracle(LoopyPlan(domain, chain, tol=1e-12), loss, 10.0)]
    assert oracles[0].tree is tree and oracles[1].tree is None
    values = np.random.default_rng(0).normal(size=loss.size)  # θ on the loss cliques
    exact, loopy = (oracle(oracle.lift(values)) for oracle in oracles)
    np.testing.assert_allclose(loopy, exact, atol=1e-8)
    with pytest.raises(ParameterError, match="exact engine"):
        fit_targets(oracles[1])


def test_loopy_estimation_runs_where_the_junction_tree_is_refused():
    domain = Domain([f"x{i}" for i in range(6)], [2] * 6)
    rng = np.random.default_rng(1)
    ring = [(f"x{i}", f"x{(i + 1) % 6}") for i in range(6)]
    truth = MarkovRandomField(domain, {c: 0.8 * rng.normal(size=(2, 2)) for c in ring},
                              total=1000.0)
    pairs = list(combinations(domain.attrs, 2))
    measured = exact_measurements(truth, pairs)
    with pytest.raises(ModelTooLargeError, match="inference='loopy'"):
        estimate(domain, measured, total=1000.0, max_cells=32)
    model = estimate(domain, measured, total=1000.0, iters=100, max_cells=32,
                     inference="loopy")
    assert model.approximate and "approximate (loopy" in repr(model)
    # the measured pairs are fitted closely (noise-free measurements, a consistent target)
    errors = [0.5 * np.abs(model.marginal(c) - truth.marginal(c)).sum() / 1000.0
              for c in pairs]
    assert max(errors) < 0.005
    # an answer across cliques where the exact tree is refused: the maximum-entropy
    # completion of the pair beliefs, approximate; refused where that table is too large
    import dpgm.models.markov_random_field as mrf_module

    small, completion = mrf_module.EXACT_CELLS, mrf_module.COMPLETION_CELLS
    try:
        mrf_module.EXACT_CELLS = 10
        triple = model.marginal(("x0", "x1", "x2"))
        assert triple.sum() == pytest.approx(1000.0)
        assert 0.5 * np.abs(triple - truth.marginal(("x0", "x1", "x2"))).sum() / 1000 < 0.06
        mrf_module.EXACT_CELLS, mrf_module.COMPLETION_CELLS = 10, 4
        with pytest.raises(ModelTooLargeError, match="completes tables of up to 4 cells"):
            model.marginal(("x0", "x1", "x2"))
    finally:
        mrf_module.EXACT_CELLS, mrf_module.COMPLETION_CELLS = small, completion


def test_convex_inference_fits_the_measured_pairs_of_a_dense_graph():
    domain = Domain([f"x{i}" for i in range(8)], [2, 3] * 4)
    rng = np.random.default_rng(2)
    ring = [(f"x{i}", f"x{(i + 1) % 8}") for i in range(8)]
    truth = MarkovRandomField(
        domain, {c: 0.8 * rng.normal(size=domain.project(c).shape) for c in ring}, total=1000.0)
    pairs = list(combinations(domain.attrs, 2))
    model = estimate(domain, exact_measurements(truth, pairs), total=1000.0, iters=300,
                     inference="convex")
    assert model.approximate and model.loopy.counting == "convex"
    errors = [0.5 * np.abs(model.marginal(c) - truth.marginal(c)).sum() / 1000.0
              for c in pairs]
    assert max(errors) < 0.01


def test_loopy_inference_refuses_a_warm_start_and_unknown_engines():
    domain = Domain(["a", "b"], [2, 2])
    measured = [Measurement(("a", "b"), np.full(4, 25.0), 1.0)]
    start = estimate(domain, measured, total=100.0, iters=5)
    with pytest.raises(ParameterError, match="warm_start needs exact inference"):
        estimate(domain, measured, total=100.0, warm_start=start, inference="loopy")
    with pytest.raises(ParameterError, match="inference must be one of"):
        estimate(domain, measured, total=100.0, inference="gibbs")
