"""The ``dpgm`` command line: private synthetic data, and its evaluation."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

SEEDED_WARNING = (
    "note: --seed makes the noise reproducible; anyone who knows the seed can remove it. "
    "Seeded runs are for research, not for a release."
)
ESTIMATORS = ("pgm", "original")
MAX_DEFAULT_ROWS = 100_000_000  # beyond this the number of rows must be asked for


def _progress(start: float):
    def say(message: str) -> None:
        print(f"[{time.perf_counter() - start:6.1f}s] {message}", file=sys.stderr, flush=True)

    return say


def _build_mechanism(args: argparse.Namespace, say):
    """The mechanism named by --mechanism, with the options it accepts."""
    import inspect

    from dpgm.mechanisms import REGISTRY

    cls = REGISTRY[args.mechanism]
    options = {"estimator": args.estimator, "progress": say}
    if args.delta is not None:
        options["delta"] = args.delta
    if args.iters is not None:
        if "iters" not in inspect.signature(cls).parameters:
            from dpgm.errors import DpgmError

            raise DpgmError(f"--iters does not apply to {args.mechanism}")
        options["iters"] = args.iters
    return cls(args.epsilon, **options)


def _synthetic_records(result, rows: int | None, seed: int | None):
    """Synthetic records from a mechanism's result (a model, tables or records)."""
    from dpgm.dataset import Dataset
    from dpgm.errors import DpgmError
    from dpgm.random import as_generator

    if isinstance(result, Dataset):  # the mechanism released records itself
        if rows is None or rows == len(result):
            return result
        if len(result) == 0:
            raise DpgmError("the mechanism released no records to draw --rows from")
        # resampling released records is post-processing
        picks = as_generator(sampling_seed(seed)).integers(len(result), size=rows)
        return Dataset(result.records[picks], result.domain)
    total = rows if rows is not None else int(round(result.total))
    if rows is None and total > MAX_DEFAULT_ROWS:
        raise DpgmError(
            f"the model estimates {total:,} records (a very small epsilon makes this noisy); "
            "pass --rows to choose how many synthetic records to write"
        )
    return result.synthetic_data(total, rng=sampling_seed(seed))


def _synth(args: argparse.Namespace) -> int:
    from dpgm.dataset import Dataset
    from dpgm.domain import Domain
    from dpgm.errors import DpgmError
    from dpgm.workload import Workload

    if args.rows is not None and args.rows < 0:
        raise DpgmError(f"--rows must be >= 0, got {args.rows}")

    out = Path(args.out)
    if out.exists() and not args.force:
        raise FileExistsError(f"{out} exists; pass --force to overwrite it")
    if not out.parent.exists():
        raise FileNotFoundError(f"the folder of {out} does not exist")
    say = _progress(time.perf_counter())
    # built first so that bad privacy parameters fail before the data are read
    mechanism = _build_mechanism(args, say)
    if args.seed is not None:
        print(SEEDED_WARNING, file=sys.stderr)
    domain = Domain.load(args.domain)
    workload = None if args.workload is None else Workload.load(args.workload).check(domain)
    mechanism.check_synthesizable(domain, workload)  # before any budget is spent
    data = Dataset.load(args.data, domain)
    say(f"loaded {len(data)} records, {len(domain)} attributes from {args.data}")
    result = mechanism.fit(data, workload=workload, rng=args.seed)
    synthetic = _synthetic_records(result, args.rows, args.seed)
    synthetic.save(out)
    say(f"wrote {len(synthetic)} synthetic records to {out}")
    budget = mechanism.budget
    epsilon, delta = budget.spent_epsilon_delta()
    line = f"privacy spent: epsilon={epsilon:.6g} delta={delta:.6g}"
    if budget.mode == "zcdp":
        line += f" rho={budget.spent_rho:.6g}"
    print(line)
    return 0


def sampling_seed(seed: int | None) -> int | None:
    """Seed of the synthetic sample: derived from --seed, distinct from the noise's."""
    return None if seed is None else seed + 1


def _evaluate(args: argparse.Namespace) -> int:
    import numpy as np

    from dpgm.dataset import Dataset
    from dpgm.domain import Domain
    from dpgm.evaluation import marginal_errors, mean_tv
    from dpgm.workload import Workload

    domain = Domain.load(args.domain)
    workload = None if args.workload is None else Workload.load(args.workload).check(domain)
    real = Dataset.load(args.real, domain)
    synthetic = Dataset.load(args.synthetic, domain)
    print(f"real: {len(real)} records; synthetic: {len(synthetic)} records")
    if workload is not None:
        error = workload.error(real, synthetic)
        print(
            f"workload error ({len(workload)} sub-workloads, Sec. 5.1 of Private-PGM): {error:.4f}"
        )
        tv = np.mean(list(marginal_errors(real, synthetic, workload.cliques).values()))
        print(f"mean TV error over the workload's {len(workload)} marginals: {tv:.4f}")
    for ways in args.ways:
        if ways < 1 or ways > len(domain):
            from dpgm.errors import DpgmError

            raise DpgmError(f"--ways must be between 1 and {len(domain)}, got {ways}")
        print(f"mean TV error over all {ways}-way marginals: {mean_tv(real, synthetic, ways):.4f}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dpgm", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    synth = commands.add_parser("synth", help="fit a private model and write synthetic data")
    synth.add_argument("data", help="CSV of integer-coded records (may be .gz)")
    synth.add_argument("--domain", required=True, help="JSON {attribute: number of values}")
    synth.add_argument("--epsilon", type=float, required=True)
    synth.add_argument(
        "--delta",
        type=float,
        default=None,
        help="delta of (epsilon, delta)-DP (default: the mechanism's own; none for pure ones)",
    )
    from dpgm.mechanisms import REGISTRY

    synth.add_argument("--mechanism", choices=sorted(REGISTRY), default="mst")
    synth.add_argument(
        "--estimator",
        choices=ESTIMATORS,
        default="pgm",
        help="Private-PGM or the mechanism's original estimator",
    )
    synth.add_argument(
        "--workload",
        default=None,
        help='JSON list of attribute lists, e.g. [["age", "sex"]], or '
        '{"cliques": [...], "numeric": [...]} (default: the mechanism\'s own)',
    )
    synth.add_argument("--seed", type=int, default=None, help="reproducible noise (research only)")
    synth.add_argument(
        "--iters", type=int, default=None, help="estimation iterations (default: the mechanism's)"
    )
    synth.add_argument("--out", required=True, help="where to write the synthetic CSV")
    synth.add_argument(
        "--rows", type=int, default=None, help="synthetic records to write (default: estimated)"
    )
    synth.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    synth.set_defaults(run=_synth)

    evaluate = commands.add_parser("evaluate", help="compare synthetic data with the real data")
    evaluate.add_argument("real")
    evaluate.add_argument("synthetic")
    evaluate.add_argument("--domain", required=True)
    evaluate.add_argument("--ways", type=int, nargs="+", default=[1, 2, 3])
    evaluate.add_argument(
        "--workload",
        default=None,
        help="workload JSON (as for synth): report its error and the mean TV on its marginals",
    )
    evaluate.set_defaults(run=_evaluate)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dpgm`` command; returns the exit status."""
    from dpgm.errors import DpgmError

    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except (DpgmError, OSError) as error:
        print(f"dpgm: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
