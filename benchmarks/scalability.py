"""Benchmark: how estimation scales with the number of attributes, from a fresh process.

For each ``d`` in ``--dims``: ``d`` attributes of size 10, 10,000 uniformly random records
(seeded), every 3-way marginal of adjacent attributes ``(i, i+1, i+2)`` measured with
Gaussian noise σ = 10, then 200 iterations of estimation (``--method``: accelerated by
default, mirror_descent, or both) in a fresh child process (``_scalability_child.py``, same
interpreter as this script). Printed per ``d``: the end-to-end time (process start to
model), the estimation time, the steady-state time per iteration (median over iterations
after the 20th) and the peak memory (the child's maximum RSS).

With the ``bench`` extra (``mbi``, the reference implementation of Private-PGM) each ``d``
is also run with mbi on the same noisy measurements (``MirrorDescent`` for mirror_descent,
``DualAveraging`` for accelerated). mbi runs its iterations in fused blocks of 50 and calls
back after each, so its time per iteration is the mean over the blocks after the first
(which holds the JIT compilation). By default the mbi child stops after its 200th
iteration, before ``estimate`` turns the iterate into a model (for DualAveraging an L-BFGS
fit of potentials that takes far longer than the iterations: ``--ref-finalize`` keeps it).
Once mbi fails or times out at some ``d``, larger ``d`` are not tried.

Run: ``.venv-bench/bin/python benchmarks/scalability.py [--dims 3,10,30] [--method both]``.
The last line printed is one line of JSON with every figure.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from _common import fmt, have_mbi, median, print_json_last, print_table, ratio, run_child, verdict
from _scalability_child import REFERENCE_ESTIMATOR

HERE = Path(__file__).resolve().parent
CHILD = str(HERE / "_scalability_child.py")
TARGET_D = 1000
TARGET_S = 60.0
TARGET_MIB = 1e9 / 2**20  # 1 GB
STEADY_AFTER = 20


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dims", default="3,10,30,100,300,1000", help="comma-separated d")
    parser.add_argument(
        "--method", default="accelerated", choices=["accelerated", "mirror_descent", "both"]
    )
    parser.add_argument("--iters", type=int, default=200)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-reference", action="store_true", help="skip mbi even if installed")
    parser.add_argument("--ref-x64", action="store_true", help="run mbi with JAX in float64")
    parser.add_argument("--ref-finalize", action="store_true", help="let mbi's estimate return")
    parser.add_argument("--ref-max-d", type=int, default=1000, help="largest d to run mbi on")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per child process")
    return parser.parse_args()


def per_iteration(times: list, impl: str) -> float | None:
    """Steady-state seconds per iteration from the callback time stamps."""
    if impl == "dpgm":
        steps = [b[1] - a[1] for a, b in zip(times, times[1:]) if a[0] >= STEADY_AFTER]
        return median(steps)
    if len(times) < 2:  # mbi: blocks of 50 after the first (compilation)
        return None
    return (times[-1][1] - times[0][1]) / (times[-1][0] - times[0][0])


def summarise(result: dict, impl: str) -> dict:
    """The figures of one child run."""
    if "error" in result:
        return {"error": result["error"]}
    times = result["times"]
    done = times[-1][1] if times else None
    return {
        "end_to_end_s": result["t_estimated"],
        "iterations_done_s": done,
        "estimation_s": None if done is None else done - result["t_measured"],
        "setup_s": result["t_measured"],
        "first_iteration_s": None if not times else times[0][1] - result["t_measured"],
        "per_iteration_s": per_iteration(times, impl),
        "peak_rss_mib": result["peak_rss_mb"],
        "last_loss": result["last_loss"],
        "model_cells": result.get("model_cells"),
    }


def main() -> None:
    args = parse_args()
    dims = [int(d) for d in args.dims.split(",")]
    methods = ["accelerated", "mirror_descent"] if args.method == "both" else [args.method]
    reference = have_mbi() and not args.no_reference
    if args.no_reference:
        note = "reference skipped (--no-reference)"
    elif not reference:
        note = "reference skipped: mbi is not installed (pip install -e '.[bench]')"
    else:
        note = "reference: mbi 2.0 (JAX, " + ("float64" if args.ref_x64 else "float32") + ")"
        note += ", run to its last callback only" if not args.ref_finalize else ""
    print(f"scalability: d attributes of size 10, {args.rows} random rows, adjacent 3-way")
    print(f"marginals, σ = 10, {args.iters} iterations, one fresh process per run")
    print(note, flush=True)

    figures = {"iters": args.iters, "rows": args.rows, "reference": note, "methods": {}}
    for method in methods:
        rows_out = {}
        ref_alive = reference
        for d in dims:
            spec = {
                "method": method,
                "d": d,
                "iters": args.iters,
                "rows": args.rows,
                "seed": args.seed,
                "x64": args.ref_x64,
                "finalize": args.ref_finalize,
            }
            entry = {
                "dpgm": summarise(run_child(CHILD, dict(spec, impl="dpgm"), args.timeout), "dpgm")
            }
            if ref_alive and d <= args.ref_max_d:
                ref = summarise(run_child(CHILD, dict(spec, impl="mbi"), args.timeout), "mbi")
                entry["reference"] = ref
                ref_alive = "error" not in ref
            elif reference:
                entry["reference"] = {"skipped": "too slow at a smaller d or above --ref-max-d"}
            if "reference" in entry:
                entry["ratio"] = {
                    k: ratio(entry["dpgm"].get(k), entry["reference"].get(k))
                    for k in ("end_to_end_s", "iterations_done_s", "peak_rss_mib")
                }
            _print_progress(method, d, entry)
            rows_out[str(d)] = entry
        figures["methods"][method] = rows_out
        _print_table(method, rows_out, reference)
    figures["targets"] = {"d": TARGET_D, "seconds": TARGET_S, "mib": TARGET_MIB}
    print_json_last(figures)


def _short(message: str) -> str:
    """The last line of an error message (the child's stderr tail is joined by ' | ')."""
    return message.split(" | ")[-1].strip()[:90]


def _print_progress(method: str, d: int, entry: dict) -> None:
    parts = []
    for impl in ("dpgm", "reference"):
        e = entry.get(impl)
        if e is None:
            continue
        if "error" in e or "skipped" in e:
            parts.append(f"{impl}: {_short(e.get('error') or e.get('skipped'))}")
        else:
            total = e["end_to_end_s"] if e["end_to_end_s"] is not None else e["iterations_done_s"]
            parts.append(f"{impl} {total:.1f} s")
    print(f"  {method} d={d}: " + "; ".join(parts), flush=True)


def _print_table(method: str, rows_out: dict, reference: bool) -> None:
    label = f"dpgm {method}" + (f" vs mbi {REFERENCE_ESTIMATOR[method]}" if reference else "")
    print(f"\n{label}: seconds since process start; per iteration in ms")
    headers = [
        "d",
        "impl",
        "start→model",
        "start→last it.",
        "setup",
        "1st it.",
        "ms/it",
        "peak RSS",
        "final loss",
    ]
    rows = []
    for d, entry in rows_out.items():
        for impl in ("dpgm", "reference"):
            e = entry.get(impl)
            if e is None:
                continue
            name = "dpgm" if impl == "dpgm" else "mbi"
            if "error" in e or "skipped" in e:
                rows.append([d, name, _short(e.get("error") or e.get("skipped"))] + [""] * 6)
                continue
            ms = None if e["per_iteration_s"] is None else 1000 * e["per_iteration_s"]
            rows.append(
                [
                    d,
                    name,
                    fmt(e["end_to_end_s"], ".2f", " s"),
                    fmt(e["iterations_done_s"], ".2f", " s"),
                    fmt(e["setup_s"], ".2f", " s"),
                    fmt(e["first_iteration_s"], ".2f", " s"),
                    fmt(ms, ".2f"),
                    fmt(e["peak_rss_mib"], ".0f", " MiB"),
                    fmt(e["last_loss"], ".1f"),
                ]
            )
        if "ratio" in entry:
            r = entry["ratio"]
            rows.append(
                [
                    d,
                    "ratio",
                    fmt(r["end_to_end_s"], ".3f"),
                    fmt(r["iterations_done_s"], ".3f"),
                    "",
                    "",
                    "",
                    fmt(r["peak_rss_mib"], ".3f"),
                    "",
                ]
            )
    print_table(headers, rows)
    big = rows_out.get(str(TARGET_D), {}).get("dpgm")
    if big and "error" not in big:
        print(
            f"target d={TARGET_D}: dpgm {fmt(big['end_to_end_s'], '.1f')} s (< {TARGET_S:g} s:"
            f" {verdict(big['end_to_end_s'], TARGET_S)}), {fmt(big['peak_rss_mib'], '.0f')} MiB"
            f" (< 1 GB = {TARGET_MIB:.0f} MiB: {verdict(big['peak_rss_mib'], TARGET_MIB)})"
        )
    print(
        "start→model: process start to estimate() returned (mbi: n/a when stopped after its last"
        " block); start→last it.: to the last iteration's callback; setup: to measurements built;"
        " 1st it.: measurements built to the first callback (dpgm: junction tree, initial fit and"
        " one iteration; mbi: first block of 50 with its JIT compilation)"
    )


if __name__ == "__main__":
    main()
