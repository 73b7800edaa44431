"""measure_linear: noise calibrated to the query's column norms, charged before reading."""

import numpy as np
import pytest
from scipy import sparse

from dpgm import Dataset, Domain
from dpgm.errors import BudgetExceededError, DpgmError
from dpgm.measurement import KroneckerQuery
from dpgm.privacy import PrivacyBudget, measure_linear, query_sensitivity

DOMAIN = Domain.from_dict({"a": 3, "b": 2})
DATA = Dataset(np.array([[0, 1], [2, 0], [2, 1], [1, 1]]), DOMAIN)


def test_sensitivity_is_the_largest_column_norm_for_every_query_type():
    dense = np.array([[1.0, 2.0, 0.0], [1.0, -2.0, 3.0]])
    assert query_sensitivity(dense, 1) == 4.0
    assert query_sensitivity(dense, 2) == pytest.approx(np.sqrt(9.0))
    assert query_sensitivity(sparse.csr_matrix(dense), 1) == 4.0
    kron = KroneckerQuery([dense, np.array([[0.5, 1.0]])])
    assert query_sensitivity(kron, 1) == 4.0
    assert query_sensitivity(kron, 2) == pytest.approx(3.0)


def test_laplace_scale_and_answers():
    query = np.vstack([np.ones(6), np.eye(6)[0] * 2])  # sensitivity 3
    measured = measure_linear(DATA, ("a", "b"), query, epsilon=1e9, rng=0)
    assert np.allclose(measured.values, query @ DATA.marginal(("a", "b")).ravel(), atol=1e-6)
    measured = measure_linear(DATA, ("a", "b"), query, epsilon=0.5, rng=0)
    assert measured.std == pytest.approx(np.sqrt(2) * 3 / 0.5)


def test_noise_has_the_stated_variance():
    query = KroneckerQuery([2 * np.eye(3), np.ones((1, 2))])
    draws = np.array(
        [measure_linear(DATA, ("a", "b"), query, rho=0.5, rng=s).values for s in range(3000)]
    )
    truth = query @ DATA.marginal(("a", "b")).ravel()
    # Gaussian std = ‖Q‖₂ / sqrt(2ρ) = 2 / 1; the sample variance is within 10%
    assert np.allclose((draws - truth).var(axis=0), 4.0, rtol=0.1)


def test_budget_is_charged_first_and_overspend_refused():
    budget = PrivacyBudget(epsilon=1.0)
    measure_linear(DATA, ("a",), np.ones((1, 3)), epsilon=0.75, budget=budget, rng=0)
    with pytest.raises(BudgetExceededError):
        measure_linear(DATA, ("a",), np.ones((1, 3)), epsilon=0.5, budget=budget, rng=0)
    assert budget.spent_epsilon == pytest.approx(0.75)


def test_bad_queries_are_refused():
    with pytest.raises(DpgmError, match="columns"):
        measure_linear(DATA, ("a",), np.ones((1, 4)), epsilon=1.0)
    with pytest.raises(DpgmError, match="all zeros"):
        measure_linear(DATA, ("a",), np.zeros((1, 3)), epsilon=1.0)
