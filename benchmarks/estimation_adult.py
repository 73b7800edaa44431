"""Benchmark: Private-PGM estimation on the adult data, from a fresh process.

Measures every 1-way marginal and ten 2-way marginals of adult with Gaussian noise
(σ = 10, seed 0) and fits a model with each method (mirror_descent, accelerated). In two
passes of fresh child processes (``_adult_child.py``, same interpreter as this script):

1. one run of ``--iters`` iterations per method, recording the loss
   ``½ Σ ‖(Q μ − y)/σ‖²`` at every callback: loss after 100 … 5000 iterations, the best
   loss, the TV error of the final model on the measured cliques and on 20 random
   unmeasured attribute pairs;
2. ``--repeats`` fresh runs per method, each told the best loss as its target and run for
   as many iterations as pass 1 needed to come within 1 % of it: the time from process
   start (Python start-up, imports, data load, measuring, estimation) to within 1 % of the
   best loss, and the time to answer the 20 pairs with ``model.marginal``.

With the ``bench`` extra (``mbi``, the reference implementation of Private-PGM) every run
is repeated with mbi on the same noisy measurements: ``MirrorDescent`` for mirror_descent
and ``DualAveraging`` (the paper's Algorithm 2) for accelerated. mbi calls back once per
fused block of 50 iterations, so its loss is known only every 50 iterations.

Run: ``.venv-bench/bin/python benchmarks/estimation_adult.py`` (dpgm and reference) or
``.venv/bin/python benchmarks/estimation_adult.py`` (dpgm only). The last line printed
is one line of JSON with every figure.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from _adult_child import MEASURED_PAIRS, REFERENCE_ESTIMATOR, SIGMA
from _common import fmt, have_mbi, median, print_json_last, print_table, ratio, run_child, verdict

HERE = Path(__file__).resolve().parent
CHILD = str(HERE / "_adult_child.py")
METHODS = ("mirror_descent", "accelerated")
CHECKPOINTS = (100, 250, 500, 1000, 2000, 5000)
TARGET_LOSS_S = 2.0  # within 1 % of the best loss, from a fresh process
TARGET_PAIRS_S = 0.5  # 20 unmeasured pairs
N_PAIRS = 20
PHASES = ("t_imported", "t_loaded", "t_measured")
RATIO_KEYS = (
    "within_1pct_s",
    "to_reference_best_s",
    "answered_s",
    "query_s",
    "full_run_s",
    "peak_rss_mb",
)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--data-dir",
        default=str(HERE.parent.parent / "shared" / "data" / "adult"),
        help="folder with adult.csv and adult-domain.json (default: ../shared/data/adult)",
    )
    parser.add_argument("--iters", type=int, default=5000, help="iterations of pass 1")
    parser.add_argument("--repeats", type=int, default=3, help="fresh runs per method in pass 2")
    parser.add_argument("--pair-seed", type=int, default=1, help="seed of the unmeasured pairs")
    parser.add_argument("--no-reference", action="store_true", help="skip mbi even if installed")
    parser.add_argument("--ref-x64", action="store_true", help="run mbi with JAX in float64")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per child process")
    return parser.parse_args()


def unmeasured_pairs(attrs: list[str], count: int, seed: int) -> list[tuple[str, str]]:
    """``count`` attribute pairs, none of them measured, drawn with ``default_rng(seed)``."""
    measured = {frozenset(p) for p in MEASURED_PAIRS}
    pool = [
        (a, b)
        for i, a in enumerate(attrs)
        for b in attrs[i + 1 :]
        if frozenset((a, b)) not in measured
    ]
    picks = np.random.default_rng(seed).choice(len(pool), size=count, replace=False)
    return [pool[k] for k in sorted(picks)]


def loss_at(run: dict, iteration: int) -> list | None:
    """``[loss, seconds]`` at the last callback at or before ``iteration``."""
    best = None
    for it, loss, t in run.get("trajectory", []):
        if it <= iteration:
            best = [loss, t]
    return best


def first_within(run: dict, threshold: float) -> list | None:
    """``[iteration, seconds]`` of the first callback with loss ≤ ``threshold``."""
    for it, loss, t in run.get("trajectory", []):
        if loss <= threshold:
            return [it, t]
    return None


def per_iteration_ms(run: dict, impl: str) -> float | None:
    """Steady-state milliseconds per iteration: dpgm the median step after iteration 20,
    mbi the mean over its blocks of 50 after the first (which holds the compilation)."""
    traj = run.get("trajectory", [])
    if impl == "dpgm":
        return median([1e3 * (b[2] - a[2]) for a, b in zip(traj, traj[1:]) if a[0] >= 20])
    if len(traj) < 2:
        return None
    return 1e3 * (traj[-1][2] - traj[0][2]) / (traj[-1][0] - traj[0][0])


def label(impl: str, method: str) -> str:
    return f"dpgm {method}" if impl == "dpgm" else f"mbi {REFERENCE_ESTIMATOR[method]}"


def main() -> None:
    args = parse_args()
    data_dir = Path(args.data_dir).resolve()
    attrs = list(json.loads((data_dir / "adult-domain.json").read_text()))
    pairs = unmeasured_pairs(attrs, N_PAIRS, args.pair_seed)
    impls = ["dpgm"]
    if args.no_reference:
        reference_note = "reference skipped (--no-reference)"
    elif not have_mbi():
        reference_note = "reference skipped: mbi is not installed (pip install -e '.[bench]')"
    else:
        impls.append("mbi")
        reference_note = "reference: mbi 2.0 (JAX, " + ("float64)" if args.ref_x64 else "float32)")
    runs = [(impl, method) for impl in impls for method in METHODS]
    base = {"data_dir": str(data_dir), "pairs": pairs, "x64": args.ref_x64}

    print("Private-PGM estimation on adult")
    print(f"data: {data_dir}; σ = {SIGMA:g}; 14 one-way + {len(MEASURED_PAIRS)} two-way marginals")
    print(reference_note)

    # -- pass 1: one long run per method -------------------------------------------------
    print(f"\npass 1: one fresh process per method, {args.iters} iterations ...", flush=True)
    first = {}
    for impl, method in runs:
        spec = dict(base, impl=impl, method=method, iters=args.iters, record=True)
        first[impl, method] = run_child(CHILD, spec, args.timeout)
        print(f"  {label(impl, method)}: {_status(first[impl, method])}", flush=True)
    ok = {k: r for k, r in first.items() if "error" not in r}
    if not ok:
        raise SystemExit("every pass-1 run failed; see the errors above")
    best_of = {k: min([r["final_loss"]] + [x[1] for x in r["trajectory"]]) for k, r in ok.items()}
    best_dpgm = min((v for (i, _), v in best_of.items() if i == "dpgm"), default=None)
    best_ref = min((v for (i, _), v in best_of.items() if i == "mbi"), default=None)
    best = min(best_of.values())
    threshold = 1.01 * best

    # -- pass 2: fresh runs told the target ----------------------------------------------
    print(f"\npass 2: {args.repeats} fresh process(es) per method, target 1.01 × {best:.2f} ...")
    second = {}
    for key in ok:
        hit = first_within(ok[key], threshold)
        iters = hit[0] if hit else args.iters
        spec = dict(base, impl=key[0], method=key[1], iters=iters, target=best)
        repeats = args.repeats if hit else 1  # not reached: one run for the query figures
        second[key] = [run_child(CHILD, spec, args.timeout) for _ in range(repeats)]
        print(f"  {label(*key)} ({iters} iterations): {_status(*second[key])}", flush=True)

    figures = _summarise(args, runs, first, second, best_of, best, pairs)
    figures.update(best_loss=best, best_loss_dpgm=best_dpgm, best_loss_reference=best_ref)
    figures["reference"] = reference_note
    _print_report(figures, runs)
    print_json_last(figures)


def _status(*results: dict) -> str:
    errors = [r["error"] for r in results if "error" in r]
    if errors:
        return "FAILED: " + errors[0]
    return "done in " + ", ".join(f"{r['parent_wall_s']:.1f} s" for r in results)


def _summarise(args, runs, first, second, best_of, best, pairs) -> dict:
    """Every figure of both passes, keyed by run label."""
    threshold = 1.01 * best
    best_dpgm = min(v for (i, _), v in best_of.items() if i == "dpgm")
    best_ref = min((v for (i, _), v in best_of.items() if i == "mbi"), default=None)
    out = {
        "sigma": SIGMA,
        "iters": args.iters,
        "repeats": args.repeats,
        "unmeasured_pairs": [list(p) for p in pairs],
        "targets": {"within_1pct_s": TARGET_LOSS_S, "pairs_s": TARGET_PAIRS_S},
        "runs": {},
    }
    for impl, method in runs:
        r1 = first[impl, method]
        entry = {"implementation": impl, "method": method}
        out["runs"][label(impl, method)] = entry
        if "error" in r1:
            entry["error"] = r1["error"]
            continue
        to_ref = None if best_ref is None else first_within(r1, 1.01 * best_ref)
        entry.update(
            loss_at={str(n): loss_at(r1, n) for n in CHECKPOINTS if n <= args.iters},
            best_loss=best_of[impl, method],
            final_loss=r1["final_loss"],
            total=r1["total"],
            noise_sha1=r1["noise_sha1"],
            full_run_s=r1["t_estimated"],
            full_run_phases_s={k: r1[k] for k in PHASES},
            first_within_1pct=first_within(r1, threshold),
            per_iteration_ms=per_iteration_ms(r1, impl),
            within_1pct_of_best_dpgm=first_within(r1, 1.01 * best_dpgm),
            within_1pct_of_best_reference=to_ref,
            to_reference_best_s=None if to_ref is None else to_ref[1],
            tv_measured_mean=float(np.mean(r1["tv_measured"])),
            tv_pairs_mean=float(np.mean(r1["tv_pairs"])),
            peak_rss_mb_full_run=r1["peak_rss_mb"],
        )
        good = [r for r in second[impl, method] if "error" not in r]
        reached = [r["reached"][1] for r in good if r["reached"]]
        entry.update(
            target_runs=len(good),
            target_iterations=good[0]["reached"][0] if good and good[0]["reached"] else None,
            within_1pct_s=median(reached),
            within_1pct_s_all=reached,
            answered_s=median([r["t_answered"] for r in good]),
            query_s=median([r["query_s"] for r in good]),
            query_s_all=[r["query_s"] for r in good],
            phases_s={k: median([r[k] for r in good]) for k in PHASES},
            tv_measured_mean_at_target=float(np.mean(good[0]["tv_measured"])) if good else None,
            tv_pairs_mean_at_target=float(np.mean(good[0]["tv_pairs"])) if good else None,
            peak_rss_mb=median([r["peak_rss_mb"] for r in good]),
        )
    for method in METHODS:
        ours = out["runs"].get(label("dpgm", method), {})
        ref = out["runs"].get(label("mbi", method))
        if ref is None:
            continue
        ours["ratio_to_reference"] = {k: ratio(ours.get(k), ref.get(k)) for k in RATIO_KEYS}
    return out


def _print_report(figures: dict, runs) -> None:
    entries = figures["runs"]
    names = [label(*r) for r in runs]
    print("\nnoise checksums (identical inputs):", {n: entries[n].get("noise_sha1") for n in names})
    print("estimated totals:", {n: fmt(entries[n].get("total"), ".1f") for n in names})

    print("\nloss ½ Σ ‖(Q μ − y)/σ‖² after n iterations (seconds since process start)")
    rows = []
    for n in CHECKPOINTS:
        if n > figures["iters"]:
            continue
        row = [n]
        for name in names:
            point = entries[name].get("loss_at", {}).get(str(n))
            row.append("n/a" if point is None else f"{point[0]:.2f} ({point[1]:.2f} s)")
        rows.append(row)
    rows.append(["ms/iteration"] + [fmt(entries[n].get("per_iteration_ms"), ".3f") for n in names])
    rows.append(["final model"] + [fmt(entries[n].get("final_loss"), ".2f") for n in names])
    rows.append(["best seen"] + [fmt(entries[n].get("best_loss"), ".2f") for n in names])
    print_table(["iterations"] + names, rows)
    best = figures["best_loss"]
    print(
        f"best loss: {best:.2f} overall; dpgm {fmt(figures['best_loss_dpgm'], '.2f')}, reference"
        f" {fmt(figures['best_loss_reference'], '.2f')}; within 1 %: ≤ {1.01 * best:.2f}"
    )

    print("\npass 1: seconds since process start (iterations) to within 1 % of each best loss")
    keys = ["within_1pct_of_best_dpgm"]
    headers = ["run", f"≤ 1.01 × {figures['best_loss_dpgm']:.2f} (dpgm best)"]
    if figures["best_loss_reference"] is not None:
        keys.append("within_1pct_of_best_reference")
        headers.append(f"≤ 1.01 × {figures['best_loss_reference']:.2f} (reference best)")
    rows = []
    for name in names:
        cells = [entries[name].get(k) for k in keys]
        rows.append(
            [name] + ["not reached" if c is None else f"{c[1]:.2f} s ({c[0]})" for c in cells]
        )
    print_table(headers, rows)

    print("\nfresh process → loss within 1 % of the best (median of pass-2 runs)")
    rows = []
    for name in names:
        e = entries[name]
        ph = e.get("phases_s", {})
        rows.append(
            [
                name,
                fmt(e.get("target_iterations"), "d"),
                fmt(e.get("within_1pct_s"), ".2f", " s"),
                "/".join(fmt(x, ".2f") for x in e.get("within_1pct_s_all", [])) or "not reached",
                f"{fmt(ph.get('t_imported'), '.2f')}/{fmt(ph.get('t_loaded'), '.2f')}"
                f"/{fmt(ph.get('t_measured'), '.2f')}",
                verdict(e.get("within_1pct_s"), TARGET_LOSS_S),
                fmt(e.get("full_run_s"), ".2f", " s"),
            ]
        )
    print_table(
        [
            "run",
            "iterations",
            "time",
            "all runs",
            "imported/loaded/measured at",
            f"< {TARGET_LOSS_S:g} s",
            f"{figures['iters']} its, start→model",
        ],
        rows,
    )

    print(f"\nmean TV error (½‖p−q‖₁) vs the true data; {N_PAIRS} unmeasured pairs (seeded)")
    rows = []
    for name in names:
        e = entries[name]
        rows.append(
            [
                name,
                fmt(e.get("tv_measured_mean"), ".4f"),
                fmt(e.get("tv_pairs_mean"), ".4f"),
                fmt(e.get("tv_measured_mean_at_target"), ".4f"),
                fmt(e.get("tv_pairs_mean_at_target"), ".4f"),
            ]
        )
    print_table(
        [
            "run",
            f"measured ({figures['iters']} its)",
            f"unmeasured ({figures['iters']} its)",
            "measured (1 % model)",
            "unmeasured (1 % model)",
        ],
        rows,
    )

    print(f"\n{N_PAIRS} unmeasured pairs with model.marginal, fresh process (1 % model)")
    rows = []
    for name in names:
        e = entries[name]
        rows.append(
            [
                name,
                fmt(e.get("query_s"), ".3f", " s"),
                verdict(e.get("query_s"), TARGET_PAIRS_S),
                fmt(e.get("answered_s"), ".2f", " s"),
                fmt(e.get("peak_rss_mb"), ".0f", " MiB"),
            ]
        )
    print_table(
        ["run", "queries alone", f"< {TARGET_PAIRS_S:g} s", "start → all answered", "peak RSS"],
        rows,
    )

    ratios = {n: e["ratio_to_reference"] for n, e in entries.items() if "ratio_to_reference" in e}
    if ratios:
        print("\nratio dpgm / reference (< 1: dpgm faster or smaller; to_reference_best_s:")
        print("pass-1 time to within 1 % of the reference's best loss)")
        rows = [[n] + [fmt(r[k], ".3f") for k in RATIO_KEYS] for n, r in ratios.items()]
        print_table(["run", *RATIO_KEYS], rows)
    print(
        "\nnotes: mbi calls back every 50 iterations (its loss is computed by this script from "
        "the marginals it hands over, the state's iterate: for MirrorDescent the marginals before "
        "the block's last step, for DualAveraging the averaged marginals); its estimate() returns "
        "only after DualAveraging's L-BFGS fit of potentials to those marginals."
    )


if __name__ == "__main__":
    main()
