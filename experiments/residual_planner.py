"""ResidualPlanner against HDMM on Adult's workload (Private-PGM Fig. 1: 15 random
triples, prefix ranges over the numeric attributes), ε = 1: workload error, median of
the runs, each mechanism with its original estimator and with Private-PGM.

HDMM is pure ε-DP (Laplace); ResidualPlanner is ρ-zCDP at (ε, δ = 1e-9). ResidualPlanner
plans for the marginals (every cell's variance); prefix ranges are answered from them.

    python -m experiments.residual_planner [--runs 3] [--jobs 2] [--epsilon 1] [--marginals]

``--marginals``: the same 15 triples as marginals (no prefix ranges), the workload
ResidualPlanner plans for.
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

MECHANISMS = ("hdmm", "residual-planner")
ESTIMATORS = ("original", "pgm")
DELTA = 1e-9


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--iters", type=int, default=200, help="PGM iterations (both)")
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
    tasks = []
    for mech in MECHANISMS:
        for est in ESTIMATORS:
            options = mechanism_options("hdmm", est, args.iters)
            if mech == "residual-planner":
                options["delta"] = DELTA
            tasks += [("adult", mech, est, args.epsilon, s, options, workload.to_json())
                      for s in range(args.runs)]
    runs = run_all(tasks, args.jobs)
    rows = []
    for mech in MECHANISMS:
        for est in ESTIMATORS:
            mine = [r for r in runs if (r.mechanism, r.estimator) == (mech, est)]
            seconds = sum(r.seconds for r in mine) / len(mine)
            rows.append([mech, est, format_error(median_error(mine)), f"{seconds:.0f}"])
    what = "marginals only" if args.marginals else "prefix ranges over the numeric columns"
    print(f"\nworkload error on Adult at epsilon={args.epsilon:g} ({what}), median of "
          f"{args.runs} runs")
    table = print_table(["mechanism", "estimator", "workload error", "s per run"], rows)
    save_results("residual_planner" + ("_marginals" if args.marginals else ""), runs, table)
    print(f"total {time.perf_counter() - start:.0f} s; results in {OUTPUT}")


if __name__ == "__main__":
    main()
