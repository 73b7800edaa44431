"""A one-way residual and an independent one-way marginal combined (generalised least
squares): the closed form, and the covariance it claims, against simulation."""

import numpy as np
import pytest

from dpgm.errors import ParameterError
from dpgm.estimation.combination import fold_one_way, fold_one_ways
from dpgm.measurement import KroneckerQuery, Measurement
from dpgm.residuals import ordered_basis, residual_basis, residual_subset


def _residual(basis, values, std, other=3):
    """A residual of ``a`` stated on the pair (b, a), b summed out."""
    return Measurement(("b", "a"), values, std, KroneckerQuery([np.ones((1, other)), basis]))


def test_equal_cell_variances_give_the_inverse_variance_mean_entry_by_entry():
    basis = residual_basis(5)
    rng = np.random.default_rng(0)
    y, r = rng.normal(size=4), rng.normal(size=5)
    folded = fold_one_way(_residual(basis, y, 2.0), Measurement(("a",), r, 3.0))
    expected = (y / 4 + basis @ r / 9) / (1 / 4 + 1 / 9)
    np.testing.assert_allclose(folded.values, expected, rtol=1e-12)
    assert folded.std == pytest.approx(np.sqrt(1 / (1 / 4 + 1 / 9)))
    assert folded.clique == ("b", "a") and residual_subset(folded) == ("a",)
    # the same residual stated on the attribute alone, with a dense query
    dense = fold_one_way(Measurement(("a",), y, 2.0, basis), Measurement(("a",), r, 3.0))
    np.testing.assert_allclose(dense.values, expected, rtol=1e-12)


def test_the_combined_estimate_is_unbiased_with_the_covariance_it_claims():
    """Merged values: the marginal's noise differs by cell (a merged count sums several
    cells' noise). Over 20,000 draws the estimate's error has mean 0, the covariance
    C = (I/v + S⁻¹)⁻¹, and a smaller mean squared error than either measurement."""
    basis = ordered_basis(6)
    mu = np.array([500.0, 20.0, 3.0, 900.0, 40.0, 7.0])
    z = basis @ mu
    cell_std = np.array([1.0, 2.0, 1.0, 1.0, 3.0, 1.0]) * 4.0
    rng = np.random.default_rng(1)
    draws, errors, plan_errors, marginal_errors = 20_000, [], [], []
    for _ in range(draws):
        y = z + rng.normal(0, 5.0, 5)
        r = mu + rng.normal(0, cell_std)
        folded = fold_one_way(_residual(basis, y, 5.0), Measurement(("a",), r, cell_std))
        errors.append(folded.values - z)
        plan_errors.append(y - z)
        marginal_errors.append(basis @ r - z)
    errors = np.array(errors)
    s = (basis * cell_std**2) @ basis.T
    claimed = np.linalg.inv(np.eye(5) / 25.0 + np.linalg.inv(s))
    assert np.all(np.abs(errors.mean(axis=0)) < 4 * np.sqrt(np.diag(claimed) / draws))
    np.testing.assert_allclose(np.cov(errors.T), claimed, atol=0.05 * np.abs(claimed).max())
    mse = np.mean(errors**2)
    assert mse < 0.8 * min(np.mean(np.square(plan_errors)), np.mean(np.square(marginal_errors)))
    assert folded.std == pytest.approx(np.sqrt(np.mean(np.diag(claimed))))


def test_only_one_way_residuals_of_the_given_attributes_are_folded():
    basis = residual_basis(4)
    one_way = _residual(basis, np.ones(3), 1.0)
    pair = Measurement(("b", "a"), np.ones(6), 1.0,
                       KroneckerQuery([residual_basis(3), basis]))
    count = Measurement(("a",), [10.0], 1.0, KroneckerQuery([np.ones((1, 4))]))
    marginal = Measurement(("a",), np.zeros(4), 1.0)
    folded = fold_one_ways([one_way, pair, count], {"a": marginal})
    assert folded[1] is pair and folded[2] is count
    np.testing.assert_allclose(folded[0].values, 0.5)
    assert fold_one_ways([one_way], {"c": marginal})[0] is one_way


def test_a_mismatched_marginal_or_residual_is_refused():
    basis = residual_basis(4)
    one_way = _residual(basis, np.ones(3), 1.0)
    with pytest.raises(ParameterError, match="one-way marginal of 'a'"):
        fold_one_way(one_way, Measurement(("c",), np.zeros(4), 1.0))
    with pytest.raises(ParameterError, match="4"):
        fold_one_way(one_way, Measurement(("a",), np.zeros(5), 1.0))
    pair = Measurement(("b", "a"), np.ones(6), 1.0, KroneckerQuery([residual_basis(3), basis]))
    with pytest.raises(ParameterError, match="residual of one attribute"):
        fold_one_way(pair, Measurement(("a",), np.zeros(4), 1.0))
