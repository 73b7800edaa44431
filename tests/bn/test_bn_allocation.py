"""Algorithm 2's allocation (the note's A4), Eq. 6 and its public bounds, and ours."""

from __future__ import annotations

import math

import numpy as np
import pytest
from bn_oracles import allocate_product_form, expected_column_error
from scipy import optimize

from dpgm.bn import (
    NoisyTables,
    allocate,
    allocate_expected_error,
    error_bounds,
    parameter_error,
)
from dpgm.errors import ParameterError


# -- A4: the allocation ---------------------------------------------------------------------
def objective(eps, weights, errors):
    return float(np.sum(weights * errors / eps))


@pytest.mark.parametrize("seed", range(4))
def test_allocation_is_eq_10_and_the_constrained_minimum(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 9))
    weights, errors = rng.uniform(1, 50, n), rng.uniform(1e-3, 1, n)
    total = 0.9
    eps = allocate(total, weights, errors)
    np.testing.assert_allclose(eps, allocate_product_form(total, weights, errors),
                               rtol=1e-12)
    assert np.all(eps > 0) and eps.sum() == pytest.approx(total, rel=1e-12)
    assert objective(eps, weights, errors) == pytest.approx(
        np.sqrt(weights * errors).sum() ** 2 / total, rel=1e-12)
    found = optimize.minimize(
        objective, np.full(n, total / n), args=(weights, errors), method="SLSQP",
        bounds=[(1e-9, total)] * n,
        constraints=[{"type": "eq", "fun": lambda e: e.sum() - total}],
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    np.testing.assert_allclose(found.x, eps, atol=1e-6)
    np.testing.assert_allclose(allocate(total, weights, 7.5 * errors), eps, rtol=1e-12)


def test_allocation_refuses_non_positive_inputs():
    with pytest.raises(ParameterError, match="> 0"):
        allocate(1.0, [1, 2], [0.1, 0.0])


# -- Eq. 6 -----------------------------------------------------------------------------------
def test_parameter_error_of_eq_6_with_its_floor():
    cpd = np.array([[0.5, 0.5], [1.0, 0.0]])
    tables = NoisyTables(np.array([[4.0, -3.0], [0.5, 2.0]]), np.array([2.0, -7.0]), 1.0)
    by_hand = np.mean([
        0.5 * math.sqrt(1 / 2**2 + 1 / 4**2), 0.5 * math.sqrt(1 / 2**2 + 1 / 1**2),
        1.0 * math.sqrt(1 / 1**2 + 1 / 1**2), 0.0,
    ])
    assert parameter_error(cpd, tables) == pytest.approx(by_hand)
    floored = parameter_error(cpd, tables, floor=3.0)
    assert floored < by_hand


# -- our allocation: the expected CPD error ------------------------------------------------------
def test_expected_error_allocation_is_feasible_and_a_minimum():
    rng = np.random.default_rng(5)
    sizes = [2, 3, 4, 2]
    counts = [rng.uniform(5, 3000, size=int(q)) for q in (1, 4, 6, 12)]
    total = 0.9
    eps = allocate_expected_error(total, sizes, counts)
    assert np.all(eps > 0) and eps.sum() == pytest.approx(total, rel=1e-12)

    def mean_error(budgets):
        return float(np.mean(expected_column_error(np.asarray(budgets), np.asarray(sizes),
                                                      counts)))

    best = mean_error(eps)
    for _ in range(200):  # no feasible point nearby or far does better
        other = eps * np.exp(rng.normal(0, 0.3, size=4))
        assert best <= mean_error(total * other / other.sum()) + 1e-12
    assert best < mean_error(np.full(4, total / 4))
    # a node whose columns have far fewer records needs more budget
    few = allocate_expected_error(total, [2, 2], [np.full(3, 50.0), np.full(3, 5000.0)])
    assert few[0] > few[1]


def test_expected_column_error_model():
    # z = 2k/(eps C) = 2*2/(1*4) = 1 -> 1/2; and near 0 for a huge count
    got = expected_column_error(np.array([1.0, 1.0]), np.array([2, 2]),
                                   [np.array([4.0]), np.array([4e9])])
    np.testing.assert_allclose(got, [0.5, 1e-9], rtol=1e-6)


def test_the_error_bounds_hold():
    """δ̃_i lies in error_bounds: the floor gives the upper bound, MAX_COUNT the lower."""
    cpd = np.array([[0.5, 0.5], [1.0, 0.0]])
    for family, parent in (([[1e300, 1e300], [1e300, 1e300]], [1e300, 1e300]),
                           ([[-5.0, 0.0], [-1.0, -2.0]], [-3.0, 0.0])):
        tables = NoisyTables(np.array(family), np.array(parent), 1.0)
        for floor in (1.0, 1e-200):
            low, high = error_bounds(2, floor)
            assert low <= parameter_error(cpd, tables, floor) <= high * (1 + 1e-12)
