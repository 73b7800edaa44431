"""Structural zeros: forbidden cells keep probability zero, the fit is max-entropy on the rest."""

from __future__ import annotations

import numpy as np
import pytest

from dpgm import Dataset, Domain
from dpgm.constraints import Forbidden, check_forbidden
from dpgm.errors import DomainError
from dpgm.estimation import estimate
from dpgm.measurement import Measurement


def ipf_on_support(allowed: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """The max-entropy table with these row and column sums, zero outside ``allowed``."""
    table = allowed.astype(float)
    for _ in range(5000):
        table *= (rows / table.sum(axis=1))[:, None]
        table *= (cols / table.sum(axis=0))[None, :]
    return table


def test_the_estimate_is_the_max_entropy_table_on_the_allowed_cells():
    domain = Domain(["a", "b"], [3, 4])
    mask = np.zeros((3, 4), dtype=bool)
    mask[0, 1:] = True  # a = 0 only with b = 0
    mask[2, 0] = True
    zeros = [Forbidden(("a", "b"), mask)]
    rows, cols = np.array([10.0, 50.0, 40.0]), np.array([30.0, 20.0, 25.0, 25.0])
    measurements = [Measurement(("a",), rows, 1.0), Measurement(("b",), cols, 1.0)]
    model = estimate(domain, measurements, zeros=zeros, iters=3000, total=100.0)
    fitted = model.marginal(["a", "b"])
    assert (fitted[mask] == 0).all()
    expected = ipf_on_support(~mask, rows, cols)
    np.testing.assert_allclose(fitted, expected, atol=1e-3)


def test_zeros_inside_a_larger_clique_and_sampling_never_draws_them():
    domain = Domain(["a", "b", "c"], [2, 3, 2])
    rng = np.random.default_rng(0)
    records = rng.integers(0, [2, 3, 2], size=(2000, 3))
    records = records[~((records[:, 0] == 1) & (records[:, 2] == 0))]
    data = Dataset(records, domain)
    measurements = [Measurement(("a", "b"), data.marginal(["a", "b"]), 1.0),
                    Measurement(("b", "c"), data.marginal(["b", "c"]), 1.0)]
    zeros = [Forbidden.pattern(domain, {"a": [1], "c": [0]})]
    model = estimate(domain, measurements, zeros=zeros, iters=200)
    assert model.marginal(["a", "c"])[1, 0] == 0.0
    for method in ("exact", "rounded"):
        sample = model.sample(5000, rng=1, method=method).records
        assert not ((sample[:, 0] == 1) & (sample[:, 2] == 0)).any()


def test_forbidding_everything_is_refused():
    domain = Domain(["a", "b"], [2, 2])
    with pytest.raises(DomainError, match="every record"):
        check_forbidden(domain, [Forbidden.pattern(domain, {"a": [0, 1]})])
    with pytest.raises(DomainError, match="shape"):
        check_forbidden(domain, [Forbidden(("a", "b"), np.zeros((2, 3), bool))])


def test_the_fast_marginals_agree_with_log_space_where_cells_are_forbidden():
    from dpgm.inference.belief_propagation import LINEAR_RANGE, MessagePlan
    from dpgm.inference.junction_tree import JunctionTree

    domain = Domain(["a", "b", "c"], [3, 3, 3])
    tree = JunctionTree.build(domain, [("a", "b"), ("b", "c")])
    plan = MessagePlan(tree)
    rng = np.random.default_rng(0)
    for spread in (1.0, 2 * LINEAR_RANGE):  # the linear path, and the log-space fallback
        tables = [rng.normal(size=s) * spread for s in plan.shapes]
        tables[0][0, 1] = -np.inf
        tables[0][:, 2] = -np.inf  # b = 2 forbidden: a message with a -inf cell
        tables[1][1, :] = -np.inf  # b = 1 too, from the other side
        with np.errstate(invalid="raise"):  # no -inf - -inf anywhere
            fast, log_z = plan.marginals(plan.pack(tables), 10.0)
        slow = plan.calibrate(tables, "sum")
        expected = plan.pack([np.exp(b - slow.log_partition) * 10.0 for b in slow.log_beliefs])
        np.testing.assert_allclose(fast, expected, rtol=1e-9, atol=1e-12)
        assert log_z == pytest.approx(slow.log_partition)
        assert fast[plan.pack([t == -np.inf for t in tables]).astype(bool)].max() == 0.0
