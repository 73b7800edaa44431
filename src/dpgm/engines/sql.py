"""Counting with SQL: what the DuckDB and Spark engines share — the checks of a source
against its domain, and every marginal as a GROUP BY (several in one pass with GROUPING
SETS). An engine supplies the source (``_from``), how to run a query (``_fetch``) and its
dialect (``quote``, ``grouping``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from dpgm.dataset import CountingSource
from dpgm.domain import Domain
from dpgm.errors import DataError


def quoted(name: str, quote: str = '"') -> str:
    """A column name as an SQL identifier."""
    return quote + name.replace(quote, quote * 2) + quote


class SQLCounts(CountingSource):
    """Counts of a table an SQL engine reads (see the module)."""

    domain: Domain
    weight_column: str | None
    _from: str
    #: the function giving a grouping set's bitmask (DuckDB: grouping, Spark: grouping_id)
    grouping = "grouping"
    #: how identifiers are quoted (DuckDB: "name", Spark: `name`)
    quote = '"'

    def _q(self, name: str) -> str:
        return quoted(name, self.quote)

    def _fetch(self, sql: str) -> list[np.ndarray]:
        """The columns of the query's result."""
        raise NotImplementedError

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
        bad = [column[0] for column in self._fetch(f"SELECT {', '.join(tests)} FROM {self._from}")]
        for attr, size, flag in zip(self.domain.attrs, self.domain.shape, bad, strict=False):
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
        SETS): what MST, AIM and PrivBayes measure together."""
        cliques = [self.domain.check(c) for c in cliques]
        if not cliques:
            return []
        # in order of first appearance in the grouping sets: Spark's grouping_id wants
        # the grouping columns in that order (DuckDB takes any)
        columns = list(dict.fromkeys(a for c in cliques for a in c))
        if not columns:
            return [np.array(self.total) for _ in cliques]
        sets = ", ".join("(" + ", ".join(self._q(a) for a in c) + ")" for c in cliques)
        selected = ", ".join(self._q(a) for a in columns)
        # a bit per column, set where the column is not grouped, the first the highest
        grouping = f"{self.grouping}({selected})"
        rows = self._fetch(f"SELECT {grouping}, {selected}, {self._measure()} FROM {self._from} "
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

