"""Fit the reference Private-PGM AIM or MST (mbi 2.0.0) to a CSV and write a synthetic table.

Peer: mbi 2.0.0 (PyPI, the Private-PGM library) with the reference mechanism scripts
aim.py, mst.py, mechanism.py and cdp2adp.py from the folder mechanisms/ of its
repository, https://github.com/ryan112358/mbi at commit
361705d7f05f8c0ac4d5b3640e688eb4f692346e (2026-07-22; its pyproject still says 1.3.0,
and no later commit was to hand). The pip package does not ship them, and the copies in
ryan112358/private-pgm (last changed at 4d2b3c566b14) are written for the mbi 1.x API
and do not run on 2.0. Run with the python of a venv built outside this repository, not
with dpgm's:

    python3.11 -m venv mbi-venv
    mbi-venv/bin/pip install mbi==2.0.0 pandas matplotlib  # cdp2adp.py imports matplotlib
    git clone https://github.com/ryan112358/mbi mbi-src
    git -C mbi-src checkout 361705d7f05f8c0ac4d5b3640e688eb4f692346e
    mkdir mbi-mechanisms && cp mbi-src/mechanisms/{aim,mst,mechanism,cdp2adp}.py mbi-mechanisms/
    echo "$PWD/mbi-mechanisms" > mbi-venv/lib/python3.11/site-packages/mbi-mechanisms.pth

    mbi-venv/bin/python run_mbi.py --data D.csv --spec S.json --mechanism aim \
        --epsilon 1 --seed 0 --out synth.csv

The scripts are used unmodified, as their own __main__ uses them: AIM(epsilon, delta,
max_model_size=80, max_iters=1000).run(data, workload, n) on the workload of all 2-way
marginals of at most 10,000 cells, weight 1; MST(data, epsilon, delta). Each turns
(epsilon, delta) into zCDP rho with cdp2adp.cdp_rho. JAX runs in its default float32, as
in the scripts. The scripts still use three names that mbi 1.3 deprecated and 2.0
removed; the runner bridges them without editing mbi's files or the scripts: mst.py
reads Domain.attrs (now Domain.attributes; the alias is put back on the class) and calls
Dataset(data, domain) (keyword-only in 2.0), and aim.py warm-starts
MirrorDescent().estimate with potentials=, which 2.0 names warm_start= (the same
CliqueVector, expanded to the new cliques the same way). MST's own synthetic_data()
draws as many records as the model's noisy total; the runner then drops random records or
repeats random ones to hit the training size (a few records either way).

Discretisation, from the spec alone (no budget): a categorical column is coded over its
labels in order; a numeric column is cut into its spec's bins exactly as dpgm cuts it
(``bins`` equal-width bins on [lower, upper], edges rounded to 15 significant digits, or
the listed edges; bin i holds [e_i, e_i+1), the last bin its upper edge too; values
outside the bounds clipped). Decoding draws a value uniformly within its bin: among the
whole numbers (integer) or the numbers written with ``decimals`` decimals that fall in
the bin, else on the line. --seed seeds numpy's global generator, from which the scripts
and mbi draw everything (Gaussian noise, the exponential mechanism, synthetic records),
and a separate generator for the runner's decoding and row-count fix; estimation in JAX
is deterministic, so a run is reproducible from its seed. fit_s includes the scripts'
own record sampling (both draw inside run()/MST()); sample_s is the decoding alone.
run_privsyn.py imports this file's check, encode and decode.

Speed: on CPU the AIM script spends most of each round in worst_approximated, whose
model.project(cl) for every candidate is, in mbi 2.0, variable elimination jitted per
clique and per model structure, so it is compiled afresh for ~100 candidates every round.
On a shared 2-core machine a round of Adult took about 2 minutes (10 rounds, 10% of the
budget, in 21 minutes at epsilon 1: no finish within 30 minutes); diamonds took 16.

Memory: those executables are never freed, and each holds memory maps: left alone, a
run passes Linux's default vm.max_map_count (65,530) within about 15 minutes and dies
with "LLVM compilation error: Cannot allocate memory". The runner clears JAX's caches
before each estimate (once per round; none of the last round's programs is used again),
which changes no result. Prints one JSON line.
"""
import contextlib
import itertools
import json
import sys
import time
import types

import numpy as np
import pandas as pd
from _runner import parser, report

MECHANISMS = ("aim", "mst")
MBI_VERSION = "2.0.0"
MECHANISMS_COMMIT = "361705d7f05f8c0ac4d5b3640e688eb4f692346e"


# -- the spec's discretisation (as dpgm.schema.columns cuts and draws) -----------------
def edges_of(spec: dict) -> np.ndarray:
    if isinstance(spec["bins"], list):
        return np.array(spec["bins"], dtype=float)
    edges = np.linspace(float(spec["lower"]), float(spec["upper"]), int(spec["bins"]) + 1)
    return np.array([float(f"{e:.15g}") for e in edges])


def grid(spec: dict, edges: np.ndarray):
    """For each bin, the first and last step k of the values' grid (k * unit) inside it,
    and how step k is written; None where the column has no grid."""
    if spec.get("integer"):
        unit = 1.0
    elif spec.get("decimals") is not None:
        unit = 10.0 ** -spec["decimals"]
    else:
        return None

    def write(k):
        return k if spec.get("integer") else np.round(k * unit, spec["decimals"])

    scaled = edges / unit
    near = np.round(scaled)
    scaled = np.where(np.abs(scaled - near) <= 1e-9, near, scaled)
    first = np.ceil(scaled[:-1])
    last = np.concatenate([np.ceil(scaled[1:-1]) - 1, [np.floor(scaled[-1])]])
    first = np.where(write(first) < edges[:-1], first + 1, first)
    first = np.where(write(first - 1) >= edges[:-1], first - 1, first)
    upper = np.concatenate([edges[1:-1], [np.inf]])
    last = np.where(write(last) >= upper, last - 1, last)
    last = np.where((write(last + 1) < upper) & (write(last + 1) <= edges[-1]), last + 1, last)
    if (first > last).any():
        raise SystemExit("a bin holds no value of its column's grid")
    return first, last, write


def check(cols: dict) -> None:
    for c, s in cols.items():
        if s["kind"] not in ("categorical", "numeric") or s.get("nullable") or s.get(
                "other") or (s.get("refine") or 1) > 1:
            raise SystemExit(f"column {c!r}: only plain categorical and numeric columns "
                             "(no nullable, other or refine) are supported")


def encode(df: pd.DataFrame, cols: dict) -> tuple[dict, dict]:
    """Codes of each column and its number of codes."""
    codes, sizes = {}, {}
    for c, s in cols.items():
        if s["kind"] == "categorical":
            labels = [str(v) for v in s["labels"]]
            code = df[c].map({v: i for i, v in enumerate(labels)})
            if code.isna().any():
                raise SystemExit(f"column {c!r} has values outside its labels")
            codes[c], sizes[c] = code.to_numpy(dtype=np.int64), len(labels)
        else:
            e = edges_of(s)
            x = pd.to_numeric(df[c], errors="raise").to_numpy(dtype=float)
            if not np.isfinite(x).all():
                raise SystemExit(f"column {c!r} has missing or infinite values")
            k = np.searchsorted(e, np.clip(x, e[0], e[-1]), side="right") - 1
            codes[c], sizes[c] = np.minimum(k, len(e) - 2), len(e) - 1
    return codes, sizes


def decode(codes: dict, cols: dict, rng: np.random.Generator) -> pd.DataFrame:
    out = {}
    for c, s in cols.items():
        k = np.asarray(codes[c], dtype=np.int64)
        if s["kind"] == "categorical":
            out[c] = np.array([str(v) for v in s["labels"]], dtype=object)[k]
            continue
        e = edges_of(s)
        g = grid(s, e)
        if g is None:
            out[c] = e[k] + rng.random(len(k)) * (e[k + 1] - e[k])
        else:
            first, last, write = g
            step = np.minimum(first[k] + np.floor(rng.random(len(k)) * (last[k] - first[k] + 1)),
                              last[k])
            out[c] = write(step).astype(np.int64) if s.get("integer") else write(step)
    return pd.DataFrame(out, columns=list(cols))


# -- mbi 2.0 bridges for the 2026-07 scripts -----------------------------------------
def bridge(scripts, mbi, estimation) -> None:
    """The three names the scripts use that mbi 2.0 dropped after deprecating them."""

    import jax

    class MirrorDescent:  # estimate(potentials=P) is estimate(warm_start=P) in 2.0
        def estimate(self, *args, potentials=None, **kwargs):
            jax.clear_caches()  # see "Memory" above: drop the last round's executables
            return estimation.MirrorDescent().estimate(*args, warm_start=potentials, **kwargs)

    for module in scripts:
        module.estimation = types.SimpleNamespace(MirrorDescent=MirrorDescent)
        module.Dataset = lambda data, domain: mbi.Dataset(data=data, domain=domain)
    mbi.Domain.attrs = property(lambda self: self.attributes)  # as 1.x's alias


def main():
    ap = parser(__doc__.splitlines()[0])
    a = ap.parse_args()
    if a.mechanism not in MECHANISMS:
        raise SystemExit(f"run_mbi.py offers {MECHANISMS}, not {a.mechanism!r}")

    cols = json.load(open(a.spec))["columns"]
    check(cols)
    df = pd.read_csv(a.data, dtype=str, keep_default_na=False)[list(cols)]
    codes, sizes = encode(df, cols)

    with contextlib.redirect_stdout(sys.stderr):  # the scripts print; keep stdout for JSON
        import aim
        import mbi
        import mst
        from mbi import estimation
    bridge((aim, mst), mbi, estimation)
    domain = mbi.Domain.fromdict(sizes)
    data = mbi.Dataset(data=codes, domain=domain)
    n = len(df)

    np.random.seed(a.seed)  # noqa: NPY002 - the scripts and mbi draw from the global generator
    rng = np.random.default_rng([a.seed, 1])
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(sys.stderr):
        if a.mechanism == "aim":
            workload = [(cl, 1.0) for cl in itertools.combinations(domain.attrs, 2)
                        if domain.size(cl) <= 10_000]
            mech = aim.AIM(a.epsilon, a.delta, max_model_size=80, max_iters=1000)
            _, synth = mech.run(data, workload, num_synth_rows=n)
            t1 = time.perf_counter()
            drawn = synth.to_dict()
            made = n
        else:
            synth = mst.MST(data, a.epsilon, a.delta)  # fits and draws in one call
            t1 = time.perf_counter()
            drawn = synth.to_dict()
            made = len(next(iter(drawn.values())))
            keep = (rng.permutation(made)[:n] if made >= n else np.concatenate(
                [np.arange(made), rng.integers(0, made, n - made)]))
            drawn = {c: np.asarray(v)[keep] for c, v in drawn.items()}
    out = decode(drawn, cols, rng)
    t2 = time.perf_counter()
    out.to_csv(a.out, index=False)

    how = ("AIM(max_model_size=80, max_iters=1000), workload: all "
           f"{len(workload)} 2-way marginals of <= 10,000 cells, weight 1"
           if a.mechanism == "aim" else
           f"MST, which drew {made} records (its noisy total), resized to {n}")
    notes = (f"mbi {MBI_VERSION} with the reference mechanisms/ scripts of ryan112358/mbi "
             f"@ {MECHANISMS_COMMIT[:12]} (unmodified; bridged for three names mbi 2.0 "
             f"dropped: Domain.attrs, positional Dataset, potentials= -> warm_start=); "
             f"{how}; epsilon={a.epsilon:g}, delta={a.delta:g} -> zCDP rho by "
             f"cdp2adp.cdp_rho; JAX float32, its caches cleared before each estimate (memory "
             f"maps); fit_s includes mbi's own record sampling. "
             f"Domain from "
             f"the spec only (categorical codes over its labels; numeric: the spec's "
             f"equal-width bins, dpgm's edges); decoding draws uniformly within the bin "
             f"(on the integer/decimals grid where the spec gives one). --seed seeds "
             f"numpy's global generator (all of the mechanism's noise, selection and "
             f"sampling) and the runner's decoding.")
    report(t0, t1, t2, notes)


if __name__ == "__main__":
    main()
