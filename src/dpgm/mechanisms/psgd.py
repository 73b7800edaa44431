"""Private SGD on a log-linear model (Abadi et al. 2016), Bernstein et al.'s "PSGD" baseline.

(ε, δ)-DP, add/remove neighbours. Data accesses:

* with ``total=None`` (N private, the default): the record count with Laplace noise,
  sensitivity 1, ``count_share``·ε of the budget (pure ε-DP);
* T = ⌈epochs/q⌉ steps, each the sum of the per-record log-likelihood gradients of a
  Poisson lot (rate q) clipped to L2 norm C (sensitivity C) plus Gaussian noise σC per
  coordinate; σ is the smallest that makes the T steps (ε − spent, δ)-DP by Rényi-DP
  accounting (dp-accounting, :mod:`dpgm.privacy.sgd`).

The budget is an (ε, δ) budget under basic composition. The paper used δ = 1/N; dpgm's
policy default is :data:`~dpgm.privacy.DEFAULT_DELTA` and a δ ≥ 1e-5 draws a warning.
"""

from __future__ import annotations

import math

from dpgm.cgm.psgd import dp_sgd
from dpgm.dataset import Dataset
from dpgm.domain import Domain
from dpgm.mechanisms.base import CliqueModelMechanism, Progress
from dpgm.privacy.amplification import check_rate
from dpgm.privacy.measure import measure_record_count
from dpgm.privacy.sgd import NoisyGradientSums, sgd_noise_multiplier
from dpgm.random import Randomness
from dpgm.validation import fraction, integer, optional, positive
from dpgm.workload import Workload


class PSGD(CliqueModelMechanism):
    """DP-SGD on the log-likelihood of a model on the workload's cliques (see the module).

    ``sampling_rate`` q (expected lot qN), ``epochs`` (T = ⌈epochs/q⌉ steps, unless
    ``iters`` gives T),
    ``learning_rate`` η, ``clip`` C (None: √(2|𝒞|), the largest gradient norm, i.e. no
    clipping), ``total`` N if public, ``largest_noise`` a cap on σ beyond which the
    target is refused as not attainable.
    """

    needs_records = True  # Poisson lots of records

    privacy = "approx"
    estimators = ("sgd",)

    def __init__(
        self,
        epsilon: float,
        delta: float | None = None,
        *,
        estimator: str = "sgd",
        sampling_rate: float = 0.01,
        epochs: float = 5.0,
        iters: int | None = None,
        learning_rate: float = 1.0,
        clip: float | None = None,
        total: float | None = None,
        count_share: float = 0.05,
        largest_noise: float | None = None,
        max_memory: float | None = None,
        progress: Progress | None = None,
    ):
        super().__init__(
            epsilon, delta, estimator=estimator, max_memory=max_memory, progress=progress
        )
        self.sampling_rate = check_rate(sampling_rate, "sampling_rate")
        self.epochs = positive("epochs", epochs)
        self.steps = (max(1, math.ceil(self.epochs / self.sampling_rate)) if iters is None
                      else integer("iters", iters, least=1))
        self.learning_rate = positive("learning_rate", learning_rate)
        self.clip = optional(positive, "clip", clip)
        self.total = optional(positive, "total", total)
        self.count_share = fraction("count_share", count_share)
        self.largest_noise = optional(positive, "largest_noise", largest_noise)

    @property
    def sgd_epsilon(self) -> float:
        """The ε the SGD steps get: all of it with a public N, else what the count leaves."""
        return self.epsilon * (1.0 if self.total is not None else 1.0 - self.count_share)

    def plan(self, domain: Domain, workload: Workload) -> None:
        """The model fits in memory, and σ meets (ε, δ) within ``largest_noise`` (public
        facts: ε, δ, q and T), so an unattainable target fails before the data are read."""
        super().plan(domain, workload)
        self._noise_multiplier = sgd_noise_multiplier(
            self.sgd_epsilon, self.delta, self.sampling_rate, self.steps,
            largest=self.largest_noise,
        )

    def _fit(self, data: Dataset, workload: Workload, randomness: Randomness):
        domain = data.domain
        cliques = [domain.canonical(c) for c in workload.cliques]
        if self.total is None:
            share = self.epsilon - self.sgd_epsilon
            count = measure_record_count(data, self.budget, randomness.noise, epsilon=share)
            total = max(float(count.values[0]), 1.0)
        else:
            total = self.total
        clip = self.clip or math.sqrt(2.0 * len(cliques))
        gradients = NoisyGradientSums(
            data, cliques, epsilon=self.sgd_epsilon, delta=self.delta,
            sampling_rate=self.sampling_rate, steps=self.steps, clip=clip, budget=self.budget,
            rng=randomness.noise, noise_multiplier=self._noise_multiplier,
            label=f"DP-SGD ({self.steps} steps on {len(cliques)} clique tables)",
        )
        self._say(f"DP-SGD: {self.steps} steps, lot rate {self.sampling_rate:g}, "
                  f"noise multiplier {gradients.noise_multiplier:.4g}, clip {clip:.4g}")
        period = max(1, self.steps // 10)

        def report(step: int) -> None:
            if step % period == 0:
                self._say(f"DP-SGD step {step}/{self.steps}")

        return dp_sgd(domain, gradients, cliques, total, learning_rate=self.learning_rate,
                      callback=report)
