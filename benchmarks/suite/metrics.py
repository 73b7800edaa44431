"""The suite's metrics of one synthetic table against the real training records (and the
holdout no system sees): mean TV over all 1-, 2- and 3-way marginals, the workload error
on 64 random 3-way marginals (a public, seeded draw per table), and train-on-synthetic /
test-on-real accuracy of gradient boosting and logistic regression."""

from __future__ import annotations

from itertools import combinations

import numpy as np

from dpgm import Dataset
from dpgm.evaluation import mean_tv
from dpgm.evaluation.utility import tstr
from dpgm.workload import Workload

WORKLOAD_MARGINALS = 64


def workload(data: Dataset, seed: int = 0) -> Workload:
    """64 distinct 3-way marginals drawn with a public seed (all of them where fewer)."""
    triples = list(combinations(data.domain.attrs, 3))
    rng = np.random.default_rng(seed)
    chosen = rng.choice(len(triples), min(WORKLOAD_MARGINALS, len(triples)), replace=False)
    return Workload([triples[i] for i in sorted(chosen)])


def score(train: Dataset, synthetic: Dataset, holdout: Dataset, target: str) -> dict:
    """Every metric of one synthetic table."""
    found = {f"tv{w}": mean_tv(train, synthetic, w) for w in (1, 2, 3)
             if w <= len(train.domain)}
    found["workload"] = workload(train).error(train, synthetic)
    utility = tstr(train, synthetic, holdout, target)
    for s in utility.scores:
        if s.metric == "accuracy":
            key = "gb_accuracy" if s.model == "gradient boosting" else "lr_accuracy"
            found[key] = s.synthetic
            found[f"real_{key}"] = s.real
    return found
