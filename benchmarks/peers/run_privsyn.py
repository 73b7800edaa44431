"""Fit PrivSyn (the privsyn-core package) to a CSV and write a synthetic table of the same size.

Peer: privsyn-core 0.1.1 (PyPI), a standalone packaging of the discrete PrivSyn algorithm
(Zhang et al., USENIX Security 2021): DenseMarg marginal selection and combination, then
GUM synthesis. Run with the python of a venv built outside this repository, not with
dpgm's:

    python3.11 -m venv privsyn-venv
    privsyn-venv/bin/pip install privsyn-core==0.1.1

    privsyn-venv/bin/python run_privsyn.py --data D.csv --spec S.json --mechanism privsyn \
        --epsilon 1 --seed 0 --out synth.csv

The model is privsyn.PrivSynModel(epsilon, delta, random_state=seed) with the package's
default parameters (update_iterations 50, consist_iterations 501, ...); it turns
(epsilon, delta) into zCDP rho with its own cdp_rho (the same conversion as Private-PGM's)
and spends 10% of rho on pairwise dependence (InDif), 10% on the one-way marginals and
80% on the selected, combined marginals (Gaussian noise). fit() selects and measures;
sample(n) runs GUM. Its marginal artifacts go to a temporary folder that is removed.

Two defects of privsyn-core 0.1.1 (the same code as upstream privsyn-tabular's
method/synthesis/privsyn at 6315dfcaef98) are mended by default, through the package's
own functions (--as-published turns the mending off):

* GUM leaves at code 0 every attribute that none of its record-update components
  covers. Attribute appending (clip_graph) strips the leaves of the selected marginals'
  graph layer by layer, so where that graph is a forest (Adult at epsilon 1: 11 pairs on
  14 attributes) no component is left: GUM updates nothing and every appended attribute
  is drawn conditioned on all-zero anchors (1-way TV 0.17 on Adult). Mended: each such
  attribute is given a component of its own, its noisy one-way marginal, so GUM draws
  it from that before the leaves are appended to it.
* append_attrs shuffles the records after each appended attribute with
  np.random.shuffle(df.values), which with pandas 2 or 3 (the package asks for >= 2.1)
  shuffles a copy, once a column has been assigned, and so does nothing: attributes
  appended to the same anchor come out co-monotone in record order. Mended:
  append_attrs is called one attribute at a time and the records are shuffled (numpy's
  global generator) after each, as intended.

The table is coded from the spec alone, as every runner codes it (``_codes.py``: labels
in order, dpgm's bin edges, a last code for missing values where a column is nullable);
decoding as dpgm decodes (uniform within the bin, on the spec's grid where it has one). --seed is
PrivSynModel's random_state, which seeds numpy's global generator for fit and again for
sample (all of PrivSyn's noise and randomness is drawn from it), and seeds the runner's
decoding; a run is reproducible from its seed where Python's string hashing is seeded
too (``PYTHONHASHSEED``, which the suite sets to the seed): PrivSyn iterates over sets,
and two runs of one seed without it gave different tables. Prints one JSON line.
"""
import contextlib
import sys
import tempfile
import time

import numpy as np
import pandas as pd
from _codes import decode, encode, read_table, size
from _runner import parser, report

MECHANISMS = ("privsyn",)
PRIVSYN_VERSION = "0.1.1"


def mend(gum, layer_type) -> list:
    """Mend the two defects above (in privsyn.lib_synthesize.GUM's namespace); return
    the list that collects the attributes given a component of their own."""
    alone = []
    improving_convergence, append_attrs = gum.GUM_Mechanism.improving_convergence, gum.append_attrs

    def covered_improving_convergence(self):
        improving_convergence(self)
        covered = set().union(*map(set, self.iterate_keys))
        for attr in self.original_dataset.domain.attrs:
            if attr not in covered:
                self.iterate_keys[(attr,)] = [(attr,)]
                alone.append(attr)

    def shuffled_append_attrs(logger, domain, clip_layers, df, margs):
        for layer in clip_layers[::-1]:
            for attr in layer.attrs:
                one = layer_type()
                one.attrs = {attr}
                one.attrs_ancestor = {attr: layer.attrs_ancestor[attr]}
                one.attrs_marginal = {attr: layer.attrs_marginal[attr]}
                append_attrs(logger, domain, [one], df, margs)
                df.iloc[:, :] = df.to_numpy()[np.random.permutation(len(df))]  # noqa: NPY002

    gum.GUM_Mechanism.improving_convergence = covered_improving_convergence
    gum.append_attrs = shuffled_append_attrs
    return alone


def main():
    ap = parser(__doc__.splitlines()[0], MECHANISMS)
    ap.add_argument("--as-published", action="store_true",
                    help="run privsyn-core as it is, without mending its two defects")
    a = ap.parse_args()
    from privsyn import PrivSynModel
    from privsyn.lib_synthesize import GUM
    from privsyn.lib_synthesize.converge_imp import ClipLayer

    alone = None if a.as_published else mend(GUM, ClipLayer)

    cols, df = read_table(a.data, a.spec)
    codes, sizes = encode(df, cols), {c: size(s) for c, s in cols.items()}
    frame = pd.DataFrame(codes, columns=list(cols))
    n = len(df)

    rng = np.random.default_rng([a.seed, 1])
    with tempfile.TemporaryDirectory() as artifacts, contextlib.redirect_stdout(sys.stderr):
        model = PrivSynModel(epsilon=a.epsilon, delta=a.delta, random_state=a.seed,
                             artifact_root=artifacts)
        t0 = time.perf_counter()
        model.fit(frame, sizes)
        t1 = time.perf_counter()
        synth = model.sample(n)
        out = decode({c: synth[c].to_numpy() for c in cols}, cols, rng)
        t2 = time.perf_counter()
        selected = model.selected_marginals_
    out.to_csv(a.out, index=False)

    mended = ("as published (unmended)" if alone is None else
              f"mended: attributes GUM left uncovered, drawn from their one-way marginals: "
              f"{sorted(alone) or 'none'}; records shuffled after each appended attribute")
    notes = (f"privsyn-core {PRIVSYN_VERSION} PrivSynModel with its default parameters, "
             f"{mended}; "
             f"epsilon={a.epsilon:g}, delta={a.delta:g} -> zCDP rho by its cdp_rho, split "
             f"10% InDif selection / 10% one-way / 80% combined marginals (Gaussian); "
             f"{len(selected)} combined marginals measured. Domain from the spec "
             f"only (categorical codes over its labels; numeric: the spec's equal-width "
             f"bins, dpgm's edges); decoding draws uniformly within the bin (on the "
             f"integer/decimals grid where the spec gives one). --seed is random_state "
             f"(numpy's global generator, reseeded for fit and for sample) and seeds the "
             f"runner's decoding (with PYTHONHASHSEED fixed: PrivSyn iterates over "
             f"sets).")
    report(t0, t1, t2, notes)


if __name__ == "__main__":
    main()
