"""Fit smartnoise-synth's AIM or MST synthesizer to a CSV and write a synthetic table.

Peer: smartnoise-synth 1.0.8 (PyPI; https://github.com/opendp/smartnoise-sdk), which
runs on mbi (Private-PGM) 1.1.0. Run with the python of a venv that has smartnoise-synth
installed, not with dpgm's:

    snsynth-venv/bin/python run_smartnoise.py --data D.csv --spec S.json --mechanism mst \
        --epsilon 1 --seed 0 --out synth.csv

Both synthesizers fit with the 'cube' transformer style, smartnoise's default for them:
a numeric column becomes a BinTransformer (its default of 10 equal-width bins) and is
decoded to the bin midpoint; a categorical column becomes a LabelTransformer. The public
bounds from the spec are handed to each BinTransformer, so preprocessor_eps stays 0 and
the whole epsilon goes to the synthesizer. Integer columns are rounded after decoding.
smartnoise takes no seed argument, so --seed seeds numpy's and Python's global generators
(selection and sampling); the DP noise comes from OpenDP, which draws from the OS
generator, so two runs with the same seed differ.
Prints one JSON line.
"""
import contextlib
import json
import random
import sys
import time

import numpy as np
import pandas as pd
from _runner import parser, report
from snsynth import Synthesizer
from snsynth.transform import BinTransformer, LabelTransformer


def main():
    ap = parser(__doc__.splitlines()[0])
    a = ap.parse_args()

    cols = json.load(open(a.spec))["columns"]
    cat = [c for c, s in cols.items() if s["kind"] == "categorical"]
    df = pd.read_csv(a.data, dtype={c: str for c in cat})[list(cols)]
    constraints = {c: (LabelTransformer(nullable=False) if s["kind"] == "categorical"
                       else BinTransformer(lower=s["lower"], upper=s["upper"]))
                   for c, s in cols.items()}

    random.seed(a.seed)
    np.random.seed(a.seed)  # noqa: NPY002 - smartnoise and mbi draw from the global generator
    synth = Synthesizer.create(a.mechanism, epsilon=a.epsilon, delta=a.delta)
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(sys.stderr):  # smartnoise prints; keep stdout for JSON
        synth.fit(df, transformer=constraints, preprocessor_eps=0.0)
        t1 = time.perf_counter()
        out = synth.sample(len(df))
    t2 = time.perf_counter()
    out = pd.DataFrame(out, columns=list(cols)) if not isinstance(out, pd.DataFrame) else out
    for c, s in cols.items():
        if s["kind"] == "numeric" and s.get("integer"):
            out[c] = out[c].astype(float).round().astype("int64")
    out[list(cols)].to_csv(a.out, index=False)

    spent, _ = synth._transformer.odometer.spent
    notes = (f"smartnoise-synth {a.mechanism.upper()} (style 'cube'): numeric columns -> "
             f"BinTransformer, {BinTransformer().bins} equal-width bins on the public bounds, "
             f"decoded to bin midpoints (integers rounded afterwards); preprocessing epsilon "
             f"spent: {spent} (bounds given; without them approx_bounds would need "
             f"preprocessor_eps > 0, subtracted from epsilon); categorical labels are read "
             f"from the data by LabelTransformer (no DP, no way to pass public labels); "
             f"model epsilon {synth.epsilon:g}, delta={a.delta:g} (zCDP).")
    report(t0, t1, t2, notes)


if __name__ == "__main__":
    main()
