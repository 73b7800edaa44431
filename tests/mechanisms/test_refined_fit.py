"""Mechanisms that measure numbers at two resolutions (issue 26, item 2): AIM and MST on a
schema with "refine", what they measure, what they return, and a model file of it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpgm
from dpgm.errors import DomainError
from dpgm.mechanisms import AIM, MST, MWEM, AIMResidual
from dpgm.models.refinement import FINE, RefinedModel
from dpgm.schema import Schema

SPEC = {"columns": {
    "income": {"kind": "numeric", "lower": 0, "upper": 200_000,
               "bins": [0, 20_000, 40_000, 60_000, 100_000, 200_000], "decimals": 2,
               "refine": 8, "nullable": True},
    "age": {"kind": "numeric", "lower": 0, "upper": 100, "bins": 10, "integer": True},
    "job": {"kind": "categorical", "labels": ["a", "b", "c"]},
}}


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    n = 4000
    age = np.clip(rng.normal(45, 12, n), 18, 90).round()
    income = np.round(np.exp(rng.normal(10.3, 0.6, n) + 0.01 * (age - 45)), 2)
    income[::50] = np.nan
    return pd.DataFrame({"income": income, "age": age, "job": rng.choice(list("abc"), n)})


def test_the_schema_holds_fine_cells_and_writes_its_coarse_bins():
    schema = Schema.from_json(SPEC)
    assert schema.domain["income"] == 5 * 8 + 1  # fine cells and the missing code
    assert schema.refinements() == {"income": 8}
    assert schema.to_json()["columns"]["income"]["bins"] == SPEC["columns"]["income"]["bins"]
    assert Schema.from_json(schema.to_json()) == schema
    # sub-bins may be finer than whole numbers (they decode to a whole number of their
    # bin, and say in their label that they hold none); a bin may not
    fine = Schema.from_json({"columns": {"a": {"kind": "numeric", "lower": 0, "upper": 10,
                                               "bins": 5, "integer": True, "refine": 4}}})
    assert fine.columns["a"].values_labels[:4] == ("0", "[0.5, 1)", "1", "[1.5, 2)")
    with pytest.raises(DomainError, match="holds no whole number"):
        Schema.from_json({"columns": {"a": {"kind": "numeric", "bins": [0.2, 0.5, 2],
                                            "integer": True, "refine": 4}}})


@pytest.mark.parametrize("mechanism", [AIM, MST, AIMResidual])
def test_refined_columns_are_measured_at_two_resolutions(table, mechanism):
    schema = Schema.from_json(SPEC)
    fitter = mechanism(1.0)
    model = fitter.fit(table, rng=0, schema=schema)
    assert isinstance(model, RefinedModel) and model.domain == schema.domain
    split = fitter.model.domain if mechanism is not MST else model.split.domain
    assert split["income"] == 6 and split[FINE.format("income")] == 8
    assert fitter.budget.spent_epsilon_delta()[0] == pytest.approx(1.0)
    rows = model.synthetic_data(rng=1)
    values = rows["income"].dropna()
    assert values.between(0, 200_000).all() and (values == values.round(2)).all()
    assert rows["income"].isna().any()  # the missing code comes back as missing
    one_way = model.marginal(["income"])
    assert one_way.shape == (41,) and one_way.sum() == pytest.approx(model.total)


def test_aim_measures_the_fine_one_way_and_pairs_at_the_bins(table):
    fitter = AIM(2.0)
    workload = fitter.check(Schema.from_json(SPEC).domain, refine={"income": 8})
    cliques = set(workload.cliques)
    assert ("income", FINE.format("income")) in cliques
    assert ("income", "age") in cliques
    assert not any(FINE.format("income") in c and len(c) > 2 for c in cliques)


def test_refine_off_or_a_mechanism_at_one_resolution_fits_the_fine_cells(table):
    schema = Schema.from_json(SPEC)
    flat = AIM(1.0).fit(table, rng=0, schema=schema, refine={})
    assert not isinstance(flat, RefinedModel) and flat.domain == schema.domain
    mwem = MWEM(1.0, rounds=3).fit(table, rng=0, schema=schema)
    assert not isinstance(mwem, RefinedModel) and mwem.domain == schema.domain


def test_a_refined_model_round_trips_through_its_file(table, tmp_path):
    model = MST(1.0).fit(table, rng=0, schema=Schema.from_json(SPEC))
    model.save(tmp_path / "refined.dpgm")
    loaded = dpgm.load(tmp_path / "refined.dpgm")
    assert isinstance(loaded, RefinedModel)
    for attrs in (["income"], ["age", "income"], ["job"]):
        np.testing.assert_array_equal(loaded.marginal(attrs), model.marginal(attrs))
    pd.testing.assert_frame_equal(loaded.synthetic_data(50, rng=3, given={"job": "b"}),
                                  model.synthetic_data(50, rng=3, given={"job": "b"}))
    assert loaded.describe()["refined (sub-bins per bin)"] == {"income": 8}


@pytest.mark.parametrize("mechanism", [AIM, MST, AIMResidual])
def test_a_refined_attribute_is_measured_on_its_own_at_the_fine_level(table, mechanism):
    """Its 'one-way' is the pair of its bin and place (sensitivity 1, like any marginal);
    its place is never measured alone, and pairs with other columns use the bins."""
    fitter = mechanism(1.0)
    fitter.fit(table, rng=0, schema=Schema.from_json(SPEC))
    cliques = [m.clique for m in fitter.measurements]
    fine = FINE.format("income")
    assert ("income", fine) in cliques and (fine,) not in cliques
    assert all(c == ("income", fine) or fine not in c for c in cliques)


def test_learnt_bins_hold_a_value_of_their_grid_and_sub_bins_decode_into_their_bin():
    from dpgm.discover import discover, numeric_questions

    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"v": np.round(rng.normal(5, 0.05, 5000), 2)})
    spec = {"columns": {"v": {"kind": "numeric", "lower": 0, "upper": 10, "bins": None,
                              "decimals": 2, "refine": 8}}}
    schema, _ = discover(frame, spec, epsilon=5.0, rng=0)  # dense data, narrow leaves
    v = schema.columns["v"]
    assert np.diff(v.coarse_edges).min() >= 0.01 * (1 - 1e-9)
    assert np.diff(v.coarse_edges).min() < 8 * 0.01  # bins finer than their sub-bins
    codes = np.repeat(np.arange(v.size), 50)
    values = v.decode(codes, np.random.default_rng(0))
    assert (values == values.round(2)).all()  # on the grid, never invented digits
    # every cell decodes inside its bin: a sub-bin holding no value of the grid, to the
    # value of its bin below it
    bins = np.minimum(np.searchsorted(v.coarse_edges, values, side="right") - 1,
                      len(v.coarse_edges) - 2)
    np.testing.assert_array_equal(bins, codes // v.refine)
    narrow = {"columns": {"v": {"kind": "numeric", "lower": 0, "upper": 3, "bins": None,
                                "integer": True, "refine": 8}}}
    assert numeric_questions(narrow) == [("v", "edges")]  # four whole numbers, 8 sub-bins


def test_an_atom_learnt_gets_a_bin_of_its_own_and_comes_back_exactly():
    from dpgm.discover import discover

    rng = np.random.default_rng(5)
    n = 20_000  # half the records at exactly 0 (no claim, no visit), the rest spread
    values = np.where(rng.random(n) < 0.5, 0.0, np.round(rng.uniform(0, 5, n), 6))
    values[rng.random(n) < 0.2] = 3.258096  # and an atom inside the range
    table = pd.DataFrame({"v": values, "g": rng.choice(list("ab"), n)})
    spec = {"columns": {"v": {"kind": "numeric", "lower": 0, "upper": 5, "bins": None,
                              "decimals": 6},
                        "g": {"kind": "categorical", "labels": ["a", "b"]}}}
    schema = discover(table, spec, epsilon=1.0, rng=0)[0]
    v = schema.columns["v"]
    for atom in (0.0, 3.258096):  # a bin from the atom, at most two steps of the grid wide
        k = int(np.searchsorted(v.coarse_edges, atom, side="right") - 1)
        assert v.coarse_edges[k] == atom and v.coarse_edges[k + 1] <= atom + 2e-6 + 1e-12
    synthetic = MST(1.0).fit(table, rng=0, schema=schema).synthetic_data(rng=1)["v"]
    real_share = [(values == a).mean() for a in (0.0, 3.258096)]
    # drawn uniformly inside ten equal bins, no synthetic value would be exactly an atom
    assert [(synthetic == a).mean() for a in (0.0, 3.258096)] == pytest.approx(real_share,
                                                                               abs=0.03)
