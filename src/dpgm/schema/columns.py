"""One column of a public schema: its kind, its public values, and its integer codes.

Every column maps raw values to codes ``0..size-1`` (:meth:`Column.encode`) and codes
back to values in original units (:meth:`Column.decode`):

* :class:`Categorical` — a list of labels, an optional "other" code for values not in
  the list;
* :class:`Numeric` — public bounds and bins; values outside the bounds are clipped;
* :class:`Datetime` — public bounds and a bin width; clipped like numbers.

A ``nullable`` column has one more code, the last, for a missing value. Everything a
column holds is public: it is written by the data steward (or learnt privately, see
:mod:`dpgm.schema.discover`), never read off the data. Each raw value is read on its own,
by the rules of :mod:`dpgm.schema.parse`, never by how other records were read.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from dpgm.domain import Label
from dpgm.errors import DataError, DomainError
from dpgm.schema import parse

if TYPE_CHECKING:
    import pandas as pd

#: how a missing value is shown where a label is read
MISSING = None
#: the label of the "other" code when the schema says ``"other": true``
DEFAULT_OTHER = "other"


#: the most bins a numeric or datetime column may have (each is a code of every model)
MAX_BINS = 10_000_000
#: a value's code while it is read: missing, or no code (the reason is the column's)
_MISSING, _NONE = -2, -1


def text_values(values: pd.Series) -> np.ndarray:
    """Where a value is text (a Python ``str``), to be read by the text rules; every other
    value is typed and read as the value it is. Decided value by value."""
    import pandas as pd

    dtype = values.dtype
    if isinstance(dtype, pd.StringDtype):
        return ~np.asarray(pd.isna(values), dtype=bool)
    if pd.api.types.is_object_dtype(dtype) or isinstance(dtype, pd.CategoricalDtype):
        return np.fromiter((isinstance(v, str) for v in values.astype(object)), dtype=bool,
                           count=len(values))
    return np.zeros(len(values), dtype=bool)


def missing_values(values: pd.Series, labels: Sequence[object] = ()) -> np.ndarray:
    """Where a value is missing: NaN, None, NaT, pd.NA, or a text that is blank or one of
    pandas' missing-value texts (:func:`dpgm.schema.parse.missing_texts`; a label wins)."""
    import pandas as pd

    text = text_values(values)
    missing = np.asarray(pd.isna(values), dtype=bool) & ~text
    if text.any():
        absent = parse.missing_texts(labels)
        inverse, uniques = pd.factorize(values[text])  # each distinct text judged once
        blank = np.array([parse.is_missing_text(u, absent) for u in uniques], dtype=bool)
        missing[np.flatnonzero(text)[blank[inverse]]] = True
    return missing


def _typed_keys(values: pd.Series) -> np.ndarray:
    """Typed values as keys that keep their type: True, 1 and 1.0 stay three values (a
    factorisation of them as values would read them all as the first one met)."""
    keys = np.empty(len(values), dtype=object)
    keys[:] = list(zip(map(type, values), values))
    return keys


def typed_numbers(values: pd.Series) -> np.ndarray:
    """Typed values as numbers (booleans as 0 and 1), NaN where one is not a number."""
    from pandas.api import types

    if types.is_numeric_dtype(values.dtype) or types.is_bool_dtype(values.dtype):
        return values.to_numpy(dtype=np.float64)
    return np.array([float(v) if isinstance(v, (int, float, np.number)) else np.nan
                     for v in values], dtype=np.float64)


def read_numbers(values: pd.Series) -> np.ndarray:
    """Values that are not missing as numbers, each on its own (text by
    :data:`dpgm.schema.parse.NUMBER`); NaN where one is not a number."""
    import pandas as pd

    text = text_values(values)
    numbers = np.empty(len(values), dtype=np.float64)
    if text.any():  # each distinct text read once (on its own all the same)
        inverse, uniques = pd.factorize(values[text])
        numbers[text] = parse.numbers(np.array([parse.strip(v) for v in uniques],
                                               dtype=object))[inverse]
    numbers[~text] = typed_numbers(values[~text])
    return numbers


def _naive(name: str) -> DataError:
    return DataError(f"column {name!r} has times with a time zone; convert them to naive times")


def _micros(times: np.ndarray) -> np.ndarray:
    """datetime64 values as whole microseconds since 1970, rounded down (int64)."""
    if np.datetime_data(times.dtype)[0] == "ns":
        return times.view(np.int64) // 1000
    return times.astype("datetime64[us]").view(np.int64)


def typed_micros(values: pd.Series, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Typed times in whole microseconds since 1970, and which values are times (numbers
    are not); a DataError for a time with a time zone."""
    import datetime

    import pandas as pd
    from pandas.api import types

    if types.is_datetime64_any_dtype(values.dtype):
        if getattr(values.dt, "tz", None) is not None:
            raise _naive(name)
        return _micros(values.to_numpy()), np.ones(len(values), dtype=bool)
    micros = np.zeros(len(values), dtype=np.int64)
    found = np.zeros(len(values), dtype=bool)
    for i, value in enumerate(values):  # an object column's times, one by one
        if isinstance(value, (datetime.date, np.datetime64)):
            time = pd.Timestamp(value)
            if time.tzinfo is not None:
                raise _naive(name)
            micros[i], found[i] = _micros(np.array([time.asm8]))[0], True
    return micros, found


def read_micros(values: pd.Series, fmt: parse.TimeFormat, name: str
                ) -> tuple[np.ndarray, np.ndarray]:
    """Values that are not missing as whole microseconds since 1970, each on its own (text
    in ``fmt`` alone), and which of them are times."""
    text = text_values(values)
    micros = np.zeros(len(values), dtype=np.int64)
    found = np.zeros(len(values), dtype=bool)
    stripped = np.array([parse.strip(v) for v in values[text]], dtype=object)
    micros[text], found[text] = parse.times(stripped, fmt)
    micros[~text], found[~text] = typed_micros(values[~text], name)
    return micros, found


def _number(name: str, what: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise DomainError(f"column {name!r}: {what} must be a finite number, got {value!r}")
    return float(value)


class Column(ABC):
    """A column's public description (see the module docstring)."""

    kind: ClassVar[str]

    def __init__(self, name: str, nullable: bool = False):
        if not isinstance(name, str) or not name:
            raise DomainError(f"column names must be non-empty strings, got {name!r}")
        if not isinstance(nullable, bool):
            raise DomainError(f"column {name!r}: nullable must be true or false")
        self.name = name
        self.nullable = nullable

    # -- the integer view -------------------------------------------------------------
    @property
    @abstractmethod
    def values_labels(self) -> tuple[Label, ...]:
        """The labels of the codes of present values, in code order."""

    @property
    def labels(self) -> tuple[Label, ...]:
        """One label per code; the missing code (if nullable) is labelled None."""
        return self.values_labels + ((MISSING,) if self.nullable else ())

    @property
    def size(self) -> int:
        return len(self.labels)

    @property
    def missing_code(self) -> int | None:
        return self.size - 1 if self.nullable else None

    # -- codes ------------------------------------------------------------------------
    def encode(self, values: pd.Series) -> np.ndarray:
        """The codes of ``values``, each value read on its own (a DataError names the first
        value that has none, and its row)."""
        import pandas as pd

        if not isinstance(values, pd.Series):
            values = pd.Series(values, dtype=object)
        codes = self._codes(values)
        missing = codes == _MISSING
        if missing.any():
            if not self.nullable:
                i = int(np.flatnonzero(missing)[0])
                value = values.iloc[i]
                blank = isinstance(value, str) and not parse.strip(value)
                what = ("a blank cell, or a row with fewer fields than the header" if blank
                        else repr(value))
                raise DataError(
                    f"column {self.name!r} has a missing value ({what}) at row "
                    f"{values.index[i]}; declare the column \"nullable\": true in the schema "
                    "to keep missing values"
                )
            codes[missing] = self.missing_code
        bad = np.flatnonzero(codes == _NONE)
        if bad.size:
            i = int(bad[0])
            raise DataError(self.problem(values.iloc[i], f" at row {values.index[i]}"))
        return codes

    def _codes(self, values: pd.Series) -> np.ndarray:
        """Each value's code, ``_MISSING`` or ``_NONE``: text by the text rules (once per
        distinct text), typed values by their value."""
        import pandas as pd

        codes = np.full(len(values), _NONE, dtype=np.int64)
        text = text_values(values)
        if text.any():
            inverse, uniques = pd.factorize(values[text].astype(object))
            raw = np.asarray(uniques, dtype=object)
            stripped = np.array([parse.strip(u) for u in raw], dtype=object)
            absent = parse.missing_texts(self._label_texts())
            # parse.is_missing_text, with each text stripped once
            blank = np.array([r in absent or not t for r, t in zip(raw, stripped)], dtype=bool)
            found = np.full(len(raw), _MISSING, dtype=np.int64)
            if (~blank).any():
                found[~blank] = self._text_codes(raw[~blank], stripped[~blank])
            codes[text] = found[inverse]
        typed = np.flatnonzero(~text)
        if typed.size:
            values = values.iloc[typed]
            missing = np.asarray(pd.isna(values), dtype=bool)
            found = np.full(len(values), _MISSING, dtype=np.int64)
            if (~missing).any():
                found[~missing] = self._typed_codes(values[~missing])
            codes[typed] = found
        return codes

    def _label_texts(self) -> Sequence[object]:
        """Labels whose text is not read as missing in this column."""
        return ()

    @abstractmethod
    def _text_codes(self, raw: np.ndarray, stripped: np.ndarray) -> np.ndarray:
        """Codes (or ``_NONE``) of distinct texts that are not missing: as written, and
        without white space at either end."""

    @abstractmethod
    def _typed_codes(self, values: pd.Series) -> np.ndarray:
        """Codes (or ``_NONE``) of typed values that are not missing."""

    @abstractmethod
    def problem(self, value: object, where: str = "") -> str:
        """Why ``value`` has no code in this column (an error message; ``where``: the
        value's place, such as " at row 3")."""

    def decode(self, codes: np.ndarray, rng: np.random.Generator) -> pd.Series:
        """Values in original units for ``codes`` (missing where the code says so)."""
        codes = np.asarray(codes, dtype=np.int64)
        missing = codes == self.missing_code if self.nullable else np.zeros(len(codes), bool)
        return self._decode(codes, missing, rng)

    @abstractmethod
    def _decode(self, codes: np.ndarray, missing: np.ndarray, rng: np.random.Generator):
        """Values for codes (``missing`` marks the missing code)."""

    def code(self, value: object) -> int:
        """The code of one raw value (for conditioning and constraints)."""
        import pandas as pd

        code = int(self._codes(pd.Series([value], dtype=object))[0])
        if code == _MISSING:
            if not self.nullable:
                raise DataError(f"column {self.name!r} is not nullable: no missing value")
            return int(self.missing_code)
        if code == _NONE:
            raise DataError(self.problem(value))
        return code

    def outside(self, value: object) -> bool:
        """Whether a value (read as :meth:`code` reads it) lies outside the public bounds,
        where encoding would clip it."""
        return False

    def bounds_text(self) -> str:
        """The public bounds, as a person reads them."""
        return ""

    # -- the file format --------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        out.update(self._json())
        if self.nullable:
            out["nullable"] = True
        return out

    @abstractmethod
    def _json(self) -> dict[str, Any]: ...

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, {self.to_json()})"

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is type(self)
            and other.name == self.name  # type: ignore[attr-defined]
            and other.to_json() == self.to_json()  # type: ignore[attr-defined]
        )

    __hash__ = None  # type: ignore[assignment]


class _TextRules:
    """How a text finds its label (:mod:`dpgm.schema.parse`; the SQL encoding follows the
    same rules in the same order): the label written exactly so; then a number, boolean or
    whole-number text label equal to the number (or boolean spelling) the text writes; then
    a label whose text or number the stripped text writes. The first rule that matches, in
    label order, wins."""

    _SPELLINGS = {True: ("True", "TRUE", "true"), False: ("False", "FALSE", "false")}

    def __init__(self, labels: Sequence[Label]):
        self.by_value: dict[str, int] = {}
        self.by_number: dict[float, int] = {}  # labels that are (whole) numbers
        self.by_spelling: dict[str, int] = {}  # booleans
        self.by_text: dict[str, tuple[int, int]] = {}  # (rule order, code)
        self.by_decimal: dict[float, tuple[int, int]] = {}
        for code, label in enumerate(labels):
            text = str(label).strip()
            if isinstance(label, bool):
                for spelling in self._SPELLINGS[label]:
                    self.by_spelling.setdefault(spelling, code)
            elif isinstance(label, (int, float)):
                self.by_number.setdefault(float(label), code)
            else:
                self.by_value.setdefault(label, code)
                if parse.canonical_int(text):
                    self.by_number.setdefault(float(int(text)), code)
                if parse.canonical_float(text):
                    self.by_decimal.setdefault(float(text), (2 * code, code))
            self.by_text.setdefault(text, (2 * code + 1, code))

    def code(self, raw: str, stripped: str) -> int | None:
        """The code of a text that is not missing, or None."""
        code = self.by_value.get(raw)
        if code is not None:
            return code
        number = parse.number(stripped)
        # a text writes a number or a boolean spelling, not both: one of these at most
        code = self.by_spelling.get(stripped)
        if code is None and number is not None:
            code = self.by_number.get(number)
        if code is not None:
            return code
        found = [self.by_text.get(stripped)]
        if number is not None:
            found.append(self.by_decimal.get(number))
        found = [f for f in found if f is not None]
        return min(found)[1] if found else None


class Categorical(Column):
    """Labels (strings, numbers or booleans), and optionally an "other" code for the rest.

    ``other``: False (a value not in ``labels`` is an error), True (it gets the code
    labelled ``"other"``), or the label to use. ``dtype`` restores the original pandas
    dtype on decoding (default: from the labels — bool, int64, float64 or strings; the
    nullable ``boolean`` / ``Int64`` where values can be missing).
    """

    kind = "categorical"

    def __init__(
        self,
        name: str,
        labels: Sequence[Label],
        *,
        other: bool | str = False,
        nullable: bool = False,
        dtype: str | None = None,
    ):
        super().__init__(name, nullable)
        if isinstance(labels, (str, bytes)) or not isinstance(labels, Sequence):
            raise DomainError(f"column {name!r}: labels must be a list, got {labels!r}")
        labels = tuple(labels)
        if not labels and other is False:
            raise DomainError(f"column {name!r} has no labels; list them in the schema")
        for label in labels:
            if label is None or not isinstance(label, (str, int, float, bool)):
                raise DomainError(
                    f"column {name!r}: label {label!r} must be a string, number or boolean "
                    '(missing values are declared with "nullable": true)'
                )
        if other is True:
            other = DEFAULT_OTHER
        if other is not False and not isinstance(other, str):
            raise DomainError(f"column {name!r}: other must be true, false or a label")
        self.given = labels
        self.other: str | None = other or None
        if self.other is not None and self.other in labels:
            raise DomainError(f"column {name!r}: the other label {other!r} is also a label")
        if dtype is not None and not isinstance(dtype, str):
            raise DomainError(f"column {name!r}: dtype must be a string such as 'category'")
        self.dtype = dtype
        self._lookup: dict[tuple[bool, object], int] = {}
        self._text: dict[str, int] = {}
        for code, label in enumerate(labels):
            key = (isinstance(label, bool), label)
            if key in self._lookup:
                raise DomainError(f"column {name!r} lists the label {label!r} twice")
            self._lookup[key] = code
            text = str(label).strip()
            if text in self._text:
                raise DomainError(
                    f"column {name!r}: the labels {labels[self._text[text]]!r} and {label!r} "
                    f"are both written {text!r}; a table could not tell them apart"
                )
            self._text[text] = code
        if self.other is not None and self.other.strip() in self._text:
            raise DomainError(f"column {name!r}: the other label {self.other!r} is written as "
                              "a label is")
        self._text_rules = _TextRules(labels)

    @property
    def values_labels(self) -> tuple[Label, ...]:
        return self.given + ((self.other,) if self.other is not None else ())

    def code(self, value: object) -> int:
        """The code of a label (or of the "other" label): strict, nothing falls into other."""
        if value is not None and self.other is not None and value == self.other:
            return len(self.given)
        if isinstance(value, str):
            text = parse.strip(value)
            code = None if text == "" else self._text_rules.code(value, text)
        else:
            code = self._code_of(value)
        if code is None:
            raise DataError(f"{value!r} is not a label of column {self.name!r}")
        return code

    def _code_of(self, value: object) -> int | None:
        """The code of a typed value: by value, then (a whole number) by the integer's
        text, then by its text."""
        if isinstance(value, np.generic):
            value = value.item()
        code = self._lookup.get((isinstance(value, bool), value))
        if code is not None:
            return code
        if isinstance(value, float) and value.is_integer():
            code = self._text.get(str(int(value)))
            if code is not None:
                return code
        return self._text.get(str(value).strip())

    def _label_texts(self) -> Sequence[object]:
        return self.given

    def _otherwise(self) -> int:
        return _NONE if self.other is None else len(self.given)

    def _text_codes(self, raw, stripped):
        otherwise = self._otherwise()
        codes = [self._text_rules.code(r, s) for r, s in zip(raw, stripped)]
        return np.array([otherwise if c is None else c for c in codes], dtype=np.int64)

    def _typed_codes(self, values):
        import pandas as pd

        otherwise = self._otherwise()
        inverse, uniques = pd.factorize(_typed_keys(values))
        found = [self._code_of(value) for _, value in uniques]
        return np.array([otherwise if c is None else c for c in found], dtype=np.int64)[inverse]

    def problem(self, value: object, where: str = "") -> str:
        shown = list(self.given)
        shown = shown if len(shown) <= 12 else shown[:12] + ["..."]
        return (f"column {self.name!r} has the value {value!r}{where}, which is not one of "
                f"its labels {shown}; add it to the schema's labels, or declare \"other\": "
                'true to gather such values under "other"')

    def _output_dtype(self) -> str | None:
        kinds = {type(label) for label in self.given}
        has_na = self.nullable
        if self.other is not None and kinds != {str}:
            return "object"
        if kinds == {bool}:
            return "boolean" if has_na else "bool"
        if kinds == {int}:
            return "Int64" if has_na else "int64"
        if kinds <= {int, float}:
            return "float64"
        return None  # strings: pandas' own string dtype, as read_csv gives

    def _decode(self, codes, missing, rng):
        import pandas as pd

        table = np.array(list(self.values_labels) + [None], dtype=object)
        values = table[np.where(missing, len(table) - 1, codes)]
        if self.dtype == "category":
            return pd.Series(
                pd.Categorical(values, categories=list(self.values_labels)), name=self.name
            )
        dtype = self.dtype or self._output_dtype()
        if dtype is None:
            # pandas' string dtype as read_csv gives, taken from the labels (public), never
            # from the values drawn: every chunk of records gets the same dtype, even one
            # whose values are all missing
            strings = all(isinstance(label, str) for label in self.values_labels)
            dtype = pd.Series(list(self.values_labels)).dtype if strings else object
            return pd.Series(values.tolist(), name=self.name, dtype=dtype)
        if dtype == "float64":
            values = np.where(missing, np.nan, values)
        return pd.Series(values, name=self.name).astype(dtype)

    def _json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"labels": list(self.given)}
        if self.other is not None:
            out["other"] = True if self.other == DEFAULT_OTHER else self.other
        if self.dtype is not None:
            out["dtype"] = self.dtype
        return out


def _format(x: float, digits: int = 6) -> str:
    return f"{x:.{digits}g}"


def _distinct_labels(make) -> tuple[str, ...]:
    """``make(digits)``'s labels with the fewest significant digits (6 at least) that
    write them all apart: close edges (learnt, or cut into sub-bins) need more."""
    for digits in range(6, 18):
        labels = make(digits)
        if len(set(labels)) == len(labels):
            return labels
    return labels


def grid_steps(values: np.ndarray, unit: float) -> np.ndarray:
    """``values`` in steps of ``unit``, a value within float noise of a step put on it (0.3
    is 3 steps of 0.1, not 2.9999999999999996)."""
    scaled = np.asarray(values, dtype=np.float64) / unit
    near = np.round(scaled)
    return np.where(np.abs(scaled - near) <= 1e-9, near, scaled)


def _plain_number(x: float) -> int | float:
    """A bound as JSON writes it best: 18, not 18.0."""
    x = float(x)
    return int(x) if x.is_integer() and abs(x) < 2**53 else x


class Numeric(Column):
    """Numbers between public bounds, in bins; values outside the bounds are clipped.

    ``bins`` is a number of equal-width bins between ``lower`` and ``upper``, or the
    edges themselves (increasing; the first and last are the bounds). Bin ``i`` holds
    ``[e_i, e_{i+1})``; the last holds its upper edge too. ``integer=True`` (whole
    numbers) or ``decimals`` gives the values a grid: decoding then draws uniformly among
    the values of the grid inside a cell, and every bin must hold one. Without a grid it
    draws uniformly on the line inside the cell.

    ``refine`` F (default 1) cuts every bin into F equal sub-bins: the column's codes are
    the K·F fine cells, and mechanisms that measure at two resolutions (AIM, MST) hold it
    as its bin and its place in the bin (:mod:`dpgm.models.refinement`): the one-way
    distribution measured at the fine level, pairs at the bins'. ``bins`` (and
    ``to_json``) stay the coarse bins. A sub-bin may be finer than the grid: one that
    holds no value of it decodes to the value of its bin just below it.

    Why clip: differential privacy bounds what one record can change, and a value far
    outside the public range would otherwise need a code of its own — revealing that
    such a value exists. Clipping puts it in the first or last bin instead.
    """

    kind = "numeric"

    def __init__(
        self,
        name: str,
        lower: float | None = None,
        upper: float | None = None,
        bins: int | Sequence[float] = 10,
        *,
        integer: bool = False,
        decimals: int | None = None,
        refine: int = 1,
        nullable: bool = False,
    ):
        super().__init__(name, nullable)
        if isinstance(refine, bool) or not isinstance(refine, int) or not 1 <= refine <= MAX_BINS:
            raise DomainError(f"column {name!r}: refine must be a whole number from 1 to "
                              f"{MAX_BINS:,}")
        self.refine = refine
        if not isinstance(integer, bool):
            raise DomainError(f"column {name!r}: integer must be true or false")
        if decimals is not None and (
            isinstance(decimals, bool) or not isinstance(decimals, int) or decimals < 0
        ):
            raise DomainError(f"column {name!r}: decimals must be a whole number >= 0")
        self.integer = integer
        self.decimals = decimals
        if isinstance(bins, Sequence) and not isinstance(bins, str):
            edges = [_number(name, "a bin edge", e) for e in bins]
            if len(edges) < 2 or any(b <= a for a, b in zip(edges, edges[1:])):
                raise DomainError(
                    f"column {name!r}: bin edges must be at least two increasing numbers"
                )
            for bound, edge, which in ((lower, edges[0], "lower"), (upper, edges[-1], "upper")):
                if bound is not None and _number(name, which, bound) != edge:
                    raise DomainError(f"column {name!r}: {which} differs from the bin edges")
            self.edges = np.array(edges)
            self.count: int | None = None
        else:
            if lower is None or upper is None:
                raise DomainError(
                    f"column {name!r} needs public bounds: give lower and upper (from public "
                    "knowledge, or learn them privately with dpgm schema discover)"
                )
            lo, hi = _number(name, "lower", lower), _number(name, "upper", upper)
            if not lo < hi:
                raise DomainError(f"column {name!r}: lower {lo:g} must be below upper {hi:g}")
            if isinstance(bins, bool) or not isinstance(bins, int) or bins < 1:
                raise DomainError(
                    f"column {name!r}: bins must be a whole number >= 1 or a list of edges"
                )
            if bins > MAX_BINS:  # checked before the edges are built
                raise DomainError(f"column {name!r}: {bins:,} bins, over {MAX_BINS:,}; use "
                                  "fewer bins")
            # 15 significant digits: 0.1 * 3 is the edge 0.3, not 0.30000000000000004
            self.edges = np.array([float(f"{e:.15g}") for e in np.linspace(lo, hi, bins + 1)])
            self.count = bins
        self.coarse_edges = self.edges
        if refine > 1:
            if (len(self.edges) - 1) * refine > MAX_BINS:  # before the edges are built
                raise DomainError(f"column {name!r}: {len(self.edges) - 1:,} bins of {refine} "
                                  f"sub-bins, over {MAX_BINS:,}; refine less")
            fine = [np.linspace(a, b, refine + 1)[:-1] for a, b in
                    zip(self.edges[:-1], self.edges[1:])]
            self.edges = np.array([float(f"{e:.15g}") for e in np.concatenate(fine)]
                                  + [self.edges[-1]])
        self._grid = None if not integer and decimals is None else self._grid_steps()

    @property
    def unit(self) -> float | None:
        """The step of the values' grid: 1 for whole numbers, 10^−decimals, or None."""
        if self.integer:
            return 1.0
        return None if self.decimals is None else 10.0**-self.decimals

    def _grid_steps(self) -> tuple[np.ndarray, np.ndarray]:
        """For each cell, the first and last step k of the grid (values k·unit) it decodes
        to. Every bin must hold a value of the grid. A sub-bin that holds none (a bin cut
        finer than its grid: an atom learnt as a bin one step wide) decodes to the nearest
        value of its bin below it: its mass stays in its bin."""
        unit = self.unit

        def steps(edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            scaled = grid_steps(edges, unit)
            first = np.ceil(scaled[:-1])  # the first value of the grid at or after a's edge
            last = np.concatenate([np.ceil(scaled[1:-1]) - 1, [np.floor(scaled[-1])]])
            return first, last

        def value(k: np.ndarray) -> np.ndarray:  # as _draw writes step k
            return k if self.integer else np.round(k * unit, self.decimals)

        def steps_exact(edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            # the first and last step whose written value the encoder puts in each cell
            # (an edge such as 0.30000000000000004 is above the value 0.3)
            first, last = steps(edges)
            first = np.where(value(first) < edges[:-1], first + 1, first)
            first = np.where(value(first - 1) >= edges[:-1], first - 1, first)
            upper = np.concatenate([edges[1:-1], [np.inf]])
            last = np.where(value(last) >= upper, last - 1, last)
            last = np.where((value(last + 1) < upper) & (value(last + 1) <= edges[-1]),
                            last + 1, last)
            return first, last

        coarse_first, coarse_last = steps_exact(self.coarse_edges)
        empty = np.flatnonzero(coarse_first > coarse_last)
        if empty.size:
            i = int(empty[0])
            a, b = _format(self.coarse_edges[i]), _format(self.coarse_edges[i + 1])
            raise DomainError(
                f"column {self.name!r}: bin [{a}, {b}) holds no whole number; use fewer bins"
                if self.integer else
                f"column {self.name!r}: bins narrower than {self.decimals} decimals can show "
                f"([{a}, {b}) holds no value written with {self.decimals} decimals)")
        first, last = steps_exact(self.edges)
        self._hollow = first > last  # sub-bins that hold no value of the grid
        if self.refine > 1:  # a sub-bin without a value of the grid: the nearest in its bin
            of_bin = np.repeat(np.arange(len(coarse_first)), self.refine)
            below = np.clip(first - 1, coarse_first[of_bin], coarse_last[of_bin])
            first = np.where(self._hollow, below, first)
            last = np.where(self._hollow, below, last)
        return first, last

    @property
    def lower(self) -> float:
        return float(self.edges[0])

    @property
    def upper(self) -> float:
        return float(self.edges[-1])

    @property
    def values_labels(self) -> tuple[Label, ...]:
        e = self.edges
        n = len(e) - 1
        if self.integer:
            first, last = self._grid
            # a sub-bin that holds no whole number is named by its range
            return _distinct_labels(lambda k: tuple(
                f"[{_format(e[i], k)}, {_format(e[i + 1], k)})" if hollow
                else _format(a, k) if a == b else f"{_format(a, k)}-{_format(b, k)}"
                for i, (a, b, hollow) in enumerate(zip(first, last, self._hollow))))
        return _distinct_labels(lambda k: tuple(
            f"[{_format(e[i], k)}, {_format(e[i + 1], k)}{']' if i == n - 1 else ')'}"
            for i in range(n)))

    def _bin(self, numbers: np.ndarray) -> np.ndarray:
        clipped = np.clip(numbers, self.edges[0], self.edges[-1])
        codes = np.searchsorted(self.edges, clipped, side="right") - 1
        return np.minimum(codes, len(self.edges) - 2)

    def _binned(self, numbers: np.ndarray) -> np.ndarray:
        """Codes of numbers; ``_NONE`` for NaN (not a number) and infinities."""
        finite = np.isfinite(numbers)
        codes = np.full(len(numbers), _NONE, dtype=np.int64)
        codes[finite] = self._bin(numbers[finite])
        return codes

    def _text_codes(self, raw, stripped):
        return self._binned(parse.numbers(stripped))

    def _typed_codes(self, values):
        return self._binned(typed_numbers(values))

    def outside(self, value: object) -> bool:
        import pandas as pd

        number = read_numbers(pd.Series([value], dtype=object))[0]
        return bool(number < self.lower or number > self.upper)

    def bounds_text(self) -> str:
        return f"[{_format(self.lower)}, {_format(self.upper)}]"

    def problem(self, value: object, where: str = "") -> str:
        try:  # "inf" has no code either way: it is not a number of parse.NUMBER's
            number = float(parse.strip(value)) if isinstance(value, str) else value
        except ValueError:
            number = None
        infinite = isinstance(number, (int, float, np.number)) and np.isinf(number)
        what = "an infinite" if infinite else "a non-numeric"
        return f"column {self.name!r} has {what} value {value!r}{where}"

    def _draw(self, codes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """A number drawn uniformly inside each code's cell: among the values of its grid
        (whole numbers, or the decimals) where the column has one."""
        if self._grid is None:
            low, high = self.edges[codes], self.edges[codes + 1]
            return low + rng.random(len(codes)) * (high - low)
        first, last = self._grid
        # in floating point: a grid of more than 2^63 steps draws as well (k stays exact
        # up to 2^53, beyond which a float cannot write the value anyway)
        steps = first[codes] + np.floor(rng.random(len(codes))
                                        * (last[codes] - first[codes] + 1))
        steps = np.minimum(steps, last[codes])
        if self.integer:
            return steps
        return np.round(steps * self.unit, self.decimals)

    def _decode(self, codes, missing, rng):
        import pandas as pd

        values = np.full(len(codes), np.nan)
        present = ~missing
        values[present] = self._draw(codes[present], rng)
        series = pd.Series(values, name=self.name)
        if self.integer:
            return series.astype("Int64" if self.nullable else "int64")
        return series

    def _json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.count is None:
            out["bins"] = [_plain_number(e) for e in self.coarse_edges]
        else:
            out.update(
                lower=_plain_number(self.lower), upper=_plain_number(self.upper), bins=self.count
            )
        if self.integer:
            out["integer"] = True
        if self.decimals is not None:
            out["decimals"] = self.decimals
        if self.refine > 1:
            out["refine"] = self.refine
        return out


class Datetime(Column):
    """Dates and times between public bounds, in bins of a fixed width (``"30D"``, ``"1h"``;
    default ``"30D"``) or between given edges (``bins``: increasing dates, the first and
    last the bounds; as :func:`dpgm.discover.discover` learns them).

    ``refine`` F (default 1) cuts every bin into F sub-bins on the ``resolution`` grid,
    as for :class:`Numeric`: the fine cells are the codes, the bins the coarse level.
    Values outside the bounds are clipped (see :class:`Numeric`); decoding draws a time
    uniformly inside its cell and floors it to ``resolution`` (default: a day when every
    edge is a whole day, else a second). Times without a time zone.

    ``format``: how times are written in text, a strftime format such as ``"%d/%m/%Y"``
    (directives %Y %m %d %H %M %S %f, each at full width); by default ISO 8601. No format
    is ever guessed from the values (see :mod:`dpgm.schema.parse`).
    """

    kind = "datetime"

    def __init__(
        self,
        name: str,
        lower: str | None = None,
        upper: str | None = None,
        width: str | None = None,
        *,
        bins: Sequence[str] | None = None,
        refine: int = 1,
        resolution: str | None = None,
        format: str | None = None,  # noqa: A002 (the schema's word)
        nullable: bool = False,
    ):
        import pandas as pd

        super().__init__(name, nullable)
        self.format = parse.time_format(format, name)
        if isinstance(refine, bool) or not isinstance(refine, int) or not 1 <= refine <= MAX_BINS:
            raise DomainError(f"column {name!r}: refine must be a whole number from 1 to "
                              f"{MAX_BINS:,}")
        if bins is not None and width is not None:
            raise DomainError(f"column {name!r}: give bins (the edges) or a width, not both")
        try:
            if bins is not None:
                if isinstance(bins, str) or not isinstance(bins, Sequence) or len(bins) < 2:
                    raise ValueError("bins must be a list of at least two dates (the edges)")
                stamps = [pd.Timestamp(b) for b in bins]
                if any(b <= a for a, b in zip(stamps, stamps[1:])):
                    raise ValueError("bin edges must be increasing dates")
                for bound, which, edge in ((lower, "lower", stamps[0]),
                                           (upper, "upper", stamps[-1])):
                    if bound is not None and pd.Timestamp(bound) != edge:
                        raise ValueError(f"{which} differs from the bin edges")
                lo, hi, step = stamps[0], stamps[-1], None
            else:
                if lower is None or upper is None:
                    raise ValueError("give lower and upper (or the bin edges)")
                lo, hi = pd.Timestamp(lower), pd.Timestamp(upper)
                stamps, step = [], pd.Timedelta(width or "30D")
        except (TypeError, ValueError) as exc:
            raise DomainError(f"column {name!r}: {exc}") from None
        if any(s.tzinfo is not None for s in (lo, hi, *stamps)):
            raise DomainError(f"column {name!r}: give bounds without a time zone")
        if not lo < hi or (step is not None and step <= pd.Timedelta(0)):
            raise DomainError(f"column {name!r}: need lower < upper and a positive width")
        if step is not None:
            count = math.ceil((hi - lo) / step)
            if count * refine > MAX_BINS:
                raise DomainError(f"column {name!r}: {count * refine:,} bins, over "
                                  f"{MAX_BINS:,}; use a wider bin width")
            coarse = lo.value + step.value * np.arange(count + 1, dtype=np.int64)
            coarse[-1] = hi.value
        else:
            coarse = np.array([s.value for s in stamps], dtype=np.int64)
            if (len(coarse) - 1) * refine > MAX_BINS:
                raise DomainError(f"column {name!r}: {len(coarse) - 1:,} bins of {refine} "
                                  f"sub-bins, over {MAX_BINS:,}; refine less")
        self._given_resolution = resolution
        if resolution is None:
            day = pd.Timedelta("1D").value
            whole_days = (not (coarse % day).any() if step is None
                          else step % pd.Timedelta("1D") == pd.Timedelta(0))
            resolution = "1D" if whole_days else "1s"
        try:
            self._resolution_ns = pd.Timedelta(resolution).value
        except (TypeError, ValueError) as exc:
            raise DomainError(f"column {name!r}: resolution: {exc}") from None
        if self._resolution_ns <= 0:
            raise DomainError(f"column {name!r}: resolution must be positive")
        self.lower, self.upper, self.width = lo, hi, step
        self.resolution, self.refine = resolution, refine
        self.coarse_edges = coarse
        self._ns = coarse if refine == 1 else self._refined(coarse, refine)
        self._unit = "%Y-%m-%d" if resolution == "1D" else "%Y-%m-%d %H:%M:%S"

    def _refined(self, coarse: np.ndarray, refine: int) -> np.ndarray:
        """Each bin cut into ``refine`` sub-bins whose edges lie on the resolution grid
        (counted from the bin's start): a bin must hold ``refine`` steps of it."""
        step = self._resolution_ns
        steps = np.diff(coarse) // step  # whole steps in each bin
        if steps.min() < refine:
            raise DomainError(f"column {self.name!r}: a bin holds fewer than {refine} steps "
                              f"of {self.resolution}; refine less")
        k = np.arange(refine, dtype=np.int64)
        fine = coarse[:-1, None] + (steps[:, None] * k[None, :] // refine) * step
        return np.concatenate([fine.ravel(), coarse[-1:]])

    @property
    def edges(self) -> np.ndarray:
        """The bin edges in nanoseconds since 1970 (int64); the first and last are the
        bounds."""
        return self._ns

    @property
    def values_labels(self) -> tuple[Label, ...]:
        import pandas as pd

        starts = pd.to_datetime(self._ns[:-1]).strftime(self._unit)
        return tuple(str(s) for s in starts)

    def _bin_micros(self, micros: np.ndarray) -> np.ndarray:
        """Codes of times in whole microseconds (any year: clipped before they become ns;
        a time is read to the microsecond, as the SQL engines read it)."""
        low, high = self._ns[0] // 1000 - 1, self._ns[-1] // 1000 + 1
        ns = np.clip(micros, low, high) * 1000
        clipped = np.clip(ns, self._ns[0], self._ns[-1])
        return np.minimum(np.searchsorted(self._ns, clipped, side="right") - 1, len(self._ns) - 2)

    def _coded(self, micros: np.ndarray, found: np.ndarray) -> np.ndarray:
        codes = np.full(len(micros), _NONE, dtype=np.int64)
        codes[found] = self._bin_micros(micros[found])
        return codes

    def _text_codes(self, raw, stripped):
        return self._coded(*parse.times(stripped, self.format))

    def _typed_codes(self, values):
        return self._coded(*typed_micros(values, self.name))

    def outside(self, value: object) -> bool:
        import pandas as pd

        micros, found = read_micros(pd.Series([value], dtype=object), self.format, self.name)
        return bool(found[0] and not self._ns[0] <= micros[0] * 1000 <= self._ns[-1])

    def bounds_text(self) -> str:
        return f"[{self.lower}, {self.upper}]"

    def problem(self, value: object, where: str = "") -> str:
        written = ("ISO 8601 form, such as 2020-01-31 or 2020-01-31 12:00:00"
                   if self.format.iso else f"the schema's format {self.format.strftime!r}")
        return (f"column {self.name!r} has a value {value!r}{where} that is not a date written in "
                f"{written}")

    def _decode(self, codes, missing, rng):
        import pandas as pd

        ns = np.zeros(len(codes), dtype=np.int64)
        present = ~missing
        low, high = self._ns[codes[present]], self._ns[codes[present] + 1]
        drawn = low + (rng.random(int(present.sum())) * (high - low)).astype(np.int64)
        # floor to the resolution, but never below the bin's start
        step = self._resolution_ns
        ns[present] = np.maximum(low + ((drawn - low) // step) * step, low)
        times = pd.Series(ns.view("datetime64[ns]"), name=self.name)
        times[missing] = pd.NaT
        return times

    def _json(self) -> dict[str, Any]:
        import pandas as pd

        fmt = "%Y-%m-%d" if self.resolution == "1D" else "%Y-%m-%dT%H:%M:%S"
        out: dict[str, Any]
        if self.width is None:  # the edges as given: to the second where one is not a day
            day = pd.Timedelta("1D").value
            edge_fmt = "%Y-%m-%d" if not (self.coarse_edges % day).any() else None
            out = {"bins": [pd.Timestamp(int(e)).strftime(edge_fmt) if edge_fmt
                            else pd.Timestamp(int(e)).isoformat() for e in self.coarse_edges]}
        else:
            out = {"lower": self.lower.strftime(fmt), "upper": self.upper.strftime(fmt),
                   "width": _timedelta_text(self.width)}
        if self.refine > 1:
            out["refine"] = self.refine
        if self._given_resolution is not None:
            out["resolution"] = self._given_resolution
        if not self.format.iso:
            out["format"] = self.format.strftime
        return out


def _timedelta_text(step) -> str:
    days = step / np.timedelta64(1, "D")
    if float(days).is_integer():
        return f"{int(days)}D"
    return f"{int(step.total_seconds())}s"


KINDS: dict[str, type[Column]] = {c.kind: c for c in (Categorical, Numeric, Datetime)}


def column_from_json(name: str, spec: Mapping[str, Any]) -> Column:
    """A column from its JSON description (``{"kind": ..., ...}``)."""
    if not isinstance(spec, Mapping):
        raise DomainError(f"column {name!r}: expected an object with a kind, got {spec!r}")
    spec = dict(spec)
    kind = spec.pop("kind", None)
    if kind not in KINDS:
        raise DomainError(
            f"column {name!r}: kind must be one of {sorted(KINDS)}, got {kind!r}"
        )
    spec.pop("note", None)  # free text for the steward
    if kind == "categorical" and spec.get("labels") is None:
        raise DomainError(f"column {name!r} has no labels: list them from public knowledge, "
                          "or learn them privately with dpgm schema discover")
    if kind == "datetime" and spec.get("bins") is None and (
            spec.get("lower") is None or spec.get("upper") is None):
        raise DomainError(f"column {name!r} needs public bounds: give lower and upper (from "
                          "public knowledge, or learn them privately with dpgm schema "
                          "discover)")
    # a field left null in a draft takes its default (a draft lists every field, for
    # every kind, with nulls to fill: those of the other kinds stay null)
    spec = {key: value for key, value in spec.items() if value is not None}
    import inspect

    fields = [p for p in inspect.signature(KINDS[kind]).parameters if p != "name"]
    unknown = [key for key in spec if key not in fields]
    if unknown:
        raise DomainError(f"column {name!r} ({kind}) has no field {unknown[0]!r}; a {kind} "
                          f"column has {', '.join(fields)}")
    try:
        return KINDS[kind](name, **spec)
    except TypeError as exc:
        raise DomainError(f"column {name!r} ({kind}): {exc}") from None
