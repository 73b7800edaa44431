"""``dpgm synth`` and ``dpgm fit``: the one command that fits a synthesizer on data (and
samples, or saves the model). Everything knowable before reading the data is checked
first (:func:`fit_checked`), so a run bound to fail spends nothing."""

from __future__ import annotations

import argparse

from dpgm.cli.common import (
    ESTIMATORS,
    FLAGS,
    LOSSES,
    MECHANISMS,
    add_chunk_option,
    add_engine_option,
    check_default_rows,
    check_row_memory,
    choose_engine,
    given_values,
    load_records,
    mechanism_progress,
    memory_help,
    memory_size,
    positive_count,
    prepare_outputs,
    public_inputs,
    real,
    report_spend,
    sampling_seed,
    say,
    seed,
)

PASSED_ON = ("iters", "max_cells", "max_model_size", "loss")


def _build_mechanism(args: argparse.Namespace, budget: dict | None = None):
    """The mechanism named by --mechanism, with the options it accepts (``budget``:
    ``{"epsilon": ...}`` or ``{"rho": ...}`` in place of --epsilon)."""
    import inspect

    from dpgm.errors import ParameterError
    from dpgm.mechanisms import REGISTRY

    cls = REGISTRY[args.mechanism]
    accepted = inspect.signature(cls).parameters
    options = {"progress": mechanism_progress(), "max_memory": args.max_memory}
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
    if budget and "rho" in budget:
        return cls(rho=budget["rho"], **options)
    return cls(budget["epsilon"] if budget else args.epsilon, **options)


def _synth(args: argparse.Namespace) -> int:
    """``dpgm synth``: fit, then write synthetic records chunk by chunk (and the model,
    where asked)."""
    from dpgm.cli.output import check_disk_space, chunk_count, write_synthetic

    mechanism, outputs = fit_checked(args, sample=True)
    budget, ledger, out = outputs["budget"], outputs["ledger"], outputs["out"]
    try:
        if outputs["model"] is not None:  # first: what was paid for is kept whatever follows
            mechanism.result.save(outputs["model"])
            say(f"wrote the model to {outputs['model']}")
        domain, rows = mechanism.result.domain, args.rows
        if rows is None:  # the released estimate, or the records released
            if mechanism.releases_model:
                check_default_rows(mechanism.result.total)
            rows = mechanism.result.default_rows() if mechanism.releases_model \
                else len(mechanism.result)
            check_disk_space(out, rows, len(domain))
        if args.engine == "spark" and mechanism.releases_model:
            from dpgm.engines.spark import sample_to

            # each partition draws its share from the broadcast model and Spark writes it:
            # no record passes through the driver
            written = sample_to(mechanism.result, out, rows, seed=sampling_seed(args.seed),
                                given=outputs["given"], chunk_rows=args.chunk_rows,
                                force=args.force)
        else:
            chunks = mechanism.synthetic_chunks(rows, rng=sampling_seed(args.seed),
                                                given=outputs["given"],
                                                chunk_rows=args.chunk_rows)
            written = write_synthetic(chunks, out, domain, mechanism.schema,
                                      count=chunk_count(rows, args.chunk_rows, len(domain)))
    except BaseException:  # the budget was spent: the ledger line is owed whatever failed
        report_spend(budget, ledger, out, failed=True)
        raise
    say(f"wrote {written} synthetic records to {out}")
    report_spend(budget, ledger, out)
    return 0


def _fit(args: argparse.Namespace) -> int:
    """``dpgm fit``: fit and save the model, without sampling (it answers later, free)."""
    mechanism, outputs = fit_checked(args, sample=False)
    mechanism.result.save(outputs["out"])
    say(f"wrote the model to {outputs['out']}; dpgm model sample|query|map|info read it "
         "without the data and without spending more")
    report_spend(outputs["budget"], outputs["ledger"], outputs["out"])
    return 0


def fit_checked(args: argparse.Namespace, *, sample: bool):
    """The mechanism of ``synth`` or ``fit``, fitted once everything knowable before
    reading the data was checked (options, outputs, schema, workload, sizes); and the
    outputs, checked: ``out``, ``ledger``, ``model`` (synth's --save-model), ``given``."""
    from dpgm.cli.discretize import Discretization
    from dpgm.errors import ParameterError
    from dpgm.workload import Workload

    mechanism = _build_mechanism(args)
    learning = Discretization.plan(args)  # None without --discretize-share
    if learning is not None:  # the mechanism gets what the discretisation leaves
        mechanism_budget, run_budget, each = learning.split(mechanism)
        mechanism = _build_mechanism(args, mechanism_budget)
    inputs = (args.data, args.domain, args.schema, args.workload)
    # Spark writes a model's records itself (records a mechanism released are written here)
    by_spark = sample and args.engine == "spark" and mechanism.releases_model
    outputs = prepare_outputs(args, inputs, ("save_model", "ledger") if by_spark else
                              ("out", "save_model", "ledger") if sample else ("out", "ledger"))
    if by_spark:
        from dpgm.cli.output import check_spark_output

        outputs["out"] = check_spark_output(args.out, force=args.force, inputs=inputs)
    out, model_out, ledger = outputs["out"], outputs.get("save_model"), outputs["ledger"]
    if not mechanism.releases_model and (not sample or model_out is not None):
        raise ParameterError(
            f"--estimator {mechanism.estimator} of {args.mechanism} releases synthetic records, "
            f"not a model to save: use --estimator pgm")
    if sample:
        from dpgm.cli.output import check_format

        check_format(args.out)
    if learning is None:
        schema, domain = public_inputs(args)
    else:  # as large as learning could make it: its checks hold for the learnt schema
        schema, domain = learning.largest, learning.largest.domain
    given = given_values(args.given, schema, domain) if sample else {}
    workload = None if args.workload is None else Workload.load(args.workload).check(domain)
    if workload is not None and not mechanism.uses_workload:
        from dpgm.mechanisms.base import mechanisms_that

        choices = ", ".join(mechanisms_that("uses_workload"))
        raise ParameterError(f"--mechanism {args.mechanism} measures no workload; drop "
                             f"--workload, or choose {choices}")
    mechanism.check(domain, workload, zeros=schema.forbidden if schema else (),
                    refine=schema.refinements() if schema else None)
    if sample:
        mechanism.check_synthesizable(domain, workload)
    if given and not mechanism.may_estimate_with_pgm():  # table models cannot condition
        raise ParameterError("--given needs the Private-PGM estimator (--estimator pgm)")
    if sample and args.rows is not None:
        from dpgm.cli.output import check_disk_space
        from dpgm.memory import default_chunk_rows

        chunk = args.chunk_rows or default_chunk_rows(len(domain))
        check_row_memory(min(args.rows, chunk), len(domain), mechanism.max_memory)
        check_disk_space(args.out, args.rows, len(domain))

    engine = choose_engine(args, schema, args.data)
    if engine != "numpy" and mechanism.needs_records:
        raise ParameterError(f"--mechanism {args.mechanism} reads the records one by one: "
                             "use --engine numpy")
    if learning is None:
        data = load_records(args.data, schema, domain, engine, mechanism.max_memory)
    else:
        from dpgm.dataset import read_raw_table
        from dpgm.privacy.quiet import on_records

        with on_records():  # no warning raised on the records reaches the user
            data = read_raw_table(args.data)
    # the number of records is private, and so is the file's size: the engine auto chose
    # from it is not named (the result is the same on every engine)
    say(f"read {args.data}: {len(domain)} attributes"
         f"{f', counted by {engine}' if args.engine != 'auto' else ''}")
    if learning is not None:
        schema = learning.learn(data, run_budget, each, args.seed)
        given = given_values(args.given, schema, schema.domain) if sample else {}
    mechanism.fit(data, workload=workload, rng=args.seed, schema=schema)
    budget = mechanism.budget
    if learning is not None:  # one ledger: the discretisation, then the mechanism
        run_budget.include(mechanism.budget)
        budget = run_budget
        if mechanism.releases_model:
            mechanism.result.release.ledger = run_budget.to_json()
    return mechanism, {"out": out, "ledger": ledger, "model": model_out, "given": given,
                       "budget": budget}


def add_fit_options(command: argparse.ArgumentParser, memory_help: str) -> None:
    """The options of ``synth`` and ``fit``: the data, its public description, the
    budget, the mechanism and its settings."""
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
        "--mechanism", choices=MECHANISMS, default="aim-rp", help="the mechanism (default: aim-rp)"
    )
    command.add_argument(
        "--estimator",
        choices=ESTIMATORS,
        default=None,
        help="Private-PGM or the mechanism's own estimator: original; for cgm em, naive or "
        "naive-projected; for aim-rp records, or auto (records or pgm, as a noisy record "
        "count says) (default: the mechanism's own: pgm; em for cgm, sgd for psgd, auto "
        "for aim-rp)",
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
        type=positive_count,
        default=None,
        help="the mechanism's cell cap: the largest default-workload marginal (aim), the "
        "junction tree (mwem, dualquery), the global least-squares table (hdmm) "
        "(default: the mechanism's)",
    )
    command.add_argument(
        "--max-model-size",
        type=real,
        default=None,
        metavar="MB",
        help="aim: the largest model it may grow, in MB of 8-byte cells; it says before its "
        "first round how long estimating a model that size takes (default: aim's)",
    )
    command.add_argument(
        "--loss",
        choices=LOSSES,
        default=None,
        help="residual-planner and aim-rp: what the plan's allocation of the budget "
        "minimises: the sum or the max of the workload's cell variances, or error, its "
        "workload error (default: sum)",
    )
    command.add_argument("--max-memory", type=memory_size, default=None, help=memory_help)
    command.add_argument(
        "--discretize-share", type=real, default=None, metavar="SHARE",
        help="learn the schema's null numeric bounds, bins (PrivTree) and precision from "
        "the data first, with this share of the budget (e.g. 0.1; its own ledger lines; "
        "default: none, the schema's bins as written)")
    add_engine_option(command, "so the same result for a seed")




def add_commands(commands) -> None:
    """Add ``synth`` and ``fit`` to the ``dpgm`` parser's subcommands."""
    synth = commands.add_parser("synth", help="fit a private model and write synthetic data")
    add_fit_options(synth, memory_help())
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
        help="where to write the synthetic table (.csv, .csv.gz or .parquet; - for standard "
        "output), chunk by chunk, whole or not at all"
    )
    synth.add_argument(
        "--rows",
        type=positive_count,
        default=None,
        help="synthetic records to write (default: the model's noisy estimate)",
    )
    add_chunk_option(synth)
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
    add_fit_options(fit, memory_help())
    fit.add_argument("--out", required=True, metavar="MODEL.dpgm",
                     help="where to save the model (dpgm model ... reads it)")
    fit.add_argument("--ledger", default=None,
                     help="also write the privacy ledger as JSON (default: none)")
    fit.add_argument("--force", action="store_true",
                     help="overwrite --out if it exists (default: refuse)")
    fit.set_defaults(run=_fit)

