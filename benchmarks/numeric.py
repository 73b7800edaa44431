"""Benchmark: numbers at full resolution (issue 26), dpgm against dpmm and smartnoise-synth.

Tables (real, numeric-heavy, offline; rows with a missing value and date columns dropped,
the same table for every method):

* ``diamonds``: 53,940 rows, 7 numbers, 3 grades; ggplot2's data (MIT), bundled with dpgm;
* ``randhie``: 20,190 rows, 6 numbers, 4 binary columns; the RAND Health Insurance
  Experiment as shipped with statsmodels (public domain), given by ``--randhie PATH``;
* ``penguins``: 333 rows, 5 numbers, 4 categories; Palmer penguins (CC0), bundled.

Methods, each run as the command a user runs (read, fit, sample, write), in a child
process timed by ``/usr/bin/time`` (wall seconds, peak resident MiB):

* ``dpgm-<m>-learnt``: ``dpgm synth --discretize-share 0.1`` with the numeric bins null:
  PrivTree bins, each cut into sub-bins and measured at two resolutions (m = mst, aim);
* ``dpgm-<m>-10``, ``dpgm-<m>-32``: today's equal-width public bins;
* ``dpmm-<m>``: dpmm 0.1.9's pipeline, PrivTree binning on 0.1 of ε
  (``benchmarks/peers/run_dpmm.py``, its own venv: ``--dpmm PYTHON``);
* ``smartnoise-mst``: smartnoise-synth 1.0.8's MST, 10 equal-width bins from the public
  bounds, no preprocessing budget (``benchmarks/peers/run_smartnoise.py``,
  ``--smartnoise PYTHON``).

Every method gets the same public bounds (and grades, labels); ε ∈ ``--epsilons``, δ = 1e-9,
``--seeds`` seeds (dpgm's seed fixes its noise; the peers draw theirs from OpenDP's OS
generator whatever the seed). Scores against the real table: mean KS distance and
Wasserstein-1 over the public range, over the numeric columns; mean TV over all 2-way
marginals on a common coarse grid (10 equal-width bins per number, the baseline's own),
and on a neutral one (the deciles of the real values); the largest Pearson
correlation difference; one regression slope per table (real against synthetic).

Run by hand (slow: minutes per peer run)::

    .venv/bin/python benchmarks/numeric.py --dpmm /path/dpmm-venv/bin/python \
        --smartnoise /path/snsynth-venv/bin/python --randhie /path/randhie.csv

The last line printed is one line of JSON with every figure.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from _common import print_json_last, print_table

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DELTA = "1e-9"

#: per table: the numeric columns' public bounds and precision, the categorical labels,
#: and the regression reported (y on x)
TABLES = {
    "diamonds": {
        "numbers": {"carat": (0, 6, {"decimals": 2}), "depth": (40, 80, {"decimals": 1}),
                    "table": (40, 100, {"decimals": 1}), "price": (0, 20000, {"integer": True}),
                    "x": (0, 12, {"decimals": 2}), "y": (0, 12, {"decimals": 2}),
                    "z": (0, 12, {"decimals": 2})},
        "labels": {"cut": ["Fair", "Good", "Very Good", "Premium", "Ideal"],
                   "color": list("DEFGHIJ"),
                   "clarity": ["I1", "SI2", "SI1", "VS2", "VS1", "VVS2", "VVS1", "IF"]},
        "regression": ("price", "carat"),
    },
    "randhie": {
        "numbers": {"mdvis": (0, 100, {"integer": True}), "lncoins": (0, 5, {}),
                    "lpi": (0, 8, {}), "fmde": (0, 9, {}), "physlm": (0, 1, {}),
                    "disea": (0, 60, {})},
        "labels": {c: [0, 1] for c in ("idp", "hlthg", "hlthf", "hlthp")},
        "regression": ("mdvis", "disea"),
    },
    "penguins": {
        "numbers": {"culmen_length_mm": (30, 60, {"decimals": 1}),
                    "culmen_depth_mm": (13, 22, {"decimals": 1}),
                    "flipper_length_mm": (170, 235, {"integer": True}),
                    "body_mass_g": (2500, 6500, {"integer": True}),
                    "delta_15n": (7.5, 10.5, {}), "delta_13c": (-27.5, -23.5, {})},
        "labels": {"species": ["Adelie", "Chinstrap", "Gentoo"],
                   "island": ["Biscoe", "Dream", "Torgersen"],
                   "clutch_completion": [False, True], "sex": ["FEMALE", "MALE"]},
        "regression": ("body_mass_g", "flipper_length_mm"),
    },
}


def load_table(name: str, randhie: str | None) -> pd.DataFrame | None:
    from dpgm.datasets import diamonds_paths, penguins_paths

    if name == "diamonds":
        frame = pd.read_csv(diamonds_paths()[0])
    elif name == "penguins":
        frame = pd.read_csv(penguins_paths()[0]).drop(columns=["date_egg"])
    elif randhie:
        frame = pd.read_csv(randhie)
    else:
        return None
    spec = TABLES[name]
    return frame[[*spec["numbers"], *spec["labels"]]].dropna().reset_index(drop=True)


def schema_json(name: str, bins: int | None) -> dict:
    """dpgm's schema: ``bins`` equal-width bins, or None (bins, refine learnt)."""
    spec = TABLES[name]
    columns = {}
    for column, (lower, upper, precision) in spec["numbers"].items():
        columns[column] = {"kind": "numeric", "lower": lower, "upper": upper,
                           "bins": bins, **precision}
        if bins is None:  # learnt: the bins, their sub-bins, and a precision not public
            columns[column]["refine"] = None
            if not precision:
                columns[column].update(integer=None, decimals=None)
    for column, labels in spec["labels"].items():
        columns[column] = {"kind": "categorical", "labels": labels}
    return {"columns": columns}


def peer_spec(name: str) -> dict:
    spec = TABLES[name]
    columns = {c: {"kind": "numeric", "lower": lo, "upper": hi,
                   "integer": bool(p.get("integer"))}
               for c, (lo, hi, p) in spec["numbers"].items()}
    columns.update({c: {"kind": "categorical", "labels": labels}
                    for c, labels in spec["labels"].items()})
    return {"columns": columns}


class TimedOut(RuntimeError):
    """A run stopped at the benchmark's ``--timeout``."""


def timed(command: list[str], timeout: float | None = None) -> tuple[float, float, str]:
    """Wall seconds and peak resident MiB of ``command`` (``/usr/bin/time``), and its
    standard error (for a failure); the whole process group is stopped at ``timeout``."""
    import os
    import signal

    child = subprocess.Popen(["/usr/bin/time", "-f", "@@time %e %M", *command],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
    try:
        _, stderr = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        raise TimedOut(f"stopped after {timeout:g} s") from None
    line = [x for x in stderr.splitlines() if x.startswith("@@time")]
    if child.returncode != 0 or not line:
        raise RuntimeError(f"{command[:4]} failed: {stderr[-800:]}")
    _, seconds, kib = line[-1].split()
    return float(seconds), float(kib) / 1024.0, stderr


def decile_grid(name: str, real: pd.DataFrame):
    """A neutral common grid: each number cut at the deciles of its real values (favours
    neither equal widths nor learnt bins; for scoring only, never released)."""
    from dpgm.schema import Schema

    spec = schema_json(name, 10)
    for column, fields in spec["columns"].items():
        if fields["kind"] == "numeric":
            cuts = np.unique(np.quantile(real[column], np.linspace(0, 1, 11))[1:-1])
            cuts = cuts[(cuts > fields["lower"]) & (cuts < fields["upper"])]
            fields["bins"] = [fields["lower"], *map(float, cuts), fields["upper"]]
            fields.pop("integer", None)
            fields.pop("decimals", None)
    return Schema.from_json(spec)


def scores(name: str, real: pd.DataFrame, synthetic: pd.DataFrame) -> dict[str, float]:
    from dpgm.evaluation import mean_tv
    from dpgm.evaluation.numeric import numeric_fidelity, numeric_values
    from dpgm.schema import Schema

    grid = Schema.from_json(schema_json(name, 10))  # the common coarse grid
    deciles = decile_grid(name, real)
    numeric = numeric_fidelity(real, synthetic, grid)
    y, x = TABLES[name]["regression"]

    def slope(frame: pd.DataFrame) -> float:
        values = numeric_values(frame, grid)[[x, y]].dropna().to_numpy()
        return float(np.cov(values.T)[0, 1] / np.var(values[:, 0], ddof=1))

    return {"ks": numeric.mean_ks, "w1": numeric.mean_wasserstein,
            "tv2": mean_tv(grid.encode(real), grid.encode(synthetic), 2),
            "tv2_deciles": mean_tv(deciles.encode(real), deciles.encode(synthetic), 2),
            "corr": numeric.correlation_difference("pearson"),
            "slope": slope(synthetic), "slope_real": slope(real)}


def command(method: str, data: Path, folder: Path, name: str, epsilon: float, seed: int,
            out: Path, args: argparse.Namespace) -> list[str] | None:
    tool, mechanism, variant = (method.split("-") + [""])[:3]
    if tool == "dpgm":
        schema = folder / f"{name}-{variant}.json"
        bins = None if variant == "learnt" else int(variant)
        schema.write_text(json.dumps(schema_json(name, bins)))
        base = [str(REPO / ".venv/bin/dpgm"), "synth", str(data), "--schema", str(schema),
                "--epsilon", str(epsilon), "--delta", DELTA, "--mechanism", mechanism,
                "--out", str(out), "--seed", str(seed), "--force"]
        return base + (["--discretize-share", "0.1"] if variant == "learnt" else [])
    python = args.dpmm if tool == "dpmm" else args.smartnoise
    if python is None:
        return None
    spec = folder / f"{name}-peer.json"
    spec.write_text(json.dumps(peer_spec(name)))
    runner = HERE / "peers" / ("run_dpmm.py" if tool == "dpmm" else "run_smartnoise.py")
    return [python, str(runner), "--data", str(data), "--spec", str(spec), "--mechanism",
            mechanism, "--epsilon", str(epsilon), "--seed", str(seed), "--out", str(out),
            "--delta", DELTA]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", nargs="+", default=list(TABLES))
    parser.add_argument("--epsilons", nargs="+", type=float, default=[0.3, 1.0, 3.0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds after which a run is stopped (counted, not scored)")
    parser.add_argument("--first-seed", type=int, default=0,
                        help="seeds first-seed .. first-seed + seeds - 1 (to add runs)")
    parser.add_argument("--methods", nargs="+", default=[
        "dpgm-mst-learnt", "dpgm-mst-10", "dpgm-mst-32", "dpmm-mst", "smartnoise-mst"])
    parser.add_argument("--dpmm", default=None, help="python of a venv with dpmm")
    parser.add_argument("--smartnoise", default=None, help="python of a venv with snsynth")
    parser.add_argument("--randhie", default=None, help="statsmodels' randhie.csv")
    args = parser.parse_args()

    results = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name in args.tables:
            real = load_table(name, args.randhie)
            if real is None:
                print(f"skipped {name}: give its file", file=sys.stderr)
                continue
            data = folder / f"{name}.csv"
            real.to_csv(data, index=False)
            for epsilon in args.epsilons:
                for method in args.methods:
                    runs, stopped = [], 0
                    for seed in range(args.first_seed, args.first_seed + args.seeds):
                        out = folder / f"{name}-{method}-{seed}.csv"
                        line = command(method, data, folder, name, epsilon, seed, out, args)
                        if line is None:
                            break
                        try:
                            seconds, mib, _ = timed(line, args.timeout)
                        except TimedOut as exc:
                            stopped += 1
                            print(f"{name} {method} eps={epsilon} seed={seed}: {exc}",
                                  file=sys.stderr)
                            continue
                        except RuntimeError as exc:
                            print(f"{name} {method} eps={epsilon} seed={seed}: {exc}",
                                  file=sys.stderr)
                            continue
                        runs.append({**scores(name, real, pd.read_csv(out)),
                                     "seconds": seconds, "mib": mib})
                    if not runs:
                        if stopped:
                            print(f"{name} eps={epsilon:g} {method}: every run stopped at "
                                  f"{args.timeout:g} s", flush=True)
                        continue
                    mean = {k: float(np.mean([r[k] for r in runs])) for k in runs[0]}
                    results.append({"table": name, "epsilon": epsilon, "method": method,
                                    "runs": len(runs), "timed_out": stopped, **mean})
                    print(f"{name} eps={epsilon:g} {method}: KS {mean['ks']:.4f} "
                          f"W1 {mean['w1']:.4f} TV2 {mean['tv2']:.4f} "
                          f"TV2-deciles {mean['tv2_deciles']:.4f} corr {mean['corr']:.3f} "
                          f"slope {mean['slope']:.4g} (real {mean['slope_real']:.4g}) "
                          f"{mean['seconds']:.1f} s {mean['mib']:.0f} MiB"
                          + (f" ({stopped} run(s) stopped at {args.timeout:g} s, not in the "
                             "means)" if stopped else ""), flush=True)
    header = ["table", "eps", "method", "KS", "W1/range", "TV 2-way", "TV deciles",
              "corr diff", "slope (real)", "time s", "peak MiB"]
    print_table(header, [[r["table"], f"{r['epsilon']:g}", r["method"], f"{r['ks']:.4f}",
                          f"{r['w1']:.4f}", f"{r['tv2']:.4f}", f"{r['tv2_deciles']:.4f}",
                          f"{r['corr']:.3f}",
                          f"{r['slope']:.4g} ({r['slope_real']:.4g})", f"{r['seconds']:.1f}",
                          f"{r['mib']:.0f}"] for r in results])
    print_json_last({"results": results})


if __name__ == "__main__":
    main()
