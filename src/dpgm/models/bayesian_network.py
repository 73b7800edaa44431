"""A discrete Bayesian network: a DAG and one conditional probability table per node.

State names are the domain's labels, so queries, MAP assignments and simulated records
speak in them. Every query goes through the shared inference core. A probability query
``P(X | E = e)`` first prunes what cannot matter (Koller & Friedman §9.3, 9.4): nodes that
are neither in X ∪ E nor ancestors of them are barren (their CPDs sum to one), evidence
is entered by slicing the CPDs, and what the evidence has cut off from X only scales the
result; variable elimination (:mod:`dpgm.inference.elimination`) then runs on the few
factors left. MPE queries and conditional sampling use the network's
:class:`~dpgm.models.MarkovRandomField` on its moral cliques (built once, then cached) and
its junction tree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from dpgm.dataset import Dataset
from dpgm.domain import Domain
from dpgm.errors import DataError, DomainError
from dpgm.inference.compiled import CompiledTree, ZeroProbability
from dpgm.inference.elimination import product_marginal
from dpgm.inference.sampling import draw_records
from dpgm.models.base import ModelBase
from dpgm.models.markov_random_field import MarkovRandomField
from dpgm.random import as_generator
from dpgm.validation import integer

if TYPE_CHECKING:
    import networkx as nx
    import pandas as pd

_ROW_TOLERANCE = 1e-6  # how far from 1 a CPD row's sum may be for check()


@dataclass
class BayesianNetwork(ModelBase):
    """A discrete Bayesian network ``p(x) = prod_v p(x_v | x_parents(v))``.

    ``cpds[v]`` has shape ``(*parent sizes, size of v)`` with parents in ``parents[v]``
    order; each row (last axis) sums to 1. State ``k`` of ``v`` is ``states[v][k]``, and
    records drawn by :meth:`sample` code it as the integer ``k``. The domain and the Markov
    random field that answers queries are built on first use and kept: change the
    variables, states or CPDs by making a new network, not in place. ``total`` is the
    number of records the network stands for (a learner's noisy estimate; 1 for a network
    read from a file): :meth:`marginal` gives counts on that scale and
    :meth:`synthetic_data` that many records by default.
    """

    variables: list[str]
    states: dict[str, list[str]]
    parents: dict[str, tuple[str, ...]]
    cpds: dict[str, np.ndarray]
    name: str = ""
    total: float = 1.0
    _model: MarkovRandomField | None = field(default=None, init=False, repr=False, compare=False)
    _domain: Domain | None = field(default=None, init=False, repr=False, compare=False)
    _indexes: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    _hint: list | None = field(default=None, init=False, repr=False, compare=False)
    _ancestors: dict | None = field(default=None, init=False, repr=False, compare=False)
    _compiled: CompiledTree | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def domain(self) -> Domain:
        """The public domain: one attribute per variable (file order), its states as labels."""
        if self._domain is None:  # built once: queries ask for it every time
            self._domain = Domain(
                self.variables, [len(self.states[v]) for v in self.variables], self.states
            )
        return self._domain

    def topological_order(self) -> list[str]:
        """Variables with every parent before its children (ties kept in file order)."""
        position = {v: i for i, v in enumerate(self.variables)}
        waiting = {v: len(self.parents[v]) for v in self.variables}
        children: dict[str, list[str]] = {v: [] for v in self.variables}
        for v in self.variables:
            for p in self.parents[v]:
                children[p].append(v)
        ready = [v for v in self.variables if waiting[v] == 0]
        order: list[str] = []
        while ready:
            ready.sort(key=position.__getitem__, reverse=True)
            v = ready.pop()
            order.append(v)
            for c in children[v]:
                waiting[c] -= 1
                if waiting[c] == 0:
                    ready.append(c)
        if len(order) != len(self.variables):
            cyclic = [v for v in self.variables if waiting[v] > 0]
            raise DataError(f"the network has a directed cycle through {cyclic}")
        return order

    def moral_cliques(self) -> list[tuple[str, ...]]:
        """One clique per variable: its family ``(*parents, child)``, in the CPD's axis order.

        These are the cliques of the moral graph, so ``{c: np.log(cpds[c[-1]])}`` is a set of
        log-potentials of the same distribution (see :meth:`to_model`).
        """
        return [(*self.parents[v], v) for v in self.variables]

    def to_markov_random_field(self, total: float = 1.0) -> MarkovRandomField:
        """The network as a :class:`dpgm.MarkovRandomField` on its moral cliques."""
        domain = self.domain
        with np.errstate(divide="ignore"):
            potentials = {c: np.log(self.cpds[c[-1]]) for c in self.moral_cliques()}
        return MarkovRandomField(domain, potentials, total=total)

    to_model = to_markov_random_field

    def probability(self, records: np.ndarray) -> np.ndarray:
        """``p(x)`` of each row of ``records`` (columns in :attr:`variables` order)."""
        records = np.asarray(records, dtype=np.int64)
        column = {v: i for i, v in enumerate(self.variables)}
        out = np.ones(records.shape[0])
        for v in self.variables:
            index = tuple(records[:, column[a]] for a in (*self.parents[v], v))
            out *= self.cpds[v][index]
        return out

    def sample(self, n: int, rng: np.random.Generator | int | None = None) -> Dataset:
        """``n`` independent records drawn by ancestral sampling: each variable, in
        topological order, from its CPD's row at its parents' values."""
        n = integer("n", n, least=0)
        steps = ((self.parents[v], (v,), self.cpds[v]) for v in self.topological_order())
        return Dataset(draw_records(self.domain, steps, n, as_generator(rng)), self.domain)

    # -- learning (not private: for the data steward, tests and baselines) ---------------
    @classmethod
    def fit_mle(
        cls,
        structure: BayesianNetwork,
        data: pd.DataFrame | Dataset,
        pseudo_count: float = 0.0,
    ) -> BayesianNetwork:
        """The CPDs that maximise the likelihood of ``data`` on ``structure``'s DAG and states.

        ``data`` has one column per variable holding state names (or is a Dataset over
        :attr:`domain`). ``pseudo_count`` is added to every count; a parent configuration
        never seen gets a uniform row. Reads the data without noise: not private (see
        :mod:`dpgm.mechanisms` for the private learners).
        """
        from dpgm.schema import Categorical, Schema
        from dpgm.validation import non_negative

        pseudo_count = non_negative("pseudo_count", pseudo_count)
        structure.topological_order()
        if not isinstance(data, Dataset):
            schema = Schema(Categorical(v, structure.states[v]) for v in structure.variables)
            data = schema.encode(data)
        elif data.domain != structure.domain:
            raise DomainError("the data's domain is not the network's")
        cpds = {}
        for v in structure.variables:
            counts = data.marginal((*structure.parents[v], v)) + pseudo_count
            totals = counts.sum(axis=-1, keepdims=True)
            with np.errstate(invalid="ignore", divide="ignore"):
                cpds[v] = np.where(totals > 0, counts / totals, 1.0 / counts.shape[-1])
        return cls(
            list(structure.variables),
            {v: list(structure.states[v]) for v in structure.variables},
            dict(structure.parents),
            cpds,
            structure.name,
            float(data.total),
        )

    # -- structure --------------------------------------------------------------------
    @property
    def graph(self) -> nx.DiGraph:
        """The DAG (an edge from each parent to its child)."""
        import networkx as nx  # here: answering the network needs no graph library

        graph = nx.DiGraph()
        graph.add_nodes_from(self.variables)
        graph.add_edges_from((p, v) for v in self.variables for p in self.parents[v])
        return graph

    def children(self, variable: str) -> list[str]:
        """The variables that have ``variable`` as a parent (in variable order)."""
        self.domain.check([variable])
        return [v for v in self.variables if variable in self.parents[v]]

    def markov_blanket(self, variable: str) -> list[str]:
        """Parents, children and the children's other parents of ``variable``."""
        children = self.children(variable)
        blanket = set(self.parents[variable]) | set(children)
        for child in children:
            blanket |= set(self.parents[child])
        blanket.discard(variable)
        return [v for v in self.variables if v in blanket]

    def is_dconnected(self, x: str, y: str, observed: Iterable[str] = ()) -> bool:
        """Whether ``x`` and ``y`` are d-connected given ``observed`` (not d-separated)."""
        observed = set(self.domain.check(list(observed)))
        self.domain.check([x, y])
        import networkx as nx

        separated = getattr(nx, "is_d_separator", None) or nx.d_separated
        return not separated(self.graph, {x}, {y}, observed)

    def check(self) -> BayesianNetwork:
        """Raise unless the network is a DAG whose CPDs are shaped and normalised."""
        self.topological_order()  # raises on a cycle
        for v in self.variables:
            for p in self.parents[v]:
                if p not in self.states:
                    raise DataError(f"{v!r} has the unknown parent {p!r}")
            shape = tuple(len(self.states[a]) for a in (*self.parents[v], v))
            cpd = np.asarray(self.cpds[v])
            if cpd.shape != shape:
                raise DataError(f"the CPD of {v!r} has shape {cpd.shape}, expected {shape}")
            if (cpd < 0).any() or not np.allclose(cpd.sum(axis=-1), 1.0, atol=_ROW_TOLERANCE):
                raise DataError(f"the CPD of {v!r} has a row that is not a distribution")
        return self

    # -- queries in state names ---------------------------------------------------------
    @property
    def model(self) -> MarkovRandomField:
        """The network as a Markov random field (built once)."""
        if self._model is None:
            self._model = self.to_markov_random_field(self.total)
        return self._model

    def marginal(self, attrs: Iterable[str], given: Mapping[str, object] | None = None,
                 *, with_error: bool = False) -> np.ndarray:
        """The marginal table on ``attrs`` (in the order given), scaled to :attr:`total`,
        conditioned on ``given`` (states)."""
        if with_error:
            return self.with_error(attrs, given)
        return self.model.marginal(attrs, given=self._given(given))

    def _structure(self) -> dict:
        return {"parents": {v: list(self.parents[v]) for v in self.variables}}

    def _records(self, n: int, rng: np.random.Generator,
                 given: Mapping[str, object] | None) -> Dataset:
        """Records (codes) that follow the network closely: rounded sampling of its Markov
        random field, conditioned exactly on ``given``."""
        return self.model.sample(n, rng, method="rounded", given=given)

    def query(
        self,
        variables: Iterable[str],
        evidence: Mapping[str, object] | None = None,
        joint: bool = True,
    ) -> pd.Series | dict[str, pd.Series]:
        """``P(variables | evidence)`` indexed by state names (a MultiIndex when joint);
        ``joint=False`` gives each variable's marginal, ``{variable: Series}``."""
        variables = self._queried(variables, evidence)
        if not variables:
            raise DomainError("query at least one variable")
        if not joint:
            return {v: self.query([v], evidence) for v in variables}
        import pandas as pd

        table = self.probabilities(variables, evidence)
        levels = [self._index(v) for v in variables]
        if len(variables) == 1:
            index = levels[0]
        else:  # the codes of the C-order cells: faster than MultiIndex.from_product
            codes = [c.ravel() for c in np.indices(table.shape)]
            index = pd.MultiIndex(
                levels=levels, codes=codes, names=list(variables), verify_integrity=False
            )
        return pd.Series(table.ravel(), index=index, name="probability")

    def _queried(self, variables: Iterable[str], evidence: Mapping[str, object] | None
                 ) -> tuple[str, ...]:
        """The queried variables, checked: known, and none of them given as evidence."""
        variables = self.domain.check(list(variables))
        overlap = [v for v in variables if v in (evidence or {})]
        if overlap:
            raise DomainError(f"{overlap} are both queried and given as evidence")
        return variables

    def _index(self, variable: str) -> pd.Index:
        """The states of ``variable`` as a pandas Index named after it (made once)."""
        if variable not in self._indexes:
            import pandas as pd

            self._indexes[variable] = pd.Index(list(self.states[variable]), name=variable)
        return self._indexes[variable]

    def probabilities(
        self, variables: Iterable[str], evidence: Mapping[str, object] | None = None
    ) -> np.ndarray:
        """``P(variables | evidence)`` as an array with one axis per variable (in order).

        Evidence gives a state name (or code) per variable, or a list of them (the
        evidence is then "one of these"). Raises :class:`DataError` if the evidence has
        probability zero.
        """
        variables = self._queried(variables, evidence)
        given = self.domain.evidence(evidence or {})
        (tables, scopes), cut, _ = self._pruned_factors(variables, given)
        order = self._elimination_hint()
        table = product_marginal(tables, scopes, variables, order)
        if not table.sum() > 0 or not self._possible(cut):
            raise _impossible(evidence)
        return table / table.sum()

    def _possible(self, cut: tuple[list, list]) -> bool:
        """Whether the tables the evidence cut off from the query (which only scale its
        answer) leave the evidence a probability above zero."""
        tables, scopes = cut
        return not tables or product_marginal(tables, scopes, (), self._elimination_hint()) > 0

    def posteriors(
        self,
        evidence: Mapping[str, object] | None = None,
        variables: Iterable[str] | None = None,
    ) -> dict[str, pd.Series]:
        """``P(v | evidence)`` for every variable ``v`` not in the evidence (or each of
        ``variables``), indexed by state names, from one calibration of the network's
        junction tree (compiled on first use, then kept). With ``variables``, the CPDs
        that cannot matter are left out first: barren nodes, and those the evidence
        d-separates from the variables. Raises :class:`DataError` if the evidence has
        probability zero."""
        import pandas as pd

        given = self.domain.evidence(evidence or {})
        if variables is None:
            targets = tuple(v for v in self.variables if v not in given)
            kept = None
        else:
            targets = self._queried(variables, evidence)
            _, cut, linked = self._pruned_factors(targets, given)
            if not self._possible(cut):
                raise _impossible(evidence)
            kept = [v in linked for v in self.variables]
        if self._compiled is None:
            self._compiled = CompiledTree(
                self.domain, self.moral_cliques(), [self.cpds[v] for v in self.variables]
            )
        try:
            tables = self._compiled.marginals(targets, given, kept)
        except ZeroProbability:
            raise _impossible(evidence) from None
        return {v: pd.Series(tables[v], index=self._index(v), name="probability")
                for v in targets}

    def _elimination_hint(self) -> list[str]:
        """Children before parents: on an ancestral set a good order that costs nothing."""
        if self._hint is None:
            self._hint = self.topological_order()[::-1]
        return self._hint

    def _ancestry(self) -> dict[str, frozenset[str]]:
        """Each variable with its ancestors (computed once)."""
        if self._ancestors is None:
            found: dict[str, frozenset[str]] = {}
            for v in self.topological_order():
                found[v] = frozenset({v}).union(*(found[p] for p in self.parents[v]))
            self._ancestors = found
        return self._ancestors

    def _pruned_factors(self, variables: tuple[str, ...], given: Mapping[str, list[int]]):
        """The CPDs ``P(variables | given)`` depends on, with the evidence entered, as
        (tables, scopes); the tables the evidence cuts off from the variables; and the
        variables whose CPDs the first part holds."""
        ancestry = self._ancestry()
        # the ancestral set of the variables and the evidence: every other node is barren
        needed = frozenset().union(*(ancestry[v] for v in (*variables, *given)))
        sliced = {a: codes[0] for a, codes in given.items() if len(codes) == 1}
        tables, scopes, owners = [], [], []
        for v in self.variables:
            if v not in needed:
                continue
            family = (*self.parents[v], v)
            table = self.cpds[v]
            owners.append(v)
            if given.keys().isdisjoint(family):  # most CPDs: nothing to enter
                tables.append(table)
                scopes.append(family)
                continue
            kept = []
            index: list[object] = []
            for axis, a in enumerate(family):
                if a in sliced:
                    index.append(sliced[a])
                    continue
                if a in given:  # a set of states: keep those (one axis at a time)
                    table = np.take(table, given[a], axis=axis)
                index.append(slice(None))
                kept.append(a)
            tables.append(table[tuple(index)])
            scopes.append(tuple(kept))
        reach, grown = set(variables), True
        while grown:
            grown = False
            for scope in scopes:
                if not reach.isdisjoint(scope) and not reach.issuperset(scope):
                    reach.update(scope)
                    grown = True
        linked = [not reach.isdisjoint(scope) for scope in scopes]
        return (
            ([t for t, k in zip(tables, linked) if k], [s for s, k in zip(scopes, linked) if k]),
            ([t for t, k in zip(tables, linked) if not k],
             [s for s, k in zip(scopes, linked) if not k]),
            {v for v, k in zip(owners, linked) if k},
        )

    def map_query(
        self,
        variables: Iterable[str] | None = None,
        evidence: Mapping[str, object] | None = None,
    ) -> dict[str, str]:
        """The most probable states: of every variable given ``evidence`` (MPE) where
        ``variables`` is None, else of ``variables`` jointly (marginal MAP)."""
        if variables is None:
            codes = self.model.map(evidence)
            given = evidence or {}
            return {v: self.states[v][codes[v]] for v in self.variables if v not in given}
        table = self.query(variables, evidence)
        best = table.idxmax()
        names = list(table.index.names)
        best = best if isinstance(best, tuple) else (best,)
        return dict(zip(names, best))

    def simulate(
        self,
        n: int,
        evidence: Mapping[str, object] | None = None,
        rng: np.random.Generator | int | None = None,
    ) -> pd.DataFrame:
        """``n`` records in state names; with ``evidence``, exact draws from the posterior
        (the evidence enters the junction tree; nothing is rejected)."""
        if evidence:
            records = self.model.sample(n, rng, method="exact", given=evidence)
        else:
            records = self.sample(n, rng)
        return records.to_pandas(labels=True)



def _impossible(evidence: Mapping[str, object] | None) -> DataError:
    return DataError(f"the evidence {dict(evidence or {})} has probability zero")
