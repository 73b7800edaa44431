"""Many marginals of one calibrated junction tree at once: each a sum of a clique's table,
or a contraction of a small subtree whose tables are first summed down."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from dpgm.inference.cliques import Clique
from dpgm.inference.junction_tree import JunctionTree


class TreeMarginals:
    """Marginals of one calibrated junction tree on many small cliques.

    ``tables`` are the tree's calibrated clique tables (counts or probabilities, axes in
    each clique's order).

    A clique inside a junction-tree clique is a sum of the smallest such clique's table.
    Any other is the contraction of a minimal subtree covering it: its top clique's
    marginal times every other clique's conditional given its parent separator, each
    first summed down to the clique's attributes and the subtree's separators (an
    attribute elsewhere in a table appears in no other clique of the subtree, by the
    running intersection property), so the contraction only meets small tables.
    """

    def __init__(self, tree: JunctionTree, tables: Sequence[np.ndarray]):
        self.tree = tree
        self.tables = list(tables)
        self.sets = [frozenset(c) for c in tree.cliques]
        self.depth = [0] * len(tree.cliques)
        for i in tree.order:
            if tree.parent[i] >= 0:
                self.depth[i] = self.depth[tree.parent[i]] + 1
        cells = [t.size for t in self.tables]
        self.by_size = sorted(range(len(cells)), key=lambda i: cells[i])
        self.holders: dict[str, list[int]] = {}  # cliques holding each attribute, smallest first
        for i in self.by_size:
            for a in tree.cliques[i]:
                self.holders.setdefault(a, []).append(i)

    def _sum_to(self, i: int, keep: Iterable[str]) -> np.ndarray:
        """Table ``i`` summed over its attributes outside ``keep``, the rest's axes only."""
        keep = set(keep)
        clique = self.tree.cliques[i]
        axes = tuple(k for k, a in enumerate(clique) if a not in keep)
        table = np.add.reduce(self.tables[i], axis=axes) if axes else self.tables[i]
        return table

    def _subtree(self, clique: Clique) -> list[int]:
        """A minimal connected set of cliques covering ``clique``, top clique first."""
        parent, depth = self.tree.parent, self.depth
        members = frozenset(clique)
        start = self.holders[clique[0]][0]
        nodes = {start}
        for a in clique[1:]:
            i, j = start, self.holders[a][0]
            while i != j:  # climb to the common ancestor, keeping both paths
                if depth[i] >= depth[j]:
                    i = parent[i]
                    nodes.add(i)
                else:
                    nodes.add(j)
                    j = parent[j]
            nodes.add(j)
        # drop leaves of the subtree whose attributes of interest their neighbour also holds
        pruned = True
        while pruned and len(nodes) > 1:
            pruned = False
            for i in list(nodes):
                near = [k for k in self.tree.children[i] if k in nodes]
                if parent[i] in nodes:
                    near.append(parent[i])
                if len(near) == 1 and (self.sets[i] & members) <= self.sets[near[0]]:
                    nodes.discard(i)
                    pruned = True
        return sorted(nodes, key=lambda i: depth[i])

    def __call__(self, clique: Clique) -> np.ndarray:
        """The marginal on ``clique`` (axes in the order of ``clique``)."""
        members = frozenset(clique)
        holders = self.holders[clique[0]] if clique else self.by_size
        inside = [i for i in holders if members <= self.sets[i]]
        if inside:
            kept = [a for a in self.tree.cliques[inside[0]] if a in members]
            table = self._sum_to(inside[0], members)
            return (
                table if kept == list(clique) else table.transpose([kept.index(a) for a in clique])
            )
        tree = self.tree
        nodes = self._subtree(clique)
        # separators of each clique with its parent, and all attributes it shares in the subtree
        separators = {i: self.sets[i] & self.sets[tree.parent[i]] for i in nodes[1:]}
        links = {i: set(members & self.sets[i]) for i in nodes}
        for i, sep in separators.items():
            links[i] |= sep
            links[tree.parent[i]] |= sep
        factors: dict[int, tuple[np.ndarray, list[str]]] = {}
        for i in nodes:
            table = self._sum_to(i, links[i])
            names = [a for a in tree.cliques[i] if a in links[i]]
            if i in separators:
                below = self._sum_to(i, separators[i])
                shape = [table.shape[k] if a in separators[i] else 1 for k, a in enumerate(names)]
                below = below.reshape(shape)
                with np.errstate(divide="ignore", invalid="ignore"):
                    table = np.where(below > 0, table / below, 0.0)
            factors[i] = (table, names)
        # Contract the subtree from the leaves up, one child into its parent at a time:
        # each product has two operands and few attributes (the child's separator and the
        # attributes asked for), however many cliques the subtree has. An attribute of a
        # child outside its separator appears nowhere above it (running intersection), so
        # it is summed out there unless it was asked for.
        for i in reversed(nodes[1:]):  # deepest first
            table, names = factors.pop(i)
            keep = [a for a in names if a in members or a in separators[i]]
            parent_table, parent_names = factors[tree.parent[i]]
            joined = parent_names + [a for a in keep if a not in parent_names]
            merged = _contract(parent_table, parent_names, table, names, joined)
            factors[tree.parent[i]] = (merged, joined)
        table, names = factors[nodes[0]]
        return _contract(table, names, np.ones(()), [], list(clique))


def _contract(
    a: np.ndarray, a_names: list[str], b: np.ndarray, b_names: list[str], out: list[str]
) -> np.ndarray:
    """``Σ a·b`` over the attributes not in ``out``, axes in ``out``'s order."""
    labels = {name: k for k, name in enumerate(dict.fromkeys(a_names + b_names + out))}
    return np.einsum(
        a, [labels[n] for n in a_names], b, [labels[n] for n in b_names], [labels[n] for n in out]
    )
