"""How long ResidualPlanner takes to *plan* (this times the plan alone, from public facts:
no data are read): all 3-way marginals of 100 attributes of 2 to 10 values each (seeded
sizes), for each loss (sum, max-variance, expected error). Target: under 60 s each.

    python -m benchmarks.residual_planner [--attributes 100] [--ways 3]
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


if __name__ == "__main__":
    main()
