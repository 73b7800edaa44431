"""How one raw value is read, from the schema alone and never from other records.

pandas reads a column by looking at all of it: ``"01234"`` becomes the number 1234 when
every other value is a number too, and a date ``13/02/2020`` makes pandas read every
other date of the column day first. One record could then change how every other record
is read: a certain distinguishing event, whatever the noise. So dpgm reads a raw table as
text and decides each value on its own, by these rules, on every path (a CSV file in
memory, a DataFrame passed to ``fit``, DuckDB's and Spark's SQL in
:mod:`dpgm.engines.encoding`):

* A value is either **text** (a Python ``str``; every CSV cell) or **typed** (a number,
  boolean or time of a typed column, or a non-text object): text follows the rules
  below, a typed value is taken as the value it is.
* A text is **missing** when it is empty or blank (ASCII white space only) or one of
  :data:`MISSING_TEXTS` (pandas' missing-value texts), unless a label of the column is
  written that way.
* A text is a **number** when, stripped of ASCII white space, it matches
  :data:`NUMBER` (decimal notation with an optional exponent; no ``inf``, ``nan``,
  underscores or thousands separators), and then it is that number.
* A text is a **time** when it matches the column's ``format``: ISO 8601
  (``2020-01-31``, ``2020-01-31 12:00``, ``2020-01-31T12:00:00.5``) by default, or the
  strftime format the schema gives (``"%d/%m/%Y"``), every field at its full width. No
  format is ever inferred.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from dpgm.errors import DomainError

#: the texts read as missing (pandas.read_csv's defaults)
MISSING_TEXTS = ("#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
                 "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null")
#: what is stripped from either end of a text: Python's str.strip's ASCII part
SPACE = " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"
#: a number written in text (anchored; character classes only, the same in Python's re,
#: DuckDB's RE2 and Spark's Java regular expressions)
NUMBER = "^[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?$"
#: a time in ISO 8601 form: a date, then optionally hours and minutes, seconds, and up to
#: six digits of a second
ISO_TIME = ("^[0-9]{4}-[0-9]{2}-[0-9]{2}"
            "([T ][0-9]{2}:[0-9]{2}(:[0-9]{2}([.][0-9]{1,6})?)?)?$")
ISO = "ISO8601"

_NUMBER = re.compile(NUMBER)


def strip(text: str) -> str:
    """``text`` without ASCII white space at either end (as the SQL engines trim it)."""
    return text.strip(SPACE)


def missing_texts(labels: Iterable[object] = ()) -> frozenset[str]:
    """The texts read as missing in a column with ``labels`` (a label wins)."""
    written = set()
    for label in labels:
        written.add(str(label))
        written.add(str(label).strip())
    return frozenset(t for t in MISSING_TEXTS if t not in written)


def is_missing_text(text: str, missing: frozenset[str]) -> bool:
    """Whether a text is a missing value (blank, or one of ``missing``)."""
    return text in missing or strip(text) == ""


def number(text: str) -> float | None:
    """The number a stripped text writes, or None where it writes none."""
    return float(text) if _NUMBER.match(text) else None


def numbers(texts: np.ndarray) -> np.ndarray:
    """:func:`number` of each stripped text, NaN where it writes none."""
    return np.array([float(t) if _NUMBER.match(t) else np.nan for t in texts], dtype=np.float64)


def canonical_int(text: str) -> bool:
    """Whether ``text`` is how Python writes an integer (``str(int(text)) == text``)."""
    try:
        return str(int(text)) == text
    except ValueError:
        return False


def canonical_float(text: str) -> bool:
    """Whether ``text`` is how Python writes a float (``str(float(text)) == text``)."""
    try:
        return str(float(text)) == text
    except ValueError:
        return False


# -- time formats ------------------------------------------------------------------------------
#: strftime directives a format may use: (regular expression of the written field, Java's
#: pattern letters for Spark)
DIRECTIVES = {"Y": ("[0-9]{4}", "yyyy"), "m": ("[0-9]{2}", "MM"), "d": ("[0-9]{2}", "dd"),
              "H": ("[0-9]{2}", "HH"), "M": ("[0-9]{2}", "mm"), "S": ("[0-9]{2}", "ss"),
              "f": ("[0-9]{6}", "SSSSSS")}


@dataclass(frozen=True)
class TimeFormat:
    """A column's time format: ``strftime`` (or ISO8601), the regular expression a text
    must match, and Spark's pattern (None for ISO 8601, read by a cast)."""

    strftime: str
    pattern: str
    java: str | None

    @property
    def iso(self) -> bool:
        return self.strftime == ISO


def time_format(text: str | None, column: str = "") -> TimeFormat:
    """The :class:`TimeFormat` of a schema's ``format`` (None: ISO 8601); a DomainError
    for a directive other than %Y %m %d %H %M %S %f (each read at its full width)."""
    if text is None or text == ISO:
        return TimeFormat(ISO, ISO_TIME, None)
    if not isinstance(text, str) or not text:
        raise DomainError(f"column {column!r}: format must be a strftime format such as "
                          f"'%d/%m/%Y', got {text!r}")
    pattern, java, literal, i = ["^"], [], [], 0
    while i < len(text):
        char = text[i]
        if char == "%":
            directive = text[i + 1:i + 2]
            if directive == "%":
                literal.append("%")
            elif directive in DIRECTIVES:
                if literal:
                    java.append("'" + "".join(literal).replace("'", "''") + "'")
                    literal = []
                regex, letters = DIRECTIVES[directive]
                pattern.append(regex)
                java.append(letters)
            else:
                raise DomainError(
                    f"column {column!r}: format {text!r} uses %{directive}; the directives "
                    f"read are {' '.join('%' + d for d in DIRECTIVES)} (each at full width)")
            i += 2
            continue
        pattern.append(re.escape(char) if char not in "-:/ T" else char)
        literal.append(char)
        i += 1
    if "Y" not in text.replace("%%", "") or "%Y" not in text:
        raise DomainError(f"column {column!r}: format {text!r} has no year (%Y)")
    if literal:
        java.append("'" + "".join(literal).replace("'", "''") + "'")
    pattern.append("$")
    regex = "".join(pattern)
    if "\\" in regex:  # the same pattern must mean the same in RE2 and Java: no escapes
        raise DomainError(f"column {column!r}: format {text!r} may hold digits, letters of "
                          "the directives and - : / T or space only, besides directives")
    return TimeFormat(text, regex, "".join(java))


def times(texts: np.ndarray, fmt: TimeFormat) -> tuple[np.ndarray, np.ndarray]:
    """The times that stripped texts write in ``fmt``, as microseconds since 1970 (int64),
    and where there is one: not where a text does not match the format or names no date
    (such as 31 February). Microseconds hold every year a text can write."""
    import pandas as pd

    compiled = re.compile(fmt.pattern)
    micros = np.zeros(len(texts), dtype=np.int64)
    fits = np.array([compiled.match(t) is not None for t in texts], dtype=bool)
    if fits.any():
        parsed = pd.to_datetime(pd.Series(texts[fits], dtype=object), format=fmt.strftime,
                                errors="coerce")
        valid = parsed.notna().to_numpy()
        micros[np.flatnonzero(fits)[valid]] = (
            parsed[valid].dt.as_unit("us").to_numpy().view(np.int64))
        fits[np.flatnonzero(fits)[~valid]] = False
    return micros, fits
