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
from itertools import combinations

import networkx as nx
import numpy as np

from dpgm.dataset import Dataset
from dpgm.domain import Domain
from dpgm.estimation.algorithms import DEFAULT_MAX_CELLS, estimate
from dpgm.mechanisms.base import Mechanism, Progress
from dpgm.memory import MEASURED_CELL_BYTES, cells
from dpgm.models.compression import CompressedModel, DomainCompression
from dpgm.privacy.budget import PrivacyBudget
from dpgm.privacy.exponential import exponential_mechanism
from dpgm.privacy.measure import measure_marginals
from dpgm.random import Randomness
from dpgm.validation import integer
from dpgm.workload import Workload


class MST(Mechanism):
    """The MST synthesizer; ``fit`` returns its model on the original domain.

    MST's own estimator is Private-PGM, so ``estimator="original"`` and ``"pgm"`` are the
    same. Pairs are chosen only among those whose (compressed) table fits in memory and
    keeps the tree within the estimator's model size, a rule on public facts and the
    noisy one-way answers. The model is a :class:`MarkovRandomField` on the original
    domain, or, where expanding the merged values back would not fit (attributes of very
    many values), a :class:`~dpgm.models.compression.CompressedModel` that answers
    the same questions.
    """

    refines = True

    uses_workload = False

    privacy = "zcdp"
    estimators = ("pgm", "original")

    def __init__(
        self,
        epsilon: float | None = None,
        delta: float | None = None,
        *,
        rho: float | None = None,
        estimator: str = "pgm",
        iters: int = 1000,
        compress: bool = True,
        max_memory: float | None = None,
        progress: Progress | None = None,
    ):
        super().__init__(
            epsilon, delta, rho=rho, estimator=estimator, max_memory=max_memory,
            progress=progress
        )
        self.iters = integer("iters", iters, least=1)
        self.compress = bool(compress)

    def _reset(self) -> None:
        super()._reset()
        self.tree_edges: list[tuple[str, str]] = []
        self.compression: DomainCompression | None = None

    def workload_for(self, domain: Domain, workload) -> Workload:
        """MST uses no workload; one given is checked against the domain and ignored."""
        given = workload if workload is not None else [[domain.attrs[0]]]
        return super().workload_for(domain, given)

    def _fit(self, data: Dataset, workload: Workload, randomness: Randomness):
        budget = self.budget
        domain = data.domain
        # a third each for one-way marginals, selection and two-way marginals; with a
        # single attribute there is nothing to select and the one-way marginals get it all
        third = budget.total / 3.0 if len(domain) > 1 else budget.total

        singles = self.one_way_cliques(domain)  # a refined attribute's at its fine level
        one_way = measure_marginals(
            data,
            singles,
            rho=third,
            budget=budget,
            rng=randomness.noise,
            label="one-way marginals",
        )
        self._say(f"measured {len(one_way)} one-way marginals (rho={third:.4g})")
        joint = [m for m in one_way if len(m.clique) > 1]  # fine one-ways: kept whole
        if self.compress:
            compression, one_way = DomainCompression.from_one_way(
                domain, [m for m in one_way if len(m.clique) == 1],
                keep={a for f in self.zeros for a in f.attrs} | {a for m in joint
                                                                  for a in m.clique})
            one_way += joint
        else:
            compression = DomainCompression(
                domain, domain, {a: np.arange(domain[a]) for a in domain}
            )
        self.compression = compression
        small = compression.apply(data)
        merged = sum(domain[a] - compression.compressed[a] for a in domain)
        self._say(
            f"merged {merged} rare values; domain {domain.size():.3g} -> "
            f"{compression.compressed.size():.3g} cells"
        )

        self.tree_edges = self._select(small, one_way, third, budget, randomness.selection)
        self._say(
            f"selected {len(self.tree_edges)} pairs by the exponential mechanism (rho={third:.4g})"
        )

        two_way = (
            measure_marginals(
                small,
                self.tree_edges,
                rho=budget.remaining,  # a third, or more where the tree stopped early
                budget=budget,
                rng=randomness.noise,
                label="two-way marginals",
            )
            if self.tree_edges
            else []
        )
        self._say(f"measured {len(two_way)} two-way marginals")
        self.measurements = one_way + two_way

        fitted = self.estimate(compression.compressed, self.measurements, iters=self.iters)
        # expanded where it fits: a decision on the noisy compression, post-processing
        model = compression.on_original(fitted, DEFAULT_MAX_CELLS)
        if isinstance(model, CompressedModel):
            self._say("the model stays on the compressed domain (expanded, it would not fit)")
        self._say(
            f"estimated the model: {len(fitted.tree.cliques)} cliques, total≈{fitted.total:.0f}"
        )
        return model

    def _select(
        self,
        data: Dataset,
        one_way: list,
        rho: float,
        budget: PrivacyBudget,
        rng: np.random.Generator | None,
    ) -> list[tuple[str, str]]:
        """Pairs of a spanning tree (or forest), each chosen by the exponential mechanism.

        A pair is a candidate while it joins two components, its table fits in memory and
        the tree with it stays within the estimator's size: decided from the compressed
        domain (public, given the noisy one-way answers) and the pairs already chosen.
        """
        domain = data.domain
        # each attribute measured on its own is one node (a refined one's bin and place
        # together, joined from the start); pairs join the nodes' first attributes
        singles = self.one_way_cliques(domain)
        attrs = tuple(clique[0] for clique in singles)
        rounds = len(attrs) - 1
        if rounds < 1:
            return []
        per_table = self.max_memory / MEASURED_CELL_BYTES
        size = {p: cells(domain.project(p).shape) for p in combinations(attrs, 2)}
        candidates = [p for p in size if size[p] <= per_table]

        def gaps() -> dict[tuple[str, str], float]:
            """L1 gap between the true pair marginal and the one-way model's (sensitivity
            1), every pair counted in one pass where the engine can."""
            independent = estimate(domain, one_way, iters=100)
            return {pair: float(np.abs(counts - independent.marginal(pair)).sum())
                    for pair, counts in zip(candidates, data.marginals(candidates),
                                            strict=True)}

        # computed at the first round with a choice: a pick among one pair draws the same
        # whatever its score (the law and the charge depend on the scores' differences only)
        scores: dict[tuple[str, str], float] | None = None
        epsilon = math.sqrt(8.0 * rho / rounds)  # each round costs ε²/8 of the ρ given
        components = nx.utils.UnionFind(attrs)
        room = DEFAULT_MAX_CELLS - sum(domain.size(c) for c in singles)
        chosen = []
        for _ in range(rounds):
            open_pairs = [
                p
                for p in candidates
                if components[p[0]] != components[p[1]] and size[p] <= room
            ]
            if not open_pairs:
                break  # the forest cannot grow within the limits
            if scores is None and len(open_pairs) > 1:
                scores = gaps()
            values = [scores[p] for p in open_pairs] if scores is not None else [0.0]
            pick = exponential_mechanism(values, epsilon, 1.0, rng, budget, label="select pair")
            chosen.append(open_pairs[pick])
            components.union(*open_pairs[pick])
            room -= size[open_pairs[pick]]
        return chosen
