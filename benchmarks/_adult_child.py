"""One fresh-process run of the adult estimation benchmark (dpgm or the ``mbi`` reference).

Started by ``estimation_adult.py`` as ``python _adult_child.py '<json spec>'``. The
child loads the data, measures the marginals of :data:`MEASURED` with Gaussian noise
(σ = :data:`SIGMA`, ``numpy.random.default_rng(NOISE_SEED)``, cliques in order, so both
implementations see identical noisy values), estimates a model, answers the queried
attribute pairs and reports (see ``_common.child_report``):

* ``t_imported``, ``t_loaded``, ``t_measured``, ``t_estimated``: seconds since the parent
  started the process at which each phase was done;
* ``trajectory``: ``[iteration, loss, seconds]`` per callback (every iteration for dpgm,
  every 50 for mbi, whose estimators call back once per fused block of 50 steps);
* ``reached``: the first ``[iteration, seconds]`` with loss ≤ 1.01 × ``target``;
* ``query_s`` (the queries alone) and ``t_answered`` (child start to all answered);
* the final model's loss and its TV errors against the true data.

Spec keys: ``impl`` (dpgm | mbi), ``method`` (mirror_descent | accelerated), ``iters``,
``data_dir``, ``target`` (or null), ``pairs`` (attribute pairs to query), ``record``
(keep the whole trajectory), ``x64`` (mbi in float64).
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np
from _common import child_report, import_mbi, l2_loss, project_table, since_start, tv_distance

SIGMA = 10.0
NOISE_SEED = 0
# dpgm.datasets.ADULT_PAIRS, restated: the reference's child must not import dpgm, whose
# import would count in the reference's fresh-process time
MEASURED_PAIRS = [
    ("age", "education-num"),
    ("age", "income>50K"),
    ("marital-status", "relationship"),
    ("occupation", "income>50K"),
    ("sex", "hours-per-week"),
    ("race", "native-country"),
    ("workclass", "occupation"),
    ("capital-gain", "income>50K"),
    ("education-num", "occupation"),
    ("relationship", "sex"),
]
#: mbi's estimator for each dpgm method: Algorithm 1 and Algorithm 2 of the paper
REFERENCE_ESTIMATOR = {"mirror_descent": "MirrorDescent", "accelerated": "DualAveraging"}
MBI_CALLBACK_EVERY = 50


def measured_cliques(attrs) -> list[tuple[str, ...]]:
    """Every 1-way marginal, then the ten 2-way marginals of :data:`MEASURED_PAIRS`."""
    return [(a,) for a in attrs] + list(MEASURED_PAIRS)


def noisy_answers(true_marginal, cliques) -> list[np.ndarray]:
    """Each clique's flattened counts plus N(0, σ²) noise, drawn in clique order."""
    rng = np.random.default_rng(NOISE_SEED)
    noisy = []
    for clique in cliques:
        counts = np.asarray(true_marginal(clique), dtype=np.float64).ravel()
        noisy.append(counts + rng.normal(0.0, SIGMA, counts.size))
    return noisy


class Monitor:
    """Callback bookkeeping: the trajectory and when the loss first came near the target."""

    def __init__(self, target: float | None, record: bool):
        self.threshold = None if target is None else 1.01 * target
        self.record = record
        self.trajectory: list[list[float]] = []
        self.reached: list[float] | None = None
        self.last: list[float] | None = None

    def __call__(self, iteration: int, loss: float) -> None:
        now = since_start()
        self.last = [iteration, float(loss), now]
        if self.record:
            self.trajectory.append(self.last)
        if self.reached is None and self.threshold is not None and loss <= self.threshold:
            self.reached = [iteration, now]


# -- the two implementations ------------------------------------------------------------
def run_dpgm(spec: dict, monitor: Monitor, data_dir: Path) -> tuple:
    """Load, measure and estimate with dpgm; the model's marginals as a function."""
    import dpgm

    out = {"t_imported": since_start()}
    domain = dpgm.Domain.load(data_dir / "adult-domain.json")
    data = dpgm.Dataset.load(data_dir / "adult.csv", domain)
    out["t_loaded"] = since_start()
    cliques = measured_cliques(domain.attrs)
    noisy = noisy_answers(data.marginal, cliques)
    measurements = [dpgm.Measurement(c, y, SIGMA) for c, y in zip(cliques, noisy)]
    out["t_measured"] = since_start()
    model = dpgm.estimate(
        domain, measurements, method=spec["method"], iters=spec["iters"], callback=monitor
    )
    out["t_estimated"] = since_start()
    out["total"] = model.total
    return out, cliques, noisy, data.marginal, model.marginal


def run_mbi(spec: dict, monitor: Monitor, data_dir: Path) -> tuple:
    """Load, measure and estimate with mbi 2.0; the model's marginals as a function."""
    import pandas as pd

    mbi = import_mbi(spec.get("x64", False))
    from mbi import estimation

    out = {"t_imported": since_start()}
    config = json.loads((data_dir / "adult-domain.json").read_text())
    domain = mbi.Domain.fromdict(config)
    frame = pd.read_csv(data_dir / "adult.csv")
    data = mbi.Dataset({a: frame[a].to_numpy() for a in domain.attributes}, domain)
    out["t_loaded"] = since_start()

    def true_marginal(clique):
        return np.asarray(data.project(clique).datavector(flatten=False), dtype=np.float64)

    cliques = measured_cliques(domain.attributes)
    noisy = noisy_answers(true_marginal, cliques)
    measurements = [mbi.LinearMeasurement(y, c, stddev=SIGMA) for c, y in zip(cliques, noisy)]
    out["t_measured"] = since_start()
    measured = list(zip(cliques, noisy))
    calls = [0]

    def callback(marginals) -> None:
        # mbi hands over the marginals every 50 steps; the loss is computed here
        calls[0] += 1
        tables = {c: np.asarray(f.values) for c, f in marginals.tables.items()}

        def marginal(clique):
            home = min((c for c in tables if set(clique) <= set(c)), key=lambda c: tables[c].size)
            return project_table(home, tables[home], clique)

        monitor(calls[0] * MBI_CALLBACK_EVERY, l2_loss(marginal, measured, SIGMA))

    estimator = getattr(estimation, REFERENCE_ESTIMATOR[spec["method"]])()
    model = estimator.estimate(domain, measurements, iters=spec["iters"], callback_fn=callback)
    out["t_estimated"] = since_start()
    out["total"] = float(model.total)

    def model_marginal(clique):
        return np.asarray(model.project(clique).datavector(flatten=False), dtype=np.float64)

    return out, cliques, noisy, true_marginal, model_marginal


def main() -> None:
    spec = json.loads(sys.argv[1])
    monitor = Monitor(spec.get("target"), spec.get("record", False))
    data_dir = Path(spec["data_dir"])
    run = run_dpgm if spec["impl"] == "dpgm" else run_mbi
    out, cliques, noisy, true_marginal, model_marginal = run(spec, monitor, data_dir)

    pairs = [tuple(p) for p in spec.get("pairs", [])]
    start = time.perf_counter()
    answers = [model_marginal(p) for p in pairs]
    out["query_s"] = time.perf_counter() - start
    out["t_answered"] = since_start()

    # quality figures (not timed)
    out["noise_sha1"] = hashlib.sha1(np.concatenate(noisy).tobytes()).hexdigest()[:16]
    out["final_loss"] = l2_loss(model_marginal, list(zip(cliques, noisy)), SIGMA)
    out["tv_measured"] = [tv_distance(true_marginal(c), model_marginal(c)) for c in cliques]
    out["tv_pairs"] = [tv_distance(true_marginal(p), a) for p, a in zip(pairs, answers)]
    out["trajectory"] = monitor.trajectory
    out["last"] = monitor.last
    out["reached"] = monitor.reached
    child_report(out)


if __name__ == "__main__":
    main()
