"""E3 of the paper-001 note (§5.6): Ising structure recovery under (ε, δ)-DP by
propose-test-release over blocks, against the zCDP route and the non-private learner.

F1 trees, η = 0.3 known (threshold 0.15), (ε, δ) = (1, 10⁻⁶). Per (p, n_b): 60 blocks of
n_b exact records, each fitted by non-private Frank–Wolfe (T = 150) and thresholded; the
non-private success is the share of blocks that get the edge set exactly. P(PTR releases
the true edges) with m = 40 blocks is estimated from 2,000 resamples of 40 of the 60 block
answers, each scored with the exact release probability of its counts; 3 end-to-end runs
(fresh data, random blocks, ``dpgm.mrf.learn_structure``) at the smallest n_b that passes
check it. The zCDP route: private Frank–Wolfe at ρ = cdp_rho(1, 10⁻⁶) then the threshold,
all rows for p ≤ 64, 16 sampled rows for p ≥ 128 (a run counts as a success when every
sampled row's support is right: an upper bound on the success, hence a lower bound on its
n*). Table 1 predicts n* ∝ log p for (ε, δ) and ∝ √p for zCDP.

Run: ``python -m experiments.mrf_e3 [--jobs 2] [--quick] [--replot]``.
"""

from __future__ import annotations

import math
import time
import warnings
from collections import Counter
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from dpgm import Dataset
from dpgm.privacy import cdp_rho
from dpgm.privacy.stability import blocks_for, release_probability
from experiments._common import OUTPUT, call, finish, print_table, pyplot
from experiments._mrf import (
    BLOCK_STEPS,
    WIDTH,
    fit_rows,
    private_steps,
    sample_tree,
    sampled_rows,
    start,
    tree_family,
)

SIZES = [16, 32, 64, 128, 256, 512]
BLOCK_NS = [250, 375, 500, 750, 1_000, 1_500, 2_000]
LARGEST_P_BLOCK_NS = (750, 1_000, 1_500, 2_000)  # p = 512: around its step only
BLOCKS_DRAWN = 60
BLOCKS = 40
EPSILON, DELTA = 1.0, 1e-6
THRESHOLD = 0.15
RESAMPLES = 2_000
ZCDP_NS = [4_000, 8_000, 16_000, 32_000, 64_000, 128_000]
ZCDP_RUNS = 4
PASS = 2 / 3


def edges_key(couplings: np.ndarray) -> str:
    rows, cols = np.nonzero(np.triu(np.abs(couplings) > THRESHOLD, k=1))
    return ",".join(f"{i}-{j}" for i, j in zip(rows, cols, strict=True))


def block_answers(task: tuple[int, int]) -> dict:
    """The 60 blocks' edge sets at (p, n_b), and the truth's."""
    from dpgm.mrf import learn_ising

    p, size = task
    a, parent = tree_family(p, 0)
    data = sample_tree(a, parent, BLOCKS_DRAWN * size, size)
    answers = []
    start = time.perf_counter()
    for b in range(BLOCKS_DRAWN):
        block = Dataset(data.records[b * size:(b + 1) * size], data.domain)
        answers.append(edges_key(learn_ising(block, None, WIDTH, steps=BLOCK_STEPS).model.A))
    return {"p": p, "n_b": size, "truth": edges_key(a), "answers": answers,
            "seconds_per_block": (time.perf_counter() - start) / BLOCKS_DRAWN}


def ptr_success(answers: list[str], truth: str, blocks: int, epsilon: float, delta: float,
                rng: np.random.Generator) -> float:
    """P(PTR over ``blocks`` blocks releases ``truth``), blocks drawn from ``answers``."""
    total = 0.0
    for _ in range(RESAMPLES):
        chosen = [answers[k] for k in rng.integers(len(answers), size=blocks)]
        ranked = sorted(Counter(chosen).items(), key=lambda item: (-item[1], item[0]))
        if ranked[0][0] != truth:
            continue
        others = ranked[1][1] if len(ranked) > 1 else 0
        total += release_probability(ranked[0][1], others, epsilon, delta)
    return total / RESAMPLES


def end_to_end(task: tuple[int, int, int]) -> dict:
    from dpgm.mrf import learn_structure

    p, size, seed = task
    a, parent = tree_family(p, 0)
    data = sample_tree(a, parent, BLOCKS * size, 100 + seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = learn_structure(data, EPSILON, DELTA, WIDTH, 2 * THRESHOLD, blocks=BLOCKS,
                                steps=BLOCK_STEPS, rng=seed)
    truth = [(f"x{i}", f"x{j}") for i, j in zip(*np.nonzero(np.triu(a, 1)), strict=True)]
    return {"p": p, "n_b": size, "seed": seed,
            "success": found.edges is not None and sorted(found.edges) == sorted(truth),
            "released": found.edges is not None}


def zcdp_run(task: tuple[int, int, int]) -> dict:
    p, n, seed = task
    a, parent = tree_family(p, 0)
    data = sample_tree(a, parent, n, 200 + seed)
    rho = cdp_rho(EPSILON, DELTA)
    rows = list(range(p)) if p <= 64 else sampled_rows(p, 16, seed)
    estimate = fit_rows(data, rows, rho=rho, steps=private_steps(n, rho, p), seed=seed)
    if p <= 64:  # the whole algorithm: symmetrise, threshold, compare the edge sets
        full = (estimate + estimate.T) / 2.0
        success = edges_key(full) == edges_key(a)
    else:  # every sampled row's support
        success = bool(np.all((np.abs(estimate) > THRESHOLD) == (np.abs(a[rows]) > 0)))
    return {"p": p, "n": n, "seed": seed, "success": success}


def main(argv: list[str] | None = None) -> None:
    parsed = start(argv, __doc__, "mrf_e3", "p = 16, 64; fewer runs", report)
    if parsed is None:
        return
    args, name = parsed
    sizes = [16, 64] if args.quick else SIZES
    started = time.perf_counter()
    with ProcessPoolExecutor(args.jobs) as pool:
        tasks = [(p, b) for p in sizes for b in BLOCK_NS if p < 512 or b in LARGEST_P_BLOCK_NS]
        blocks = list(pool.map(call, [(block_answers, t) for t in tasks]))
        rng = np.random.default_rng(0)
        for entry in blocks:
            entry["nonprivate"] = float(np.mean([a == entry["truth"] for a in entry["answers"]]))
            entry["ptr"] = ptr_success(entry["answers"], entry["truth"], BLOCKS, EPSILON,
                                       DELTA, rng)
        passing = {}
        for p in sizes:
            good = [e["n_b"] for e in blocks if e["p"] == p and e["ptr"] >= PASS]
            if good:
                passing[p] = min(good)
        checks = list(pool.map(call, [(end_to_end, (p, b, s)) for p, b in passing.items()
                                      for s in range(1 if args.quick else 3)]))
        runs = list(pool.map(call, [(zcdp_run, (p, n, s)) for p in sizes for n in ZCDP_NS
                                    for s in range(2 if args.quick else ZCDP_RUNS)]))
    results = {"epsilon": EPSILON, "delta": DELTA, "blocks": BLOCKS, "threshold": THRESHOLD,
               "blocks_drawn": [{k: v for k, v in e.items() if k != "answers"}
                                for e in blocks],
               "end_to_end": checks, "zcdp": runs,
               "privacy_sweep": privacy_sweep(blocks, rng)}
    results["summary"] = summarise(results)
    finish(name, results, started, report)


def privacy_sweep(blocks: list[dict], rng) -> list[dict]:
    """n*_PTR at p = 64 for other (ε, δ), reusing the block answers; m = blocks_for(ε, δ)."""
    out = []
    for epsilon in (0.5, 1.0, 2.0):
        for delta in (1e-4, 1e-6, 1e-9):
            m = blocks_for(epsilon, delta)
            passing = [e["n_b"] for e in blocks if e["p"] == 64
                       and ptr_success(e["answers"], e["truth"], m, epsilon, delta, rng) >= PASS]
            out.append({"epsilon": epsilon, "delta": delta, "blocks": m,
                        "n_star": None if not passing else m * min(passing)})
    return out


def first_passing(points: list[tuple[int, float]]) -> int | None:
    good = [n for n, rate in sorted(points) if rate >= PASS]
    return good[0] if good else None


def summarise(results: dict) -> dict:
    sizes = sorted({e["p"] for e in results["blocks_drawn"]})
    out = {}
    for p in sizes:
        drawn = [e for e in results["blocks_drawn"] if e["p"] == p]
        ptr_nb = first_passing([(e["n_b"], e["ptr"]) for e in drawn])
        block_nb = first_passing([(e["n_b"], e["nonprivate"]) for e in drawn])
        runs = [r for r in results["zcdp"] if r["p"] == p]
        rates = [(n, float(np.mean([r["success"] for r in runs if r["n"] == n])))
                 for n in sorted({r["n"] for r in runs})]
        zcdp = first_passing(rates)
        out[p] = {"n_star_ptr": None if ptr_nb is None else BLOCKS * ptr_nb,
                  "n_star_nonprivate": block_nb, "n_star_zcdp": zcdp,
                  "ratio_zcdp_ptr": None if not (zcdp and ptr_nb) else zcdp / (BLOCKS * ptr_nb)}
    return out


def report(results: dict) -> None:
    rows = []
    for e in results["blocks_drawn"]:
        rows.append([e["p"], e["n_b"], f"{e['nonprivate']:.2f}", f"{e['ptr']:.3f}",
                     f"{e['seconds_per_block']:.2f}"])
    print_table(["p", "n_b", "block success (non-private)", "P(PTR releases E), m = 40",
                 "s per block"], rows)
    for check in results["end_to_end"]:
        print(f"end to end p={check['p']} n_b={check['n_b']} seed={check['seed']}: "
              f"released={check['released']} success={check['success']}")
    rows = []
    for p in sorted({r["p"] for r in results["zcdp"]}):
        rates = []
        for n in ZCDP_NS:
            runs = [r["success"] for r in results["zcdp"] if r["p"] == p and r["n"] == n]
            rates.append(f"{sum(runs)}/{len(runs)}")
        rows.append([p, " ".join(rates)])
    print_table(["p", f"zCDP route successes, n = {ZCDP_NS}"], rows)
    rows = []
    for p, s in results["summary"].items():
        rows.append([p, s["n_star_nonprivate"], s["n_star_ptr"], s["n_star_zcdp"],
                     "-" if s["ratio_zcdp_ptr"] is None else f"{s['ratio_zcdp_ptr']:.2f}"])
    print_table(["p", "n* non-private (one block)", "n* PTR (40 blocks)", "n* zCDP",
                 "zCDP / PTR"], rows)
    for entry in results["privacy_sweep"]:
        print(f"p=64 eps={entry['epsilon']} delta={entry['delta']:g}: m={entry['blocks']}, "
              f"n*_PTR={entry['n_star']}")
    plt = pyplot()
    if plt is None:
        return
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    sizes = sorted({e["p"] for e in results["blocks_drawn"]})
    colours = plt.cm.viridis(np.linspace(0, 0.9, len(sizes)))
    for p, colour in zip(sizes, colours, strict=True):
        drawn = sorted((e["n_b"], e["ptr"], e["nonprivate"]) for e in results["blocks_drawn"]
                       if e["p"] == p)
        left.semilogx([BLOCKS * d[0] for d in drawn], [d[1] for d in drawn], "-o",
                      color=colour, label=f"PTR p={p}")
        left.semilogx([d[0] for d in drawn], [d[2] for d in drawn], ":", color=colour)
        runs = [r for r in results["zcdp"] if r["p"] == p]
        ns = sorted({r["n"] for r in runs})
        left.semilogx(ns, [np.mean([r["success"] for r in runs if r["n"] == n]) for n in ns],
                      "--s", color=colour)
    left.axhline(PASS, color="grey", lw=0.8)
    left.set_xlabel("n (records in all)")
    left.set_ylabel("P(exact recovery)")
    left.set_title("E3: PTR (solid), zCDP (dashed), one block (dotted)")
    left.legend(fontsize=7)
    summary = {int(p): s for p, s in results["summary"].items()}
    for key, style in (("n_star_ptr", "-o"), ("n_star_zcdp", "--s"),
                       ("n_star_nonprivate", ":^")):
        found = {p: s[key] for p, s in summary.items() if s[key]}
        right.loglog(list(found), list(found.values()), style, label=key[7:])
    ps = np.array(sizes, dtype=float)
    right.loglog(ps, 16_000 * np.log(ps) / math.log(16), color="grey", lw=0.8,
                 label="∝ log p")
    right.loglog(ps, 16_000 * np.sqrt(ps / 16), color="grey", lw=0.8, ls=":",
                 label="∝ √p")
    right.set_xlabel("p")
    right.set_ylabel("n* (success ≥ 2/3)")
    right.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(OUTPUT / "mrf_e3.png", dpi=120)


if __name__ == "__main__":
    main()
