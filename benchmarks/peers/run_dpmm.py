"""Fit dpmm's AIM or MST pipeline to a CSV and write a synthetic table of the same size.

Peer: dpmm 0.1.9 (PyPI; https://github.com/sassoftware/dpmm). Run with the python of a
venv that has dpmm installed, not with dpgm's:

    dpmm-venv/bin/python run_dpmm.py --data D.csv --spec S.json --mechanism aim \
        --epsilon 1 --seed 0 --out synth.csv

Numeric columns go through dpmm's default preprocessing (TableBinner with PrivTree
binning, n_bins="auto"), given the public bounds from the spec so that no budget is
spent on bounds. dpmm's pipeline charges the binning budget (proc_epsilon) on top of
the model's epsilon, so the total --epsilon is split: proc_epsilon = proc_frac * E and
the model gets (1 - proc_frac) * E (proc_frac defaults to 0.1, dpmm's own split at E=1).
Categorical columns get their public labels as the domain. --seed is dpmm's random_state
(selection and sampling); the DP noise itself comes from OpenDP, which draws from the OS
generator, so two runs with the same seed differ. Prints one JSON line.
"""
import contextlib
import json
import sys
import time

import pandas as pd
from _runner import parser, report
from dpmm.pipelines import AIMPipeline, MSTPipeline


def main():
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--proc-frac", type=float, default=0.1,
                    help="share of epsilon spent on PrivTree binning (0 = uniform bins, no budget)")
    a = ap.parse_args()

    cols = json.load(open(a.spec))["columns"]
    cat = [c for c, s in cols.items() if s["kind"] == "categorical"]
    df = pd.read_csv(a.data, dtype={c: str for c in cat})[list(cols)]
    for c, s in cols.items():  # dpmm infers numeric vs categorical from the dtype
        if s["kind"] == "numeric":
            df[c] = df[c].astype("int64" if s.get("integer") else "float64")
    domain = {c: ({"categories": [str(v) for v in s["labels"]]} if s["kind"] == "categorical"
                  else {"lower": s["lower"], "upper": s["upper"]}) for c, s in cols.items()}

    proc_eps = a.proc_frac * a.epsilon if a.proc_frac > 0 else None  # None -> uniform binner
    Pipeline = AIMPipeline if a.mechanism == "aim" else MSTPipeline
    model = Pipeline(epsilon=a.epsilon - (proc_eps or 0.0), delta=a.delta,
                     proc_epsilon=proc_eps)

    t0 = time.perf_counter()
    with contextlib.redirect_stdout(sys.stderr):  # keep stdout for the JSON line
        model.fit(df, domain, random_state=a.seed)
        t1 = time.perf_counter()
        synth = model.generate(n_records=len(df), random_state=a.seed)
    t2 = time.perf_counter()
    synth[list(cols)].to_csv(a.out, index=False)

    bins = model.proc.n_bins
    spent = model.proc.spent_epsilon
    notes = (f"dpmm {Pipeline.__name__}: numeric columns binned by "
             f"{model.proc.binner_type} (n_bins='auto', public bounds given, so no budget on "
             f"bounds); bins per column {bins}; preprocessing epsilon {proc_eps} split evenly "
             f"over numeric columns (spent {spent}), pure eps-DP Laplace, charged on top of "
             f"the model's epsilon {a.epsilon - (proc_eps or 0.0):g} (zCDP, delta={a.delta:g}); "
             f"decoding draws uniformly within the bin, integers rounded.")
    report(t0, t1, t2, notes)


if __name__ == "__main__":
    main()
