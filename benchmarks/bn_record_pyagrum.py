"""Record pyAgrum's posteriors on four networks, for dpgm's tests.

``tests/models/test_pyagrum_agreement.py`` checks ``BayesianNetwork.posteriors`` against
these recorded answers on every run (pyAgrum is not a test dependency). For Alarm,
Hailfinder, Win95pts and Hepar2: 5 evidence sets of 1–3 observed variables (as in
``bn_queries.py``, seed 1), and for each the posterior of every unobserved variable by
pyAgrum's ``LazyPropagation``, on dpgm's CPDs (``bn_queries.load_exact``: pyAgrum's BIF
reader keeps single precision), so that both answer on the same numbers.

Run: ``python benchmarks/bn_record_pyagrum.py`` (needs pyAgrum: the ``bench`` extra).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from bn_queries import BN_DIR, load_exact, make_queries

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "models" / "data" / "pyagrum_answers.json"
NETWORKS = ("alarm", "hailfinder", "win95pts", "hepar2")


def record(name: str) -> list[dict]:
    import pyagrum as gum

    from dpgm.io import read_bif

    network = read_bif(BN_DIR / f"{name}.bif")
    engine = gum.LazyPropagation(load_exact(BN_DIR / f"{name}.bif", network))
    recorded = []
    for evidence in make_queries(network, seed=1, count=5)["posteriors"]:
        engine.setEvidence(evidence)
        engine.makeInference()
        posteriors = {v: engine.posterior(v).toarray().tolist()
                      for v in network.variables if v not in evidence}
        recorded.append({"evidence": evidence, "posteriors": posteriors})
    return recorded


def main() -> int:
    import pyagrum as gum

    result = {"pyagrum": gum.__version__, "networks": {n: record(n) for n in NETWORKS}}
    OUT.write_text(json.dumps(result) + "\n")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
