"""How long ResidualPlanner takes to *plan* (this times the plan alone, from public facts:
no data are read): all 3-way marginals of 100 attributes of 2 to 10 values each (seeded
sizes), for each loss (sum, max-variance, expected error). Target: under 60 s each.
Then a workload that asks prefix ranges of one numeric attribute of each of ``--ranged``
sizes, paired with a binary attribute: most of that plan's time is the attribute's
prefix-range strategy (``dpgm.residuals.prefix_strategy``, computed once per size).

    python -m benchmarks.residual_planner [--attributes 100] [--ways 3] [--ranged 100 400]
"""

from __future__ import annotations

import argparse
import time
from itertools import combinations

import numpy as np

from dpgm import Domain
from dpgm.residuals import LOSSES, plan_residuals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attributes", type=int, default=100)
    parser.add_argument("--ways", type=int, default=3)
    parser.add_argument("--ranged", type=int, nargs="*", default=[100, 200, 400, 800],
                        metavar="SIZE")
    args = parser.parse_args()
    sizes = np.random.default_rng(0).integers(2, 11, args.attributes)
    domain = Domain([f"x{i}" for i in range(args.attributes)], sizes.tolist())
    workload = list(combinations(domain.attrs, args.ways))
    print(f"{args.attributes} attributes (2 to 10 values), all {len(workload):,} "
          f"{args.ways}-way marginals")
    for loss in LOSSES:
        start = time.perf_counter()
        plan = plan_residuals(domain, workload, rho=1.0, loss=loss)
        seconds = time.perf_counter() - start
        print(f"loss={loss}: {len(plan.subsets):,} residuals planned in {seconds:.1f} s "
              f"(loss value {plan.value:.6g} at rho=1)")
    for size in args.ranged:
        domain = Domain(["number", "flag"], [size, 2])
        start = time.perf_counter()
        plan_residuals(domain, [("number", "flag")], rho=1.0, ranged=["number"])
        print(f"prefix ranges of {size} values: planned in {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
