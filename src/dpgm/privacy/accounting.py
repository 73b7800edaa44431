"""Conversions between zero-concentrated DP (ρ-zCDP) and approximate (ε, δ)-DP.

All guarantees are for the add/remove-one-record neighbour relation (unbounded DP).
The conversion is the tight one of Canonne, Kamath & Steinke (2020, "The Discrete Gaussian
for Differential Privacy", Corollary 13): ρ-zCDP implies (ε, δ)-DP with

    δ = inf_{α > 1}  exp((α − 1)(αρ − ε)) / (α − 1) · (1 − 1/α)^α.

Every α > 1 gives a valid δ, so an imprecise minimisation can only overstate δ; the
inverse functions round in the safe direction (ε up, ρ down).
"""

from __future__ import annotations

import math
from functools import lru_cache

from dpgm.errors import PrivacyParameterError
from dpgm.privacy.policy import check_epsilon, check_probability
from dpgm.validation import non_negative

# Bisection on doubles converges to adjacent floats in well under 200 halvings.
_MAX_HALVINGS = 200


def _log_delta(rho: float, epsilon: float, t: float) -> float:
    """log of the CKS20 bound on δ at order α = 1 + t.

    Written in t = α − 1, and without cancelling large terms, so that it stays accurate for
    t anywhere in [1e-300, 1e300]:
    log δ = t((1 + t)ρ − ε) + t·log t − (1 + t)·log(1 + t)
          = t((1 + t)ρ − ε) − t·log(1 + 1/t) − log(1 + t).
    """
    return t * ((1.0 + t) * rho - epsilon) - t * math.log1p(1.0 / t) - math.log1p(t)


def _best_t(rho: float, epsilon: float) -> float:
    """The t = α − 1 > 0 minimising the bound: root of its derivative, by bisection on log t.

    d/dα log δ = (2α − 1)ρ − ε + log(1 − 1/α) = (1 + 2t)ρ − ε − log(1 + 1/t) is
    strictly increasing (the bound is log-convex, so the root is the unique minimiser) and
    tends to −∞ as t → 0. Bisecting on log t handles optima from 1e-300 to 1e300 alike.
    """
    # At t = (ε + 1)/(2ρ) + 1 the derivative is ≥ 1 + 3ρ − log 2 > 0; cap it at 1e300 (an
    # order past the true optimum still gives a valid, if looser, δ).
    upper = min((epsilon + 1.0) / (2.0 * rho) + 1.0, 1e300)
    lo, hi = math.log(1e-300), math.log(upper)
    for _ in range(_MAX_HALVINGS):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        t = math.exp(mid)
        if (1.0 + 2.0 * t) * rho - epsilon - math.log1p(1.0 / t) < 0:
            lo = mid
        else:
            hi = mid
    return math.exp(0.5 * (lo + hi))


def cdp_delta(rho: float, epsilon: float) -> float:
    """Smallest δ such that ρ-zCDP implies (ε, δ)-DP (CKS20 tight conversion), capped at 1."""
    rho = non_negative("rho", rho, error=PrivacyParameterError)
    epsilon = non_negative("epsilon", epsilon, error=PrivacyParameterError)
    if rho == 0.0:
        return 0.0  # 0-zCDP is perfect privacy
    log_delta = _log_delta(rho, epsilon, _best_t(rho, epsilon))
    return 1.0 if log_delta >= 0.0 else math.exp(log_delta)


def _simple_epsilon(rho: float, delta: float) -> float:
    """The classic bound ε = ρ + 2·sqrt(ρ·log(1/δ)) (Bun & Steinke 2016, Prop. 1.3)."""
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def cdp_epsilon(rho: float, delta: float) -> float:
    """Smallest ε such that ρ-zCDP implies (ε, δ)-DP (by bisection on :func:`cdp_delta`)."""
    return _cdp_epsilon(non_negative("rho", rho, error=PrivacyParameterError),
                        check_probability("delta", delta))


@lru_cache(maxsize=1024)  # a pure function of two numbers, asked again and again
def _cdp_epsilon(rho: float, delta: float) -> float:
    if rho == 0.0:
        return 0.0
    # cdp_delta is decreasing in ε; the classic bound is always feasible (it is looser).
    lo, hi = 0.0, _simple_epsilon(rho, delta)
    if cdp_delta(rho, lo) <= delta:
        return lo
    for _ in range(_MAX_HALVINGS):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if cdp_delta(rho, mid) <= delta:
            hi = mid
        else:
            lo = mid
    return hi  # feasible end: never understate ε


def cdp_rho(epsilon: float, delta: float) -> float:
    """Largest ρ such that ρ-zCDP implies (ε, δ)-DP (by bisection on :func:`cdp_delta`)."""
    return _cdp_rho(check_epsilon(epsilon), check_probability("delta", delta))


@lru_cache(maxsize=1024)  # a pure function of two numbers, asked again and again
def _cdp_rho(epsilon: float, delta: float) -> float:
    # The classic bound solved for ρ is feasible: sqrt(ρ) = sqrt(L + ε) − sqrt(L), L = log(1/δ).
    log_inv = math.log(1.0 / delta)
    lo = (math.sqrt(log_inv + epsilon) - math.sqrt(log_inv)) ** 2
    hi = max(2.0 * lo, epsilon)
    while cdp_delta(hi, epsilon) <= delta:  # cdp_delta grows with ρ: double until infeasible
        lo, hi = hi, 2.0 * hi
    for _ in range(_MAX_HALVINGS):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if cdp_delta(mid, epsilon) <= delta:
            lo = mid
        else:
            hi = mid
    return lo  # feasible end: never overstate ρ
