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
