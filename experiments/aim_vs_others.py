"""AIM and MST against the other mechanisms (all with PGM) on the Fig. 1 workloads.

Median workload error over runs at one ε; AIM and MST are (ε, δ = 1e-9)-DP, DualQuery
(ε, 1e-3)-DP, and MWEM, PrivBayes and HDMM pure ε-DP. AIM is given the workload (it
selects adaptively from it); the others' use of it is as in Fig. 1. The PGM runs of
Fig. 1 (same workloads, ε, seeds and options) are reused from experiments/output/fig1.json
when it has them, unless ``--rerun`` is given.

    python -m experiments.aim_vs_others [--runs 3] [--jobs 2] [--datasets adult child alarm]
"""

from __future__ import annotations

import argparse
import json
import time

from experiments._common import (
    DATASETS,
    OUTPUT,
    RUNS,
    format_error,
    load_runs,
    mechanism_options,
    median_error,
    print_table,
    pyplot,
    run_all,
    save_results,
)

MECHANISMS = ("aim", "mst", "mwem", "privbayes", "hdmm", "dualquery")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS)
    parser.add_argument("--mechanisms", nargs="+", default=list(MECHANISMS), choices=MECHANISMS)
    parser.add_argument("--rerun", action="store_true", help="do not reuse Fig. 1's runs")
    args = parser.parse_args(argv)

    start = time.perf_counter()
    earlier = (
        {}
        if args.rerun
        else {
            (r.dataset, r.mechanism, r.epsilon, r.seed, json.dumps(r.extra.get("options"))): r
            for r in load_runs("fig1")
            if r.estimator == "pgm"
        }
    )
    runs, tasks = [], []
    for name in args.datasets:
        for mech in args.mechanisms:
            options = mechanism_options(mech, "pgm")
            for seed in range(args.runs):
                key = (name, mech, args.epsilon, seed, json.dumps(options))
                if key in earlier:
                    runs.append(earlier[key])
                else:
                    tasks.append((name, mech, "pgm", args.epsilon, seed, options))
    if runs:
        print(f"reusing {len(runs)} PGM runs of Fig. 1 (experiments/output/fig1.json)")
    runs += run_all(tasks, args.jobs)
    errors = {
        (name, mech): median_error([r for r in runs if (r.dataset, r.mechanism) == (name, mech)])
        for name in args.datasets
        for mech in args.mechanisms
    }
    rows = [
        [mech] + [format_error(errors[name, mech]) for name in args.datasets]
        for mech in args.mechanisms
    ]
    print(f"\nworkload error with PGM at epsilon={args.epsilon:g}, median of {args.runs} runs")
    table = print_table(["mechanism", *args.datasets], rows)
    save_results("aim_vs_others", runs, table)

    plt = pyplot()
    if plt is not None:
        fig, ax = plt.subplots(figsize=(7, 3.5))
        width = 0.8 / len(args.mechanisms)
        for k, mech in enumerate(args.mechanisms):
            xs = [
                i + (k - len(args.mechanisms) / 2 + 0.5) * width for i in range(len(args.datasets))
            ]
            ax.bar(xs, [errors[n, mech] or 0.0 for n in args.datasets], width, label=mech)
        ax.set_xticks(range(len(args.datasets)), args.datasets)
        ax.set_yscale("log")
        ax.set_ylabel("workload error")
        ax.legend(fontsize=8)
        fig.tight_layout()
        OUTPUT.mkdir(parents=True, exist_ok=True)
        fig.savefig(OUTPUT / "aim_vs_others.png", dpi=120)
    print(f"total {time.perf_counter() - start:.0f} s; results in {OUTPUT}")


if __name__ == "__main__":
    main()
