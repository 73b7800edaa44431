"""Counting integer-coded records in a file with DuckDB (embedded, out of core): the
counting interface of :class:`~dpgm.dataset.Dataset` — ``domain``, ``marginal``,
``marginals`` (several in one pass over the file), ``total`` and ``len`` — without loading
the records. Memory is bounded by DuckDB's ``memory_limit`` (it spills to disk beyond it).

DuckDB is an optional dependency (``pip install 'dpgm[duckdb]'``).
"""

from __future__ import annotations

from itertools import repeat
from os import PathLike
from pathlib import Path

import numpy as np

from dpgm.domain import Domain
from dpgm.engines.sql import SQLCounts, quoted
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


class DuckDBTable(SQLCounts):
    """Integer-coded records in a CSV (``.gz`` too) or Parquet file, counted by DuckDB.

    One column per attribute of ``domain`` holding codes ``0..size-1`` (other columns are
    ignored), and optionally a ``weights`` column of record weights in [0, 1]. The file is
    checked when the table is made (columns, codes, weights), as a Dataset checks its
    array. ``memory_limit`` (e.g. ``"1GB"``) bounds DuckDB's memory; ``temp_directory``
    is where it spills.
    """

    def __init__(self, source: str | PathLike[str], domain: Domain, *,
                 weights: str | None = None, memory_limit: str | None = None,
                 temp_directory: str | PathLike[str] | None = None, threads: int | None = None):
        try:
            import duckdb
        except ImportError:
            raise ImportError("the duckdb engine needs DuckDB: pip install 'dpgm[duckdb]'"
                              ) from None
        if not isinstance(domain, Domain):
            raise DataError(f"domain must be a dpgm.Domain, got {type(domain).__name__}")
        path, reader = _file(source)
        self.domain = domain
        self.path = path
        self.weight_column = weights
        self._connection = duckdb.connect()
        settings = {"memory_limit": memory_limit, "threads": threads,
                    "temp_directory": None if temp_directory is None else str(temp_directory)}
        for name, value in settings.items():
            if value is not None:
                self._connection.execute(f"SET {name} = '{value}'")
        literal = "'" + str(path).replace("'", "''") + "'"
        self._from = f"{reader}({literal})"
        self._check(self._header())

    @classmethod
    def encode(cls, source: str | PathLike[str], schema, *, chunk_rows: int = 500_000,
               memory_limit: str | None = None,
               temp_directory: str | PathLike[str] | None = None) -> DuckDBTable:
        """A raw CSV (``.gz`` too) or Parquet file encoded with its public ``schema``, a
        block of ``chunk_rows`` records at a time by the schema's own encoder (so the codes
        are those of the in-memory path), into a DuckDB table on disk (removed with this
        object). Memory is bounded by the block; the file is read once."""
        import tempfile

        import duckdb
        import pandas as pd

        path, reader = _file(source)
        folder = tempfile.TemporaryDirectory(
            dir=None if temp_directory is None else str(temp_directory), prefix="dpgm-")
        connection = duckdb.connect(str(Path(folder.name) / "records.duckdb"))
        if memory_limit is not None:
            connection.execute(f"SET memory_limit = '{memory_limit}'")
        domain = schema.domain
        columns = ", ".join(f"{quoted(a)} INTEGER" for a in domain.attrs)
        connection.execute(f"CREATE TABLE records ({columns})")
        if reader == "read_parquet":
            result = duckdb.connect().execute("SELECT * FROM read_parquet(?)", [str(path)])
            vectors = max(1, chunk_rows // 2048)  # DuckDB hands out vectors of 2,048 rows
            chunks = (result.fetch_df_chunk(vectors) for _ in repeat(None))  # until empty
        else:
            chunks = pd.read_csv(path, chunksize=chunk_rows)
        for chunk in chunks:
            if len(chunk) == 0:  # the Parquet reader's end
                break
            frame = pd.DataFrame(schema.encode(chunk).records, columns=list(domain.attrs))
            connection.register("chunk", frame)
            connection.execute("INSERT INTO records SELECT * FROM chunk")
            connection.unregister("chunk")
        table = cls.__new__(cls)
        table.domain, table.path, table.weight_column = domain, path, None
        table._connection, table._from, table._folder = connection, "records", folder
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
