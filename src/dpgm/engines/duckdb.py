"""Counting integer-coded records in a file with DuckDB (embedded, out of core): the
counting interface of :class:`~dpgm.dataset.Dataset` — ``domain``, ``marginal``,
``marginals`` (several in one pass over the file), ``total`` and ``len`` — without loading
the records. Memory is bounded by DuckDB's ``memory_limit`` (it spills to disk beyond it).

DuckDB is an optional dependency (``pip install 'dpgm[duckdb]'``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from os import PathLike
from pathlib import Path

import numpy as np

from dpgm.domain import Domain
from dpgm.engines.encoding import DUCKDB, check_encodable
from dpgm.engines.sql import RawSource, SQLCounts
from dpgm.errors import DataError

FORMATS = {".csv": "read_csv", ".gz": "read_csv", ".parquet": "read_parquet",
           ".pq": "read_parquet"}


def _file(source: str | PathLike[str]) -> tuple[Path, str]:
    """The path of a file the engine can read, and DuckDB's reader for it."""
    path = Path(source)
    reader = FORMATS.get(path.suffix.lower())
    if reader is None:
        raise DataError(f"{path}: the duckdb engine reads .csv, .csv.gz and .parquet files")
    if not path.exists():
        raise DataError(f"{path}: no such file")
    return path, reader


def _source(path: Path, reader: str, *, text: bool = False) -> str:
    """The SQL source reading the file: a CSV file as pandas.read_csv reads it by default
    (a header, commas, double quotes), its values as text where ``text``."""
    literal = DUCKDB.literal(str(path))
    if reader != "read_csv":
        return f"{reader}({literal})"
    return (f"read_csv({literal}, header = true, delim = ',', quote = '\"', escape = '\"'"
            f"{', all_varchar = true' if text else ''})")


@contextmanager
def _reading(path: Path) -> Iterator[None]:
    """DuckDB's errors in reading a file, as a one-line DataError."""
    import duckdb

    try:
        yield
    except (duckdb.InvalidInputException, duckdb.IOException, duckdb.ConversionException
            ) as exc:
        kind = "CSV" if path.suffix.lower() in (".csv", ".gz") else "Parquet"
        reason = str(exc).strip().splitlines()[0]
        raise DataError(f"{path}: not a readable {kind} file ({reason})") from None


def _connect(database: str = ":memory:", *, memory_limit: str | None = None,
             temp_directory: str | PathLike[str] | None = None, threads: int | None = None):
    """A DuckDB connection with the engine's limits."""
    try:
        import duckdb
    except ImportError:
        raise ImportError("the duckdb engine needs DuckDB: pip install 'dpgm[duckdb]'"
                          ) from None
    connection = duckdb.connect(database)
    # DuckDB's own progress bar estimates the time left, which follows the file's size:
    # the engine's progress lines say what is counted instead
    connection.execute("SET enable_progress_bar = false")
    settings = {"memory_limit": memory_limit, "threads": threads,
                "temp_directory": None if temp_directory is None else str(temp_directory)}
    for name, value in settings.items():
        if value is not None:
            connection.execute(f"SET {name} = {DUCKDB.literal(str(value))}")
    return connection


class DuckDBTable(SQLCounts):
    """Integer-coded records in a CSV (``.gz`` too) or Parquet file, counted by DuckDB.

    One column per attribute of ``domain`` holding codes ``0..size-1`` (other columns are
    ignored), and optionally a ``weights`` column of record weights in [0, 1]. The file is
    checked when the table is made (columns, codes, weights), as a Dataset checks its
    array. ``memory_limit`` (e.g. ``"1GB"``) bounds DuckDB's memory; ``temp_directory``
    is where it spills; ``progress`` is told what is counted. A raw table goes through
    :meth:`encode` instead.
    """

    def __init__(self, source: str | PathLike[str], domain: Domain, *,
                 weights: str | None = None, memory_limit: str | None = None,
                 temp_directory: str | PathLike[str] | None = None, threads: int | None = None,
                 progress: Callable[[str], None] | None = None):
        if not isinstance(domain, Domain):
            raise DataError(f"domain must be a dpgm.Domain, got {type(domain).__name__}")
        path, reader = _file(source)
        self._connection = _connect(memory_limit=memory_limit, temp_directory=temp_directory,
                                    threads=threads)
        self.domain, self.path, self.weight_column = domain, path, weights
        self.progress = progress
        self._from = _source(path, reader)
        with _reading(path):
            self._check(self._header())

    @classmethod
    def encode(cls, source: str | PathLike[str], schema, *, weights: str | None = None,
               memory_limit: str | None = None,
               temp_directory: str | PathLike[str] | None = None, threads: int | None = None,
               progress: Callable[[str], None] | None = None) -> DuckDBTable:
        """A raw CSV (``.gz`` too) or Parquet file encoded by its public ``schema`` inside
        DuckDB's SQL (labels, bins, clipping, missing values: the codes of
        ``schema.encode``) in one pass, into a table of codes on disk that is removed with
        this object; ``weights`` may name a column of record weights in [0, 1]. Memory is
        bounded as for a file of codes. CSV files are read as text, as pandas would read
        them (:mod:`dpgm.engines.encoding` says where the two differ)."""
        import tempfile

        from dpgm.dataset import read_table

        check_encodable(schema)
        path, reader = _file(source)
        read_table(path, nrows=0)  # a header with a repeated name is refused, as in memory
        if temp_directory is not None:  # DuckDB would make its spill folder itself
            Path(temp_directory).mkdir(parents=True, exist_ok=True)
        folder = tempfile.TemporaryDirectory(
            dir=None if temp_directory is None else str(temp_directory), prefix="dpgm-")
        table = cls.__new__(cls)
        table._folder = folder  # the codes' database lives as long as the table
        table._connection = _connect(str(Path(folder.name) / "records.duckdb"),
                                     memory_limit=memory_limit,
                                     temp_directory=temp_directory, threads=threads)
        table.domain, table.path, table.weight_column = schema.domain, path, weights
        table.progress = progress
        csv = reader == "read_csv"
        raw = _source(path, reader, text=True)
        with _reading(path):
            types = {name: kind for name, kind, *_ in
                     table._connection.execute(f"DESCRIBE SELECT * FROM {raw}").fetchall()}
            table._raw = RawSource(schema, types, raw, csv)
            table._say(f"encoding {path.name} with the schema in one pass")
            table._connection.execute(
                f"CREATE TABLE records AS {table._encoding(table._raw, weights)}")
            table._from = "records"
            table._check(list(schema.domain.attrs) + ([weights] if weights else []))
        return table

    def _header(self) -> list[str]:
        return [row[0] for row in self._connection.execute(
            f"DESCRIBE SELECT * FROM {self._from}").fetchall()]

    def _fetch(self, sql: str) -> list[np.ndarray]:
        result = self._connection.execute(sql).fetchnumpy()
        return [np.asarray(result[name]) for name in result]

    def __repr__(self) -> str:
        # the number of records is private: a repr may end up in a log
        return f"DuckDBTable({str(self.path)!r}, {self.domain!r})"
