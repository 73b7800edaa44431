"""Convex generalised belief propagation on a region graph closed under intersection.

The regions are the model's cliques and every non-empty intersection of them, closed
again under intersection (Koller & Friedman, Alg. 11.3); each region is joined to the
regions it contains directly (the Hasse diagram). Every region has counting number 1, so
the free energy Σ_r (⟨b_r, θ_r⟩ + H(b_r)) is concave over the pseudo-marginals that agree
on every edge, with one maximiser, which message passing reaches from any start (the
fractional covering of Hazan & Shashua 2008; Algorithm 2 of McKenna et al. 2021, the
oracle of mbi's approximate estimator). Regions that overlap in more than one attribute
(triples sharing a pair) are held to agree on the whole overlap, which a factor graph of
cliques and single attributes does not do.

Messages run both ways on every edge p → r, over r's attributes, in log space:

    b_p        = θ_p + Σ_{c child of p} λ_{c→p} − Σ_{q parent of p} λ_{p→q}
    m_{p→r}    = log Σ_{x_p \\ x_r} exp(b_p − λ_{r→p})
    λ_{r→p}    = (θ_r + Σ_c λ_{c→r} + Σ_q m_{q→r}) / (1 + |parents of r|) − m_{p→r}

all at once per sweep, each normalised and damped. Every region's table lives in one flat
vector and every edge's messages in another; moving between them is a fixed set of
index maps built once, so a sweep is a dozen NumPy calls whatever the number and shapes
of the regions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dpgm.domain import Domain


def intersection_closure(domain: Domain, cliques: Sequence[tuple[str, ...]]
                         ) -> list[tuple[str, ...]]:
    """The cliques, then every non-empty intersection of two regions until none is new
    (each in domain order; first found first)."""
    regions = [domain.canonical(c) for c in cliques]
    seen = {frozenset(c) for c in regions}
    holders: dict[str, list[int]] = {}  # attribute → the regions that hold it
    for i, region in enumerate(regions):
        for a in region:
            holders.setdefault(a, []).append(i)
    fresh = list(range(len(regions)))
    while fresh:
        found = []
        for i in fresh:
            mine = frozenset(regions[i])
            # only regions that share an attribute can meet this one
            for j in sorted({j for a in regions[i] for j in holders[a]}):
                common = mine & frozenset(regions[j])
                if common and common not in seen:
                    seen.add(common)
                    found.append(domain.canonical(common))
        for region in found:
            for a in region:
                holders[a].append(len(regions))
            regions.append(region)
        fresh = list(range(len(regions) - len(found), len(regions)))
    return regions


class RegionGraph:
    """The region graph of ``cliques`` (each in domain order, none inside another) and
    the index maps of its message passing (see the module docstring)."""

    def __init__(self, domain: Domain, cliques: Sequence[tuple[str, ...]]):
        # domain order inside every region, so that a cell's index is its ravel
        regions = intersection_closure(domain, cliques)
        self.regions = regions
        shapes = [domain.project(r).shape for r in regions]
        sizes = [math.prod(s) for s in shapes]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.sizes = np.asarray(sizes, dtype=np.int64)
        sets = [frozenset(r) for r in regions]
        holders: dict[str, set[int]] = {a: set() for a in domain.attrs}
        for i, r in enumerate(regions):
            for a in r:
                holders[a].add(i)
        edges = []
        for i, r in enumerate(regions):
            above = set.intersection(*(holders[a] for a in r)) - {i}
            for p in above:  # direct parents: no region strictly between
                if not any(sets[i] < sets[q] < sets[p] for q in above):
                    edges.append((p, i))
        edges.sort()
        self.edges = edges
        parents = np.bincount([c for _, c in edges], minlength=len(regions))
        # each region's share of its inbound sum, per cell: 1 / (1 + its parents)
        self._share = np.repeat(1.0 / (1.0 + parents), sizes)
        edge_sizes = [sizes[c] for _, c in edges]
        self.edge_offsets = np.concatenate([[0], np.cumsum(edge_sizes)]).astype(np.int64)
        parent_cells, edge_cells, child_cells = [], [], []
        for e, (p, c) in enumerate(edges):
            axes = [regions[p].index(a) for a in regions[c]]
            grid = np.indices(shapes[p]).reshape(len(shapes[p]), -1)
            local = (np.ravel_multi_index(tuple(grid[axes]), shapes[c]) if axes else
                     np.zeros(grid.shape[1], dtype=np.int64))
            parent_cells.append(self.offsets[p] + np.arange(sizes[p]))
            edge_cells.append(self.edge_offsets[e] + local)
            child_cells.append(self.offsets[c] + np.arange(sizes[c]))
        self._parent_cell = _join(parent_cells)  # k → a cell of the edge's parent
        self._edge_cell = _join(edge_cells)  # k → the edge cell (child cell) it sums into
        self._child_cell = _join(child_cells)  # edge cell → the child region's cell
        self._by_edge_cell = np.argsort(self._edge_cell, kind="stable")
        counts = np.bincount(self._edge_cell, minlength=int(self.edge_offsets[-1]))
        self._edge_cell_starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)

    @property
    def cells(self) -> int:
        return int(self.offsets[-1])

    def initial(self) -> tuple[np.ndarray, np.ndarray]:
        """Uniform messages (up λ, down m), normalised per edge."""
        sizes = np.diff(self.edge_offsets)
        uniform = np.repeat(-np.log(sizes.astype(np.float64)), sizes)
        return uniform.copy(), uniform.copy()

    def sweep(self, theta: np.ndarray, up: np.ndarray, down: np.ndarray, damping: float
              ) -> tuple[np.ndarray, np.ndarray, float]:
        """One damped sweep from messages ``up`` (λ) and ``down`` (m); ``theta`` over the
        regions (flat). Returns the new messages and the largest change of one."""
        into = self._into_regions(up)
        belief = self._unnormalised(theta, into, up)
        with np.errstate(invalid="ignore"):
            # b_p − λ_{r→p}: where λ_{r→p} is -inf the child's cell is impossible, and
            # so is every cell its messages reach; any value serves, -inf keeps it so
            excluded = belief[self._parent_cell] - up[self._edge_cell]
        excluded = np.where(np.isnan(excluded), -np.inf, excluded)
        new_down = _segment_logsumexp(excluded[self._by_edge_cell], self._edge_cell_starts)
        base = (self._share * (theta + into + self._sum_at_children(down)))[self._child_cell]
        with np.errstate(invalid="ignore"):
            new_up = np.where(np.isneginf(base), -np.inf, base - down)
        # damped in log space, then normalised per edge: a constant per edge in the new
        # messages would only be normalised away, so they are mixed in as they come
        up_next = self._normalise(damping * up + (1.0 - damping) * new_up)
        down_next = self._normalise(damping * down + (1.0 - damping) * new_down)
        return up_next, down_next, max(largest_move(up_next, up), largest_move(down_next, down))

    def log_beliefs(self, theta: np.ndarray, up: np.ndarray) -> np.ndarray:
        """Every region's log-belief (flat, each normalised to sum 1)."""
        belief = self._unnormalised(theta, self._into_regions(up), up)
        norms = _segment_logsumexp(belief, self.offsets[:-1])
        return belief - np.repeat(norms, self.sizes)

    def free_energy(self, theta: np.ndarray, log_beliefs: np.ndarray) -> float:
        """Σ_r ⟨b_r, θ_r⟩ + H(b_r): the convex approximation of log Z at the beliefs."""
        b = np.exp(log_beliefs)
        with np.errstate(invalid="ignore"):
            terms = np.where(b > 0, b * (theta - log_beliefs), 0.0)
        return float(terms.sum())

    def _unnormalised(self, theta: np.ndarray, into: np.ndarray, up: np.ndarray) -> np.ndarray:
        """b_r = θ_r + Σ_c λ_{c→r} − Σ_q λ_{r→q}, -inf wherever r sends a -inf message up
        (λ_{r→q} is -inf only on cells that are impossible for r)."""
        out = self._sum_at_children(up)
        with np.errstate(invalid="ignore"):
            return np.where(np.isneginf(out), -np.inf, theta + into - out)

    # -- the index maps -----------------------------------------------------------------------
    def _into_regions(self, messages: np.ndarray) -> np.ndarray:
        """Σ over each region's children of their edge messages, broadcast into it."""
        return np.bincount(self._parent_cell, weights=messages[self._edge_cell],
                           minlength=self.cells)

    def _sum_at_children(self, messages: np.ndarray) -> np.ndarray:
        """Σ over each region's parents of its edges' messages (over its own cells)."""
        return np.bincount(self._child_cell, weights=messages, minlength=self.cells)

    def _normalise(self, messages: np.ndarray) -> np.ndarray:
        norms = _segment_logsumexp(messages, self.edge_offsets[:-1])
        norms = np.where(np.isfinite(norms), norms, 0.0)
        return messages - np.repeat(norms, np.diff(self.edge_offsets))


def _join(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, dtype=np.int64)


def _segment_logsumexp(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """log Σ exp over the contiguous segments of ``values`` beginning at ``starts``."""
    if values.size == 0:
        return np.zeros(0)
    peaks = np.maximum.reduceat(values, starts)
    safe = np.where(np.isfinite(peaks), peaks, 0.0)
    counts = np.diff(np.append(starts, values.size))
    with np.errstate(divide="ignore", invalid="ignore"):
        sums = np.add.reduceat(np.exp(values - np.repeat(safe, counts)), starts)
        return np.log(sums) + safe


def largest_move(new: np.ndarray, old: np.ndarray) -> float:
    """The largest change between two arrays of log-messages; -inf staying -inf (a zero
    staying zero) is no change."""
    with np.errstate(invalid="ignore"):
        moved = np.where(np.isneginf(new) & np.isneginf(old), 0.0, new - old)
    return float(np.max(np.abs(moved))) if moved.size else 0.0
