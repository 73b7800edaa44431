"""Fit dpmm's AIM, MST or PrivBayes pipeline to a CSV and write a synthetic table of the same size.

Peer: dpmm 0.1.9 (PyPI; https://github.com/sassoftware/dpmm), which pulls in opendp 0.12.1,
numpy 1.26.4 and pandas 2.1.0. Build its venv outside the repository and run this script
with its python, not with dpgm's:

    python3 -m venv dpmm-venv && dpmm-venv/bin/pip install dpmm==0.1.9
    dpmm-venv/bin/python benchmarks/peers/run_dpmm.py --data D.csv --spec S.json \
        --mechanism aim --epsilon 1 --seed 0 --out synth.csv

Discretisation (``--binning spec``, the default): the suite's one public discretisation,
identical for every system. The runner codes each column itself from the spec, by dpgm's
rules (``_codes.py``, shared by every runner: labels in order, dpgm's bin edges, a last
code for missing values where a column is nullable). dpmm's pipeline is given these codes
with the public domain sizes and its own preprocessing disabled, so no budget goes to
binning or domains: the whole epsilon goes to the model. Synthetic codes are decoded as
dpgm decodes them (``_codes.py``). (dpmm's UniformBinner takes a number of bins too, but its
edges are computed in other floating point and it rounds integer draws, which can leave a
bin: coding here keeps the edges exactly dpgm's.)

``--binning privtree``: dpmm's own preprocessing instead (TableBinner with PrivTree bins,
n_bins="auto", given the public bounds and labels); it charges ``--proc-frac`` * epsilon
for binning on top of the model's (1 - proc_frac) * epsilon, and decodes by itself. Not
the suite's discretisation: for comparison only.

Model settings are dpmm's defaults (compress=True), except AIM's ``max_model_size``: the
pipeline passes None, which lifts AIM's model-size limit altogether; this runner passes
80 MB, the default of dpmm's AIM model and of the AIM paper (``--max-model-size``).

Seeding: --seed is dpmm's random_state (a numpy RandomState: the selection steps,
PrivBayes's candidates, the estimation's initialisation, sampling) and seeds the runner's
decoding. The noise itself comes from OpenDP, which draws from the OS generator, so two
runs with the same seed differ. Prints one JSON line.
"""
import contextlib
import sys
import time
from importlib.metadata import version

import numpy as np
import pandas as pd
from _codes import decode, encode, read_table, size
from _runner import parser, report
from dpmm.pipelines import AIMPipeline, MSTPipeline, PrivBayesPipeline

MECHANISMS = ("aim", "mst", "privbayes")
PIPELINES = {"aim": AIMPipeline, "mst": MSTPipeline, "privbayes": PrivBayesPipeline}




def privtree_input(frame: pd.DataFrame, columns: dict) -> tuple[pd.DataFrame, dict]:
    """Raw values and dpmm's domain dict for its own TableBinner (--binning privtree)."""
    frame = frame.copy()
    for c, s in columns.items():  # dpmm infers numeric vs categorical from the dtype
        if s["kind"] == "numeric":
            frame[c] = pd.to_numeric(frame[c]).astype("int64" if s.get("integer") else "float64")
    domain = {c: ({"categories": [str(v) for v in s["labels"]]} if s["kind"] == "categorical"
                  else {"lower": s["lower"], "upper": s["upper"]}) for c, s in columns.items()}
    return frame, domain


def main():
    ap = parser(__doc__.splitlines()[0], MECHANISMS)
    ap.add_argument("--binning", choices=["spec", "privtree"], default="spec",
                    help="spec: the suite's public bins, no budget (default); privtree: "
                         "dpmm's PrivTree binning with --proc-frac of epsilon")
    ap.add_argument("--proc-frac", type=float, default=0.1,
                    help="with --binning privtree: the share of epsilon spent on binning")
    ap.add_argument("--max-model-size", type=float, default=80.0,
                    help="AIM's model-size limit in MB (dpmm's AIM default; 0 = none)")
    a = ap.parse_args()
    columns, frame = read_table(a.data, a.spec)
    Pipeline = PIPELINES[a.mechanism]
    gen = {"max_model_size": a.max_model_size or None} if a.mechanism == "aim" else {}

    t0 = time.perf_counter()  # coding the table counts in the fit, as dpgm's does
    if a.binning == "spec":
        data = pd.DataFrame(encode(frame, columns), columns=list(columns))
        domain = {c: size(s) for c, s in columns.items()}
        model_eps = a.epsilon
        model = Pipeline(epsilon=model_eps, delta=a.delta, disable_processing=True, **gen)
    else:
        data, domain = privtree_input(frame, columns)
        proc_eps = a.proc_frac * a.epsilon if a.proc_frac > 0 else None  # None: uniform
        model_eps = a.epsilon - (proc_eps or 0.0)
        model = Pipeline(epsilon=model_eps, delta=a.delta, proc_epsilon=proc_eps, **gen)
    with contextlib.redirect_stdout(sys.stderr):  # keep stdout for the JSON line
        model.fit(data, domain, random_state=a.seed)
        t1 = time.perf_counter()
        synth = model.generate(n_records=len(data), random_state=a.seed)
        if a.binning == "spec":
            synth = decode(synth[list(columns)], columns, np.random.default_rng(a.seed))
    t2 = time.perf_counter()
    synth[list(columns)].to_csv(a.out, index=False)

    size_note = (f", max_model_size {a.max_model_size:g} MB" if a.mechanism == "aim"
                 and a.max_model_size else "")
    if a.binning == "spec":
        numeric = sum(s["kind"] == "numeric" for s in columns.values())
        notes = (f"dpmm {version('dpmm')} {Pipeline.__name__} (dpmm defaults{size_note}) on "
                 f"the suite's discretisation: the runner codes every column from the public spec "
                 f"({numeric} numeric columns in the spec's bins with dpgm's edges, labels "
                 f"from the spec), dpmm preprocessing disabled, no budget on binning or "
                 f"domains; the whole epsilon {model_eps:g} goes to the model (zCDP, "
                 f"delta={a.delta:g}); decoded by the runner as dpgm decodes (uniform within "
                 f"the bin, on the whole numbers or decimals of the spec).")
    else:
        notes = (f"dpmm {version('dpmm')} {Pipeline.__name__} (dpmm defaults{size_note}), "
                 f"dpmm's own binning (not the suite's): numeric columns binned by "
                 f"{model.proc.binner_type} (n_bins='auto', public bounds given); bins per "
                 f"column {model.proc.n_bins}; preprocessing epsilon {proc_eps} split evenly "
                 f"over numeric columns (spent {model.proc.spent_epsilon}), pure eps-DP "
                 f"Laplace, on top of the model's epsilon {model_eps:g} (zCDP, "
                 f"delta={a.delta:g}); decoded by dpmm (uniform within the bin, integers "
                 f"rounded).")
    report(t0, t1, t2, notes)


if __name__ == "__main__":
    main()
