"""E1 of the paper-001 note (§5.4): Ising parameter error against n and p under zCDP.

F1 trees (public λ = 1.5), p ∈ {16, 32, 64, 128, 256}, ρ = 0.1 in all, private Frank–Wolfe
on 8 sampled rows per (p, seed) with T from the public n (c_T = 0.5), n from 4k to 128k;
the same Frank–Wolfe without privacy (T = 300) from 250 to 16k. n*(p) is the n at which
the mean row error reaches 0.1 (log–log interpolation). The theory (Thm. 3.8) predicts
n* ∝ √p·log²p privately and ∝ log p without privacy. Also: the full Alg. 2 (every row,
symmetrised, the paper's max |A − Â|) at p ≤ 64, to compare with the row mean.

Run: ``python -m experiments.mrf_e1 [--jobs 2] [--quick] [--replot]``.
"""

from __future__ import annotations

import time
import warnings
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from experiments._common import OUTPUT, call, finish, print_table, pyplot
from experiments._mrf import (
    WIDTH,
    crossing,
    error_curve,
    private_steps,
    sample_tree,
    slope,
    start,
    tree_family,
)

SIZES = [16, 32, 64, 128, 256]
PRIVATE_NS = [4_000, 8_000, 16_000, 32_000, 64_000, 128_000]
NONPRIVATE_NS = [250, 500, 1_000, 2_000, 4_000, 8_000, 16_000]
SEEDS = 2
RHO = 0.1
TARGET = 0.1


def full_fit(task: tuple[int, int, int]) -> dict:
    """The whole Alg. 2 (all rows, symmetrised) at public n: the paper's metric."""
    from dpgm.mrf import learn_ising

    p, n, seed = task
    a, parent = tree_family(p, seed)
    data = sample_tree(a, parent, n, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimate = learn_ising(data, RHO, WIDTH, steps=private_steps(n, RHO, p), rng=seed)
    rows = np.abs(estimate.couplings - a).max(axis=1)
    return {"p": p, "n": n, "seed": seed, "full_max": float(np.abs(estimate.model.A - a).max()),
            "row_mean": float(rows.mean())}


def main(argv: list[str] | None = None) -> None:
    parsed = start(argv, __doc__, "mrf_e1", "p = 16, 32 and one seed", report)
    if parsed is None:
        return
    args, name = parsed
    sizes, seeds = (SIZES[:2], 1) if args.quick else (SIZES, SEEDS)
    started = time.perf_counter()
    jobs = [(error_curve, {"p": p, "seed": s, "ns": PRIVATE_NS, "rho": RHO})
            for p in sizes for s in range(seeds)]
    jobs += [(error_curve, {"p": p, "seed": s, "ns": NONPRIVATE_NS, "rho": None})
             for p in sizes for s in range(seeds)]
    jobs += [(full_fit, (p, n, s)) for p in sizes if p <= 64 for n in (16_000, 64_000)
             for s in range(seeds)]
    with ProcessPoolExecutor(args.jobs) as pool:
        done = list(pool.map(call, jobs))
    results = {"rho": RHO, "target": TARGET, "width": WIDTH,
               "curves": [d for d in done if "errors" in d],
               "full": [d for d in done if "full_max" in d]}
    results["summary"] = summarise(results)
    finish(name, results, started, report)


def mean_curve(curves: list[dict], p: int, private: bool) -> tuple[list[int], list[float]]:
    chosen = [c for c in curves if c["p"] == p and (c["rho"] is not None) == private]
    ns = chosen[0]["ns"]
    return ns, [float(np.mean([c["errors"][k] for c in chosen])) for k in range(len(ns))]


def summarise(results: dict) -> dict:
    sizes = sorted({c["p"] for c in results["curves"]})
    out = {"n_star_private": {}, "n_star_nonprivate": {}, "n_star_nonprivate_0.05": {}}
    for p in sizes:
        ns, errors = mean_curve(results["curves"], p, True)
        out["n_star_private"][p] = crossing(ns, errors, TARGET)
        ns, errors = mean_curve(results["curves"], p, False)
        out["n_star_nonprivate"][p] = crossing(ns, errors, TARGET)
        out["n_star_nonprivate_0.05"][p] = crossing(ns, errors, 0.05)
    for key in list(out):
        found = {p: v for p, v in out[key].items() if v is not None}
        out[f"slope {key}"] = slope(list(found), list(found.values()))
    private = out["n_star_private"]
    if private.get(16) and private.get(max(sizes)):
        # n*·√(ρ/p) should grow at most like log²p
        out["normalised ratio"] = (private[max(sizes)] * (RHO / max(sizes)) ** 0.5) / (
            private[16] * (RHO / 16) ** 0.5)
    return out


def report(results: dict) -> None:
    summary = results["summary"]
    rows = []
    for p in sorted({c["p"] for c in results["curves"]}):
        ns, errors = mean_curve(results["curves"], p, True)
        nps, np_errors = mean_curve(results["curves"], p, False)
        star = summary["n_star_private"][p] or summary["n_star_private"].get(str(p))
        rows.append([p, " ".join(f"{e:.3f}" for e in errors),
                     " ".join(f"{e:.3f}" for e in np_errors),
                     "-" if star is None else f"{star:,.0f}"])
    print_table(["p", f"private error, n = {PRIVATE_NS}", f"non-private, n = {NONPRIVATE_NS}",
                 "n* private"], rows)
    for key in ("slope n_star_private", "slope n_star_nonprivate",
                "slope n_star_nonprivate_0.05", "normalised ratio"):
        print(f"{key}: {summary.get(key)}")
    for entry in results["full"]:
        print(f"full Alg. 2 p={entry['p']} n={entry['n']} seed={entry['seed']}: "
              f"max |A - Â_sym| {entry['full_max']:.3f}, row mean {entry['row_mean']:.3f}")
    plt = pyplot()
    if plt is None:
        return
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    sizes = sorted({c["p"] for c in results["curves"]})
    colours = plt.cm.viridis(np.linspace(0, 0.9, len(sizes)))
    for p, colour in zip(sizes, colours, strict=True):
        ns, errors = mean_curve(results["curves"], p, True)
        left.loglog(ns, errors, "-o", color=colour, label=f"p = {p}, private")
        ns, errors = mean_curve(results["curves"], p, False)
        left.loglog(ns, errors, "--", color=colour, label=f"p = {p}, non-private")
    left.axhline(TARGET, color="grey", lw=0.8)
    left.set_xlabel("n")
    left.set_ylabel("mean row error max_j |Â_ij − A_ij|")
    left.set_title(f"E1: F1 trees, ρ = {RHO}")
    left.legend(fontsize=7)
    for key, style in (("n_star_private", "-o"), ("n_star_nonprivate", "--s")):
        found = {int(p): v for p, v in summary[key].items() if v is not None}
        fitted = summary["slope " + key]
        right.loglog(list(found), list(found.values()), style,
                     label=f"{key[7:]} (slope {'-' if fitted is None else f'{fitted:.2f}'})")
    found = {int(p): v for p, v in summary["n_star_private"].items() if v is not None}
    if found:
        ps = np.array(sorted(found))
        theory = np.sqrt(ps) * np.log(ps) ** 2
        right.loglog(ps, theory * found[ps[0]] / theory[0], ":", color="grey",
                     label="√p·log²p (scaled)")
    right.set_xlabel("p")
    right.set_ylabel(f"n* (error {TARGET})")
    right.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(OUTPUT / "mrf_e1.png", dpi=120)


if __name__ == "__main__":
    main()
