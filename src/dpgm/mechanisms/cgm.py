"""Undirected models from noisy sufficient statistics (Bernstein et al. 2017) as a mechanism.

The one data access is the release of Eq. 3: every clique table of the model (the
workload's cliques, all 2-way marginals by default) with Laplace noise of scale |𝒞|/ε
per cell. One record changes one cell of each of the |𝒞| tables by 1 under add/remove
neighbours, so the tables together have L1 sensitivity |𝒞| (Prop. 3) and the release is
ε-DP. Everything after it is post-processing:

* ``estimator="em"`` — CGM-EM (:func:`dpgm.cgm.cgm_em`, dual E-step, discrepancy stop);
* ``"naive"`` / ``"naive-projected"`` — naive MLE on the raw / simplex-projected tables
  (:func:`dpgm.cgm.naive_mle`, penalty λ in count units);
* ``"pgm"`` — Private-PGM on the same measurements.

N, the number of records, is private under add/remove neighbours: ``total=None`` (the
default) estimates it from the noisy tables (their mean sum: free post-processing); the
paper treats N as public, which ``total=N`` reproduces — pass it only if N is public.
"""

from __future__ import annotations

import numpy as np

from dpgm.cgm import cgm_em, naive_mle, projected_targets
from dpgm.dataset import Dataset
from dpgm.mechanisms.base import CliqueModelMechanism, Progress
from dpgm.mechanisms.psgd import PSGD
from dpgm.models.markov_random_field import MarkovRandomField
from dpgm.privacy.measure import measure_marginals
from dpgm.random import Randomness
from dpgm.validation import integer, one_of, optional, positive
from dpgm.workload import Workload


class CGM(CliqueModelMechanism):
    """Bernstein et al.'s learners on one ε-DP release of the model's clique tables.

    ε-DP (add/remove neighbours): all |𝒞| clique tables with Laplace(|𝒞|/ε) noise per
    cell (sensitivity |𝒞|). A ``delta`` is accepted and none of it is spent.
    """

    privacy = "pure"
    estimators = ("em", "pgm", "naive", "naive-projected")

    def __init__(
        self,
        epsilon: float,
        delta: float | None = None,
        *,
        estimator: str = "em",
        total: float | None = None,
        stop: str = "discrepancy",
        em_iters: int = 1000,
        penalty: float = 1.0,
        iters: int = 1000,
        max_memory: float | None = None,
        progress: Progress | None = None,
    ):
        super().__init__(
            epsilon, delta, estimator=estimator, max_memory=max_memory, progress=progress
        )
        self.total = optional(positive, "total", total)
        self.stop = one_of("stop", stop, ("discrepancy", "converge"))
        self.em_iters = integer("em_iters", em_iters, least=1)
        self.penalty = positive("penalty", penalty)
        self.iters = integer("iters", iters, least=1)

    def _fit(self, data: Dataset, workload: Workload, randomness: Randomness):
        domain = data.domain
        cliques = [domain.canonical(c) for c in workload.cliques]
        scale = len(cliques) / self.epsilon
        self._say(f"measuring {len(cliques)} clique tables, Laplace scale {scale:.4g} per cell")
        self.measurements = measure_marginals(
            data, cliques, epsilon=self.epsilon, budget=self.budget, rng=randomness.noise,
            label=f"{len(cliques)} clique tables (Eq. 3)",
        )
        noisy = {m.clique: m.values.reshape(domain.project(m.clique).shape)
                 for m in self.measurements}
        # N from the noisy tables unless it is public: each table sums to N plus noise
        total = self.total or max(float(np.mean([t.sum() for t in noisy.values()])), 1.0)
        self._say(f"fitting ({self.estimator}) to the noisy tables, total≈{total:.0f}")
        if self.estimator == "em":
            def report(t: int, residual: float) -> None:
                if t % 10 == 0:
                    self._say(f"EM iteration {t}: L1 residual {residual:.6g}")

            model, trace = cgm_em(domain, noisy, total, scale, stop=self.stop,
                                  max_iters=self.em_iters, callback=report)
            self.trace = trace
            self._say(f"EM stopped ({trace.stopped}) after {len(trace.residuals)} iterations")
            return model
        if self.estimator in ("naive", "naive-projected"):
            if self.estimator == "naive-projected":
                noisy = projected_targets(noisy, total)
            return naive_mle(domain, noisy, total, penalty=self.penalty)
        return self.estimate(domain, self.measurements, total=total, iters=self.iters)

    def _reset(self) -> None:
        super()._reset()
        self.trace = None


#: fit_cgm's methods: CGM's estimators on the Laplace release, and DP-SGD
CGM_METHODS = (*CGM.estimators, "psgd")


def fit_cgm(
    data,
    cliques,
    epsilon: float,
    method: str = "em",
    *,
    delta: float | None = None,
    rng=None,
    schema=None,
    **options,
) -> MarkovRandomField:
    """A private log-linear model of ``data`` on ``cliques``, the paper's way.

    ``method``: ``"em"`` (CGM-EM), ``"naive"`` / ``"naive-projected"`` (naive MLE),
    ``"pgm"`` (Private-PGM) — all ε-DP, on one Laplace release of the clique tables
    (:class:`CGM`) — or ``"psgd"``, DP-SGD, (ε, δ)-DP (:class:`~dpgm.mechanisms.psgd.PSGD`).
    ``options`` go to the mechanism (``total`` for a public N, ``penalty``, ``stop``,
    ``sampling_rate``, ...); ``rng`` and ``schema`` as in :meth:`Mechanism.fit`. The model
    carries its ledger (``model.release``); for the trace, use the mechanism classes.
    """
    method = one_of("method", method, CGM_METHODS)
    if method == "psgd":
        mechanism = PSGD(epsilon, delta, **options)
    else:
        mechanism = CGM(epsilon, delta, estimator=method, **options)
    return mechanism.fit(data, cliques, rng, schema=schema)
