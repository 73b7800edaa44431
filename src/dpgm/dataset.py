"""Sensitive records, integer-coded against a public :class:`~dpgm.domain.Domain`."""

from __future__ import annotations

import gzip
import warnings
import zlib
from collections.abc import Iterable
from os import PathLike
from typing import TYPE_CHECKING

import numpy as np

from dpgm.domain import Domain
from dpgm.errors import DataError, DataWarning, user_stacklevel
from dpgm.files import atomic_write

if TYPE_CHECKING:
    import pandas as pd


_INT64_MAX = int(np.iinfo(np.int64).max)


def _validate_column(name: str, column: np.ndarray, size: int) -> np.ndarray:
    """Integer codes of one column, or a :class:`DataError` naming the first bad value.

    Range checks run before any conversion to int64, so a value too large for int64 is
    reported as written, not as the number it would wrap to.
    """
    original = np.asarray(column)
    values = original
    if values.dtype.kind == "b":
        values = values.astype(np.int64)
    elif values.dtype.kind not in "iuf":
        # object / string columns: only integer-like entries are allowed
        try:
            values = values.astype(np.float64)
        except (TypeError, ValueError, OverflowError):
            for row, item in enumerate(original):
                try:
                    float(item)
                except (TypeError, ValueError, OverflowError):
                    raise DataError(
                        f"column {name!r} has a non-numeric value {item!r} at row {row}; "
                        "records must be integer codes 0..size-1"
                    ) from None
            raise
    if values.dtype.kind == "f":
        bad = ~np.isfinite(values)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise DataError(
                f"column {name!r} has a missing or non-finite value ({original[row]}) at row {row}"
            )
        fractional = values != np.round(values)
        if fractional.any():
            row = int(np.flatnonzero(fractional)[0])
            raise DataError(f"column {name!r} has a non-integer value {original[row]} at row {row}")
    # sizes beyond int64 cannot be compared in int64: every value below 2**63 is in range
    upper = min(int(size), _INT64_MAX + 1)
    out_of_range = (values < 0) | (values >= upper)
    if out_of_range.any():
        row = int(np.flatnonzero(out_of_range)[0])
        raise DataError(
            f"column {name!r} has value {original[row]} at row {row}, "
            f"outside its domain 0..{int(size) - 1}"
        )
    return values.astype(np.int64, copy=False)


def _codes_in_range(array: np.ndarray, domain: Domain) -> bool:
    """True where ``array`` (records by attribute) is integer-typed and every code lies in
    its attribute's range: checked in one pass over the whole array rather than column by
    column (the usual case, such as sampled records); False sends it to the column-by-column
    check, which names the first bad value."""
    if array.dtype.kind not in "iu" or array.size == 0:
        return False
    sizes = np.asarray(domain.shape, dtype=np.float64)
    # the float bound is exact enough: a code at or above 2**53 is out of every domain
    return bool(array.min(initial=0) >= 0 and np.all(array.max(axis=0) < sizes))


def check_columns(frame: pd.DataFrame, domain: Domain) -> None:
    """Raise unless ``frame`` has one column per attribute; warn of the columns it ignores."""
    names = [str(c) for c in frame.columns]
    repeated = sorted({c for c in names if names.count(c) > 1})
    if repeated:
        raise DataError(f"the data has repeated column name(s) {repeated}")
    missing = [a for a in domain.attrs if a not in frame.columns]
    if missing:
        raise DataError(f"the data has no column(s) {missing}; its columns are {names}")
    unused = [c for c in names if c not in domain]
    if unused:
        warnings.warn(
            f"column(s) {unused} are not in the domain and will be ignored",
            DataWarning,
            stacklevel=user_stacklevel(),
        )


class CountingSource:
    """What every mechanism needs of the data: counts. ``domain``; ``marginal(attrs)``,
    the counts (or summed weights) of every cell; ``marginals(cliques)``, several at once;
    ``total``; ``len``; ``weighted``, whether records carry weights (a public fact of the
    input's form). :class:`Dataset` counts records in memory;
    :class:`dpgm.engines.duckdb.DuckDBTable` counts a file with DuckDB."""

    domain: Domain

    @property
    def weighted(self) -> bool:
        raise NotImplementedError

    def marginal(self, attrs: Iterable[str]) -> np.ndarray:
        raise NotImplementedError

    def marginals(self, cliques: Iterable[Iterable[str]]) -> list[np.ndarray]:
        """The marginals on several attribute sets (an engine may count them in one pass)."""
        return [self.marginal(c) for c in cliques]

    @property
    def total(self) -> float:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError


class RecodedCounts(CountingSource):
    """A counting source seen on another domain (a recoding of its values): each
    marginal is computed from the source's (:meth:`recode`); the source counts, nothing is
    loaded. Its records, total and weights stay the source's."""

    def __init__(self, source: CountingSource, domain: Domain):
        self.source, self.domain = source, domain

    @property
    def weighted(self) -> bool:
        return self.source.weighted

    @property
    def weights(self) -> None:
        return None

    @property
    def total(self) -> float:
        return self.source.total

    def __len__(self) -> int:
        return len(self.source)

    def marginal(self, attrs: Iterable[str]) -> np.ndarray:
        return self.marginals([attrs])[0]

    def marginals(self, cliques: Iterable[Iterable[str]]) -> list[np.ndarray]:
        cliques = [self.domain.check(c) for c in cliques]
        asked = [self.source_attrs(c) for c in cliques]
        return [self.recode(c, a, t) for c, a, t in
                zip(cliques, asked, self.source.marginals(asked), strict=True)]

    def source_attrs(self, clique: tuple[str, ...]) -> tuple[str, ...]:
        """The source's attributes whose marginal gives the marginal on ``clique``."""
        return clique

    def recode(self, clique: tuple[str, ...], attrs: tuple[str, ...], counts: np.ndarray
               ) -> np.ndarray:
        """The marginal on ``clique`` from the source's on ``attrs``."""
        raise NotImplementedError


#: from this many marginals on, a Dataset copies the columns it reads once
MANY_MARGINALS = 16


class Dataset(CountingSource):
    """Integer-coded records over a public domain, with optional per-record weights.

    ``records`` is an ``(n, d)`` integer array whose columns follow ``domain.attrs``.
    Weights (default 1) scale each record's contribution to marginals; the privacy layer
    requires them to lie in ``[0, 1]`` so that one person changes any count by at most 1.
    """

    def __init__(self, records, domain: Domain, weights: Iterable[float] | None = None):
        if not isinstance(domain, Domain):
            raise DataError(f"domain must be a dpgm.Domain, got {type(domain).__name__}")
        if hasattr(records, "columns"):  # a pandas DataFrame: select columns by name
            check_columns(records, domain)
            columns = [_validate_column(a, records[a].to_numpy(), domain[a]) for a in domain.attrs]
            array = np.column_stack(columns) if columns else np.zeros((len(records), 0), np.int64)
        else:
            array = np.asarray(records)
            if array.ndim != 2 or array.shape[1] != len(domain):
                raise DataError(
                    f"records must be a 2-d array with {len(domain)} columns (one per attribute), "
                    f"got shape {array.shape}"
                )
            if _codes_in_range(array, domain):
                # a copy, as the column-by-column route makes: the records are the
                # Dataset's own, whatever the caller does with its array afterwards
                array = np.array(array, dtype=np.int64, order="C", copy=True)
            else:  # the first bad value, named
                columns = [_validate_column(a, array[:, i], domain[a])
                           for i, a in enumerate(domain.attrs)]
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
            column = weights
            weights = frame[column].to_numpy()
            frame = frame.drop(columns=[column])
        return cls(frame, domain, weights)

    @classmethod
    def load(
        cls,
        path: str | PathLike[str],
        domain: Domain | str | PathLike[str],
        weights: str | None = None,
    ) -> Dataset:
        """Records from a CSV file (optionally compressed) and a domain or domain JSON path."""

        if not isinstance(domain, Domain):
            domain = Domain.load(domain)
        frame = read_table(path)
        return cls.from_pandas(frame, domain, weights)

    def to_pandas(self, labels: bool = False) -> pd.DataFrame:
        """The records as a DataFrame with one integer column per attribute, or with the
        domain's labels in place of the codes (``labels=True``, where it has them)."""
        import pandas as pd

        frame = pd.DataFrame(self.records, columns=list(self.domain.attrs))
        if labels:
            for attr, names in self.domain.labels.items():
                frame[attr] = np.array(names, dtype=object)[
                    self.records[:, self.domain.axes([attr])[0]]
                ]
        return frame

    def save(self, path: str | PathLike[str]) -> None:
        """Write the records as CSV (weights are not written), whole or not at all."""
        with atomic_write(path) as handle:
            self.to_pandas().to_csv(handle, index=False)

    # -- statistics -------------------------------------------------------------------
    def __len__(self) -> int:
        return self.records.shape[0]

    @property
    def total(self) -> float:
        """Number of records, or the sum of the weights."""
        return float(len(self)) if self.weights is None else float(self.weights.sum())

    @property
    def weighted(self) -> bool:
        return self.weights is not None

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

    def marginals(self, cliques: Iterable[Iterable[str]]) -> list[np.ndarray]:
        """The marginals on several attribute sets. Many of them (MST's and SWIFT's pairs)
        are counted from contiguous copies of the columns they read, each in the smallest
        integer type that holds its codes: a column of the row-major records is read with
        a stride, which made 4,950 pairs of a million records take 97 s."""
        cliques = [self.domain.check(c) for c in cliques]
        if len(cliques) < MANY_MARGINALS:
            return [self.marginal(c) for c in cliques]
        columns = {}
        for attr in dict.fromkeys(a for c in cliques for a in c):
            axis = self.domain.axes([attr])[0]
            kind = np.min_scalar_type(max(self.domain[attr] - 1, 0))
            columns[attr] = self.records[:, axis].astype(kind)
        out = []
        for clique in cliques:
            shape = self.domain.project(clique).shape
            if not clique:
                out.append(np.array(self.total))
                continue
            flat = columns[clique[0]].astype(np.int64)
            for attr, size in zip(clique[1:], shape[1:]):
                flat *= size
                flat += columns[attr]
            counts = np.bincount(flat, weights=self.weights, minlength=int(np.prod(shape)))
            out.append(counts.astype(np.float64, copy=False).reshape(shape))
        return out

    def __repr__(self) -> str:
        # the exact number of records is private: a repr may end up in a log
        return f"Dataset({self.domain!r})"


def every_code(domain: Domain) -> Dataset:
    """Records that hold every code of every attribute (a table of public facts only):
    decoded, they give the columns' types of any records of ``domain``."""
    rows = max(domain.shape) if len(domain) else 0
    codes = np.minimum(np.arange(rows)[:, None], np.asarray(domain.shape)[None, :] - 1)
    return Dataset(codes.astype(np.int64), domain)


def require_dataset(data: object) -> Dataset:
    """``data`` if it is a :class:`Dataset` (or another :class:`CountingSource`: the
    mechanisms need counts only); otherwise a :class:`DataError` with the recipe."""
    if isinstance(data, CountingSource):
        return data  # type: ignore[return-value]
    what = "a DataFrame" if hasattr(data, "columns") else type(data).__name__
    raise DataError(
        f"expected a dpgm.Dataset, got {what}: pass a raw table with its public schema, "
        "fit(frame, schema=dpgm.Schema.load(...)), or build integer codes with "
        "dpgm.Dataset(frame, domain), where domain = dpgm.Domain.from_dict({column: number "
        "of values, ...}); either is public input, not read off the data"
    )


def require_records(data: object) -> Dataset:
    """``data`` if it is a :class:`Dataset` (records in memory); a :class:`DataError` for a
    counting engine, which gives counts only, or anything else."""
    data = require_dataset(data)
    if not isinstance(data, Dataset):
        raise DataError(
            f"this method reads the records one by one and needs them in memory (a "
            f"dpgm.Dataset); {type(data).__name__} gives counts only"
        )
    return data


def read_table(path: str | PathLike[str], **options) -> pd.DataFrame:
    """A CSV file (optionally compressed) or a Parquet file as a DataFrame, or a one-line
    :class:`DataError`.

    Column names must be distinct: pandas would silently rename a repeated ``a`` to
    ``a.1``, and the domain would then pick the wrong column. ``options`` go to
    ``pandas.read_csv`` (``nrows=0`` reads the header only; ``dtype=str`` keeps values as
    written).
    """
    import pandas as pd

    if str(path).lower().endswith((".parquet", ".pq")):
        return _read_parquet(path, options)
    try:
        header = pd.read_csv(path, header=None, nrows=1, dtype=str)
        frame = pd.read_csv(path, **options)
    except pd.errors.EmptyDataError:
        raise DataError(f"{path}: the file is empty") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        reason = str(exc).strip().splitlines()[0]
        raise DataError(f"{path}: not a readable CSV file ({reason})") from None
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise DataError(f"{path}: a corrupt or truncated compressed file ({exc})") from None
    except MemoryError:
        raise DataError(f"{path}: the file does not fit in memory") from None
    names = [str(c) for c in header.iloc[0].tolist()] if len(header) else []
    repeated = sorted({c for c in names if names.count(c) > 1})
    if repeated:
        raise DataError(f"{path}: the column name(s) {repeated} appear more than once")
    return frame


def read_raw_table(path: str | PathLike[str]) -> pd.DataFrame:
    """A raw table to encode with a public schema: every CSV cell as the text it is (no
    type or missing-value inference, which looks at the whole column: one record would
    change how the others are read), each read later on its own by the schema's rules
    (:mod:`dpgm.schema.parse`); Parquet columns in the file's own types."""
    if str(path).lower().endswith((".parquet", ".pq")):
        return read_table(path)
    return read_table(path, dtype=str, keep_default_na=False, na_filter=False)


def _read_parquet(path: str | PathLike[str], options: dict) -> pd.DataFrame:
    """A Parquet file as a DataFrame, by pyarrow or else DuckDB (``nrows=0``: the header;
    ``dtype=str``: values as text)."""

    header_only = options.get("nrows") == 0  # the file's schema, not its records
    try:
        import pyarrow.parquet

        # dates as datetime64, as DuckDB reads them (pyarrow's default is Python dates)
        table = (pyarrow.parquet.read_schema(path).empty_table() if header_only
                 else pyarrow.parquet.read_table(path))
        frame = table.to_pandas(date_as_object=False)
    except ImportError:
        try:
            import duckdb
        except ImportError:
            raise DataError(f"{path}: reading Parquet needs pyarrow or duckdb "
                            "(pip install 'dpgm[duckdb]')") from None
        literal = "'" + str(path).replace("'", "''") + "'"
        limit = " LIMIT 0" if header_only else ""
        try:
            frame = duckdb.connect().execute(
                f"SELECT * FROM read_parquet({literal}){limit}").df()
        except duckdb.Error as exc:
            raise DataError(f"{path}: not a readable Parquet file ({exc})") from None
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: not a readable Parquet file ({exc})") from None
    if options.get("dtype") is str:
        frame = frame.astype(str)
    return frame
