"""Which method should `dpgm bn fit` use by default?  Measured on conditional-query error.

For each network: draw RECORDS records from the true network (data seed DATA_SEED0 + run),
write them to CSV, fit each method through the command line exactly as a user would
(`python -m dpgm bn fit STRUCTURE DATA --epsilon E --method M [--allocation A] --seed RUN`),
read the released BIF back and score it on a fixed set of conditional queries
P(X | E=e): X one random variable, E 1-2 other random variables whose states come from a
record forward-sampled from the true network (so P(e) > 0 in the truth). Score = total
variation 0.5 * sum |p_true - p_learned|; a learned network that gives the evidence
probability zero counts TV = 1 for that query (counted separately).

Networks by name (:func:`experiments._common.find_network`: Insurance ships with pgmpy,
the ``bench`` extra) or as paths. Run:
  python -m experiments.bn_fit_default [--networks insurance alarm child asia sachs]
      [--epsilons 0.3 1 3] [--runs 4] [--records 20000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from dpgm.errors import DataError
from dpgm.io import read_bif
from experiments._common import OUTPUT, find_network

NETWORKS = ("insurance", "alarm", "child", "asia", "sachs")
# label -> extra CLI arguments
METHODS = {
    "dd-paper": ["--method", "data-dependent", "--allocation", "paper"],  # the old default
    "dd-error": ["--method", "data-dependent", "--allocation", "error"],
    "dind": ["--method", "dind"],
    "pgm-paper": ["--method", "pgm", "--allocation", "paper"],
    "pgm-error": ["--method", "pgm", "--allocation", "error"],
}
DATA_SEED0 = 10_000  # data of run r: simulate(..., rng=DATA_SEED0 + r); fit seed: r


def make_queries(net, count: int, seed: int) -> list[tuple[str, dict[str, str]]]:
    """``count`` queries (X, {E: e}), fixed by ``seed``: X one variable, E 1-2 others,
    e the states of E in one record forward-sampled from ``net``."""
    rng = np.random.default_rng(seed)
    records = net.simulate(count, rng=rng)
    queries = []
    for i in range(count):
        k = int(rng.integers(1, 3))
        chosen = rng.choice(len(net.variables), size=k + 1, replace=False)
        x = net.variables[chosen[0]]
        evidence = {net.variables[j]: str(records.iloc[i][net.variables[j]]) for j in chosen[1:]}
        queries.append((x, evidence))
    return queries


def answer(net, x: str, evidence: dict[str, str]):
    """P(x | evidence) as a Series indexed by state name, or None (evidence impossible)."""
    try:
        return net.query([x], evidence)
    except DataError:
        return None


def score(learned, truths, queries) -> tuple[list[float], int]:
    tvs, impossible = [], 0
    for (x, evidence), truth in zip(queries, truths):
        got = answer(learned, x, evidence)
        if got is None:
            tvs.append(1.0)
            impossible += 1
            continue
        got = got.reindex(truth.index)
        tvs.append(float(0.5 * np.abs(truth.to_numpy() - got.to_numpy()).sum()))
    return tvs, impossible


def fit_cli(structure: Path, data: Path, epsilon: float, args: list[str], seed: int,
            out: Path) -> float:
    """Run `dpgm bn fit`; return its wall-clock seconds."""
    command = [sys.executable, "-m", "dpgm", "bn", "fit", str(structure), str(data),
               "--epsilon", repr(float(epsilon)), *args, "--seed", str(seed),
               "--out", str(out), "--force"]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=os.environ.copy())
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr}")
    return seconds


def summarise(results: dict, networks, epsilons, methods) -> str:
    lines = []
    for name in networks:
        for eps in epsilons:
            key = f"{name}/{eps:g}"
            if key not in results:
                continue
            cell = results[key]
            lines.append(f"\n{name}  epsilon={eps:g}  ({len(cell[methods[0]]['runs'])} runs,"
                         f" {cell['queries']} queries)")
            lines.append(f"  {'method':<10} {'mean TV':>8} {'± std':>7} {'zero-ev':>8}"
                         f" {'fit s':>6}   per-run mean TV")
            best = min(methods, key=lambda m: cell[m]["mean"])
            for m in methods:
                c = cell[m]
                runs = " ".join(f"{r['mean_tv']:.3f}" for r in c["runs"])
                flag = " *" if m == best else ""
                lines.append(f"  {m:<10} {c['mean']:8.4f} {c['std']:7.4f} {c['impossible']:8d}"
                             f" {c['time']:6.2f}   {runs}{flag}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", nargs="+", default=list(NETWORKS))
    parser.add_argument("--epsilons", nargs="+", type=float, default=[0.3, 1.0, 3.0])
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--first-run", type=int, default=0, help="runs are first..first+runs-1")
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--query-seed", type=int, default=2024)
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    parser.add_argument("--json", default=str(OUTPUT / "bn_fit_default.json"))
    parser.add_argument("--work", default=str(OUTPUT / "bn_fit_default"),
                        help="where the CSV and BIF files of the runs go")
    opts = parser.parse_args()

    work = Path(opts.work)
    work.mkdir(parents=True, exist_ok=True)
    runs = list(range(opts.first_run, opts.first_run + opts.runs))
    results: dict = {}
    meta = {"records": opts.records, "queries": opts.queries, "query_seed": opts.query_seed,
            "runs": runs, "data_seeds": [DATA_SEED0 + r for r in runs], "fit_seeds": runs,
            "epsilons": opts.epsilons, "methods": {m: METHODS[m] for m in opts.methods},
            "python": sys.executable, "pythonpath": os.environ.get("PYTHONPATH")}
    started = time.perf_counter()
    for name in opts.networks:
        path = Path(name) if name.endswith((".bif", ".gz")) else find_network(name)
        name = path.name.split(".")[0]
        truth_net = read_bif(path)
        queries = make_queries(truth_net, opts.queries, opts.query_seed)
        truths = [truth_net.query([x], e) for x, e in queries]
        for eps in opts.epsilons:
            results[f"{name}/{eps:g}"] = {
                "network": name, "epsilon": eps, "queries": len(queries),
                "query_list": [[x, e] for x, e in queries],
                **{m: {"runs": []} for m in opts.methods}}
        for run in runs:
            data = work / f"{name}_run{run}.csv"
            truth_net.simulate(opts.records, rng=DATA_SEED0 + run).to_csv(data, index=False)
            for eps in opts.epsilons:
                for m in opts.methods:
                    out = work / f"{name}_{m}_eps{eps:g}_run{run}.bif"
                    seconds = fit_cli(path, data, eps, METHODS[m], run, out)
                    tvs, impossible = score(read_bif(out), truths, queries)
                    results[f"{name}/{eps:g}"][m]["runs"].append({
                        "run": run, "data_seed": DATA_SEED0 + run, "fit_seed": run,
                        "seconds": seconds, "mean_tv": float(np.mean(tvs)),
                        "impossible": impossible, "tv": tvs})
                    print(f"[{time.perf_counter() - started:6.0f}s] {name} eps={eps:g} "
                          f"run={run} {m:<10} TV={np.mean(tvs):.4f} zero-ev={impossible} "
                          f"{seconds:.2f}s", flush=True)
        for eps in opts.epsilons:
            cell = results[f"{name}/{eps:g}"]
            for m in opts.methods:
                means = [r["mean_tv"] for r in cell[m]["runs"]]
                cell[m].update(
                    mean=float(np.mean(means)),
                    std=float(np.std(means, ddof=1)) if len(means) > 1 else 0.0,
                    impossible=int(sum(r["impossible"] for r in cell[m]["runs"])),
                    time=float(np.mean([r["seconds"] for r in cell[m]["runs"]])))
        Path(opts.json).write_text(json.dumps({"meta": meta, "results": results}, indent=1))
    meta["total_seconds"] = time.perf_counter() - started
    Path(opts.json).write_text(json.dumps({"meta": meta, "results": results}, indent=1))
    names = [Path(n).name.split(".")[0] for n in opts.networks]
    print(summarise(results, names, opts.epsilons, opts.methods))
    print("\nstd: sample std (ddof=1) over runs of the per-run mean TV; zero-ev: queries "
          "(over all runs) whose evidence the learned network gives probability 0 (TV=1); "
          "fit s: mean wall-clock of the CLI command; * lowest mean TV")
    print(f"raw results: {opts.json}; total {meta['total_seconds']:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
