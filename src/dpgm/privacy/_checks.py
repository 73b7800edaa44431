"""Validation of privacy parameters, shared by the privacy modules."""

from __future__ import annotations

import math
from numbers import Real

from dpgm.errors import PrivacyParameterError


def positive(name: str, value: object) -> float:
    """``value`` as a float if it is a finite number > 0, else a :class:`PrivacyParameterError`."""
    # bools are Reals in Python; True as an epsilon is almost certainly a mistake
    if isinstance(value, bool) or not isinstance(value, Real):
        raise PrivacyParameterError(f"{name} must be a number > 0, got {value!r}")
    x = float(value)
    if math.isnan(x):
        raise PrivacyParameterError(f"{name} must be a number > 0, got nan")
    if x <= 0:
        raise PrivacyParameterError(f"{name} must be > 0, got {value!r}")
    if math.isinf(x):
        raise PrivacyParameterError(f"{name} must be finite, got {value!r}")
    return x


def non_negative(name: str, value: object) -> float:
    """``value`` as a float if it is a finite number >= 0, else a :class:`PrivacyParameterError`."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise PrivacyParameterError(f"{name} must be a number >= 0, got {value!r}")
    x = float(value)
    if math.isnan(x) or x < 0 or math.isinf(x):
        raise PrivacyParameterError(f"{name} must be a finite number >= 0, got {value!r}")
    return x


def probability(name: str, value: object) -> float:
    """``value`` as a float if it lies strictly between 0 and 1, else a PrivacyParameterError."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise PrivacyParameterError(f"{name} must be a number in (0, 1), got {value!r}")
    x = float(value)
    if not 0.0 < x < 1.0:  # also false for nan
        raise PrivacyParameterError(f"{name} must be in (0, 1) exclusive, got {value!r}")
    return x
