"""Mechanisms that measure numbers at two resolutions (issue 26, item 2): AIM and MST on a
schema with "refine", what they measure, what they return, and a model file of it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpgm
from dpgm.errors import DomainError
from dpgm.mechanisms import AIM, MST, MWEM
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
    with pytest.raises(DomainError, match="holds no whole number"):
        Schema.from_json({"columns": {"a": {"kind": "numeric", "lower": 0, "upper": 10,
                                            "bins": 5, "integer": True, "refine": 4}}})


@pytest.mark.parametrize("mechanism", [AIM, MST])
def test_refined_columns_are_measured_at_two_resolutions(table, mechanism):
    schema = Schema.from_json(SPEC)
    fitter = mechanism(1.0)
    model = fitter.fit(table, rng=0, schema=schema)
    assert isinstance(model, RefinedModel) and model.domain == schema.domain
    split = fitter.model.domain if mechanism is AIM else model.split.domain
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


@pytest.mark.parametrize("mechanism", [AIM, MST])
def test_a_refined_attribute_is_measured_on_its_own_at_the_fine_level(table, mechanism):
    """Its 'one-way' is the pair of its bin and place (sensitivity 1, like any marginal);
    its place is never measured alone, and pairs with other columns use the bins."""
    fitter = mechanism(1.0)
    fitter.fit(table, rng=0, schema=Schema.from_json(SPEC))
    cliques = [m.clique for m in fitter.measurements]
    fine = FINE.format("income")
    assert ("income", fine) in cliques and (fine,) not in cliques
    assert all(c == ("income", fine) or fine not in c for c in cliques)


def test_learnt_bins_leave_room_for_the_sub_bins_asked_for():
    from dpgm.discover import discover, numeric_questions

    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"v": np.round(rng.normal(5, 0.05, 5000), 2)})
    spec = {"columns": {"v": {"kind": "numeric", "lower": 0, "upper": 10, "bins": None,
                              "decimals": 2, "refine": 8}}}
    schema, _ = discover(frame, spec, epsilon=5.0, rng=0)  # dense data, narrow leaves
    assert np.diff(schema.columns["v"].coarse_edges).min() >= 8 * 0.01 * (1 - 1e-9)
    narrow = {"columns": {"v": {"kind": "numeric", "lower": 0, "upper": 3, "bins": None,
                                "integer": True, "refine": 8}}}
    with pytest.raises(DomainError, match="narrower than 8 sub-bins"):
        numeric_questions(narrow)  # public bounds: refused before any data are read
