"""DP synthesizers head to head: ``python -m benchmarks.suite [--quick]`` (run by hand).

For each table (``tables.py``), seed and ε: the table is split into training records and a
20% holdout (the seed's split, the same for every system); each system reads the training
part as raw values with the table's public schema, in a fresh process with a time budget
(``--budget``, 30 minutes), and writes as many synthetic records; the metrics
(``metrics.py``) compare them with the training records, and utility is scored on the
holdout. Time and peak memory are the system's own (its process). A system that fails or
runs out of its budget is reported as such.

Systems: ``dpgm-aim``, ``dpgm-mst``, ``dpgm-aim-rp``, ``dpgm-residual-planner`` and
``dpgm-aim-rp-records``
(``run_dpgm.py``); a peer runs where its venv is
named (``--peer NAME=PYTHON``, e.g. ``dpmm=/path/to/dpmm-venv/bin/python`` runs
``benchmarks/peers/run_dpmm.py`` for AIM and MST).

``--quick``: one seed, ε = 1, adult and diamonds, dpgm's systems and the named peers,
each run within 5 minutes (a slower one is reported as out of its budget).
Prints the table (mean ± standard error over seeds) and appends every run to ``--out``
(nothing logged before is lost; ``plot.py`` draws the figure from such logs).

``--keep DIR`` keeps each run's synthetic table and report; ``--rescore DIR`` runs no
system and scores what DIR holds under the same names (``TABLE-SEED-eEPSILON-SYSTEM.csv``
and ``.json``, the runner's JSON line or ``{"status": ...}`` for a run that made no
table), so that runs made on another machine are scored here on the same split.
``--resume`` (with ``--keep DIR``) runs only the cells DIR does not hold yet and scores the
others from there, so that a grid too long for one sitting is run in several: a cell
kept as failed or out of its budget counts as run (delete its report to run it again),
and a kept run that ``--out`` holds already is not logged there again.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from benchmarks.suite import metrics, tables
from benchmarks.suite.summary import cell, mean_and_error, out_of_budget, read_runs

HERE = Path(__file__).resolve().parent
PEERS = HERE.parent / "peers"
HOLDOUT = 0.2
DELTA = 1e-9
EPSILONS = (0.3, 1.0, 3.0)
SEEDS = (0, 1, 2, 3, 4)
#: seconds per run with --quick, so that it ends in minutes whatever a peer takes
QUICK_BUDGET = 300.0
SHOWN = ("tv1", "tv2", "tv3", "workload", "gb_accuracy", "lr_accuracy", "coef_ratio_min",
         "coef_sign_ok", "total_s", "peak_rss_mib")


def systems(peers: dict[str, str]) -> dict[str, list[str]]:
    """Each system's command (without its per-run arguments)."""
    found = {f"dpgm-{m}": [sys.executable, str(HERE / "run_dpgm.py"), "--mechanism", m]
             for m in runner_mechanisms(HERE / "run_dpgm.py")}
    for name, python in peers.items():
        script = PEERS / f"run_{name}.py"
        if not script.exists():
            raise SystemExit(f"no runner {script} for the peer {name}")
        for m in runner_mechanisms(script):
            found[f"{name}-{m}"] = [python, str(script), "--mechanism", m]
    return found


def runner_mechanisms(script: Path) -> tuple[str, ...]:
    """The mechanisms a peer's runner offers: its top-level ``MECHANISMS`` tuple, read
    without importing it (it imports its peer, which only its own venv has)."""
    for node in ast.parse(script.read_text()).body:
        if isinstance(node, ast.Assign) and any(
                getattr(t, "id", None) == "MECHANISMS" for t in node.targets):
            return tuple(ast.literal_eval(node.value))
    return ("aim", "mst")


def split(frame, seed: int):
    to_holdout = np.random.default_rng(10_000 + seed).random(len(frame)) < HOLDOUT
    return frame[~to_holdout].reset_index(drop=True), frame[to_holdout].reset_index(drop=True)


def run_one(command: list[str], train_csv: Path, spec: Path, epsilon: float, seed: int,
            out: Path, budget: float) -> dict:
    """One system's run in its own process: its JSON line, or why it has none. The
    process's string hashing is seeded with ``seed`` too (``PYTHONHASHSEED``): PrivSyn
    iterates over sets, and two runs of one seed differed without it."""
    started = time.perf_counter()
    try:
        done = subprocess.run([*command, "--data", str(train_csv), "--spec", str(spec),
                               "--epsilon", str(epsilon), "--delta", str(DELTA),
                               "--seed", str(seed), "--out", str(out)],
                              capture_output=True, text=True, timeout=budget,
                              env={**os.environ, "PYTHONHASHSEED": str(seed)})
    except subprocess.TimeoutExpired:
        return {"status": out_of_budget(budget)}
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        return {"status": f"failed: {last[:200]}"}
    report = json.loads(done.stdout.strip().splitlines()[-1])
    report["status"] = "ok"
    report["wall_s"] = time.perf_counter() - started
    return report


def keep_run(folder: Path, stem: str, run: dict, out: Path) -> None:
    """Keep a run's report (and its synthetic table, if it made one) under ``stem``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{stem}.json").write_text(json.dumps(run) + "\n")
    if run["status"] == "ok":
        shutil.copyfile(out, folder / f"{stem}.csv")


def kept_run(folder: Path, stem: str) -> dict | None:
    """A kept run's report (its last JSON line; "ok" where its synthetic table is there),
    or None where the folder holds no such run."""
    report = folder / f"{stem}.json"
    if not report.exists():
        return None
    lines = report.read_text().strip().splitlines()
    run = json.loads(lines[-1]) if lines else {}
    if (folder / f"{stem}.csv").exists():
        run.setdefault("status", "ok")
    else:
        run["status"] = run.get("status") if run.get("status") not in (None, "ok") else (
            "failed: no synthetic table")
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--tables", nargs="+", default=list(tables.TABLES),
                        choices=tables.ALL_TABLES, metavar="TABLE",
                        help="default: every table but the held-out ones "
                             f"({', '.join(tables.HELD_OUT)})")
    parser.add_argument("--epsilons", nargs="+", type=float, default=list(EPSILONS))
    parser.add_argument("--seeds", nargs="+", type=int, default=list(SEEDS))
    parser.add_argument("--systems", nargs="+", default=None)
    parser.add_argument("--peer", action="append", default=[], metavar="NAME=PYTHON")
    parser.add_argument("--budget", type=float, default=1800.0, help="seconds per run")
    parser.add_argument("--out", default=str(HERE / "results.jsonl"),
                        help="the log each run is appended to (a cell run again is logged "
                             "again; the summary and the plot read its last run)")
    parser.add_argument("--keep", metavar="DIR", default=None,
                        help="keep each run's synthetic CSV and report in DIR (as "
                             "TABLE-SEED-eEPSILON-SYSTEM.csv and .json, replacing a run "
                             "kept there under the same name)")
    parser.add_argument("--rescore", metavar="DIR", default=None,
                        help="run no system: score the runs kept in DIR (by --keep, or "
                             "made elsewhere under the same names; every peer's systems "
                             "without --peer)")
    parser.add_argument("--resume", action="store_true",
                        help="with --keep DIR: run only the cells DIR does not hold yet, "
                             "and score the others from there")
    args = parser.parse_args()
    if args.resume and not args.keep:
        parser.error("--resume needs --keep DIR: the folder of the runs made so far")
    if args.resume and args.rescore:
        parser.error("--resume runs what --keep DIR lacks; --rescore runs nothing")
    if args.quick:
        args.tables, args.epsilons, args.seeds = ["adult", "diamonds"], [1.0], [0]
        args.budget = min(args.budget, QUICK_BUDGET)
    peers = dict(p.split("=", 1) for p in args.peer)
    if args.rescore:  # nothing runs: every peer's systems can be scored, no venv needed
        peers = {path.stem[4:]: "(not run)" for path in sorted(PEERS.glob("run_*.py"))} | peers
    commands = systems(peers)
    if args.systems:
        commands = {k: v for k, v in commands.items() if k in args.systems}
    from dpgm.privacy.quiet import on_records
    from dpgm.schema import Schema

    # where finished runs are read back instead of run: every run (--rescore) or the
    # runs kept so far (--resume)
    kept = Path(args.rescore) if args.rescore else Path(args.keep) if args.resume else None
    # --resume: a kept run that the log holds already (the cell's last run there is the
    # same report) is scored and shown but not logged again
    logged = ({cell(r): r for r in read_runs([Path(args.out)])}
              if args.resume and Path(args.out).exists() else {})
    results = []
    with tempfile.TemporaryDirectory() as tmp, open(args.out, "a") as log:
        folder = Path(tmp)
        for name in args.tables:
            table = tables.load(name)
            if table is None:
                print(f"{name}: its source is absent (../shared): skipped")
                continue
            schema = Schema.from_json(table.schema)
            spec = folder / f"{name}.json"
            spec.write_text(json.dumps(table.schema))
            for seed in args.seeds:
                train, holdout = split(table.frame, seed)
                train_csv = folder / f"{name}-{seed}.csv"
                train.to_csv(train_csv, index=False)
                with on_records():
                    real, unseen = schema.encode(train.astype(str)), schema.encode(
                        holdout.astype(str))
                for epsilon in args.epsilons:
                    for system, command in commands.items():
                        stem = f"{name}-{seed}-e{epsilon:g}-{system}"
                        run = None if kept is None else kept_run(kept, stem)
                        reused = run is not None and args.resume
                        last = logged.get(cell({"table": name, "seed": seed,
                                                "epsilon": epsilon, "system": system}), {})
                        logged_before = reused and all(last.get(key) == value
                                                       for key, value in run.items())
                        if run is not None:
                            out = kept / f"{stem}.csv"
                        elif args.rescore:
                            continue
                        else:
                            out = folder / f"{stem}.csv"
                            run = run_one(command, train_csv, spec, epsilon, seed, out,
                                          args.budget)
                            if args.keep:
                                keep_run(Path(args.keep), stem, run, out)
                        run.update(table=name, seed=seed, epsilon=epsilon, system=system)
                        if run["status"] == "ok":
                            import pandas as pd

                            synthetic = pd.read_csv(out, dtype=str, keep_default_na=False,
                                                    na_filter=False)
                            # one thread for the scoring models: on a shared machine
                            # more oversubscribe it (a scoring step took 8x as long)
                            with on_records(), threadpool_limits(1):
                                run.update(metrics.score(real, schema.encode(synthetic),
                                                         unseen, table.target,
                                                         model=table.model, schema=schema))
                        results.append(run)
                        if not logged_before:
                            log.write(json.dumps(run) + "\n")
                            log.flush()
                        print(f"{name} seed {seed} ε={epsilon:g} {system}: {run['status']}"
                              + ("" if run["status"] != "ok" else
                                 f", 3-way TV {run.get('tv3', float('nan')):.4f}, "
                                 f"{run['total_s']:.1f} s")
                              + (" (kept before" + (", logged before)" if logged_before
                                                     else ")") if reused else ""),
                              flush=True)
    print_table(results)
    print_coefficients(results)


def print_coefficients(results: list[dict]) -> None:
    """The key coefficients of each table's standard regression (``tables.MODELS``): real,
    synthetic and their ratio, mean over seeds."""
    print("\n| table | ε | system | key coefficient | real | synthetic | ratio |")
    print("|---|---|---|---|---|---|---|")
    for table, epsilon, system in sorted({(r["table"], r["epsilon"], r["system"])
                                          for r in results}):
        ok = [r for r in results if (r["table"], r["epsilon"], r["system"]) == (
            table, epsilon, system) and "coef_ratio_min" in r]
        if not ok:
            continue
        names = [k[5:-5] for k in ok[0] if k.startswith("coef_") and k.endswith("_real")]
        for name in names:
            real, synthetic, ratio = (float(np.mean([r[f"coef_{name}_{part}"] for r in ok]))
                                      for part in ("real", "synthetic", "ratio"))
            print(f"| {table} | {epsilon:g} | {system} | {name} | {real:.4g} | "
                  f"{synthetic:.4g} | {ratio:.3g} |")


def print_table(results: list[dict]) -> None:
    """Mean ± standard error over seeds of each metric, a row per table, ε and system."""
    keys = sorted({(r["table"], r["epsilon"], r["system"]) for r in results})
    print("\n| table | ε | system | " + " | ".join(SHOWN) + " |")
    print("|---|---|---|" + "---|" * len(SHOWN))
    for table in sorted({r["table"] for r in results}):  # the same models on real records
        ok = [r for r in results if r["table"] == table and "real_gb_accuracy" in r]
        if ok:
            cells = ["—"] * len(SHOWN)
            for key in ("gb_accuracy", "lr_accuracy"):
                cells[SHOWN.index(key)] = f"{np.mean([r['real_' + key] for r in ok]):.4g}"
            print(f"| {table} | — | real training records | " + " | ".join(cells) + " |")
    for table, epsilon, system in keys:
        runs = [r for r in results if (r["table"], r["epsilon"], r["system"]) == (
            table, epsilon, system)]
        ok = [r for r in runs if r["status"] == "ok"]
        if not ok:
            print(f"| {table} | {epsilon:g} | {system} | {runs[0]['status']} |")
            continue
        cells = []
        for key in SHOWN:
            values = [r[key] for r in ok if key in r]
            if not values:
                cells.append("—")
                continue
            mean, error = mean_and_error(values)
            cells.append(f"{mean:.4g} ± {error:.2g}" if len(values) > 1 else f"{mean:.4g}")
        failed = len(runs) - len(ok)
        print(f"| {table} | {epsilon:g} | {system}{f' ({failed} failed)' if failed else ''} | "
              + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
