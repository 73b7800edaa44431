"""Numbers at two resolutions (issue 26, item 2): the split domain's algebra, counting on
it, and a refined model answering on the fine domain exactly as its split model does."""

from __future__ import annotations

import numpy as np
import pytest

from dpgm import Dataset, Domain, MarkovRandomField
from dpgm.models.refinement import FINE, RefinedCounts, RefinedModel, Refinement

# x: 4 bins of 3 sub-bins and a missing code (13 values); z: 2 bins of 4
DOMAIN = Domain(["x", "s", "z"], [13, 3, 8])
REFINEMENT = Refinement(DOMAIN, {"x": 3, "z": 4})


def records(n: int = 3000, seed: int = 0) -> Dataset:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 13, n)
    return Dataset(np.column_stack([x, (x + rng.integers(0, 2, n)) % 3, rng.integers(0, 8, n)]),
                   DOMAIN)


def test_the_split_domain_and_codes_round_trip():
    split = REFINEMENT.split
    assert split.attrs == ("x", FINE.format("x"), "s", "z", FINE.format("z"))
    assert split.shape == (5, 3, 3, 2, 4)  # x: 4 bins and the missing code
    data = records()
    digits = REFINEMENT.split_codes(data.records)
    np.testing.assert_array_equal(REFINEMENT.join_codes(digits), data.records)
    missing = data.records[:, 0] == 12
    assert (digits[missing, 0] == 4).all() and (digits[missing, 1] == 0).all()


@pytest.mark.parametrize("clique", [("x",), ("x", FINE.format("x")), (FINE.format("x"), "s"),
                                    ("z", "x"), ("s", FINE.format("z"), "x", FINE.format("x"))])
def test_counts_on_the_split_domain_agree_on_both_paths(clique):
    """Records split once and a counting source split table by table give one marginal."""
    data = records()
    in_memory = REFINEMENT.apply(data)
    counted = RefinedCounts(data, REFINEMENT)
    np.testing.assert_array_equal(in_memory.marginal(clique), counted.marginal(clique))


def test_joined_undoes_divided_and_sums_are_kept():
    table = records().marginal(["s", "x", "z"])
    split = REFINEMENT.divided(["s", "x", "z"], table)
    assert split.shape == (3, 5, 3, 2, 4) and split.sum() == table.sum()
    np.testing.assert_array_equal(REFINEMENT.joined(["s", "x", "z"], split), table)


def model() -> RefinedModel:
    split = REFINEMENT.split
    rng = np.random.default_rng(1)
    cliques = [("x", FINE.format("x")), ("x", "s"), ("s", "z"), ("z", FINE.format("z"))]
    potentials = {c: rng.normal(size=split.project(c).shape) for c in cliques}
    return RefinedModel(REFINEMENT, MarkovRandomField(split, potentials, 500.0))


def brute_joint(refined: RefinedModel) -> np.ndarray:
    """The whole fine joint, from the split model's whole joint (small domains only)."""
    split = refined.split
    joint = split.marginal(list(split.domain.attrs))
    return REFINEMENT.joined(list(DOMAIN.attrs), joint)


def test_a_refined_model_answers_on_the_fine_domain_as_brute_force():
    refined = model()
    joint = brute_joint(refined)
    np.testing.assert_allclose(refined.marginal(["x"]), joint.sum(axis=(1, 2)), rtol=1e-10)
    np.testing.assert_allclose(refined.marginal(["z", "x"]), joint.sum(axis=1).T, rtol=1e-10)
    given = refined.marginal(["s"], given={"x": [4, 7]})  # codes: no labels here
    expected = joint[[4, 7]].sum(axis=(0, 2))
    np.testing.assert_allclose(given, expected * 500.0 / expected.sum(), rtol=1e-10)


def test_sampling_given_a_fine_value_is_exact_and_joins_the_digits():
    refined = model()
    rows = refined.synthetic_data(400, rng=0, given={"x": 5})
    assert (rows.records[:, 0] == 5).all()
    rows = refined.synthetic_data(2000, rng=1)
    assert rows.records[:, 0].max() <= 12 and rows.domain == DOMAIN
    with pytest.raises(Exception, match="pair every bin"):
        refined.synthetic_data(10, rng=0, given={"x": [0, 4]})  # bins 0 and 1, places 0, 1
