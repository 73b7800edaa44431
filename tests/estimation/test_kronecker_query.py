"""KroneckerQuery measurements: products, losses, totals and estimation."""

import numpy as np
import pytest

from dpgm import Domain, Measurement, estimate
from dpgm.estimation.losses import L2Loss
from dpgm.estimation.total import total_estimates
from dpgm.measurement import KroneckerQuery

RNG = np.random.default_rng(0)
DOMAIN = Domain.from_dict({"a": 3, "b": 4, "c": 2})


def _dense(query):
    matrix = np.ones((1, 1))
    for f in query.factors:
        matrix = np.kron(matrix, f)
    return matrix


def test_products_match_the_dense_matrix():
    query = KroneckerQuery([RNG.random((5, 4)), RNG.random((2, 3)), RNG.random((3, 2))])
    dense = _dense(query)
    x, y = RNG.random(24), RNG.random(30)
    assert query.shape == dense.shape
    assert np.allclose(query @ x, dense @ x)
    assert np.allclose(query.T @ y, dense.T @ y)
    assert query.norm(1) == pytest.approx(np.abs(dense).sum(axis=0).max())
    assert query.norm(2) == pytest.approx(np.sqrt((dense**2).sum(axis=0).max()))


def test_loss_and_total_agree_with_the_dense_query_in_any_attribute_order():
    # clique (c, b) is not in domain order: the loss must permute answers consistently
    query = KroneckerQuery([RNG.random((3, 2)), np.vstack([np.eye(4), RNG.random((1, 4))])])
    table = RNG.random((2, 4)) * 50
    values = query @ table.ravel() + RNG.normal(size=query.shape[0])
    kron = Measurement(("c", "b"), values, 2.0, query)
    dense = Measurement(("c", "b"), values, 2.0, _dense(query))
    kron_loss, dense_loss = L2Loss(DOMAIN, [kron]), L2Loss(DOMAIN, [dense])
    point = RNG.random(kron_loss.size) * 10
    (v1, g1), (v2, g2) = kron_loss(point), dense_loss(point)
    assert v1 == pytest.approx(v2) and np.allclose(g1, g2)
    assert kron_loss.value(point) == pytest.approx(v2)
    other = RNG.random(kron_loss.size)
    assert kron_loss.divergence(point, other, kron_loss(other)[1]) == pytest.approx(
        dense_loss.divergence(point, other, dense_loss(other)[1])
    )
    assert kron_loss.lipschitz == pytest.approx(dense_loss.lipschitz)
    (kron_total,), (dense_total,) = total_estimates([kron]), total_estimates([dense])
    assert kron_total == pytest.approx(dense_total)


def test_estimation_recovers_a_marginal_from_a_noiseless_kronecker_strategy():
    prefix = np.tril(np.ones((4, 4)))
    truth = RNG.random((3, 4)) * 100
    query = KroneckerQuery([np.eye(3), prefix / 4])
    model = estimate(
        DOMAIN, [Measurement(("a", "b"), query @ truth.ravel(), 1.0, query)], iters=2000
    )
    assert np.allclose(model.marginal(("a", "b")), truth, atol=0.02 * truth.max())


def _helmert(n):
    from dpgm.residuals import residual_basis
    return residual_basis(n)


@pytest.mark.parametrize("n", [40, 700])  # 700: the check runs over several blocks of rows
def test_the_gram_matrix_of_a_residual_basis_or_a_sum_is_held_as_two_numbers(n):
    from dpgm.measurement import IdentityPlusOnes, gram_matrix
    for factor, alpha, beta in [(_helmert(n), 1.0, -1.0 / n), (np.ones((1, n)), 0.0, 1.0)]:
        found = gram_matrix(factor)
        assert isinstance(found, IdentityPlusOnes)
        assert (found.alpha, found.beta) == (pytest.approx(alpha), pytest.approx(beta, abs=1e-15))
        np.testing.assert_allclose(np.asarray(found), factor.T @ factor, atol=1e-12)
    # not αI + β11ᵀ, also where only the last block of rows differs or is not a number:
    # the dense product
    unknown = np.array(_helmert(n))
    unknown[-1, -1] = np.nan
    for factor in [RNG.random((5, n)), np.vstack([_helmert(n), np.eye(n)[-1] * 1e-6]),
                   unknown]:
        found = gram_matrix(factor)
        assert isinstance(found, np.ndarray)
        np.testing.assert_allclose(found, factor.T @ factor)
    assert KroneckerQuery([np.where(np.eye(n) > 0, np.nan, 1.0)])._scaled == [None]


def test_a_kronecker_query_with_an_identity_plus_ones_factor_matches_the_dense_matrix():
    from dpgm.measurement import IdentityPlusOnes
    implicit = IdentityPlusOnes(9, 2.0, -0.5)
    dense_factor = np.asarray(implicit)
    assert np.allclose(dense_factor, 2.0 * np.eye(9) - 0.5)
    other = RNG.random((3, 4))
    query = KroneckerQuery([other, implicit])
    explicit = KroneckerQuery([other, dense_factor])
    x, y = RNG.random(36), RNG.random(27)
    assert np.allclose(query @ x, explicit @ x)
    assert np.allclose(query.T @ y, explicit.T @ y)
    assert np.allclose(query.dense(), explicit.dense())
    assert np.allclose(query.squared().dense(), explicit.squared().dense())
    assert query.norm(1) == pytest.approx(explicit.norm(1))
    assert query.norm(2) == pytest.approx(explicit.norm(2))
    swapped, rows = query.transpose_axes([1, 0])
    assert np.allclose(swapped.dense(), explicit.transpose_axes([1, 0])[0].dense())


def test_the_loss_on_residual_measurements_matches_the_dense_query_and_holds_no_gram_matrix():
    import tracemalloc
    n = 1200
    domain = Domain.from_dict({"a": n, "b": 3})
    basis_a, basis_b = _helmert(n), _helmert(3)
    table = RNG.random((n, 3)) * 5
    measurements = [
        Measurement(("a", "b"), KroneckerQuery([basis_a, basis_b]) @ table.ravel(), 2.0,
                    KroneckerQuery([basis_a, basis_b])),
        Measurement(("a", "b"), KroneckerQuery([basis_a, np.ones((1, 3))]) @ table.ravel(),
                    1.5, KroneckerQuery([basis_a, np.ones((1, 3))])),
        Measurement(("a", "b"), np.array([table.sum() + 3.0]), 4.0,
                    KroneckerQuery([np.ones((1, n)), np.ones((1, 3))])),
    ]
    tracemalloc.start()
    loss = L2Loss(domain, measurements)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    # one n x n at a time (the basis squared, for the step size); the Gram matrix and the
    # checks' copies are not made (they held 5 n² floats at once, the basis aside)
    assert peak < 1.5 * 8 * n * n
    point = RNG.random(loss.size) * 5
    value, grad = loss(point)
    expected_value, expected_grad = 0.0, np.zeros(loss.size)
    for m in measurements:
        residual = (m.query @ point - m.values) / m.std**2
        expected_value += 0.5 * float(np.dot(residual * m.std**2, residual))
        expected_grad += m.query.T @ residual
    assert value == pytest.approx(expected_value)
    np.testing.assert_allclose(grad, expected_grad, rtol=1e-9, atol=1e-9)
    assert loss.value(point) == pytest.approx(expected_value)
    other = RNG.random(loss.size) * 5
    change = point - other
    expected_divergence = sum(0.5 * float(np.sum((m.query @ change) ** 2)) / m.std**2
                              for m in measurements)
    assert loss.divergence(point, other, loss(other)[1]) == pytest.approx(expected_divergence)
