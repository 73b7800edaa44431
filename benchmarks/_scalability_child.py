"""One fresh-process run of the scalability benchmark (dpgm or the ``mbi`` reference).

Started by ``scalability.py`` as ``python _scalability_child.py '<json spec>'``. ``d``
attributes of size 10 and ``rows`` uniformly random records (``default_rng(seed)``);
every 3-way marginal of adjacent attributes ``(i, i+1, i+2)`` measured with Gaussian noise
σ = 10 (``default_rng(seed + 1)``, cliques in order: the same values for both
implementations); then ``iters`` iterations of estimation. Reports (seconds since the
parent started the process) ``t_imported``, ``t_measured``, ``t_estimated`` (estimate
returned), ``times`` (``[iteration, seconds]`` per callback: every iteration for dpgm,
every 50 for mbi), ``last_loss`` and the peak RSS.

Spec keys: ``impl`` (dpgm | mbi), ``method`` (mirror_descent | accelerated), ``d``,
``iters``, ``rows``, ``seed``, ``x64`` (mbi in float64), ``finalize`` (false: stop mbi
after its last block of iterations, before ``estimate`` turns the iterate into a model;
for ``DualAveraging`` that is an L-BFGS fit of potentials, 1000 iterations by default).
"""

from __future__ import annotations

import json
import sys

import numpy as np
from _common import child_report, import_mbi, l2_loss, project_table, since_start

SIGMA = 10.0
SIZE = 10
#: mbi's estimator for each dpgm method: Algorithm 1 and Algorithm 2 of the paper
REFERENCE_ESTIMATOR = {"mirror_descent": "MirrorDescent", "accelerated": "DualAveraging"}
MBI_CALLBACK_EVERY = 50


class StopAfterIterations(Exception):
    """Raised from mbi's callback to skip its final step (``finalize`` false in the spec)."""


def workload(d: int, rows: int, seed: int):
    """Attribute names, records, and the adjacent triples (one clique if d = 3)."""
    attrs = [f"x{i}" for i in range(d)]
    records = np.random.default_rng(seed).integers(0, SIZE, size=(rows, d))
    cliques = [tuple(attrs[i : i + 3]) for i in range(d - 2)]
    return attrs, records, cliques


def noisy_answers(true_marginal, cliques, seed: int) -> list[np.ndarray]:
    """Each clique's flattened counts plus N(0, σ²) noise, drawn in clique order."""
    rng = np.random.default_rng(seed + 1)
    noisy = []
    for clique in cliques:
        counts = np.asarray(true_marginal(clique), dtype=np.float64).ravel()
        noisy.append(counts + rng.normal(0.0, SIGMA, counts.size))
    return noisy


def run_dpgm(spec: dict, out: dict, times: list) -> float | None:
    """Measure and estimate with dpgm; the loss at the last callback."""
    import dpgm

    out["t_imported"] = since_start()
    attrs, records, cliques = workload(spec["d"], spec["rows"], spec["seed"])
    domain = dpgm.Domain(attrs, [SIZE] * len(attrs))
    data = dpgm.Dataset(records, domain)
    noisy = noisy_answers(data.marginal, cliques, spec["seed"])
    measurements = [dpgm.Measurement(c, y, SIGMA) for c, y in zip(cliques, noisy)]
    out["t_measured"] = since_start()
    last = [None]

    def callback(iteration: int, loss: float) -> None:
        times.append([iteration, since_start()])
        last[0] = float(loss)

    model = dpgm.estimate(
        domain, measurements, method=spec["method"], iters=spec["iters"], callback=callback
    )
    out["t_estimated"] = since_start()
    out["model_cells"] = model.tree.size()
    return last[0]


def run_mbi(spec: dict, out: dict, times: list) -> float | None:
    """Measure and estimate with mbi 2.0; the loss at the last callback."""
    mbi = import_mbi(spec.get("x64", False))
    import jax
    from mbi import estimation

    out["t_imported"] = since_start()
    attrs, records, cliques = workload(spec["d"], spec["rows"], spec["seed"])
    domain = mbi.Domain(attrs, [SIZE] * len(attrs))
    data = mbi.Dataset({a: records[:, k] for k, a in enumerate(attrs)}, domain)

    def true_marginal(clique):
        return np.asarray(data.project(clique).datavector(flatten=False), dtype=np.float64)

    noisy = noisy_answers(true_marginal, cliques, spec["seed"])
    measurements = [mbi.LinearMeasurement(y, c, stddev=SIGMA) for c, y in zip(cliques, noisy)]
    out["t_measured"] = since_start()
    measured = list(zip(cliques, noisy))
    last = [None]

    def callback(marginals) -> None:
        jax.block_until_ready(marginals)  # JAX dispatches asynchronously
        times.append([(len(times) + 1) * MBI_CALLBACK_EVERY, since_start()])
        if times[-1][0] < spec["iters"]:
            return
        # the loss of the last block only, so that its cost stays out of the timings
        tables = {c: np.asarray(f.values) for c, f in marginals.tables.items()}

        def marginal(clique):
            home = min((c for c in tables if set(clique) <= set(c)), key=lambda c: tables[c].size)
            return project_table(home, tables[home], clique)

        last[0] = l2_loss(marginal, measured, SIGMA)
        if not spec.get("finalize", True):
            raise StopAfterIterations

    estimator = getattr(estimation, REFERENCE_ESTIMATOR[spec["method"]])()
    try:
        estimator.estimate(domain, measurements, iters=spec["iters"], callback_fn=callback)
        out["t_estimated"] = since_start()
    except StopAfterIterations:
        out["t_estimated"] = None  # stopped before mbi's final step (the model's potentials)
    return last[0]


def main() -> None:
    spec = json.loads(sys.argv[1])
    out: dict = {}
    times: list = []
    run = run_dpgm if spec["impl"] == "dpgm" else run_mbi
    out["last_loss"] = run(spec, out, times)
    out["times"] = times
    child_report(out)


if __name__ == "__main__":
    main()
