"""MST (McKenna, Miklau & Sheldon 2021): a maximum spanning tree of two-way marginals.

Under ρ-zCDP with ρ = cdp_rho(ε, δ), a third of the budget each goes to

1. every one-way marginal (Gaussian noise), after which rare values are merged;
2. choosing d − 1 pairs, one exponential-mechanism round each, Kruskal-style: the score
   of a pair is the L1 distance between its true marginal and the one implied by the
   one-way estimates (sensitivity 1), among pairs that join two components;
3. the chosen pairs' marginals (Gaussian noise),

then Private-PGM estimates a tree-structured model from all the measurements.
"""

from __future__ import annotations

import math
import time
from itertools import combinations

import networkx as nx
import numpy as np

from dpgm.dataset import Dataset
from dpgm.errors import DpgmError, PrivacyParameterError
from dpgm.estimation.algorithms import estimate
from dpgm.mechanisms.base import Mechanism, Progress, WorkloadLike
from dpgm.mechanisms.compression import DomainCompression
from dpgm.model import MarkovRandomField
from dpgm.privacy.budget import PrivacyBudget
from dpgm.privacy.exponential import exponential_mechanism
from dpgm.privacy.measure import measure_marginals


class MST(Mechanism):
    """The MST synthesizer; ``fit`` returns its model on the original domain.

    MST's own estimator is Private-PGM, so ``estimator="original"`` and ``"pgm"`` are the same.
    """

    estimators = ("pgm", "original")

    def __init__(
        self,
        epsilon: float,
        delta: float = 1e-9,
        *,
        estimator: str = "pgm",
        iters: int = 1000,
        compress: bool = True,
        progress: Progress | None = None,
    ):
        if delta is None:
            raise PrivacyParameterError("MST works under zCDP and needs delta in (0, 1)")
        super().__init__(epsilon, delta, estimator=estimator, progress=progress)
        if isinstance(iters, bool) or not isinstance(iters, int) or iters < 1:
            raise DpgmError(f"iters must be >= 1 (an integer), got {iters!r}")
        self.iters = iters
        self.compress = compress
        self.tree_edges: list[tuple[str, str]] = []

    def fit(
        self,
        data: Dataset,
        workload: WorkloadLike | None = None,
        rng: np.random.Generator | int | None = None,
    ) -> MarkovRandomField:
        """Spend ``epsilon``/``delta`` on ``data`` (the workload is not used by MST)."""
        start = time.perf_counter()
        noise_rng, choice_rng = self._generators(rng)
        budget = PrivacyBudget(epsilon=self.epsilon, delta=self.delta)
        self.budget = budget
        domain = data.domain
        # a third each for one-way marginals, selection and two-way marginals; with a
        # single attribute there is nothing to select and the one-way marginals get it all
        third = budget.total / 3.0 if len(domain) > 1 else budget.total

        one_way = measure_marginals(
            data,
            [(a,) for a in domain],
            rho=third,
            budget=budget,
            rng=noise_rng,
            label="one-way marginals",
        )
        self._say(f"measured {len(one_way)} one-way marginals (rho={third:.4g})")
        if self.compress:
            compression, one_way = DomainCompression.from_one_way(domain, one_way)
        else:
            compression = DomainCompression(
                domain, domain, {a: np.arange(domain[a]) for a in domain}
            )
        small = compression.apply(data)
        merged = sum(domain[a] - compression.compressed[a] for a in domain)
        self._say(
            f"merged {merged} rare values; domain {domain.size():.3g} -> "
            f"{compression.compressed.size():.3g} cells"
        )

        self.tree_edges = self._select(small, one_way, third, budget, choice_rng)
        self._say(
            f"selected {len(self.tree_edges)} pairs by the exponential mechanism (rho={third:.4g})"
        )

        two_way = (
            measure_marginals(
                small,
                self.tree_edges,
                rho=third,
                budget=budget,
                rng=noise_rng,
                label="two-way marginals",
            )
            if self.tree_edges
            else []
        )
        self._say(f"measured {len(two_way)} two-way marginals (rho={third:.4g})")
        self.measurements = one_way + two_way

        fitted = estimate(compression.compressed, self.measurements, iters=self.iters)
        self.model = self.result = compression.expand(fitted)
        self._say(
            f"estimated the model: {len(fitted.tree.cliques)} cliques, total≈{fitted.total:.0f} "
            f"({time.perf_counter() - start:.1f} s so far)"
        )
        return self.model

    def _select(
        self,
        data: Dataset,
        one_way: list,
        rho: float,
        budget: PrivacyBudget,
        rng: np.random.Generator,
    ) -> list[tuple[str, str]]:
        """Pairs of a spanning tree, each chosen by the exponential mechanism."""
        attrs = data.domain.attrs
        rounds = len(attrs) - 1
        if rounds < 1:
            return []
        independent = estimate(data.domain, one_way, iters=100)
        candidates = list(combinations(attrs, 2))
        # L1 gap between the true pair marginal and the one-way model's; sensitivity 1
        scores = {
            pair: float(np.abs(data.marginal(pair) - independent.marginal(pair)).sum())
            for pair in candidates
        }
        epsilon = math.sqrt(8.0 * rho / rounds)  # each round costs ε²/8 of the ρ given
        components = nx.utils.UnionFind(attrs)
        chosen = []
        for _ in range(rounds):
            open_pairs = [p for p in candidates if components[p[0]] != components[p[1]]]
            pick = exponential_mechanism(
                [scores[p] for p in open_pairs], epsilon, 1.0, rng, budget, label="select pair"
            )
            chosen.append(open_pairs[pick])
            components.union(*open_pairs[pick])
        return chosen
