"""Train on synthetic, test on real: Adult at ε = 1 and ε = 10.

The steward's protocol (docs/evaluation.md): split Adult (the bundled 48,842 records, 14
discretised attributes) into a training part and a 20% holdout with a seed; fit MST and
AIM to the training part only (δ = 1e-9); sample as many synthetic records as the model
stands for; then :func:`dpgm.evaluation.utility.tstr` predicts ``income>50K`` on the
holdout with logistic regression and gradient boosting, each trained on the real
training records and on the synthetic ones. Three seeds (split, noise and sampling);
the table gives the mean and the range. Also the SDMetrics Quality score and the
k-marginal score of each synthetic table against the training records.

Writes ``docs/figures/tstr_adult.json`` and prints the table for docs/evaluation.md.
Run: ``.venv/bin/python experiments/tstr_adult.py`` (about five minutes on 2 cores).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from dpgm import Dataset
from dpgm.datasets import load_adult
from dpgm.evaluation.scores import scores_from_counts
from dpgm.evaluation.utility import tstr
from dpgm.mechanisms import AIM, MST

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "figures" / "tstr_adult.json"
TARGET = "income>50K"
EPSILONS = (1.0, 10.0)
SEEDS = (0, 1, 2)
HOLDOUT = 0.2


def split(data: Dataset, seed: int) -> tuple[Dataset, Dataset]:
    records = np.asarray(data.records)
    to_holdout = np.random.default_rng(seed).random(len(records)) < HOLDOUT
    return Dataset(records[~to_holdout], data.domain), Dataset(records[to_holdout], data.domain)


def main() -> None:
    import warnings

    from dpgm.errors import SeedWarning

    warnings.simplefilter("ignore", SeedWarning)  # seeded: research output, said below
    data = load_adult()
    rows = []
    for seed in SEEDS:
        train, holdout = split(data, 1000 + seed)
        real = tstr(train, train, holdout, TARGET, rng=seed)
        rows.append({"mechanism": "real (no privacy)", "epsilon": None, "seed": seed,
                     "scores": {f"{s.model}, {s.metric}": s.real for s in real.scores}})
        for epsilon in EPSILONS:
            for name, mechanism in (("MST", MST(epsilon, 1e-9)), ("AIM", AIM(epsilon, 1e-9))):
                start = time.perf_counter()
                model = mechanism.fit(train, rng=seed)
                synthetic = model.synthetic_data(rng=seed)
                found = tstr(train, synthetic, holdout, TARGET, rng=seed)
                quality, _, k_marginal = scores_from_counts(train, synthetic)
                rows.append({"mechanism": name, "epsilon": epsilon, "seed": seed,
                             "scores": {f"{s.model}, {s.metric}": s.synthetic
                                        for s in found.scores},
                             "quality": quality.overall, "k_marginal": k_marginal,
                             "seconds": time.perf_counter() - start})
                print(f"seed {seed} {name} ε={epsilon:g}: "
                      + ", ".join(f"{k} {v:.4f}" for k, v in rows[-1]["scores"].items()),
                      flush=True)
    OUT.write_text(json.dumps({"target": TARGET, "holdout": HOLDOUT, "seeds": list(SEEDS),
                               "rows": rows}, indent=1))
    print()
    metrics = list(rows[0]["scores"])
    print("| trained on | ε | " + " | ".join(metrics) + " | Quality | k-marginal |")
    print("|---|---|" + "---|" * (len(metrics) + 2))
    for name, epsilon in [("real (no privacy)", None)] + [(m, e) for e in EPSILONS
                                                          for m in ("MST", "AIM")]:
        group = [r for r in rows if r["mechanism"] == name and r["epsilon"] == epsilon]

        def cell(values: list[float], digits: int = 3) -> str:
            return (f"{np.mean(values):.{digits}f} ({min(values):.{digits}f}–"
                    f"{max(values):.{digits}f})")

        extra = (["—", "—"] if epsilon is None else
                 [cell([r["quality"] for r in group]), cell([r["k_marginal"] for r in group], 0)])
        print(f"| {name} | {'—' if epsilon is None else f'{epsilon:g}'} | "
              + " | ".join(cell([r["scores"][m] for r in group]) for m in metrics)
              + " | " + " | ".join(extra) + " |")


if __name__ == "__main__":
    main()
