"""Counting integer-coded records in a file with DuckDB (embedded, out of core): the
counting interface of :class:`~dpgm.dataset.Dataset` — ``domain``, ``marginal``,
``marginals`` (several in one pass over the file), ``total`` and ``len`` — without loading
the records. Memory is bounded by DuckDB's ``memory_limit`` (it spills to disk beyond it).

DuckDB is an optional dependency (``pip install 'dpgm[duckdb]'``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import repeat
from os import PathLike
from pathlib import Path

import numpy as np

from dpgm.dataset import CountingSource
from dpgm.domain import Domain
from dpgm.errors import DataError

FORMATS = {".csv": "read_csv", ".gz": "read_csv", ".parquet": "read_parquet",
           ".pq": "read_parquet"}


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class DuckDBTable(CountingSource):
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
        path = Path(source)
        reader = FORMATS.get(path.suffix.lower())
        if reader is None:
            raise DataError(f"{path}: the duckdb engine reads .csv, .csv.gz and .parquet files")
        if not path.exists():
            raise DataError(f"{path}: no such file")
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
        self._check()

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

        path = Path(source)
        if path.suffix.lower() not in FORMATS:
            raise DataError(f"{path}: the duckdb engine reads .csv, .csv.gz and .parquet files")
        if not path.exists():
            raise DataError(f"{path}: no such file")
        folder = tempfile.TemporaryDirectory(
            dir=None if temp_directory is None else str(temp_directory), prefix="dpgm-")
        connection = duckdb.connect(str(Path(folder.name) / "records.duckdb"))
        if memory_limit is not None:
            connection.execute(f"SET memory_limit = '{memory_limit}'")
        domain = schema.domain
        columns = ", ".join(f"{_quoted(a)} INTEGER" for a in domain.attrs)
        connection.execute(f"CREATE TABLE records ({columns})")
        if FORMATS[path.suffix.lower()] == "read_parquet":
            reader = duckdb.connect().execute(
                "SELECT * FROM read_parquet(?)", [str(path)])
            vectors = max(1, chunk_rows // 2048)  # DuckDB hands out vectors of 2,048 rows
            chunks = (reader.fetch_df_chunk(vectors) for _ in repeat(None))  # until empty
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

    # -- checks -----------------------------------------------------------------------
    def _check(self) -> None:
        header = [row[0] for row in self._connection.execute(
            f"DESCRIBE SELECT * FROM {self._from}").fetchall()]
        missing = [a for a in self.domain.attrs if a not in header]
        if missing:
            raise DataError(f"{self.path} has no column for {missing}")
        if self.weight_column is not None and self.weight_column not in header:
            raise DataError(f"{self.path} has no weights column {self.weight_column!r}")
        # one pass: is every code a whole number in range, is every weight in [0, 1]?
        tests = [f"bool_or({_quoted(a)} IS NULL OR {_quoted(a)} < 0 OR {_quoted(a)} >= {k} "
                 f"OR {_quoted(a)} <> floor({_quoted(a)}))"
                 for a, k in zip(self.domain.attrs, self.domain.shape, strict=True)]
        if self.weight_column is not None:
            w = _quoted(self.weight_column)
            tests.append(f"bool_or({w} IS NULL OR {w} < 0 OR {w} > 1)")
        bad = self._connection.execute(f"SELECT {', '.join(tests)} FROM {self._from}").fetchone()
        for attr, size, flag in zip(self.domain.attrs, self.domain.shape, bad, strict=False):
            if flag:
                raise DataError(f"column {attr!r} must hold whole codes 0..{size - 1} "
                                "(found another value or a missing one)")
        if self.weight_column is not None and bad[-1]:
            raise DataError(f"weights column {self.weight_column!r} must hold numbers in "
                            "[0, 1] (found another value or a missing one)")

    # -- counting ---------------------------------------------------------------------
    def _measure(self) -> str:
        return "count(*)" if self.weight_column is None else f"sum({_quoted(self.weight_column)})"

    @property
    def weights(self) -> None:
        """Always None: the weights stay in the file (see ``weight_column``)."""
        return None

    @property
    def weighted(self) -> bool:
        return self.weight_column is not None

    def __len__(self) -> int:
        return int(self._connection.execute(f"SELECT count(*) FROM {self._from}").fetchone()[0])

    @property
    def total(self) -> float:
        """Number of records, or the sum of the weights."""
        found = self._connection.execute(f"SELECT {self._measure()} FROM {self._from}").fetchone()
        return float(found[0] or 0.0)

    def marginal(self, attrs: Iterable[str]) -> np.ndarray:
        """Counts (or summed weights) of every cell of the marginal on ``attrs``."""
        return self.marginals([attrs])[0]

    def marginals(self, cliques: Sequence[Iterable[str]]) -> list[np.ndarray]:
        """The marginals on several attribute sets, in one pass over the file (GROUPING
        SETS): what MST, AIM and PrivBayes measure together."""
        cliques = [self.domain.check(c) for c in cliques]
        if not cliques:
            return []
        columns = sorted({a for c in cliques for a in c}, key=self.domain.attrs.index)
        if not columns:
            return [np.array(self.total) for _ in cliques]
        sets = ", ".join("(" + ", ".join(_quoted(a) for a in c) + ")" for c in cliques)
        selected = ", ".join(_quoted(a) for a in columns)
        grouping = f"grouping({selected})"  # a bit per column, set where not grouped
        rows = self._connection.execute(
            f"SELECT {grouping}, {selected}, {self._measure()} FROM {self._from} "
            f"GROUP BY GROUPING SETS ({sets})").fetchnumpy()
        ids = np.asarray(rows[list(rows)[0]])
        out = []
        for clique in cliques:
            shape = self.domain.project(clique).shape
            table = np.zeros(int(np.prod(shape)), dtype=np.float64)
            # grouping() has bit j set (from the left) when columns[j] is not grouped
            want = sum(1 << (len(columns) - 1 - columns.index(a))
                       for a in columns if a not in clique)
            mine = ids == want
            values = np.asarray(rows[list(rows)[-1]], dtype=np.float64)[mine]
            if clique:
                codes = tuple(np.asarray(rows[list(rows)[1 + columns.index(a)]])[mine]
                              .astype(np.int64) for a in clique)
                np.add.at(table, np.ravel_multi_index(codes, shape), values)
            else:
                table[0] = values.sum()
            out.append(table.reshape(shape) if clique else np.array(table[0]))
        return out

    def __repr__(self) -> str:
        # the number of records is private: a repr may end up in a log
        return f"DuckDBTable({str(self.path)!r}, {self.domain!r})"
