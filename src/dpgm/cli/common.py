"""What every ``dpgm`` command shares: argument types that say what is wrong in one line,
progress and warning lines, the public inputs (schema or domain), the choice of engine and
the loading of records (the one place a command reads data), outputs written whole or not
at all, and the ledger line. Commands check everything knowable before they call
:func:`load_records`."""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from collections.abc import Sequence

SEEDED_WARNING = (
    "note: --seed makes the noise reproducible; anyone who knows the seed can remove it. "
    "Seeded runs are for research, not for a release."
)
NOT_PRIVATE_NOTE = (
    "note: evaluate reads the real data without noise: its figures are for the data "
    "steward's own checks, not for release"
)
#: beyond this the number of rows must be asked for (a tiny epsilon makes the noisy record
#: count huge); records are written a chunk at a time, so a billion is within reach
MAX_DEFAULT_ROWS = 1_000_000_000
#: --engine auto counts integer codes in a file larger than this with DuckDB
AUTO_DUCKDB_BYTES = 2**30
#: the synthesizers and their estimators as --mechanism and --estimator offer them, named
#: here so that ``dpgm --help`` imports no mechanism (tests/test_cli.py checks them against
#: dpgm.mechanisms.REGISTRY)
MECHANISMS = ("aim", "aim-rp", "cgm", "dualquery", "hdmm", "mst", "mwem", "privbayes", "psgd",
              "residual-planner", "swift")
ESTIMATORS = ("auto", "em", "naive", "naive-projected", "original", "pgm", "records", "sgd")
#: what a ResidualPlanner plan's allocation minimises, as --loss offers it (dpgm.residuals'
#: LOSSES, named here for the same reason)
LOSSES = ("sum", "max", "error")
#: Python parameter -> command-line flag, for messages that suggest an option
FLAGS = {
    "epsilon": "--epsilon",
    "delta": "--delta",
    "estimator": "--estimator",
    "iters": "--iters",
    "rows": "--rows",
    "max_memory": "--max-memory",
    "memory_limit": "--max-memory",
    "max_cells": "--max-cells",
    "max_model_size": "--max-model-size",
    "loss": "--loss",
    "force": "--force",
    "rng": "--seed",
}
#: options passed on to the mechanism's constructor (an error where it takes none such)

# -- argument types: each says what is wrong in one line ---------------------------------------
def _whole_number(text: str, least: int) -> int:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not math.isfinite(value) or value != int(value):
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}")
    if value < least:
        raise argparse.ArgumentTypeError(f"must be at least {least}, got {text}")
    return int(value)


def count(text: str) -> int:
    """A number of records or iterations: a whole number >= 0 ("1e6" is accepted)."""
    return _whole_number(text, 0)


def positive_count(text: str) -> int:
    return _whole_number(text, 1)


def seed(text: str) -> int:
    """A seed: a whole number >= 0."""
    return _whole_number(text, 0)


def real(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None


_UNITS = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "ki": 2**10, "mi": 2**20,
          "gi": 2**30, "ti": 2**40}


def memory_help() -> str:
    """The help of ``--max-memory``, with this machine's default."""
    from dpgm.memory import DEFAULT_MAX_MEMORY, format_bytes

    return ("memory limit for the tables of the run, e.g. 8G or 512MB "
            f"(default: half this machine's RAM, {format_bytes(DEFAULT_MAX_MEMORY)})")


def memory_size(text: str) -> float:
    """Bytes: ``2e9``, ``512M``, ``8GB``, ``4GiB`` (k, M, G, T are powers of 1000; Ki, Mi,
    Gi, Ti of 1024)."""
    match = re.fullmatch(r"\s*([0-9.eE+]+)\s*([kKmMgGtT]i?)?[bB]?\s*", text)
    if not match:
        raise argparse.ArgumentTypeError(f"expected a size such as 8G or 512MB, got {text!r}")
    try:
        number = float(match.group(1))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a size such as 8G, got {text!r}") from None
    size = number * _UNITS[(match.group(2) or "").lower()]
    if not math.isfinite(size) or size <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive size, got {text!r}")
    return size


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line, like every other error."""

    def error(self, message: str):  # noqa: D102 (argparse's hook)
        self.exit(2, f"dpgm: error: {message} (see {self.prog} --help)\n")


# -- output -------------------------------------------------------------------------------------
def say(message: str) -> None:
    print(f"[dpgm] {message}", file=sys.stderr, flush=True)


def mechanism_progress():
    """What a command passes a mechanism as ``progress``: bars on a terminal where tqdm is
    installed (steps out of a public number, no time: dpgm.progress), else its lines."""
    import importlib.util

    if sys.stderr.isatty() and importlib.util.find_spec("tqdm") is not None:
        return True
    return say


def show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"dpgm: warning: {message}", file=sys.stderr, flush=True)


def check_row_memory(rows: int, width: int, limit: float) -> None:
    from dpgm.memory import check_rows

    check_rows(rows, width, limit, copies=2)  # the records, and the table written out


def public_inputs(args: argparse.Namespace):
    """The schema (or None) and the domain named on the command line."""
    from dpgm.domain import Domain
    from dpgm.errors import ParameterError
    from dpgm.schema import Schema

    if args.schema is not None and args.domain is not None:
        raise ParameterError("give --schema (a raw table) or --domain (integer codes), not both")
    if args.schema is None and args.domain is None:
        raise ParameterError("give --schema (a raw table) or --domain (integer codes)")
    if args.schema is not None:
        schema = Schema.load(args.schema)
        return schema, schema.domain
    return None, Domain.load(args.domain)


def choose_engine(args: argparse.Namespace, schema, path: str) -> str:
    """The counting engine for this run, from the option, whether DuckDB is installed and
    the file's size (the result is the same on every engine, and with ``auto`` nothing
    printed says which ran)."""
    import importlib.util

    from dpgm.errors import ParameterError

    engine = getattr(args, "engine", "numpy")
    installed = importlib.util.find_spec("duckdb") is not None
    if engine == "duckdb":
        if not installed:
            raise ParameterError("--engine duckdb needs DuckDB: pip install 'dpgm[duckdb]'")
        return engine
    if engine == "spark":
        if importlib.util.find_spec("pyspark") is None:
            raise ParameterError("--engine spark needs PySpark: pip install 'dpgm[spark]'")
        return engine
    if engine == "auto":
        large = os.path.exists(path) and os.path.getsize(path) > AUTO_DUCKDB_BYTES
        return "duckdb" if installed and large else "numpy"
    return engine


def load_records(path: str, schema, domain, engine: str = "numpy", max_memory: float | None = None):
    """The records of ``path``: raw values encoded with the schema, or integer codes (in
    memory, or counted by DuckDB or Spark where they read them, with progress lines). No
    warning raised on the records reaches the user (dpgm.privacy.quiet)."""
    from dpgm.privacy.quiet import on_records

    with on_records():
        return _read_records(path, schema, domain, engine, max_memory)


def _read_records(path: str, schema, domain, engine: str, max_memory: float | None):
    from dpgm.dataset import Dataset, read_raw_table

    if engine == "duckdb":
        from dpgm.engines.duckdb import DuckDBTable

        limit = None if max_memory is None else f"{int(max_memory)}B"
        if schema is not None:  # encoded inside DuckDB into a table of codes on disk
            return DuckDBTable.encode(path, schema, memory_limit=limit, progress=say)
        return DuckDBTable(path, domain, memory_limit=limit, progress=say)
    if engine == "spark":
        from dpgm.engines.spark import SparkTable, start_session

        # Spark's console progress bar shows its tasks as they run, a timing our progress
        # lines leave out (a session spark-submit made keeps its own settings)
        session = start_session("dpgm", {"spark.ui.showConsoleProgress": "false"})
        if schema is not None:
            return SparkTable.encode(path, schema, session=session, progress=say)
        return SparkTable(path, domain, session=session, progress=say)
    if schema is not None:
        return schema.encode(read_raw_table(path))
    return Dataset.load(path, domain)


def given_values(pairs: Sequence[str] | None, schema, domain) -> dict[str, list[str]]:
    """``--given column=value`` options, checked against the schema or domain: a known
    value, inside the public bounds, possible under the constraints (before reading)."""
    from dpgm.constraints import evidence_possible
    from dpgm.errors import ParameterError

    given: dict[str, list[str]] = {}
    for pair in pairs or ():
        column, sep, value = pair.partition("=")
        if not sep or not column:
            raise ParameterError(f"--given takes column=value, got {pair!r}")
        given.setdefault(column.strip(), []).append(value.strip())
    codes: dict[str, list[int]] = {}
    for column, values in given.items():
        for value in values:  # raises a one-line error for an unknown column or value
            if schema is not None:
                code = schema.code(column, value)
                if schema.columns[column].outside(value):
                    raise ParameterError(
                        f"--given {column}={value}: outside the column's public bounds "
                        f"{schema.columns[column].bounds_text()}; give a value inside them")
                codes.setdefault(column, []).append(code)
            else:
                codes.setdefault(column, []).append(domain.code(column, value))
    if schema is not None and not evidence_possible(domain, schema.forbidden, codes):
        raise ParameterError(f"--given {', '.join(pairs or ())}: the schema's constraints "
                             "make these values impossible together")
    return given


def prepare_outputs(args: argparse.Namespace, inputs: Sequence[str | None],
                    outputs: Sequence[str] = ("out", "ledger")) -> dict:
    """The one pre-read check of a command's outputs, before anything is read or spent:
    the warning a seed calls for, then each output option named in ``outputs`` (None where
    not given) checked: refused if it exists without ``--force``, or if it is one of the
    inputs or an earlier output. Returns ``{option: path or None}``."""
    from dpgm.files import check_output

    if getattr(args, "seed", None) is not None:
        print(SEEDED_WARNING, file=sys.stderr)
    written = [p for p in inputs if p]
    checked = {}
    for name in outputs:
        path = getattr(args, name, None)
        checked[name] = None if path is None else check_output(
            path, force=getattr(args, "force", False), inputs=written)
        if path is not None:
            written.append(path)
    return checked


def report_spend(budget, ledger, out, *, failed: bool = False) -> None:
    """End a run that spent budget: the ledger file where asked for, and the ledger line
    (on standard error where the output ``out`` went to standard output, or where the run
    ``failed`` after spending, beside its error)."""
    from dpgm.files import writes_to_stdout

    if ledger is not None:
        try:
            write_ledger(ledger, budget)
        except OSError:
            if not failed:  # a full disk failed the run already: its line is still owed
                raise
    print(ledger_line(budget),
          file=sys.stderr if failed or writes_to_stdout(out) else sys.stdout, flush=True)


def add_chunk_option(command: argparse.ArgumentParser) -> None:
    """``--chunk-rows``: the records sampled and written at a time."""
    command.add_argument(
        "--chunk-rows", type=positive_count, default=None, metavar="N",
        help="records sampled and written at a time: memory holds one chunk whatever "
        "--rows (default: a million, fewer for wide tables, so that a chunk's codes take "
        "at most 64 MiB)")


def write_ledger(path, budget) -> None:
    """The run's privacy ledger as JSON (what evaluate --ledger puts in the report)."""
    import json

    from dpgm.files import atomic_write

    with atomic_write(path) as handle:
        json.dump(budget.to_json(), handle, indent=2)


def check_default_rows(model_total: float) -> None:
    """Refuse to write a model's noisy record count of rows where it is huge (a tiny
    epsilon)."""
    from dpgm.errors import DpgmError

    total = max(int(round(model_total)), 0)
    if total > MAX_DEFAULT_ROWS:
        raise DpgmError(
            f"the model estimates {total:,} records (a very small epsilon makes this noisy); "
            "pass --rows to choose how many synthetic records to write"
        )


def ledger_line(budget) -> str:
    epsilon, delta = budget.spent_epsilon_delta()
    line = f"privacy spent: epsilon={epsilon:.6g} delta={delta:.6g}"
    if budget.mode == "zcdp":
        line += f" rho={budget.spent_rho:.6g}"
    return line


def sampling_seed(seed: int | None) -> int | None:
    """Seed of the synthetic sample: derived from --seed, distinct from the noise's."""
    return None if seed is None else seed + 1


def add_engine_option(parser: argparse.ArgumentParser, same: str) -> None:
    """The --engine option of the commands that count records."""
    parser.add_argument(
        "--engine",
        choices=("auto", "numpy", "duckdb", "spark"),
        default="auto",
        help="where the records are counted: numpy (in memory), duckdb (out of core; pip "
        "install 'dpgm[duckdb]') or spark (in the session spark-submit sets up, or a local "
        "one; pip install 'dpgm[spark]'); a raw table is encoded with its schema inside the "
        f"engine. auto: duckdb for a file over {AUTO_DUCKDB_BYTES // 2**30} GiB when it is "
        f"installed, numpy otherwise. Every engine gives the same counts, {same} "
        "(default: auto)",
    )


# -- queries of a released model: the grammar and the output of bn and model ------------------
_QUERY = re.compile(r"\s*P\s*\((?P<variables>[^|]*?)(?:\|(?P<evidence>.*))?\)\s*", re.DOTALL)


def parse_pairs(items: Sequence[str] | None, flag: str) -> dict[str, str]:
    """``NAME=state`` items (each may hold several, comma-separated) as a dict."""
    from dpgm.errors import ParameterError

    found: dict[str, str] = {}
    for item in items or ():
        for pair in item.split(","):
            if not pair.strip():
                continue
            name, sep, state = pair.partition("=")
            if not sep or not name.strip() or not state.strip():
                raise ParameterError(f"{flag} takes VARIABLE=state, got {pair.strip()!r}")
            if name.strip() in found:
                raise ParameterError(f"{flag} gives {name.strip()!r} twice")
            found[name.strip()] = state.strip()
    return found


def parse_query(text: str) -> tuple[list[str], dict[str, str]]:
    """``"P(A, B | C=c1, D=d2)"`` as (["A", "B"], {"C": "c1", "D": "d2"})."""
    from dpgm.errors import ParameterError

    match = _QUERY.fullmatch(text)
    variables = [] if match is None else [
        v.strip() for v in match.group("variables").split(",") if v.strip()
    ]
    if match is None or not variables:
        raise ParameterError(
            f"a query looks like \"P(A, B | C=c1, D=d2)\" (evidence optional), got {text!r}"
        )
    if "|" in (match.group("evidence") or ""):  # "P(A | B=b | C=c)": not a state
        raise ParameterError(
            f"a query has one '|', before the evidence; separate the evidence with commas, "
            f"as in \"P(A | B=b0, C=c0)\", got {text!r}"
        )
    evidence = parse_pairs([match.group("evidence") or ""], "the evidence")
    return variables, evidence


def parse_variables(text: str | None, domain, what: str) -> list[str] | None:
    """``--variables A,B`` as a list (None where not given), each a known attribute."""
    from dpgm.errors import DomainError

    if text is None:
        return None
    variables = [v.strip() for v in text.split(",") if v.strip()]
    unknown = [v for v in variables if v not in domain]
    if unknown or not variables:
        raise DomainError(f"--variables names no {what}: {unknown}")
    return variables


def plain_label(label: object) -> object:
    """A label as JSON writes it: a missing value (NaN, NaT) as null, NumPy scalars as
    Python ones."""
    import pandas as pd

    if label is None or (not isinstance(label, (list, tuple, str)) and pd.isna(label)):
        return None
    return label.item() if hasattr(label, "item") else label


def print_conditional(table, variables: list[str], evidence: dict, as_json: bool,
                      errors: Sequence[float] | None = None) -> None:
    """``P(variables | evidence)`` (a Series indexed by labels) as the rows of a table, or
    as JSON ``[{"assignment": {...}, "probability": p, "standard_error": s}, ...]``
    (``standard_error`` null where the model gives none)."""
    import json

    if as_json:
        rows = [{"assignment": {v: plain_label(k) for v, k in
                                zip(variables, key if isinstance(key, tuple) else (key,))},
                 "probability": float(p),
                 "standard_error": None if errors is None else float(errors[i])}
                for i, (key, p) in enumerate(table.items())]
        print(json.dumps(rows, indent=2, default=str))
        return
    given = ", ".join(f"{k}={v}" for k, v in evidence.items())
    print(f"P({', '.join(variables)}{' | ' + given if given else ''})")
    frame = table.reset_index()
    if errors is not None:
        frame["standard error"] = errors
    print(frame.to_string(index=False, float_format=lambda p: f"{p:.6g}"))


def print_posteriors(posteriors: dict, evidence: dict, as_json: bool) -> None:
    """Each variable's posterior (``{variable: Series indexed by labels}``) as the rows
    of one table (variable, state, probability), or as JSON ``{variable: {state: p}}``."""
    import json

    if as_json:
        print(json.dumps({v: {str(plain_label(k)): float(p) for k, p in table.items()}
                          for v, table in posteriors.items()}, indent=2))
        return
    given = ", ".join(f"{k}={v}" for k, v in evidence.items())
    print(f"P(each variable{' | ' + given if given else ''})")
    rows = [(v, str(plain_label(k)), f"{p:.6g}")
            for v, table in posteriors.items() for k, p in table.items()]
    widths = [max(len(r[k]) for r in [("variable", "state", "probability"), *rows])
              for k in range(3)]
    for row in [("variable", "state", "probability"), *rows]:
        print(f"{row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]:>{widths[2]}}")


def print_map(best: dict, as_json: bool) -> None:
    """The most probable labels, as JSON ``{variable: label}`` or aligned lines."""
    import json

    best = {v: plain_label(label) for v, label in best.items()}
    if as_json:
        print(json.dumps(best, indent=2, default=str))
        return
    width = max((len(v) for v in best), default=0)
    for variable, label in best.items():
        print(f"{variable:<{width}}  {label}")
