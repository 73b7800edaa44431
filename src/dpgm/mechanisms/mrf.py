"""The private MRF learners of :mod:`dpgm.mrf` (Zhang, Kamath, Kulkarni & Wu 2020) as
mechanisms: one shape with the synthesizers, one registry, the conformance suite.

* :class:`IsingLearner`, :class:`PairwiseLearner`, :class:`TwiseLearner`: ρ-zCDP
  (add/remove neighbours), by private Frank–Wolfe on nodewise logistic regressions; each
  record's contribution to a selection score has sensitivity 1 (``dpgm.privacy.frank_wolfe``)
  and parallel composition over the regressions a record takes no part in. Given
  ``rho`` (native), or ``epsilon``/``delta`` converted to ρ = cdp_rho(ε, δ). ``fit``
  returns the model (an :class:`~dpgm.models.IsingModel`, ``PairwiseModel`` or
  ``TwiseModel``); ``estimate`` keeps the learner's whole estimate.
* :class:`StructureLearner`: the edge set under (ε, δ)-DP (subsample-and-aggregate with
  propose-test-release or a stable histogram; or the zCDP learner, thresholded). ``fit``
  returns a :class:`~dpgm.mrf.StructureEstimate` (edges, or None where the blocks did not
  agree stably), not a model: ``releases_model`` is False.

The width λ (and η for the structure) are public bounds, never read off the data. The
workload is not used: a learner measures what its regressions need.
"""

from __future__ import annotations

import math
from typing import ClassVar

from dpgm.dataset import Dataset
from dpgm.domain import Domain
from dpgm.errors import DomainError, ParameterError, option
from dpgm.mechanisms.base import Mechanism, Progress
from dpgm.mrf import learn_ising, learn_pairwise, learn_structure, learn_twise
from dpgm.mrf.structure import METHODS as STRUCTURE_METHODS
from dpgm.mrf.structure import structure_blocks
from dpgm.random import Randomness
from dpgm.validation import integer, one_of, optional, positive
from dpgm.workload import Workload


class FrankWolfeLearner(Mechanism):
    """What the three parameter learners share: the budget (ρ, or (ε, δ) as ρ), the
    public width, the Frank–Wolfe settings, and a binary (or k-ary) domain check."""

    kind = "mrf"
    privacy: ClassVar[str] = "zcdp"
    estimators: ClassVar[tuple[str, ...]] = ("original",)
    uses_workload = False
    needs_records = True
    #: the learner's name in progress lines
    label: ClassVar[str] = ""

    def __init__(
        self,
        epsilon: float | None = None,
        delta: float | None = None,
        *,
        rho: float | None = None,
        width: float,
        steps: int | None = None,
        count_share: float = 0.01,
        step_constant: float = 0.5,
        selection: str = "em",
        estimator: str = "original",
        max_memory: float | None = None,
        progress: Progress | None = None,
    ):
        super().__init__(epsilon, delta, rho=rho, estimator=estimator, max_memory=max_memory,
                         progress=progress)
        self.width = positive("width", width)
        self.steps = optional(lambda name, v: integer(name, v, least=2), "steps", steps)
        self.count_share = count_share
        self.step_constant = step_constant
        self.selection = selection
        self.estimate = None

    #: the radius of the L1 ball, in widths per value: 2λ (2λk for the pairwise model)
    radius_per_value: ClassVar[bool] = False

    def plan(self, domain: Domain, workload: Workload) -> None:
        """The domain suits the model and the width gives a finite radius (public), and the
        one-way tables fit in memory."""
        self._check_domain(domain)
        values = max(domain.shape) if self.radius_per_value else 1
        if not math.isfinite(2.0 * values * self.width):
            raise ParameterError(f"{option('width', self.width)} is too large: twice it"
                                 f"{' times the number of values' if values > 1 else ''} "
                                 "must be a finite number")
        super().plan(domain, workload)

    def _check_domain(self, domain: Domain) -> None:
        if any(size != 2 for size in domain.shape):
            raise DomainError(f"{type(self).__name__} needs binary attributes; the domain has "
                              f"sizes {list(domain.shape)}")

    def _options(self) -> dict:
        return {"steps": self.steps, "count_share": self.count_share,
                "step_constant": self.step_constant, "selection": self.selection}

    def _fit(self, data: Dataset, workload: Workload, randomness: Randomness):
        self._say(f"{self.label}: {len(data.domain)} nodewise regressions by private "
                  "Frank-Wolfe")
        estimate = self._learn(data, randomness)
        self.estimate = estimate
        self._say(f"{self.label}: {estimate.steps} Frank-Wolfe steps done")
        return estimate.model

    def _learn(self, data: Dataset, randomness: Randomness):
        raise NotImplementedError

    def _reset(self) -> None:
        super()._reset()
        self.estimate = None


class IsingLearner(FrankWolfeLearner):
    """An Ising model of binary records (Alg. 2; :func:`dpgm.mrf.learn_ising`), ρ-zCDP."""

    label = "Ising"

    def _learn(self, data: Dataset, randomness: Randomness):
        return learn_ising(data, self.budget.total, self.width, rng=randomness.noise,
                           budget=self.budget, **self._options())


class PairwiseLearner(FrankWolfeLearner):
    """A pairwise model over k values per attribute (Alg. 3;
    :func:`dpgm.mrf.learn_pairwise`), ρ-zCDP; ``mode`` "tight" (default) or "paper"."""

    label = "pairwise"
    radius_per_value = True

    def __init__(self, epsilon: float | None = None, delta: float | None = None, *,
                 mode: str = "tight", **options):
        super().__init__(epsilon, delta, **options)
        self.mode = one_of("mode", mode, ("tight", "paper"))

    def _check_domain(self, domain: Domain) -> None:
        if len(set(domain.shape)) != 1 or domain.shape[0] < 2:
            raise DomainError(f"a pairwise model needs every attribute to have the same "
                              f"number of values; the domain has {list(domain.shape)}")

    def _learn(self, data: Dataset, randomness: Randomness):
        return learn_pairwise(data, self.budget.total, self.width, mode=self.mode,
                              rng=randomness.noise, budget=self.budget, **self._options())


class TwiseLearner(FrankWolfeLearner):
    """A binary t-wise model (Algs. 4–5; :func:`dpgm.mrf.learn_twise`), ρ-zCDP; ``order``
    t and ``goal`` "l1" (default) or "linf"."""

    label = "t-wise"

    def __init__(self, epsilon: float | None = None, delta: float | None = None, *,
                 order: int = 2, goal: str = "l1", **options):
        super().__init__(epsilon, delta, **options)
        self.order = integer("order", order, least=2)
        self.goal = one_of("goal", goal, ("l1", "linf"))

    def _learn(self, data: Dataset, randomness: Randomness):
        return learn_twise(data, self.budget.total, self.width, self.order, goal=self.goal,
                           rng=randomness.noise, budget=self.budget, **self._options())


class StructureLearner(Mechanism):
    """The edge set of an Ising model of binary records (:func:`dpgm.mrf.learn_structure`),
    (ε, δ)-DP: ``method`` "ptr" (default) or "histogram" over random blocks, or "zcdp".
    ``fit`` returns a :class:`~dpgm.mrf.StructureEstimate`; a stability release that is
    impossible at (ε, δ, blocks) is refused before the data are read."""

    kind = "mrf"
    privacy: ClassVar[str] = "approx"
    estimators: ClassVar[tuple[str, ...]] = ("original",)
    uses_workload = False
    needs_records = True

    def __init__(self, epsilon: float, delta: float | None = None, *, width: float,
                 min_edge_weight: float, method: str = "ptr", blocks: int | None = None,
                 steps: int = 150, estimator: str = "original",
                 max_memory: float | None = None, progress: Progress | None = None):
        super().__init__(epsilon, delta, estimator=estimator, max_memory=max_memory,
                         progress=progress)
        self.width = positive("width", width)
        self.min_edge_weight = positive("min_edge_weight", min_edge_weight)
        self.method = one_of("method", method, STRUCTURE_METHODS)
        self.blocks = optional(lambda name, v: integer(name, v, least=1), "blocks", blocks)
        self.steps = integer("steps", steps, least=2)

    @property
    def releases_model(self) -> bool:
        return False  # an edge set

    def plan(self, domain: Domain, workload: Workload) -> None:
        """Binary attributes, and a release that is possible at all (public facts)."""
        if any(size != 2 for size in domain.shape):
            raise DomainError(f"structure learning needs binary attributes; the domain has "
                              f"sizes {list(domain.shape)}")
        structure_blocks(self.epsilon, self.delta, self.method, self.blocks)
        super().plan(domain, workload)

    def _fit(self, data: Dataset, workload: Workload, randomness: Randomness):
        blocks = structure_blocks(self.epsilon, self.delta, self.method, self.blocks)
        where = f" over {blocks} blocks" if blocks else ""
        self._say(f"structure: {self.method}{where}, edges at |A| > "
                  f"{self.min_edge_weight / 2:g}")
        found = learn_structure(data, self.epsilon, self.delta, self.width,
                                self.min_edge_weight, method=self.method, blocks=blocks,
                                steps=self.steps, rng=randomness.noise, budget=self.budget)
        self._say("structure: " + ("released an edge set" if found.edges is not None
                                   else "the blocks did not agree stably: nothing released"))
        return found
