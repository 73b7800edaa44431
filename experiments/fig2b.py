"""Fig. 2b of Private-PGM: time per iteration of estimation as the number of attributes grows.

d attributes of size 10 and random records; every triple of adjacent attributes
(i, i+1, i+2) is measured (identity queries, Gaussian noise σ = 10). Three estimators:
Private-PGM (Algorithm 2, the accelerated method), multiplicative weights on the full
table (App. E.2, all measurements in one update) and LSMR (ordinary least squares) on
the full table. The full-table baselines stop where their table (10^d cells, several
copies) no longer fits in ``--max-gb`` (default: half this machine's memory); the table
shows where.

    python -m experiments.fig2b [--dims 3 4 5 6 7 8 9 10 30 100 300 1000] [--max-gb GB]
"""

from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np

from dpgm import Dataset, Domain, Measurement, estimate
from experiments._common import OUTPUT, print_table, pyplot

SIZE = 10
SIGMA = 10.0
ROWS = 10_000
DIMS = (3, 4, 5, 6, 7, 8, 9, 10, 30, 100, 300, 1000)
#: copies of the full table a baseline keeps at once (the table, its update, temporaries)
TABLE_COPIES = 4


def measurements_for(d: int, seed: int = 0) -> tuple[Domain, list[Measurement]]:
    """The synthetic problem: random records, noisy adjacent-triple marginals."""
    rng = np.random.default_rng(seed)
    domain = Domain([f"x{i}" for i in range(d)], [SIZE] * d)
    data = Dataset(rng.integers(0, SIZE, size=(ROWS, d)), domain)
    cliques = [tuple(domain.attrs[i : i + 3]) for i in range(d - 2)]
    return domain, [
        Measurement(c, data.marginal(c).ravel() + rng.normal(0, SIGMA, SIZE**3), SIGMA)
        for c in cliques
    ]


def physical_memory_gb() -> float:
    """This machine's memory in GB."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30


def format_gb(log10_gb: float) -> str:
    """A memory size given by its log10 in GB, readable however large."""
    if log10_gb < 6:
        return f"{10**log10_gb:.3g} GB"
    exponent = math.floor(log10_gb)
    return f"{10 ** (log10_gb - exponent):.3g}e+{exponent} GB"


def per_iteration(stamps: list[float]) -> float:
    """Median seconds between consecutive iterations (steady state)."""
    gaps = np.diff(stamps)
    return float(np.median(gaps[len(gaps) // 4 :])) if gaps.size else float("nan")


def time_pgm(domain, measurements, iters: int) -> float:
    stamps: list[float] = []
    estimate(
        domain,
        measurements,
        total=ROWS,
        method="accelerated",
        iters=iters,
        callback=lambda it, loss: stamps.append(time.perf_counter()),
    )
    return per_iteration(stamps)


def time_mw(domain, measurements, iters: int) -> float:
    from dpgm.estimation.multiplicative_weights import multiplicative_weights

    stamps: list[float] = []
    table = None
    for _ in range(iters + 1):
        table = multiplicative_weights(domain, measurements, ROWS, iters=1, table=table)
        stamps.append(time.perf_counter())
    return per_iteration(stamps)


def time_lsmr(domain, measurements, iters: int) -> float:
    from dpgm.estimation.least_squares import full_table_operator

    operator, _ = full_table_operator(domain, measurements)
    x = np.full(operator.shape[1], ROWS / operator.shape[1])
    stamps = [time.perf_counter()]
    for _ in range(iters):
        operator.rmatvec(operator.matvec(x))  # the work of one LSMR iteration
        stamps.append(time.perf_counter())
    return per_iteration(stamps)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", type=int, nargs="+", default=list(DIMS))
    parser.add_argument("--iters", type=int, default=20, help="iterations timed per method")
    parser.add_argument(
        "--max-gb",
        type=float,
        default=physical_memory_gb() / 2,
        help="memory the baselines may use (default: half this machine's, %(default).1f)",
    )
    args = parser.parse_args(argv)

    start = time.perf_counter()
    rows, curves = [], {"PGM": [], "MW": [], "LSMR": []}
    first_too_big = None  # the first d whose full table does not fit
    for d in args.dims:
        domain, measurements = measurements_for(d)
        # in log10 because 10^1000 cells overflow a float
        log10_gb = d * math.log10(SIZE) + math.log10(TABLE_COPIES * 8 / 2**30)
        row = [str(d), format_gb(log10_gb)]
        for name, timer in (("PGM", time_pgm), ("MW", time_mw), ("LSMR", time_lsmr)):
            if name != "PGM" and log10_gb > math.log10(args.max_gb):
                row.append("does not fit")
                first_too_big = d if first_too_big is None else min(first_too_big, d)
                continue
            seconds = timer(domain, measurements, args.iters)
            curves[name].append((d, seconds))
            row.append(f"{seconds * 1e3:.3g} ms")
        rows.append(row)
        print(" ".join(row), flush=True)
    header = ["d", "full table needs", "PGM", "MW", "LSMR"]
    print("\ntime per iteration (median of the steady state)")
    table = print_table(header, rows)
    OUTPUT.mkdir(parents=True, exist_ok=True)
    (OUTPUT / "fig2b.md").write_text(table + "\n")

    plt = pyplot()
    if plt is not None:
        fig, ax = plt.subplots(figsize=(5, 3.5))
        for name, points in curves.items():
            if points:
                ax.plot(*zip(*points), marker="o", label=name)
        if first_too_big is not None:
            ax.axvline(
                first_too_big,
                linestyle=":",
                color="gray",
                label=f"full table > {args.max_gb:.3g} GB",
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("number of attributes")
        ax.set_ylabel("seconds per iteration")
        ax.legend()
        fig.tight_layout()
        fig.savefig(OUTPUT / "fig2b.png", dpi=120)
    print(f"total {time.perf_counter() - start:.0f} s; results in {OUTPUT}")


if __name__ == "__main__":
    main()
