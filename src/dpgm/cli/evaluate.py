"""``dpgm evaluate``: compare synthetic data with the real data (not private: for the data
steward's own checks), with an HTML report."""

from __future__ import annotations

import argparse
import sys

from dpgm.cli.common import (
    NOT_PRIVATE_NOTE,
    add_engine_option,
    choose_engine,
    load_records,
    memory_help,
    memory_size,
    positive_count,
    public_inputs,
    say,
)


def _evaluate(args: argparse.Namespace) -> int:
    from itertools import combinations

    import numpy as np

    from dpgm.errors import DataError, ParameterError
    from dpgm.memory import CELL_BYTES, check_memory
    from dpgm.workload import Workload

    model = _read_model(args)
    if model is not None and args.schema is None and args.domain is None:
        schema, domain = model.schema, model.domain  # the model's own, its bins learnt
    else:
        schema, domain = public_inputs(args)
    workload = None if args.workload is None else Workload.load(args.workload).check(domain)
    outputs = _report_paths(args)
    ledger = _read_ledger(args.ledger)  # a file that is no ledger is refused before reading
    _check_model(model, domain)
    share_errors = _model_errors(model)  # the model's own: no record read
    _check_target(args, domain)
    if args.ways is None:  # 1-, 2- and 3-way, as far as the columns go
        args.ways = [w for w in (1, 2, 3) if w <= len(domain)]
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
    paths = (args.real, args.synthetic)
    engines = [choose_engine(args, schema, path) for path in paths]
    if args.holdout is not None and set(engines) != {"numpy"}:
        raise ParameterError("--holdout compares records in memory: run with --engine numpy")
    frames = _raw_tables(paths, schema, engines)  # read once: counted and compared as numbers
    if frames is not None:
        from dpgm.privacy.quiet import on_records

        with on_records():
            real, synthetic = (schema.encode(frame) for frame in frames)
    else:
        real, synthetic = (load_records(path, schema, domain, engine, args.max_memory)
                           for path, engine in zip(paths, engines))
    for path, data in ((args.real, real), (args.synthetic, synthetic)):
        if len(data) == 0:
            raise DataError(f"{path} has no records: there is nothing to compare")
    print(f"real: {len(real)} records; synthetic: {len(synthetic)} records")
    holdout = _holdout(args, schema, domain, real, synthetic, frames)
    copies = _copy_checks(real, synthetic, holdout)
    utility = _utility(args, schema, real, synthetic, holdout, frames)
    from dpgm.report import evaluate

    evaluation = evaluate(real, synthetic, schema=schema, frames=frames, ways=args.ways,
                          workload=workload, ledger=ledger, copies=copies, utility=utility,
                          share_errors=share_errors)
    numeric = _print_numeric(schema, frames, evaluation.numeric)
    if workload is not None:
        print(f"workload error ({len(workload)} sub-workloads, Sec. 5.1 of Private-PGM): "
              f"{evaluation.workload_error:.4g}")
        tv = np.mean(list(evaluation.workload_errors.values()))
        print(f"mean TV error over the workload's {len(workload)} marginals: {tv:.4g}")
    for ways, error in evaluation.mean_errors.items():
        print(f"mean TV error over all {ways}-way marginals: {error:.4g}")
    _reading(evaluation.mean_errors, numeric)
    for line in evaluation.summary():
        print(line)
    for path, form in outputs:
        path.parent.mkdir(exist_ok=True)  # made only now: a failed run leaves no folder
        evaluation.write(path, format=form)
        say(f"wrote the report to {path}")
    return 0


def _read_model(args: argparse.Namespace):
    """--model: the saved model the synthetic records came from (its error bars and, by
    default, its schema), read before any record is."""
    if args.model is None:
        return None
    from dpgm.models import load

    return load(args.model)


def _model_errors(model):
    """Each column's share's standard error where the model measured the column directly
    (None for a column it did not; None for a model without measurements)."""
    if model is None:
        return None
    from dpgm.models.uncertainty import analytic_errors, has_error_bars

    if not has_error_bars(model):
        say("--model keeps no measurements (an earlier dpgm, or a model not estimated "
            "from noisy marginals): no error bars")
        return None
    attrs = list(model.domain.attrs)
    found = analytic_errors(model, [[a] for a in attrs])
    return {a: None if e is None else e / model.total for a, e in zip(attrs, found)}


def _check_model(model, domain) -> None:
    from dpgm.errors import DomainError

    if model is not None and (model.domain != domain
                              or list(model.domain.attrs) != list(domain.attrs)):
        raise DomainError("--model: its columns or bins are not those of --schema/--domain "
                          "(leave them out to evaluate on the model's own schema)")


def _check_target(args: argparse.Namespace, domain) -> None:
    """--target names an attribute and goes with --holdout (checked before reading)."""
    from dpgm.errors import ParameterError

    if args.target is None:
        return
    if args.holdout is None:
        raise ParameterError("--target scores models on real records the mechanism never "
                             "saw: give them with --holdout (dpgm split makes them)")
    if args.target not in domain.attrs:
        raise ParameterError(f"--target {args.target!r} is not a column; the columns are "
                             f"{', '.join(domain.attrs)}")
    if len(domain) < 2:
        raise ParameterError("--target needs another column to predict it from")
    try:
        import sklearn  # noqa: F401
    except ImportError:
        raise ParameterError("--target fits scikit-learn models: pip install "
                             "'dpgm[report]'") from None


def _holdout(args: argparse.Namespace, schema, domain, real, synthetic, frames):
    """The holdout's records, and its raw table where the other two were read raw (None
    without --holdout)."""
    if args.holdout is None:
        return None
    from dpgm.dataset import read_raw_table
    from dpgm.privacy.quiet import on_records

    if frames is None:
        return load_records(args.holdout, schema, domain, "numpy", args.max_memory), None
    with on_records():
        frame = read_raw_table(args.holdout)
        return schema.encode(frame), frame


def _copy_checks(real, synthetic, holdout):
    """Exact copies and distances to the closest record, the real (training) records
    against the holdout's, printed (None without a holdout)."""
    if holdout is None:
        return None
    from dpgm.evaluation.copies import copy_checks
    from dpgm.privacy.quiet import on_records

    with on_records():
        found = copy_checks(synthetic, real, holdout[0])
    print("privacy sanity, against the holdout (a check, not a privacy guarantee):")
    for line in found.summary():
        print(f"  {line}")
    return found


def _utility(args: argparse.Namespace, schema, real, synthetic, holdout, frames):
    """Train on synthetic, test on the holdout: --target's scores, printed (None
    without --target)."""
    if args.target is None:
        return None
    from dpgm.evaluation.utility import tstr

    numbers = None
    target = args.target
    column = None if schema is None else schema.columns[target]
    if column is not None and column.kind in ("numeric", "datetime"):
        if frames is None:
            say(f"{target} is numeric: its bins are classified (regression on its numbers "
                "reads the tables in memory: run with --engine numpy)")
        else:
            from dpgm.evaluation.numeric import numeric_values
            from dpgm.privacy.quiet import on_records

            with on_records():
                numbers = tuple(numeric_values(frame, schema)[target].to_numpy()
                                for frame in (*frames, holdout[1]))
    unordered = None if schema is None else frozenset(
        name for name, c in schema.columns.items() if c.kind == "categorical")
    found = tstr(real, synthetic, holdout[0], target, numbers=numbers, categorical=unordered)
    for line in found.summary():
        print(line)
    return found


def _reading(errors: dict[int, float], numeric) -> None:
    """The figures above in words (TV: the largest gap in the share of records of any
    set of cells of a marginal; KS: the largest gap between the two CDFs)."""
    for ways, error in errors.items():
        what = "a column" if ways == 1 else f"{ways} columns together"
        print(f"reading: for {what}, the share of records in any set of their values "
              f"differs by at most {100 * error:.1f} percentage points between the real "
              "and synthetic tables, on average (TV)")
    if numeric is not None:
        print(f"reading: for a numeric column, the share of records below any value "
              f"differs by at most {100 * numeric.mean_ks:.1f} percentage points, on "
              "average (KS)")


def _has_numbers(schema) -> bool:
    return schema is not None and any(c.kind in ("numeric", "datetime")
                                      for c in schema.columns.values())


def _raw_tables(paths, schema, engines: list[str]):
    """Both raw tables in memory, where the schema has numbers to compare in original units
    and both are counted in memory (else None)."""
    if not _has_numbers(schema) or set(engines) != {"numpy"}:
        return None
    from dpgm.dataset import read_raw_table
    from dpgm.privacy.quiet import on_records

    with on_records():
        return [read_raw_table(path) for path in paths]


def _print_numeric(schema, frames, numeric):
    """KS, W1 and correlations of the schema's numeric and datetime columns, printed (None
    where there are none, or where the tables are counted outside memory)."""
    if not _has_numbers(schema):
        return None
    if frames is None:
        say("numeric fidelity (KS, Wasserstein-1, correlations) reads the tables in memory: "
            "run with --engine numpy for it")
        return None
    if numeric is None or not numeric.columns:
        return None
    print("numeric columns (KS distance; Wasserstein-1 over the public range):")
    for name, column in numeric.columns.items():
        print(f"  {name}: KS {column.ks:.4g}; W1 {column.wasserstein:.4g}")
    print(f"mean KS distance over {len(numeric.columns)} numeric column(s): "
          f"{numeric.mean_ks:.4g}; mean W1 / range: {numeric.mean_wasserstein:.4g}")
    if numeric.pearson is not None:
        print(f"largest correlation difference over numeric pairs: Pearson "
              f"{numeric.correlation_difference('pearson'):.4g}, Spearman "
              f"{numeric.correlation_difference('spearman'):.4g}")
    return numeric


def _report_paths(args: argparse.Namespace) -> list:
    """The files --report DIR gets, by --format: DIR/index.html (the page) and
    DIR/report.json (its numbers); each checked before any data are read."""
    from pathlib import Path

    from dpgm.errors import OutputError
    from dpgm.files import check_output

    if args.report is None:
        if args.ledger is not None:
            raise OutputError("--ledger goes with --report DIR")
        return []
    folder = Path(args.report)
    if folder.exists() and not folder.is_dir():
        raise OutputError(f"--report {folder}: not a directory")
    inputs = [p for p in (args.real, args.synthetic, args.ledger, args.holdout, args.model) if p]
    files = [(folder / name, form) for name, form in (("index.html", "html"),
                                                      ("report.json", "json"))
             if args.format in (form, "both")]
    if not folder.exists():  # its parent must take it; it is made once the report is ready
        check_output(folder, inputs=inputs)
        return files
    return [(check_output(path, force=args.force, inputs=inputs), form)
            for path, form in files]


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




def add_commands(commands) -> None:
    """Add ``evaluate`` to the ``dpgm`` parser's subcommands."""
    from dpgm.memory import DEFAULT_MAX_MEMORY

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
        default=None,
        help="sizes of the marginals compared (default: 1 2 3, as far as the columns go)",
    )
    evaluate.add_argument(
        "--workload",
        default=None,
        help="workload JSON (as for synth): report its error and the mean TV on its "
        "marginals (default: none)",
    )
    evaluate.add_argument(
        "--max-memory", type=memory_size, default=DEFAULT_MAX_MEMORY, help=memory_help()
    )
    evaluate.add_argument(
        "--report",
        default=None,
        metavar="DIR",
        help="write the report to DIR: the page DIR/index.html and its numbers "
        "DIR/report.json (--format; default: none)",
    )
    evaluate.add_argument(
        "--format", choices=("both", "html", "json"), default="both",
        help="what --report writes: the page, its numbers as JSON, or both (default: both)")
    evaluate.add_argument(
        "--model", default=None, metavar="MODEL.dpgm",
        help="the model the synthetic records came from (synth --save-model): its schema "
        "reads the tables, and its measurements give error bars on the histograms of "
        "the columns it measured (default: none)")
    evaluate.add_argument(
        "--ledger", default=None, help="the ledger synth --ledger wrote (default: none)"
    )
    evaluate.add_argument(
        "--holdout", default=None,
        help="records the mechanism never saw (dpgm split): check the synthetic records "
        "for copies of the real ones, against these (default: none)")
    evaluate.add_argument(
        "--target", default=None, metavar="COLUMN",
        help="train on synthetic, test on real: fit scikit-learn models predicting COLUMN "
        "to the real and to the synthetic records and score both on --holdout "
        "(default: none)")
    evaluate.add_argument(
        "--force",
        action="store_true",
        help="overwrite the report's files if they exist (default: refuse)",
    )
    add_engine_option(evaluate, "so the same comparison")
    evaluate.set_defaults(run=_evaluate)

