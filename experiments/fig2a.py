"""Fig. 2a of Private-PGM: HDMM+PGM against HDMM+LLS on Adult as ε varies.

HDMM's strategy does not depend on ε or on the data, so every ε measures the same
queries; only the noise and the estimator change. Median workload error over runs.

    python -m experiments.fig2a [--runs 3] [--jobs 2] [--epsilons 0.1 0.3 1 3 10]
"""

from __future__ import annotations

import argparse
import time

from experiments._common import (
    ITERS,
    OUTPUT,
    RUNS,
    format_error,
    median_error,
    print_table,
    pyplot,
    run_all,
    save_results,
)

EPSILONS = (0.1, 0.3, 1.0, 3.0, 10.0)
ESTIMATORS = {"original": {"least_squares": "local"}, "pgm": {}}
LABELS = {"original": "HDMM+LLS", "pgm": "HDMM+PGM"}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument(
        "--iters", type=int, default=ITERS["hdmm"], help="PGM iterations (default %(default)s)"
    )
    parser.add_argument("--epsilons", type=float, nargs="+", default=list(EPSILONS))
    args = parser.parse_args(argv)

    start = time.perf_counter()
    tasks = []
    for epsilon in args.epsilons:
        for est, options in ESTIMATORS.items():
            options = dict(options)
            if est == "pgm":
                options["iters"] = args.iters
            tasks += [("adult", "hdmm", est, epsilon, seed, options) for seed in range(args.runs)]
    runs = run_all(tasks, args.jobs)

    rows, curves = [], {est: [] for est in ESTIMATORS}
    for epsilon in args.epsilons:
        medians = {
            est: median_error([r for r in runs if (r.estimator, r.epsilon) == (est, epsilon)])
            for est in ESTIMATORS
        }
        for est in ESTIMATORS:
            curves[est].append(medians[est])
        lls, pgm = medians["original"], medians["pgm"]
        ratio = f"{lls / pgm:.1f}x" if lls is not None and pgm is not None else "-"
        rows.append([f"{epsilon:g}", format_error(lls), format_error(pgm), ratio])
    print(f"\nHDMM on Adult, workload error, median of {args.runs} runs")
    table = print_table(["epsilon", "HDMM+LLS", "HDMM+PGM", "LLS / PGM"], rows)
    save_results("fig2a", runs, table)

    plt = pyplot()
    if plt is not None:
        fig, ax = plt.subplots(figsize=(5, 3.5))
        for est, values in curves.items():
            points = [(e, v) for e, v in zip(args.epsilons, values) if v is not None]
            ax.plot(*zip(*points), marker="o", label=LABELS[est])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("epsilon")
        ax.set_ylabel("workload error")
        ax.legend()
        fig.tight_layout()
        OUTPUT.mkdir(parents=True, exist_ok=True)
        fig.savefig(OUTPUT / "fig2a.png", dpi=120)
    print(f"total {time.perf_counter() - start:.0f} s; results in {OUTPUT}")


if __name__ == "__main__":
    main()
