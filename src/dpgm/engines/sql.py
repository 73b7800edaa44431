"""Counting with SQL: what the DuckDB and Spark engines share — a raw table's encoding by
its schema (:mod:`dpgm.engines.encoding`), the checks of a source against its domain (codes
read from a CSV file's text, as the in-memory reader reads them), a file's fingerprint that
shows it did not change between passes, and every marginal as a GROUP BY (several in one
pass with GROUPING SETS). An engine supplies the source (``_from``), how to run a query
(``_fetch``) and its ``dialect``.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dpgm.dataset import CountingSource
from dpgm.domain import Domain
from dpgm.engines.encoding import (
    DUCKDB,
    GROUPING_BITS,
    Dialect,
    encode_column,
    kind_of,
    prepared,
    problem,
)
from dpgm.errors import DataError
from dpgm.schema import parse


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

#: bytes of a file's fingerprint read at each end, and at each of ``_OFFSETS``
EDGE_BYTES = 64 * 2**10
SAMPLE_BYTES = 4 * 2**10
#: where the samples between the ends start, as fractions of the size: fixed, so two
#: fingerprints of one file read the same bytes
_OFFSETS = tuple(k / 8 for k in range(1, 8))


def _local(path: str | os.PathLike[str]) -> Path | None:
    """The local file or folder ``path`` names, or None (a cluster's storage)."""
    text = str(path)
    if text.startswith("file:"):
        from urllib.parse import unquote, urlparse

        text = unquote(urlparse(text).path)
    elif "://" in text:
        return None
    return Path(text) if os.path.exists(text) else None


def _file_print(path: Path, *, sample: bool = True) -> tuple:
    """Size, modification time and a checksum of the bytes at fixed places of one file."""
    status = path.stat()
    if not sample:
        return status.st_size, status.st_mtime_ns
    size, digest = status.st_size, hashlib.blake2b(digest_size=16)
    with open(path, "rb") as handle:
        starts = [0, max(size - EDGE_BYTES, 0)]
        starts += [int(size * f) for f in _OFFSETS]
        lengths = [EDGE_BYTES, EDGE_BYTES] + [SAMPLE_BYTES] * len(_OFFSETS)
        for start, length in zip(starts, lengths, strict=True):
            handle.seek(start)
            digest.update(handle.read(length))
    return size, status.st_mtime_ns, digest.hexdigest()


def fingerprint(path: str | os.PathLike[str]) -> tuple | None:
    """What shows that a local file changed, cheaply (156 KiB read, whatever its size):
    its size, its modification time in ns, and a checksum of its first and last
    64 KiB and of 4 KiB at seven fixed fractions of its length. For a folder (Spark reads
    every file in one), each file's name, size and modification time. None where
    ``path`` is not local: a cluster's storage is not watched."""
    local = _local(path)
    if local is None:
        return None
    try:
        if local.is_dir():
            return tuple((str(f.relative_to(local)), *_file_print(f, sample=False))
                         for f in sorted(local.rglob("*")) if f.is_file())
        return _file_print(local)
    except OSError as exc:  # removed or unreadable now: not the file that was read
        return ("unreadable", exc.errno)


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
    #: the source file's fingerprint before its first read, while passes read it (None:
    #: a DataFrame, a cluster's storage, or codes already copied out of the file)
    _print: tuple | None = None

    def _q(self, name: str) -> str:
        return self.dialect.identifier(name)

    def _fetch(self, sql: str) -> list[np.ndarray]:
        """The columns of the query's result (each engine runs it its own way)."""
        raise NotImplementedError

    def _watch(self, path) -> None:
        """Take the fingerprint of the file about to be read: each pass then checks it."""
        self._print = None if path is None else fingerprint(path)

    def _unchanged(self) -> None:
        """Stop where the file is no longer the one the first pass read: the counts of one
        version would be mixed with those of another (and the check pass would not cover
        the second). The message shows no cell."""
        if self._print is not None and fingerprint(self.path) != self._print:
            raise DataError(f"{self.path} changed while it was being read; counts of two "
                            "versions cannot be mixed: read a copy that nothing writes to")

    def _run(self, sql: str) -> list[np.ndarray]:
        """``_fetch``, with the file checked before and after the pass (and on a failure,
        which a change explains better than the engine's own error)."""
        self._unchanged()
        try:
            found = self._fetch(sql)
        except Exception:
            self._unchanged()
            raise
        self._unchanged()
        return found

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
        if weights is not None:  # read as a column of codes is (NULL: refused by the check)
            value = self._number(weights, kind_of(raw.types[weights]))
            parts.append(f"{value or 'CAST(NULL AS DOUBLE)'} AS {self._q(weights)}")
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
        found = self._run(
            f"SELECT bool_or(({sql.code}) IS NULL AND {sql.missing}), "
            f"min({text}) FILTER (WHERE ({sql.code}) IS NULL AND NOT {sql.missing}) "
            f"FROM ({query}) AS _values")
        missing, example = found[0][0], found[1][0]
        return problem(column, kind, None if missing or example is None else str(example))

    # -- checks -----------------------------------------------------------------------
    def _number(self, name: str, kind: str) -> str | None:
        """The check's reading of a code or weights column of type ``kind``: a DOUBLE, NULL
        where the value is no number. A text is a number where, stripped of white space,
        it is one in decimal notation (:data:`dpgm.schema.parse.NUMBER`), as the in-memory
        reader reads it: the engines' casts read more forms (``0x1``, ``1_0``, ``inf``)
        and round ``1.5`` to an integer. None for a type that holds no numbers."""
        q = self._q(name)
        if kind == "text":
            text = self.dialect.strip(q, f"trim({q})")
            # digits alone first: most codes, read twice as fast as by stripping
            return (f"CASE WHEN {self.dialect.match(q, '^[0-9]+$')} THEN CAST({q} AS DOUBLE) "
                    f"WHEN {self.dialect.match(text, parse.NUMBER)} "
                    f"THEN CAST({text} AS DOUBLE) END")
        if kind in ("int", "float"):
            return f"CAST({q} AS DOUBLE)"
        if kind == "bool":
            return f"CAST(CAST({q} AS INTEGER) AS DOUBLE)"
        return None

    def _counted(self, name: str, kind: str, code: bool, strip: bool) -> str:
        """How the counting passes read a column the check accepted (a code as an integer,
        a weight as a DOUBLE): a text by the engine's cast, which reads every text the
        check accepted but one padded with white space it does not trim (``strip``: the
        check found one, so the column is stripped first, the slow way)."""
        q = self._q(name)
        if kind == "text":
            text = self.dialect.strip(q, f"trim({q})") if strip else q
            value = f"TRY_CAST({text} AS DOUBLE)"
        elif kind == "int":
            return q
        elif kind == "bool":
            value = f"CAST({q} AS INTEGER)"
        else:
            value = q
        if not code and kind == "text":
            return value  # a DOUBLE already
        return f"CAST({value} AS {'BIGINT' if code else 'DOUBLE'})"

    def _check(self, source: str, types: dict[str, str]) -> None:
        """Refuse a source whose columns, codes or weights are not what the domain says (one
        pass: is every code a whole number in range, every weight in [0, 1]?), then count
        from it (``_from``). ``types``: each column's type in the engine."""
        attrs, weights = list(self.domain.attrs), self.weight_column
        missing = [a for a in attrs if a not in types]
        if missing:
            raise DataError(f"{self.path} has no column for {missing}")
        if weights is not None and weights not in types:
            raise DataError(f"{self.path} has no weights column {weights!r}")
        names = attrs + ([weights] if weights is not None else [])
        kinds = [kind_of(types[name]) for name in names]
        values, tests, texts = [], [], []
        for i, (name, kind) in enumerate(zip(names, kinds, strict=True)):
            values.append(f"{self._number(name, kind) or 'CAST(NULL AS DOUBLE)'} AS _v{i}")
            if kind == "text":  # does the engine's cast miss a value the check reads?
                values.append(f"TRY_CAST({self._q(name)} AS DOUBLE) IS NULL AS _c{i}")
                texts.append(i)
        for i, size in enumerate(self.domain.shape):
            tests.append(f"bool_or(_v{i} IS NULL OR _v{i} < 0 OR _v{i} >= {size} "
                         f"OR _v{i} <> floor(_v{i}))")
        if weights is not None:
            i = len(attrs)
            tests.append(f"bool_or(_v{i} IS NULL OR _v{i} < 0 OR _v{i} > 1)")
        tests += [f"bool_or(_c{i})" for i in texts]
        self._say("checking the codes in one pass over the records")
        found = [column[0] for column in self._run(
            f"SELECT {', '.join(tests)} FROM (SELECT {', '.join(values)} FROM {source}) "
            "AS _values")]
        bad, strip = found[:len(names)], dict(zip(texts, found[len(names):], strict=True))
        for attr, size, kind, flag in zip(attrs, self.domain.shape, kinds, bad, strict=False):
            if flag and self._raw is not None:
                raise DataError(self._explain(attr))
            if flag:
                raise DataError(self._bad_code(source, attr, kind, size))
        if weights is not None and bad[-1]:
            raise DataError(f"weights column {weights!r} must hold numbers in [0, 1] (found "
                            "another value or a missing one)")
        reads = [self._counted(name, kind, name != weights, bool(strip.get(i)))
                 for i, (name, kind) in enumerate(zip(names, kinds, strict=True))]
        if all(read == self._q(name) for read, name in zip(reads, names, strict=True)):
            self._from = source  # integer codes already: counted as they are
        else:
            columns = ", ".join(f"{read} AS {self._q(name)}"
                                for read, name in zip(reads, names, strict=True))
            self._from = f"(SELECT {columns} FROM {source}) AS _codes"

    def _bad_code(self, source: str, attr: str, kind: str, size: int) -> str:
        """Why a column of codes was refused, naming one value (the least as text), as the
        in-memory reader names it: one more pass, made only for the message (the SQL
        engines cannot name a row)."""
        value = self._number(attr, kind) or "CAST(NULL AS DOUBLE)"
        text = f"CAST({self._q(attr)} AS {self.dialect.text})"
        example = self._run(
            f"SELECT min(_x) FROM (SELECT {text} AS _x, {value} AS _v FROM {source}) AS _values "
            f"WHERE _x IS NOT NULL AND (_v IS NULL OR _v < 0 OR _v >= {size} "
            "OR _v <> floor(_v))")[0][0]
        codes = f"records must be integer codes 0..{size - 1}"
        if example is None or parse.is_missing_text(str(example), parse.missing_texts()):
            return f"column {attr!r} has a missing value; {codes}"
        example = str(example)
        number = parse.number(parse.strip(example))
        if kind == "bool":
            return f"column {attr!r} has value {example}, outside its domain 0..{size - 1}"
        if number is None and kind in ("text", "other"):
            return f"column {attr!r} has a non-numeric value {example!r}; {codes}"
        if number is None or not np.isfinite(number):
            return f"column {attr!r} has a missing or non-finite value ({example}); {codes}"
        if not number.is_integer():
            return f"column {attr!r} has a non-integer value {parse.strip(example)}; {codes}"
        return (f"column {attr!r} has value {parse.strip(example)}, outside its domain "
                f"0..{size - 1}")

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
        return int(self._run(f"SELECT count(*) FROM {self._from}")[0][0])

    @property
    def total(self) -> float:
        """Number of records, or the sum of the weights."""
        found = self._run(f"SELECT {self._measure()} FROM {self._from}")[0][0]
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
        """The marginals on ``cliques``, in one pass per batch of at most
        ``dialect.max_sets`` cliques (DuckDB: 32) that together group by at most
        ``dialect.max_grouped`` columns (Spark: 63)."""
        if not any(cliques):
            return [np.array(self.total) for _ in cliques]
        batches = grouping_batches(cliques, self.dialect.max_grouped, self.dialect.max_sets)
        passes = "one pass" if len(batches) == 1 else f"{len(batches)} passes"
        columns = len({a for c in cliques for a in c})
        # which engine counts is not said: --engine auto chose it from the file's size
        self._say(f"counting {len(cliques)} marginal(s) on {columns} attribute(s) in "
                  f"{passes} over the records")
        counted: dict[tuple[str, ...], np.ndarray] = {}
        for batch in batches:
            counted.update(zip(batch, self._count_batch(batch), strict=True))
        return [counted[c] for c in cliques]

    def _count_batch(self, cliques: list[tuple[str, ...]]) -> list[np.ndarray]:
        """The marginals on ``cliques``, counted in one GROUPING SETS pass."""
        # in order of first appearance in the grouping sets: Spark's grouping_id wants
        # the grouping columns in that order (DuckDB takes any)
        columns = list(dict.fromkeys(a for c in cliques for a in c))
        if not columns:
            return [np.array(self.total) for _ in cliques]
        sets = ", ".join("(" + ", ".join(self._q(a) for a in c) + ")" for c in cliques)
        selected = ", ".join(self._q(a) for a in columns)
        # one bitmask per run of GROUPING_BITS columns: a bit per column, set where the
        # column is not grouped, the run's first column the highest
        runs = [columns[k:k + GROUPING_BITS] for k in range(0, len(columns), GROUPING_BITS)]
        grouping = ", ".join(f"{self.dialect.grouping}({', '.join(self._q(a) for a in run)})"
                             for run in runs)
        source, measure = self._from, self._measure()
        if self.dialect.preaggregate and len(cliques) > 1:
            # the records' distinct cells first: the grouping sets then expand each cell,
            # not each record, once per set (Spark's plan copies its input per set)
            source = (f"(SELECT {selected}, {measure} AS _dpgm_n FROM {self._from} "
                      f"GROUP BY {selected}) AS _cells")
            measure = "sum(_dpgm_n)"
        rows = self._run(f"SELECT {grouping}, {selected}, {measure} FROM {source} "
                         f"GROUP BY GROUPING SETS ({sets})")
        masks = np.stack([np.asarray(r, dtype=np.int64) for r in rows[:len(runs)]], axis=1)
        values = np.asarray(rows[-1], dtype=np.float64)
        # the result's rows of each grouping set, found once for all sets
        found, which = np.unique(masks, axis=0, return_inverse=True)
        order = np.argsort(which.ravel(), kind="stable")
        starts = np.searchsorted(which.ravel()[order], np.arange(len(found) + 1))
        where = {tuple(int(m) for m in mask): order[starts[k]:starts[k + 1]]
                 for k, mask in enumerate(found)}
        out = []
        for clique in cliques:
            shape = self.domain.project(clique).shape
            table = np.zeros(int(np.prod(shape)), dtype=np.float64)
            want = tuple(sum(1 << (len(run) - 1 - j) for j, a in enumerate(run)
                             if a not in clique) for run in runs)
            mine = where.get(want, np.empty(0, dtype=np.int64))
            if clique:
                codes = tuple(np.asarray(rows[len(runs) + columns.index(a)])[mine]
                              .astype(np.int64) for a in clique)
                np.add.at(table, np.ravel_multi_index(codes, shape), values[mine])
            else:
                table[0] = values[mine].sum()
            out.append(table.reshape(shape) if clique else np.array(table[0]))
        return out


def grouping_batches(cliques: Sequence[tuple[str, ...]], max_columns: int | None,
                     max_sets: int | None = None) -> list[list[tuple[str, ...]]]:
    """``cliques`` in batches of at most ``max_sets`` that each group by at most
    ``max_columns`` columns (None: no limit), first fit in the given order: few batches
    where neighbouring cliques share columns."""
    batches: list[tuple[list[tuple[str, ...]], set[str]]] = []
    open_ = []  # the batches that may still take a clique
    for clique in cliques:
        for place, (batch, columns) in enumerate(open_):
            if max_columns is None or len(columns) + len(set(clique) - columns) <= max_columns:
                batch.append(clique)
                columns.update(clique)
                if len(batch) == max_sets or len(columns) == max_columns:
                    del open_[place]
                break
        else:
            batches.append(([clique], set(clique)))
            if max_sets != 1 and len(clique) != max_columns:
                open_.append(batches[-1])
    return [batch for batch, _ in batches]
