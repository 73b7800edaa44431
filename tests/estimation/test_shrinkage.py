"""Band-wise James–Stein shrinkage of residual measurements: the factor's closed form, the
groups it forms, and a lower squared error than the raw answers on a smooth table."""

from __future__ import annotations

import numpy as np
import pytest

from dpgm import Domain
from dpgm.estimation.shrinkage import band_shrinkage, shrink_residuals
from dpgm.measurement import KroneckerQuery, Measurement
from dpgm.residuals import frequency_bands, ordered_basis, residual_basis


def test_the_factor_is_the_positive_part_james_stein_factor():
    values = np.array([3.0, 4.0, 0.0, 0.1, 0.1, 0.1, 5.0, 1.0])
    bands = np.array([0, 0, 0, 1, 1, 1, 2, 2])
    out = band_shrinkage(values, bands, variance=1.0)
    # band 0: 1 - (3-2)·1/25; band 1: pure noise, shrunk to zero; band 2: two entries, kept
    np.testing.assert_allclose(out[:3], values[:3] * (1 - 1 / 25))
    np.testing.assert_allclose(out[3:6], 0.0)
    np.testing.assert_allclose(out[6:], values[6:])


def test_an_all_zero_band_stays_zero():
    out = band_shrinkage(np.zeros(4), np.zeros(4, dtype=np.int64), variance=2.0)
    np.testing.assert_array_equal(out, 0.0)


def _smooth_residual():
    """A smooth 12×9 table's residual in the ordered basis, and its measurement's noise."""
    x, y = np.arange(12), np.arange(9)
    table = 400 * np.outer(np.exp(-0.5 * ((x - 4) / 2.5) ** 2), 1 + 0.3 * np.sin(y / 3))
    return np.kron(ordered_basis(12), ordered_basis(9)) @ table.ravel()


def test_shrinking_by_bands_lowers_the_squared_error_of_a_smooth_table():
    rng = np.random.default_rng(0)
    truth = _smooth_residual()
    domain = Domain(["x", "y"], [12, 9])
    query = KroneckerQuery([ordered_basis(12), ordered_basis(9)])
    bands = {"x": frequency_bands(12), "y": frequency_bands(9)}
    raw, shrunk, whole = [], [], []
    for _ in range(200):
        noisy = truth + rng.normal(0, 20.0, truth.size)
        m = Measurement(("x", "y"), noisy, 20.0, query)
        (by_band,) = shrink_residuals(domain, [m], bands)
        (one_band,) = shrink_residuals(domain, [m], {})
        raw.append(((noisy - truth) ** 2).sum())
        shrunk.append(((by_band.values - truth) ** 2).sum())
        whole.append(((one_band.values - truth) ** 2).sum())
    # the noise's expected squared error is 88·400; bands keep the signal and drop the rest
    assert np.mean(shrunk) < 0.3 * np.mean(raw)
    assert np.mean(shrunk) < np.mean(whole) <= np.mean(raw)


def test_only_residuals_of_two_or_more_attributes_are_shrunk():
    domain = Domain(["a", "b"], [4, 3])
    rng = np.random.default_rng(1)
    pair = Measurement(("a", "b"), rng.normal(0, 1, 6), 5.0,
                       KroneckerQuery([residual_basis(4), residual_basis(3)]))
    single = Measurement(("a", "b"), rng.normal(0, 1, 3), 5.0,
                         KroneckerQuery([residual_basis(4), np.ones((1, 3))]))
    table = Measurement(("a", "b"), rng.normal(0, 1, 12), 5.0)  # not a residual
    before = pair.values.copy()
    out = shrink_residuals(domain, [pair, single, table], {})
    assert out[1] is single and out[2] is table
    assert out[0] is not pair and out[0].clique == pair.clique
    assert out[0].std == pair.std and out[0].query is pair.query
    np.testing.assert_allclose(out[0].values, 0.0)  # pure noise at std 5
    np.testing.assert_array_equal(pair.values, before)  # the input is left as it was


@pytest.mark.parametrize("order", [1, 2])
def test_least_order_sets_which_residuals_are_shrunk(order):
    domain = Domain(["a"], [6])
    m = Measurement(("a",), np.full(5, 0.5), 1.0, KroneckerQuery([residual_basis(6)]))
    (out,) = shrink_residuals(domain, [m], {}, least_order=order)
    assert (out is m) == (order == 2)


def test_a_residual_is_shrunk_towards_its_prior_where_one_is_given():
    domain = Domain(["a", "b"], [4, 3])
    rng = np.random.default_rng(3)
    prior = rng.normal(0, 10.0, 6)
    noisy = prior + rng.normal(0, 1.0, 6)
    m = Measurement(("a", "b"), noisy, 1.0, KroneckerQuery([residual_basis(4),
                                                           residual_basis(3)]))
    (towards,) = shrink_residuals(domain, [m], {}, towards={("a", "b"): prior})
    (plain,) = shrink_residuals(domain, [m], {})
    # the James–Stein factor of the difference from the prior, not of the values
    factor = 1 - 4 * 1.0 / ((noisy - prior) ** 2).sum()
    np.testing.assert_allclose(towards.values, prior + max(factor, 0) * (noisy - prior))
    np.testing.assert_allclose(plain.values, noisy * (1 - 4 / (noisy ** 2).sum()))
    # a residual at its prior stays there; one without a prior is shrunk towards zero
    (exact,) = shrink_residuals(domain, [Measurement(m.clique, prior, 1.0, m.query)], {},
                                towards={("a", "b"): prior})
    np.testing.assert_allclose(exact.values, prior)
