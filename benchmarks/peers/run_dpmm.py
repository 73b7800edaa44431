"""Fit dpmm's AIM, MST or PrivBayes pipeline to a CSV and write a synthetic table of the same size.

Peer: dpmm 0.1.9 (PyPI; https://github.com/sassoftware/dpmm), which pulls in opendp 0.12.1,
numpy 1.26.4 and pandas 2.1.0. Build its venv outside the repository and run this script
with its python, not with dpgm's:

    python3 -m venv dpmm-venv && dpmm-venv/bin/pip install dpmm==0.1.9
    dpmm-venv/bin/python benchmarks/peers/run_dpmm.py --data D.csv --spec S.json \
        --mechanism aim --epsilon 1 --seed 0 --out synth.csv

Discretisation (``--binning spec``, the default): the suite's one public discretisation,
identical for every system. The runner codes each column itself from the spec, by dpgm's
rules: a categorical value is the index of its label; a numeric value is clipped to
[lower, upper] and put in one of the spec's ``bins`` equal-width bins, with dpgm's edges
(``np.linspace`` rounded to 15 significant digits, or the spec's list of edges; bin i is
[e_i, e_i+1), the last also holds its upper edge). dpmm's pipeline is given these codes
with the public domain sizes and its own preprocessing disabled, so no budget goes to
binning or domains: the whole epsilon goes to the model. Synthetic codes are decoded as
dpgm decodes them: a label, or a number drawn uniformly within its bin, among the whole
numbers of the bin for an integer column, among the values with the spec's ``decimals``
where given, else on the line. (dpmm's UniformBinner takes a number of bins too, but its
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
import json
import sys
import time
from importlib.metadata import version

import numpy as np
import pandas as pd
from _runner import parser, report
from dpmm.pipelines import AIMPipeline, MSTPipeline, PrivBayesPipeline

MECHANISMS = ("aim", "mst", "privbayes")
PIPELINES = {"aim": AIMPipeline, "mst": MSTPipeline, "privbayes": PrivBayesPipeline}


# -- the suite's discretisation (the same helpers as run_smartnoise.py) ------------------
def edges(spec: dict) -> np.ndarray:
    """dpgm's bin edges of a numeric column (dpgm.schema.columns.Numeric)."""
    if isinstance(spec["bins"], list):
        return np.array([float(e) for e in spec["bins"]])
    lo, hi = float(spec["lower"]), float(spec["upper"])
    return np.array([float(f"{e:.15g}") for e in np.linspace(lo, hi, int(spec["bins"]) + 1)])


def size(spec: dict) -> int:
    return len(spec["labels"]) if spec["kind"] == "categorical" else len(edges(spec)) - 1


def encode(frame: pd.DataFrame, columns: dict) -> pd.DataFrame:
    """Every column's codes 0..size-1, by dpgm's rules (values read as text)."""
    out = {}
    for name, spec in columns.items():
        if spec["kind"] not in ("categorical", "numeric") or spec.get("nullable") or spec.get(
                "other") or (spec.get("refine") or 1) > 1:
            raise SystemExit(f"column {name!r}: only plain categorical and numeric columns "
                             "(no nullable, other or refine) are supported by this runner")
        values = frame[name].str.strip()
        if spec["kind"] == "categorical":
            index = {str(label): i for i, label in enumerate(spec["labels"])}
            codes = values.map(index)
            if codes.isna().any():
                raise SystemExit(f"column {name!r}: {values[codes.isna()].iloc[0]!r} is not "
                                 "one of the spec's labels")
            out[name] = codes.to_numpy(dtype=np.int64)
        else:
            numbers = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64)
            if not np.isfinite(numbers).all():
                bad = values[~np.isfinite(numbers)].iloc[0]
                raise SystemExit(f"column {name!r}: {bad!r} is not a finite number")
            e = edges(spec)
            codes = np.searchsorted(e, np.clip(numbers, e[0], e[-1]), side="right") - 1
            out[name] = np.minimum(codes, len(e) - 2).astype(np.int64)
    return pd.DataFrame(out)


def grid(e: np.ndarray, spec: dict) -> tuple[np.ndarray, np.ndarray]:
    """For each bin, the first and last step k of the column's grid (values k * unit) that
    its coding puts in the bin (dpgm's Numeric._grid_steps, coarse bins)."""
    integer, decimals = bool(spec.get("integer")), spec.get("decimals")
    unit = 1.0 if integer else 10.0 ** -decimals

    def value(k):
        return k if integer else np.round(k * unit, decimals)

    scaled = e / unit
    near = np.round(scaled)
    scaled = np.where(np.abs(scaled - near) <= 1e-9, near, scaled)
    first = np.ceil(scaled[:-1])
    last = np.concatenate([np.ceil(scaled[1:-1]) - 1, [np.floor(scaled[-1])]])
    first = np.where(value(first) < e[:-1], first + 1, first)
    first = np.where(value(first - 1) >= e[:-1], first - 1, first)
    upper = np.concatenate([e[1:-1], [np.inf]])
    last = np.where(value(last) >= upper, last - 1, last)
    last = np.where((value(last + 1) < upper) & (value(last + 1) <= e[-1]), last + 1, last)
    return first, last


def decode(codes: pd.DataFrame, columns: dict, rng: np.random.Generator) -> pd.DataFrame:
    """Codes back to values: labels, or numbers drawn uniformly within their bin (on the
    column's grid of whole numbers or decimals where it has one), as dpgm decodes."""
    out = {}
    for name, spec in columns.items():
        c = codes[name].to_numpy(dtype=np.int64)
        if spec["kind"] == "categorical":
            out[name] = np.asarray(spec["labels"], dtype=object)[c]
            continue
        e = edges(spec)
        line = e[c] + rng.random(len(c)) * (e[c + 1] - e[c])
        if not spec.get("integer") and spec.get("decimals") is None:
            out[name] = line
            continue
        first, last = grid(e, spec)
        k = np.minimum(first[c] + np.floor(rng.random(len(c)) * (last[c] - first[c] + 1)),
                       last[c])
        if spec.get("integer"):
            k = np.where(first[c] <= last[c], k, np.round(line))
            out[name] = k.astype(np.int64)
        else:
            d = spec["decimals"]
            out[name] = np.where(first[c] <= last[c], np.round(k * 10.0 ** -d, d), line)
    return pd.DataFrame(out)
# ----------------------------------------------------------------------------------------


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
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--binning", choices=["spec", "privtree"], default="spec",
                    help="spec: the suite's public bins, no budget (default); privtree: "
                         "dpmm's PrivTree binning with --proc-frac of epsilon")
    ap.add_argument("--proc-frac", type=float, default=0.1,
                    help="with --binning privtree: the share of epsilon spent on binning")
    ap.add_argument("--max-model-size", type=float, default=80.0,
                    help="AIM's model-size limit in MB (dpmm's AIM default; 0 = none)")
    a = ap.parse_args()
    if a.mechanism not in MECHANISMS:
        raise SystemExit(f"run_dpmm.py: unknown mechanism {a.mechanism!r}; this runner "
                         f"offers {', '.join(MECHANISMS)}")

    columns = json.load(open(a.spec))["columns"]
    frame = pd.read_csv(a.data, dtype=str, keep_default_na=False, na_filter=False)
    frame = frame[list(columns)]
    Pipeline = PIPELINES[a.mechanism]
    gen = {"max_model_size": a.max_model_size or None} if a.mechanism == "aim" else {}

    t0 = time.perf_counter()  # coding the table counts in the fit, as dpgm's does
    if a.binning == "spec":
        data, domain = encode(frame, columns), {c: size(s) for c, s in columns.items()}
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
