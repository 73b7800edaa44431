"""PrivBayes (Zhang, Cormode, Procopiuc, Srivastava & Xiao, TODS 2017): a private Bayesian network.

A greedy network of degree ``k`` is chosen one (child, parents) pair at a time by the
exponential mechanism; the marginal of every pair is then measured with Laplace noise.
``estimator="original"`` turns the noisy marginals into the CPDs of a
:class:`~dpgm.models.BayesianNetwork` (negatives clipped to 0, each conditional
normalised; kept as ``bayesian_network``) and samples synthetic records from it;
``estimator="pgm"`` hands the same noisy marginals to Private-PGM.

Privacy accounting: pure ε-DP (a ``delta`` is accepted and none of it is spent: an ε-DP
mechanism is (ε, δ)-DP for every δ); neighbouring datasets differ by adding or removing
one record. With d attributes, β = ``beta`` and s = ``count_share``:

1. ε₁ = β·ε learns the structure:

   a. c = s·ε₁ measures the record count n (sensitive under add/remove DP): one linear
      query, the all-ones row on the first attribute's marginal (sensitivity 1), Laplace
      noise of scale 1/c. n̂ = max(1, noisy count) is used only for the θ-usefulness
      rule below and as the number of synthetic records.
   b. d − 1 rounds of the exponential mechanism, ε_round = (ε₁ − c)/(d − 1) each, over
      the score R below with sensitivity Δ = 2.

2. ε₂ = ε − ε₁ measures the marginals of the chosen cliques (child ∪ parents) with
   ``measure_marginals(epsilon=ε₂)``. Only the m ≤ d cliques not contained in another
   chosen clique are measured (as PrivBayes does for its first k pairs, whose
   distributions follow from the (k+1)-th): each gets Laplace noise of scale m/ε₂, and
   the marginals of the contained cliques are read off the measured ones.

With one attribute there is nothing to select and step 2 gets ε − c. The parts add up to
ε (sequential composition); everything else is post-processing of the noisy outputs.

Structure: GreedyBayes with θ-usefulness and PrivBayes's score R, whose sensitivity under
adding or removing a record is 2 — :mod:`dpgm.mechanisms.network_selection`, which
``dpgm bn learn`` shares. A marginal is θ-useful when its average count per cell is at
least θ times the Laplace scale d/ε₂, i.e. when its cells number at most
τ = n̂·ε₂/(d·θ) (d bounds the number of measured cliques m, which is only known at the
end); the exponential mechanism picks (X, Π) with probability ∝ exp(ε_round·S/4).
"""

from __future__ import annotations

import numpy as np

from dpgm.bn import normalised_columns, release_network
from dpgm.dataset import Dataset
from dpgm.domain import Domain
from dpgm.measurement import Measurement
from dpgm.mechanisms.base import Mechanism, Progress
from dpgm.mechanisms.network_selection import (  # noqa: F401 (re-exported: their old home)
    R_SENSITIVITY,
    Pair,
    budget_split,
    parent_sets,
    r_score,
    select_network,
)
from dpgm.memory import MEASURED_CELL_BYTES, check_rows
from dpgm.models.bayesian_network import BayesianNetwork
from dpgm.privacy.measure import measure_marginals, measure_record_count
from dpgm.random import Randomness
from dpgm.validation import fraction, integer, optional, positive
from dpgm.workload import Workload


class PrivBayes(Mechanism):
    """The PrivBayes synthesizer; ``fit`` returns synthetic records or a Private-PGM model.

    ``degree`` is the most parents an attribute may have (k), ``beta`` the share of ε spent
    on the structure, ``count_share`` the share of that part spent on the record count,
    ``theta`` the θ-usefulness ratio; ``iters`` Private-PGM iterations (``"pgm"`` only);
    ``rows`` the number of synthetic records the original estimator draws (default: the
    noisy record count). A parent set is a candidate only if its marginal also fits in
    ``max_memory``. The workload is accepted for the common interface and not used. See
    the module docstring for the privacy accounting and the score.
    """

    uses_workload = False

    privacy = "pure"
    estimators = ("pgm", "original")
    releases_records = ("original",)

    def __init__(
        self,
        epsilon: float,
        delta: float | None = None,
        *,
        estimator: str = "pgm",
        degree: int = 2,
        beta: float = 0.5,
        count_share: float = 0.05,
        theta: float = 4.0,
        iters: int = 1000,
        rows: int | None = None,
        max_memory: float | None = None,
        progress: Progress | None = None,
    ):
        super().__init__(
            epsilon, delta, estimator=estimator, max_memory=max_memory, progress=progress
        )
        self.degree = integer("degree", degree, least=1)
        self.beta = fraction("beta", beta)
        self.count_share = fraction("count_share", count_share)
        self.theta = positive("theta", theta)
        self.iters = integer("iters", iters, least=1)
        self.rows = optional(integer, "rows", rows, least=0)

    def _reset(self) -> None:
        super()._reset()
        #: the network: (child, parents) in the order chosen, the first with no parents
        self.network: list[Pair] = []
        #: the cliques whose marginals were measured (domain order)
        self.measured: list[tuple[str, ...]] = []
        #: the noisy record count n̂
        self.total: float | None = None
        #: the network the original estimator samples from (its CPDs from the noisy marginals)
        self.bayesian_network: BayesianNetwork | None = None

    def plan(self, domain: Domain, workload: Workload) -> None:
        """One-way marginals and, if asked for, the synthetic records fit in memory."""
        super().plan(domain, workload)
        if self.estimator == "original" and self.rows is not None:
            self._check_rows(self.rows, len(domain))

    def _check_rows(self, rows: int, width: int) -> None:
        check_rows(rows, width, self.max_memory)

    # -- the mechanism ----------------------------------------------------------------
    def _fit(self, data: Dataset, workload: Workload, randomness: Randomness):
        """Spend ``epsilon`` on ``data``; synthetic records (original) or a model (pgm)."""
        budget = self.budget
        domain = data.domain
        d = len(domain)

        # the budget split of the module docstring
        count_part, epsilon_round, epsilon_marginals = budget_split(
            self.epsilon, self.beta, self.count_share, d)

        count = measure_record_count(data, budget, randomness.noise, epsilon=count_part)
        self.measurements = [count]
        self.total = total = max(1.0, float(count.values[0]))
        self._say(f"measured the record count: {total:.1f} (epsilon={count_part:.4g})")

        # θ-useful sets, and (a rule on public facts) only those whose table fits in memory
        threshold = min(
            total * epsilon_marginals / (d * self.theta), self.max_memory / MEASURED_CELL_BYTES
        )
        self.network = select_network(
            data, self.degree, epsilon_round, threshold, budget, randomness.selection,
            other=randomness.other, say=self._say)

        cliques = [domain.canonical((child, *parents)) for child, parents in self.network]
        self.measured = [
            c for i, c in enumerate(cliques) if not any(set(c) < set(o) for o in cliques[i + 1 :])
        ]
        marginals = measure_marginals(
            data,
            self.measured,
            epsilon=epsilon_marginals,
            budget=budget,
            rng=randomness.noise,
            label="marginals",
        )
        self.measurements = [count, *marginals]
        self._say(
            f"measured {len(marginals)} marginals of {len(cliques)} cliques "
            f"(epsilon={epsilon_marginals:.4g}, Laplace scale "
            f"{len(marginals) / epsilon_marginals:.3g})"
        )

        if self.estimator == "pgm":
            model = self.estimate(
                domain, marginals, method="accelerated", iters=self.iters, loss="l2"
            )
            self._say(f"estimated the model: total≈{model.total:.0f}")
            return model
        rows = int(round(total)) if self.rows is None else self.rows
        self._check_rows(rows, d)  # the noisy count is released: a clear error, not a crash
        self.bayesian_network = self._network(domain, marginals, total)
        records = self._sample(self.bayesian_network, domain, rows, randomness.other)
        self._say(f"sampled {len(records)} records")
        return records

    def _network(
        self, domain: Domain, marginals: list[Measurement], total: float
    ) -> BayesianNetwork:
        """The chosen network with its CPDs from the noisy marginals (post-processing).

        Each noisy table is clipped at 0 (PrivBayes's heuristic); a pair's table is summed
        out of the smallest measured clique containing it; a parent configuration with no
        mass gets the uniform conditional. The variables come in the order chosen, which
        sampling follows.
        """
        tables = {
            m.clique: np.maximum(m.values, 0.0).reshape(domain.project(m.clique).shape)
            for m in marginals
        }
        cpds = {}
        for child, parents in self.network:
            wanted = (*parents, child)
            source = min((c for c in tables if set(wanted) <= set(c)), key=lambda c: domain.size(c))
            summed = tuple(i for i, a in enumerate(source) if a not in wanted)
            table = tables[source].sum(axis=summed) if summed else tables[source]
            kept = [a for a in source if a in wanted]
            cpds[child] = normalised_columns(np.transpose(table, [kept.index(a) for a in wanted]))
        return release_network(domain, dict(self.network), cpds, total)

    def _sample(self, network: BayesianNetwork, domain: Domain, n: int,
                rng: np.random.Generator) -> Dataset:
        """``n`` records drawn from ``network`` (:meth:`BayesianNetwork.sample`), with the
        columns and codes of ``domain``."""
        records = network.sample(n, rng).records
        return Dataset(records[:, [network.variables.index(a) for a in domain.attrs]], domain)
