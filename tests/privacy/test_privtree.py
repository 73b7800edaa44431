"""Private discretisation (issue 26): PrivTree's partition, its privacy on neighbouring
data sets, the equal-mass bins read off it, and the private precision of a column."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpgm.privacy.budget import PrivacyBudget
from dpgm.privacy.discovery import (
    Tree,
    decimals_needed,
    grouped_edges,
    private_precision,
    privtree,
    privtree_noise,
)

pytestmark = pytest.mark.filterwarnings("ignore::dpgm.errors.SeedWarning")


def budget() -> PrivacyBudget:
    return PrivacyBudget.approximate(1e6, 1e-6)


# -- privacy: one dense point, with and without one more record ---------------------------------
def split_law(biased: float, scale: float, discrete: bool) -> tuple[float, float]:
    """(P(biased + Z > 0), P(biased + Z <= 0)), each computed directly (no 1 − p, which
    loses the small one), Z Laplace (continuous: the seeded path; discrete: OpenDP's)."""
    if not discrete:
        tail = 0.5 * math.exp(-abs(biased) / scale)  # P(Z > |b|)
        return (1 - tail, tail) if biased >= 0 else (tail, 1 - tail)
    a = math.exp(-1 / scale)

    def at_least(m: int) -> float:  # P(Z >= m), for a whole number m >= 1
        return a**m / (1 + a)

    b = int(biased)
    if b >= 0:  # stay: Z <= -b, i.e. Z >= b by symmetry
        stay = at_least(b) if b >= 1 else 1 - at_least(1)
        return 1 - stay, stay
    split = at_least(-b + 1)  # Z > -b = |b|
    return split, 1 - split


def depth_distribution(records: int, epsilon: float, max_depth: int, discrete: bool,
                       noise_factor: float = 1.0) -> np.ndarray:
    """P(the leaf holding every record is at depth d), every record holding one value:
    the other cells hold nothing in either data set, so this is the whole output's law."""
    scale, bias = privtree_noise(epsilon)
    scale *= noise_factor
    law, alive = [], 1.0
    for depth in range(max_depth + 1):
        split, stay = (0.0, 1.0) if depth == max_depth else split_law(
            max(records - depth * bias, -bias), scale, discrete)
        law.append(alive * stay)
        alive *= split
    return np.array(law)


def worst_loss(epsilon: float, discrete: bool, noise_factor: float = 1.0) -> float:
    worst = 0.0
    for records in range(0, 40 * math.ceil(3 / epsilon)):
        p = depth_distribution(records, epsilon, 30, discrete, noise_factor)
        q = depth_distribution(records + 1, epsilon, 30, discrete, noise_factor)
        held = (p > 1e-200) & (q > 1e-200)  # not subnormal: their ratios are inexact
        worst = max(worst, float(np.max(np.abs(np.log(p[held] / q[held])))))
    return worst


@pytest.mark.parametrize("discrete", [False, True])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 3.0])
def test_neighbours_differ_by_at_most_epsilon_and_halved_noise_is_caught(epsilon, discrete):
    """Adding a record to a point that holds n records moves the law of the output by at
    most e^ε (the paper's bias, rounded up, leaves room: at most about 0.87ε). With the
    noise halved, the loss of the release path (discrete Laplace) passes ε at every ε, so
    the check has power (the seeded path's continuous noise, at ε = 3, where the bias
    rounds 0.69 up to 1, stays within ε even then: 0.90ε)."""
    assert worst_loss(epsilon, discrete) <= epsilon
    if discrete or epsilon < 3:
        assert worst_loss(epsilon, discrete, noise_factor=0.5) > 1.05 * epsilon


def test_the_implementation_is_the_analysed_mechanism():
    """The depths the implementation reaches (seeded: continuous Laplace) follow the law
    the privacy check analyses."""
    epsilon, records, runs = 1.0, 40, 3000
    rng = np.random.default_rng(5)
    depths = []
    for _ in range(runs):  # the depth of the leaf that holds the records
        tree = privtree(np.full(records, 0.3), 0.0, 1.0, epsilon, budget(), rng, max_depth=30)
        depths.append(tree.depth[np.searchsorted(tree.edges(), 0.3, side="right") - 1])
    depths = np.array(depths)
    law = depth_distribution(records, epsilon, 30, discrete=False)
    observed = np.bincount(depths, minlength=law.size) / runs
    spread = np.sqrt(law * (1 - law) / runs)
    assert np.all(np.abs(observed - law) <= 5 * spread + 2 / runs)


# -- what it releases ----------------------------------------------------------------------------
def test_dense_data_get_narrow_bins_of_about_equal_mass():
    rng = np.random.default_rng(0)
    incomes = np.exp(rng.normal(10, 1, 50_000))
    tree = privtree(incomes, 0.0, 1e7, 1.0, budget(), rng=1)
    edges = grouped_edges(tree, 32)
    assert len(edges) == 33 and edges[0] == 0 and edges[-1] == 1e7
    assert np.all(np.diff(edges) > 0)
    counts = np.histogram(incomes, edges)[0]
    assert counts.max() < 3 * 50_000 / 32  # equal-width bins put 99 % in the first
    assert np.histogram(incomes, np.linspace(0, 1e7, 33))[0][0] > 0.99 * 50_000


def test_bins_never_narrower_than_the_unit_and_few_leaves_kept():
    ages = np.random.default_rng(1).integers(17, 91, 5000).astype(float)
    tree = privtree(ages, 0.0, 128.0, 1.0, budget(), rng=2, smallest=1.0)
    assert np.all(np.diff(tree.edges()) >= 1.0)
    small = Tree(0.0, 4.0, np.array([1, 2, 2]), np.array([0, 2, 3]))
    np.testing.assert_array_equal(grouped_edges(small, 8), [0.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(grouped_edges(small, 1), [0.0, 4.0])


def test_a_leaf_stopped_by_the_smallest_width_keeps_a_bin_of_its_own():
    # sixteen cells of depth 4, the eighth split down to depth 8 at its left end: the
    # chain an atom leaves (its leaf and its sibling at the floor, then their uncles)
    chain = [(8, 112), (8, 113), (7, 57), (6, 29), (5, 15)]
    leaves = [(4, i) for i in range(7)] + chain + [(4, i) for i in range(8, 16)]
    depth, index = (np.array(x) for x in zip(*leaves))
    atom = [7 / 16, 7 / 16 + 2 / 256]  # the run of the two floor leaves, cut at its ends
    floored = grouped_edges(Tree(0.0, 1.0, depth, index, floor=8), 8)
    assert len(floored) <= 9 and set(atom) <= set(floored)
    # weighed by depth alone, the atom's leaves would share a bin with their uncles
    assert not set(atom) <= set(grouped_edges(Tree(0.0, 1.0, depth, index), 8))
    # more runs than three quarters of the bins: grouped by depth like the rest
    alternate = np.tile([4, 5, 5], 8)
    index = np.concatenate([[2 * i, 4 * i + 2, 4 * i + 3] for i in range(8)])
    many = Tree(0.0, 1.0, alternate, index, floor=5)
    assert len(grouped_edges(many, 8)) == 9


def test_the_partition_is_charged_and_bad_bounds_cost_nothing():
    spent = PrivacyBudget.approximate(1.0, 1e-6)
    privtree(np.arange(10.0), 0.0, 10.0, 0.25, spent, rng=0, label="edges of x")
    assert [(e.label, e.epsilon) for e in spent.ledger] == [("edges of x", 0.25)]
    with pytest.raises(ValueError, match="lower < upper"):
        privtree(np.arange(10.0), 5.0, 5.0, 0.25, spent, rng=0)
    assert len(spent.ledger) == 1


# -- precision -----------------------------------------------------------------------------------
def test_decimals_needed_reads_each_value_on_its_own():
    values = np.array([3.0, 1.5, 0.25, 0.1, 0.30000000000000004, 1 / 3, 11209.42, -2.0])
    np.testing.assert_array_equal(decimals_needed(values, 6), [0, 1, 2, 1, 1, 7, 2, 0])
    # a large value off the grid is not put on it by a tolerance that grows with |x|, and
    # seven decimals are told apart from more
    values = np.array([1234 + 1 / 3, 0.1442925, 7.000000001])
    np.testing.assert_array_equal(decimals_needed(values, 9), [10, 7, 9])


def test_private_precision_finds_whole_numbers_decimals_or_none():
    rng = np.random.default_rng(3)
    x = np.exp(rng.normal(10, 1, 5000))
    assert private_precision(np.round(x), 1.0, budget(), rng=0) == 0
    assert private_precision(np.round(x, 2), 1.0, budget(), rng=0) == 2
    assert private_precision(x, 1.0, budget(), rng=0) is None
    a_few_finer = np.concatenate([np.round(x), [0.5, 1.25, 7.125]])
    assert private_precision(a_few_finer, 1.0, budget(), rng=0) == 0  # below the noise
