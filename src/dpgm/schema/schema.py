"""A table's public schema: its columns, their public values, and impossible combinations.

A schema is public input, written by the data steward from public knowledge (or learnt
privately, and paid for, by :mod:`dpgm.schema.discover`); nothing in it is read off the
data. Its :attr:`Schema.domain` is the integer view every model works on, with the
labels, so that models, queries and samples speak in labels.

File format (JSON, or YAML where PyYAML is installed)::

    {"columns": {
        "sex":  {"kind": "categorical", "labels": ["F", "M"], "nullable": true},
        "job":  {"kind": "categorical", "labels": ["clerk", "nurse"], "other": true},
        "age":  {"kind": "numeric", "lower": 0, "upper": 100, "bins": 10, "integer": true},
        "paid": {"kind": "numeric", "bins": [0, 1000, 5000, 20000]},
        "seen": {"kind": "datetime", "lower": "2020-01-01", "upper": "2021-01-01",
                 "width": "30D"}},
     "constraints": [{"alive": [true], "cause": ["!none"]}]}

A constraint lists values per column; a row matching every column is impossible. A
string starting with ``!`` (or ``{"not": [...]}``) matches every value but those
listed; ``null`` is the missing value; numbers of a numeric column name their bins.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dpgm.constraints import Forbidden, check_forbidden
from dpgm.dataset import Dataset, check_columns
from dpgm.domain import Domain
from dpgm.errors import DataError, DomainError
from dpgm.files import atomic_write
from dpgm.random import RngLike, as_generator
from dpgm.schema import parse
from dpgm.schema.columns import Column, Datetime, column_from_json, text_values

if TYPE_CHECKING:
    import pandas as pd

Pattern = Mapping[str, Any]


class Schema:
    """Columns in order (each a :class:`~dpgm.schema.columns.Column`) and constraints."""

    def __init__(self, columns: Iterable[Column], constraints: Sequence[Pattern] = ()):
        self.columns: dict[str, Column] = {}
        for column in columns:
            if not isinstance(column, Column):
                raise DomainError(f"expected schema columns, got {column!r}")
            if column.name in self.columns:
                raise DomainError(f"column {column.name!r} is listed twice")
            self.columns[column.name] = column
        if not self.columns:
            raise DomainError("a schema needs at least one column")
        self.domain = Domain(
            self.columns,
            (c.size for c in self.columns.values()),
            {name: c.labels for name, c in self.columns.items()},
        )
        if isinstance(constraints, Mapping):
            raise DomainError("constraints must be a list of patterns")
        self.constraints: list[Pattern] = [dict(p) for p in constraints]
        self.forbidden: list[Forbidden] = check_forbidden(
            self.domain, [self._pattern(p) for p in self.constraints]
        )

    def refinements(self) -> dict[str, int]:
        """The numeric columns held at two resolutions: ``{column: sub-bins per bin}``
        (``"refine"`` in the schema; see :mod:`dpgm.models.refinement`)."""
        return {name: c.refine for name, c in self.columns.items()
                if getattr(c, "refine", 1) > 1}

    # -- constraints ------------------------------------------------------------------
    def _pattern(self, pattern: Pattern) -> Forbidden:
        if not isinstance(pattern, Mapping) or not pattern:
            raise DomainError(f"a constraint is an object {{column: [values]}}, got {pattern!r}")
        codes = {}
        for name, spec in pattern.items():
            if name not in self.columns:
                raise DomainError(f"constraint {dict(pattern)} names no column {name!r}")
            codes[name] = self._matched(name, spec)
        return Forbidden.pattern(self.domain, codes)

    def _matched(self, name: str, spec: object) -> list[int]:
        """The codes that a constraint's condition on one column matches."""
        column = self.columns[name]
        negated = False
        if isinstance(spec, Mapping):
            if set(spec) != {"not"}:
                raise DomainError(
                    f"constraint on {name!r}: use a list of values or {{'not': [...]}}"
                )
            spec, negated = spec["not"], True
        if not isinstance(spec, list):
            spec = [spec]
        values = []
        for value in spec:
            if isinstance(value, str) and value.startswith("!"):
                negated = True
                value = value[1:]
            values.append(value)
        try:
            codes = {column.missing_code if v is None else column.code(v) for v in values}
        except DataError as exc:
            raise DomainError(f"constraint on {name!r}: {exc}") from None
        if None in codes:
            raise DomainError(f"constraint on {name!r}: null, but the column is not nullable")
        if negated:
            codes = set(range(column.size)) - codes
        return sorted(codes)

    # -- data -------------------------------------------------------------------------
    def encode(self, frame: pd.DataFrame, weights: str | Iterable[float] | None = None) -> Dataset:
        """The raw table as integer codes over :attr:`domain`.

        Accepts strings, pandas ``category``, numbers, booleans and dates; missing values
        are NaN, None, NaT, pd.NA or empty strings. Numbers and dates outside their
        bounds are clipped; labels not in the schema go to "other" where declared and are
        otherwise an error naming the column, the value and the row. ``weights`` may name a
        column of per-record weights.
        """
        if not hasattr(frame, "columns"):
            raise DataError(f"expected a pandas DataFrame, got {type(frame).__name__}")
        if isinstance(weights, str):
            if weights not in frame.columns:
                raise DataError(f"no weight column {weights!r} in the data")
            frame, weights = frame.drop(columns=[weights]), _weights(frame[weights])
        check_columns(frame, self.domain)
        records = np.zeros((len(frame), len(self.columns)), dtype=np.int64)
        for j, (name, column) in enumerate(self.columns.items()):
            records[:, j] = column.encode(frame[name])
        return Dataset(records, self.domain, weights)

    def decode(self, data: Dataset, rng: RngLike = None) -> pd.DataFrame:
        """Records back in original units: labels, numbers and dates drawn uniformly in
        their bins (with ``rng``), missing values as missing, the original dtypes."""
        import pandas as pd

        if not isinstance(data, Dataset):
            raise DataError(f"expected a dpgm.Dataset, got {type(data).__name__}")
        if data.domain != self.domain:
            raise DomainError(
                f"the records' domain {data.domain} is not this schema's {self.domain}"
            )
        generator = as_generator(rng)
        columns = {
            name: column.decode(data.records[:, j], generator).reset_index(drop=True)
            for j, (name, column) in enumerate(self.columns.items())
        }
        return pd.DataFrame(columns)

    def as_text(self, frame: pd.DataFrame) -> pd.DataFrame:
        """Decoded records with each time written in its column's declared ``format``
        (others as they are), as a CSV file must hold them to be read back."""
        formatted = {name: column.format.strftime for name, column in self.columns.items()
                     if isinstance(column, Datetime) and not column.format.iso
                     and name in frame.columns}
        if not formatted:
            return frame
        frame = frame.copy()
        for name, fmt in formatted.items():
            frame[name] = frame[name].dt.strftime(fmt).astype(object)
        return frame

    def code(self, column: str, value: object) -> int:
        """The code of one raw value of ``column`` (its bin, for numbers and dates)."""
        if column not in self.columns:
            raise DomainError(f"no column {column!r}; the schema has {list(self.columns)}")
        if value is None and self.columns[column].nullable:
            return int(self.columns[column].missing_code)
        try:
            return self.columns[column].code(value)
        except DataError as exc:
            raise DomainError(str(exc)) from None

    def codes(self, values: Mapping[str, object]) -> dict[str, int]:
        """``{column: code}`` for ``{column: raw value}``."""
        return {name: self.code(name, value) for name, value in values.items()}

    # -- files ------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"columns": {n: c.to_json() for n, c in self.columns.items()}}
        if self.constraints:
            out["constraints"] = self.constraints
        return out

    @classmethod
    def from_json(cls, spec: Mapping[str, Any]) -> Schema:
        """A schema from its JSON form (see the module docstring)."""
        if not isinstance(spec, Mapping) or not isinstance(spec.get("columns"), Mapping):
            raise DomainError('a schema is an object with "columns": {name: {"kind": ...}}')
        unknown = sorted(set(spec) - {"columns", "constraints", "note"})
        if unknown:
            raise DomainError(f"unknown schema entries {unknown}")
        columns = [column_from_json(n, c) for n, c in spec["columns"].items()]
        return cls(columns, spec.get("constraints", ()))

    @classmethod
    def load(cls, path: str | PathLike[str]) -> Schema:
        """A schema from a JSON file (or YAML, ``.yaml``/``.yml``, with PyYAML installed)."""
        spec = read_spec(path)
        try:
            return cls.from_json(spec)
        except DomainError as exc:
            raise DomainError(f"{path}: {exc}") from None

    def save(self, path: str | PathLike[str]) -> None:
        """Write the schema as JSON, whole or not at all."""
        with atomic_write(path) as handle:
            json.dump(self.to_json(), handle, indent=2, default=str)
            handle.write("\n")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Schema) and self.to_json() == other.to_json()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}: {c.kind}[{c.size}]" for n, c in self.columns.items())
        return f"Schema({inner})"


def read_spec(path: str | PathLike[str]) -> Any:
    """The text of a schema file as JSON values, nulls kept (a draft's are to be filled):
    JSON, or YAML (``.yaml``/``.yml``) with PyYAML installed; one-line errors."""
    text = Path(path).read_text()
    if str(path).endswith((".yaml", ".yml")):
        try:
            import yaml
        except ImportError:
            raise DomainError(
                f"{path}: reading YAML needs PyYAML (pip install pyyaml); "
                "or write the schema as JSON"
            ) from None
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise DomainError(f"{path}: not valid YAML ({exc})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DomainError(f"{path}: not valid JSON ({exc})") from None


def _weights(values: pd.Series) -> np.ndarray:
    """A weight column's numbers, each text read on its own (:mod:`dpgm.schema.parse`)."""
    text = text_values(values)
    if not text.any():
        return values.to_numpy(dtype=np.float64)
    weights = np.full(len(values), np.nan)
    weights[~text] = values[~text].to_numpy(dtype=np.float64)
    weights[text] = parse.numbers(np.array([parse.strip(v) for v in values[text]], dtype=object))
    bad = np.flatnonzero(np.isnan(weights))
    if bad.size:
        raise DataError(f"the weight {values.iloc[int(bad[0])]!r} at row "
                        f"{values.index[int(bad[0])]} is not a number")
    return weights
