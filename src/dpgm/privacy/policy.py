"""The privacy policy every mechanism shares: how parameters are checked, one δ default.

δ. Every mechanism that needs a δ (those accounted in zCDP and reported as (ε, δ)) uses
:data:`DEFAULT_DELTA` unless given one. δ is the probability that the ε guarantee fails
outright, so it must be far below 1/n (one record in n could be exposed with probability
nδ); a δ of at least :data:`DELTA_WARNING` draws a :class:`~dpgm.errors.PrivacyWarning`,
and one of at least :data:`DELTA_LIMIT` is refused. Pure ε-DP mechanisms accept a δ too
and spend none of it: an ε-DP mechanism is (ε, δ)-DP for every δ.

Seeds. A seed replaces the exact release samplers with reproducible NumPy ones; the first
such use in a process draws a :class:`~dpgm.errors.SeedWarning`.
"""

from __future__ import annotations

import warnings

from dpgm.errors import PrivacyParameterError, PrivacyWarning, SeedWarning, user_stacklevel
from dpgm.validation import fraction, number, positive

DEFAULT_DELTA = 1e-9
DELTA_WARNING = 1e-5
DELTA_LIMIT = 0.1

SEEDED_MESSAGE = (
    "a seed makes dpgm's noise and selections reproducible: anyone who knows the seed can "
    "remove the noise. Seeded runs are for research and tests, not for a release; pass "
    "rng=None (the default) to use OpenDP's exact samplers"
)


def check_epsilon(epsilon: object, name: str = "epsilon") -> float:
    """ε (or another privacy parameter) as a finite float > 0."""
    return positive(name, epsilon, error=PrivacyParameterError)


def check_probability(name: str, value: object) -> float:
    """A probability strictly between 0 and 1 (for conversions, not the release δ)."""
    return fraction(name, value, error=PrivacyParameterError)


def check_delta(delta: object) -> float | None:
    """δ under the policy above: None, or a number in (0, DELTA_LIMIT); warns if large."""
    if delta is None:
        return None
    value = number(
        "delta", delta, low=0.0, high=1.0, low_open=True, high_open=True,
        error=PrivacyParameterError,
    )
    if value >= DELTA_LIMIT:
        raise PrivacyParameterError(
            f"delta={delta!r} is at least {DELTA_LIMIT:g}: the guarantee could fail for a "
            f"tenth of the records or more. Use a delta far below 1/n (default {DEFAULT_DELTA:g})"
        )
    if value >= DELTA_WARNING:
        warnings.warn(
            f"delta={delta!r} is large: it should be far below 1/n, the inverse of the number "
            f"of records (dpgm's default is {DEFAULT_DELTA:g})",
            PrivacyWarning,
            stacklevel=user_stacklevel(),
        )
    return value


def warn_seeded() -> None:
    """Warn (once per process, by Python's default filter) that a seed is in use."""
    # stacklevel=1: one location, so the default filter shows it once per process
    warnings.warn(SEEDED_MESSAGE, SeedWarning, stacklevel=1)
