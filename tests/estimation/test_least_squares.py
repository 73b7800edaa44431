"""Local and global least squares (HDMM's estimators) against dense NumPy lstsq."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse

from dpgm import Domain, DpgmError, Measurement
from dpgm.errors import ModelTooLargeError
from dpgm.estimation import KroneckerQuery
from dpgm.estimation.least_squares import (
    full_table_operator,
    global_least_squares,
    local_least_squares,
)

DOMAIN = Domain(["a", "b", "c"], [2, 3, 4])


def _weighted_lstsq(matrix: np.ndarray, values: np.ndarray, std) -> np.ndarray:
    w = np.broadcast_to(1.0 / np.asarray(std, dtype=np.float64), values.shape)
    return np.linalg.lstsq(matrix * w[:, None], values * w, rcond=None)[0]


def _marginalisation(domain: Domain, clique: tuple[str, ...]) -> np.ndarray:
    """Dense 0/1 matrix taking the full table (domain order) to the clique's marginal
    (clique order), built cell by cell, independently of the code under test."""
    cells = domain.size()
    coords = np.unravel_index(np.arange(cells), domain.shape)
    axes = domain.axes(clique)
    rows = np.ravel_multi_index([coords[i] for i in axes], [domain.shape[i] for i in axes])
    matrix = np.zeros((domain.size(clique), cells))
    matrix[rows, np.arange(cells)] = 1.0
    return matrix


def _dense(query, cells: int) -> np.ndarray:
    if query is None:
        return np.eye(cells)
    if isinstance(query, KroneckerQuery):
        out = np.ones((1, 1))
        for f in query.factors:
            out = np.kron(out, f)
        return out
    return query.toarray() if sparse.issparse(query) else np.asarray(query)


# -- local least squares -----------------------------------------------------------------
def test_local_kronecker_matches_dense_lstsq():
    rng = np.random.default_rng(0)
    factors = [rng.random((5, 3)), rng.random((4, 4)), rng.random((6, 2))]
    query = KroneckerQuery(factors)
    truth = rng.normal(size=(3, 4, 2))
    values = query @ truth.ravel() + rng.normal(size=query.shape[0])
    m = Measurement(("b", "c", "a"), values, 2.0, query)
    found = local_least_squares(m)  # the shape comes from the factors
    expected = _weighted_lstsq(np.kron(np.kron(factors[0], factors[1]), factors[2]), values, 2.0)
    assert found.shape == (3, 4, 2)
    np.testing.assert_allclose(found.ravel(), expected, atol=1e-10)
    # with the domain as well: same answer
    np.testing.assert_allclose(local_least_squares(m, DOMAIN), found, atol=1e-12)


def test_local_kronecker_rank_deficient_gives_minimum_norm():
    rng = np.random.default_rng(1)
    low_rank = rng.random((5, 1)) @ rng.random((1, 3))  # rank 1 of 3 columns
    factors = [low_rank, rng.random((4, 2))]
    query = KroneckerQuery(factors)
    values = rng.normal(size=query.shape[0])
    found = local_least_squares(Measurement(("b", "a"), values, 1.0, query))
    expected = np.linalg.lstsq(np.kron(*factors), values, rcond=None)[0]
    np.testing.assert_allclose(found.ravel(), expected, atol=1e-9)


def test_local_kronecker_with_unequal_noise_is_weighted():
    rng = np.random.default_rng(2)
    factors = [rng.random((4, 3)), rng.random((3, 2))]
    query = KroneckerQuery(factors)
    values = rng.normal(size=12)
    std = rng.uniform(0.5, 3.0, size=12)
    found = local_least_squares(Measurement(("b", "a"), values, std, query))
    expected = _weighted_lstsq(np.kron(*factors), values, std)
    np.testing.assert_allclose(found.ravel(), expected, atol=1e-8)
    ordinary = np.linalg.lstsq(np.kron(*factors), values, rcond=None)[0]
    assert not np.allclose(found.ravel(), ordinary, atol=1e-3)  # the weights matter


def test_local_identity_dense_and_sparse():
    rng = np.random.default_rng(3)
    values = rng.normal(size=12)
    identity = Measurement(("c", "b"), values, 1.0)
    np.testing.assert_array_equal(local_least_squares(identity, DOMAIN), values.reshape(4, 3))

    dense = rng.random((9, 6))
    y = rng.normal(size=9)
    std = rng.uniform(1, 2, size=9)
    found = local_least_squares(Measurement(("a", "b"), y, std, dense), DOMAIN)
    assert found.shape == (2, 3)
    np.testing.assert_allclose(found.ravel(), _weighted_lstsq(dense, y, std), atol=1e-10)

    sp = sparse.random(10, 8, density=0.6, random_state=4, format="csr") + sparse.eye(10, 8)
    y = rng.normal(size=10)
    found = local_least_squares(Measurement(("a", "c"), y, 0.5, sp), DOMAIN)
    np.testing.assert_allclose(found.ravel(), _weighted_lstsq(sp.toarray(), y, 0.5), atol=1e-8)


def test_local_needs_a_shape():
    m = Measurement(("a", "b"), np.zeros(6), 1.0)
    with pytest.raises(DpgmError, match="pass domain="):
        local_least_squares(m)


# -- global least squares ----------------------------------------------------------------
def _mixed_measurements(rng) -> list[Measurement]:
    """Identity, Kronecker, dense and sparse measurements, cliques in any order."""
    kron = KroneckerQuery([rng.random((5, 4)), rng.random((4, 3))])  # on (c, b)
    sp = sparse.random(7, 8, density=0.5, random_state=5, format="csr")
    return [
        Measurement(("b", "a"), rng.normal(5, 2, size=6), 1.5),
        Measurement(("c", "b"), rng.normal(5, 2, size=20), rng.uniform(0.5, 2, size=20), kron),
        Measurement(("a",), rng.normal(size=3), 0.7, rng.random((3, 2))),
        Measurement(("a", "c"), rng.normal(size=7), 2.0, sp),
        Measurement(("b", "a"), rng.normal(5, 2, size=6), 3.0),  # a repeated clique
    ]


def _dense_system(domain, measurements):
    rows, rhs = [], []
    for m in measurements:
        matrix = _dense(m.query, domain.size(m.clique)) @ _marginalisation(domain, m.clique)
        w = np.broadcast_to(1.0 / np.asarray(m.std), m.values.shape)
        rows.append(matrix * w[:, None])
        rhs.append(m.values * w)
    return np.vstack(rows), np.concatenate(rhs)


def test_operator_matches_dense_matrix_and_is_adjoint():
    rng = np.random.default_rng(6)
    measurements = _mixed_measurements(rng)
    operator, rhs = full_table_operator(DOMAIN, measurements)
    matrix, expected_rhs = _dense_system(DOMAIN, measurements)
    assert operator.shape == matrix.shape
    np.testing.assert_allclose(rhs, expected_rhs)
    x = rng.normal(size=DOMAIN.size())
    r = rng.normal(size=matrix.shape[0])
    np.testing.assert_allclose(operator.matvec(x), matrix @ x, atol=1e-12)
    np.testing.assert_allclose(operator.rmatvec(r), matrix.T @ r, atol=1e-12)
    assert np.dot(operator.matvec(x), r) == pytest.approx(np.dot(x, operator.rmatvec(r)))


def test_global_matches_dense_lstsq():
    rng = np.random.default_rng(7)
    measurements = _mixed_measurements(rng)
    matrix, rhs = _dense_system(DOMAIN, measurements)
    expected = np.linalg.lstsq(matrix, rhs, rcond=None)[0]  # minimum norm: rank deficient
    assert np.linalg.matrix_rank(matrix) < DOMAIN.size()
    found = global_least_squares(DOMAIN, measurements)
    assert found.shape == DOMAIN.shape
    np.testing.assert_allclose(found.ravel(), expected, atol=1e-7)


def test_global_recovers_the_table_from_consistent_full_rank_measurements():
    rng = np.random.default_rng(8)
    table = rng.uniform(0, 10, size=DOMAIN.shape)
    query = KroneckerQuery([rng.random((3, 2)), rng.random((4, 3)), rng.random((5, 4))])
    m = Measurement(("a", "b", "c"), query @ table.ravel(), 1.0, query)
    np.testing.assert_allclose(global_least_squares(DOMAIN, [m]), table, atol=1e-6)


def test_global_refuses_a_large_domain():
    big = Domain([f"x{i}" for i in range(8)], [10] * 8)
    m = Measurement(("x0",), np.zeros(10), 1.0)
    with pytest.raises(ModelTooLargeError, match=r"would need 100,000,000 cells \(4 GB"):
        global_least_squares(big, [m])
    with pytest.raises(ModelTooLargeError, match="would need 24 cells .*max_cells=10"):
        full_table_operator(DOMAIN, [Measurement(("b",), np.zeros(3), 1.0)], max_cells=10)
    # the operator alone has no limit unless asked
    operator, _ = full_table_operator(big, [m])
    assert operator.shape == (10, 10**8)


def test_global_bad_input():
    m = Measurement(("a",), np.zeros(2), 1.0)
    with pytest.raises(DpgmError, match="iters must be"):
        global_least_squares(DOMAIN, [m], iters=0)
    with pytest.raises(DpgmError, match="no measurements"):
        global_least_squares(DOMAIN, [])
    with pytest.raises(DpgmError, match="unknown attribute"):
        global_least_squares(DOMAIN, [Measurement(("zz",), np.zeros(2), 1.0)])
