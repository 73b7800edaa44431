"""zCDP <-> (epsilon, delta) conversions (Canonne, Kamath & Steinke 2020)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from dpgm.errors import PrivacyParameterError
from dpgm.privacy import cdp_delta, cdp_epsilon, cdp_rho


def simple_epsilon(rho, delta):
    return rho + 2 * math.sqrt(rho * math.log(1 / delta))


def simple_rho(epsilon, delta):
    log_inv = math.log(1 / delta)
    return (math.sqrt(log_inv + epsilon) - math.sqrt(log_inv)) ** 2


def brute_force_delta(rho, epsilon):
    """The CKS20 infimum over a dense log-spaced grid of alpha - 1."""
    alpha = 1 + np.exp(np.linspace(math.log(1e-8), math.log(1e6), 400_001))
    log_delta = (alpha - 1) * (alpha * rho - epsilon) + alpha * np.log1p(-1 / alpha)
    log_delta -= np.log(alpha - 1)
    return min(1.0, float(np.exp(log_delta.min())))


def gaussian_delta(sigma, epsilon):
    """Exact privacy profile of the Gaussian mechanism, sensitivity 1 (Balle & Wang 2018)."""
    a, b = 1 / (2 * sigma), epsilon * sigma
    return norm.cdf(a - b) - math.exp(epsilon) * norm.cdf(-a - b)


def test_rho_for_epsilon_1_delta_1e9():
    rho = cdp_rho(1.0, 1e-9)
    # The tight conversion gives about 0.01497, some 27% above the classic bound (0.01178).
    assert rho == pytest.approx(0.014973, rel=1e-4)
    assert rho > simple_rho(1.0, 1e-9) * 1.2
    assert cdp_delta(rho, 1.0) <= 1e-9


@pytest.mark.parametrize(
    ("rho", "epsilon"), [(0.015, 1.0), (1.0, 0.0), (0.5, 3.0), (2.0, 0.5), (1e-4, 0.1), (5.0, 20.0)]
)
def test_delta_matches_brute_force_minimisation(rho, epsilon):
    assert cdp_delta(rho, epsilon) == pytest.approx(brute_force_delta(rho, epsilon), rel=1e-6)


@pytest.mark.parametrize("rho", [1e-3, 0.015, 0.1, 1.0])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 3.0])
def test_delta_bounds_the_exact_gaussian_profile(rho, epsilon):
    # A rho-zCDP Gaussian mechanism is (eps, delta)-DP for its exact delta, so the conversion
    # can never claim less; being tight, it should not claim vastly more either (the gap
    # is within a factor 21 on this grid; where the exact delta underflows, skip that part).
    exact = gaussian_delta(1 / math.sqrt(2 * rho), epsilon)
    converted = cdp_delta(rho, epsilon)
    assert exact <= converted
    if exact > 1e-290:
        assert converted <= 50 * exact


@pytest.mark.parametrize("epsilon", [0.1, 0.5, 1.0, 4.0, 10.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-6, 1e-9, 1e-12])
def test_round_trip_and_beats_simple_bound(epsilon, delta):
    rho = cdp_rho(epsilon, delta)
    assert cdp_epsilon(rho, delta) == pytest.approx(epsilon, rel=1e-9)
    assert cdp_delta(rho, epsilon) <= delta * (1 + 1e-9)
    assert rho > simple_rho(epsilon, delta)
    assert cdp_epsilon(rho, delta) < simple_epsilon(rho, delta)


@settings(max_examples=60, deadline=None)
@given(
    rho=st.floats(1e-6, 50.0),
    log10_delta=st.floats(-15.0, -1.0),
)
def test_epsilon_is_the_smallest_feasible(rho, log10_delta):
    delta = 10.0**log10_delta
    eps = cdp_epsilon(rho, delta)
    assert cdp_delta(rho, eps) <= delta
    assert eps == 0.0 or cdp_delta(rho, eps * (1 - 1e-6)) > delta
    assert eps <= simple_epsilon(rho, delta)


def test_monotonicity():
    rhos = [1e-4, 1e-3, 0.01, 0.1, 1.0, 10.0]
    epsilons = [0.01, 0.1, 1.0, 5.0, 20.0]
    deltas = [1e-12, 1e-9, 1e-6, 1e-3, 0.1]
    for eps in epsilons:
        d = [cdp_delta(r, eps) for r in rhos]
        assert all(x <= y for x, y in zip(d, d[1:], strict=False))
        r = [cdp_rho(eps, delta) for delta in deltas]
        assert all(x < y for x, y in zip(r, r[1:], strict=False))
    for rho in rhos:
        d = [cdp_delta(rho, e) for e in epsilons]
        assert all(x >= y for x, y in zip(d, d[1:], strict=False))
        e = [cdp_epsilon(rho, delta) for delta in deltas]
        assert all(x > y for x, y in zip(e, e[1:], strict=False))
    for delta in deltas:
        # non-strict: a small rho with a large delta needs no epsilon at all (eps = 0)
        e = [cdp_epsilon(r, delta) for r in rhos]
        assert all(x <= y for x, y in zip(e, e[1:], strict=False))
        assert e[-1] > e[0]
        r = [cdp_rho(eps, delta) for eps in epsilons]
        assert all(x < y for x, y in zip(r, r[1:], strict=False))


def test_edge_cases():
    assert cdp_delta(0.0, 1.0) == 0.0
    assert cdp_epsilon(0.0, 1e-6) == 0.0
    assert cdp_delta(100.0, 0.0) == pytest.approx(1.0)
    assert 0.0 <= cdp_delta(1e-8, 1.0) < 1e-100
    # extreme orders stay accurate: at epsilon = 0 the bound scales like sqrt(rho)
    ratio = cdp_delta(1e-300, 0.0) / cdp_delta(1e-12, 0.0)
    assert ratio == pytest.approx(1e-144, rel=1e-6)
    assert cdp_delta(1e-12, 0.0) == pytest.approx(brute_force_delta(1e-12, 0.0), rel=1e-6)


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: cdp_delta(-1.0, 1.0), "rho"),
        (lambda: cdp_delta(1.0, float("nan")), "epsilon"),
        (lambda: cdp_epsilon(1.0, 0.0), "delta"),
        (lambda: cdp_epsilon(1.0, 1.0), "delta"),
        (lambda: cdp_rho(0.0, 1e-6), "epsilon"),
        (lambda: cdp_rho(1.0, float("nan")), "delta"),
    ],
)
def test_bad_parameters(call, name):
    with pytest.raises(PrivacyParameterError, match=name):
        call()
