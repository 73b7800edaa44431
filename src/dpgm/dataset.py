"""Sensitive records, integer-coded against a public :class:`~dpgm.domain.Domain`."""

from __future__ import annotations

from collections.abc import Iterable
from os import PathLike
from typing import TYPE_CHECKING

import numpy as np

from dpgm.domain import Domain
from dpgm.errors import DataError

if TYPE_CHECKING:
    import pandas as pd


def _validate_column(name: str, column: np.ndarray, size: int) -> np.ndarray:
    """Integer codes of one column, or a :class:`DataError` naming the first bad value."""
    values = np.asarray(column)
    if values.dtype.kind == "b":
        values = values.astype(np.int64)
    if values.dtype.kind == "f":
        bad = ~np.isfinite(values)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise DataError(
                f"column {name!r} has a missing or non-finite value ({values[row]}) at row {row}"
            )
        fractional = values != np.round(values)
        if fractional.any():
            row = int(np.flatnonzero(fractional)[0])
            raise DataError(f"column {name!r} has a non-integer value {values[row]} at row {row}")
    elif values.dtype.kind not in "iu":
        # object / string columns: only integer-like entries are allowed
        try:
            values = values.astype(np.float64)
        except (TypeError, ValueError):
            for row, item in enumerate(values):
                try:
                    float(item)
                except (TypeError, ValueError):
                    raise DataError(
                        f"column {name!r} has a non-numeric value {item!r} at row {row}; "
                        "records must be integer codes 0..size-1"
                    ) from None
            raise
        return _validate_column(name, values, size)
    codes = values.astype(np.int64, copy=False)
    out_of_range = (codes < 0) | (codes >= size)
    if out_of_range.any():
        row = int(np.flatnonzero(out_of_range)[0])
        raise DataError(
            f"column {name!r} has value {codes[row]} at row {row}, outside its domain 0..{size - 1}"
        )
    return codes


class Dataset:
    """Integer-coded records over a public domain, with optional per-record weights.

    ``records`` is an ``(n, d)`` integer array whose columns follow ``domain.attrs``.
    Weights (default 1) scale each record's contribution to marginals; the privacy layer
    requires them to lie in ``[0, 1]`` so that one person changes any count by at most 1.
    """

    def __init__(self, records, domain: Domain, weights: Iterable[float] | None = None):
        if not isinstance(domain, Domain):
            raise DataError(f"domain must be a dpgm.Domain, got {type(domain).__name__}")
        if hasattr(records, "columns"):  # a pandas DataFrame: select columns by name
            missing = [a for a in domain.attrs if a not in records.columns]
            if missing:
                raise DataError(
                    f"the data has no column(s) {missing}; its columns are {list(records.columns)}"
                )
            columns = [_validate_column(a, records[a].to_numpy(), domain[a]) for a in domain.attrs]
            array = np.column_stack(columns) if columns else np.zeros((len(records), 0), np.int64)
        else:
            array = np.asarray(records)
            if array.ndim != 2 or array.shape[1] != len(domain):
                raise DataError(
                    f"records must be a 2-d array with {len(domain)} columns (one per attribute), "
                    f"got shape {array.shape}"
                )
            columns = [
                _validate_column(a, array[:, i], domain[a]) for i, a in enumerate(domain.attrs)
            ]
            array = np.column_stack(columns) if columns else array.astype(np.int64)
        self.records: np.ndarray = np.ascontiguousarray(array, dtype=np.int64)
        self.domain = domain
        if weights is None:
            self.weights: np.ndarray | None = None
        else:
            w = np.asarray(weights, dtype=np.float64)
            if w.shape != (self.records.shape[0],):
                raise DataError(
                    f"weights must have one entry per record ({self.records.shape[0]}), "
                    f"got shape {w.shape}"
                )
            bad = ~np.isfinite(w) | (w < 0)
            if bad.any():
                row = int(np.flatnonzero(bad)[0])
                raise DataError(
                    f"weights must be finite and non-negative, got {w[row]} at row {row}"
                )
            self.weights = w

    # -- construction -----------------------------------------------------------------
    @classmethod
    def from_pandas(
        cls, frame: pd.DataFrame, domain: Domain, weights: str | Iterable[float] | None = None
    ) -> Dataset:
        """Records from a DataFrame (columns named by the domain); ``weights`` may name a column."""
        if isinstance(weights, str):
            if weights not in frame.columns:
                raise DataError(f"no weight column {weights!r} in the data")
            weights = frame[weights].to_numpy()
        return cls(frame, domain, weights)

    @classmethod
    def load(
        cls,
        path: str | PathLike[str],
        domain: Domain | str | PathLike[str],
        weights: str | None = None,
    ) -> Dataset:
        """Records from a CSV file (optionally compressed) and a domain or domain JSON path."""
        import pandas as pd

        if not isinstance(domain, Domain):
            domain = Domain.load(domain)
        try:
            frame = pd.read_csv(path)
        except pd.errors.EmptyDataError:
            raise DataError(f"{path}: the file is empty") from None
        except (pd.errors.ParserError, UnicodeDecodeError) as exc:
            reason = str(exc).strip().splitlines()[0]
            raise DataError(f"{path}: not a readable CSV file ({reason})") from None
        return cls.from_pandas(frame, domain, weights)

    def to_pandas(self) -> pd.DataFrame:
        """The records as a DataFrame with one integer column per attribute."""
        import pandas as pd

        return pd.DataFrame(self.records, columns=list(self.domain.attrs))

    def save(self, path: str | PathLike[str]) -> None:
        """Write the records as CSV (weights are not written)."""
        self.to_pandas().to_csv(path, index=False)

    # -- statistics -------------------------------------------------------------------
    def __len__(self) -> int:
        return self.records.shape[0]

    @property
    def total(self) -> float:
        """Number of records, or the sum of the weights."""
        return float(len(self)) if self.weights is None else float(self.weights.sum())

    def project(self, attrs: Iterable[str]) -> Dataset:
        """The same records restricted to ``attrs``."""
        sub = self.domain.project(attrs)
        cols = [self.domain.axes([a])[0] for a in sub.attrs]
        return Dataset(self.records[:, cols], sub, self.weights)

    def marginal(self, attrs: Iterable[str]) -> np.ndarray:
        """Counts (or summed weights) of every cell of the marginal on ``attrs``."""
        attrs = self.domain.check(attrs)
        shape = self.domain.project(attrs).shape
        if not attrs:
            return np.array(self.total)
        cols = self.records[:, list(self.domain.axes(attrs))]
        flat = np.ravel_multi_index(tuple(cols.T), shape) if len(attrs) > 1 else cols[:, 0]
        counts = np.bincount(flat, weights=self.weights, minlength=int(np.prod(shape)))
        return counts.astype(np.float64, copy=False).reshape(shape)

    def __repr__(self) -> str:
        return f"Dataset({len(self)} records, {self.domain!r})"
