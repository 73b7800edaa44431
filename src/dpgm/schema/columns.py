"""One column of a public schema: its kind, its public values, and its integer codes.

Every column maps raw values to codes ``0..size-1`` (:meth:`Column.encode`) and codes
back to values in original units (:meth:`Column.decode`):

* :class:`Categorical` — a list of labels, an optional "other" code for values not in
  the list;
* :class:`Numeric` — public bounds and bins; values outside the bounds are clipped;
* :class:`Datetime` — public bounds and a bin width; clipped like numbers.

A ``nullable`` column has one more code, the last, for a missing value. Everything a
column holds is public: it is written by the data steward (or learnt privately, see
:mod:`dpgm.schema.discover`), never read off the data.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from dpgm.domain import Label
from dpgm.errors import DataError, DomainError

if TYPE_CHECKING:
    import pandas as pd

#: how a missing value is shown where a label is read
MISSING = None
#: the label of the "other" code when the schema says ``"other": true``
DEFAULT_OTHER = "other"


def missing_values(values: pd.Series) -> np.ndarray:
    """Where a value is missing: NaN, None, NaT, pd.NA, or an empty / blank string."""
    import pandas as pd

    missing = np.array(pd.isna(values), dtype=bool)
    if values.dtype == object or isinstance(values.dtype, pd.StringDtype):
        text = values[~missing].astype(str).str.strip() == ""
        missing[np.flatnonzero(~missing)[text.to_numpy()]] = True
    return missing


def _first_row(values: pd.Series, mask: np.ndarray) -> tuple[object, object]:
    """The first value where ``mask`` holds, and its row label."""
    i = int(np.flatnonzero(mask)[0])
    return values.iloc[i], values.index[i]


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
        """The codes of ``values`` (a DataError names the first value that has none)."""
        missing = missing_values(values)
        codes = np.empty(len(values), dtype=np.int64)
        if missing.any():
            if not self.nullable:
                value, row = _first_row(values, missing)
                raise DataError(
                    f"column {self.name!r} has a missing value ({value!r}) at row {row}; "
                    'declare the column "nullable": true in the schema to keep missing values'
                )
            codes[missing] = self.missing_code
        present = ~missing
        if present.any():
            codes[present] = self._encode_present(values[present])
        return codes

    @abstractmethod
    def _encode_present(self, values: pd.Series) -> np.ndarray:
        """Codes of values that are not missing."""

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

        return int(self.encode(pd.Series([value], dtype=object))[0])

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
            self._text.setdefault(str(label).strip(), code)

    @property
    def values_labels(self) -> tuple[Label, ...]:
        return self.given + ((self.other,) if self.other is not None else ())

    def code(self, value: object) -> int:
        """The code of a label (or of the "other" label): strict, nothing falls into other."""
        code = self._code_of(value)
        if code is None and self.other is not None and value == self.other:
            code = len(self.given)
        if code is None:
            raise DataError(f"{value!r} is not a label of column {self.name!r}")
        return code

    def _code_of(self, value: object) -> int | None:
        if isinstance(value, np.generic):
            value = value.item()
        code = self._lookup.get((isinstance(value, bool), value))
        if code is not None:
            return code
        # a CSV reader may have read labels "1", "2" as numbers, or True as "True"
        if isinstance(value, float) and value.is_integer():
            code = self._text.get(str(int(value)))
            if code is not None:
                return code
        return self._text.get(str(value).strip())

    def _encode_present(self, values: pd.Series) -> np.ndarray:
        import pandas as pd

        inverse, uniques = pd.factorize(values.astype(object), use_na_sentinel=False)
        codes_of_uniques = np.empty(len(uniques), dtype=np.int64)
        for k, value in enumerate(uniques):  # once per distinct value, not per row
            code = self._code_of(value)
            if code is None:
                if self.other is None:
                    shown = list(self.given)
                    shown = shown if len(shown) <= 12 else shown[:12] + ["..."]
                    _, row = _first_row(values, inverse == k)
                    raise DataError(
                        f"column {self.name!r} has the value {value!r} at row {row}, which "
                        f"is not one of its labels {shown}; add it to the schema's labels, "
                        'or declare "other": true to gather such values under "other"'
                    )
                code = len(self.given)
            codes_of_uniques[k] = code
        return codes_of_uniques[inverse]

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
            return pd.Series(values.tolist(), name=self.name)  # infers the string dtype
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


def _format(x: float) -> str:
    return f"{x:g}"


def _plain_number(x: float) -> int | float:
    """A bound as JSON writes it best: 18, not 18.0."""
    x = float(x)
    return int(x) if x.is_integer() and abs(x) < 2**53 else x


class Numeric(Column):
    """Numbers between public bounds, in bins; values outside the bounds are clipped.

    ``bins`` is a number of equal-width bins between ``lower`` and ``upper``, or the
    edges themselves (increasing; the first and last are the bounds). Bin ``i`` holds
    ``[e_i, e_{i+1})``; the last holds its upper edge too. ``integer=True`` keeps whole
    numbers (decoded values are integers drawn uniformly in their bin; every bin must
    hold one). Decoding draws a value uniformly inside its bin, rounded to ``decimals``
    where given (staying inside the bin).

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
        nullable: bool = False,
    ):
        super().__init__(name, nullable)
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
            # 15 significant digits: 0.1 * 3 is the edge 0.3, not 0.30000000000000004
            self.edges = np.array([float(f"{e:.15g}") for e in np.linspace(lo, hi, bins + 1)])
            self.count = bins
        if integer:
            first = np.ceil(self.edges[:-1])
            last = np.concatenate([np.ceil(self.edges[1:-1]) - 1, [np.floor(self.edges[-1])]])
            empty = np.flatnonzero(first > last)
            if empty.size:
                i = int(empty[0])
                raise DomainError(
                    f"column {name!r}: bin [{_format(self.edges[i])}, "
                    f"{_format(self.edges[i + 1])}) holds no whole number; use fewer bins"
                )
            self._whole = (first, last)
        if decimals is not None and np.diff(self.edges).min() < 10.0**-decimals * (1 - 1e-9):
            raise DomainError(f"column {name!r}: bins narrower than {decimals} decimals can show")

    @property
    def lower(self) -> float:
        return float(self.edges[0])

    @property
    def upper(self) -> float:
        return float(self.edges[-1])

    @property
    def values_labels(self) -> tuple[Label, ...]:
        e = self.edges
        if self.integer:
            first, last = self._whole
            return tuple(
                _format(a) if a == b else f"{_format(a)}-{_format(b)}" for a, b in zip(first, last)
            )
        n = len(e) - 1
        return tuple(
            f"[{_format(e[i])}, {_format(e[i + 1])}{']' if i == n - 1 else ')'}" for i in range(n)
        )

    def _to_numbers(self, values: pd.Series) -> np.ndarray:
        import pandas as pd

        numbers = pd.to_numeric(values, errors="coerce")
        bad = pd.isna(numbers).to_numpy()
        if bad.any():
            value, row = _first_row(values, bad)
            raise DataError(
                f"column {self.name!r} has a non-numeric value {value!r} at row {row}"
            )
        return numbers.to_numpy(dtype=np.float64)

    def _bin(self, numbers: np.ndarray) -> np.ndarray:
        clipped = np.clip(numbers, self.edges[0], self.edges[-1])
        codes = np.searchsorted(self.edges, clipped, side="right") - 1
        return np.minimum(codes, len(self.edges) - 2)

    def _encode_present(self, values: pd.Series) -> np.ndarray:
        numbers = self._to_numbers(values)
        if np.isinf(numbers).any():
            value, row = _first_row(values, np.isinf(numbers))
            raise DataError(f"column {self.name!r} has an infinite value {value!r} at row {row}")
        return self._bin(numbers)

    def _draw(self, codes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """A number drawn uniformly inside each code's bin."""
        if self.integer:
            first, last = self._whole
            return rng.integers(first[codes], last[codes], endpoint=True).astype(np.float64)
        low, high = self.edges[codes], self.edges[codes + 1]
        drawn = low + rng.random(len(codes)) * (high - low)
        if self.decimals is None:
            return drawn
        # rounded, and moved one unit back into the bin where rounding (or an edge such as
        # 0.30000000000000004) left it; a bin is at least one unit wide
        unit = 10.0**-self.decimals
        rounded = np.round(drawn, self.decimals)
        binned = self._bin(rounded)
        rounded = np.where(binned < codes, np.round(rounded + unit, self.decimals), rounded)
        rounded = np.where(binned > codes, np.round(rounded - unit, self.decimals), rounded)
        return rounded

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
            out["bins"] = [_plain_number(e) for e in self.edges]
        else:
            out.update(
                lower=_plain_number(self.lower), upper=_plain_number(self.upper), bins=self.count
            )
        if self.integer:
            out["integer"] = True
        if self.decimals is not None:
            out["decimals"] = self.decimals
        return out


class Datetime(Column):
    """Dates and times between public bounds, in bins of a fixed width (``"30D"``, ``"1h"``).

    Values outside the bounds are clipped (see :class:`Numeric`); decoding draws a time
    uniformly inside its bin and floors it to ``resolution`` (default: a day when the
    width is a whole number of days, else a second). Times without a time zone.
    """

    kind = "datetime"

    def __init__(
        self,
        name: str,
        lower: str,
        upper: str,
        width: str,
        *,
        resolution: str | None = None,
        nullable: bool = False,
    ):
        import pandas as pd

        super().__init__(name, nullable)
        try:
            lo, hi = pd.Timestamp(lower), pd.Timestamp(upper)
            step = pd.Timedelta(width)
        except (TypeError, ValueError) as exc:
            raise DomainError(f"column {name!r}: {exc}") from None
        if lo.tzinfo is not None or hi.tzinfo is not None:
            raise DomainError(f"column {name!r}: give bounds without a time zone")
        if not lo < hi or step <= pd.Timedelta(0):
            raise DomainError(f"column {name!r}: need lower < upper and a positive width")
        bins = math.ceil((hi - lo) / step)
        if bins > 10_000_000:
            raise DomainError(f"column {name!r}: {bins:,} bins; use a wider bin width")
        self._given_resolution = resolution
        if resolution is None:
            resolution = "1D" if step % pd.Timedelta("1D") == pd.Timedelta(0) else "1s"
        try:
            self._resolution_ns = pd.Timedelta(resolution).value
        except (TypeError, ValueError) as exc:
            raise DomainError(f"column {name!r}: resolution: {exc}") from None
        self.lower, self.upper, self.width = lo, hi, step
        self.resolution = resolution
        edges = lo.value + step.value * np.arange(bins + 1, dtype=np.int64)
        edges[-1] = hi.value
        self._ns = edges
        self._unit = "%Y-%m-%d" if resolution == "1D" else "%Y-%m-%d %H:%M:%S"

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

    def _encode_present(self, values: pd.Series) -> np.ndarray:
        import pandas as pd

        try:
            times = pd.to_datetime(values, errors="coerce")
        except (TypeError, ValueError):  # mixed time zones and the like
            times = pd.Series(pd.NaT, index=values.index)
        bad = pd.isna(times).to_numpy()
        if bad.any():
            value, row = _first_row(values, bad)
            raise DataError(
                f"column {self.name!r} has a value {value!r} at row {row} that is not a date"
            )
        if getattr(times.dt, "tz", None) is not None:
            raise DataError(
                f"column {self.name!r} has times with a time zone; convert them to naive times"
            )
        ns = times.astype("datetime64[ns]").to_numpy().astype(np.int64)
        clipped = np.clip(ns, self._ns[0], self._ns[-1])
        return np.minimum(np.searchsorted(self._ns, clipped, side="right") - 1, len(self._ns) - 2)

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
        fmt = "%Y-%m-%d" if self.resolution == "1D" else "%Y-%m-%dT%H:%M:%S"
        out: dict[str, Any] = {
            "lower": self.lower.strftime(fmt),
            "upper": self.upper.strftime(fmt),
            "width": _timedelta_text(self.width),
        }
        if self._given_resolution is not None:
            out["resolution"] = self._given_resolution
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
    try:
        return KINDS[kind](name, **spec)
    except TypeError as exc:
        raise DomainError(f"column {name!r} ({kind}): {exc}") from None
