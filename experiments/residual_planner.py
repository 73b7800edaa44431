"""ResidualPlanner against HDMM on Adult's workload (Private-PGM Fig. 1: 15 random
triples, prefix ranges over the numeric attributes), ε = 1: workload error, median of
the runs, each mechanism with its original estimator and with Private-PGM.

HDMM is pure ε-DP (Laplace); ResidualPlanner is ρ-zCDP at (ε, δ = 1e-9), once with each
loss (``--losses``): "sum" (the total variance of the workload's queries) and "error"
(the expected workload error of its raw answers). Both plan for the workload's queries:
the prefix ranges of the numeric attributes, measured with the prefix-range strategy.

    python -m experiments.residual_planner [--runs 3] [--jobs 2] [--epsilon 1] [--marginals]
        [--losses sum error]

``--marginals``: the same 15 triples as marginals (no prefix ranges): both mechanisms
plan for their cells.
"""

from __future__ import annotations

import argparse
import time

from experiments._common import (
    OUTPUT,
    RUNS,
    format_error,
    load_dataset,
    mechanism_options,
    median_error,
    paper_workload,
    print_table,
    run_all,
    save_results,
)

LOSSES = ("sum", "error")
ESTIMATORS = ("original", "pgm")
DELTA = 1e-9


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--iters", type=int, default=200, help="PGM iterations (both)")
    parser.add_argument("--losses", nargs="+", default=list(LOSSES),
                        help="ResidualPlanner's losses, one row each")
    parser.add_argument("--marginals", action="store_true",
                        help="the triples as marginals, without prefix ranges")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    data, numeric = load_dataset("adult")
    workload, seed = paper_workload(data, numeric)
    if args.marginals:
        from dpgm.workload import Workload

        workload = Workload(workload.cliques)
    print(f"adult: workload seed {seed}, {len(workload)} triples, prefix ranges over "
          f"{sorted(workload.numeric)}")
    # each row: its label, the mechanism and its options but the estimator's
    variants = [("hdmm", "hdmm", {})] + [
        (f"residual-planner (loss={loss})", "residual-planner", {"delta": DELTA, "loss": loss})
        for loss in args.losses]
    tasks = []
    for _, mech, extra in variants:
        for est in ESTIMATORS:
            options = {**mechanism_options("hdmm", est, args.iters), **extra}
            tasks += [("adult", mech, est, args.epsilon, s, options, workload.to_json())
                      for s in range(args.runs)]
    runs = run_all(tasks, args.jobs)
    rows = []
    for label, mech, extra in variants:
        for est in ESTIMATORS:
            mine = [r for r in runs if (r.mechanism, r.estimator) == (mech, est)
                    and all(r.extra["options"].get(k) == v for k, v in extra.items())]
            seconds = sum(r.seconds for r in mine) / len(mine)
            errors = ", ".join(format_error(r.error) if r.error is not None else "failed"
                               for r in mine)
            rows.append([label, est, format_error(median_error(mine)), errors,
                         f"{seconds:.0f}"])
    what = "marginals only" if args.marginals else "prefix ranges over the numeric columns"
    print(f"\nworkload error on Adult at epsilon={args.epsilon:g} ({what}), median of "
          f"{args.runs} runs")
    table = print_table(["mechanism", "estimator", "workload error (median)", "each run",
                         "s per run"], rows)
    save_results("residual_planner" + ("_marginals" if args.marginals else ""), runs, table)
    print(f"total {time.perf_counter() - start:.0f} s; results in {OUTPUT}")


if __name__ == "__main__":
    main()
