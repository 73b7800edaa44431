"""The one row sampler (``dpgm.inference.sampling``): rounding edges and the step API."""

from __future__ import annotations

import numpy as np
import pytest

from dpgm import Domain
from dpgm.errors import ParameterError
from dpgm.inference.sampling import _draw_rows, draw_records


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
