"""The number of records from the measurements alone (Private-PGM App. E.1)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from dpgm import Domain, Measurement, estimate
from dpgm.estimation import estimate_total, total_estimates

DOMAIN = Domain(["a", "b", "c"], [2, 3, 4])


def by_hand(query, values, std):
    """``(1ᵀQ⁺y, σ²‖1ᵀQ⁺‖²)`` (per-answer σ: Σ_i (1ᵀQ⁺)_i² σ_i²)."""
    w = np.ones(query.shape[1]) @ np.linalg.pinv(query)
    var = np.broadcast_to(np.asarray(std, dtype=float) ** 2, np.shape(values))
    return float(w @ values), float(np.sum(w**2 * var))


def weighted(pairs):
    est = np.array([e for e, _ in pairs])
    inv = 1.0 / np.array([v for _, v in pairs])
    return float(np.sum(inv * est) / np.sum(inv))


def test_identity_measurement_gives_its_sum_with_variance_n_sigma2():
    y = np.arange(6.0) * 10
    found = total_estimates([Measurement(("a", "b"), y, 3.0)])
    assert found == [(pytest.approx(y.sum()), pytest.approx(6 * 9.0))]
    std = np.array([1.0, 2.0, 3.0, 1.0, 2.0, 3.0])
    found = total_estimates([Measurement(("b", "a"), y, std)])
    assert found == [(pytest.approx(y.sum()), pytest.approx(np.sum(std**2)))]


def test_inverse_variance_weighting_of_several_measurements():
    rng = np.random.default_rng(0)
    q_full = (rng.random((10, 4)) < 0.5).astype(float)
    while np.linalg.matrix_rank(q_full) < 4:
        q_full = (rng.random((10, 4)) < 0.5).astype(float)
    prefix = np.tril(np.ones((3, 3)))
    std_c = rng.uniform(0.5, 3.0, 10)
    measurements = [
        Measurement(("a",), [480.0, 530.0], 5.0),  # sum 1010, var 50
        Measurement(("a", "b"), rng.normal(166, 3, 6), 2.0),  # var 24
        Measurement(("c",), rng.normal(250, 10, 10), std_c, query=q_full),
        Measurement(("b",), [300.0, 640.0, 995.0], [1.0, 1.0, 7.0], query=prefix),
        Measurement((), [990.0], 20.0),  # the total itself
    ]
    expected = [
        (1010.0, 50.0),
        (float(measurements[1].values.sum()), 24.0),
        by_hand(q_full, measurements[2].values, std_c),
        (995.0, 49.0),  # 1ᵀQ⁺ = e_last for prefix sums
        (990.0, 400.0),
    ]
    assert by_hand(prefix, measurements[3].values, [1.0, 1.0, 7.0]) == pytest.approx((995, 49))
    found = total_estimates(measurements)
    assert len(found) == 5
    for (e, v), (e0, v0) in zip(found, expected):
        assert e == pytest.approx(e0, rel=1e-9)
        assert v == pytest.approx(v0, rel=1e-9)
    assert estimate_total(measurements) == pytest.approx(weighted(expected), rel=1e-12)


def test_sparse_queries_give_the_same_total_estimate():
    rng = np.random.default_rng(1)
    q = (rng.random((12, 6)) < 0.4).astype(float)
    while np.linalg.matrix_rank(q) < 6:
        q = (rng.random((12, 6)) < 0.4).astype(float)
    y = q @ rng.uniform(0, 100, 6) + rng.normal(0, 2, 12)
    std = rng.uniform(1, 3, 12)
    dense = total_estimates([Measurement(("a", "b"), y, std, query=q)])
    for fmt in (sp.csr_matrix, sp.csc_matrix, sp.coo_matrix):
        ((e, v),) = total_estimates([Measurement(("a", "b"), y, std, query=fmt(q))])
        assert e == pytest.approx(dense[0][0], rel=1e-8)
        assert v == pytest.approx(dense[0][1], rel=1e-8)
    assert dense[0] == pytest.approx(by_hand(q, y, std), rel=1e-9)


@pytest.mark.parametrize(
    "query",
    [
        np.array([[1.0, 0, 0, 0], [0, 1.0, 0, 0]]),  # two cells only
        np.array([[1.0, -1, 0, 0], [0, 1.0, -1, 0], [0, 0, 1.0, -1]]),  # differences
        np.array([[1.0, 1, 1, 0]]),  # all cells but one
    ],
)
def test_a_query_without_the_total_in_its_row_space_is_skipped(query):
    unusable = Measurement(("c",), np.full(query.shape[0], 1e6), 0.01, query=query)
    as_sparse = Measurement(("c",), query @ np.ones(4), 1.0, query=sp.csr_matrix(query))
    assert total_estimates([unusable, as_sparse]) == []
    usable = Measurement(("a",), [400.0, 600.0], 10.0)
    assert estimate_total([unusable, usable]) == pytest.approx(1000.0)


def test_no_usable_measurement_is_a_clear_error():
    unusable = Measurement(("c",), [1.0, 2.0], 1.0, query=np.eye(4)[:2])
    for measurements in ([], [unusable]):
        with pytest.raises(ValueError, match="cannot be estimated") as info:
            estimate_total(measurements)
        assert "total=" in str(info.value)
        with pytest.raises(ValueError, match="pass total= explicitly"):
            estimate(DOMAIN, measurements, iters=1)


def test_the_estimate_is_at_least_one_record():
    assert estimate_total([Measurement(("a",), [-30.0, 5.0], 10.0)]) == 1.0


def test_the_estimate_is_unbiased_with_the_predicted_variance():
    """Over repeated noise draws the weighted estimate averages to the truth, and its
    spread matches 1 / Σ 1/Var(m_C)."""
    rng = np.random.default_rng(2024)
    truth_ab = rng.uniform(50, 150, 6)
    truth_c = rng.dirichlet(np.ones(4)) * truth_ab.sum()
    n = float(truth_ab.sum())
    q = np.vstack([np.tril(np.ones((4, 4))), np.eye(4)])
    std_q = np.r_[np.full(4, 4.0), np.full(4, 8.0)]
    draws = []
    for _ in range(2000):
        measurements = [
            Measurement(("a", "b"), truth_ab + rng.normal(0, 6.0, 6), 6.0),
            Measurement(("c",), q @ truth_c + rng.normal(0, std_q), std_q, query=q),
            Measurement(("a",), truth_ab.reshape(2, 3).sum(1) + rng.normal(0, 10.0, 2), 10.0),
        ]
        draws.append(estimate_total(measurements))
    variances = [v for _, v in total_estimates(measurements)]
    predicted = 1.0 / np.sum(1.0 / np.array(variances))
    draws = np.array(draws)
    assert abs(draws.mean() - n) < 4 * np.sqrt(predicted / draws.size)
    assert draws.var() == pytest.approx(predicted, rel=0.1)


def test_estimate_uses_the_estimated_total_when_none_is_given():
    measurements = [
        Measurement(("a", "b"), [100.0, 210, 95, 180, 160, 240], 4.0),  # 985, var 96
        Measurement(("c",), [250.0, 255, 250, 260], 2.0),  # 1015, var 16
    ]
    expected = (985 / 96 + 1015 / 16) / (1 / 96 + 1 / 16)
    assert estimate_total(measurements) == pytest.approx(expected)
    model = estimate(DOMAIN, measurements, iters=20)
    assert model.total == pytest.approx(expected)
    assert model.marginal(("c",)).sum() == pytest.approx(expected)
    explicit = estimate(DOMAIN, measurements, total=1234.0, iters=20)
    assert explicit.total == 1234.0
