"""Benchmark: Private-PGM with loopy belief propagation against mbi's approximate estimator.

The data: 30 attributes of 3 values drawn from a third-order chain with Dirichlet(1)
edge potentials (the CGM note's generator), N = 100,000 records. Every 2-way marginal
(435 tables) is measured with Gaussian noise σ = 100 (seed 0). Two region graphs:

* ``pairs``: the 435 measured pairs — where the junction tree is out of reach;
* ``pairs+triples``: the same plus 20 unmeasured triples of the chain (i, i+1, i+2), whose
  pseudo-marginals are the estimators' answers to unmeasured 3-way queries (mbi's way:
  its approximate estimator answers only the cliques of its region graph). Both close
  the region graph under intersection, so consecutive triples agree on their shared pair.

On ``pairs``, dpgm answers the triples too, by the maximum-entropy completion of its
pair pseudo-marginals (``MarkovRandomField.marginal`` on an approximate model).

Both estimators run mirror descent with the same fixed step 2/(L·N) (mbi's rule, L the
largest curvature of one measurement's loss) on the loss ½Σ‖(μ − y)/σ‖², one damped
(0.5) message sweep per step, warm-started, convex counting numbers on the region graph
closed under intersection: dpgm ``estimate(..., inference="convex")``
(:mod:`dpgm.inference.region_graph`), mbi 2.0 ``ApproxMirrorDescent`` (convex generalised
BP on its region graph). dpgm's Bethe engine (``inference="loopy"``: BP converged at
every step, line search) runs too, to the first two checkpoints only (it is slow).

The loss is computed here, ½Σ‖(μ − y)/σ‖², on each estimator's pseudo-marginals with the
messages **converged** for its final potentials: dpgm's model converges them before it
answers; for mbi, 300 more sweeps from its last state. (The one-sweep pseudo-marginals mbi
returns lag behind its potentials and are not locally consistent; their loss, printed
for reference, can be lower than the relaxed problem's minimum.) Per checkpoint of
iterations: seconds (mbi: compiled, its compilation reported apart; dpgm: a fresh
estimation of that many iterations), loss, and the mean total-variation error against the
data of the measured pairs and of the unmeasured triples; and the time each takes to come
within 1 % of mbi's loss at the last checkpoint.

Run: ``.venv/bin/python benchmarks/approximate.py [--iters 1000]`` (mbi: the bench extra).
The last line printed is one line of JSON with every figure.
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np
from _common import have_mbi, import_mbi, print_json_last

from dpgm import Domain
from dpgm.datasets.synthetic import dirichlet_model, third_order_chain
from dpgm.estimation import Measurement, estimate
from dpgm.inference.loopy import LoopyPlan

ATTRS, VALUES, RECORDS, SIGMA, TRIPLES = 30, 3, 100_000, 100.0, 20


def make_problem(seed: int = 0):
    edges = third_order_chain(ATTRS)
    truth = dirichlet_model(edges, VALUES, rng=seed, total=RECORDS)
    data = truth.sample(RECORDS, rng=seed + 1)
    domain = truth.domain
    rng = np.random.default_rng(seed + 2)
    pairs = list(itertools.combinations(domain.attrs, 2))
    noisy = {c: data.marginal(c) + rng.normal(0, SIGMA, size=domain.project(c).shape)
             for c in pairs}
    triples = [tuple(domain.attrs[i:i + 3]) for i in range(TRIPLES)]
    return domain, data, noisy, triples


def loss_of(marginal, noisy) -> float:
    return float(sum(0.5 * np.sum(((marginal(c) - y) / SIGMA) ** 2) for c, y in noisy.items()))


def tv(marginal, data, cliques) -> float:
    errors = []
    for c in cliques:
        est, true = marginal(c), data.marginal(c)
        errors.append(0.5 * np.abs(est / est.sum() - true / true.sum()).sum())
    return float(np.mean(errors))


def run_dpgm(domain: Domain, noisy, extra, checkpoints, inference: str):
    """One fresh estimation per checkpoint (iterations): its time and the loss and errors
    of the model it returns (whose beliefs converge before the first answer)."""
    measurements = [Measurement(c, y.ravel(), SIGMA) for c, y in noisy.items()]
    rows = {}
    for iters in checkpoints:
        start = time.perf_counter()
        model = estimate(domain, measurements, total=RECORDS, iters=iters,
                         inference=inference, cliques=extra)
        elapsed = time.perf_counter() - start
        rows[iters] = {"seconds": elapsed, "loss": loss_of(model.marginal, noisy),
                       "marginal": model.marginal}
    return rows


def run_mbi(domain: Domain, noisy, extra, checkpoints):
    """One run to the last checkpoint (after a first run that compiles): the time at
    each checkpoint, and the loss of the pseudo-marginals there, as mbi returns them
    (one sweep) and with the messages converged from that state (300 more sweeps)."""
    import jax

    mbi = import_mbi(x64=True)
    from mbi.approximate_oracles import ApproxMirrorDescent, convex_generalized_belief_propagation
    from mbi.clique_utils import maximal_subset
    from mbi.clique_vector import CliqueVector
    from mbi.estimation import _initialize
    from mbi.marginal_loss import MarginalLossFn, from_linear_measurements

    mdomain = mbi.Domain(domain.attrs, domain.shape)
    measurements = [mbi.LinearMeasurement(y.ravel(), c, stddev=SIGMA) for c, y in noisy.items()]
    measured = from_linear_measurements(measurements, mdomain)
    # the region graph: the loss's cliques, with the unmeasured triples added (mbi keeps
    # potentials only on its loss's cliques, so they enter the loss, weightless)
    cliques = list(maximal_subset(list(noisy) + list(extra)))
    loss_fn = MarginalLossFn(cliques, measured.loss_fn, measured.data, measured.lipschitz)
    loss_fn, total, potentials = _initialize(
        mdomain, loss_fn, float(RECORDS), CliqueVector.zeros(mdomain, cliques))
    step = 2.0 / (loss_fn.lipschitz * total)
    estimator = ApproxMirrorDescent(stepsize=step, oracle_iters=1, damping=0.5)
    sweeps = jax.jit(lambda pot, messages: convex_generalized_belief_propagation(
        pot, total, state=messages, iters=1, damping=0.5))

    def converged(state):
        messages = state.messages
        for _ in range(300):
            mu, messages = sweeps(state.potentials, messages)
        return mu

    def answers(mu):
        return lambda clique: np.asarray(mu.project(tuple(clique)).datavector(flatten=False))

    def run(measure: bool):
        state = estimator._init(potentials, total)
        rows, start, paused = {}, time.perf_counter(), 0.0
        for t in range(1, checkpoints[-1] + 1):
            state = estimator._step(state, total, loss_fn)
            if t in checkpoints:
                state.mu[cliques[0]].values.block_until_ready()
                now = time.perf_counter()
                rows[t] = {"seconds": now - start - paused}
                if measure:
                    final = answers(converged(state))
                    rows[t].update(loss_one_sweep=loss_of(answers(state.mu), noisy),
                                   loss=loss_of(final, noisy), marginal=final)
                paused += time.perf_counter() - now
        return rows

    start = time.perf_counter()
    measured_rows = run(measure=True)  # compiles; losses at the checkpoints
    first = time.perf_counter() - start
    timed = run(measure=False)
    for t, row in measured_rows.items():
        row["seconds"] = timed[t]["seconds"]
    return measured_rows, first, step


def reach(rows, target: float) -> float | None:
    """Seconds of the first checkpoint whose loss is within 1 % of ``target``."""
    for row in rows.values():
        if row["loss"] <= 1.01 * target:
            return row["seconds"]
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iters", type=int, default=1000)
    args = parser.parse_args()
    if not have_mbi():
        raise SystemExit("this benchmark needs mbi (pip install -e '.[bench]')")
    checkpoints = [k for k in (30, 100, 300, 1000, 3000) if k <= args.iters]
    domain, data, noisy, triples = make_problem()
    print(f"{ATTRS} attributes x {VALUES} values, {RECORDS:,} records, {len(noisy)} measured "
          f"pairs (sigma {SIGMA:g}), {len(triples)} unmeasured triples")
    LoopyPlan(domain, list(noisy))  # imports and builds once before timing
    out = {"checkpoints": checkpoints}
    for name, extra in (("pairs", []), ("pairs+triples", triples)):
        mbi_rows, compiled, step = run_mbi(domain, noisy, extra, checkpoints)
        results = {"dpgm": run_dpgm(domain, noisy, extra, checkpoints, "convex"),
                   "dpgm-bethe": run_dpgm(domain, noisy, extra, checkpoints[:2], "loopy"),
                   "mbi": mbi_rows}
        last = checkpoints[-1]
        target = mbi_rows[last]["loss"]
        row = {"mbi_compile_and_first_run_s": compiled, "step": step, "target": target}
        print(f"\n== {name} == (loss: of the converged pseudo-marginals; target: mbi's "
              f"after {last} iterations, {target:.5g})")
        print(f"{'':11}{'iters':>6} {'seconds':>9} {'loss':>11} {'TV pairs':>9} "
              f"{'TV triples':>11}")
        for who, rows in results.items():
            row[who] = {}
            for t, r in rows.items():
                answers_triples = bool(extra) or who != "mbi"
                entry = {"seconds": r["seconds"], "loss": r["loss"],
                         "tv_measured_pairs": tv(r["marginal"], data, list(noisy)),
                         "tv_unmeasured_triples": (tv(r["marginal"], data, triples)
                                                   if answers_triples else None)}
                if "loss_one_sweep" in r:
                    entry["loss_one_sweep"] = r["loss_one_sweep"]
                row[who][t] = entry
                triple = entry["tv_unmeasured_triples"]
                print(f"{who:11}{t:6d} {r['seconds']:9.2f} {r['loss']:11.5g} "
                      f"{entry['tv_measured_pairs']:9.4f} "
                      f"{'-' if triple is None else f'{triple:.4f}':>11}"
                      + (f"   (one sweep: {r['loss_one_sweep']:.5g})"
                         if "loss_one_sweep" in r else ""))
        mine, theirs = reach(results["dpgm"], target), reach(mbi_rows, target)
        row["speedup_to_same_loss"] = None if mine is None or not theirs else theirs / mine
        out[name] = row
        print(f"mbi's compilation and first run: {compiled:.1f} s; to within 1% of the "
              "target: " + ("dpgm never" if mine is None else
                            f"dpgm {mine:.2f} s, mbi {theirs:.2f} s: {theirs / mine:.1f}x"))
    print_json_last(out)


if __name__ == "__main__":
    main()
