"""A mechanism's fit on a bundled table: time, peak memory, model size, and the model's
own error.

One run: ``.venv/bin/python experiments/mechanism_error.py MECHANISM TABLE EPSILON SEED
[OPTIONS]`` with MECHANISM a name of ``dpgm.mechanisms.REGISTRY`` (aim, swift, mst, ...),
TABLE ``diamonds`` (the bundled table and schema) or ``adult`` (the bundled codes), and
OPTIONS a JSON object of the mechanism's options, e.g. '{"max_model_size": 80}'. It
prints one line of JSON: seconds of the fit, peak memory of the process, AIM's rounds,
the model's cells, and the mean TV distance between the model's and the data's marginals
over all 2-way and 30 random 3-way marginals (docs/mechanisms.md: "AIM's model-size
cap", "SWIFT against AIM").
"""

from __future__ import annotations

import itertools
import json
import resource
import sys
import time
from importlib import resources

import numpy as np
import pandas as pd

from dpgm import Dataset, Domain, Schema
from dpgm.mechanisms import REGISTRY


def main() -> None:
    name, table, epsilon, seed = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
    options = json.loads(sys.argv[5]) if len(sys.argv) > 5 else {}
    folder = resources.files("dpgm") / "datasets"
    if table == "diamonds":
        schema = Schema.load(folder / "diamonds-schema.json")
        frame = pd.read_csv(folder / "diamonds.csv.gz")
        data, fitted, extra = schema.encode(frame), frame, {"schema": schema}
    else:
        domain = Domain.load(folder / "adult-domain.json")
        data = Dataset.from_pandas(pd.read_csv(folder / "adult.csv.gz"), domain)
        fitted, extra = data, {}
    start = time.time()
    mechanism = REGISTRY[name](epsilon, **options)
    model = mechanism.fit(fitted, rng=seed, **extra)
    seconds = time.time() - start
    domain, total = data.domain, data.total
    pairs = list(itertools.combinations(domain.attrs, 2))
    triples = list(itertools.combinations(domain.attrs, 3))
    picked = [triples[i] for i in np.random.default_rng(0).choice(len(triples), 30,
                                                                  replace=False)]

    def tv(cliques) -> float:
        return float(np.mean([0.5 * np.abs(model.marginal(c) / model.total - t / total).sum()
                              for c, t in zip(cliques, data.marginals(cliques))]))

    print(json.dumps({
        "mechanism": name, "table": table, "epsilon": epsilon, "seed": seed, "options": options,
        "seconds": round(seconds, 1),
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
        "rounds": len(getattr(mechanism, "history", [])),
        "model_cells": int(sum(domain.size(c) for c in model.tree.cliques)),
        "tv2": round(tv(pairs), 5), "tv3": round(tv(picked), 5),
        "timings": {k: round(v, 1) for k, v in getattr(mechanism, "timings", {}).items()}}))


if __name__ == "__main__":
    main()
