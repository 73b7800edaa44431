"""Junction trees: triangulate the interaction graph of a set of cliques and join the result."""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import TYPE_CHECKING

from dpgm.domain import Domain
from dpgm.errors import ParameterError
from dpgm.inference.cliques import Clique, maximal, smallest_containing

if TYPE_CHECKING:
    import networkx as nx

HEURISTICS = ("min_fill", "min_weight", "weighted_min_fill")


def interaction_graph(domain: Domain, cliques: Iterable[Iterable[str]]) -> nx.Graph:
    """Every attribute of ``domain`` as a node, joined to those it shares a clique with."""
    import networkx as nx  # here: a loaded model answers without importing it

    graph = nx.Graph()
    graph.add_nodes_from(domain.attrs)
    for clique in cliques:
        graph.add_edges_from(combinations(domain.check(clique), 2))
    return graph


def _cost(heuristic: str, v: str, adj: dict[str, set[str]], log_size: dict[str, float]) -> tuple:
    nbrs = adj[v]
    weight = log_size[v] + sum(log_size[u] for u in nbrs)
    if heuristic == "min_weight":
        return (round(weight, 9), _fill(nbrs, adj, log_size, False))
    fill = _fill(nbrs, adj, log_size, heuristic == "weighted_min_fill")
    return (fill, round(weight, 9))


def _fill(
    nbrs: set[str], adj: dict[str, set[str]], log_size: dict[str, float], weighted: bool
) -> float:
    fill = 0.0
    nb = list(nbrs)
    for i, a in enumerate(nb):
        adj_a = adj[a]
        for b in nb[i + 1 :]:
            if b not in adj_a:
                fill += math.exp(log_size[a] + log_size[b]) if weighted else 1.0
    return fill


def elimination_order(
    graph: nx.Graph, sizes: dict[str, int], heuristic: str = "min_fill"
) -> tuple[list[str], list[frozenset[str]]]:
    """Greedy elimination order and the cliques it creates, for one heuristic.

    ``min_fill`` adds the fewest fill edges (ties: smallest clique), ``min_weight`` creates
    the clique with the fewest cells (ties: fewest fill edges), ``weighted_min_fill`` weighs
    each fill edge by the product of its endpoints' sizes.
    """
    if heuristic not in HEURISTICS:
        raise ParameterError(f"unknown heuristic {heuristic!r}; choose from {HEURISTICS}")
    adj = {v: set(graph[v]) for v in graph.nodes}
    log_size = {v: math.log(sizes[v]) for v in adj}
    rank = {v: i for i, v in enumerate(graph.nodes)}
    costs = {v: _cost(heuristic, v, adj, log_size) for v in adj}
    heap = [(c, rank[v], v) for v, c in costs.items()]
    heapq.heapify(heap)
    order: list[str] = []
    created: list[frozenset[str]] = []
    while heap:
        cost, _, v = heapq.heappop(heap)
        if v not in adj or costs[v] != cost:
            continue  # stale entry
        nbrs = adj.pop(v)
        order.append(v)
        created.append(frozenset(nbrs | {v}))
        for u in nbrs:
            adj[u].discard(v)
            adj[u] |= nbrs - {u}
        touched = set(nbrs)
        for u in nbrs:
            touched |= adj[u]
        for u in touched:
            costs[u] = _cost(heuristic, u, adj, log_size)
            heapq.heappush(heap, (costs[u], rank[u], u))
        del costs[v]
    return order, created


def triangulate(
    graph: nx.Graph,
    sizes: dict[str, int],
    heuristics: Sequence[str] = HEURISTICS,
    cap: float = -math.inf,
) -> tuple[int, str, list[Clique]]:
    """The cells, heuristic and maximal cliques of the triangulation with the fewest cells
    among ``heuristics`` (the first on a tie), or of the first within ``cap`` cells."""
    best: tuple[int, str, list[Clique]] | None = None
    for name in heuristics:
        _, created = elimination_order(graph, sizes, name)
        found = maximal(created)
        cells = sum(math.prod(sizes[a] for a in c) for c in found)
        if best is None or cells < best[0]:
            best = (cells, name, found)
        if cells <= cap:
            break
    assert best is not None, "no heuristic given"
    return best


@dataclass
class JunctionTree:
    """A tree of cliques (each in domain order) with the running-intersection property.

    Edges are stored as ``parent[i]`` of a rooted tree (the root's parent is -1);
    ``order`` lists cliques root first, so that every parent comes before its children.
    """

    domain: Domain
    cliques: list[tuple[str, ...]]
    parent: list[int]
    order: list[int]
    heuristic: str = ""
    children: list[list[int]] = field(init=False)

    def __post_init__(self) -> None:
        self.children = [[] for _ in self.cliques]
        for i, p in enumerate(self.parent):
            if p >= 0:
                self.children[p].append(i)
        self._index: dict[frozenset[str], int] = {
            frozenset(c): i for i, c in enumerate(self.cliques)
        }

    @classmethod
    def build(
        cls, domain: Domain, cliques: Iterable[Iterable[str]], heuristic: str = "auto",
        enough: float = -math.inf,
    ) -> JunctionTree:
        """Junction tree covering ``cliques`` and every attribute of ``domain``.

        With ``heuristic="auto"`` every greedy heuristic is tried and the tree with the
        fewest cells kept: no single heuristic is best on every graph. A tree of at most
        ``enough`` cells stops the search (small trees cost less to use than to improve).
        """
        graph = interaction_graph(domain, [domain.check(c) for c in cliques])
        tried = HEURISTICS if heuristic == "auto" else (heuristic,)
        _, name, maximal = triangulate(graph, domain.to_dict(), tried, enough)
        ordered = [domain.canonical(c) for c in maximal]
        ordered.sort(key=lambda c: (-domain.size(c), domain.axes(c)))
        parent, order = _join(ordered)
        return cls(domain, ordered, parent, order, name)

    # -- queries ----------------------------------------------------------------------
    def size(self) -> int:
        """Number of cells over all cliques: the memory a model on this tree needs."""
        return sum(self.domain.size(c) for c in self.cliques)

    def max_clique(self) -> tuple[str, ...]:
        return max(self.cliques, key=self.domain.size)

    def separator(self, i: int) -> tuple[str, ...]:
        """Attributes clique ``i`` shares with its parent (empty for a root)."""
        p = self.parent[i]
        if p < 0:
            return ()
        other = set(self.cliques[p])
        return tuple(a for a in self.cliques[i] if a in other)

    def find(self, attrs: Iterable[str]) -> int | None:
        """Index of the smallest clique containing ``attrs``, or None."""
        attrs = frozenset(attrs)
        if attrs in self._index:
            return self._index[attrs]
        return smallest_containing(self.cliques, attrs, self.domain)

    def independent_groups(self, attrs: Iterable[str]) -> list[tuple[str, ...]]:
        """``attrs`` split by the parts of the tree that empty separators cut apart (in the
        order first met): every distribution on this tree makes the groups independent."""
        if "_part_of" not in self.__dict__:
            part = [0] * len(self.cliques)
            for count, i in enumerate(self.order):
                part[i] = part[self.parent[i]] if self.separator(i) else count
            # running intersection: the cliques holding an attribute share its part
            self._part_of = {a: part[i] for i, c in enumerate(self.cliques) for a in c}
        groups: dict[int, list[str]] = {}
        for attr in attrs:
            groups.setdefault(self._part_of[attr], []).append(attr)
        return [tuple(g) for g in groups.values()]

    def steiner_subtree(self, attrs: Iterable[str]) -> list[int]:
        """A small connected set of cliques that together contain ``attrs`` (root first)."""
        attrs = set(attrs)
        holders: set[int] = set()
        uncovered = set(attrs)
        # greedily pick cliques covering the most uncovered attributes
        while uncovered:
            best = max(
                range(len(self.cliques)),
                key=lambda i: (
                    len(uncovered & set(self.cliques[i])),
                    -self.domain.size(self.cliques[i]),
                ),
            )
            holders.add(best)
            uncovered -= set(self.cliques[best])
        # connect them: the union of the tree paths from each holder to the others' common ancestor
        depth = {self.order[0]: 0}
        for i in self.order[1:]:
            depth[i] = depth[self.parent[i]] + 1 if self.parent[i] >= 0 else 0
        nodes = set(holders)
        frontier = set(holders)
        while len(frontier) > 1:
            deepest = max(frontier, key=lambda i: depth[i])
            frontier.discard(deepest)
            p = self.parent[deepest]
            if p < 0:
                continue
            nodes.add(p)
            frontier.add(p)
        return [i for i in self.order if i in nodes]


def _join(cliques: list[tuple[str, ...]]) -> tuple[list[int], list[int]]:
    """Root a maximum-weight spanning tree of the clique graph at clique 0.

    Weight = number of shared attributes; for cliques of a chordal graph every maximum
    spanning tree has the running-intersection property. Components are linked through
    empty separators so that one tree covers everything.
    """
    import networkx as nx

    n = len(cliques)
    graph = nx.Graph()
    graph.add_nodes_from(range(n))
    holders: dict[str, list[int]] = {}
    for i, clique in enumerate(cliques):
        for a in clique:
            holders.setdefault(a, []).append(i)
    sets = [set(c) for c in cliques]
    for members in holders.values():
        for i, j in combinations(members, 2):
            if not graph.has_edge(i, j):
                graph.add_edge(i, j, weight=len(sets[i] & sets[j]))
    tree = nx.maximum_spanning_tree(graph, algorithm="kruskal")
    components = [min(c) for c in nx.connected_components(tree)]
    for a, b in zip(components, components[1:]):
        tree.add_edge(a, b)
    parent = [-1] * n
    order = [0]
    for u, v in nx.bfs_edges(tree, 0):
        parent[v] = u
        order.append(v)
    return parent, order


class TreeSizes:
    """Cells of the junction trees of cliques over one domain, without building the trees
    (public facts only: a model-size check before any data are read).

    ``cells(base, extra)`` is ``JunctionTree.build(domain, [*base, extra]).size()``. A
    caller asking about many ``extra`` cliques on one ``base`` (a mechanism's candidates
    against its current model) shares the work: answers are kept until ``base`` changes.
    """

    def __init__(self, domain: Domain):
        self.domain = domain
        self._sizes = domain.to_dict()
        self._base: tuple[Clique, ...] | None = None
        self._members: list[frozenset[str]] = []
        # extra -> (cells of the best heuristic tried, whether every heuristic was tried)
        self._found: dict[frozenset[str], tuple[int, bool]] = {}

    def cells(
        self, base: Iterable[Iterable[str]], extra: Iterable[str] = (), cap: float = -math.inf
    ) -> int:
        """Cells of the junction tree of the ``base`` cliques and ``extra``; a result of at
        most ``cap`` may be an upper bound (the search stops at the first heuristic within
        it, which is enough to decide :meth:`fits`)."""
        base = tuple(tuple(c) for c in base)
        if base != self._base:
            self._base = tuple(self.domain.check(c) for c in base)
            self._members = [frozenset(c) for c in self._base]
            self._found = {}
        extra = self.domain.check(extra)
        key = frozenset(extra)
        cliques: list[Clique] = [*self._base, extra]
        if any(key <= c for c in self._members):  # adds nothing: the base's own tree
            key, cliques = frozenset(), list(self._base)
        known = self._found.get(key)
        if known is not None and (known[1] or known[0] <= cap):
            return known[0]
        graph = interaction_graph(self.domain, cliques)
        cells, _, _ = triangulate(graph, self._sizes, HEURISTICS, cap)
        self._found[key] = (cells, cells > cap)
        return cells

    def fits(self, base: Iterable[Iterable[str]], extra: Iterable[str], cap: float) -> bool:
        """Whether the junction tree of the ``base`` cliques and ``extra`` has at most
        ``cap`` cells."""
        return self.cells(base, extra, cap) <= cap


def clique_cells(domain: Domain, cliques: Iterable[Iterable[str]]) -> int:
    """Cells of the junction tree that ``cliques`` would need (a model-size estimate)."""
    return TreeSizes(domain).cells(cliques)
