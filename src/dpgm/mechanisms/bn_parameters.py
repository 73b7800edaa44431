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
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import networkx as nx
import numpy as np

from dpgm.dataset import Dataset
from dpgm.domain import Domain
from dpgm.errors import DomainError, ParameterError, PrivacyParameterError, option
from dpgm.estimation.consistency import mutual_consistency
from dpgm.measurement import Measurement
from dpgm.mechanisms.base import Mechanism, Progress
from dpgm.models.bayesian_network import BayesianNetwork
from dpgm.models.markov_random_field import MarkovRandomField
from dpgm.privacy.amplification import poisson_subsample, subsample_epsilon
from dpgm.privacy.budget import PrivacyBudget
from dpgm.privacy.measure import measure_marginals
from dpgm.random import Randomness
from dpgm.validation import integer, number, one_of
from dpgm.workload import Workload

Parents = dict[str, tuple[str, ...]]
StructureLike = BayesianNetwork | nx.DiGraph | Mapping[str, Iterable[str]]

#: how a family's noisy tables become a probability table before consistency ([C3]):
#: "conditional" — clipped columns of T̃_i normalised, times the clipped, normalised T̃_pa;
#: "joint" — the clipped T̃_i normalised as a whole (T̃_pa unused)
JOINTS = ("conditional", "joint")
#: a noisy count is capped here before it enters Eq. 6's error or our allocation (public:
#: no table of real records holds more; only noise reaches it)
MAX_COUNT = 2.0**53
#: the "error" allocation gives no node less than e^-LOG_SPAN of the even split
LOG_SPAN = 40.0


# -- the structure ----------------------------------------------------------------------
def structure_parents(structure: StructureLike, domain: Domain) -> Parents:
    """``{node: parents}`` of ``structure`` in ``domain``'s attribute order, checked against it.

    ``structure`` is a :class:`BayesianNetwork` (its CPDs are ignored; its state counts
    must match the domain), a ``networkx.DiGraph``, or ``{child: parents}`` (nodes not
    named are roots). Raises :class:`DomainError` on unknown nodes, a missing node or a cycle.
    """
    if isinstance(structure, BayesianNetwork):
        given = {v: tuple(structure.parents[v]) for v in structure.variables}
        for v in structure.variables:
            if v in domain and len(structure.states[v]) != domain[v]:
                raise DomainError(
                    f"{v!r} has {len(structure.states[v])} states in the structure but "
                    f"{domain[v]} values in the data's domain"
                )
    elif isinstance(structure, nx.DiGraph):
        given = {
            v: tuple(sorted(structure.predecessors(v), key=_position(domain)))
            for v in structure.nodes
        }
    elif isinstance(structure, Mapping):
        given = {}
        for child, parents in structure.items():
            if isinstance(parents, str):
                raise ParameterError(
                    f"the parents of {child!r} must be a list of names, got the string {parents!r}"
                )
            given[child] = tuple(parents)
    else:
        check_structure_type(structure)
    named = set(given) | {p for ps in given.values() for p in ps}
    unknown = sorted(named - set(domain.attrs))
    if unknown:
        raise DomainError(f"the structure names {unknown}, which are not in the data's domain")
    if isinstance(structure, (BayesianNetwork, nx.DiGraph)):
        missing = [a for a in domain.attrs if a not in given]
        if missing:
            raise DomainError(f"the structure has no node for the attributes {missing}")
    parents = {a: given.get(a, ()) for a in domain.attrs}
    for child, ps in parents.items():
        if child in ps or len(set(ps)) != len(ps):
            raise DomainError(f"the parents of {child!r} repeat a name or include itself: {ps}")
    graph = nx.DiGraph([(p, c) for c, ps in parents.items() for p in ps])
    if graph.number_of_nodes() and not nx.is_directed_acyclic_graph(graph):
        raise DomainError(f"the structure has a directed cycle: {nx.find_cycle(graph)}")
    return parents


def check_structure_type(structure: object) -> StructureLike:
    """``structure`` if it is a BayesianNetwork, a networkx.DiGraph or a mapping."""
    if not isinstance(structure, (BayesianNetwork, nx.DiGraph, Mapping)):
        raise ParameterError(
            "structure must be a BayesianNetwork, a networkx.DiGraph or {child: parents}, "
            f"got {type(structure).__name__}"
        )
    return structure


def _position(domain: Domain):
    return lambda attr: domain.attrs.index(attr) if attr in domain else len(domain)


def families(parents: Parents) -> list[tuple[str, ...]]:
    """Each node's family ``(*parents, node)``: the axes of its CPD."""
    return [(*ps, v) for v, ps in parents.items()]


def children(parents: Parents) -> dict[str, list[str]]:
    """``{node: its children}``, in node order."""
    found: dict[str, list[str]] = {v: [] for v in parents}
    for v, ps in parents.items():
        for p in ps:
            found[p].append(v)
    return found


def heights(parents: Parents) -> dict[str, int]:
    """Edges on the longest directed path from each node down to a leaf (leaves: 0)."""
    kids = children(parents)
    graph = nx.DiGraph([(p, c) for c, ps in parents.items() for p in ps])
    graph.add_nodes_from(parents)
    height = {}
    for v in reversed(list(nx.topological_sort(graph))):
        height[v] = 1 + max(height[c] for c in kids[v]) if kids[v] else 0
    return {v: height[v] for v in parents}


def sensitivity(parents: Parents, sizes: Mapping[str, int], node: str) -> float:
    """Eq. 8's Δ_i in closed form: (1/q_i)·mean over children Y of 1/k_Y (0 for a leaf).

    Σ_y ∂P[Y=y]/∂Θ[x|u] = P[pa_i = u] because the parents are non-descendants of X_i,
    so the mean over the CPD's cells depends on the graph and the domain only ([E4], [E5]);
    :func:`sensitivity_by_derivative` computes Eq. 8 itself, for checking.
    """
    kids = children(parents)[node]
    if not kids:
        return 0.0
    q = math.prod(sizes[p] for p in parents[node])
    return float(np.mean([1.0 / sizes[y] for y in kids])) / q


def sensitivity_by_derivative(network: BayesianNetwork, node: str) -> float:
    """Eq. 8's Δ_i computed from its definition on ``network``'s CPDs (exact inference).

    P[Y = y] is linear in each CPD entry, so ∂P[Y=y]/∂Θ[x|u] is P[pa = u, Y = y] in the
    network whose CPD for ``node`` is the indicator of x (for every parent configuration).
    """
    parents = {v: tuple(network.parents[v]) for v in network.variables}
    kids = children(parents)[node]
    if not kids:
        return 0.0
    cpd = network.cpds[node]
    means = []  # for each x and child Y: the mean over (u, y) of P'[u, y]
    for x in range(cpd.shape[-1]):
        indicator = np.zeros_like(cpd)
        indicator[..., x] = 1.0
        clamped = replace(network, cpds={**network.cpds, node: indicator})
        for child in kids:
            table = clamped.model.marginal((*parents[node], child)) / clamped.total  # P'[u, y]
            means.append(table.mean())
    # every child has one entry per x: the plain mean is the mean over cells (x, u), children
    # Y and y of ∂P[Y=y]/∂Θ[x|u]
    return float(np.mean(means))


@dataclass(frozen=True)
class NodeFeatures:
    """The graph features of Eq. 7 for one node: height h, out-degree o, Δ and W."""

    height: int
    out_degree: int
    sensitivity: float

    @property
    def weight(self) -> float:
        """W_i = (h_i + 1)·(o_i + 1)·(Δ_i + 1)."""
        return (self.height + 1) * (self.out_degree + 1) * (self.sensitivity + 1.0)


def node_features(parents: Parents, sizes: Mapping[str, int]) -> dict[str, NodeFeatures]:
    """Every node's :class:`NodeFeatures` (public: the graph and the domain sizes only)."""
    height, kids = heights(parents), children(parents)
    return {
        v: NodeFeatures(height[v], len(kids[v]), sensitivity(parents, sizes, v)) for v in parents
    }


# -- Algorithm 1 (ComputeParameters) ----------------------------------------------------
@dataclass(frozen=True)
class NoisyTables:
    """A node's raw noisy counts (before any clipping) and the budget E_i they cost."""

    family: np.ndarray  # axes (*parents, node)
    parents: np.ndarray  # axes parents; 0-dimensional (a noisy record count) for a root
    epsilon: float

    @property
    def std(self) -> float:
        """Noise standard deviation of every cell: √2 · 2/E_i."""
        return math.sqrt(2.0) * 2.0 / self.epsilon


def _columns(table: np.ndarray) -> np.ndarray:
    """Clip at 0 and normalise each column (last axis); a column with no mass is uniform."""
    clipped = np.clip(table, 0.0, None)
    total = clipped.sum(axis=-1, keepdims=True)
    k = table.shape[-1]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, clipped / total, 1.0 / k)


def _distribution(table: np.ndarray) -> np.ndarray:
    """Clip at 0 and normalise the whole table; no mass gives the uniform table."""
    clipped = np.clip(np.asarray(table, dtype=np.float64), 0.0, None)
    total = clipped.sum()
    return clipped / total if total > 0 else np.full(clipped.shape, 1.0 / max(clipped.size, 1))


def noisy_joint(tables: NoisyTables, joint: str = "conditional") -> np.ndarray:
    """A probability table over the family from its noisy counts ([C3], Alg. 1 line 4)."""
    if joint == "joint":
        return _distribution(tables.family)
    return _columns(tables.family) * _distribution(tables.parents)[..., None]


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


def cpds_from_tables(
    parents: Parents,
    noisy: Mapping[str, NoisyTables],
    *,
    consistency: bool = True,
    joint: str = "conditional",
) -> dict[str, np.ndarray]:
    """CPDs from noisy tables: joint tables ([C3]), mutual consistency weighted by E_i
    (App. 8.2.1), then clipped, normalised columns ([C4]) (Alg. 1 lines 4–9)."""
    nodes = list(parents)
    tables = [noisy_joint(noisy[v], joint) for v in nodes]
    if consistency:
        largest = max(noisy[v].epsilon for v in nodes)  # the same means, no overflow
        tables = mutual_consistency(
            families(parents), tables, [noisy[v].epsilon / largest for v in nodes]
        )
    return {v: _columns(t) for v, t in zip(nodes, tables)}


# -- Algorithm 2 ------------------------------------------------------------------------
def parameter_error(cpd: np.ndarray, tables: NoisyTables, floor: float = 1.0) -> float:
    """Eq. 6's δ̃_i: mean over the CPD's cells of Θ̂·sqrt(1/T̂_pa[u]² + 1/T̂_i[x, u]²),
    with every noisy count floored at ``floor`` ([C5]; never true counts, [E3]) and capped
    at MAX_COUNT (only noise gets there), so that δ̃_i lies in public bounds
    (:func:`error_bounds`)."""
    family = np.clip(tables.family, floor, MAX_COUNT)
    parent = np.clip(tables.parents, floor, MAX_COUNT)[..., None]
    # hypot(1/a, 1/b) is the square root above, without squaring a tiny floor to infinity
    return float(np.mean(cpd * np.hypot(1.0 / parent, 1.0 / family)))


def error_bounds(size: int, floor: float) -> tuple[float, float]:
    """Public bounds on :func:`parameter_error` for a node of ``size`` states: its CPD's
    columns sum to 1, so the mean of Θ̂ over the cells is 1/k, and each square root lies
    in [√2/MAX_COUNT, √2/floor] (the lower bound halved for rounding)."""
    return math.sqrt(2.0) / (2.0 * MAX_COUNT * size), math.sqrt(2.0) / (floor * size)


def allocate(total: float, weights: Sequence[float], errors: Sequence[float]) -> np.ndarray:
    """The budgets ε_i > 0, Σ ε_i = ``total``, that minimise Σ W_i δ̃_i / ε_i (Eq. 5):
    ε_i ∝ √(W_i δ̃_i), the normalised form of Eq. 10 ([C6])."""
    # √W·√δ̃ rather than √(W·δ̃), and the shares before ``total``: no product overflows
    root = np.sqrt(np.asarray(weights, dtype=np.float64)) * np.sqrt(
        np.asarray(errors, dtype=np.float64))
    if not np.all(np.isfinite(root)) or np.any(root <= 0):
        raise ParameterError(f"weights and errors must be finite and > 0, got {root**2}")
    return total * (root / root.sum())


def allocate_product_form(
    total: float, weights: Sequence[float], errors: Sequence[float]
) -> np.ndarray:
    """Eq. 10 as printed (products over the other nodes; for checking, small n only)."""
    c = 1.0 / (np.asarray(weights, dtype=np.float64) * np.asarray(errors, dtype=np.float64))
    n = c.size
    others = np.array([np.prod(np.sqrt(np.delete(c, i))) for i in range(n)])
    eps = total * others / others.sum()
    eps[-1] = total - eps[:-1].sum()
    return eps


def expected_column_error(
    budgets: np.ndarray, sizes: np.ndarray, counts: Sequence[np.ndarray]
) -> np.ndarray:
    """Each node's expected mean column L1 error at its budget ε_i (a model, for allocation).

    A CPD column u estimated from counts C[u] with Laplace noise of scale 2/ε_i in each of
    its k_i cells is off by about z = 2·k_i/(ε_i·C[u]) in L1 while that is small, and by
    at most about 1 when the noise swamps the counts: the error is modelled as z/(1 + z),
    averaged over the node's columns.
    """
    return np.array([
        float(np.mean(z / (1.0 + z)))
        for z in (2.0 * k / (e * c) for e, k, c in zip(budgets, sizes, counts))
    ])


def allocate_expected_error(
    total: float, sizes: Sequence[int], counts: Sequence[np.ndarray]
) -> np.ndarray:
    """Budgets ε_i > 0, Σ ε_i = ``total``, that minimise the mean over nodes of
    :func:`expected_column_error` given each node's estimated column counts ``counts``.

    Our allocation, not the paper's: it minimises (a model of) the error that is reported,
    the CPD error per parent configuration, instead of Eq. 5's Σ W_i δ̃_i / ε_i. Solved on
    log-budgets (SLSQP from the uniform split; post-processing of the counts given), each
    budget at least e^−LOG_SPAN of the even split (counts capped at MAX_COUNT).
    """
    from scipy.optimize import minimize
    from scipy.special import expit

    sizes = np.asarray(sizes, dtype=np.float64)
    logs = [np.log(np.clip(np.ravel(c), 1e-9, MAX_COUNT)) for c in counts]
    n = sizes.size

    def objective(log_budgets: np.ndarray) -> tuple[float, np.ndarray]:
        value, gradient = 0.0, np.empty(n)
        for i, (x, k, c) in enumerate(zip(log_budgets, sizes, logs)):
            # z/(1 + z) = expit(ln z), ln z = ln(2k) − x − ln C: finite wherever z is huge
            share = expit(math.log(2.0 * k) - x - c)  # dz/dx = −z
            value += float(np.mean(share))
            gradient[i] = -float(np.mean(share * (1.0 - share)))  # −z/(1 + z)²
        return value / n, gradient / n

    start = np.full(n, math.log(total / n))
    # each budget at least e^-LOG_SPAN·total/n (public): the shares have a public floor
    bounds = [(start[0] - LOG_SPAN, math.log(total))] * n
    found = minimize(
        objective, start, jac=True, method="SLSQP", bounds=bounds,
        constraints=[{"type": "eq", "fun": lambda x: np.exp(x).sum() / total - 1.0,
                      "jac": lambda x: np.exp(x)[None, :] / total}],
        options={"maxiter": 500, "ftol": 1e-12},
    )
    chosen = np.clip(found.x, *bounds[0]) if found.success else start
    budgets = np.exp(chosen - chosen.max())  # the same shares, no overflow
    return total * (budgets / budgets.sum())


def _states(domain: Domain) -> dict[str, list[str]]:
    """Each attribute's state names: its labels as text, else its codes."""
    return {
        a: [str(x) for x in domain.labels[a]] if a in domain.labels else
        [str(i) for i in range(domain[a])]
        for a in domain.attrs
    }


def release_network(
    domain: Domain, parents: Parents, cpds: Mapping[str, np.ndarray], total: float, name: str = ""
) -> BayesianNetwork:
    """The released network: the public structure and states with the private CPDs."""
    return BayesianNetwork(
        list(domain.attrs), _states(domain), dict(parents), dict(cpds), name, float(total)
    )


def noisy_total(noisy: Mapping[str, NoisyTables]) -> float:
    """The record count from the roots' noisy totals, inverse-variance weighted (≥ 0)."""
    roots = [t for t in noisy.values() if t.parents.ndim == 0]
    largest = max(t.epsilon for t in roots)
    weights = np.array([(t.epsilon / largest) ** 2 for t in roots])  # ε² overflows at 1e155
    values = np.array([float(t.parents) for t in roots])
    return max(float(weights @ values / weights.sum()), 0.0)


class BNParameterLearner(Mechanism):
    """Shared by the learners of CPDs on a public structure (module docstring).

    ``structure`` is public: a :class:`BayesianNetwork` (CPDs ignored), a
    ``networkx.DiGraph`` or ``{child: parents}`` over the data's attributes. ``fit``
    releases a :class:`BayesianNetwork` in the domain's labels. The workload is checked
    and otherwise unused: the structure decides what is measured. ``consistency`` and
    ``joint`` are the switches of the note's [C3] and App. 8.2.1 (estimator "original");
    ``iters`` bounds Private-PGM (estimator "pgm").

    Privacy: ε-DP under add/remove-one-record neighbours; every noisy table is a
    contingency table of L1 sensitivity 1.
    """

    privacy = "pure"
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
        if not isinstance(consistency, bool):
            raise ParameterError(f"consistency must be True or False, got {consistency!r}")
        self.consistency = consistency
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


def network_from_model(model: MarkovRandomField, parents: Parents) -> BayesianNetwork:
    """The CPDs read off a model's family marginals (normalised columns; empty: uniform)."""
    cpds = {v: _columns(model.marginal((*ps, v))) for v, ps in parents.items()}
    return release_network(model.domain, parents, cpds, model.total)


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
