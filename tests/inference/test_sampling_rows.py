"""The one row sampler (``dpgm.inference.sampling``): rounding edges and the step API."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpgm import Domain
from dpgm.errors import ParameterError
from dpgm.inference.sampling import _draw_rows, _rounded_rows, draw_records


class Fixed:
    """A generator whose uniforms are given (the sampler only calls ``random``)."""

    def __init__(self, values):
        self.values = np.asarray(values, dtype=np.float64)

    def random(self, size):
        return self.values[:size]


def test_a_row_whose_cumulative_sum_passes_one_early_stays_in_its_row():
    """This row's cumulative sums reach 1 + 2^-52 before its last (empty) cell; uncapped,
    the shifted rows were not sorted and a draw in the next row came out negative."""
    early = [0.29846844738462247, 0.042444653575122594, 0.6590868990402551, 0.0]
    assert np.cumsum(early)[2] > 1.0  # the precondition: the rounding this test is about
    conditionals = np.array([early, [0.25, 0.25, 0.25, 0.25]])
    drawn = _draw_rows(conditionals, np.array([1, 0]), Fixed([0.0, 0.999]))
    np.testing.assert_array_equal(drawn, [0, 2])


def test_steps_draw_given_earlier_columns_in_the_tables_axis_order():
    """A step's table has its given axes in the step's order, not the domain's: here b is
    drawn given (c, a), and each row of its table puts all mass on one value."""
    domain = Domain(["a", "b", "c"], [2, 3, 2])
    value = np.array([[0, 1], [2, 0]])  # value[c, a]: the b drawn
    table = np.zeros((2, 2, 3))
    table[np.arange(2)[:, None], np.arange(2)[None, :], value] = 5.0  # counts: normalised
    steps = [((), ("a", "c"), np.full((2, 2), 0.25)), (("c", "a"), ("b",), table)]
    records = draw_records(domain, steps, 2000, np.random.default_rng(0))
    a, b, c = records.T
    np.testing.assert_array_equal(b, value[c, a])
    assert len({(x, y) for x, y in zip(a, c)}) == 4


def test_a_row_with_no_mass_is_uniform_and_the_method_is_checked():
    domain = Domain(["a", "b"], [2, 2])
    steps = [((), ("a",), np.array([0.0, 1.0])), (("a",), ("b",), np.zeros((2, 2)))]
    records = draw_records(domain, steps, 4000, np.random.default_rng(1))
    assert (records[:, 0] == 1).all()
    assert abs(records[:, 1].mean() - 0.5) < 0.05
    with pytest.raises(ParameterError, match="unknown sampling method"):
        draw_records(domain, steps, 1, np.random.default_rng(1), method="gibbs")


# a and c drawn in two steps, neither given the other: independent in the model
PAIR = Domain(["a", "c"], [4, 5])
P_A = np.array([0.1, 0.2, 0.3, 0.4])
P_C = np.array([0.05, 0.15, 0.2, 0.25, 0.35])
INDEPENDENT = [((), ("a",), P_A), ((), ("c",), P_C)]


def _cross(records: np.ndarray) -> np.ndarray:
    return np.histogram2d(*records.T, bins=[4, 5], range=[[0, 4], [0, 5]])[0]


def test_rounded_deals_each_group_of_an_earlier_column_its_share():
    """c's counts among the records of each a are their share n_a·p(c), within three
    (measured: 2.2 at most): the counts are dealt evenly along a. Power: dealt in random
    order, as before, they are off by the usual sampling error (√(n_a p q), here up to
    15)."""
    n = 10_003
    for seed in range(3):
        records = draw_records(PAIR, INDEPENDENT, n, np.random.default_rng(seed), "rounded")
        n_a = np.bincount(records[:, 0], minlength=4)
        assert np.abs(_cross(records) - np.outer(n_a, P_C)).max() <= 3.0
        random_order = _rounded_rows(P_C[None, :], np.zeros(n, np.int64),
                                     np.random.default_rng(seed))
        dealt = np.column_stack([records[:, 0], random_order])
        assert np.abs(_cross(dealt) - np.outer(n_a, P_C)).max() > 5.0


def test_rounded_cross_counts_stay_unbiased():
    """Over 2,000 samples of 37 records, the mean count of every (a, c) is n·p(a)·p(c): a
    t statistic per cell within the Bonferroni bound (false alarm 1e-3 in all). The
    random turn of each row's sequence is what makes this hold: without it the first
    records of a row favour the common values (|t| = 7.2 measured)."""
    n, repeats = 37, 2000
    counts = np.array([_cross(draw_records(PAIR, INDEPENDENT, n, np.random.default_rng(k),
                                           "rounded")).ravel() for k in range(repeats)])
    expected = n * np.outer(P_A, P_C).ravel()
    t = (counts.mean(axis=0) - expected) / (counts.std(axis=0, ddof=1) / np.sqrt(repeats))
    assert np.abs(t).max() < stats.t.ppf(1 - 1e-3 / (2 * expected.size), repeats - 1)


def test_a_columns_total_over_many_sparse_rows_stays_near_its_expectation():
    """4,000 rows of one record each: the rounding's extra records are spread over the
    columns row by row, so a column's total is within four of its expectation where every
    row is alike (measured over 1,000 seeds: 3 at most, 1 or less on 88% of them), and
    within four standard deviations of independent draws where rows differ (measured: 1.5
    at most). Power: one systematic start shared by every row, as before, missed by 400
    to 3,600 records on alike rows and 100 to 2,300 on unlike ones."""
    rows = np.arange(4000)
    alike = np.tile([0.1, 0.3, 0.6], (rows.size, 1))
    for seed in range(4):
        unlike = np.random.default_rng(seed).dirichlet(np.full(3, 0.5), size=rows.size)
        for conditionals, bound in ((alike, 4.0), (unlike, None)):
            drawn = _rounded_rows(conditionals, rows, np.random.default_rng(100 + seed))
            miss = np.abs(np.bincount(drawn, minlength=3) - conditionals.sum(axis=0))
            if bound is None:
                bound = 4 * np.sqrt((conditionals * (1 - conditionals)).sum(axis=0))
            assert np.all(miss <= bound), (seed, miss, bound)


def test_sparse_rows_counts_stay_unbiased():
    """Over 2,000 samples of 150 rows of one or two records each, every cell's mean count
    is its expectation n_s·q_s: a t statistic per cell within the Bonferroni bound (false
    alarm 1e-3 in all), each row's start uniform whatever its place in the sequence."""
    generator = np.random.default_rng(5)
    conditionals = generator.dirichlet(np.ones(3), size=150)
    rows = np.repeat(np.arange(150), generator.integers(1, 3, size=150))
    expected = conditionals * np.bincount(rows, minlength=150)[:, None]
    repeats = 2000
    counts = np.array([np.bincount(rows * 3 + _rounded_rows(conditionals, rows,
                                                            np.random.default_rng(k)),
                                   minlength=450) for k in range(repeats)])
    deviation = counts.std(axis=0, ddof=1)
    varying = deviation > 0
    # a cell that never varied (an expectation near 0, 1 or 2) is within one of it
    assert np.all(np.abs(counts.mean(axis=0) - expected.ravel())[~varying] < 1.0)
    t = ((counts.mean(axis=0) - expected.ravel())[varying]
         / (deviation[varying] / np.sqrt(repeats)))
    assert np.abs(t).max() < stats.t.ppf(1 - 1e-3 / (2 * varying.sum()), repeats - 1)
