"""Private parameters (CPDs) of a Bayesian network with a public structure.

Roy Chowdhury, Rekatsinas & Jha, *Data-Dependent Differentially Private Parameter Learning
for Directed Graphical Models* (arXiv v1, 2019), following the implementation note
``docs/notes/bn-data-dependent.md``; its choices [C#] and errata [E#] are cited below.

The structure (a DAG over the attributes) and every attribute's states are public. Each
node X_i with parents pa_i is learned from two noisy count tables: T_i over its family
F_i = pa_i ∪ {X_i} and T_pa over pa_i (for a root, the record count). Neighbours add or
remove one record, so each table has L1 sensitivity 1 and Laplace noise of scale 2/E_i on
each of the two costs E_i for the node ([C1]).

* :class:`DInd` (§5.1): E_i = ε/n for every node: ε-DP.
* :class:`DataDependentBN` (Algorithm 2): Stage I measures every node with ε_raw/n on a
  Poisson(β) subsample, which is ε^I-DP on the data by amplification (Lemma 2.1,
  :mod:`dpgm.privacy.amplification`; ε_raw = ln(1 + (e^{ε^I} − 1)/β)); the allocation
  that minimises Σ W_i δ̃_i / ε_i (Eq. 5, 10) is computed from Stage I's noisy output and
  public facts only (post-processing); Stage II measures every node on the full data with
  its ε*_i, Σ ε*_i = ε − ε^I. Total ε-DP by sequential composition (Thm 3.1).

Both release a :class:`~dpgm.models.BayesianNetwork` on the given structure. With
``estimator="original"`` its CPDs come from the paper's Algorithm 1: clipped noisy tables
([C3]), mutual consistency (App. 8.2.1, :mod:`dpgm.estimation.consistency`) and clipped,
renormalised columns ([C4]). With ``estimator="pgm"`` the same noisy tables go jointly to
Private-PGM, and the CPDs are read off the estimated model's family marginals, which are
consistent by construction.

This module holds the learners and their one data access, :func:`measure_node_tables`
(through :func:`dpgm.privacy.measure_marginals`, every table charged to the budget);
what they do with the noisy tables is post-processing in :mod:`dpgm.bn`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from dpgm.bn.allocation import (
    LOG_SPAN,
    MAX_COUNT,
    allocate,
    allocate_expected_error,
    error_bounds,
    parameter_error,
)
from dpgm.bn.cpds import (
    JOINTS,
    NoisyTables,
    cpds_from_tables,
    network_from_model,
    noisy_total,
    release_network,
)
from dpgm.bn.structure import (
    NodeFeatures,
    Parents,
    StructureLike,
    check_structure_type,
    families,
    node_features,
    structure_parents,
)
from dpgm.dataset import Dataset
from dpgm.domain import Domain
from dpgm.errors import PrivacyParameterError, option
from dpgm.measurement import Measurement
from dpgm.mechanisms.base import Mechanism, Progress
from dpgm.models.bayesian_network import BayesianNetwork
from dpgm.privacy.amplification import poisson_subsample, subsample_epsilon
from dpgm.privacy.budget import PrivacyBudget
from dpgm.privacy.measure import measure_marginals
from dpgm.random import Randomness
from dpgm.validation import flag, integer, number, one_of
from dpgm.workload import Workload


def measure_node_tables(
    data: Dataset,
    parents: Parents,
    budgets: Mapping[str, float],
    budget: PrivacyBudget,
    rng: np.random.Generator | None,
) -> dict[str, NoisyTables]:
    """Each node's family and parent tables with Laplace noise of scale 2/E_i (Alg. 1 l. 2–3).

    Each table has L1 sensitivity 1 and costs E_i/2: 2n charges to ``budget``, E_i per node.
    """
    noisy = {}
    for v, ps in parents.items():
        half = budgets[v] / 2.0
        family, parent = (
            measure_marginals(data, [clique], epsilon=half, budget=budget, rng=rng,
                              label=f"{v}: {what} table")[0]
            for clique, what in (((*ps, v), "family"), (ps, "parent"))
        )
        shape = data.domain.project((*ps, v)).shape
        noisy[v] = NoisyTables(
            family.values.reshape(shape), parent.values.reshape(shape[:-1]), budgets[v]
        )
    return noisy


class BNParameterLearner(Mechanism):
    """Shared by the learners of CPDs on a public structure (module docstring).

    ``structure`` is public: a :class:`BayesianNetwork` (CPDs ignored), a
    ``networkx.DiGraph`` or ``{child: parents}`` over the data's attributes. ``fit``
    releases a :class:`BayesianNetwork` in the domain's labels. A workload is refused:
    the structure decides what is measured. ``consistency`` and
    ``joint`` are the switches of the note's [C3] and App. 8.2.1 (estimator "original");
    ``iters`` bounds Private-PGM (estimator "pgm").

    Privacy: ε-DP under add/remove-one-record neighbours; every noisy table is a
    contingency table of L1 sensitivity 1.
    """

    kind = "bn"
    privacy = "pure"
    uses_workload = False
    estimators = ("original", "pgm")

    def __init__(
        self,
        epsilon: float,
        delta: float | None = None,
        *,
        structure: StructureLike,
        estimator: str = "original",
        consistency: bool = True,
        joint: str = "conditional",
        iters: int = 500,
        max_memory: float | None = None,
        progress: Progress | None = None,
    ):
        super().__init__(
            epsilon, delta, estimator=estimator, max_memory=max_memory, progress=progress
        )
        self.structure = check_structure_type(structure)
        self.consistency = flag("consistency", consistency)
        self.joint = one_of("joint", joint, JOINTS)
        self.iters = integer("iters", iters, least=1)

    def plan(self, domain: Domain, workload: Workload) -> None:
        """The structure matches the domain, its tables fit in memory, and every node's
        budget, however it is allocated, gives noise of a finite scale (public facts)."""
        super().plan(domain, workload)
        parents = structure_parents(self.structure, domain)
        self.check_tables(domain, families(parents), "the family tables")
        for what, smallest in self.smallest_budgets(domain, parents):
            check_node_budget(what, smallest, self.epsilon)

    def smallest_budgets(self, domain: Domain, parents: Parents) -> list[tuple[str, float]]:
        """(what, the least budget E_i a node's two tables can get there): public facts."""
        return [("each node", self.epsilon / len(parents))]

    def _reset(self) -> None:
        super()._reset()
        self.parents: Parents = {}
        self.noisy: dict[str, NoisyTables] = {}

    def _release(
        self, data: Dataset, noisy: dict[str, NoisyTables], randomness: Randomness
    ) -> BayesianNetwork:
        """The network from the final noisy tables, by the chosen estimator (post-processing)."""
        domain, parents = data.domain, self.parents
        self.noisy = noisy
        self.measurements = [
            Measurement(clique, table.ravel(), t.std)
            for v, t in noisy.items()
            for clique, table in (((*parents[v], v), t.family), (parents[v], t.parents))
        ]
        if self.estimator == "original":
            self._say("CPDs: clipped tables, mutual consistency, normalised columns")
            cpds = cpds_from_tables(
                parents, noisy, consistency=self.consistency, joint=self.joint
            )
            return release_network(domain, parents, cpds, noisy_total(noisy))
        self._say(f"CPDs: Private-PGM on the {len(self.measurements)} noisy tables")
        model = self.estimate(
            domain, self.measurements, iters=self.iters,
            callback=self._iteration_reporter(self.iters, "Private-PGM iteration"),
        )
        self.model = model
        return network_from_model(model, parents)


def check_node_budget(what: str, epsilon: float, total: float) -> None:
    """Refuse a node budget E_i (out of the whole ``total``) that is not > 0 or whose
    tables' Laplace scale 2/E_i is not a finite number: known before anything is spent."""
    if epsilon > 0.0 and math.isfinite(epsilon) and math.isfinite(2.0 / epsilon):
        return
    raise PrivacyParameterError(
        f"at {option('epsilon', total)}, {what} could get epsilon={epsilon:.3g}, "
        f"whose Laplace noise (scale 2/epsilon) overflows; give a larger {option('epsilon')}")


class DInd(BNParameterLearner):
    """D-Ind (§5.1): every node's two tables measured with ε/n, Laplace scale 2n/ε.

    ε-DP (add/remove neighbours): 2n tables of sensitivity 1, each costing ε/(2n).
    """

    def _fit(self, data: Dataset, workload: Workload, randomness: Randomness) -> BayesianNetwork:
        self.parents = structure_parents(self.structure, data.domain)
        n = len(self.parents)
        self._say(f"measuring {2 * n} tables, epsilon={self.epsilon / n:.4g} per node")
        budgets = {v: self.epsilon / n for v in self.parents}
        noisy = measure_node_tables(data, self.parents, budgets, self.budget, randomness.noise)
        return self._release(data, noisy, randomness)


class DataDependentBN(BNParameterLearner):
    """Algorithm 2: a data-dependent split of ε over the nodes, learnt on a subsample.

    ε-DP (add/remove neighbours). Stage I spends ``stage_share``·ε = ε^I: its 2n tables
    cost ε_raw in total on a Poisson(``beta``) subsample, which is ε^I on the data
    (amplification). The allocation reads Stage I's noisy output and public facts only.
    Stage II measures node i's two tables on the data with ε*_i (scale 2/ε*_i),
    Σ ε*_i = ε − ε^I. ``floor`` is the public τ of [C5]. ``allocation="paper"`` is Eq. 10;
    ``"error"`` (ours) minimises the expected CPD error per parent configuration with the
    parent counts estimated from Stage I (:func:`allocate_expected_error`).
    """

    def __init__(
        self,
        epsilon: float,
        delta: float | None = None,
        *,
        structure: StructureLike,
        beta: float = 0.1,
        stage_share: float = 0.1,
        floor: float = 1.0,
        allocation: str = "paper",
        **options,
    ):
        super().__init__(epsilon, delta, structure=structure, **options)
        self.allocation_rule = one_of("allocation", allocation, ("paper", "error"))
        self.beta = number("beta", beta, low=0.0, high=1.0, low_open=True)
        self.stage_share = number("stage_share", stage_share, low=0.0, high=1.0,
                                  low_open=True, high_open=True)
        # 1/floor must be finite (Eq. 6 divides by the floored counts), and a floor above
        # the cap on counts would be no floor
        self.floor = number("floor", floor, low=1e-300, high=MAX_COUNT)

    def smallest_budgets(self, domain: Domain, parents: Parents) -> list[tuple[str, float]]:
        """Stage I: ε_raw/n per node. Stage II: the least share any allocation can give,
        from public bounds on δ̃_i (:func:`error_bounds`) or the "error" rule's floor."""
        n = len(parents)
        stage_one = self.stage_share * self.epsilon
        raw = subsample_epsilon(stage_one, self.beta) if stage_one > 0 else 0.0
        rest = self.epsilon - stage_one
        if self.allocation_rule == "paper":
            features = node_features(parents, domain.to_dict())
            bounds = {v: error_bounds(domain[v], self.floor) for v in parents}
            roots = {v: (math.sqrt(features[v].weight * bounds[v][0]),
                         math.sqrt(features[v].weight) * math.sqrt(bounds[v][1]))
                     for v in parents}
            share = min(low for low, _ in roots.values()) / sum(
                high for _, high in roots.values())
        else:  # each budget in [e^-LOG_SPAN·total/n, total]
            share = math.exp(-LOG_SPAN) / n**2
        return [("each node in Stage I", raw / n),
                ("a node in Stage II", rest * share)]

    def _reset(self) -> None:
        super()._reset()
        self.stage_one: BayesianNetwork | None = None
        self.stage_one_budget: PrivacyBudget | None = None
        self.features: dict[str, NodeFeatures] = {}
        self.errors: dict[str, float] = {}
        self.allocation: dict[str, float] = {}

    def _fit(self, data: Dataset, workload: Workload, randomness: Randomness) -> BayesianNetwork:
        domain = data.domain
        self.parents = parents = structure_parents(self.structure, domain)
        n = len(parents)
        stage_one = self.stage_share * self.epsilon
        sample, inner = poisson_subsample(
            data, self.beta, self.budget, stage_one, randomness.noise,
            label=f"Stage I on a Poisson subsample (beta={self.beta:g})",
        )
        self.stage_one_budget = inner
        self._say(
            f"Stage I: {2 * n} tables on a Poisson subsample (beta={self.beta:g}), "
            f"epsilon={inner.total:.4g} on it = {stage_one:.4g} on the data"
        )
        self.stage_one, tables = stage_one_parameters(
            sample, parents, inner, randomness.noise, consistency=self.consistency,
            joint=self.joint,
        )
        del sample  # Stage I's records are not used again
        self.features = node_features(parents, domain.to_dict())
        self.errors = {
            v: parameter_error(self.stage_one.cpds[v], tables[v], self.floor) for v in parents
        }
        if self.allocation_rule == "paper":
            shares = allocate(
                self.epsilon - stage_one,
                [self.features[v].weight for v in parents],
                [self.errors[v] for v in parents],
            )
        else:  # the subsample's noisy parent counts, scaled up by 1/β and floored
            counts = [np.maximum(tables[v].parents, self.floor) / self.beta for v in parents]
            shares = allocate_expected_error(
                self.epsilon - stage_one, [domain[v] for v in parents], counts
            )
        self.allocation = dict(zip(parents, shares.tolist()))
        largest = max(self.allocation, key=self.allocation.get)
        self._say(
            f"allocation: epsilon from {shares.min():.3g} to {shares.max():.3g} per node "
            f"(largest: {largest})"
        )
        self._say(f"Stage II: {2 * n} tables on the data")
        noisy = measure_node_tables(data, parents, self.allocation, self.budget, randomness.noise)
        return self._release(data, noisy, randomness)


def stage_one_parameters(
    sample: Dataset,
    parents: Parents,
    budget: PrivacyBudget,
    rng: np.random.Generator | None,
    **options,
) -> tuple[BayesianNetwork, dict[str, NoisyTables]]:
    """Algorithm 2 line 4: Algorithm 1 on the subsample with ``budget.total``/n per node.

    Receives the subsample only (the data are never passed here); returns the Stage-I
    network Θ̂ and its raw noisy tables T̂.
    """
    each = budget.total / len(parents)
    noisy = measure_node_tables(sample, parents, dict.fromkeys(parents, each), budget, rng)
    cpds = cpds_from_tables(parents, noisy, **options)
    return release_network(sample.domain, parents, cpds, noisy_total(noisy)), noisy
