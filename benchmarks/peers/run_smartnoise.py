"""Fit smartnoise-synth's AIM or MST synthesizer to a CSV and write a synthetic table.

Peer: smartnoise-synth 1.0.8 (PyPI; https://github.com/opendp/smartnoise-sdk), which runs
on mbi (Private-PGM) 1.1.0 with jax 0.10.2 and draws its noise from opendp 0.14.2 (numpy
2.4.6, pandas 2.3.3; it also pulls in torch for its GANs). Build its venv outside the
repository and run this script with its python, not with dpgm's:

    python3 -m venv snsynth-venv && snsynth-venv/bin/pip install smartnoise-synth==1.0.8
    snsynth-venv/bin/python benchmarks/peers/run_smartnoise.py --data D.csv --spec S.json \
        --mechanism mst --epsilon 1 --seed 0 --out synth.csv

GSD is not offered: smartnoise-synth 1.0.8, the newest release on PyPI, has no GSD
synthesizer (Synthesizer.list_synthesizers(): mwem, dpctgan, patectgan, mst, pacsynth,
dpgan, pategan, aim); GSD lives only in the smartnoise-sdk repository's source.

Discretisation: the suite's one public discretisation, identical for every system. The
runner codes each column itself from the spec, by dpgm's rules (``_codes.py``, shared
by every runner: labels in order, dpgm's bin edges, a last code for missing values where
a column is nullable). smartnoise gets these codes through a TableTransformer of
PublicCodes, a column transformer that passes a code through and declares the public
number of codes, so preprocessor_eps stays 0 (no budget on bounds, bins or domains) and
the whole epsilon goes to the synthesizer. (smartnoise's own BinTransformer computes its
bins in other floating point, and its LabelTransformer reads a column's categories off
the data, dropping the labels no record has.) Synthetic codes are decoded as dpgm decodes
them (``_codes.py``).

Sampling (``--sampling``): smartnoise draws the records with mbi 1.1.0's
MarkovRandomField.synthetic_data, whose default method "round" (randomized rounding)
gives each column's values to the records of a group in the order of their index, not in
random order, so columns that share a parent come out comonotone: on adult (MST, eps 1)
the synthetic table's 2-way marginals sit at a mean TV of 0.11 from the model's own,
against 0.015 with method "sample". The runner therefore makes "sample" (i.i.d. draws
from the fitted model, mbi's other method) the default; ``--sampling round`` keeps
smartnoise as shipped. The model itself is untouched.

Synthesizer settings are smartnoise's defaults (AIM: max_model_size 80 MB, 2-way
workload of at most 10,000 cells; MST: 5,000 mirror-descent iterations). smartnoise
takes no seed argument, so --seed seeds numpy's and Python's global generators (the
selection steps and sampling, mbi's draws) and the runner's decoding; the DP noise comes
from OpenDP, which draws from the OS generator, so two runs with the same seed differ.
Prints one JSON line.
"""
import contextlib
import functools
import random
import sys
import time
from importlib.metadata import version

import numpy as np
import pandas as pd
from _codes import decode, encode, read_table, size
from _runner import parser, report
from mbi import MarkovRandomField
from snsynth import Synthesizer, TableTransformer
from snsynth.transform.base import ColumnTransformer
from snsynth.transform.definitions import ColumnType

MECHANISMS = ("aim", "mst")




class PublicCodes(ColumnTransformer):
    """A column already coded 0..size-1 from the public spec: passed through as a
    categorical column of ``size`` codes (nothing is learnt from the data)."""

    def __init__(self, size: int):
        self.size = size
        super().__init__()

    @property
    def output_type(self):
        return ColumnType.CATEGORICAL

    @property
    def cardinality(self):
        return [self.size]

    def _clear_fit(self):
        self._fit_complete = True
        self.output_width = 1

    def _fit(self, val):
        pass

    def _transform(self, val):
        return int(val)

    def _inverse_transform(self, val):
        return int(val)


def main():
    ap = parser(__doc__.splitlines()[0], MECHANISMS)  # smartnoise-synth 1.0.8 has no GSD
    ap.add_argument("--sampling", choices=["sample", "round"], default="sample",
                    help="how mbi draws the records: sample (i.i.d. from the model, the "
                         "default here) or round (mbi 1.1.0's default, see the docstring)")
    a = ap.parse_args()
    MarkovRandomField.synthetic_data = functools.partialmethod(
        MarkovRandomField.synthetic_data, method=a.sampling)
    columns, frame = read_table(a.data, a.spec)

    random.seed(a.seed)
    np.random.seed(a.seed)  # noqa: NPY002 - smartnoise and mbi draw from the global generator
    synth = Synthesizer.create(a.mechanism, epsilon=a.epsilon, delta=a.delta)
    t0 = time.perf_counter()  # coding the table counts in the fit, as dpgm's does
    codes = pd.DataFrame(encode(frame, columns), columns=list(columns))
    transformer = TableTransformer([PublicCodes(size(s)) for s in columns.values()])
    with contextlib.redirect_stdout(sys.stderr):  # smartnoise prints; keep stdout for JSON
        synth.fit(codes, transformer=transformer, preprocessor_eps=0.0)
        t1 = time.perf_counter()
        out = synth.sample(len(codes))
        out = pd.DataFrame(out, columns=list(columns)) if not isinstance(
            out, pd.DataFrame) else out
        out = decode(out[list(columns)], columns, np.random.default_rng(a.seed))
    t2 = time.perf_counter()
    out[list(columns)].to_csv(a.out, index=False)

    spent, _ = synth._transformer.odometer.spent
    numeric = sum(s["kind"] == "numeric" for s in columns.values())
    notes = (f"smartnoise-synth {version('smartnoise-synth')} {a.mechanism.upper()} (mbi "
             f"{version('mbi')}; smartnoise defaults; records drawn with mbi's synthetic_data "
             f"method={a.sampling!r}) on the suite's discretisation: the "
             f"runner codes every column from the public spec ({numeric} numeric columns in "
             f"the spec's bins with dpgm's edges, labels from the spec) and passes the codes "
             f"with their public sizes; preprocessing epsilon spent: {spent}; the whole "
             f"epsilon {synth.epsilon:g} goes to the synthesizer (zCDP, delta={a.delta:g}); "
             f"decoded by the runner as dpgm decodes (uniform within the bin, on the whole "
             f"numbers or decimals of the spec).")
    report(t0, t1, t2, notes)


if __name__ == "__main__":
    main()
