"""Bernstein et al. (paper 000), Fig. 2: KL to the truth against N and ε, every method.

The reduced protocol R3 of the implementation note (``specs/cgm-000.md`` §5.2), for the
two model families of the paper: a third-order chain and a connected Erdős–Rényi graph
G(10, 0.3), 10 attributes of K = 10 values, Dirichlet(1) edge potentials (one true model
per family). ε ∈ {0.1, 1} at N ∈ {10³, 10⁴, 10⁵}, and ε = 0.01 at N = 10⁵; 2 populations ×
2 noise draws per cell (the paper: 5 × 5). Methods, each scored by the exact KL(p ‖ p̂):

* CGM: CGM-EM (dual E-step, θ₀ = 0, discrepancy stop, at most 500 iterations);
* naive MLE on the simplex-projected noisy tables for λ ∈ {10⁻³, 1, 10, 100, 1000} (count
  units): λ = 1 is dpgm's a-priori default, the note's check (i) uses λ = 10⁻³, and the
  best λ per cell is chosen in hindsight on KL to the truth — an oracle, NOT private;
* PSGD (DP-SGD, δ = 1/N, public N as in the paper): a 2 × 2 × 2 grid (lot rate q ∈ {0.01,
  0.05}, epochs ∈ {1, 5}, learning rate ∈ {1, 10}, clip 1) per cell, the best chosen on
  a separate validation population by KL to the truth (the paper's tuning, NOT private);
  "not attainable" where the noise multiplier would exceed 50 (the note's A4);
* non-private MLE (λ = 10⁻⁶) and the random (Dirichlet) estimator (λ = N/1000, so that
  the random model does not sharpen as N grows: λ in count units would);
* beyond the paper: Private-PGM (``dpgm.estimate``, L2 loss, 1000 iterations) on the
  same noisy tables, a model on the same cliques.

Wall-clock seconds per fit give the run-time ratios (C11). One cell per ε (chain, N = 10⁴)
also traces CGM's KL against the EM iteration, run to 300 iterations (D4).
Everything to ``experiments/output/cgm_fig2.json``, the plot to ``cgm_fig2.png``.

    python -m experiments.cgm_fig2 [--jobs 2] [--quick]
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
import warnings
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from experiments._common import OUTPUT, call, finish, print_table, pyplot
from experiments.cgm_fig1 import noisy_tables

K = 10
FAMILIES = {"chain": 0, "er": 1}  # family -> seed of its true model (and graph)
CELLS = [(eps, n) for eps in (0.1, 1.0) for n in (1_000, 10_000, 100_000)] + [(0.01, 100_000)]
POPULATIONS, NOISES = 2, 2
LAMBDAS = (1e-3, 1.0, 10.0, 100.0, 1000.0)
A_PRIORI = 1.0
EM_CAP = 500
PGM_ITERS = 1000
PSGD_GRID = list(itertools.product((0.01, 0.05), (1.0, 5.0), (1.0, 10.0)))
PSGD_CLIP, PSGD_NOISE_CAP = 1.0, 50.0
TRACE_ITERS = 300
VALIDATION = 99  # the population PSGD's grid is chosen on


def truth(family: str):
    """The family's edges and true model (fixed seeds: public, made-up models)."""
    from dpgm.datasets.synthetic import connected_erdos_renyi, dirichlet_model, third_order_chain

    seed = FAMILIES[family]
    edges = third_order_chain(10) if family == "chain" else connected_erdos_renyi(10, 0.3, rng=seed)
    return edges, dirichlet_model(edges, K, rng=seed)


def population(family: str, n: int, index: int):
    edges, model = truth(family)
    return edges, model, model.sample(n, rng=np.random.default_rng([FAMILIES[family], index, n]))


def timed(function, *args, **kwargs):
    start = time.perf_counter()
    out = function(*args, **kwargs)
    return out, time.perf_counter() - start


def trial(task: tuple[str, float, int, int, int]) -> dict:
    """Every ε-DP method and the baselines on one population and one noise draw."""
    from dpgm.cgm import cgm_em, naive_mle, projected_targets
    from dpgm.estimation import Measurement, estimate
    from dpgm.evaluation import kl_divergence
    from dpgm.evaluation.baselines import dirichlet_baseline, nonprivate_mle

    family, epsilon, n, pop, noise = task
    edges, model, data = population(family, n, pop)
    noisy = noisy_tables(data, edges, epsilon, np.random.default_rng([pop, noise, n, 7]))
    out = {"family": family, "epsilon": epsilon, "N": n, "population": pop, "noise": noise}
    targets = projected_targets(noisy, float(n))
    out["naive"] = {}
    for lam in LAMBDAS:
        fitted, seconds = timed(naive_mle, model.domain, targets, float(n), penalty=lam)
        out["naive"][str(lam)] = {"kl": kl_divergence(model, fitted), "seconds": seconds}
    (fitted, em_trace), seconds = timed(cgm_em, model.domain, noisy, float(n),
                                        len(edges) / epsilon, max_iters=EM_CAP)
    out["cgm"] = {"kl": kl_divergence(model, fitted), "seconds": seconds,
                  "iterations": len(em_trace.residuals), "stopped": em_trace.stopped}
    measured = [Measurement(c, t.ravel(), np.sqrt(2.0) * len(edges) / epsilon)
                for c, t in noisy.items()]
    fitted, seconds = timed(estimate, model.domain, measured, total=float(n), iters=PGM_ITERS)
    out["pgm"] = {"kl": kl_divergence(model, fitted), "seconds": seconds}
    if noise == 0:  # the population's baselines do not depend on the noise draw
        fitted, seconds = timed(nonprivate_mle, data, edges)
        out["nonprivate"] = {"kl": kl_divergence(model, fitted), "seconds": seconds}
        fitted = dirichlet_baseline(model.domain, edges, float(n), penalty=n / 1000,
                                    rng=np.random.default_rng([pop, 11]))
        out["random"] = {"kl": kl_divergence(model, fitted)}
    return out


def psgd_run(family: str, epsilon: float, n: int, pop: int, seed: int, config) -> dict:
    from dpgm.errors import PrivacyParameterError
    from dpgm.evaluation import kl_divergence
    from dpgm.mechanisms import PSGD
    from dpgm.privacy.sgd import sgd_noise_multiplier

    q, epochs, rate = config
    edges, model, data = population(family, n, pop)
    mechanism = PSGD(epsilon, 1.0 / n, sampling_rate=q, epochs=epochs, learning_rate=rate,
                     clip=PSGD_CLIP, total=n, largest_noise=PSGD_NOISE_CAP)
    try:
        fitted, seconds = timed(mechanism.fit, data, edges,
                                np.random.default_rng([seed, pop, n, 13]))
    except PrivacyParameterError as error:  # the noise multiplier would exceed the cap
        return {"attainable": False, "reason": str(error)}
    sigma = sgd_noise_multiplier(epsilon, 1.0 / n, q, mechanism.steps)  # what the run used
    return {"attainable": True, "kl": kl_divergence(model, fitted), "seconds": seconds,
            "sigma": sigma}


def psgd_cell(task: tuple[str, float, int]) -> dict:
    """PSGD's grid on the validation population, then the chosen setting on each trial."""
    family, epsilon, n = task
    grid = [dict(config=list(c), **psgd_run(family, epsilon, n, VALIDATION, 0, c))
            for c in PSGD_GRID]
    usable = [g for g in grid if g["attainable"]]
    out = {"family": family, "epsilon": epsilon, "N": n, "grid": grid, "trials": []}
    if not usable:
        out["attainable"] = False
        return out
    best = min(usable, key=lambda g: g["kl"])
    out["attainable"], out["chosen"] = True, best["config"]
    for pop in range(POPULATIONS):
        for noise in range(NOISES):
            out["trials"].append(psgd_run(family, epsilon, n, pop, 1 + noise, best["config"]))
    return out


def kl_trace(epsilon: float) -> dict:
    """CGM's KL to the truth after each EM iteration (chain, N = 10⁴), run past its stop."""
    from dpgm.cgm import cgm_em
    from dpgm.evaluation import kl_divergence

    n = 10_000
    edges, model, data = population("chain", n, 0)
    noisy = noisy_tables(data, edges, epsilon, np.random.default_rng([0, 0, n, 7]))
    curve = []
    _, em_trace = cgm_em(model.domain, noisy, float(n), len(edges) / epsilon, stop="converge",
                         max_iters=TRACE_ITERS,
                         monitor=lambda t, m: curve.append(kl_divergence(model, m)))
    scale = len(edges) / epsilon
    budget = scale * sum(t.size for t in noisy.values())
    stop = next((t + 1 for t, r in enumerate(em_trace.residuals) if r <= budget), None)
    return {"epsilon": epsilon, "N": n, "kl": curve, "residual": em_trace.residuals,
            "discrepancy_stop": stop}


def mean(values) -> float:
    values = [v for v in values if v is not None]
    return float(np.mean(values)) if values else float("nan")


def summarise(results: dict) -> list[dict]:
    """Per (family, ε, N): mean KL of each method, the best-in-hindsight λ, seconds."""
    rows = []
    for family in FAMILIES:
        for epsilon, n in CELLS:
            trials = [t for t in results["trials"]
                      if (t["family"], t["epsilon"], t["N"]) == (family, epsilon, n)]
            naive = {lam: mean(t["naive"][str(lam)]["kl"] for t in trials) for lam in LAMBDAS}
            best = min(naive, key=naive.get)
            psgd = next(c for c in results["psgd"]
                        if (c["family"], c["epsilon"], c["N"]) == (family, epsilon, n))
            psgd_kl = (mean(t["kl"] for t in psgd["trials"] if t["attainable"])
                       if psgd["attainable"] else None)
            rows.append({
                "family": family, "epsilon": epsilon, "N": n,
                "cgm": mean(t["cgm"]["kl"] for t in trials),
                "cgm_median": float(np.median([t["cgm"]["kl"] for t in trials])),
                "cgm_iterations": mean(t["cgm"]["iterations"] for t in trials),
                "naive_a_priori": naive[A_PRIORI], "naive_1e-3": naive[1e-3],
                "naive_best": naive[best], "naive_best_lambda": best,
                "naive_median_a_priori": float(np.median(
                    [t["naive"][str(A_PRIORI)]["kl"] for t in trials])),
                "psgd": psgd_kl, "psgd_config": psgd.get("chosen"),
                "psgd_sigma": (psgd["trials"][0].get("sigma") if psgd["attainable"] else None),
                "psgd_grid_median_validation": (float(np.median(
                    [g["kl"] for g in psgd["grid"] if g["attainable"]]))
                    if psgd["attainable"] else None),
                "pgm": mean(t["pgm"]["kl"] for t in trials),
                "nonprivate": mean(t["nonprivate"]["kl"] for t in trials if "nonprivate" in t),
                "random": mean(t["random"]["kl"] for t in trials if "random" in t),
                "seconds_naive": mean(t["naive"][str(A_PRIORI)]["seconds"] for t in trials),
                "seconds_cgm": mean(t["cgm"]["seconds"] for t in trials),
                "seconds_pgm": mean(t["pgm"]["seconds"] for t in trials),
                "seconds_psgd": (mean(t["seconds"] for t in psgd["trials"] if t["attainable"])
                                 if psgd["attainable"] else None),
            })
    return rows


def checks(rows: list[dict]) -> dict:
    """The note's pass criteria of R3 (i)-(iv), and what is reported without one."""
    by = {(r["family"], r["epsilon"], r["N"]): r for r in rows}
    decreasing = {}
    for family in FAMILIES:
        for epsilon in (0.1, 1.0):
            small, large = by[(family, epsilon, 1_000)], by[(family, epsilon, 100_000)]
            for method in ("cgm", "naive_a_priori", "naive_best", "psgd"):
                if small[method] is not None and large[method] is not None:
                    decreasing[f"{family} eps={epsilon} {method}"] = large[method] < small[method]
    private = ("cgm", "naive_a_priori", "naive_best", "psgd")  # the paper's
    return {
        "i_cgm_below_naive_1e-3_every_cell": all(r["cgm"] < r["naive_1e-3"] for r in rows),
        "i_cgm_below_naive_a_priori_cells": sum(r["cgm"] < r["naive_a_priori"] for r in rows),
        "ii_private_kl_decreases_1e3_to_1e5": decreasing,
        "iii_nonprivate_below_cgm_every_cell": all(r["nonprivate"] < r["cgm"] for r in rows),
        "iii_private_below_random_every_cell": {
            m: all(r[m] < r["random"] for r in rows if r[m] is not None) for m in private},
        "iv_naive_below_psgd_cells": [
            f"{r['family']} eps={r['epsilon']} N={r['N']}: "
            f"{r['naive_a_priori'] < r['psgd']} (a priori) {r['naive_best'] < r['psgd']} (best)"
            for r in rows if r["psgd"] is not None],
        "cgm_below_naive_best_cells": sum(r["cgm"] < r["naive_best"] for r in rows),
        "cgm_lowest_private_cells": sum(
            r["cgm"] <= min(r[m] for m in private if r[m] is not None) for r in rows),
        "pgm_below_cgm_cells": sum(r["pgm"] < r["cgm"] for r in rows),
        "pgm_lowest_private_cells": sum(
            r["pgm"] <= min(r[m] for m in private if r[m] is not None) for r in rows),
        "cells": len(rows),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--quick", action="store_true",
                        help="one trial per cell at N = 10³ only (a smoke run of the harness)")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")  # seeded noise: research runs, said once here
    global CELLS, POPULATIONS, NOISES, PSGD_GRID, TRACE_ITERS
    if args.quick:
        CELLS = [(eps, n) for eps, n in CELLS if n == 1_000]
        POPULATIONS, NOISES, PSGD_GRID, TRACE_ITERS = 1, 1, PSGD_GRID[:1], 5
        # a cell's "decrease in N" check needs N = 10⁵ too: the quick run skips it
    started = time.perf_counter()
    trial_jobs = [(trial, (f, e, n, p, z)) for f in FAMILIES for e, n in CELLS
                  for p in range(POPULATIONS) for z in range(NOISES)]
    psgd_jobs = [(psgd_cell, (f, e, n)) for f in FAMILIES for e, n in CELLS]
    trace_jobs = [(kl_trace, e) for e in (0.1, 1.0)]
    jobs = trace_jobs + trial_jobs + psgd_jobs
    # the big cells first, so that the pool is not left with one long job at the end
    jobs.sort(key=lambda job: -(job[1][2] if isinstance(job[1], tuple) else 10**6))
    done = []
    with ProcessPoolExecutor(args.jobs) as pool:
        for k, out in enumerate(pool.map(call, jobs), 1):
            done.append(out)
            if k % 10 == 0:
                print(f"{k}/{len(jobs)} jobs, {time.perf_counter() - started:.0f} s", flush=True)
    results = {
        "protocol": "the note's R3 (reduced): K=10, 2 populations x 2 noise draws; "
                    "lambda in count units; PSGD tuned on a validation population",
        "trials": [d for d in done if "naive" in d],
        "psgd": [d for d in done if "grid" in d],
        "traces": [d for d in done if "discrepancy_stop" in d],
    }
    if args.quick:
        print(f"quick run: {len(results['trials'])} trials, "
              f"{time.perf_counter() - started:.0f} s")
        return
    rows = summarise(results)
    results["summary"], results["checks"] = rows, checks(rows)
    report(results)
    finish("cgm_fig2", results, started, plot)


def _fmt(value) -> str:
    return "n/a" if value is None else f"{value:.3g}"


def report(results: dict) -> None:
    rows = results["summary"]
    print_table(
        ["family", "eps", "N", "CGM", "naive l=1", "naive l=1e-3", "naive best (l)", "PSGD",
         "PSGD grid median", "Private-PGM", "non-private", "random", "EM iters"],
        [[r["family"], f"{r['epsilon']:g}", f"{r['N']:.0e}", _fmt(r["cgm"]),
          _fmt(r["naive_a_priori"]), _fmt(r["naive_1e-3"]),
          f"{_fmt(r['naive_best'])} ({r['naive_best_lambda']:g})", _fmt(r["psgd"]),
          _fmt(r["psgd_grid_median_validation"]), _fmt(r["pgm"]),
          _fmt(r["nonprivate"]), _fmt(r["random"]), f"{r['cgm_iterations']:.0f}"]
         for r in rows])
    print("\nrun time relative to naive MLE (lambda = 1), mean over cells")
    for family in FAMILIES:
        mine = [r for r in rows if r["family"] == family]
        cgm = mean(r["seconds_cgm"] / r["seconds_naive"] for r in mine)
        psgd = mean(r["seconds_psgd"] / r["seconds_naive"] for r in mine
                    if r["seconds_psgd"] is not None)
        pgm = mean(r["seconds_pgm"] / r["seconds_naive"] for r in mine)
        print(f"{family}: CGM {cgm:.2f}x, PSGD {psgd:.2f}x, Private-PGM {pgm:.2f}x")
    for trace in results["traces"]:
        curve = trace["kl"]
        best = int(np.argmin(curve))
        stop = trace["discrepancy_stop"]
        print(f"KL vs EM iteration, eps={trace['epsilon']}: best {curve[best]:.3g} at "
              f"{best + 1}, discrepancy stop at {stop} "
              f"({_fmt(curve[stop - 1]) if stop else 'n/a'}), last {curve[-1]:.3g} "
              f"at {len(curve)}")
    print(json.dumps(results["checks"], indent=1))


def plot(results: dict) -> None:
    plt = pyplot()
    if plt is None:
        return
    rows = results["summary"]
    epsilons = (0.1, 1.0)
    fig, axes = plt.subplots(2, 3, figsize=(15, 8))
    styles = {"cgm": "CGM", "pgm": "Private-PGM", "naive_a_priori": "naive MLE (λ=1)",
              "naive_best": "naive MLE (best λ, not private)", "psgd": "PSGD",
              "nonprivate": "non-private MLE", "random": "random"}
    for i, family in enumerate(FAMILIES):
        for j, epsilon in enumerate(epsilons):
            ax = axes[i, j]
            mine = [r for r in rows if r["family"] == family and r["epsilon"] == epsilon]
            for key, label in styles.items():
                points = [(r["N"], r[key]) for r in mine if r[key] is not None]
                if points:
                    ax.loglog(*zip(*points), "o-", label=label)
            ax.set(xlabel="N", ylabel="KL", title=f"{family}, ε={epsilon}")
            if i == j == 0:
                ax.legend(fontsize=7)
    for trace in results["traces"]:
        ax = axes[0, 2]
        ax.semilogy(range(1, len(trace["kl"]) + 1), trace["kl"],
                    label=f"ε={trace['epsilon']}")
        if trace["discrepancy_stop"]:
            ax.axvline(trace["discrepancy_stop"], ls=":", color="grey")
    axes[0, 2].set(xlabel="EM iteration", ylabel="KL", title="CGM, chain, N=1e4 (stop dotted)")
    axes[0, 2].legend(fontsize=7)
    axes[1, 2].axis("off")
    fig.tight_layout()
    fig.savefig(OUTPUT / "cgm_fig2.png", dpi=120)


if __name__ == "__main__":
    main()
