"""A Bayesian network's public structure: its parents, families and graph features.

The structure (a DAG over the attributes) and the domain are public, so everything here is
computed without data. The graph features are those of Eq. 7 and 8 of Roy Chowdhury et
al.; the implementation note is ``docs/notes/bn-data-dependent.md`` ([E4], [E5] below).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import networkx as nx
import numpy as np

from dpgm.domain import Domain
from dpgm.errors import DomainError, ParameterError
from dpgm.models.bayesian_network import BayesianNetwork

Parents = dict[str, tuple[str, ...]]
StructureLike = BayesianNetwork | nx.DiGraph | Mapping[str, Iterable[str]]


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


def _position(domain: Domain) -> Callable[[str], int]:
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
    ``sensitivity_by_derivative`` in ``experiments/_bn.py`` computes Eq. 8 itself, and
    the tests and the experiment check that the two agree.
    """
    kids = children(parents)[node]
    if not kids:
        return 0.0
    q = math.prod(sizes[p] for p in parents[node])
    return float(np.mean([1.0 / sizes[y] for y in kids])) / q


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


def structural_hamming_distance(learnt: Parents, true: Parents) -> int:
    """Edges to add, remove or reverse to turn the DAG ``learnt`` into ``true`` (a
    reversed edge counts once)."""
    ours = {(p, v) for v, ps in learnt.items() for p in ps}
    theirs = {(p, v) for v, ps in true.items() for p in ps}
    extra, missing = ours - theirs, theirs - ours
    reversed_ = {(p, v) for p, v in extra if (v, p) in missing}
    return len(extra) + len(missing) - len(reversed_)
