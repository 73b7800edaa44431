"""Counting integer-coded records in a file with DuckDB (embedded, out of core): the
counting interface of :class:`~dpgm.dataset.Dataset` — ``domain``, ``marginal``,
``marginals`` (several in one pass over the file), ``total`` and ``len`` — without loading
the records. Memory is bounded by DuckDB's ``memory_limit`` (it spills to disk beyond it).
DuckDB's errors come out as one-line :class:`~dpgm.errors.DataError` naming the file, and
a file that changes between passes stops the run (:func:`dpgm.engines.sql.fingerprint`).

DuckDB is an optional dependency (``pip install 'dpgm[duckdb]'``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from os import PathLike
from pathlib import Path

import numpy as np

from dpgm.domain import Domain
from dpgm.engines.encoding import DUCKDB, check_encodable
from dpgm.engines.sql import RawSource, SQLCounts
from dpgm.errors import DataError, ParameterError, option

FORMATS = {".csv": "read_csv", ".gz": "read_csv", ".parquet": "read_parquet",
           ".pq": "read_parquet"}
#: the least memory_limit the engine accepts: DuckDB's CSV reader alone takes a buffer of
#: 32 MiB, and each thread blocks of its own (a 48 MB CSV file needs about 80 MB on 2
#: threads); below this DuckDB fails part-way instead of spilling
MIN_MEMORY = 128 * 2**20
_MEMORY_UNITS = {"": 1, "b": 1, "byte": 1, "bytes": 1, "k": 1e3, "kb": 1e3, "kilobyte": 1e3,
                 "kilobytes": 1e3, "kib": 2**10, "m": 1e6, "mb": 1e6, "megabyte": 1e6,
                 "megabytes": 1e6, "mib": 2**20, "g": 1e9, "gb": 1e9, "gigabyte": 1e9,
                 "gigabytes": 1e9, "gib": 2**30, "t": 1e12, "tb": 1e12, "terabyte": 1e12,
                 "terabytes": 1e12, "tib": 2**40}


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
    # null_padding: a row with fewer fields than the header has missing values at its end,
    # as pandas reads it (the sniffer refused the whole file otherwise)
    return (f"read_csv({literal}, header = true, delim = ',', quote = '\"', escape = '\"', "
            f"null_padding = true{', all_varchar = true' if text else ''})")


@contextmanager
def _reading(path: Path) -> Iterator[None]:
    """DuckDB's errors in reading a file, as a one-line DataError naming the file: running
    out of memory, or a file it cannot read (a corrupt Parquet file fails with a bare
    duckdb.Error). Errors in the engine's own SQL (binder, parser, catalog) are bugs and
    go through as they are."""
    import duckdb

    try:
        yield
    except duckdb.OutOfMemoryException:
        # DuckDB's message says how much it held: a size that follows from the data
        raise DataError(f"{path}: DuckDB ran out of memory counting it; give it more "
                        f"({option('memory_limit')}) or fewer threads") from None
    except duckdb.Error as exc:
        if isinstance(exc, (duckdb.ProgrammingError, duckdb.InterruptException)) and \
                not isinstance(exc, duckdb.InvalidInputException):
            raise
        kind = "CSV" if path.suffix.lower() in (".csv", ".gz") else "Parquet"
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataError(f"{path}: not a readable {kind} file ({reason})") from None


def _memory_bytes(limit: str) -> float:
    """The bytes a DuckDB ``memory_limit`` allows (``"1GB"``, ``"512MiB"``, ``"80%"`` of
    this machine's memory), or a ParameterError for one it would not read as a size."""
    from dpgm.memory import physical_memory

    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([a-zA-Z]*|%)\s*", limit)
    unit = None if match is None else match.group(2).lower()
    if unit == "%":
        return float(match.group(1)) / 100 * (physical_memory() or float("inf"))
    if unit not in _MEMORY_UNITS:
        raise ParameterError(f"{option('memory_limit', limit)}: expected a size such as "
                             "1GB or 512MB")
    return float(match.group(1)) * _MEMORY_UNITS[unit]


def _check_memory(memory_limit: str | None) -> None:
    """Refuse, before anything is read, a memory limit DuckDB cannot work in: it would fail
    part-way through a pass."""
    from dpgm.memory import format_bytes

    if memory_limit is not None and _memory_bytes(str(memory_limit)) < MIN_MEMORY:
        raise ParameterError(
            f"the duckdb engine needs at least {format_bytes(MIN_MEMORY)} of memory; "
            f"{option('memory_limit')} gives it "
            f"{format_bytes(_memory_bytes(str(memory_limit)))}")


def _connect(database: str = ":memory:", *, memory_limit: str | None = None,
             temp_directory: str | PathLike[str] | None = None, threads: int | None = None):
    """A DuckDB connection with the engine's limits."""
    _check_memory(memory_limit)
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
    array; a CSV file's cells are read as text, so ``1.5`` is refused wherever it is (a
    type guessed from the first records would round it). ``memory_limit`` (e.g.
    ``"1GB"``, at least ``MIN_MEMORY``) bounds DuckDB's memory; ``temp_directory`` is
    where it spills; ``progress`` is told what is counted. Each count reads the file again:
    one that changed since the first read stops the count. A raw table goes through
    :meth:`encode` instead.
    """

    def __init__(self, source: str | PathLike[str], domain: Domain, *,
                 weights: str | None = None, memory_limit: str | None = None,
                 temp_directory: str | PathLike[str] | None = None, threads: int | None = None,
                 progress: Callable[[str], None] | None = None):
        if not isinstance(domain, Domain):
            raise DataError(f"domain must be a dpgm.Domain, got {type(domain).__name__}")
        from dpgm.dataset import read_table

        path, reader = _file(source)
        self._connection = _connect(memory_limit=memory_limit, temp_directory=temp_directory,
                                    threads=threads)
        self.domain, self.path, self.weight_column = domain, path, weights
        self.progress = progress
        self._watch(path)  # before the first read: every pass compares with it
        if reader == "read_csv":  # an empty file, or a repeated name, refused as in memory
            read_table(path, nrows=0)
        source = _source(path, reader, text=True)
        self._check(source, self._types(source))

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
        _check_memory(memory_limit)
        path, reader = _file(source)
        table = cls.__new__(cls)
        table.path = path
        table._watch(path)  # the file is read once (and again for an error's message only)
        read_table(path, nrows=0)  # a header with a repeated name is refused, as in memory
        if temp_directory is not None:  # DuckDB would make its spill folder itself
            Path(temp_directory).mkdir(parents=True, exist_ok=True)
        folder = tempfile.TemporaryDirectory(
            dir=None if temp_directory is None else str(temp_directory), prefix="dpgm-")
        table._folder = folder  # the codes' database lives as long as the table
        table._connection = _connect(str(Path(folder.name) / "records.duckdb"),
                                     memory_limit=memory_limit,
                                     temp_directory=temp_directory, threads=threads)
        table.domain, table.path, table.weight_column = schema.domain, path, weights
        table.progress = progress
        csv = reader == "read_csv"
        raw = _source(path, reader, text=True)
        table._raw = RawSource(schema, table._types(raw), raw, csv)
        table._say(f"encoding {path.name} with the schema in one pass")
        table._execute(f"CREATE TABLE records AS {table._encoding(table._raw, weights)}")
        # the codes are integers and the weights numbers, by the encoding
        types = dict.fromkeys(schema.domain.attrs, "INTEGER")
        table._check("records", types | ({weights: "DOUBLE"} if weights else {}))
        table._print = None  # the counts read the table of codes, not the file
        return table

    def _execute(self, sql: str) -> None:
        """Run a statement that reads the file, checked as a pass is (``_run``)."""
        self._unchanged()
        try:
            with _reading(self.path):
                self._connection.execute(sql)
        except Exception:
            self._unchanged()
            raise
        self._unchanged()

    def _types(self, source: str) -> dict[str, str]:
        """The columns of ``source`` and their types in DuckDB."""
        self._unchanged()
        with _reading(self.path):
            described = self._connection.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()
        return {name: kind for name, kind, *_ in described}

    def _fetch(self, sql: str) -> list[np.ndarray]:
        with _reading(self.path):
            result = self._connection.execute(sql).fetchnumpy()
        return [np.asarray(result[name]) for name in result]

    def __repr__(self) -> str:
        # the number of records is private: a repr may end up in a log
        return f"DuckDBTable({str(self.path)!r}, {self.domain!r})"
