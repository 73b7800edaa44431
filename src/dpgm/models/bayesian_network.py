"""A discrete Bayesian network: a DAG and one conditional probability table per node.

State names are the domain's labels, so queries, MAP assignments and simulated records
speak in them. Every query goes through the shared inference core: the network is turned
into a :class:`~dpgm.model.MarkovRandomField` on its moral cliques (once, then cached) and
answered on its junction tree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import networkx as nx
import numpy as np

from dpgm.dataset import Dataset
from dpgm.domain import Domain
from dpgm.errors import DataError, DomainError
from dpgm.model import MarkovRandomField
from dpgm.random import as_generator
from dpgm.validation import integer

if TYPE_CHECKING:
    import pandas as pd

_ROW_TOLERANCE = 1e-6  # how far from 1 a CPD row's sum may be for check()


@dataclass
class BayesianNetwork:
    """A discrete Bayesian network ``p(x) = prod_v p(x_v | x_parents(v))``.

    ``cpds[v]`` has shape ``(*parent sizes, size of v)`` with parents in ``parents[v]``
    order; each row (last axis) sums to 1. State ``k`` of ``v`` is ``states[v][k]``, and
    records drawn by :meth:`sample` code it as the integer ``k``. The Markov random field
    that answers queries is built on first use and kept: change the CPDs by making a new
    network, not in place.
    """

    variables: list[str]
    states: dict[str, list[str]]
    parents: dict[str, tuple[str, ...]]
    cpds: dict[str, np.ndarray]
    name: str = ""
    _model: MarkovRandomField | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def domain(self) -> Domain:
        """The public domain: one attribute per variable (file order), its states as labels."""
        return Domain(
            self.variables, [len(self.states[v]) for v in self.variables], self.states
        )

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
        """``n`` records drawn by forward sampling (vectorised over records)."""
        n = integer("n", n, least=0)
        gen = as_generator(rng)
        column = {v: i for i, v in enumerate(self.variables)}
        records = np.zeros((n, len(self.variables)), dtype=np.int64)
        for v in self.topological_order():
            cpd = self.cpds[v]
            k = cpd.shape[-1]
            table = cpd.reshape(-1, k)
            parents = self.parents[v]
            if parents:
                cols = tuple(records[:, column[p]] for p in parents)
                rows = np.ravel_multi_index(cols, cpd.shape[:-1])
            else:
                rows = np.zeros(n, dtype=np.int64)
            cdf = np.cumsum(table, axis=1)
            cdf /= cdf[:, -1:]
            u = gen.random(n)
            # value j is drawn when cdf[j-1] <= u < cdf[j]: count the cdf entries <= u
            drawn = (cdf[rows] <= u[:, None]).sum(axis=1)
            records[:, column[v]] = np.minimum(drawn, k - 1)
        return Dataset(records, self.domain)

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
        )

    # -- structure --------------------------------------------------------------------
    @property
    def graph(self) -> nx.DiGraph:
        """The DAG (an edge from each parent to its child)."""
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
            self._model = self.to_markov_random_field()
        return self._model

    def query(
        self,
        variables: Iterable[str],
        evidence: Mapping[str, object] | None = None,
        joint: bool = True,
    ) -> pd.Series | dict[str, pd.Series]:
        """``P(variables | evidence)`` indexed by state names (a MultiIndex when joint);
        ``joint=False`` gives each variable's marginal, ``{variable: Series}``."""
        variables = self.domain.check(list(variables))
        if not variables:
            raise DomainError("query at least one variable")
        overlap = [v for v in variables if v in (evidence or {})]
        if overlap:
            raise DomainError(f"{overlap} are both queried and given as evidence")
        if not joint:
            return {v: self.query([v], evidence) for v in variables}
        import pandas as pd

        table = self.model.marginal(variables, evidence=evidence)
        table = table / table.sum()
        if len(variables) == 1:
            index = pd.Index(list(self.states[variables[0]]), name=variables[0])
        else:
            index = pd.MultiIndex.from_product(
                [list(self.states[v]) for v in variables], names=list(variables)
            )
        return pd.Series(table.ravel(), index=index, name="probability")

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

