"""Record pgmpy's answers to fixed queries on the four networks, for dpgm's tests.

``tests/models/test_pgmpy_agreement.py`` checks dpgm against these recorded answers on
every run (pgmpy is not a test dependency), and against pgmpy itself where it is
installed. Queries as in ``bn_queries_pgmpy.py`` (seed 1, 10 of each kind); pgmpy reads each
network as dpgm writes it, so both answer on the same numbers.

Run: ``python benchmarks/bn_record_pgmpy.py`` (needs the ``bench`` extra: pgmpy).
"""

from __future__ import annotations

import json
import logging
import sys
import warnings
from pathlib import Path

import numpy as np
from bn_queries_pgmpy import BN_DIR, as_table, make_queries, pgmpy_answers

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "models" / "data" / "pgmpy_answers.json"
NETWORKS = ("asia", "sachs", "child", "alarm")


def record(name: str) -> dict:
    from pgmpy.readwrite import BIFReader

    from dpgm.io import read_bif, to_bif

    network = read_bif(BN_DIR / f"{name}.bif")
    model = BIFReader(string=to_bif(network)).get_model()
    marginal, conditional, maps = make_queries(network, seed=1, count=10)
    queries = marginal + conditional
    answers, assignments = pgmpy_answers(model, queries, maps)
    recorded = []
    for (variables, evidence), answer in zip(queries, answers):
        table = as_table(answer, variables)
        cells = np.indices([len(network.states[v]) for v in variables]).reshape(
            len(variables), -1).T
        keys = [tuple(network.states[v][i] for v, i in zip(variables, cell)) for cell in cells]
        values = [table[k if len(k) > 1 else k[0]] for k in keys]
        recorded.append({"variables": variables, "evidence": evidence, "probabilities": values})
    best = [{"variables": v, "evidence": e, "assignment": {k: str(s) for k, s in a.items()}}
            for (v, e), a in zip(maps, assignments)]
    return {"queries": recorded, "map": best}


def main() -> int:
    logging.getLogger("pgmpy").setLevel(logging.ERROR)
    warnings.simplefilter("ignore")
    import pgmpy

    result = {"pgmpy": pgmpy.__version__, "networks": {n: record(n) for n in NETWORKS}}
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
