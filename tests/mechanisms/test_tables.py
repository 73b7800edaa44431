"""TableModel: marginals and samples from the original estimators' tables."""

import numpy as np
import pytest

from dpgm import Domain
from dpgm.errors import DpgmError
from dpgm.models.tables import TableModel

DOMAIN = Domain.from_dict({"a": 2, "b": 3, "c": 2, "d": 4})
RNG = np.random.default_rng(0)


def test_independent_tables_multiply_and_leave_the_rest_uniform():
    ab = RNG.random((2, 3))
    ab *= 100 / ab.sum()
    c = np.array([30.0, 70.0])
    model = TableModel(DOMAIN, {("a", "b"): ab, ("c",): c}, 100.0, independent=True)
    joint = ab[:, :, None, None] * c[None, None, :, None] / 100 * np.full(4, 0.25)
    assert np.allclose(model.marginal(("d", "b", "c")), joint.sum(axis=0).transpose(2, 0, 1))
    assert np.allclose(model.marginal(("b", "a")), ab.T)
    sample = model.synthetic_data(20000, rng=1)
    assert np.allclose(sample.marginal(("a", "b")) / 20000, ab / 100, atol=0.02)


def test_local_tables_answer_only_inside_a_clique():
    model = TableModel(DOMAIN, {("a", "b"): np.ones((2, 3)), ("b", "c"): np.ones((3, 2))}, 6.0)
    assert np.allclose(model.marginal(("b",)), 2.0)
    with pytest.raises(DpgmError, match="not inside one"):
        model.marginal(("a", "c"))
    with pytest.raises(DpgmError, match="cannot be sampled"):
        model.synthetic_data(5)


def test_overlapping_independent_tables_are_refused():
    with pytest.raises(DpgmError, match="disjoint"):
        TableModel(DOMAIN, {("a", "b"): np.ones((2, 3)), ("b",): np.ones(3)}, 6, True)


def test_one_full_table_is_sampled_like_a_distribution():
    joint = RNG.random(DOMAIN.shape)
    joint *= 1000 / joint.sum()
    joint[0, 0, 0, 0] = -5.0  # least squares may go negative: such cells are never drawn
    model = TableModel(DOMAIN, {DOMAIN.attrs: joint}, 1000.0)
    sample = model.synthetic_data(40000, rng=2)
    assert sample.marginal(DOMAIN.attrs)[0, 0, 0, 0] == 0
    expected = np.clip(joint, 0, None).sum(axis=(0, 1))
    assert np.allclose(sample.marginal(("c", "d")) / 40000, expected / expected.sum(), atol=0.02)


def test_independent_tables_are_sampled_from_their_product_by_the_one_row_sampler():
    """Chi-square on the joint of a table, a second table and an attribute in none (uniform);
    the same test rejects a sample of a changed table (power)."""
    from brute_force import chi_square_pvalue

    ab = np.array([[30.0, 10.0, 0.0], [20.0, 25.0, 15.0]])
    c = np.array([70.0, 30.0])
    model = TableModel(DOMAIN, {("a", "b"): ab, ("c",): c}, 100.0, independent=True)
    expected = (ab[:, :, None, None] / 100) * (c[None, None, :, None] / 100) \
        * np.full((1, 1, 1, 4), 0.25)  # d in no table: uniform
    sample = model.synthetic_data(20000, rng=4)
    counts = sample.marginal(DOMAIN.attrs)
    assert counts[0, 2].sum() == 0  # a cell of no mass is never drawn
    assert chi_square_pvalue(counts, expected) > 1e-3
    changed = TableModel(DOMAIN, {("a", "b"): ab[::-1], ("c",): c}, 100.0, independent=True)
    assert chi_square_pvalue(changed.synthetic_data(20000, rng=4).marginal(DOMAIN.attrs),
                             expected) < 1e-6
