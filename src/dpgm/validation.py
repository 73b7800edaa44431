"""One set of parameter validators for the whole library.

Each returns the value in its canonical type or raises a :class:`~dpgm.errors.ParameterError`
(a :class:`~dpgm.errors.PrivacyParameterError` where ``error`` says so) whose message
names the parameter, the rule and the value given. Booleans are never numbers here:
``epsilon=True`` is almost certainly a mistake.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from numbers import Integral, Real
from typing import TypeVar

from dpgm.errors import ParameterError

T = TypeVar("T")


def _is_real(value: object) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def number(
    name: str,
    value: object,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    error: type[ParameterError] = ParameterError,
) -> float:
    """``value`` as a finite float within the bounds given (each closed unless ``*_open``)."""
    rule = _interval(low, high, low_open, high_open)
    if not _is_real(value):
        raise error(f"{name} must be a number{rule}, got {value!r}")
    x = float(value)
    if not math.isfinite(x):
        raise error(f"{name} must be a finite number{rule}, got {value!r}")
    too_low = low is not None and (x <= low if low_open else x < low)
    too_high = high is not None and (x >= high if high_open else x > high)
    if too_low or too_high:
        raise error(f"{name} must be{rule}, got {value!r}")
    return x


def _interval(low, high, low_open, high_open) -> str:
    if low is not None and high is not None:
        left, right = "(" if low_open else "[", ")" if high_open else "]"
        return f" in {left}{low:g}, {high:g}{right}"
    if low is not None:
        return f" {'>' if low_open else '>='} {low:g}"
    if high is not None:
        return f" {'<' if high_open else '<='} {high:g}"
    return ""


def positive(
    name: str, value: object, *, error: type[ParameterError] = ParameterError
) -> float:
    """A finite number > 0."""
    return number(name, value, low=0.0, low_open=True, error=error)


def non_negative(
    name: str, value: object, *, error: type[ParameterError] = ParameterError
) -> float:
    """A finite number >= 0."""
    return number(name, value, low=0.0, error=error)


def fraction(name: str, value: object, *, error: type[ParameterError] = ParameterError) -> float:
    """A number strictly between 0 and 1."""
    return number(name, value, low=0.0, high=1.0, low_open=True, high_open=True, error=error)


def integer(
    name: str,
    value: object,
    *,
    least: int | None = None,
    most: int | None = None,
    error: type[ParameterError] = ParameterError,
) -> int:
    """An integer (Python or NumPy, not a bool or a float) within the bounds given."""
    rule = _interval(least, most, False, False)
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise error(f"{name} must be an integer{rule}, got {value!r}")
    x = int(value)
    if (least is not None and x < least) or (most is not None and x > most):
        raise error(f"{name} must be an integer{rule}, got {value!r}")
    return x


def optional(check: Callable[..., T], name: str, value: object, **rules) -> T | None:
    """None stays None; anything else goes through ``check(name, value, **rules)``."""
    return None if value is None else check(name, value, **rules)


def flag(name: str, value: object, *, error: type[ParameterError] = ParameterError) -> bool:
    """``value`` if it is True or False (not 0, 1 or a string)."""
    if not isinstance(value, bool):
        raise error(f"{name} must be True or False, got {value!r}")
    return value


def one_of(name: str, value: object, choices: Iterable[object]) -> object:
    """``value`` if it is one of ``choices``."""
    choices = tuple(choices)
    if value not in choices:
        raise ParameterError(f"{name} must be one of {list(choices)}, got {value!r}")
    return value


def callable_or_none(name: str, value: object) -> Callable | None:
    """A callable, or None."""
    if value is not None and not callable(value):
        raise ParameterError(f"{name} must be a function or None, got {value!r}")
    return value  # type: ignore[return-value]
