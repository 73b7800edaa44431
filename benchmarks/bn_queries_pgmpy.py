"""Bayesian-network queries: dpgm side by side with pgmpy's VariableElimination, one run.

For Alarm and Child (``../shared/data/bn``): the BIF parse, then 20 marginal + 20
conditional queries and 20 MAP (MPE) queries, each answered by dpgm and by pgmpy on the
same network, with the largest difference between the answers and the number of MAP
assignments that agree. pgmpy cannot answer an MPE (a MAP over every variable) on Alarm:
its VariableElimination builds the joint table of the query variables (38 GiB here), and
its BeliefPropagation.map_query hands the same work to VariableElimination. So the MAP
queries compared are marginal MAP over 1–3 variables; dpgm's MPE (max-product on its
junction tree) is timed in a row of its own.
Timings are wall-clock seconds in this process (the better of
``--repeat`` runs); the query times include building each library's inference object
from the parsed network, so neither side gets its set-up for free.

Queries (fixed seed): a marginal is P(X) for 1–3 random variables; a conditional is
P(X | Y = y) for 1–2 variables and 1–3 evidence variables, y read off a record forward
sampled from the network; a MAP query is the most probable joint state of 1–3 variables
given 1–3 such evidence variables; an MPE query the most probable state of all the others.

Run: ``python benchmarks/bn_queries_pgmpy.py`` (needs the ``bench`` extra: pgmpy).
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import math
import sys
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
from _common import best_of

ROOT = Path(__file__).resolve().parents[1]
BN_DIR = ROOT.parent / "shared" / "data" / "bn"
TARGET_SPEEDUP = 5.0


def make_queries(network, seed: int = 0, count: int = 20):
    """(marginal, conditional, map) query lists: (variables, evidence) in state names."""
    rng = np.random.default_rng(seed)
    records = network.simulate(3 * count, rng=rng)
    names = [str(v) for v in network.variables]

    def some(low: int, high: int) -> list[str]:  # high excluded
        return [str(x) for x in rng.choice(names, int(rng.integers(low, high)), replace=False)]

    marginal, conditional, best = [], [], []
    for i in range(count):
        marginal.append((some(1, 4), {}))
        picked = some(2, 6)
        size = int(rng.integers(1, min(3, len(picked) - 1) + 1))
        evidence = {v: records.loc[i, v] for v in picked[:size]}
        conditional.append((picked[size: size + 2], evidence))
        picked = some(2, 7)
        size = int(rng.integers(1, min(3, len(picked) - 1) + 1))
        evidence = {v: records.loc[count + i, v] for v in picked[:size]}
        best.append((picked[size: size + 3], evidence))
    return marginal, conditional, best


def dpgm_answers(network, queries, maps):
    answers = [network.query(v, e) for v, e in queries]
    assignments = [network.map_query(v, e) for v, e in maps]
    return answers, assignments


def pgmpy_answers(model, queries, maps):
    from pgmpy.inference import VariableElimination

    infer = VariableElimination(model)
    answers = [infer.query(v, evidence=e or None, joint=True, show_progress=False)
               for v, e in queries]
    assignments = [infer.map_query(v, evidence=e, show_progress=False) for v, e in maps]
    return answers, assignments


def as_table(answer, variables) -> dict:
    """A dpgm Series or a pgmpy factor as {state (tuple): probability} (not timed)."""
    if hasattr(answer, "to_dict"):
        return answer.to_dict()
    table = {}
    for index in np.ndindex(answer.values.shape):
        states = {v: answer.state_names[v][i] for v, i in zip(answer.variables, index)}
        key = tuple(states[v] for v in variables)
        table[key if len(key) > 1 else key[0]] = float(answer.values[index])
    return table



def run(name: str, repeat: int) -> dict:
    from pgmpy.readwrite import BIFReader

    from dpgm.io import read_bif, to_bif

    path = BN_DIR / f"{name}.bif"
    dpgm_parse, network = best_of(repeat, lambda: read_bif(path))
    pgmpy_parse, _ = best_of(repeat, lambda: BIFReader(str(path)).get_model())
    # Both answer on the same numbers: the files round some CPD rows (Alarm's sum to
    # 1 ± 1e-7), which dpgm's reader normalises and pgmpy's keeps; pgmpy reads the
    # network as dpgm writes it (which also checks that pgmpy reads dpgm's BIF).
    model = BIFReader(string=to_bif(network)).get_model()
    marginal, conditional, maps = make_queries(network)
    queries = marginal + conditional
    mpes = [(None, e) for _, e in maps]

    # each timing starts from a copy of the parsed network, with nothing cached
    def fresh_dpgm():
        return dpgm_answers(replace(network), queries, [])[0]

    def fresh_dpgm_map():
        return dpgm_answers(replace(network), [], maps)[1]

    def fresh_dpgm_mpe():
        return dpgm_answers(replace(network), [], mpes)[1]

    dpgm_query, ours = best_of(repeat, fresh_dpgm)
    pgmpy_query, theirs = best_of(repeat, lambda: pgmpy_answers(model, queries, [])[0])
    dpgm_map, our_maps = best_of(repeat, fresh_dpgm_map)
    pgmpy_map, their_maps = best_of(repeat, lambda: pgmpy_answers(model, [], maps)[1])
    dpgm_mpe, _ = best_of(repeat, fresh_dpgm_mpe)
    ours = [as_table(a, v) for a, (v, _) in zip(ours, queries)]
    theirs = [as_table(a, v) for a, (v, _) in zip(theirs, queries)]
    difference = max(
        abs(a[k] - b[k]) for a, b in zip(ours, theirs) for k in set(a) | set(b)
    )
    same = sum(a == {k: str(v) for k, v in b.items()} for a, b in zip(our_maps, their_maps))
    return {
        "network": name,
        "parse": (dpgm_parse, pgmpy_parse),
        "queries": (dpgm_query, pgmpy_query),
        "map": (dpgm_map, pgmpy_map),
        "mpe": (dpgm_mpe, math.nan),
        "difference": difference,
        "map_same": same,
        "map_count": len(maps),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--networks", nargs="+", default=["alarm", "child"])
    parser.add_argument("--repeat", type=int, default=3, help="runs per timing (best kept)")
    args = parser.parse_args(argv)
    if importlib.util.find_spec("pgmpy") is None:
        print("pgmpy is not installed: pip install -e '.[bench]'", file=sys.stderr)
        return 1
    if not BN_DIR.exists():
        print(f"{BN_DIR} not found", file=sys.stderr)
        return 1
    logging.getLogger("pgmpy").setLevel(logging.ERROR)
    warnings.simplefilter("ignore")
    print(f"{'network':8} {'what':30} {'dpgm':>10} {'pgmpy':>10} {'speed-up':>9}")
    worst = np.inf
    for name in args.networks:
        result = run(name, args.repeat)
        rows = [("BIF parse", "parse"), ("20 marginal + 20 conditional", "queries"),
                ("20 MAP (1-3 variables)", "map"),
                ("20 MPE (pgmpy cannot)", "mpe")]
        for label, key in rows:
            ours, theirs = result[key]
            speedup = theirs / ours
            if key in ("queries", "map"):
                worst = min(worst, speedup)
            print(f"{name:8} {label:30} {ours * 1e3:8.1f}ms {theirs * 1e3:8.1f}ms "
                  f"{speedup:8.1f}x")
        print(f"{name:8} largest difference between the answers: {result['difference']:.2e}; "
              f"MAP assignments equal: {result['map_same']}/{result['map_count']}")
    verdict = "met" if worst >= TARGET_SPEEDUP else "NOT met"
    print(f"smallest query/MAP speed-up: {worst:.1f}x (target {TARGET_SPEEDUP:g}x: {verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
