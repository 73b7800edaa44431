"""Bayesian-network inference: dpgm side by side with pyAgrum (aGrUM, C++), one run.

For each network (``../shared/data/bn``): the BIF load; the posterior of every
unobserved variable for 20 evidence sets of 1–3 observed variables (pyAgrum at its
fastest: one ``LazyPropagation``, the evidence changed per set); 20 conditional queries
``P(X | e)`` of 1–2 variables; 20 MPE queries (the most probable state of every
unobserved variable). Each library runs in a fresh process of its own
(``_bn_child.py``, which says exactly what is timed), under an 8 GiB address-space
limit; times are wall-clock, the better of ``--repeat`` runs, and include making each
library's inference object, so that neither side gets its compilation for free.

The evidence is read off records forward-sampled from the network (seed 0), so that it
has a probability above zero. The answers are compared: the largest absolute difference
between the two libraries' probabilities (goal: below 1e-9), and how many MPE
assignments are equal (ties may be broken differently).

Goal (issue 28): dpgm at least 2× faster than pyAgrum on all-posteriors on every network,
and at least as fast on load.

Run: ``python benchmarks/bn_queries.py [--networks alarm ...] [--json OUT]`` (needs
pyAgrum: the ``bench`` extra).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
from _common import print_table, run_child

ROOT = Path(__file__).resolve().parents[1]
BN_DIR = ROOT.parent / "shared" / "data" / "bn"
CHILD = str(Path(__file__).with_name("_bn_child.py"))
NETWORKS = ("alarm", "hailfinder", "win95pts", "hepar2", "andes", "pigs", "link")
MEMORY_LIMIT = 8 << 30
GOAL_POSTERIORS = 2.0
TOLERANCE = 1e-9


def make_queries(network, seed: int = 0, count: int = 20) -> dict:
    """Evidence sets, conditional queries and MPE evidence, in state names."""
    rng = np.random.default_rng(seed)
    records = network.simulate(3 * count, rng=rng)
    names = list(network.variables)

    def evidence(row: int, exclude=()) -> dict:
        size = int(rng.integers(1, 4))
        chosen = [v for v in rng.permutation(names) if v not in exclude][:size]
        return {str(v): str(records.loc[row, v]) for v in chosen}

    posteriors = [evidence(i) for i in range(count)]
    conditional = []
    for i in range(count):
        variables = [str(v) for v in rng.choice(names, int(rng.integers(1, 3)), replace=False)]
        conditional.append([variables, evidence(count + i, variables)])
    mpe = [evidence(2 * count + i) for i in range(count)]
    return {"posteriors": posteriors, "conditional": conditional, "mpe": mpe}


def load_exact(path, network):
    """pyAgrum's network from ``path``, its CPTs then overwritten with ``network``'s
    (dpgm's, float64): pyAgrum 3.3's BIF reader keeps only single precision (0.9 reads as
    0.89999998), which alone moves its answers by ~1e-8."""
    import pyagrum as gum

    loaded = gum.loadBN(str(path))
    for variable in network.variables:
        table = loaded.cpt(variable)
        axes = list(reversed(table.names))  # toarray's axes, in C order
        family = [*network.parents[variable], variable]
        cpd = np.transpose(network.cpds[variable], [family.index(v) for v in axes])
        table.fillWith(cpd.ravel().tolist())
    return loaded


def largest_difference(ours: dict, theirs: dict) -> float:
    """The largest absolute difference between the two libraries' probabilities."""
    worst = 0.0
    for a, b in zip(ours.get("posteriors_answers", []), theirs.get("posteriors_answers", [])):
        for v in a:
            worst = max(worst, float(np.max(np.abs(np.subtract(a[v], b[v])))))
    for a, b in zip(ours.get("conditional_answers", []), theirs.get("conditional_answers", [])):
        worst = max(worst, float(np.max(np.abs(np.subtract(a, b)))))
    return worst


def network_path(name: str) -> Path:
    """A network of ``../shared/data/bn`` by name, or a BIF file (``.bif`` or ``.bif.gz``)."""
    return Path(name) if name.endswith((".bif", ".gz")) else BN_DIR / f"{name}.bif"


def run(name: str, repeat: int, timeout: float) -> dict:
    import gzip
    import tempfile

    from dpgm.io import read_bif

    path = network_path(name)
    queries = make_queries(read_bif(path))
    plain = path  # pyAgrum reads plain BIF only: a gzip is unpacked for it (not timed)
    if path.suffix == ".gz":
        plain = Path(tempfile.mkdtemp()) / path.stem
        plain.write_bytes(gzip.decompress(path.read_bytes()))
    spec = {"path": str(path), "agrum_path": str(plain), "repeat": repeat, **queries}
    ours = run_child(CHILD, {**spec, "library": "dpgm"}, timeout, MEMORY_LIMIT)
    theirs = run_child(CHILD, {**spec, "library": "pyagrum"}, timeout, MEMORY_LIMIT)
    # pyAgrum's MPE names the observed variables too; dpgm's names the others only
    same = sum(b is not None and a == {k: v for k, v in b.items() if k in a}
               for a, b in zip(ours.get("mpe_answers", []), theirs.get("mpe_answers", [])))
    failed = sum(b is None for b in theirs.get("mpe_answers", []))
    return {"network": path.name.split(".")[0], "dpgm": _strip(ours), "pyagrum": _strip(theirs),
            "difference": largest_difference(ours, theirs), "mpe_same": same,
            "pyagrum_mpe_failed": failed,
            "count": len(queries["mpe"])}


def _strip(result: dict) -> dict:
    return {k: v for k, v in result.items() if not k.endswith("_answers")}


def _seconds(result: dict, key: str) -> str:
    value = result.get(key)
    if value is None:
        reason = result.get(f"{key}_error") or result.get("error") or "failed"
        return "failed: " + reason.split(":")[0]
    return f"{value * 1e3:.1f} ms"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--networks", nargs="+", default=list(NETWORKS),
                        help="names in ../shared/data/bn, or paths of BIF files (.bif, "
                        ".bif.gz: munin ships with pgmpy, pgmpy/utils/example_models)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per timing (best kept)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per library")
    parser.add_argument("--json", default=None, help="also write the figures here")
    args = parser.parse_args(argv)
    if importlib.util.find_spec("pyagrum") is None:
        print("pyAgrum is not installed: pip install -e '.[bench]'", file=sys.stderr)
        return 1
    if not BN_DIR.exists():
        print(f"{BN_DIR} not found", file=sys.stderr)
        return 1
    results, rows = [], []
    for name in args.networks:
        result = run(name, args.repeat, args.timeout)
        results.append(result)
        name = result["network"]
        ours, theirs = result["dpgm"], result["pyagrum"]
        for label, key in [("load", "load"), ("20 × all posteriors", "posteriors"),
                           ("20 conditional", "conditional"), ("20 MPE", "mpe")]:
            a, b = ours.get(key), theirs.get(key)
            speedup = f"{b / a:.2f}×" if a and b else "–"
            rows.append([name, label, _seconds(ours, key), _seconds(theirs, key), speedup])
        rows.append([name, "largest difference", f"{result['difference']:.1e}", "",
                     f"MPE equal {result['mpe_same']}/{result['count']} (pyAgrum failed "
                     f"{result['pyagrum_mpe_failed']})"])
        rows.append([name, "peak memory", f"{ours.get('peak_rss_mb', float('nan')):.0f} MiB",
                     f"{theirs.get('peak_rss_mb', float('nan')):.0f} MiB", ""])
        print(f"done: {name}", file=sys.stderr, flush=True)
    version = next((r["pyagrum"].get("version") for r in results if "version" in r["pyagrum"]),
                   "?")
    threads = next((r["pyagrum"].get("threads") for r in results if "threads" in r["pyagrum"]),
                   "?")
    print(f"dpgm against pyAgrum {version} ({threads} threads); wall-clock, best of "
          f"{args.repeat}")
    print_table(["network", "what", "dpgm", "pyAgrum", "speed-up"], rows)
    speedups = [r["pyagrum"]["posteriors"] / r["dpgm"]["posteriors"] for r in results
                if r["dpgm"].get("posteriors") and r["pyagrum"].get("posteriors")]
    worst = min(speedups, default=float("nan"))
    agree = max(r["difference"] for r in results) < TOLERANCE
    print(f"smallest all-posteriors speed-up where both ran: {worst:.2f}× (goal "
          f"{GOAL_POSTERIORS:g}×: {'met' if worst >= GOAL_POSTERIORS else 'NOT met'}); "
          f"answers within {TOLERANCE:g}: {'yes' if agree else 'NO'}")
    if args.json:
        Path(args.json).write_text(json.dumps({"results": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
