"""``dpgm model``: answer from a saved model — info, sample, query, map.

None of these commands reads data or spends budget: a model file (``dpgm fit``, or
``dpgm synth --save-model``) is the release, and everything computed from it is
post-processing. Each works with no data file present.
"""

from __future__ import annotations

import argparse
import json
import sys

from dpgm.cli.common import (
    add_chunk_option,
    parse_pairs,
    parse_query,
    parse_variables,
    print_conditional,
    print_map,
    say,
)

FREE = "reads no data and spends no budget"
SEEDED_NOTE = ("dpgm: note: this model was fitted with --seed: reproducible research output, "
               "not for release")



def _read(path: str):
    from dpgm.models import load

    model = load(path)
    if model.release is not None and model.release.seeded:
        print(SEEDED_NOTE, file=sys.stderr)
    return model


def _labels(model, given: dict[str, str]) -> dict[str, str]:
    """Evidence on known attributes (its values are read by the model: labels, or raw
    values its schema bins; one-line errors otherwise)."""
    from dpgm.errors import DomainError

    for name in given:
        if name not in model.domain:
            raise DomainError(f"{name!r} is not an attribute of the model; it has "
                              f"{list(model.domain.attrs)}")
    return given


# -- info -------------------------------------------------------------------------------------
def _info(args: argparse.Namespace) -> int:
    import os

    model = _read(args.model)
    facts = model.describe()
    release = model.release
    facts["schema"] = model.schema is not None
    facts["release"] = None if release is None else release.to_json()
    facts["file bytes"] = os.path.getsize(args.model)
    if args.json:
        print(json.dumps(facts, indent=2, default=str))
        return 0
    print(f"kind:       {facts.pop('kind')}")
    print(f"records:    {facts.pop('total'):.6g} (the model's noisy estimate)")
    attributes = facts.pop("attributes")
    shown = ", ".join(f"{a} ({k})" for a, k in list(attributes.items())[:20])
    more = f", ... ({len(attributes)} in all)" if len(attributes) > 20 else ""
    print(f"attributes: {shown}{more}")
    units = "yes: samples come back in original units" if facts.pop("schema") else "no"
    print(f"schema:     {units}")
    facts.pop("release")
    size = facts.pop("file bytes")
    for key, value in facts.items():
        text = json.dumps(value)
        print(f"{key}: {text if len(text) <= 300 else text[:300] + ' ...'}")
    print(f"file:       {size:,} bytes")
    if release is None:
        print("release:    none recorded (a model made in Python, not by a mechanism)")
        return 0
    print(f"mechanism:  {release.mechanism} {json.dumps(release.options)}")
    print(f"seeded:     {'yes: research only, not for release' if release.seeded else 'no'}")
    ledger = release.ledger or {}
    spent = ledger.get("spent", {})
    print(f"privacy:    {ledger.get('accounting', '?')}; spent "
          + " ".join(f"{k}={v:.6g}" for k, v in spent.items() if v is not None))
    for entry in ledger.get("entries", []):
        amount = " ".join(f"{k}={entry[k]:.6g}" for k in ("epsilon", "rho", "delta")
                          if entry.get(k))
        print(f"  {entry['label']}: {amount}")
    return 0


# -- sample -----------------------------------------------------------------------------------
def _sample(args: argparse.Namespace) -> int:
    from dpgm.cli.common import check_default_rows, check_row_memory, given_values
    from dpgm.cli.output import check_disk_space, check_format, chunk_count, write_synthetic
    from dpgm.files import check_output
    from dpgm.memory import DEFAULT_MAX_MEMORY, default_chunk_rows

    out = check_output(args.out, force=args.force, inputs=[args.model])
    check_format(args.out)
    model = _read(args.model)
    given = given_values(args.given, model.schema, model.domain)
    width = len(model.domain)
    if args.rows is None:
        check_default_rows(model.total)
    rows = model.default_rows() if args.rows is None else args.rows
    limit = DEFAULT_MAX_MEMORY if args.max_memory is None else args.max_memory
    check_row_memory(min(rows, args.chunk_rows or default_chunk_rows(width)), width, limit)
    check_disk_space(out, rows, width)
    chunks = model.synthetic_chunks(rows, rng=args.seed, given=given or None,
                                    chunk_rows=args.chunk_rows, max_memory=args.max_memory)
    written = write_synthetic(chunks, out, model.domain, model.schema, labels=True,
                              count=chunk_count(rows, args.chunk_rows, width))
    say(f"wrote {written} records to {out}")
    return 0


def replicates(text: str) -> int:
    """--bootstrap N: at least 2 replicates (a spread needs two)."""
    from dpgm.cli.common import positive_count

    count = positive_count(text)
    if count < 2:
        raise argparse.ArgumentTypeError("needs at least 2 replicates")
    return count


# -- query and map ----------------------------------------------------------------------------
def _query(args: argparse.Namespace) -> int:
    from dpgm.models.uncertainty import has_error_bars

    variables, evidence = parse_query(args.query)
    model = _read(args.model)
    given = _labels(model, evidence) or None
    table = model.conditional_table(variables, given)
    errors = None
    if has_error_bars(model):  # from the released measurements: free
        errors = _standard_errors(model, variables, given, args)
    print_conditional(table, variables, evidence, args.json, errors)
    return 0


def _standard_errors(model, variables, given, args: argparse.Namespace):
    """Each answer's standard error (a probability): analytic where the model measured the
    variables directly; else from --bootstrap N re-estimations, or None without it."""
    from dpgm.models.uncertainty import analytic_errors, standard_error

    if not given:
        found = analytic_errors(model, [variables])[0]
        if found is not None:
            return found.ravel() / model.total
    if args.bootstrap is None:
        say("no standard error: the model did not measure this directly; --bootstrap N "
            "gives one from N re-estimations (free, but slow on large models)")
        return None
    error = standard_error(model, variables, given, method="bootstrap",
                           replicates=args.bootstrap, rng=args.seed, progress=True)
    return error.ravel() / model.total


def _map(args: argparse.Namespace) -> int:
    model = _read(args.model)
    evidence = _labels(model, parse_pairs(args.evidence, "--evidence"))
    variables = parse_variables(args.variables, model.domain, "attribute of the model")
    print_map(model.map_query(variables, evidence or None), args.json)
    return 0


# -- the parser -------------------------------------------------------------------------------
def add_commands(commands, *, seed, positive_count, memory_size) -> None:
    """Add ``model info|sample|query|map`` to the ``dpgm`` parser's subcommands."""
    model = commands.add_parser(
        "model", help=f"answer from a saved model (dpgm fit, synth --save-model); {FREE}",
        description=f"Answer from a saved model; every model command {FREE}.")
    sub = model.add_subparsers(dest="model_command", required=True, parser_class=type(model))

    info = sub.add_parser("info", help=f"what a model file holds: kind, attributes, "
                                       f"structure, ledger, whether seeded; {FREE}",
                          description=f"Show what a model file holds; {FREE}.")
    info.add_argument("model", help="the model file (.dpgm)")
    info.add_argument("--json", action="store_true", help="print the facts as JSON")
    info.set_defaults(run=_info)

    sample = sub.add_parser("sample", help=f"synthetic records from a model; {FREE}",
                            description=f"Write synthetic records from a model; {FREE}.")
    sample.add_argument("model", help="the model file (.dpgm)")
    sample.add_argument("--rows", type=positive_count, default=None,
                        help="how many records (default: the model's noisy estimate)")
    sample.add_argument("--given", action="append", default=None, metavar="COLUMN=VALUE",
                        help="draw conditioned on this value (repeatable; values of one "
                        "column are alternatives; default: none)")
    sample.add_argument("--seed", type=seed, default=None,
                        help="makes the sample reproducible (default: none)")
    sample.add_argument("--max-memory", type=memory_size, default=None,
                        help="memory limit for the records (default: half this machine's RAM)")
    add_chunk_option(sample)
    sample.add_argument("--out", required=True,
                        help="where to write the records (.csv, .parquet; - for standard "
                        "output), in original units where the model has a schema, else labels")
    sample.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    sample.set_defaults(run=_sample)

    query = sub.add_parser("query", help=f"probabilities from a model, in labels; {FREE}",
                           description=f"Print probabilities from a model; {FREE}.")
    query.add_argument("model", help="the model file (.dpgm)")
    query.add_argument("query", help='e.g. "P(income | sex=F, age=30-39)" (evidence optional)')
    query.add_argument(
        "--bootstrap", type=replicates, default=None, metavar="N",
        help="standard errors that the model's measurements do not give directly "
        "(conditional or unmeasured answers) from N re-estimations, e.g. 50 (default: none)")
    query.add_argument("--seed", type=seed, default=None,
                       help="seed of the bootstrap's noise (default: fresh)")
    query.add_argument("--json", action="store_true",
                       help='print [{"assignment": {...}, "probability": p, '
                       '"standard_error": s or null}, ...]')
    query.set_defaults(run=_query)

    best = sub.add_parser("map", help=f"the most probable values given evidence; {FREE}",
                          description=f"Print the most probable values; {FREE}.")
    best.add_argument("model", help="the model file (.dpgm)")
    best.add_argument("--variables", default=None,
                      help="A,B: the most probable joint values of these (marginal MAP); "
                      "default: every attribute without evidence (the most probable record)")
    best.add_argument("--evidence", action="append", default=None, metavar="ATTRIBUTE=value",
                      help="observed values (repeatable, or comma-separated)")
    best.add_argument("--json", action="store_true", help="print {attribute: label}")
    best.set_defaults(run=_map)
