"""Exceptions and warnings raised by dpgm: each says what was wrong, in the user's terms.

Every error dpgm raises on purpose is a :class:`DpgmError` (a ``ValueError``), so callers
can catch them all with one ``except``; the command line prints them as one line.

Messages that suggest an option name it with :func:`option`, which spells it the way the
caller uses dpgm: ``max_memory=...`` from Python, ``--max-memory`` from the command line.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar

_PACKAGE = os.path.dirname(os.path.abspath(__file__))


class DpgmError(ValueError):
    """Base class of dpgm's errors: bad input, refused work, an exhausted budget."""


class ParameterError(DpgmError):
    """An option or argument is invalid (wrong type, out of range, unknown choice)."""


class PrivacyParameterError(ParameterError):
    """A privacy parameter is out of range (epsilon <= 0, delta outside its policy, ...)."""


class DomainError(DpgmError):
    """An attribute is unknown, repeated, or has an invalid size."""


class DataError(DpgmError):
    """A record does not fit the public domain, or a data file cannot be read."""


class OutputError(DpgmError):
    """An output cannot be written where it was asked for."""


class BudgetExceededError(DpgmError):
    """A measurement would spend more privacy budget than is left."""


class ModelTooLargeError(DpgmError):
    """A table, model or sample would not fit in the memory allowed."""


class DpgmWarning(UserWarning):
    """Base class of dpgm's warnings."""


class SeedWarning(DpgmWarning):
    """A seed replaced the exact release samplers: reproducible, but not for a release."""


class PrivacyWarning(DpgmWarning):
    """A privacy parameter is allowed but weak (for example delta >= 1e-5)."""


class SchemaNote(DpgmWarning):
    """What discovery changed in a schema it learnt: post-processing of what was released."""


class DataWarning(DpgmWarning):
    """The input has something that will be ignored (for example a column not in the domain)."""


def user_stacklevel() -> int:
    """The ``stacklevel`` that makes a warning point at the first caller outside dpgm."""
    level, frame = 1, sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        level += 1
        frame = frame.f_back
    return level


# -- spelling options in messages ------------------------------------------------------------
_NO_VALUE = object()
#: Python parameter name -> command-line flag, while the command line is running
_FLAGS: ContextVar[Mapping[str, str] | None] = ContextVar("dpgm_option_flags", default=None)


def option(name: str, value: object = _NO_VALUE) -> str:
    """How to set option ``name`` (to ``value``), spelled for the current caller.

    From Python: ``max_memory=2e9`` (or ``max_memory=``); from the command line, where the
    option has a flag: ``--max-memory 2e9``. Options without a flag keep the Python spelling.
    """
    flags = _FLAGS.get()
    flag = None if flags is None else flags.get(name)
    if flag is None:
        return f"{name}=" if value is _NO_VALUE else f"{name}={value!r}"
    return flag if value is _NO_VALUE or value is True else f"{flag} {value}"


@contextmanager
def command_line_spelling(flags: Mapping[str, str]) -> Iterator[None]:
    """Within the block, :func:`option` names ``flags[name]`` instead of ``name=``."""
    token = _FLAGS.set(dict(flags))
    try:
        yield
    finally:
        _FLAGS.reset(token)
