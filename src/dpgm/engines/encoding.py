"""A public schema's encoding as SQL: each column's codes computed by the engine itself,
so a raw CSV or Parquet file needs no preprocessing and never passes through Python.

The expressions follow the rules of :mod:`dpgm.schema.columns` (tested against them):
missing values (NULL, NaN, blank text, and in CSV files the texts pandas reads as
missing) take the missing code of a nullable column; labels match by value and by text as
the in-memory encoder matches them; numbers and dates are clipped to their public bounds
and binned at the same edges. A value that has no code gives NULL, which the engine's
check turns into an error naming the column (:func:`problem` says why).

Everything here depends on the schema and on the file's column types only, and each value
is read on its own by the rules of :mod:`dpgm.schema.parse`, as the in-memory encoder
reads it: the codes are the same record by record on every engine. Where the SQL engines
still differ (docs/engines.md): Spark bins times by their wall-clock time in the session's
time zone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dpgm.errors import DataError, DomainError
from dpgm.schema import Schema, parse
from dpgm.schema.columns import Categorical, Column, Datetime, Numeric

#: the most columns one GROUPING()/grouping_id() call reads: its bitmask is a signed 64-bit
#: integer, which stays positive (DuckDB refuses more than 64 columns in one call)
GROUPING_BITS = 63


@dataclass(frozen=True)
class Dialect:
    """What differs between the SQL engines."""

    name: str
    quote: str  # around identifiers
    text: str  # the string type
    epoch_us: str  # microseconds from 1970-01-01 00:00 to a timestamp's wall-clock time
    div: str  # integer division
    grouping: str  # the grouping set's bitmask
    backslash_escapes: bool  # whether string literals treat "\" as an escape
    trim: str  # the function that trims given characters: trim(x, chars)
    matches: str  # whether {x} matches the anchored regular expression {pattern}
    strptime: str  # the time text {x} writes in format {format}, NULL where none
    #: whether several marginals are counted from the records' distinct cells (Spark: 1.7x
    #: faster for 105 pairs of 2 million records; DuckDB gains little and would hold a
    #: hash table of every distinct record)
    preaggregate: bool = False
    #: the most columns one GROUPING SETS query may group by (Spark: 64), or None for any
    #: number; past it, the marginals are counted in several queries
    max_grouped: int | None = None
    #: the most grouping sets in one query, or None for any number: DuckDB keeps a hash
    #: table per set, so 4,950 pairs in one query ran out of memory on 300 records, while
    #: batches of 25 counted 4,950 pairs of 1 million records in 34 s and 115 MB
    #: (batches of 100: 52 s and 226 MB)
    max_sets: int | None = None

    def identifier(self, name: str) -> str:
        return self.quote + name.replace(self.quote, self.quote * 2) + self.quote

    def literal(self, text: str) -> str:
        if self.backslash_escapes:
            return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
        return "'" + text.replace("'", "''") + "'"

    def strip(self, x: str, trimmed: str) -> str:
        """``x`` without leading and trailing white space as str.strip removes it, given
        ``trimmed``, ``x`` without spaces at either end: only a value that still begins or
        ends with another white space character (rare) is trimmed again, the slow way."""
        again = f"{self.trim}({x}, {self.literal(parse.SPACE)})"
        # every other white space character sorts before the space
        return (f"CASE WHEN {trimmed} IS NULL THEN NULL WHEN left({trimmed}, 1) > ' ' AND "
                f"right({trimmed}, 1) > ' ' THEN {trimmed} ELSE {again} END")

    def double(self, value: float) -> str:
        return f"CAST({self.literal(repr(float(value)))} AS DOUBLE)"

    def match(self, x: str, pattern: str) -> str:
        return self.matches.format(x=x, pattern=self.literal(pattern))


DUCKDB = Dialect("duckdb", '"', "VARCHAR", "epoch_us({})", "//", "grouping", False, "trim",
                 "regexp_matches({x}, {pattern})", "try_strptime({x}, {format})", max_sets=32)
# Spark's timestamps are instants shown in the session's time zone: their wall-clock time,
# which the schema's bounds are in, is the instant shifted by that zone's offset
SPARK = Dialect("spark", "`", "STRING", "unix_micros(from_utc_timestamp({}, current_timezone()))",
                "div", "grouping_id", True, "btrim", "({x} RLIKE {pattern})",
                "try_to_timestamp({x}, {format})", preaggregate=True, max_grouped=GROUPING_BITS)


def check_encodable(schema: Schema) -> None:
    """Refuse what the SQL engines cannot encode exactly, before any file is opened: a
    schema that is not a dpgm.Schema, or dates binned finer than a microsecond (the
    engines' timestamps are microseconds)."""
    if not isinstance(schema, Schema):
        raise DataError(f"schema must be a dpgm.Schema, got {type(schema).__name__}")
    for column in schema.columns.values():
        if isinstance(column, Datetime) and (
                (column.edges % 1000).any()
                or (column.width is not None and column.width.value % 1000)):
            raise DomainError(f"column {column.name!r}: the SQL engines bin dates to the "
                              "microsecond; give bounds and a width in whole microseconds")


def kind_of(sql_type: str) -> str:
    """A column's type as the encoder sees it: text, int, float, bool, date, time, timetz
    or other (DuckDB's and Spark's type names)."""
    t = sql_type.lower()
    if t.startswith(("varchar", "string", "char", "text")):
        return "text"
    if t in ("boolean", "bool"):
        return "bool"
    if any(t.startswith(p) for p in ("tinyint", "smallint", "int", "bigint", "hugeint",
                                     "utinyint", "usmallint", "uinteger", "ubigint",
                                     "uhugeint", "long", "short", "byte")):
        return "int"
    if t.startswith(("double", "float", "real", "decimal")):
        return "float"
    if t == "date":
        return "date"
    if "with time zone" in t or t in ("timestamptz", "timestamp_ltz"):
        return "timetz"
    if t.startswith("timestamp"):
        return "time"
    return "other"


@dataclass(frozen=True)
class Values:
    """A raw column's value as the encoding reads it, each computed once per record:
    ``raw``; ``text``, without surrounding white space (text columns); ``number``, as a
    DOUBLE or NULL (text and number columns)."""

    raw: str
    text: str | None
    number: str | None


def prepared(columns: Sequence[tuple[str, str]], source: str, dialect: Dialect,
             passed: Sequence[str] = ()) -> tuple[str, list[Values]]:
    """A query over ``source`` that computes each column's :class:`Values` once (the
    encodings refer to them many times), for ``columns`` (name, kind) in order; the
    columns ``passed`` go through as they are. Returns the query and the values."""
    first, second, third, values = [], [], [], []
    for i, (name, kind) in enumerate(columns):
        first.append(f"{dialect.identifier(name)} AS _r{i}")
        if kind == "text":
            first.append(f"trim({dialect.identifier(name)}) AS _s{i}")
            second.append(f"{dialect.strip(f'_r{i}', f'_s{i}')} AS _t{i}")
            # the number a text writes by parse.NUMBER alone (the engines' own casts read
            # more forms than the in-memory reader does)
            third.append(f"CASE WHEN {dialect.match(f'_t{i}', parse.NUMBER)} "
                         f"THEN CAST(_t{i} AS DOUBLE) END AS _n{i}")
            values.append(Values(f"_r{i}", f"_t{i}", f"_n{i}"))
        elif kind in ("int", "float"):
            values.append(Values(f"_r{i}", None, f"CAST(_r{i} AS DOUBLE)"))
        elif kind == "bool":
            values.append(Values(f"_r{i}", None, f"CAST(CAST(_r{i} AS INTEGER) AS DOUBLE)"))
        else:
            values.append(Values(f"_r{i}", None, None))
    first += [dialect.identifier(name) for name in passed]
    query = f"SELECT {', '.join(first)} FROM {source}"
    for more in (second, third):
        if more:
            query = f"SELECT *, {', '.join(more)} FROM ({query}) AS _v"
    return query, values


@dataclass(frozen=True)
class ColumnSQL:
    """One column's encoding: ``missing`` (SQL boolean) and ``code`` (SQL integer, NULL
    where the value has no code)."""

    missing: str
    code: str


def encode_column(column: Column, v: Values, kind: str, dialect: Dialect) -> ColumnSQL:
    """The SQL that encodes a raw column (its :class:`Values` from :func:`prepared`, of
    type ``kind``) by ``column``'s rules."""
    labels = column.given if isinstance(column, Categorical) else ()
    missing = _missing(v, kind, dialect, parse.missing_texts(labels))
    if isinstance(column, Categorical):
        present = _categorical(column, v, kind, dialect)
    elif isinstance(column, Numeric):
        present = _numeric(column, v, dialect)
    elif isinstance(column, Datetime):
        present = _datetime(column, v, kind, dialect)
    else:  # pragma: no cover - the schema knows three kinds
        raise TypeError(f"no SQL encoding for {type(column).__name__}")
    on_missing = "NULL" if column.missing_code is None else str(column.missing_code)
    return ColumnSQL(missing, f"CASE WHEN {missing} THEN {on_missing} ELSE {present} END")


def _missing(v: Values, kind: str, dialect: Dialect, texts: frozenset[str]) -> str:
    x = v.raw
    if kind == "text":
        tests = [f"{x} IS NULL", f"{v.text} = ''"]
        if texts:
            tests.append(f"{x} IN ({', '.join(dialect.literal(t) for t in sorted(texts))})")
        return "(" + " OR ".join(tests) + ")"
    if kind == "float":
        return f"({x} IS NULL OR isnan({x}))"
    return f"({x} IS NULL)"


def _categorical(column: Categorical, v: Values, kind: str, dialect: Dialect) -> str:
    """The first matching rule of the in-memory encoder: for text, the rules of
    dpgm.schema.columns._TextRules; for a typed value, the value itself, then (for a whole
    number) the text of the integer, then its text."""
    by_value: list[tuple[str, int]] = []
    by_int_text: list[tuple[str, int]] = []
    by_text: list[tuple[str, int]] = []
    x, number = v.raw, v.number
    for code, label in enumerate(column.given):
        is_bool = isinstance(label, bool)
        is_number = isinstance(label, (int, float)) and not is_bool
        text = str(label).strip()
        if kind == "text":
            if isinstance(label, str):
                by_value.append((f"{x} = {dialect.literal(label)}", code))
                # a number pandas would have read, matched by the text of its value
                if parse.canonical_int(text):
                    by_int_text.append((f"{number} = {dialect.double(int(text))}", code))
                if parse.canonical_float(text):
                    by_text.append((f"{number} = {dialect.double(float(text))}", code))
            elif is_bool:  # what pandas reads as booleans
                spellings = ("True", "TRUE", "true") if label else ("False", "FALSE", "false")
                by_int_text.append((f"{v.text} IN "
                                    f"({', '.join(dialect.literal(s) for s in spellings)})",
                                    code))
            else:  # what pandas reads as numbers
                by_int_text.append((f"{number} = {dialect.double(label)}", code))
            by_text.append((f"{v.text} = {dialect.literal(text)}", code))
        elif kind in ("int", "float"):
            if is_number:
                by_value.append((f"{x} = {dialect.double(label)}", code))
            elif isinstance(label, str):
                if parse.canonical_int(text):  # str(int(value)) of a whole value
                    by_int_text.append((f"{x} = {dialect.double(int(text))}", code))
                if kind == "float" and parse.canonical_float(text):  # str(value)
                    by_text.append((f"{x} = {dialect.double(float(text))}", code))
        elif kind == "bool":
            if is_bool:
                by_value.append((f"{x} = {'TRUE' if label else 'FALSE'}", code))
            elif text in ("True", "False"):
                by_text.append((f"{x} = {text.upper()}", code))
        elif kind in ("date", "time"):
            by_text.append((f"CAST({x} AS {dialect.text}) = {dialect.literal(text)}", code))
    rules = by_value + by_int_text + by_text
    otherwise = "NULL" if column.other is None else str(len(column.given))
    if not rules:
        return otherwise
    whens = " ".join(f"WHEN {test} THEN {code}" for test, code in rules)
    return f"CASE {whens} ELSE {otherwise} END"


def _numeric(column: Numeric, v: Values, dialect: Dialect) -> str:
    n = v.number  # as pandas.to_numeric reads it; NULL where it is not a number
    if n is None:
        return "NULL"
    infinite = ", ".join(dialect.double(s) for s in (float("inf"), float("-inf")))
    bins = _bins(n, list(column.edges[1:-1]), 0, len(column.edges) - 2, dialect)
    return f"CASE WHEN {n} IS NULL OR isnan({n}) OR {n} IN ({infinite}) THEN NULL ELSE {bins} END"


def _bins(v: str, inner: Sequence[float], low: int, high: int, dialect: Dialect) -> str:
    """The bin of ``v`` among codes low..high: a balanced tree of comparisons with the
    inner edges (``inner[i]`` starts bin ``i + 1``), so a row makes log2(bins) of them.
    Values below the first edge fall in bin 0 and above the last in the last: clipping."""
    if low == high:
        return str(low)
    middle = (low + high + 1) // 2
    return (f"CASE WHEN {v} < {dialect.double(inner[middle - 1])} "
            f"THEN {_bins(v, inner, low, middle - 1, dialect)} "
            f"ELSE {_bins(v, inner, middle, high, dialect)} END")


def _datetime(column: Datetime, v: Values, kind: str, dialect: Dialect) -> str:
    x = v.raw
    if kind == "text":  # the column's format alone, every field at full width
        fmt = column.format
        read = (f"TRY_CAST({v.text} AS TIMESTAMP)" if fmt.iso else dialect.strptime.format(
            x=v.text, format=dialect.literal(fmt.strftime if dialect is not SPARK else fmt.java)))
        time = f"CASE WHEN {dialect.match(v.text, fmt.pattern)} THEN {read} END"
    elif kind == "date":
        time = f"CAST({x} AS TIMESTAMP)"
    elif kind == "time":
        time = x
    else:  # numbers, booleans and times with a zone have no date code
        return "NULL"
    edges = column.edges // 1000
    low, high = int(edges[0]), int(edges[-1])
    micros = dialect.epoch_us.format(time)
    clipped = f"least(greatest({micros}, {low}), {high})"
    if column.width is None or column.refine > 1:  # edges of their own: compared
        code = _bins(clipped, [float(e) for e in edges[1:-1]], 0, len(edges) - 2, dialect)
    else:  # equal widths: one division
        width = int(column.width.value // 1000)
        code = (f"CAST(least(({clipped} - {low}) {dialect.div} {width}, {len(edges) - 2}) "
                "AS INTEGER)")
    # least and greatest skip a NULL: a value that is not a time must stay without a code
    return f"CASE WHEN {time} IS NULL THEN NULL ELSE {code} END"


def problem(column: Column, kind: str, example: object | None) -> str:
    """Why the column has a value without a code, for the error message (``example``:
    one such value as text, or None where it was a missing value)."""
    if example is None:
        return (f"column {column.name!r} has a missing value; declare the column "
                '"nullable": true in the schema to keep missing values')
    if kind == "timetz":
        return (f"column {column.name!r} has times with a time zone; convert them to naive "
                "times")
    return column.problem(example)
