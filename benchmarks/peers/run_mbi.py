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

Discretisation, from the spec alone (no budget), by dpgm's rules (``_codes.py``, shared
by every runner: labels in order, dpgm's bin edges, a last code for missing values where
a column is nullable); decoding as dpgm decodes (a number drawn uniformly within its
bin, on the spec's grid of whole numbers or decimals). --seed seeds numpy's global
generator, from which the scripts and mbi draw everything (Gaussian noise, the
exponential mechanism, synthetic records), and a separate generator for the runner's
decoding and row-count fix; estimation in JAX is deterministic, so a run is reproducible
from its seed. fit_s includes the scripts' own record sampling (both draw inside
run()/MST()); sample_s is the decoding alone.

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
import sys
import time
import types

import numpy as np
from _codes import decode, encode, read_table, size
from _runner import parser, report

MECHANISMS = ("aim", "mst")
MBI_VERSION = "2.0.0"
MECHANISMS_COMMIT = "361705d7f05f8c0ac4d5b3640e688eb4f692346e"


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
    a = parser(__doc__.splitlines()[0], MECHANISMS).parse_args()
    cols, df = read_table(a.data, a.spec)
    codes, sizes = encode(df, cols), {c: size(s) for c, s in cols.items()}

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
