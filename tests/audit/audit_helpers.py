"""Privacy audits by events on neighbouring data sets, with Clopper–Pearson bounds.

An audit fixes an event E before the runs, runs the mechanism many times without a seed
(the release path: OpenDP's exact samplers) on two neighbours, D and D' = D + x, and
bounds p = P[M(D') ∈ E] from below and q = P[M(D) ∈ E] from above with Clopper–Pearson
intervals. Then it asks whether the bounds alone prove the claim false:

* pure ε-DP: p ≤ e^ε·q for every event, so ``log(p_low / q_high) > ε`` is a proof;
  (ε, δ)-DP: p ≤ e^ε·q + δ, so ``log((p_low − δ) / q_high) > ε`` is one;
* ρ-zCDP: post-processing to the event's indicator cannot raise Rényi divergence, so the
  two Bernoulli laws must satisfy D_α(Bern(p) ‖ Bern(q)) ≤ αρ for every α > 1; a box of
  (p, q) whose closest point to p = q breaks this for some α is a proof. (This is
  sharper than converting ρ to (ε, δ) first, and still exactly what ρ-zCDP promises.)

A sound mechanism shows no violation; the same audit with the noise halved must show
one — the power check — or the audit proves nothing. Runs go through a pool of worker
processes, and their number scales with ``--audit-runs`` or ``DPGM_AUDIT_RUNS``.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import warnings
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from scipy.stats import beta

#: each Clopper–Pearson bound fails with probability ALPHA: a sound mechanism is flagged
#: by one audit with probability below 2·ALPHA
ALPHA = 1e-5
#: orders α of the Rényi test
ORDERS = np.concatenate([np.linspace(1.02, 2.0, 50), np.linspace(2.05, 60.0, 300)])


def run_scale(config=None) -> float:
    """How many times the CI number of runs to make: --audit-runs / DPGM_AUDIT_RUNS
    give a multiplier (e.g. 10 for a release check)."""
    if config is not None and config.getoption("--audit-runs", default=None):
        return float(config.getoption("--audit-runs"))
    return float(os.environ.get("DPGM_AUDIT_RUNS", 1))


def clopper_pearson(hits: int, runs: int, alpha: float = ALPHA) -> tuple[float, float]:
    """A one-sided (1 - alpha) lower bound and a one-sided (1 - alpha) upper bound."""
    low = 0.0 if hits == 0 else float(beta.ppf(alpha, hits, runs - hits + 1))
    high = 1.0 if hits == runs else float(beta.ppf(1 - alpha, hits + 1, runs - hits))
    return low, high


def renyi_bernoulli(p: float, q: float, order: float) -> float:
    """D_order(Bern(p) ‖ Bern(q))."""
    if p <= q:
        return 0.0
    if q <= 0.0:
        return math.inf
    value = p**order * q ** (1 - order) + (1 - p) ** order * (1 - q) ** (1 - order)
    return math.log(value) / (order - 1)


@dataclass(frozen=True)
class Claim:
    """``epsilon``-DP (with ``delta``: (ε, δ)-DP), or ``rho``-zCDP."""

    epsilon: float | None = None
    rho: float | None = None
    delta: float = 0.0

    def excess(self, p_low: float, q_high: float) -> float:
        """How far the bounds prove the claim false (> 0), or how far from it (<= 0)."""
        if p_low - self.delta <= q_high:
            return p_low - self.delta - q_high
        if self.rho is None:
            return (math.log((p_low - self.delta) / q_high) - self.epsilon if q_high > 0
                    else math.inf)
        return max(renyi_bernoulli(p_low, q_high, a) - a * self.rho for a in ORDERS)


@dataclass
class Audit:
    """The event's frequencies on the two neighbours and what they prove."""

    hits: int
    hits_without: int
    runs: int
    excess: float

    @property
    def violated(self) -> bool:
        return self.excess > 0

    def __str__(self) -> str:
        return (
            f"event in {self.hits}/{self.runs} runs with the record, "
            f"{self.hits_without}/{self.runs} without: excess over the claim {self.excess:+.4f}"
        )


def judge(with_record: Sequence[float], without: Sequence[float], threshold: float,
          claim: Claim) -> Audit:
    """The audit of the event ``statistic >= threshold`` (likelier with the record)."""
    hits = int(np.sum(np.asarray(with_record) >= threshold))
    misses = int(np.sum(np.asarray(without) >= threshold))
    runs = len(with_record)
    p_low, _ = clopper_pearson(hits, runs)
    _, q_high = clopper_pearson(misses, len(without))
    return Audit(hits, misses, runs, claim.excess(p_low, q_high))


# -- statistics of a mechanism's output (its measurements) ---------------------------------
def _shifts(measurements, truth, record_cell):
    for m in measurements:
        shift = np.asarray(m.answer(record_cell(m.clique)), dtype=np.float64)
        if shift.any():
            yield m, shift, m.values - m.answer(truth(m.clique))


def linear_statistic(measurements, truth, record_cell) -> float:
    """Σ_m ⟨Q_m e_x, y_m − Q_m μ_D⟩/σ_m² over sqrt(Σ_m ‖Q_m e_x‖²/σ_m²).

    With Gaussian noise, the likelihood ratio's statistic: N(0, 1) under D and
    N(sqrt(V), 1) under D + x, whatever the measurements chosen. ``truth(clique)`` is
    D's marginal and ``record_cell(clique)`` x's one-hot cell, both flattened.
    """
    total = variance = 0.0
    for m, shift, residual in _shifts(measurements, truth, record_cell):
        weight = 1.0 / np.broadcast_to(np.asarray(m.std, dtype=np.float64) ** 2, shift.shape)
        total += float(np.sum(shift * residual * weight))
        variance += float(np.sum(shift**2 * weight))
    return total / math.sqrt(variance) if variance > 0 else 0.0


def tail_statistic(measurements, truth, record_cell, share: float = 0.25) -> float:
    """Minus the number of answers x moves that stay below D's answer + the move: 0 when
    all reach it. With Laplace noise that event's likelihood ratio is exactly e^{Σ ε_i}
    over the answers counted — their whole loss. Answers whose ε_i (move over noise std)
    is below ``share`` of the largest are left out: they add little loss and halve the
    event's probability each."""
    moves = [(shift / np.asarray(m.std, dtype=np.float64), shift, residual)
             for m, shift, residual in _shifts(measurements, truth, record_cell)]
    if not moves:
        return 0.0
    largest = max(float(np.max(np.abs(w))) for w, _, _ in moves)
    short = 0
    for strength, shift, residual in moves:
        counted = np.abs(strength) >= share * largest
        short += int(np.sum(residual[counted] < shift[counted]))
    return -float(short)


# -- running a mechanism many times ---------------------------------------------------------------
@contextmanager
def halved_noise():
    """Every Laplace/Gaussian scale and every selection's temperature halved, the charges
    unchanged: a mechanism twice (or four times) less private than it claims."""
    import dpgm.privacy.exponential as exponential
    import dpgm.privacy.measure as measure

    laplace, gaussian = measure.laplace_noise, measure.gaussian_noise
    selection = exponential.noisy_max_measurement

    class _Sharper:
        def __init__(self, scale):
            self.honest, self.sharp = selection(scale), selection(scale / 2)

        def map(self, d_in):
            return self.honest.map(d_in)

        def __call__(self, scores):
            return self.sharp(scores)

    measure.laplace_noise = lambda c, s, r=None, **k: laplace(c, s / 2, r, **k)
    measure.gaussian_noise = lambda c, s, r=None, **k: gaussian(c, s / 2, r, **k)
    exponential.noisy_max_measurement = _Sharper
    try:
        yield
    finally:
        measure.laplace_noise, measure.gaussian_noise = laplace, gaussian
        exponential.noisy_max_measurement = selection


def _collect(task) -> list[float]:
    spec, with_record, halved, seeds = task
    warnings.simplefilter("ignore")
    with halved_noise() if halved else _nothing():
        return [spec.statistic_of_run(with_record, seed) for seed in seeds]


@contextmanager
def _nothing():
    yield


def collect(
    spec, runs: int, halved: bool = False, seeded: bool = False
) -> tuple[list[float], list[float]]:
    """The statistic over ``runs`` fits on each neighbour, in worker processes.

    Unseeded (the release path) unless ``seeded``: then run k uses seed k on both
    neighbours, so the outcome is reproducible (the power checks).
    """
    workers = max(1, min(os.cpu_count() or 1, 4))
    seeds = [k if seeded else None for k in range(runs)]
    chunks = [seeds[k::workers] for k in range(workers)]
    tasks = [(spec, side, halved, chunk) for side in (True, False) for chunk in chunks if chunk]
    context = multiprocessing.get_context("fork")
    with context.Pool(workers) as pool:
        results = pool.map(_collect, tasks)
    sides = {True: [], False: []}
    for (_, side, _, _), values in zip(tasks, results):
        sides[side].extend(values)
    return sides[True], sides[False]
