"""Mutual consistency of noisy tables on overlapping attribute sets (Hay et al. 2010; PriView).

Post-processing: given tables over attribute sets (cliques) and a weight per table, make
every pair of tables agree on the marginal of every attribute set they share. Used by the
Bayesian-network parameter learners (Roy Chowdhury et al., App. 8.2.1): the sets are the
closure of the cliques under intersection, visited smallest first, and on each shared set
A the tables' projections are replaced by their weighted mean (Eq. 17) with the difference
spread evenly over each table's cells that project onto a cell of A (Eq. 18). Visiting the
sets in increasing size keeps the agreement already reached on their subsets, because a
correction that is constant on A's cells projects to zero on any subset where the tables
already agreed. Total mass is kept where the tables agreed on it to begin with.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dpgm.errors import ParameterError
from dpgm.inference.cliques import Clique


def intersection_closure(cliques: Sequence[Clique]) -> list[frozenset[str]]:
    """Every intersection of a non-empty sub-collection of ``cliques``, and the empty set,
    ordered by size and then by sorted attribute names (a topological order under ⊂)."""
    found = {frozenset(c) for c in cliques} | {frozenset()}
    frontier = set(found)
    while frontier:
        new = {a & b for a in frontier for b in found} - found
        found |= new
        frontier = new
    return sorted(found, key=lambda s: (len(s), sorted(s)))


def _project(table: np.ndarray, clique: Clique, attrs: Clique) -> np.ndarray:
    """``table`` (axes in ``clique`` order) summed onto ``attrs``, axes in ``attrs`` order."""
    kept = [clique.index(a) for a in attrs]
    dropped = tuple(i for i in range(len(clique)) if i not in kept)
    summed = table.sum(axis=dropped) if dropped else table
    order = sorted(range(len(kept)), key=kept.__getitem__)  # axes of `summed`, by clique order
    return np.transpose(summed, np.argsort(order)) if len(attrs) > 1 else summed


def _spread(values: np.ndarray, attrs: Clique, clique: Clique) -> np.ndarray:
    """A table on ``attrs`` broadcast over ``clique`` (size-1 axes for the other attributes)."""
    in_clique = sorted(attrs, key=clique.index)
    moved = np.transpose(values, [attrs.index(a) for a in in_clique]) if len(attrs) > 1 else values
    shape = [values.shape[attrs.index(a)] if a in attrs else 1 for a in clique]
    return np.reshape(moved, shape)


def mutual_consistency(
    cliques: Sequence[Clique], tables: Sequence[np.ndarray], weights: Sequence[float]
) -> list[np.ndarray]:
    """Copies of ``tables`` that agree on every shared attribute set (see the module).

    ``tables[t]`` has one axis per attribute of ``cliques[t]``, in that order; ``weights``
    (> 0) weigh each table in the means of Eq. 17.
    """
    cliques = [tuple(c) for c in cliques]
    tables = [np.array(t, dtype=np.float64) for t in tables]
    weights = np.asarray(weights, dtype=np.float64)
    if not len(cliques) == len(tables) == weights.size:
        raise ParameterError("give one table and one weight per clique")
    if not np.all(np.isfinite(weights)) or np.any(weights <= 0):
        raise ParameterError(f"weights must be finite and > 0, got {weights.tolist()}")
    for clique, table in zip(cliques, tables, strict=True):
        if table.ndim != len(clique):
            raise ParameterError(f"the table on {clique} has {table.ndim} axes")
    for shared in intersection_closure(cliques):
        holders = [t for t, c in enumerate(cliques) if shared <= set(c)]
        if len(holders) < 2:
            continue
        attrs = tuple(sorted(shared))
        projections = [_project(tables[t], cliques[t], attrs) for t in holders]
        weight = weights[holders]
        target = sum(w * p for w, p in zip(weight, projections)) / weight.sum()
        for t, projection in zip(holders, projections):
            share = math.prod(projection.shape) / tables[t].size  # |dom(A)| / |dom(F_t)|
            tables[t] = tables[t] + share * _spread(target - projection, attrs, cliques[t])
    return tables
