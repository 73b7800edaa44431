"""E2 of the paper-001 note (§5.5): how the private error depends on ρ, where the √p comes
from, the cost of the paper's noise shape, and the rule for T.

* E2a: F1, p = 64, ρ ∈ {0.025, 0.1, 0.4, 1.6}: n* ∝ ρ^(−1/2) expected; error against
  n·√(ρ/p) collapses the curves of E1 and E2a.
* E2b: a fixed per-node budget ρ/p = 1/640 at p ∈ {16, 64, 256}: only polylog growth of n*.
* E2c: the exponential mechanism against report-noisy-min with the right Laplace scale
  and against the paper's printed scale (which is charged 2ρ(T−1)/T: not the ρ claimed),
  p = 64, ρ = 0.1.
* E2d: c_T ∈ {0.125, 0.25, 0.5, 1, 2} at p = 64, ρ = 0.1.

8 sampled rows per fit, 2 seeds, T from the public n. Run:
``python -m experiments.mrf_e2 [--jobs 2] [--quick] [--replot]``.
"""

from __future__ import annotations

import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from experiments._common import OUTPUT, call, finish, print_table, pyplot
from experiments._mrf import crossing, error_curve, slope, start

NS = [4_000, 8_000, 16_000, 32_000, 64_000, 128_000]
RHOS = [0.025, 0.1, 0.4, 1.6]
PER_NODE = 1 / 640
SELECTION_NS = [8_000, 32_000, 128_000]
CONSTANTS = [0.125, 0.25, 0.5, 1.0, 2.0]
SEEDS = 2
TARGET = 0.1


def main(argv: list[str] | None = None) -> None:
    parsed = start(argv, __doc__, "mrf_e2", "one seed, smaller grids", report)
    if parsed is None:
        return
    args, name = parsed
    seeds = 1 if args.quick else SEEDS
    ns = NS[:3] if args.quick else NS
    started = time.perf_counter()
    jobs = [(error_curve, {"part": "a", "p": 64, "seed": s, "ns": ns, "rho": rho})
            for rho in RHOS for s in range(seeds)]
    jobs += [(error_curve, {"part": "b", "p": p, "seed": s, "ns": ns, "rho": p * PER_NODE})
             for p in (16, 64, 256) for s in range(seeds)]
    jobs += [(error_curve, {"part": "c", "p": 64, "seed": s, "ns": SELECTION_NS, "rho": 0.1,
                            "selection": how})
             for how in ("em", "laplace", "paper") for s in range(seeds)]
    jobs += [(error_curve, {"part": "d", "p": 64, "seed": s, "ns": SELECTION_NS, "rho": 0.1,
                            "constant": c})
             for c in CONSTANTS for s in range(seeds)]
    with ProcessPoolExecutor(args.jobs) as pool:
        curves = list(pool.map(call, jobs))
    results = {"target": TARGET, "curves": curves}
    results["summary"] = summarise(curves)
    finish(name, results, started, report)


def mean(curves: list[dict], **match) -> tuple[list[int], list[float]]:
    chosen = [c for c in curves if all(c.get(k) == v for k, v in match.items())]
    ns = chosen[0]["ns"]
    return ns, [float(np.mean([c["errors"][k] for c in chosen])) for k in range(len(ns))]


def summarise(curves: list[dict]) -> dict:
    out: dict = {"a": {}, "b": {}}
    for rho in RHOS:
        ns, errors = mean(curves, part="a", rho=rho)
        out["a"][rho] = crossing(ns, errors, TARGET)
    found = {r: v for r, v in out["a"].items() if v is not None}
    out["slope a (n* against rho)"] = slope(list(found), list(found.values()))
    for p in (16, 64, 256):
        ns, errors = mean(curves, part="b", p=p)
        out["b"][p] = crossing(ns, errors, TARGET)
    found = {p: v for p, v in out["b"].items() if v is not None}
    out["slope b (n* against p, fixed rho/p)"] = slope(list(found), list(found.values()))
    return out


def report(results: dict) -> None:
    curves, summary = results["curves"], results["summary"]
    rows = []
    for rho in RHOS:
        ns, errors = mean(curves, part="a", rho=rho)
        star = summary["a"].get(rho, summary["a"].get(str(rho)))
        rows.append([f"a: p=64, rho={rho}", " ".join(f"{e:.3f}" for e in errors),
                     "-" if star is None else f"{star:,.0f}"])
    for p in (16, 64, 256):
        ns, errors = mean(curves, part="b", p=p)
        star = summary["b"].get(p, summary["b"].get(str(p)))
        rows.append([f"b: p={p}, rho/p=1/640", " ".join(f"{e:.3f}" for e in errors),
                     "-" if star is None else f"{star:,.0f}"])
    print_table(["configuration", f"mean row error, n = {curves[0]['ns']}", "n*"], rows)
    print(f"slope a: {summary['slope a (n* against rho)']}; "
          f"slope b: {summary['slope b (n* against p, fixed rho/p)']}")
    rows = []
    for how in ("em", "laplace", "paper"):
        ns, errors = mean(curves, part="c", selection=how)
        rows.append([f"c: {how}", " ".join(f"{e:.3f}" for e in errors)])
    for c in CONSTANTS:
        ns, errors = mean(curves, part="d", constant=c)
        rows.append([f"d: c_T={c}", " ".join(f"{e:.3f}" for e in errors)])
    print_table(["p = 64, rho = 0.1", f"mean row error, n = {SELECTION_NS}"], rows)
    plt = pyplot()
    if plt is None:
        return
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for rho in RHOS:
        ns, errors = mean(curves, part="a", rho=rho)
        left.loglog(np.array(ns) * np.sqrt(rho / 64), errors, "-o", label=f"p=64, ρ={rho}")
    for p in (16, 64, 256):
        ns, errors = mean(curves, part="b", p=p)
        left.loglog(np.array(ns) * np.sqrt(PER_NODE), errors, "--s", label=f"p={p}, ρ/p=1/640")
    left.set_xlabel("n·√(ρ/p)")
    left.set_ylabel("mean row error")
    left.set_title("E2a/b: collapse on n·√(ρ/p)")
    left.legend(fontsize=7)
    for how in ("em", "laplace", "paper"):
        ns, errors = mean(curves, part="c", selection=how)
        right.loglog(ns, errors, "-o", label=f"selection {how}")
    for c in CONSTANTS:
        ns, errors = mean(curves, part="d", constant=c)
        right.loglog(ns, errors, ":", label=f"c_T = {c}")
    right.set_xlabel("n")
    right.set_title("E2c/d: p = 64, ρ = 0.1")
    right.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(OUTPUT / "mrf_e2.png", dpi=120)


if __name__ == "__main__":
    main()
