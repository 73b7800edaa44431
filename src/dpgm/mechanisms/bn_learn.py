"""A Bayesian network learnt privately from a table: its structure, then its CPDs
(``dpgm bn learn``).

For a data steward with a table and no public DAG. Pure ε-DP under adding or removing
one record; with d attributes, β = ``structure_share`` and s = ``count_share``:

1. ε_s = β·ε chooses the structure (:mod:`dpgm.mechanisms.network_selection`, the one
   selection PrivBayes also uses):

   a. c = s·ε_s measures the record count n (one linear query of sensitivity 1, Laplace
      noise of scale 1/c); n̂ = max(1, noisy count) sets the θ-usefulness threshold.
   b. d − 1 rounds of the exponential mechanism, ε_round = (ε_s − c)/(d − 1) each, on
      PrivBayes's score R (sensitivity 2): ``method="privbayes"`` gives each attribute
      at most ``degree`` parents; ``method="tree"`` one (a private Prim's maximum
      spanning tree on R, in the spirit of Chow–Liu, whose mutual information has a
      sensitivity that grows with n).

2. ε − ε_s learns the CPDs on the chosen structure with a learner of
   :mod:`dpgm.mechanisms.bn` (``parameters``): its noisy contingency tables of
   sensitivity 1, charged to the same budget.

The threshold: a (child, parents) marginal is θ-useful when it has at most
τ = n̂·(ε − ε_s)/(2d·θ) cells — its average count at least θ times the Laplace scale
2d/(ε − ε_s) with which D-Ind measures it (the data-dependent learner's scales are
spread around that) — and it fits in ``max_memory``. The parts add
up to ε (sequential composition); the CPDs' post-processing is the learner's.
"""

from __future__ import annotations

from dpgm.bn.structure import Parents
from dpgm.dataset import Dataset
from dpgm.domain import Domain
from dpgm.errors import ParameterError
from dpgm.mechanisms.base import Mechanism, Progress
from dpgm.mechanisms.bn import DataDependentBN, DInd, check_node_budget
from dpgm.mechanisms.network_selection import (
    Pair,
    budget_split,
    score_table_cells,
    select_network,
)
from dpgm.memory import MEASURED_CELL_BYTES
from dpgm.models.bayesian_network import BayesianNetwork
from dpgm.privacy.measure import measure_record_count
from dpgm.random import Randomness
from dpgm.validation import fraction, integer, one_of, positive
from dpgm.workload import Workload

#: the CPD learners ``parameters`` names
PARAMETER_LEARNERS = {"dind": DInd, "data-dependent": DataDependentBN}
METHODS = ("privbayes", "tree")


class NetworkLearner(Mechanism):
    """Learns a Bayesian network's structure and CPDs privately (module docstring).

    ``method`` is ``"privbayes"`` (at most ``degree`` parents each) or ``"tree"`` (one);
    ``parameters`` the CPD learner (``"dind"`` or ``"data-dependent"``, the latter with
    ``allocation="error"``: its other rule depends on the structure, which is not public
    before the run), with ``estimator`` and ``iters`` passed on. The defaults,
    data-dependent tables estimated by Private-PGM, had the lowest query error of the
    CPD learners measured (``docs/bayesian-networks.md``). ``fit`` releases a
    :class:`BayesianNetwork` in the domain's labels; ``network`` keeps the pairs in the
    order chosen and ``parents`` the structure.

    Privacy: ε-DP under add/remove-one-record neighbours (module docstring).
    """

    kind = "bn"
    privacy = "pure"
    estimators = ("original", "pgm")
    uses_workload = False
    # a zero holds in a network only where one family has all its attributes, and the
    # families are chosen during the run
    holds_constraints = False

    def __init__(
        self,
        epsilon: float,
        delta: float | None = None,
        *,
        method: str = "privbayes",
        degree: int = 2,
        parameters: str = "data-dependent",
        structure_share: float = 0.5,
        count_share: float = 0.05,
        theta: float = 4.0,
        estimator: str = "pgm",
        iters: int = 500,
        max_memory: float | None = None,
        progress: Progress | None = None,
    ):
        super().__init__(
            epsilon, delta, estimator=estimator, max_memory=max_memory, progress=progress
        )
        self.method = one_of("method", method, METHODS)
        self.degree = integer("degree", degree, least=1)
        if self.method == "tree" and self.degree != 1:
            if degree != 2:  # the default: a tree has one parent whatever it says
                raise ParameterError("method='tree' gives each attribute one parent: "
                                     "drop degree")
            self.degree = 1
        self.parameters = one_of("parameters", parameters, tuple(PARAMETER_LEARNERS))
        self.structure_share = fraction("structure_share", structure_share)
        self.count_share = fraction("count_share", count_share)
        self.theta = positive("theta", theta)
        self.iters = integer("iters", iters, least=1)

    def _reset(self) -> None:
        super()._reset()
        #: (child, parents) in the order chosen, the first with no parents
        self.network: list[Pair] = []
        #: the structure, in the domain's order
        self.parents: Parents = {}
        #: the noisy record count n̂
        self.total: float | None = None
        #: the CPD learner that ran on the chosen structure
        self.learner: Mechanism | None = None

    def _split(self, d: int) -> tuple[float, float, float]:
        """(record count, each selection round, the CPDs): the budget of each part."""
        return budget_split(self.epsilon, self.structure_share, self.count_share, d)

    def plan(self, domain: Domain, workload: Workload) -> None:
        """Public facts: every node's CPD budget gives noise of a finite scale, and one
        round's score tables fit in memory."""
        super().plan(domain, workload)
        d = len(domain)
        _, _, rest = self._split(d)
        roots = {a: () for a in domain.attrs}  # the least budgets do not depend on it
        for what, smallest in self._learner(rest, roots).smallest_budgets(domain, roots):
            check_node_budget(what, smallest, self.epsilon)
        self.check_memory(
            f"the score tables of one selection round (degree {self.degree}, "
            f"{d} attributes)",
            MEASURED_CELL_BYTES * score_table_cells(domain, self.degree),
            alternative="lower the degree",
        )

    def _learner(self, epsilon: float, parents: Parents) -> Mechanism:
        options = {"allocation": "error"} if self.parameters == "data-dependent" else {}
        return PARAMETER_LEARNERS[self.parameters](
            epsilon, structure=parents, estimator=self.estimator, iters=self.iters,
            max_memory=self.max_memory, progress=self.progress, **options)

    def _fit(self, data: Dataset, workload: Workload, randomness: Randomness
             ) -> BayesianNetwork:
        domain = data.domain
        d = len(domain)
        count_part, epsilon_round, rest = self._split(d)
        count = measure_record_count(data, self.budget, randomness.noise, epsilon=count_part)
        self.total = total = max(1.0, float(count.values[0]))
        self._say(f"measured the record count: {total:.1f} (epsilon={count_part:.4g})")
        threshold = min(total * rest / (2 * d * self.theta),
                        self.max_memory / MEASURED_CELL_BYTES)
        if d > 1:
            self._say(f"choosing {d - 1} (child, parents) pairs, epsilon={epsilon_round:.4g} "
                      "each")
        self.network = select_network(
            data, self.degree, epsilon_round, threshold, self.budget, randomness.selection,
            other=randomness.other, say=self._say)
        chosen = dict(self.network)
        self.parents = {a: chosen[a] for a in domain.attrs}
        edges = sum(len(p) for p in self.parents.values())
        self._say(f"the structure: {edges} edges; CPDs by {self.parameters} "
                  f"(epsilon={rest:.4g})")
        self.learner = self._learner(rest, self.parents)
        network = self.learner.fit_within(data, workload, randomness, self.budget)
        self.measurements = [count, *self.learner.measurements]
        self.model = self.learner.model
        return network
