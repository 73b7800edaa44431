"""The ``dpgm`` command line: private synthetic data, and its evaluation (``dpgm bn``:
Bayesian networks, in :mod:`dpgm.cli.bn`; ``dpgm mrf``: Markov random fields, in
:mod:`dpgm.cli.mrf`).

Every run checks what it can before it reads the data (options, output path, domain,
workload, memory), so a run that fails for a reason knowable in advance spends nothing.
Errors are one line (``dpgm: error: ...``), warnings too; progress lines carry only
public facts and released values, never the exact number of records or timings.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import signal
import sys
import threading
import warnings
from collections.abc import Sequence

SEEDED_WARNING = (
    "note: --seed makes the noise reproducible; anyone who knows the seed can remove it. "
    "Seeded runs are for research, not for a release."
)
NOT_PRIVATE_NOTE = (
    "note: evaluate reads the real data without noise: its figures are for the data "
    "steward's own checks, not for release"
)
MAX_DEFAULT_ROWS = 100_000_000  # beyond this the number of rows must be asked for
#: --engine auto counts integer codes in a file larger than this with DuckDB
AUTO_DUCKDB_BYTES = 2**30
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
    "force": "--force",
    "rng": "--seed",
}
#: options passed on to the mechanism's constructor (an error where it takes none such)
PASSED_ON = ("iters", "max_cells")


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


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line, like every other error."""

    def error(self, message: str):  # noqa: D102 (argparse's hook)
        self.exit(2, f"dpgm: error: {message} (see {self.prog} --help)\n")


# -- output -------------------------------------------------------------------------------------
def _say(message: str) -> None:
    print(f"[dpgm] {message}", file=sys.stderr, flush=True)


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"dpgm: warning: {message}", file=sys.stderr, flush=True)


# -- synth ------------------------------------------------------------------------------------
def _build_mechanism(args: argparse.Namespace):
    """The mechanism named by --mechanism, with the options it accepts."""
    import inspect

    from dpgm.errors import ParameterError
    from dpgm.mechanisms import REGISTRY

    cls = REGISTRY[args.mechanism]
    accepted = inspect.signature(cls).parameters
    options = {"progress": _say, "max_memory": args.max_memory}
    if args.estimator is not None:
        options["estimator"] = args.estimator
    if args.delta is not None:
        options["delta"] = args.delta
    for name in PASSED_ON:
        value = getattr(args, name)
        if value is None:
            continue
        if name not in accepted:
            raise ParameterError(f"{FLAGS[name]} does not apply to {args.mechanism}")
        options[name] = value
    rows = getattr(args, "rows", None)  # dpgm fit draws no records
    if rows is not None and "rows" in accepted and args.estimator == "original":
        options["rows"] = rows  # a mechanism that draws its records itself
    return cls(args.epsilon, **options)


def _check_rows(rows: int, width: int, limit: float) -> None:
    from dpgm.memory import check_rows

    check_rows(rows, width, limit, copies=2)  # the records, and the table written out


def _public_inputs(args: argparse.Namespace):
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


def _engine(args: argparse.Namespace, schema, path: str) -> str:
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


def _load(path: str, schema, domain, engine: str = "numpy", max_memory: float | None = None):
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
            return DuckDBTable.encode(path, schema, memory_limit=limit, progress=_say)
        return DuckDBTable(path, domain, memory_limit=limit, progress=_say)
    if engine == "spark":
        from dpgm.engines.spark import SparkTable, start_session

        # Spark's console progress bar shows its tasks as they run, a timing our progress
        # lines leave out (a session spark-submit made keeps its own settings)
        session = start_session("dpgm", {"spark.ui.showConsoleProgress": "false"})
        if schema is not None:
            return SparkTable.encode(path, schema, session=session, progress=_say)
        return SparkTable(path, domain, session=session, progress=_say)
    if schema is not None:
        return schema.encode(read_raw_table(path))
    return Dataset.load(path, domain)


def _given(pairs: Sequence[str] | None, schema, domain) -> dict[str, list[str]]:
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


def _write_table(frame, out, schema=None) -> None:
    """Write a DataFrame as CSV (times in their column's format, so that the file reads
    back by the schema), or Parquet for a .parquet path, whole or not at all."""
    from dpgm.files import atomic_write

    if str(out).endswith(".parquet"):
        with atomic_write(out, "wb") as handle:
            frame.to_parquet(handle, index=False)
        return
    if schema is not None:
        frame = schema.as_text(frame)
    with atomic_write(out) as handle:
        frame.to_csv(handle, index=False)


def _check_format(out: str) -> None:
    from dpgm.errors import ParameterError

    if str(out).endswith(".parquet"):
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise ParameterError(
                "writing Parquet needs pyarrow (pip install pyarrow); or write a .csv"
            ) from None


def _synth(args: argparse.Namespace) -> int:
    """``dpgm synth``: fit, then write synthetic records (and the model, where asked)."""
    mechanism, outputs = _fit_checked(args, sample=True)
    out = outputs["out"]
    if args.rows is None:
        _check_default_rows(mechanism.result)
    synthetic = mechanism.synthetic_data(args.rows, rng=sampling_seed(args.seed),
                                         given=outputs["given"])
    if mechanism.schema is None:
        synthetic = synthetic.to_pandas()
    if outputs["model"] is not None:
        mechanism.result.save(outputs["model"])
        _say(f"wrote the model to {outputs['model']}")
    _write_table(synthetic, out, mechanism.schema)
    _say(f"wrote {len(synthetic)} synthetic records to {out}")
    report_spend(mechanism.budget, outputs["ledger"], out)
    return 0


def _fit(args: argparse.Namespace) -> int:
    """``dpgm fit``: fit and save the model, without sampling (it answers later, free)."""
    mechanism, outputs = _fit_checked(args, sample=False)
    mechanism.result.save(outputs["out"])
    _say(f"wrote the model to {outputs['out']}; dpgm model sample|query|map|info read it "
         "without the data and without spending more")
    report_spend(mechanism.budget, outputs["ledger"], outputs["out"])
    return 0


def _fit_checked(args: argparse.Namespace, *, sample: bool):
    """The mechanism of ``synth`` or ``fit``, fitted once everything knowable before
    reading the data was checked (options, outputs, schema, workload, sizes); and the
    outputs, checked: ``out``, ``ledger``, ``model`` (synth's --save-model), ``given``."""
    from dpgm.errors import ParameterError
    from dpgm.files import check_output
    from dpgm.workload import Workload

    mechanism = _build_mechanism(args)
    if args.seed is not None:
        print(SEEDED_WARNING, file=sys.stderr)
    inputs = [p for p in (args.data, args.domain, args.schema, args.workload) if p]
    out = check_output(args.out, force=args.force, inputs=inputs)
    written = [*inputs, args.out]
    model_out = None
    if sample and args.save_model is not None:
        model_out = check_output(args.save_model, force=args.force, inputs=written)
        written.append(args.save_model)
    ledger = None
    if args.ledger is not None:
        ledger = check_output(args.ledger, force=args.force, inputs=written)
    if not mechanism.releases_model and (not sample or model_out is not None):
        raise ParameterError(
            f"--estimator {mechanism.estimator} of {args.mechanism} releases synthetic records, "
            f"not a model to save: use --estimator pgm")
    if sample:
        _check_format(args.out)
    schema, domain = _public_inputs(args)
    given = _given(args.given, schema, domain) if sample else {}
    workload = None if args.workload is None else Workload.load(args.workload).check(domain)
    if workload is not None and not mechanism.uses_workload:
        raise ParameterError(f"--mechanism {args.mechanism} measures no workload; drop "
                             "--workload, or choose aim, mwem, dualquery, hdmm or cgm")
    mechanism.check(domain, workload, zeros=schema.forbidden if schema else ())
    if sample:
        mechanism.check_synthesizable(domain, workload)
    if given and mechanism.estimator != "pgm":  # table models cannot condition
        raise ParameterError("--given needs the Private-PGM estimator (--estimator pgm)")
    if sample and args.rows is not None:
        _check_rows(args.rows, len(domain), mechanism.max_memory)

    engine = _engine(args, schema, args.data)
    if engine != "numpy" and mechanism.needs_records:
        raise ParameterError(f"--mechanism {args.mechanism} reads the records one by one: "
                             "use --engine numpy")
    data = _load(args.data, schema, domain, engine, mechanism.max_memory)
    # the number of records is private, and so is the file's size: the engine auto chose
    # from it is not named (the result is the same on every engine)
    _say(f"read {args.data}: {len(domain)} attributes"
         f"{f', counted by {engine}' if args.engine != 'auto' else ''}")
    mechanism.fit(data, workload=workload, rng=args.seed, schema=schema)
    return mechanism, {"out": out, "ledger": ledger, "model": model_out, "given": given}


def report_spend(budget, ledger, out) -> None:
    """End a run that spent budget: the ledger file where asked for, and the ledger line
    (on standard error where the output ``out`` went to standard output)."""
    from dpgm.files import writes_to_stdout

    if ledger is not None:
        _write_ledger(ledger, budget)
    print(_ledger_line(budget), file=sys.stderr if writes_to_stdout(out) else sys.stdout)


def _write_ledger(path, budget) -> None:
    """The run's privacy ledger as JSON (what evaluate --ledger puts in the report)."""
    import json

    from dpgm.files import atomic_write

    with atomic_write(path) as handle:
        json.dump(budget.to_json(), handle, indent=2)


def _check_default_rows(result) -> None:
    """Refuse to write a model's noisy record count of rows where it is huge (a tiny
    epsilon); records a mechanism released are written as they are."""
    from dpgm.errors import DpgmError
    from dpgm.models.base import ModelBase

    if not isinstance(result, ModelBase):
        return
    total = max(int(round(result.total)), 0)
    if total > MAX_DEFAULT_ROWS:
        raise DpgmError(
            f"the model estimates {total:,} records (a very small epsilon makes this noisy); "
            "pass --rows to choose how many synthetic records to write"
        )


def _ledger_line(budget) -> str:
    epsilon, delta = budget.spent_epsilon_delta()
    line = f"privacy spent: epsilon={epsilon:.6g} delta={delta:.6g}"
    if budget.mode == "zcdp":
        line += f" rho={budget.spent_rho:.6g}"
    return line


def sampling_seed(seed: int | None) -> int | None:
    """Seed of the synthetic sample: derived from --seed, distinct from the noise's."""
    return None if seed is None else seed + 1


# -- evaluate ---------------------------------------------------------------------------------
def _evaluate(args: argparse.Namespace) -> int:
    from itertools import combinations

    import numpy as np

    from dpgm.errors import DataError, ParameterError
    from dpgm.evaluation import marginal_errors, mean_tv
    from dpgm.memory import CELL_BYTES, check_memory
    from dpgm.workload import Workload

    schema, domain = _public_inputs(args)
    workload = None if args.workload is None else Workload.load(args.workload).check(domain)
    report = _report_path(args)
    ledger = _read_ledger(args.ledger)  # a file that is no ledger is refused before reading
    for ways in args.ways:
        if not 1 <= ways <= len(domain):
            raise ParameterError(f"--ways must be between 1 and {len(domain)}, got {ways}")
    # the largest table compared, from the domain alone (real and synthetic side by side)
    cliques = [c for w in args.ways for c in combinations(domain.attrs, w)]
    cliques += [] if workload is None else list(workload.cliques)
    largest = max(cliques, key=domain.size)
    check_memory(
        f"the {len(largest)}-way marginal on {largest}",
        2.0 * domain.size(largest) * CELL_BYTES,
        args.max_memory,
    )
    print(NOT_PRIVATE_NOTE, file=sys.stderr)
    real, synthetic = (_load(path, schema, domain, _engine(args, schema, path), args.max_memory)
                       for path in (args.real, args.synthetic))
    for path, data in ((args.real, real), (args.synthetic, synthetic)):
        if len(data) == 0:
            raise DataError(f"{path} has no records: there is nothing to compare")
    print(f"real: {len(real)} records; synthetic: {len(synthetic)} records")
    if workload is not None:
        error = workload.error(real, synthetic)
        print(
            f"workload error ({len(workload)} sub-workloads, Sec. 5.1 of Private-PGM): {error:.4f}"
        )
        tv = np.mean(list(marginal_errors(real, synthetic, workload.cliques).values()))
        print(f"mean TV error over the workload's {len(workload)} marginals: {tv:.4f}")
    for ways in args.ways:
        print(f"mean TV error over all {ways}-way marginals: {mean_tv(real, synthetic, ways):.4f}")
    if report is not None:
        from dpgm.report import build_report, write_report

        page = build_report(real, synthetic, workload=workload, ledger=ledger)
        report.parent.mkdir(exist_ok=True)  # made only now: a failed run leaves no folder
        write_report(report, page)
        _say(f"wrote the report to {report}")
    return 0


def _report_path(args: argparse.Namespace):
    """DIR/index.html for --report DIR, checked before any data are read."""
    from pathlib import Path

    from dpgm.errors import OutputError
    from dpgm.files import check_output

    if args.report is None:
        if args.ledger is not None:
            raise OutputError("--ledger goes with --report DIR")
        return None
    folder = Path(args.report)
    if folder.exists() and not folder.is_dir():
        raise OutputError(f"--report {folder}: not a directory")
    inputs = [p for p in (args.real, args.synthetic, args.ledger) if p]
    if not folder.exists():  # its parent must take it; it is made once the report is ready
        check_output(folder, inputs=inputs)
        return folder / "index.html"
    return check_output(folder / "index.html", force=args.force, inputs=inputs)


def _read_ledger(path):
    import json

    from dpgm.errors import DataError

    if path is None:
        return None
    try:
        with open(path) as handle:
            ledger = json.load(handle)
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not a ledger written by dpgm synth --ledger ({exc})") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot read the ledger ({exc.strerror})") from None
    entries = ledger.get("entries") if isinstance(ledger, dict) else None
    if not (isinstance(ledger, dict) and isinstance(ledger.get("spent"), dict)
            and isinstance(entries, list) and all(isinstance(e, dict) for e in entries)):
        raise DataError(f"{path}: not a ledger written by dpgm synth --ledger (it has no "
                        '"spent" and "entries")')
    return ledger


# -- schema ---------------------------------------------------------------------------------
DRAFT_NOTE = (
    "wrote a draft schema to {out} from the column names only (no value was read): fill in "
    "every null from public knowledge (kind, labels, bounds), or learn the missing labels "
    "and bounds privately with: dpgm schema discover {data} --schema {out} --epsilon E --out ..."
)


def _schema_draft(args: argparse.Namespace) -> int:
    import json

    from dpgm.files import atomic_write, check_output
    from dpgm.schema.draft import draft

    out = check_output(args.out, force=args.force, inputs=[args.data])
    spec = draft(args.data)
    with atomic_write(out) as handle:
        json.dump(spec, handle, indent=2)
        handle.write("\n")
    _say(DRAFT_NOTE.format(out=out, data=args.data))
    return 0


def _schema_discover(args: argparse.Namespace) -> int:
    import json

    from dpgm.dataset import read_raw_table
    from dpgm.discover import discover, questions
    from dpgm.errors import DomainError
    from dpgm.files import check_output
    from dpgm.privacy.policy import check_delta, check_epsilon

    check_epsilon(args.epsilon)
    check_delta(args.delta)
    if args.seed is not None:
        print(SEEDED_WARNING, file=sys.stderr)
    out = check_output(args.out, force=args.force, inputs=[args.data, args.schema])
    try:
        with open(args.schema) as handle:
            spec = json.load(handle)
    except json.JSONDecodeError as exc:
        raise DomainError(f"{args.schema}: not valid JSON ({exc})") from None
    asked = questions(spec)  # a draft that cannot be completed fails here, unread
    if not asked:
        _say(f"{args.schema} needs nothing learnt: no data read, nothing spent")
    frame = read_raw_table(args.data) if asked else None
    schema, budget = discover(frame, spec, args.epsilon, args.delta, rng=args.seed)
    schema.save(out)
    _say(f"wrote the schema to {out}")
    for entry in budget.ledger:
        print(f"spent on {entry.label}: epsilon={entry.epsilon:.6g} delta={entry.delta:.6g}")
    epsilon, delta = budget.spent_epsilon_delta()
    print(f"privacy spent: epsilon={epsilon:.6g} delta={delta:.6g} (basic composition)")
    return 0


# -- the parser -------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    from dpgm._version import __version__
    from dpgm.memory import DEFAULT_MAX_MEMORY, format_bytes
    from dpgm.privacy.policy import DEFAULT_DELTA

    memory_help = (
        "memory limit for the tables of the run, e.g. 8G or 512MB "
        f"(default: half this machine's RAM, {format_bytes(DEFAULT_MAX_MEMORY)})"
    )
    parser = _Parser(prog="dpgm", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=f"dpgm {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    synth = commands.add_parser("synth", help="fit a private model and write synthetic data")
    _add_fit_options(synth, memory_help)
    synth.add_argument(
        "--given",
        action="append",
        default=None,
        metavar="COLUMN=VALUE",
        help="draw the synthetic records conditioned on this value (repeatable; values of "
        "one column are alternatives; default: none)",
    )
    synth.add_argument(
        "--out", required=True,
        help="where to write the synthetic table (.csv, or .parquet; - for standard output)"
    )
    synth.add_argument(
        "--rows",
        type=positive_count,
        default=None,
        help="synthetic records to write (default: the model's noisy estimate)",
    )
    synth.add_argument(
        "--save-model", default=None, metavar="MODEL.dpgm",
        help="also save the fitted model: dpgm model sample|query|map answer from it later "
        "without the data and without spending more (default: none)",
    )
    synth.add_argument(
        "--ledger",
        default=None,
        help="also write the privacy ledger as JSON, for evaluate --report (default: none)",
    )
    synth.add_argument(
        "--force", action="store_true", help="overwrite --out if it exists (default: refuse)"
    )
    synth.set_defaults(run=_synth)

    fit = commands.add_parser(
        "fit", help="fit a private model and save it (no sampling): spends the budget once")
    _add_fit_options(fit, memory_help)
    fit.add_argument("--out", required=True, metavar="MODEL.dpgm",
                     help="where to save the model (dpgm model ... reads it)")
    fit.add_argument("--ledger", default=None,
                     help="also write the privacy ledger as JSON (default: none)")
    fit.add_argument("--force", action="store_true",
                     help="overwrite --out if it exists (default: refuse)")
    fit.set_defaults(run=_fit)

    evaluate = commands.add_parser("evaluate", help="compare synthetic data with the real data")
    evaluate.add_argument("real", help="CSV of the real records")
    evaluate.add_argument("synthetic", help="CSV of the synthetic records")
    evaluate.add_argument(
        "--schema", default=None, help="the public schema JSON, raw tables (default: none)"
    )
    evaluate.add_argument(
        "--domain", default=None, help="JSON {attribute: size}, integer codes (default: none)"
    )
    evaluate.add_argument(
        "--ways",
        type=positive_count,
        nargs="+",
        default=[1, 2, 3],
        help="sizes of the marginals compared (default: 1 2 3)",
    )
    evaluate.add_argument(
        "--workload",
        default=None,
        help="workload JSON (as for synth): report its error and the mean TV on its "
        "marginals (default: none)",
    )
    evaluate.add_argument(
        "--max-memory", type=memory_size, default=DEFAULT_MAX_MEMORY, help=memory_help
    )
    evaluate.add_argument(
        "--report",
        default=None,
        metavar="DIR",
        help="write an HTML report to DIR/index.html (default: none)",
    )
    evaluate.add_argument(
        "--ledger", default=None, help="the ledger synth --ledger wrote (default: none)"
    )
    evaluate.add_argument(
        "--force",
        action="store_true",
        help="overwrite DIR/index.html if it exists (default: refuse)",
    )
    _add_engine_option(evaluate, "so the same comparison")
    evaluate.set_defaults(run=_evaluate)

    schema = commands.add_parser("schema", help="write a public schema: a draft, or discover")
    schema_commands = schema.add_subparsers(dest="schema_command", required=True)
    draft = schema_commands.add_parser(
        "draft", help="a schema skeleton from the column names alone (reads no value)"
    )
    draft.add_argument("data", help="CSV of the raw table (only its header is read)")
    draft.add_argument("--out", required=True, help="where to write the draft JSON")
    draft.add_argument(
        "--force", action="store_true", help="overwrite --out if it exists (default: refuse)"
    )
    draft.set_defaults(run=_schema_draft)
    discover = schema_commands.add_parser(
        "discover", help="learn a draft's missing labels and bounds privately (spends budget)"
    )
    discover.add_argument("data", help="CSV of the raw table")
    discover.add_argument("--schema", required=True, help="the draft, kinds filled in")
    discover.add_argument("--epsilon", type=real, required=True, help="epsilon to spend")
    discover.add_argument(
        "--delta", type=real, default=None, help=f"delta to spend (default {DEFAULT_DELTA:g})"
    )
    discover.add_argument(
        "--seed", type=seed, default=None, help="for research only (default: none)"
    )
    discover.add_argument("--out", required=True, help="where to write the schema JSON")
    discover.add_argument(
        "--force", action="store_true", help="overwrite --out if it exists (default: refuse)"
    )
    discover.set_defaults(run=_schema_discover)

    from dpgm.cli.bn import add_commands

    add_commands(commands, real=real, seed=seed, count=count, positive_count=positive_count,
                 memory_size=memory_size)
    from dpgm.cli import mrf

    mrf.add_commands(commands, real=real, seed=seed, positive_count=positive_count,
                     delta_default=DEFAULT_DELTA)
    from dpgm.cli import model

    model.add_commands(commands, seed=seed, positive_count=positive_count,
                       memory_size=memory_size)
    return parser


def _add_fit_options(command: argparse.ArgumentParser, memory_help: str) -> None:
    """The options of ``synth`` and ``fit``: the data, its public description, the
    budget, the mechanism and its settings."""
    from dpgm.mechanisms import REGISTRY
    from dpgm.privacy.policy import DEFAULT_DELTA

    command.add_argument("data", help="CSV of the records (.gz accepted)")
    command.add_argument(
        "--schema",
        default=None,
        help="the public schema JSON of a raw table (see dpgm schema); give it or --domain "
        "(default: none)",
    )
    command.add_argument(
        "--domain",
        default=None,
        help="JSON {attribute: number of values} for integer codes (default: none)",
    )
    command.add_argument("--epsilon", type=real, required=True, help="the privacy budget epsilon")
    command.add_argument(
        "--delta",
        type=real,
        default=None,
        help=f"delta of (epsilon, delta)-DP (default: {DEFAULT_DELTA:g} for the zCDP "
        "mechanisms; pure epsilon-DP mechanisms accept it and spend none; mwem is pure "
        "without it)",
    )
    command.add_argument(
        "--mechanism", choices=sorted(REGISTRY), default="mst", help="the mechanism (default: mst)"
    )
    command.add_argument(
        "--estimator",
        choices=sorted({e for cls in REGISTRY.values() for e in cls.estimators}),
        default=None,
        help="Private-PGM or the mechanism's own estimator: original; for cgm em, naive or "
        "naive-projected (default: the mechanism's own: pgm; em for cgm, sgd for psgd)",
    )
    command.add_argument(
        "--workload",
        default=None,
        help='JSON list of attribute lists, e.g. [["age", "sex"]], or '
        '{"cliques": [...], "numeric": [...]} (default: the mechanism\'s own)',
    )
    command.add_argument(
        "--seed",
        type=seed,
        default=None,
        help="a whole number >= 0 that makes the run reproducible, for research only "
        "(default: none, OpenDP's exact samplers)",
    )
    command.add_argument(
        "--iters",
        type=positive_count,
        default=None,
        help="estimation iterations (default: the mechanism's)",
    )
    command.add_argument(
        "--max-cells",
        type=real,
        default=None,
        help="the mechanism's cell cap: the largest default-workload marginal (aim), the "
        "junction tree (mwem, dualquery), the global least-squares table (hdmm) "
        "(default: the mechanism's)",
    )
    command.add_argument("--max-memory", type=memory_size, default=None, help=memory_help)
    _add_engine_option(command, "so the same result for a seed")


def _terminate(signum, frame) -> None:
    # unwinds like Ctrl-C, so that a half-written output's temporary file is removed
    raise KeyboardInterrupt


def _add_engine_option(parser: argparse.ArgumentParser, same: str) -> None:
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


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dpgm`` command; returns the exit status."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as done:  # --help, --version, or a usage error (already printed)
        return int(done.code or 0)
    on_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if on_main_thread else None
    try:
        return _run(args)
    finally:
        if on_main_thread:
            signal.signal(signal.SIGTERM, previous)


def _run(args: argparse.Namespace) -> int:
    from dpgm.errors import DpgmError, SeedWarning, command_line_spelling

    with warnings.catch_warnings(), command_line_spelling(FLAGS):
        warnings.simplefilter("ignore", SeedWarning)  # the command prints its own note
        warnings.showwarning = _show_warning
        try:
            return args.run(args)
        except BrokenPipeError:
            # the reader of our output stopped early (| head): not an error to report;
            # stdout goes to devnull so that flushing it at exit does not fail again
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            return 141  # as a process the pipe's signal ended
        except (DpgmError, OSError) as error:
            print(f"dpgm: error: {_one_line(error)}", file=sys.stderr)
            return 2
        except MemoryError:
            print(
                "dpgm: error: ran out of memory; lower --max-memory to have dpgm refuse "
                "such work before it starts, or use a machine with more memory",
                file=sys.stderr,
            )
            return 2
        except KeyboardInterrupt:
            print("dpgm: interrupted; no output was written", file=sys.stderr)
            return 130
        except Exception as error:  # a bug: say so in one line, keep the traceback on demand
            if os.environ.get("DPGM_DEBUG"):
                raise
            print(
                f"dpgm: internal error: {type(error).__name__}: {_one_line(error)} "
                "(set DPGM_DEBUG=1 to see the traceback, and please report it)",
                file=sys.stderr,
            )
            return 3


def _one_line(error: BaseException) -> str:
    text = str(error) if not isinstance(error, OSError) or not error.strerror else (
        f"{error.filename}: {error.strerror}" if error.filename else error.strerror
    )
    return " ".join(text.split())


if __name__ == "__main__":
    sys.exit(main())
