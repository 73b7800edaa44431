"""``dpgm bn``: Bayesian networks on the command line — private fitting, queries, MAP, samples.

``fit`` is the only command that reads sensitive data; it spends its budget through
:mod:`dpgm.mechanisms.bn` and ends with the ledger line. ``query``, ``map`` and
``sample`` read a released model (a BIF file) only: post-processing, free. Everything a
command can check before reading the data (options, the output path, the structure, the
columns) is checked first.
"""

from __future__ import annotations

import argparse

from dpgm.cli.common import (  # noqa: F401 (parse_query: dpgm.cli.bn named it first)
    add_chunk_option,
    parse_pairs,
    parse_query,
    parse_variables,
    print_conditional,
    print_map,
    print_posteriors,
    say,
)

#: --method -> (learner name in dpgm.mechanisms.BN_LEARNERS, estimator)
METHODS = {
    "data-dependent": ("data-dependent", "original"),
    "dind": ("dind", "original"),
    "pgm": ("data-dependent", "pgm"),
}



def _checked_evidence(network, evidence: dict[str, str]) -> dict[str, str]:
    """Evidence whose variables and states exist in ``network`` (one-line errors)."""
    from dpgm.errors import DomainError

    for name, state in evidence.items():
        if name not in network.states:
            raise DomainError(
                f"{name!r} is not a variable of the network; it has {network.variables}"
            )
        if state not in network.states[name]:
            raise DomainError(
                f"{state!r} is not a state of {name!r}; its states are {network.states[name]}"
            )
    return evidence


def _read_network(path: str):
    """A network from a BIF file, or an XMLBIF one (``.xml``, ``.xmlbif``)."""
    from dpgm.io import read_bif, read_xmlbif

    if str(path).lower().endswith((".xml", ".xmlbif")):
        return read_xmlbif(path)
    return read_bif(path)


# -- fit ----------------------------------------------------------------------------------------
def _fit(args: argparse.Namespace) -> int:
    from dpgm.cli.common import mechanism_progress, prepare_outputs, report_spend
    from dpgm.dataset import read_raw_table, read_table
    from dpgm.errors import DataError
    from dpgm.io import write_bif
    from dpgm.mechanisms import BN_LEARNERS
    from dpgm.schema import Categorical, Schema

    name, estimator = METHODS[args.method]
    options = {"estimator": estimator, "progress": mechanism_progress(),
               "max_memory": args.max_memory}
    if args.iters is not None:
        options["iters"] = args.iters
    stage = {"beta": args.beta, "stage_share": args.stage_share, "allocation": args.allocation}
    given = {k: v for k, v in stage.items() if v is not None}
    if name == "data-dependent":
        options.update({"allocation": "error", **given})
    elif given:
        from dpgm.errors import ParameterError

        flags = ", ".join("--" + k.replace("_", "-") for k in given)
        verb = "applies" if len(given) == 1 else "apply"
        raise ParameterError(f"{flags} {verb} to --method data-dependent or pgm, not dind")
    # everything knowable before reading the data is checked first
    structure = _read_network(args.structure)
    learner = BN_LEARNERS[name](args.epsilon, structure=structure, **options)
    checked = prepare_outputs(args, (args.structure, args.data))
    out, ledger = checked["out"], checked["ledger"]
    # the structure's states are the public schema: DATA holds state names
    schema = Schema(Categorical(v, structure.states[v]) for v in structure.variables)
    learner.check(schema.domain)
    header = list(read_table(args.data, nrows=0).columns)
    missing = [v for v in structure.variables if v not in header]
    extra = [c for c in header if c not in structure.states]
    if missing or extra:
        raise DataError(
            f"{args.data} must have one column per node of the structure"
            + (f"; missing: {missing}" if missing else "")
            + (f"; not in the structure: {extra} (drop them)" if extra else "")
        )
    frame = read_raw_table(args.data)  # each value read on its own by the schema
    say(f"read {args.data}: {len(structure.variables)} variables")  # the count is private
    network = learner.fit(frame, rng=args.seed, schema=schema)
    network.name = structure.name
    write_bif(network, out)
    say(f"wrote the private network ({args.method}) to {out}")
    report_spend(learner.budget, ledger, out)
    return 0


# -- learn ----------------------------------------------------------------------------------------
def _learn(args: argparse.Namespace) -> int:
    from pathlib import Path

    from dpgm.cli.common import load_records, mechanism_progress, prepare_outputs, report_spend
    from dpgm.errors import ParameterError
    from dpgm.io import write_bif
    from dpgm.mechanisms import NetworkLearner
    from dpgm.schema import Schema

    options = {} if args.degree is None else {"degree": args.degree}
    if args.method == "tree" and args.degree is not None:
        raise ParameterError("--method tree gives each variable one parent: drop --degree")
    # everything knowable before reading the data is checked first
    parameters, estimator = METHODS[args.parameters]
    learner = NetworkLearner(args.epsilon, method=args.method, parameters=parameters,
                             estimator=estimator, max_memory=args.max_memory,
                             progress=mechanism_progress(), **options)
    checked = prepare_outputs(args, (args.data, args.schema))
    out, ledger = checked["out"], checked["ledger"]
    schema = Schema.load(args.schema)
    learner.check(schema.domain, zeros=schema.forbidden)
    data = load_records(args.data, schema, schema.domain, "numpy", learner.max_memory)
    say(f"read {args.data}: {len(schema.domain)} variables")  # the count is private
    network = learner.fit(data, rng=args.seed, schema=schema)
    network.name = Path(args.data).name.split(".")[0]
    write_bif(network, out)
    edges = sum(len(p) for p in network.parents.values())
    say(f"wrote the private network ({args.method}, {edges} edges) to {out}")
    report_spend(learner.budget, ledger, out)
    return 0


# -- query, map, sample (post-processing of a released model) -------------------------------------
def _query(args: argparse.Namespace) -> int:
    from dpgm.errors import ParameterError

    if args.all == (args.query is not None):
        raise ParameterError('give either a query ("P(A | B=b)") or --all')
    if not args.all and args.evidence:
        raise ParameterError('--evidence goes with --all; a query has its own ("P(A | B=b)")')
    if args.all:
        network = _read_network(args.model)
        evidence = _checked_evidence(network, parse_pairs(args.evidence, "--evidence"))
        print_posteriors(network.posteriors(evidence), evidence, args.json)
        return 0
    variables, evidence = parse_query(args.query)
    network = _read_network(args.model)
    print_conditional(network.query(variables, _checked_evidence(network, evidence)),
                      variables, evidence, args.json)
    return 0


def _map(args: argparse.Namespace) -> int:
    network = _read_network(args.model)
    evidence = _checked_evidence(network, parse_pairs(args.evidence, "--evidence"))
    variables = parse_variables(args.variables, network.domain, "variable of the network")
    print_map(network.map_query(variables, evidence), args.json)
    return 0


def _sample(args: argparse.Namespace) -> int:
    from dpgm.cli.common import check_row_memory
    from dpgm.cli.output import check_disk_space, check_format, chunk_count, write_synthetic
    from dpgm.files import check_output
    from dpgm.memory import DEFAULT_MAX_MEMORY, default_chunk_rows
    from dpgm.random import as_generator

    out = check_output(args.out, force=args.force, inputs=[args.model])
    check_format(args.out)
    network = _read_network(args.model)
    evidence = _checked_evidence(network, parse_pairs(args.evidence, "--evidence"))
    width = len(network.variables)
    size = args.chunk_rows or default_chunk_rows(width)
    # its message names --max-memory and --rows: both are options of bn sample
    limit = DEFAULT_MAX_MEMORY if args.max_memory is None else args.max_memory
    check_row_memory(min(args.rows, size), width, limit)
    check_disk_space(out, args.rows, width)
    generator = as_generator(args.seed)
    # independent draws (forward sampling): chunks of them are draws of the whole
    chunks = (network.simulate(min(size, args.rows - start), evidence or None, rng=generator)
              for start in range(0, max(args.rows, 1), size))
    written = write_synthetic(chunks, out, network.domain, labels=True,
                              count=chunk_count(args.rows, args.chunk_rows, width))
    say(f"wrote {written} records to {out}")
    return 0


# -- the parser ---------------------------------------------------------------------------------
def add_commands(commands, *, real, seed, count, positive_count, memory_size) -> None:
    """Add ``bn learn|fit|query|map|sample`` to the ``dpgm`` parser's subcommands."""
    bn = commands.add_parser(
        "bn", help="Bayesian networks: private learn and fit, query, map, sample")
    sub = bn.add_subparsers(dest="bn_command", required=True, parser_class=type(bn))

    learn = sub.add_parser(
        "learn", help="learn a network, structure and CPDs, privately from a table "
        "(spends budget)")
    learn.add_argument("data", help="CSV (or Parquet) of the records")
    learn.add_argument("--schema", required=True,
                       help="the table's public schema (JSON); its labels become the states")
    learn.add_argument("--epsilon", type=real, required=True, help="the privacy budget epsilon")
    learn.add_argument(
        "--method", choices=("privbayes", "tree"), default="privbayes",
        help="privbayes: PrivBayes's greedy network, at most --degree parents each; tree: "
        "one parent each (default: privbayes)")
    learn.add_argument("--degree", type=positive_count, default=None,
                       help="privbayes: the most parents a variable may have (default: 2)")
    learn.add_argument(
        "--parameters", choices=sorted(METHODS), default="pgm",
        help="how the CPDs are learnt on the chosen structure with the rest of epsilon, as "
        "bn fit --method does, with --allocation error (default: pgm, as for bn fit)")
    learn.add_argument("--seed", type=seed, default=None,
                       help="makes the run reproducible, for research only (default: none, "
                       "exact samplers)")
    learn.add_argument("--max-memory", type=memory_size, default=None,
                       help="memory limit for the score and count tables (default: half "
                       "this machine's RAM)")
    learn.add_argument("--out", required=True, help="where to write the private network (.bif)")
    learn.add_argument("--ledger", default=None, help="also write the ledger as JSON")
    learn.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    learn.set_defaults(run=_learn)

    fit = sub.add_parser(
        "fit", help="learn a network's CPDs privately on a public structure (spends budget)"
    )
    fit.add_argument(
        "structure",
        help="BIF (or XMLBIF .xml) file of the public structure (its CPDs are ignored)",
    )
    fit.add_argument("data", help="CSV with one column per node holding state names")
    fit.add_argument("--epsilon", type=real, required=True, help="the privacy budget epsilon")
    fit.add_argument(
        "--method",
        choices=sorted(METHODS),
        default="pgm",
        help="data-dependent: Algorithm 2 of Roy Chowdhury et al.; dind: epsilon/n per node; "
        "pgm: Algorithm 2's tables estimated jointly by Private-PGM. The default, pgm with "
        "--allocation error, had the lowest query error of the five choices on every one of "
        "18 networks and epsilons measured (docs/bayesian-networks.md), with the same "
        "guarantee; on networks of a thousand nodes it takes minutes, dind seconds",
    )
    fit.add_argument(
        "--beta", type=real, default=None,
        help="data-dependent and pgm: the Stage-I sampling rate (default: 0.1)",
    )
    fit.add_argument(
        "--stage-share", type=real, default=None,
        help="data-dependent and pgm: the share of epsilon spent by Stage I (default: 0.1)",
    )
    fit.add_argument(
        "--allocation", choices=("paper", "error"), default=None,
        help="data-dependent and pgm: the split of epsilon over the nodes, Eq. 10 of the "
        "paper, or ours, which minimises the expected CPD error and measured better "
        "(default: error)",
    )
    fit.add_argument(
        "--iters", type=positive_count, default=None,
        help="pgm: estimation iterations (default: 500)",
    )
    fit.add_argument(
        "--seed", type=seed, default=None,
        help="makes the run reproducible, for research only (default: none, exact samplers)",
    )
    fit.add_argument("--max-memory", type=memory_size, default=None,
                     help="memory limit for the tables (default: half this machine's RAM)")
    fit.add_argument("--out", required=True, help="where to write the private network (.bif)")
    fit.add_argument("--ledger", default=None, help="also write the ledger as JSON")
    fit.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    fit.set_defaults(run=_fit)

    query = sub.add_parser("query", help="probabilities from a network, in state names")
    query.add_argument("model", help="BIF file of the network")
    query.add_argument("query", nargs="?", default=None,
                       help='e.g. "P(A, B | C=c1, D=d2)" (evidence optional)')
    query.add_argument("--all", action="store_true",
                       help="the posterior of every variable without evidence, from one "
                       "pass over the network's junction tree")
    query.add_argument("--evidence", action="append", default=None, metavar="VARIABLE=state",
                       help="with --all: observed states (repeatable, or comma-separated)")
    query.add_argument("--json", action="store_true",
                       help='print [{"assignment": {...}, "probability": p}, ...]; with '
                       '--all, {variable: {state: p}}')
    query.set_defaults(run=_query)

    best = sub.add_parser("map", help="the most probable states given evidence")
    best.add_argument("model", help="BIF file of the network")
    best.add_argument(
        "--variables", default=None,
        help="A,B: the most probable joint state of these (marginal MAP); default: every "
        "variable without evidence (MPE)",
    )
    best.add_argument("--evidence", action="append", default=None, metavar="VARIABLE=state",
                      help="observed states (repeatable, or comma-separated)")
    best.add_argument("--json", action="store_true", help="print {variable: state}")
    best.set_defaults(run=_map)

    sample = sub.add_parser("sample", help="records drawn from a network, in state names")
    sample.add_argument("model", help="BIF file of the network")
    sample.add_argument("--rows", type=count, required=True, help="how many records")
    sample.add_argument("--evidence", action="append", default=None, metavar="VARIABLE=state",
                        help="draw from the posterior given these states (exact; repeatable)")
    sample.add_argument("--max-memory", type=memory_size, default=None,
                        help="memory limit for the records (default: half this machine's RAM)")
    sample.add_argument(
        "--seed", type=seed, default=None,
        help="makes the sample reproducible (sampling a released model is post-processing; "
        "default: none)",
    )
    add_chunk_option(sample)
    sample.add_argument("--out", required=True,
                        help="where to write the records (.csv; - for standard output)")
    sample.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    sample.set_defaults(run=_sample)
