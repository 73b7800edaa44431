"""Losses (Private-PGM App. C): values, gradients, Lipschitz constants, L1 vs L2, custom."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from brute_force import joint, marginal
from estimation_helpers import (
    exact_measurements,
    l1_loss,
    l2_loss,
    model_l2_loss,
    random_tree_problem,
    tv,
)

from dpgm import Domain, Measurement, estimate
from dpgm.estimation import CustomLoss, L1Loss, L2Loss, make_loss

DOMAIN = Domain(["c", "a", "b"], [3, 2, 4])  # domain order is not alphabetical


def random_measurements(rng, permuted_std_vectors: bool = True):
    """Identity, dense and sparse queries, scalar and per-answer std, on cliques written
    in and out of domain order; two measurements share a clique."""
    q_ab = (rng.random((5, 8)) < 0.5).astype(float)
    q_c = np.tril(np.ones((3, 3)))
    out = [
        Measurement(("a", "c"), rng.normal(10, 3, 6), 2.0),
        Measurement(("c", "a"), rng.normal(10, 3, 6), rng.uniform(0.5, 3, 6)),
        Measurement(("b", "a"), rng.normal(10, 3, 5), rng.uniform(0.5, 3, 5), query=q_ab),
        Measurement(("a", "b"), rng.normal(10, 3, 5), 1.5, query=sp.csr_matrix(q_ab)),
        Measurement(("c",), rng.normal(30, 3, 3), 0.7, query=q_c),
        Measurement(("b",), rng.normal(10, 3, 4), rng.uniform(0.5, 3, 4)),
    ]
    if permuted_std_vectors:  # identity query, clique out of domain order, std vector
        out.append(Measurement(("b", "c"), rng.normal(10, 3, 12), rng.uniform(0.5, 3, 12)))
    return out


def tables_of(loss, flat):
    """``marginals(clique)`` over the loss's flat vector, in any attribute order."""
    tables = dict(zip(loss.cliques, loss.split(flat)))

    def marginals(clique):
        canonical = DOMAIN.canonical(clique)
        return np.transpose(tables[canonical], [canonical.index(a) for a in clique])

    return marginals


# -- values and gradients ---------------------------------------------------------------


def test_l2_value_matches_a_direct_computation():
    rng = np.random.default_rng(0)
    measurements = random_measurements(rng, permuted_std_vectors=False)
    loss = L2Loss(DOMAIN, measurements)
    assert set(loss.cliques) == {("c", "a"), ("a", "b"), ("c",), ("b",)}  # domain order
    for _ in range(3):
        flat = rng.uniform(0, 20, loss.size)
        expected = l2_loss(tables_of(loss, flat), measurements)
        assert loss.value(flat) == pytest.approx(expected, rel=1e-12)
        assert loss(flat)[0] == pytest.approx(expected, rel=1e-12)


def test_l1_value_matches_a_direct_computation():
    rng = np.random.default_rng(1)
    measurements = random_measurements(rng, permuted_std_vectors=False)
    loss = L1Loss(DOMAIN, measurements)
    for _ in range(3):
        flat = rng.uniform(0, 20, loss.size)
        expected = l1_loss(tables_of(loss, flat), measurements)
        assert loss(flat)[0] == pytest.approx(expected, rel=1e-12)
        assert loss.value(flat) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("kind", ["l2", "l1"])
def test_per_answer_std_follows_a_permuted_identity_measurement(kind):
    rng = np.random.default_rng(2)
    y = rng.normal(10, 3, 12)
    std = rng.uniform(0.5, 3, 12)
    measurements = [Measurement(("b", "c"), y, std)]  # domain order is (c, b)
    loss = make_loss(kind, DOMAIN, measurements)
    flat = rng.uniform(0, 20, loss.size)
    direct = (l2_loss if kind == "l2" else l1_loss)(tables_of(loss, flat), measurements)
    assert loss.value(flat) == pytest.approx(direct, rel=1e-12)


def test_permuted_identity_measurement_with_std_vector_gives_the_same_model():
    """Measuring (b, c) or (c, b) is the same measurement written two ways."""
    rng = np.random.default_rng(3)
    y = rng.normal(20, 8, (4, 3))  # a (b, c) table
    std = rng.uniform(0.5, 5, (4, 3))
    one = estimate(DOMAIN, [Measurement(("b", "c"), y, std)], total=240.0, iters=300)
    two = estimate(DOMAIN, [Measurement(("c", "b"), y.T, std.T)], total=240.0, iters=300)
    np.testing.assert_allclose(one.marginal(("b", "c")), two.marginal(("b", "c")), atol=1e-6)


@pytest.mark.parametrize("kind", ["l2", "l1"])
def test_gradient_matches_finite_differences(kind):
    rng = np.random.default_rng(4)
    measurements = random_measurements(rng)
    loss = make_loss(kind, DOMAIN, measurements)
    flat = rng.uniform(0, 20, loss.size)
    value, grad = loss(flat)
    assert grad.shape == flat.shape
    h = 1e-5 if kind == "l2" else 1e-7  # L1 is linear between kinks: keep off them
    numeric = np.empty_like(flat)
    for i in range(flat.size):
        step = np.zeros_like(flat)
        step[i] = h
        numeric[i] = (loss.value(flat + step) - loss.value(flat - step)) / (2 * h)
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-6)
    if kind == "l2":  # the value is exact for a quadratic along any direction
        d = rng.normal(size=flat.size)
        t = 0.3
        quad = loss.value(flat + t * d)
        assert quad >= value + t * float(grad @ d) - 1e-9  # convexity


def test_l1_gradient_is_the_sign_subgradient():
    measurements = [Measurement(("a",), [3.0, 5.0], [0.5, 2.0])]
    loss = L1Loss(DOMAIN, measurements)
    value, grad = loss(np.array([4.0, 1.0]))
    assert value == pytest.approx(1 / 0.5 + 4 / 2.0)
    np.testing.assert_allclose(grad, [1 / 0.5, -1 / 2.0])


def test_l2_lipschitz_is_the_hand_formula_for_identity_queries():
    """Σ over cliques of the largest per-cell precision Σ_measurements 1/σ²."""
    s1 = np.array([1.0, 2.0, 0.5, 4.0, 1.0, 3.0])
    measurements = [
        Measurement(("c", "a"), np.zeros(6), 2.0),
        Measurement(("c", "a"), np.zeros(6), s1),
        Measurement(("b",), np.zeros(4), 0.25),
        Measurement(("b",), np.zeros(4), [1.0, 2.0, 3.0, 4.0]),
        Measurement(("a", "b"), np.zeros(8), 3.0),
    ]
    expected = max(1 / 2.0**2 + 1 / s**2 for s in s1) + (1 / 0.25**2 + 1 / 1.0**2) + 1 / 3.0**2
    assert L2Loss(DOMAIN, measurements).lipschitz == pytest.approx(expected)
    assert L1Loss(DOMAIN, measurements).lipschitz is None


def test_l2_lipschitz_with_a_query_uses_the_diagonal_of_its_precision():
    q = np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0], [0.0, 1.0, 0.0]])
    std = np.array([1.0, 2.0, 0.5])
    measurements = [Measurement(("c",), np.zeros(3), std, query=q)]
    diag = (q**2 / std[:, None] ** 2).sum(axis=0)
    loss = L2Loss(DOMAIN, measurements)
    assert loss.lipschitz == pytest.approx(diag.max())
    # the Hessian's largest eigenvalue is at least its largest diagonal entry, and the
    # constant bounds the ℓ1-norm curvature: zᵀHz <= K‖z‖₁² for every z
    hessian = q.T @ np.diag(1 / std**2) @ q
    z = np.random.default_rng(0).normal(size=(200, 3))
    assert np.all(np.einsum("ij,jk,ik->i", z, hessian, z) <= loss.lipschitz * np.abs(z).sum(1) ** 2)


def test_targets_are_precision_weighted_identity_measurements():
    measurements = [
        Measurement(("a",), [10.0, 20.0], 1.0),
        Measurement(("a",), [16.0, 14.0], 2.0),
        Measurement(("b",), np.ones(2), 1.0, query=np.ones((2, 4))),
    ]
    loss = L2Loss(DOMAIN, measurements)
    targets = dict(zip(loss.cliques, loss.targets()))
    np.testing.assert_allclose(targets[("a",)], [(10 + 16 / 4) / 1.25, (20 + 14 / 4) / 1.25])
    assert targets[("b",)] is None  # only a non-identity query: no direct estimate


def test_unknown_loss_name_is_refused():
    with pytest.raises(ValueError, match="unknown loss 'l3'"):
        make_loss("l3", DOMAIN, [])
    with pytest.raises(ValueError, match="unknown loss"):
        estimate(DOMAIN, [Measurement(("a",), [1.0, 2.0], 1.0)], loss="huber")


# -- L1 in estimation ---------------------------------------------------------------------


def test_accelerated_refuses_the_l1_loss_clearly():
    measurements = [Measurement(("a",), [10.0, 20.0], 1.0)]
    with pytest.raises(ValueError, match="smooth loss") as info:
        estimate(DOMAIN, measurements, loss="l1", method="accelerated", iters=5)
    assert "mirror_descent" in str(info.value)
    model = estimate(DOMAIN, measurements, loss="l1", iters=5)  # auto: mirror descent
    np.testing.assert_allclose(model.marginal(("a",)), [10.0, 20.0], rtol=1e-6)


def l1_problem(seed):
    domain, cliques, p = random_tree_problem(seed, n_attrs=4)
    return domain, cliques, p, exact_measurements(domain, p, cliques, 1000.0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_l1_on_noiseless_data_recovers_the_marginals(seed):
    domain, cliques, p, measurements = l1_problem(seed)
    model = estimate(domain, measurements, total=1000.0, loss="l1", iters=300)
    for c in cliques:
        assert tv(model.marginal(c), marginal(domain, p, c)) < 1e-2
    assert tv(model.marginal(domain.attrs), p) < 1e-2


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_l1_from_the_uniform_model_recovers_the_marginals(seed):
    domain, cliques, p, measurements = l1_problem(seed)
    model = estimate(domain, measurements, total=1000.0, loss="l1", init="uniform", iters=300)
    assert tv(model.marginal(domain.attrs), p) < 1e-2


def test_l1_line_search_does_not_freeze_on_one_clique():
    """Minimal case: one measured 2x3 table, no noise; the L1 optimum (loss 0) is the table."""
    domain = Domain(["a", "b"], [2, 3])
    y = np.array([[300.0, 100, 50], [250, 200, 100]])
    seen: list[float] = []
    estimate(
        domain,
        [Measurement(("a", "b"), y, 1.0)],
        total=1000.0,
        loss="l1",
        init="uniform",
        iters=500,
        callback=lambda t, v: seen.append(v),
    )
    assert seen[-1] < 1.0  # a line search on L1 used to freeze near 61


def outlier_problem(seed):
    """Each clique measured three times with small noise; one measurement has two cells
    off by hundreds (gross outliers)."""
    rng = np.random.default_rng(seed)
    domain = Domain(["a", "b", "c", "d"], [3, 2, 4, 3])
    cliques = [("a", "b"), ("b", "c"), ("c", "d")]
    p, _ = joint(domain, {c: rng.normal(size=domain.project(c).shape) for c in cliques})
    measurements = []
    for c in cliques:
        exact = 1000.0 * marginal(domain, p, c).ravel()
        for _ in range(3):
            measurements.append(Measurement(c, exact + rng.normal(0, 2, exact.size), 2.0))
    bad = measurements[3].values.copy()
    bad[[0, 3]] += [400.0, -300.0]
    measurements[3] = Measurement(measurements[3].clique, bad, 2.0)
    return domain, p, measurements


def test_l1_is_closer_to_the_truth_than_l2_with_outliers():
    for seed in range(4):
        domain, p, measurements = outlier_problem(seed)
        errors = {}
        for loss in ("l1", "l2"):
            model = estimate(domain, measurements, total=1000.0, loss=loss, iters=500)
            errors[loss] = tv(model.marginal(domain.attrs), p)
        assert errors["l1"] < errors["l2"], (seed, errors)


def test_l2_estimate_is_pulled_by_outliers_but_l1_optimum_is_not():
    """Guards the outlier test's premise: the L1 objective prefers the truth over the L2
    solution (so the test above is about the L1 solver, not the set-up)."""
    domain, p, measurements = outlier_problem(2)
    l2_model = estimate(domain, measurements, total=1000.0, iters=300)
    truth_l1 = l1_loss(lambda c: 1000.0 * marginal(domain, p, c), measurements)
    l2_l1 = l1_loss(l2_model.marginal, measurements)
    assert truth_l1 < l2_l1
    assert tv(l2_model.marginal(domain.attrs), p) > 0.05


# -- custom losses --------------------------------------------------------------------------


def hand_l2(measurements, order):
    """L2 written by hand over the cliques in ``order`` (attribute orders as given)."""

    def function(tables):
        value, grads = 0.0, []
        for clique, table in zip(order, tables):
            grad = np.zeros_like(table)
            for m in measurements:
                if set(m.clique) != set(clique):
                    continue
                mine = np.transpose(table, [clique.index(a) for a in m.clique])
                r = (mine.ravel() - m.values) / m.std**2
                value += 0.5 * float(np.sum((mine.ravel() - m.values) ** 2 / m.std**2))
                back = r.reshape(mine.shape)
                grad += np.transpose(back, [m.clique.index(a) for a in clique])
            grads.append(grad)
        return value, grads

    return function


@pytest.mark.parametrize("method", ["accelerated", "mirror_descent"])
def test_custom_l2_with_permuted_cliques_matches_the_built_in(method):
    domain, cliques, p = random_tree_problem(7, n_attrs=4)
    rng = np.random.default_rng(7)
    measurements = [
        Measurement(c, 500 * marginal(domain, p, c).ravel() + rng.normal(0, 5, domain.size(c)), 5)
        for c in cliques
    ]
    order = [tuple(reversed(c)) for c in reversed(cliques)]  # other clique and attribute order
    builtin = L2Loss(domain, measurements)
    custom = CustomLoss(domain, order, hand_l2(measurements, order), lipschitz=builtin.lipschitz)
    assert sorted(custom.cliques) == sorted(builtin.cliques)
    kw = dict(total=500.0, method=method, init="uniform", iters=400)
    a = estimate(domain, measurements, loss="l2", **kw)
    b = estimate(domain, measurements, loss=custom, **kw)
    for c in cliques:
        np.testing.assert_allclose(a.marginal(c), b.marginal(c), atol=1e-3 * 500)
    assert model_l2_loss(b, measurements) == pytest.approx(model_l2_loss(a, measurements), rel=1e-3)


def test_custom_loss_value_and_gradient_agree_with_the_built_in():
    rng = np.random.default_rng(8)
    measurements = random_measurements(rng, permuted_std_vectors=False)[:2] + [
        Measurement(("b",), rng.normal(10, 3, 4), rng.uniform(0.5, 3, 4))
    ]
    order = [("b",), ("a", "c")]  # ("a", "c") is out of domain order
    builtin = L2Loss(DOMAIN, measurements)
    custom = CustomLoss(DOMAIN, order, hand_l2(measurements, order))
    # the flat vectors line up clique by clique (both in domain order)
    flat_b = rng.uniform(0, 20, builtin.size)
    tables = dict(zip(builtin.cliques, builtin.split(flat_b)))
    flat_c = np.concatenate([tables[c].ravel() for c in custom.cliques])
    v1, g1 = builtin(flat_b)
    v2, g2 = custom(flat_c)
    assert v2 == pytest.approx(v1, rel=1e-12)
    grads = dict(zip(custom.cliques, custom.split(g2)))
    np.testing.assert_allclose(np.concatenate([grads[c].ravel() for c in builtin.cliques]), g1)


def test_custom_loss_without_lipschitz_needs_mirror_descent():
    measurements = [Measurement(("a", "b"), np.arange(8.0) + 1, 1.0)]
    custom = CustomLoss(DOMAIN, [("a", "b")], hand_l2(measurements, [("a", "b")]))
    with pytest.raises(ValueError, match="Lipschitz"):
        estimate(DOMAIN, measurements, loss=custom, method="accelerated", iters=3)
    model = estimate(DOMAIN, measurements, loss=custom, total=36.0, iters=300)  # auto: MD
    np.testing.assert_allclose(model.marginal(("a", "b")).ravel(), np.arange(8.0) + 1, atol=1e-2)


def test_custom_loss_returning_the_wrong_number_of_gradients_is_refused():
    custom = CustomLoss(DOMAIN, [("a",), ("b",)], lambda tables: (0.0, [np.zeros(2)]))
    with pytest.raises(ValueError, match="returned 1 gradients for 2 cliques"):
        estimate(DOMAIN, [], loss=custom, total=10.0, method="mirror_descent", iters=2)
