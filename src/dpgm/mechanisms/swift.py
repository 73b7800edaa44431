"""SWIFT: one selection, one measurement, one estimation, for wide tables.

dpgm's mechanism after the idea of Google's dpsynth SWIFT ("Scalable Workload-Informed
Factor Tree"): where AIM's rounds of selection and re-estimation do not scale and MST's
tree of pairs is too coarse, pick a junction tree of bounded width under a public cell
budget in one selection, measure all its cliques at once, and estimate once. The design
here is dpgm's own (the issue's description, not dpsynth's code):

1. every one-way marginal with Gaussian noise (``one_way_share`` of ρ);
2. the selection (``select_share`` of ρ): every candidate pair r (the pairs of the
   workload's cliques, weighted by w_r = Σ_{s ∈ W} |r ∩ s| as in AIM; default workload
   all pairs of at most ``max_cells`` cells, weight 1) gets its gain once,
   g_r = ‖M_r(D) − M_r(p̂₁)‖₁, p̂₁ the independent model of the noisy one-way
   marginals; a record moves g_r by at most 1. As in AIM, a clique's score subtracts the
   noise its measurement will add, sqrt(2/π)·σ̄ a cell, σ̄ = sqrt((d − 1)/(2ρ_measure))
   planned for the most cliques there can be (public), so the score of r is
   q_r = w_r·(g_r − sqrt(2/π)·σ̄·n), with sensitivity Δ = max w_r. Then:

   a. a spanning tree, Kruskal-style: d − 1 exponential-mechanism picks (ε²/8-zCDP
      each) among the pairs that join two components, n the pair's cells;
   b. triangles: up to ⌊(d − 1)/2⌋ more picks among the pairs (a, c) of attributes
      joined through one tree neighbour b whose tree edges (a, b) and (b, c) are in no
      triangle yet, n the cells the triangle {a, b, c} adds over its two pairs, and
      "no more triangles" at score 0 (a public constant), which ends the phase. Every
      block of the graph is then a triangle or an edge, so it is chordal: its cliques
      form a junction tree of width 3 with no fill-in, and its size is a sum of clique
      sizes;

   a pair is a candidate only while the junction tree with it stays within
   ``max_model_cells`` (public: the domain and the picks so far). The picks are charged
   at ε = sqrt(8·ρ_select/P), P = (d − 1) + ⌊(d − 1)/2⌋ the most picks there can be;
3. the cliques of that junction tree (triangles, and tree edges in none), all at once,
   with Gaussian noise of one σ: m cliques of L2 sensitivity 1 cost m/(2σ²), all that
   is left of ρ;

then one Private-PGM estimation from the one-way and clique measurements. Neighbouring
datasets differ by adding or removing one record; ρ = cdp_rho(ε, δ) and the parts add up
to it exactly. Everything but the scores' data access (paid for by the picks) and the
measurements is post-processing.
"""

from __future__ import annotations

import math
from itertools import combinations

import networkx as nx
import numpy as np

from dpgm.dataset import Dataset
from dpgm.domain import Domain
from dpgm.errors import ParameterError, option
from dpgm.estimation.total import estimate_total
from dpgm.mechanisms.aim import BIAS, downward_closure
from dpgm.mechanisms.base import Mechanism, Progress, WorkloadLike
from dpgm.privacy.exponential import exponential_mechanism
from dpgm.privacy.measure import measure_marginals
from dpgm.random import Randomness
from dpgm.validation import fraction, integer
from dpgm.workload import Workload

Pair = tuple[str, str]


class SWIFT(Mechanism):
    """The SWIFT synthesizer (see the module docstring for the guarantee); ``fit``
    returns its Private-PGM model.

    ``select_share`` and ``one_way_share`` are the shares of ρ for the selection and the
    one-way marginals (the rest measures the cliques); ``max_model_cells`` is the public
    cell budget of the junction tree; the default workload is every pair of at most
    ``max_cells`` cells; ``iters`` the estimation's iterations.
    """

    privacy = "zcdp"
    estimators = ("pgm", "original")

    def __init__(
        self,
        epsilon: float | None = None,
        delta: float | None = None,
        *,
        rho: float | None = None,
        estimator: str = "pgm",
        select_share: float = 0.1,
        one_way_share: float = 0.1,
        max_model_cells: int = 2**20,
        max_cells: int = 10_000,
        iters: int = 500,
        max_memory: float | None = None,
        progress: Progress | None = None,
    ):
        super().__init__(
            epsilon, delta, rho=rho, estimator=estimator, max_memory=max_memory,
            progress=progress
        )
        self.select_share = fraction("select_share", select_share)
        self.one_way_share = fraction("one_way_share", one_way_share)
        if self.select_share + self.one_way_share >= 1.0:
            raise ParameterError("select_share and one_way_share must leave some of the "
                                 "budget to measure the cliques (their sum below 1)")
        self.max_model_cells = integer("max_model_cells", max_model_cells, least=1)
        self.max_cells = integer("max_cells", max_cells, least=1)
        self.iters = integer("iters", iters, least=1)

    def _reset(self) -> None:
        super()._reset()
        #: the tree's pairs, then the triangles' closing pairs, in the order picked
        self.tree_edges: list[Pair] = []
        self.triangles: list[tuple[str, str, str]] = []
        #: the cliques measured (the junction tree's)
        self.cliques: list[tuple[str, ...]] = []

    # -- public facts -------------------------------------------------------------------
    def workload_for(self, domain: Domain, workload: WorkloadLike | None) -> Workload:
        """The given workload, or every pair of at most ``max_cells`` cells."""
        full = super().workload_for(domain, workload)
        if workload is not None or len(domain) < 2:
            return full
        small = [c for c in full.cliques if domain.size(c) <= self.max_cells]
        # no pair that small: the one-way marginals alone (they get the whole budget)
        return Workload(small or [(a,) for a in domain])

    def candidates(self, domain: Domain, workload: Workload) -> dict[Pair, float]:
        """The pairs of the workload's cliques with their weights, each small enough to
        be a clique of the model."""
        closure = downward_closure(domain, workload.cliques)
        return {r: w for r, w in closure.items() if len(r) == 2
                and domain.size(r) <= self.max_model_cells}

    def plan(self, domain: Domain, workload: Workload) -> None:
        """The one-way model must fit the cell budget, and the candidates' true
        marginals memory (public facts)."""
        super().plan(domain, workload)
        one_way = sum(domain.shape)
        if one_way > self.max_model_cells:
            raise ParameterError(
                f"the one-way marginals alone make a model of {one_way:,} cells, over "
                f"{option('max_model_cells', self.max_model_cells)}: raise it")
        self.check_tables(domain, self.candidates(domain, workload),
                          "the candidate pairs' true marginals")

    # -- the mechanism --------------------------------------------------------------------
    def _fit(self, data: Dataset, workload: Workload, randomness: Randomness):
        budget, domain = self.budget, data.domain
        rho = budget.total
        d = len(domain)
        picks = (d - 1) + (d - 1) // 2
        candidates = self.candidates(domain, workload) if d > 1 else {}
        # nothing to select (one attribute, or a workload of one-way marginals): the
        # one-way marginals get the whole budget
        share = self.one_way_share if candidates else 1.0
        one_way = measure_marginals(
            data, [(a,) for a in domain], rho=share * rho, budget=budget,
            rng=randomness.noise, label="one-way marginals")
        self._say(f"measured {d} one-way marginals (rho={share * rho:.4g})")
        if candidates:
            epsilon = math.sqrt(8.0 * self.select_share * rho / picks)
            self._select(data, one_way, candidates, epsilon, randomness)
        self._say(f"selected {len(self.tree_edges)} tree pairs and {len(self.triangles)} "
                  f"triangles by the exponential mechanism (rho={self.select_share * rho:.4g})")
        self.cliques = self._cliques(domain)
        measured = []
        if self.cliques:
            measured = measure_marginals(
                data, self.cliques, rho=budget.remaining, budget=budget,
                rng=randomness.noise, label="the junction tree's cliques")
        elif budget.remaining > 0:  # no pair fitted the cell budget: the one-ways again
            measured = measure_marginals(
                data, [(a,) for a in domain], rho=budget.remaining, budget=budget,
                rng=randomness.noise, label="one-way marginals, again")
        cells = sum(domain.size(c) for c in self.cliques)
        self._say(f"measured {len(measured)} cliques at once ({cells:,} cells)")
        self.measurements = list(one_way) + list(measured)
        model = self.estimate(domain, self.measurements, iters=self.iters)
        self._say(f"estimated the model: {len(model.tree.cliques)} cliques, "
                  f"total≈{model.total:.0f}")
        return model

    def _select(self, data: Dataset, one_way, candidates: dict[Pair, float],
                epsilon: float, randomness: Randomness) -> None:
        """The tree, then the triangles (see the module docstring), each pick an
        exponential mechanism on the scores computed once."""
        domain = data.domain
        # the independent model of the noisy one-way marginals: each clipped at zero and
        # scaled to the estimated total (post-processing)
        total = estimate_total(one_way)
        shares = {}
        for measured in one_way:
            values = np.clip(measured.values, 0.0, None)
            mass = values.sum()
            shares[measured.clique[0]] = (values / mass if mass > 0 else
                                          np.full(values.size, 1.0 / values.size))
        pairs = list(candidates)
        weights = np.array([candidates[p] for p in pairs])
        truth = data.marginals(pairs)  # every pair counted in one pass where the engine can
        gaps = [float(np.abs(t - total * np.outer(shares[a], shares[b])).sum())
                for (a, b), t in zip(pairs, truth)]
        gain = dict(zip(pairs, gaps, strict=True))
        weight = dict(zip(pairs, weights, strict=True))
        sensitivity = float(weights.max())
        size = {p: domain.size(p) for p in pairs}
        # the noise a clique's measurement will add, as AIM scores it: E|N(0, σ²)| a cell,
        # σ planned for the most cliques there can be (d − 1), from public facts only
        measure_rho = (1.0 - self.select_share - self.one_way_share) * self.budget.total
        noise = BIAS * math.sqrt((len(domain) - 1) / (2.0 * measure_rho))
        cells = sum(domain.shape)  # the model's: one-way tables until pairs join them

        def pick(allowed: list, values: list[float], label: str):
            index = exponential_mechanism(values, epsilon, sensitivity, randomness.selection,
                                          self.budget, label=label)
            return allowed[index]

        components = nx.utils.UnionFind(domain.attrs)
        tree = nx.Graph()
        tree.add_nodes_from(domain.attrs)
        for _ in range(len(domain) - 1):
            allowed = [p for p in pairs if components[p[0]] != components[p[1]]
                       and cells + size[p] <= self.max_model_cells]
            if not allowed:
                break
            chosen = pick(allowed, [weight[p] * (gain[p] - noise * size[p]) for p in allowed],
                          "select tree pair")
            components.union(*chosen)
            tree.add_edge(*chosen)
            cells += size[chosen]
            self.tree_edges.append(chosen)
        # triangles: (a, c) through their common tree neighbour b, each tree edge in one
        used: set[frozenset[str]] = set()
        for _ in range((len(domain) - 1) // 2):
            allowed, through = [], {}
            for b in tree.nodes:
                for a, c in combinations(sorted(tree.neighbors(b), key=domain.attrs.index), 2):
                    if frozenset((a, b)) in used or frozenset((b, c)) in used:
                        continue
                    pair = tuple(domain.canonical((a, c)))
                    if pair not in gain:
                        continue
                    added = domain.size((a, b, c)) - domain.size((a, b)) - domain.size((b, c))
                    if cells + added <= self.max_model_cells:
                        allowed.append(pair)
                        through[pair] = (b, added)
            if not allowed:
                break
            # a triangle measures its cells in place of its two pairs' cells; "no more
            # triangles" (score 0, a public constant) ends the phase when none pays
            values = [weight[p] * (gain[p] - noise * through[p][1]) for p in allowed]
            chosen = pick(allowed + [None], values + [0.0], "select triangle")
            if chosen is None:
                break
            b, added = through[chosen]
            cells += added
            used.update({frozenset((chosen[0], b)), frozenset((b, chosen[1]))})
            self.triangles.append(tuple(domain.canonical((chosen[0], b, chosen[1]))))

    def _cliques(self, domain: Domain) -> list[tuple[str, ...]]:
        """The junction tree's cliques: the triangles, and the tree edges in none."""
        inside = {frozenset(pair) for t in self.triangles for pair in combinations(t, 2)}
        edges = [tuple(domain.canonical(e)) for e in self.tree_edges
                 if frozenset(e) not in inside]
        return list(self.triangles) + edges
