"""Private answers to the questions a schema asks: which labels occur, where values lie.

Neighbouring datasets differ by adding or removing one record; each record holds one
value of the column asked about.

* :func:`private_labels` — partition selection (the stability histogram of Korolova et
  al. 2009 / Bun, Nissim & Stemmer 2016): each distinct value's count gets discrete
  Laplace noise of scale 1/ε and is kept when the noisy count reaches
  τ = 1 + ⌈ln(1/δ)/ε⌉. Only the kept values are released (sorted, never their counts).
  Values in both neighbours: ε-DP. A value held by the one differing record alone is
  released with probability P(Z ≥ τ − 1) ≤ e^{−ε(τ−1)} ≤ δ. So (ε, δ)-DP.
* :func:`private_range` — a histogram over public bins (geometric for numbers) with
  discrete Laplace noise of scale 1/ε (one record changes one count by 1): ε-DP; the
  range from the first to the last bin whose noisy count is clearly above noise is
  post-processing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from dpgm.privacy.budget import PrivacyBudget
from dpgm.privacy.noise import laplace_noise
from dpgm.privacy.policy import check_epsilon, check_probability
from dpgm.random import RngLike


def selection_threshold(epsilon: float, delta: float) -> int:
    """The noisy count a value needs to be released by :func:`private_labels`."""
    return 1 + math.ceil(math.log(1.0 / delta) / epsilon)


def private_labels(
    values: Sequence[object],
    epsilon: float,
    delta: float,
    budget: PrivacyBudget,
    rng: RngLike = None,
    label: str = "labels",
) -> list[object]:
    """The distinct ``values`` whose noisy count reaches the threshold, sorted (see module).

    Charges (ε, δ) to ``budget`` (an :meth:`~PrivacyBudget.approximate` budget).
    """
    import pandas as pd

    epsilon = check_epsilon(epsilon)
    delta = check_probability("delta", delta)
    budget.charge(epsilon=epsilon, delta=delta, label=label)
    # keyed by type too: True, 1 and 1.0 are three values, not one counted three times
    keys = pd.Series(list(zip(map(type, values), values)), dtype=object)
    counts = keys.value_counts(dropna=True)
    if counts.empty:
        return []
    # record counts are whole numbers (unweighted): discrete Laplace, a public fact
    noisy = laplace_noise(counts.to_numpy(dtype=np.float64), 1.0 / epsilon, rng, discrete=True)
    kept = [key[1] for key, count in zip(counts.index, noisy) if count >= selection_threshold(
        epsilon, delta
    )]
    return sorted(kept, key=lambda v: (type(v).__name__, v))


def geometric_edges(per_octave: int = 4, smallest: float = 2.0**-10, largest: float = 2.0**40):
    """Public bin edges for bounds: 0 and ±2^(k/per_octave) between ``smallest`` and ``largest``."""
    low = round(math.log2(smallest) * per_octave)
    high = round(math.log2(largest) * per_octave)
    positive = 2.0 ** (np.arange(low, high + 1) / per_octave)
    return np.concatenate([-positive[::-1], [0.0], positive])


def range_threshold(epsilon: float, bins: int, failure: float = 0.01) -> float:
    """A noisy count above which a bin is taken to hold data: an empty bin's Laplace(1/ε)
    noise exceeds it with probability at most ``failure`` over all ``bins`` bins."""
    return math.log(bins / (2.0 * failure)) / epsilon


class Range(NamedTuple):
    """Public edges around the values; ``fallback``: no bin was clearly above noise, and
    the range is the bin with the largest noisy count."""

    lower: float
    upper: float
    fallback: bool


def private_range(
    values: np.ndarray,
    edges: np.ndarray,
    epsilon: float,
    budget: PrivacyBudget,
    rng: RngLike = None,
    label: str = "range",
) -> Range:
    """Public edges around where ``values`` lie, from a noisy histogram (ε-DP).

    The values are counted in the bins between the public ``edges`` (values outside go
    to the end bins); one record changes one count by 1, so discrete Laplace noise of
    scale 1/ε makes the histogram ε-DP. The range runs from the first to the last bin
    whose noisy count reaches :func:`range_threshold` (post-processing); where none
    does, it is the bin with the largest noisy count.
    """
    epsilon = check_epsilon(epsilon)
    grid = np.asarray(edges, dtype=np.float64)
    budget.charge(epsilon=epsilon, label=label)
    data = np.clip(np.asarray(values, dtype=np.float64), grid[0], grid[-1])
    bins = np.minimum(np.searchsorted(grid, data, side="right") - 1, grid.size - 2)
    counts = np.bincount(bins, minlength=grid.size - 1).astype(np.float64)
    noisy = laplace_noise(counts, 1.0 / epsilon, rng, discrete=True)
    held = np.flatnonzero(noisy >= range_threshold(epsilon, counts.size))
    fallback = held.size == 0
    if fallback:
        held = np.array([int(np.argmax(noisy))])
    return Range(float(grid[held[0]]), float(grid[held[-1] + 1]), fallback)


#: the finest precision :func:`private_precision` tells apart (finer: not rounded)
MOST_DECIMALS = 9


def decimals_needed(values: np.ndarray, most: int) -> np.ndarray:
    """For each value, the fewest decimals (0 to ``most``) that write it exactly, or
    ``most + 1`` where more are needed (a value off every grid up to 10^−most)."""
    data = np.asarray(values, dtype=np.float64)
    needed = np.full(data.shape, most + 1, dtype=np.int64)
    # a value read from text with d decimals is within a few units in the last place of
    # its grid point (0.30000000000000004 is 0.3); a tolerance relative to |x| alone
    # would put every large value on every grid
    tolerance = 4 * np.spacing(np.maximum(np.abs(data), 1.0))
    for places in range(most, -1, -1):  # the last grid a value lies on is the coarsest
        on_grid = np.abs(np.round(data, places) - data) <= tolerance
        needed[on_grid] = places
    return needed


def private_precision(
    values: np.ndarray,
    epsilon: float,
    budget: PrivacyBudget,
    rng: RngLike = None,
    label: str = "precision",
    most: int = MOST_DECIMALS,
) -> int | None:
    """The decimals the values are written with (0: whole numbers), or None where more
    than ``most`` are needed, from a noisy histogram of each value's decimals (ε-DP).

    Each record falls in one of ``most + 2`` classes (0 to ``most`` decimals, or more), so
    one record changes one count by 1: discrete Laplace noise of scale 1/ε. The answer,
    post-processing, is the fewest decimals d such that no class beyond d holds a noisy
    count above :func:`range_threshold`: a few values written more finely (fewer than the
    noise can show) are rounded.
    """
    epsilon = check_epsilon(epsilon)
    budget.charge(epsilon=epsilon, label=label)
    classes = most + 2
    counts = np.bincount(decimals_needed(values, most), minlength=classes).astype(np.float64)
    noisy = laplace_noise(counts, 1.0 / epsilon, rng, discrete=True)
    held = np.flatnonzero(noisy >= range_threshold(epsilon, classes))
    finest = int(held[-1]) if held.size else 0
    return None if finest > most else finest


class Tree(NamedTuple):
    """The leaves of a binary partition of [lower, upper]: leaf i is cell ``index[i]`` of
    the 2^``depth[i]`` equal cells, in order. ``floor`` is the depth no cell is split
    beyond (a public fact: the smallest width, or the deepest level), or None."""

    lower: float
    upper: float
    depth: np.ndarray
    index: np.ndarray
    floor: int | None = None

    def edges(self) -> np.ndarray:
        """The leaves' edges, lower to upper (15 significant digits, as public bins)."""
        width = (self.upper - self.lower) / 2.0 ** self.depth
        left = self.lower + self.index * width
        inner = [float(f"{e:.15g}") for e in left[1:]]
        return np.array([self.lower, *inner, self.upper])


def privtree_noise(epsilon: float) -> tuple[float, int]:
    """PrivTree's noise scale λ = (2β − 1)/((β − 1)ε) = 3/ε for fan-out β = 2, and its
    bias per level δ = ⌈λ·ln β⌉ (see :func:`privtree`)."""
    scale = 3.0 / epsilon
    return scale, math.ceil(scale * math.log(2.0))


def privtree(
    values: np.ndarray,
    lower: float,
    upper: float,
    epsilon: float,
    budget: PrivacyBudget,
    rng: RngLike = None,
    label: str = "edges",
    max_depth: int = 30,
    smallest: float = 0.0,
) -> Tree:
    """A data-adaptive binary partition of [lower, upper] by PrivTree (Zhang, Xiao & Xie,
    SIGMOD 2016, Alg. 1 with fan-out 2), ε-DP under adding or removing one record.

    A cell at depth d is split in two when its biased count max(c − d·δ, −δ) plus
    discrete Laplace noise of scale λ = 3/ε exceeds 0, with δ = ⌈λ·ln 2⌉ (the paper's
    λ·ln 2, rounded up to a whole number so that the biased counts are integers: a larger
    bias only strengthens the bound, and integer shifts keep discrete Laplace's ratio
    e^{1/λ} per unit). Only the partition is released, never a count. A cell is not split
    beyond ``max_depth`` or where its halves would be narrower than ``smallest`` (public
    facts). Values outside the bounds count in the end cells (clipped).
    """
    epsilon = check_epsilon(epsilon)
    if not lower < upper:
        raise ValueError(f"privtree needs lower < upper, got {lower!r}, {upper!r}")
    scale, bias = privtree_noise(epsilon)
    budget.charge(epsilon=epsilon, label=label)
    data = np.sort(np.clip(np.asarray(values, dtype=np.float64), lower, upper))
    leaves_depth, leaves_index = [], []
    index = np.array([0], dtype=np.int64)
    floor = next(d for d in range(max_depth + 1) if d == max_depth
                 or (upper - lower) / 2.0 ** (d + 1) < smallest)
    for depth in range(max_depth + 1):
        width = (upper - lower) / 2.0**depth
        left = lower + index * width
        # cells are closed on the left; the last one holds the upper bound too
        right = np.where(index == 2**depth - 1, np.inf, lower + (index + 1) * width)
        counts = np.searchsorted(data, right, side="left") - np.searchsorted(data, left,
                                                                             side="left")
        biased = np.maximum(counts - depth * bias, -bias).astype(np.float64)
        noisy = laplace_noise(biased, scale, rng, discrete=True)
        split = (noisy > 0) & (depth < max_depth and width / 2.0 >= smallest)
        leaves_depth.append(np.full(int((~split).sum()), depth, dtype=np.int64))
        leaves_index.append(index[~split])
        if not split.any():
            break
        index = np.stack([2 * index[split], 2 * index[split] + 1], axis=1).ravel()
    depth_all = np.concatenate(leaves_depth)
    index_all = np.concatenate(leaves_index)
    # in order along the line: by each leaf's left edge, in cells of the deepest level
    order = np.argsort(index_all << (max_depth - depth_all), kind="stable")
    return Tree(float(lower), float(upper), depth_all[order], index_all[order], floor)


def grouped_edges(tree: Tree, cells: int) -> np.ndarray:
    """At most ``cells`` bins of about equal mass, from the leaves of ``tree`` (edges,
    lower to upper): post-processing of the released partition, no count used.

    A leaf at depth d was split from a parent whose biased count passed d − 1 biases and
    itself stopped below about d, so its mass is taken to be d (biases): consecutive leaves
    are grouped so that each bin holds an equal share of the summed depths, cut at leaf
    edges. Where the data are dense the leaves are deep and the bins narrow.

    A leaf at the tree's floor was stopped by the smallest width, not by its count: the
    mark of an atom (many records at one value), which depth alone would weigh as
    little as a few records. Each run of such leaves keeps a bin of its own while they take
    at most three quarters of the bins; the rest are grouped by depth between them.
    """
    edges = tree.edges()
    if tree.depth.size <= cells:
        return edges
    forced = np.zeros(0, dtype=np.int64)  # leaf edges cut whatever the grouping
    if tree.floor is not None:
        # a run of floor leaves (an atom and its sibling) is cut at its two ends: the bin
        # holds the atom and at most a neighbour, which the sub-bins tell apart
        floor = np.concatenate([[False], tree.depth >= tree.floor, [False]])
        ends = np.flatnonzero(floor[1:] != floor[:-1])  # starts and ends of the runs
        ends = ends[(ends > 0) & (ends < tree.depth.size)]
        if ends.size <= (cells - 1) * 3 // 4:
            forced = ends
    mass = np.cumsum(tree.depth.astype(np.float64))
    if mass[-1] <= 0:
        return edges[[0, -1]]
    # the leaf after which each of the other cuts falls; cuts in one leaf coincide
    free = cells - 1 - forced.size
    cuts = np.searchsorted(mass, mass[-1] * np.arange(1, free + 1) / (free + 1), side="left")
    inner = np.union1d(np.unique(cuts[cuts < tree.depth.size - 1]) + 1, forced)
    return np.concatenate([edges[:1], edges[inner], edges[-1:]])
