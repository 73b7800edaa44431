"""Counting with SQL: what the DuckDB and Spark engines share — a raw table's encoding by
its schema (:mod:`dpgm.engines.encoding`), the checks of a source against its domain, and
every marginal as a GROUP BY (several in one pass with GROUPING SETS). An engine supplies
the source (``_from``), how to run a query (``_fetch``) and its ``dialect``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from dpgm.dataset import CountingSource
from dpgm.domain import Domain
from dpgm.engines.encoding import DUCKDB, Dialect, encode_column, kind_of, prepared, problem
from dpgm.errors import DataError


@dataclass(frozen=True)
class RawSource:
    """A raw table and the schema that encodes it (kept to explain a value without a
    code)."""

    schema: object  # dpgm.Schema
    types: dict[str, str]  # column name -> the engine's type name
    source: str  # the SQL source of the raw records
    csv: bool  # whether the values are a CSV file's text


#: how many cells of count tables a SQL source keeps (8 bytes each: 64 MiB)
CACHED_CELLS = 2**23


class SQLCounts(CountingSource):
    """Counts of a table an SQL engine reads (see the module)."""

    domain: Domain
    weight_column: str | None
    _from: str
    dialect: Dialect = DUCKDB
    #: where the codes were encoded from a raw table by a schema, that table
    _raw: RawSource | None = None
    #: told what is being counted (never a count): the command line's progress lines
    progress: Callable[[str], None] | None = None

    def _q(self, name: str) -> str:
        return self.dialect.identifier(name)

    def _fetch(self, sql: str) -> list[np.ndarray]:
        """The columns of the query's result (each engine runs it its own way)."""
        raise NotImplementedError

    def _say(self, message: str) -> None:
        if self.progress is not None:
            self.progress(message)

    # -- raw tables -------------------------------------------------------------------
    def _encoding(self, raw: RawSource, weights: str | None) -> str:
        """The query giving a raw table's codes (and weights) by its schema's rules."""
        missing = [name for name in raw.schema.columns if name not in raw.types]
        if missing:
            raise DataError(f"{self.path} has no column for {missing}")
        if weights is not None and weights not in raw.types:
            raise DataError(f"{self.path} has no weights column {weights!r}")
        names = list(raw.schema.columns)
        kinds = [kind_of(raw.types[name]) for name in names]
        query, values = prepared(list(zip(names, kinds, strict=True)), raw.source,
                                 self.dialect, [weights] if weights is not None else [])
        parts = []
        for name, kind, v in zip(names, kinds, values, strict=True):
            sql = encode_column(raw.schema.columns[name], v, kind, self.dialect)
            parts.append(f"{sql.code} AS {self._q(name)}")
        if weights is not None:
            w = self._q(weights)
            value = (f"TRY_CAST(trim({w}) AS DOUBLE)" if kind_of(raw.types[weights]) == "text"
                     else f"CAST({w} AS DOUBLE)")
            parts.append(f"{value} AS {w}")
        return f"SELECT {', '.join(parts)} FROM ({query}) AS _values"

    def _explain(self, attr: str) -> str:
        """Why a raw column has a value without a code: one more pass over the raw table,
        made only to word the error."""
        raw = self._raw
        column = raw.schema.columns[attr]
        kind = kind_of(raw.types[attr])
        query, (v,) = prepared([(attr, kind)], raw.source, self.dialect)
        sql = encode_column(column, v, kind, self.dialect)
        text = f"CAST({v.raw} AS {self.dialect.text})"
        found = self._fetch(
            f"SELECT bool_or(({sql.code}) IS NULL AND {sql.missing}), "
            f"min({text}) FILTER (WHERE ({sql.code}) IS NULL AND NOT {sql.missing}) "
            f"FROM ({query}) AS _values")
        missing, example = found[0][0], found[1][0]
        return problem(column, kind, None if missing or example is None else str(example))

    # -- checks -----------------------------------------------------------------------
    def _check(self, header: list[str]) -> None:
        """Refuse a source whose columns, codes or weights are not what the domain says."""
        missing = [a for a in self.domain.attrs if a not in header]
        if missing:
            raise DataError(f"{self.path} has no column for {missing}")
        if self.weight_column is not None and self.weight_column not in header:
            raise DataError(f"{self.path} has no weights column {self.weight_column!r}")
        # one pass: is every code a whole number in range, is every weight in [0, 1]?
        tests = [f"bool_or({self._q(a)} IS NULL OR {self._q(a)} < 0 OR {self._q(a)} >= {k} "
                 f"OR {self._q(a)} <> floor({self._q(a)}))"
                 for a, k in zip(self.domain.attrs, self.domain.shape, strict=True)]
        if self.weight_column is not None:
            w = self._q(self.weight_column)
            tests.append(f"bool_or({w} IS NULL OR {w} < 0 OR {w} > 1)")
        self._say("checking the codes in one pass over the records")
        bad = [column[0] for column in self._fetch(f"SELECT {', '.join(tests)} FROM {self._from}")]
        for attr, size, flag in zip(self.domain.attrs, self.domain.shape, bad, strict=False):
            if flag and self._raw is not None:
                raise DataError(self._explain(attr))
            if flag:
                raise DataError(f"column {attr!r} must hold whole codes 0..{size - 1} "
                                "(found another value or a missing one)")
        if self.weight_column is not None and bad[-1]:
            raise DataError(f"weights column {self.weight_column!r} must hold numbers in "
                            "[0, 1] (found another value or a missing one)")

    # -- counting ---------------------------------------------------------------------
    def _measure(self) -> str:
        return "count(*)" if self.weight_column is None else f"sum({self._q(self.weight_column)})"

    @property
    def weights(self) -> None:
        """Always None: the weights stay in the file (see ``weight_column``)."""
        return None

    @property
    def weighted(self) -> bool:
        return self.weight_column is not None

    def __len__(self) -> int:
        return int(self._fetch(f"SELECT count(*) FROM {self._from}")[0][0])

    @property
    def total(self) -> float:
        """Number of records, or the sum of the weights."""
        found = self._fetch(f"SELECT {self._measure()} FROM {self._from}")[0][0]
        return 0.0 if found is None or found != found else float(found)

    def marginal(self, attrs: Iterable[str]) -> np.ndarray:
        """Counts (or summed weights) of every cell of the marginal on ``attrs``."""
        return self.marginals([attrs])[0]

    def marginals(self, cliques: Sequence[Iterable[str]]) -> list[np.ndarray]:
        """The marginals on several attribute sets, in one pass over the file (GROUPING
        SETS): what MST, AIM and PrivBayes measure together. Count tables are kept (up to
        ``CACHED_CELLS`` cells), so a marginal a mechanism selects and then measures is
        counted once."""
        cliques = [tuple(self.domain.check(c)) for c in cliques]
        cache = self.__dict__.setdefault("_counted", {})  # encode() makes tables by __new__
        wanted = [c for c in dict.fromkeys(cliques) if c not in cache]
        counted = dict(zip(wanted, self._count(wanted), strict=True)) if wanted else {}
        kept = sum(t.size for t in cache.values())
        for clique, table in counted.items():
            if kept + table.size <= CACHED_CELLS:
                cache[clique] = table
                kept += table.size
        return [(counted[c] if c in counted else cache[c]).copy() for c in cliques]

    def _count(self, cliques: list[tuple[str, ...]]) -> list[np.ndarray]:
        """The marginals on ``cliques``, counted in one pass."""
        # in order of first appearance in the grouping sets: Spark's grouping_id wants
        # the grouping columns in that order (DuckDB takes any)
        columns = list(dict.fromkeys(a for c in cliques for a in c))
        if not columns:
            return [np.array(self.total) for _ in cliques]
        sets = ", ".join("(" + ", ".join(self._q(a) for a in c) + ")" for c in cliques)
        selected = ", ".join(self._q(a) for a in columns)
        # a bit per column, set where the column is not grouped, the first the highest
        grouping = f"{self.dialect.grouping}({selected})"
        # which engine counts is not said: --engine auto chose it from the file's size
        self._say(f"counting {len(cliques)} marginal(s) on {len(columns)} attribute(s) in "
                  "one pass over the records")
        source, measure = self._from, self._measure()
        if self.dialect.preaggregate and len(cliques) > 1:
            # the records' distinct cells first: the grouping sets then expand each cell,
            # not each record, once per set (Spark's plan copies its input per set)
            source = (f"(SELECT {selected}, {measure} AS _dpgm_n FROM {self._from} "
                      f"GROUP BY {selected}) AS _cells")
            measure = "sum(_dpgm_n)"
        rows = self._fetch(f"SELECT {grouping}, {selected}, {measure} FROM {source} "
                           f"GROUP BY GROUPING SETS ({sets})")
        ids = np.asarray(rows[0])
        out = []
        for clique in cliques:
            shape = self.domain.project(clique).shape
            table = np.zeros(int(np.prod(shape)), dtype=np.float64)
            # grouping() has bit j set (from the left) when columns[j] is not grouped
            want = sum(1 << (len(columns) - 1 - columns.index(a))
                       for a in columns if a not in clique)
            mine = ids == want
            values = np.asarray(rows[-1], dtype=np.float64)[mine]
            if clique:
                codes = tuple(np.asarray(rows[1 + columns.index(a)])[mine]
                              .astype(np.int64) for a in clique)
                np.add.at(table, np.ravel_multi_index(codes, shape), values)
            else:
                table[0] = values.sum()
            out.append(table.reshape(shape) if clique else np.array(table[0]))
        return out

