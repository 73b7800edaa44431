"""Benchmark: Private-PGM with loopy belief propagation against mbi's approximate estimator.

The data: 30 attributes of 3 values drawn from a third-order chain with Dirichlet(1)
edge potentials (the CGM note's generator), N = 100,000 records. Every 2-way marginal
(435 tables) is measured with Gaussian noise σ = 100 (seed 0). Two region graphs:

* ``pairs``: the 435 measured pairs — where the junction tree is out of reach;
* ``pairs+triples``: the same plus 20 unmeasured triples of the chain (i, i+1, i+2), whose
  pseudo-marginals are the estimators' answers to unmeasured 3-way queries.

Both estimators run mirror descent with the same fixed step 2/(L·N) (mbi's rule, L the
loss's Lipschitz constant) on the loss ½Σ‖(μ − y)/σ‖², one damped (0.5) message sweep
per step, warm-started: dpgm ``estimate(..., inference="loopy", method="mirror_descent")``
(Bethe), mbi 2.0 ``ApproxMirrorDescent`` (convex generalised BP). Loss is computed here
from each one's pseudo-marginals. Reported: seconds per iteration (mbi: after JAX
compilation, which is also reported), the loss after each checkpoint, the time each needs
to come within 1 % of mbi's final loss, and the mean total-variation error against the
data of the measured pairs and of the unmeasured triples.

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


def run_dpgm(domain: Domain, noisy, extra, iters: int, checkpoints):
    measurements = [Measurement(c, y.ravel(), SIGMA) for c, y in noisy.items()]
    trace = []
    start = time.perf_counter()

    def callback(iteration: int, loss: float) -> None:
        trace.append((iteration, loss, time.perf_counter() - start))

    model = estimate(domain, measurements, total=RECORDS, method="mirror_descent",
                     iters=iters, inference="loopy", cliques=extra, callback=callback)
    elapsed = time.perf_counter() - start
    marginal = model.marginal
    # dpgm's loss is Σ ‖(μ − y)/σ‖²/2 over the measurements: the same as loss_of
    return {"seconds": elapsed, "per_iteration_s": elapsed / max(iters, 1),
            "trace": trace, "loss": loss_of(marginal, noisy),
            "checkpoints": {k: trace[k - 1][1] for k in checkpoints if k <= len(trace)},
            "marginal": marginal}


def run_mbi(domain: Domain, noisy, extra, iters: int, checkpoints):
    mbi = import_mbi(x64=True)
    from mbi.approximate_oracles import ApproxMirrorDescent
    from mbi.clique_vector import CliqueVector
    from mbi.estimation import _initialize

    mdomain = mbi.Domain(domain.attrs, domain.shape)
    measurements = [mbi.LinearMeasurement(y.ravel(), c, stddev=SIGMA) for c, y in noisy.items()]
    cliques = list(noisy) + list(extra)
    loss_fn, total, potentials = _initialize(
        mdomain, measurements, float(RECORDS), CliqueVector.zeros(mdomain, cliques))
    step = 2.0 / (loss_fn.lipschitz * total)
    estimator = ApproxMirrorDescent(stepsize=step, oracle_iters=1, damping=0.5)

    import jax

    loss_of_mu = jax.jit(lambda mu: loss_fn(mu))

    def run(record: bool):
        state = estimator._init(potentials, total)
        losses = []
        for _ in range(iters):
            state = estimator._step(state, total, loss_fn)
            if record:
                losses.append(float(loss_of_mu(state.mu)))
        state.mu[cliques[0]].values.block_until_ready()
        return state, losses

    start = time.perf_counter()
    _, losses = run(record=True)  # compiles, and records the loss of every iteration
    first = time.perf_counter() - start
    start = time.perf_counter()
    state, _ = run(record=False)
    elapsed = time.perf_counter() - start
    mu = state.mu

    def marginal(clique):
        return np.asarray(mu.project(tuple(clique)).datavector(flatten=False))

    return {"seconds": elapsed, "per_iteration_s": elapsed / max(iters, 1),
            "first_run_with_compile_s": first, "step": step,
            "trace": [(k + 1, v, None) for k, v in enumerate(losses)],
            "loss": loss_of(marginal, noisy),
            "checkpoints": {k: losses[k - 1] for k in checkpoints if k <= len(losses)},
            "marginal": marginal}


def time_to(result, target: float) -> float | None:
    for iteration, loss, seconds in result["trace"]:
        if loss <= target:
            return seconds if seconds is not None else iteration * result["per_iteration_s"]
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iters", type=int, default=1000)
    args = parser.parse_args()
    checkpoints = [k for k in (10, 30, 100, 300, 1000, 3000) if k <= args.iters]
    domain, data, noisy, triples = make_problem()
    # the dpgm region graph is the model's maximal cliques; step as mbi computes it
    print(f"{ATTRS} attributes x {VALUES} values, {RECORDS:,} records, {len(noisy)} measured "
          f"pairs (sigma {SIGMA:g}), {len(triples)} unmeasured triples; {args.iters} iterations")
    LoopyPlan(domain, list(noisy))  # imports and builds once before timing
    out = {"iters": args.iters}
    for name, extra in (("pairs", []), ("pairs+triples", triples)):
        if not have_mbi():
            raise SystemExit("this benchmark needs mbi (pip install -e '.[bench]')")
        results = {"mbi": run_mbi(domain, noisy, extra, args.iters, checkpoints),
                   "dpgm": run_dpgm(domain, noisy, extra, args.iters, checkpoints)}
        target = 1.01 * results["mbi"]["loss"]
        row = {}
        for who, r in results.items():
            row[who] = {
                "per_iteration_ms": 1e3 * r["per_iteration_s"],
                "final_loss": r["loss"],
                "checkpoints": r["checkpoints"],
                "to_mbi_final_loss_s": time_to(r, target),
                "tv_measured_pairs": tv(r["marginal"], data, list(noisy)),
                "tv_unmeasured_triples": tv(r["marginal"], data, triples) if extra else None,
            }
            if "first_run_with_compile_s" in r:
                row[who]["first_run_with_compile_s"] = r["first_run_with_compile_s"]
        mine, theirs = row["dpgm"]["to_mbi_final_loss_s"], row["mbi"]["to_mbi_final_loss_s"]
        row["speedup_to_same_loss"] = None if mine is None else theirs / mine
        out[name] = row
        print(f"\n== {name} ==")
        print(f"{'':6} {'ms/iter':>9} {'final loss':>12} {'to target s':>12} "
              f"{'TV pairs':>9} {'TV triples':>11}")
        for who in ("dpgm", "mbi"):
            r = row[who]
            reach = r["to_mbi_final_loss_s"]
            triple = r["tv_unmeasured_triples"]
            print(f"{who:6} {r['per_iteration_ms']:9.2f} {r['final_loss']:12.5g} "
                  f"{'never' if reach is None else f'{reach:.2f}':>12} "
                  f"{r['tv_measured_pairs']:9.4f} "
                  f"{'-' if triple is None else f'{triple:.4f}':>11}")
        print("loss at iteration " + ", ".join(
            f"{k}: dpgm {row['dpgm']['checkpoints'].get(k, float('nan')):.5g} / "
            f"mbi {row['mbi']['checkpoints'].get(k, float('nan')):.5g}" for k in checkpoints))
        speed = row["speedup_to_same_loss"]
        print(f"mbi's first run (with JAX compilation): "
              f"{row['mbi']['first_run_with_compile_s']:.1f} s; dpgm to mbi's final loss: "
              + ("never" if speed is None else f"{speed:.1f}x faster"))
    print_json_last(out)


if __name__ == "__main__":
    main()
