"""Drafts read no value; discovery charges its budget and fills what the draft left."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpgm.discover import discover, questions
from dpgm.errors import BudgetExceededError, DomainError
from dpgm.privacy.budget import PrivacyBudget
from dpgm.privacy.discovery import private_labels, selection_threshold
from dpgm.schema import Schema
from dpgm.schema.draft import LEARNT_BINS, LEARNT_REFINE, draft


def test_a_csv_draft_depends_on_the_header_alone(tmp_path):
    one, two = tmp_path / "one.csv", tmp_path / "two.csv"
    one.write_text("a,b,c\n1,x,2020-01-01\n2,y,2020-02-01\n")
    two.write_text("a,b,c\nq,3.5,\n\x00\x01 not even csv\n")  # values that would change any guess
    assert draft(one) == draft(two)
    assert list(draft(one)["columns"]) == ["a", "b", "c"]
    assert all(c["kind"] is None for c in draft(one)["columns"].values())


class Untouchable(pd.DataFrame):
    """A DataFrame whose values may not be read: only its columns and dtypes."""

    def __getitem__(self, key):
        raise AssertionError("the draft read a value")

    @property
    def values(self):
        raise AssertionError("the draft read a value")


def test_a_dataframe_draft_depends_on_dtypes_alone():
    frame = pd.DataFrame(
        {
            "n": [1, 2],
            "x": [0.5, 1.5],
            "s": ["a", "b"],
            "b": [True, False],
            "d": pd.to_datetime(["2020-01-01", "2021-01-01"]),
        }
    )
    spec = draft(Untouchable(frame))
    other = draft(pd.DataFrame({c: frame[c].iloc[::-1].to_numpy() for c in frame}))
    assert spec == other
    columns = spec["columns"]
    assert columns["n"] == {
        "kind": "numeric", "lower": None, "upper": None, "bins": None, "integer": True,
        "decimals": None, "refine": None, "nullable": True,
    }
    # every optional field of the kind is listed, null where it is to be filled
    assert columns["x"]["integer"] is None and columns["x"]["decimals"] is None
    assert columns["s"]["other"] is None and columns["s"]["dtype"] is None
    # a date's bins are learnt where both bins and width stay null
    assert columns["d"]["format"] is None and columns["d"]["width"] is None
    assert columns["d"]["bins"] is None and columns["d"]["refine"] is None
    assert columns["s"]["kind"] == "categorical" and columns["s"]["labels"] is None
    assert columns["b"]["labels"] == [False, True]  # public: the values of a boolean
    assert columns["d"]["kind"] == "datetime"


def test_questions_are_decided_from_the_draft_before_any_data():
    spec = draft(pd.DataFrame({"n": [1], "s": ["a"]}))
    assert questions(spec) == [("n", "range"), ("n", "edges"), ("s", "labels")]
    spec["columns"]["n"]["integer"] = None
    assert questions(spec) == [("n", "range"), ("n", "precision"), ("n", "edges"),
                               ("s", "labels")]
    with pytest.raises(DomainError, match="no kind"):
        questions({"columns": {"a": {"kind": None}}})


def penguin_like(n: int = 4000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "species": rng.choice(["Adelie", "Gentoo", "Chinstrap"], n),
            "mass": rng.normal(4000, 500, n).round(),
            "day": pd.Timestamp("2008-01-01") + pd.to_timedelta(rng.integers(0, 700, n), "D"),
        }
    )
    frame.loc[::10, "species"] = None
    return frame


def test_discovery_fills_the_draft_and_charges_the_ledger():
    frame = penguin_like()
    spec = draft(frame)
    schema, budget = discover(frame, spec, epsilon=2.0, delta=1e-6, rng=0)
    assert isinstance(schema, Schema)
    assert budget.spent_epsilon_delta() == pytest.approx((2.0, 1e-6))
    assert [e.label for e in budget.ledger] == [
        "labels of species", "range of mass", "precision of mass", "edges of mass",
        "range of day", "edges of day",
    ]
    assert schema.columns["species"].given == ("Adelie", "Chinstrap", "Gentoo")
    assert schema.columns["species"].other == "other"  # learnt labels: the rest is "other"
    mass = schema.columns["mass"]
    assert 1000 <= mass.lower <= 3000 and 5000 <= mass.upper <= 8000
    assert mass.integer  # the masses are whole numbers: learnt, charged
    assert np.all(np.diff(mass.coarse_edges) >= 1) and len(mass.coarse_edges) - 1 <= LEARNT_BINS
    # as many sub-bins as the widest bin holds whole numbers, at most LEARNT_REFINE
    assert mass.refine == min(LEARNT_REFINE, int(np.diff(mass.coarse_edges).max()) + 1)
    # the bins follow the data: narrower where the masses are dense
    edges = mass.coarse_edges
    widths = np.diff(edges)
    middle = (edges[:-1] > 3500) & (edges[1:] < 4500)
    assert widths[middle].mean() < 0.5 * widths[~middle].mean()
    day = schema.columns["day"]
    assert day.lower <= pd.Timestamp("2008-02-01") and day.upper >= pd.Timestamp("2009-10-01")
    # dates too: learnt edges on whole days, each bin cut into whole-day sub-bins
    assert day.width is None and len(day.coarse_edges) - 1 <= LEARNT_BINS
    assert not (day.edges % pd.Timedelta("1D").value).any()
    assert day.refine == min(LEARNT_REFINE, int(np.diff(day.coarse_edges).min()
                                                // pd.Timedelta("1D").value))
    schema.encode(frame)  # the discovered schema codes the table


def test_a_complete_schema_needs_no_data_and_spends_nothing():
    spec = {"columns": {"a": {"kind": "categorical", "labels": ["x"]}}}
    schema, budget = discover(None, spec, epsilon=1.0)
    assert budget.ledger == [] and schema.columns["a"].given == ("x",)


def test_a_bad_value_costs_nothing():
    frame = pd.DataFrame({"n": ["1", "two"], "s": ["a", "b"]})
    spec = {"columns": {"s": {"kind": "categorical"}, "n": {"kind": "numeric"}}}
    with pytest.raises(Exception, match="non-numeric"):
        discover(frame, spec, epsilon=1.0, rng=0)


@pytest.mark.filterwarnings("ignore::dpgm.errors.PrivacyWarning")
def test_partition_selection_releases_a_lone_value_with_probability_at_most_delta():
    """The δ of partition selection, checked on the event "the lone value is released"."""
    epsilon, delta, runs = 1.0, 0.05, 4000
    tau = selection_threshold(epsilon, delta)
    # discrete Laplace of scale 1/ε: P(Z >= m) = e^{-εm} / (1 + e^{-ε})
    exact = math.exp(-epsilon * (tau - 1)) / (1 + math.exp(-epsilon))
    assert exact <= delta
    released = 0
    for _ in range(runs):  # unseeded: OpenDP's discrete Laplace, the release path
        budget = PrivacyBudget.approximate(epsilon, delta)
        released += "z" in private_labels(["z"], epsilon, delta, budget)
    spread = 4 * math.sqrt(exact * (1 - exact) / runs)
    assert abs(released / runs - exact) < spread
    # power: a threshold one lower releases the lone value more often than δ allows,
    # and the observed rate rules that out
    off_by_one = math.exp(-epsilon * (tau - 2)) / (1 + math.exp(-epsilon))
    assert off_by_one > delta > released / runs + spread / 2


def test_discovery_refuses_a_spend_beyond_its_budget():
    budget = PrivacyBudget.approximate(1.0, 1e-6)
    private_labels(["a"], 1.0, 1e-6, budget, 0)
    with pytest.raises(BudgetExceededError):
        private_labels(["a"], 0.1, 1e-7, budget, 0)


def test_a_draft_invalid_whatever_is_learnt_fails_before_reading():
    spec = {"columns": {"s": {"kind": "categorical"}, "n": {"kind": "numeric", "bins": 0}}}
    with pytest.raises(DomainError, match="bins must be"):
        discover(object(), spec, epsilon=1.0)  # never touched


# -- issue 24: what discovery learnt is repaired as post-processing, never a failure after
# the spend (a re-run would spend again)
def test_a_found_label_named_other_renames_the_other_label():
    from dpgm.errors import SchemaNote

    frame = pd.DataFrame({"s": ["other"] * 300 + ["a"] * 300})
    spec = {"columns": {"s": {"kind": "categorical", "other": True}}}
    with pytest.warns(SchemaNote, match="labelled 'other \\(not listed\\)'"):
        schema, budget = discover(frame, spec, epsilon=1.0, rng=0)
    column = schema.columns["s"]
    assert column.given == ("a", "other") and column.other == "other (not listed)"
    assert budget.spent_epsilon_delta()[0] == pytest.approx(1.0)


def test_a_range_narrower_than_its_decimals_is_widened():
    from dpgm.errors import SchemaNote

    frame = pd.DataFrame({"x": np.linspace(0.1, 0.4, 600)})
    spec = {"columns": {"x": {"kind": "numeric", "bins": 10, "decimals": 0}}}
    with pytest.warns(SchemaNote, match="widened"):
        schema, _ = discover(frame, spec, epsilon=1.0, rng=0)
    column = schema.columns["x"]
    assert column.upper - column.lower == pytest.approx(10)


def test_a_constraint_on_a_label_not_found_is_dropped_with_a_note():
    from dpgm.errors import SchemaNote

    frame = pd.DataFrame({"s": ["a"] * 300 + ["b"] * 300, "t": ["y"] * 600})
    spec = {"columns": {"s": {"kind": "categorical"}, "t": {"kind": "categorical"}},
            "constraints": [{"s": ["a"], "t": ["y"]}, {"s": ["rare"], "t": ["y"]}]}
    with pytest.warns(SchemaNote, match="dropped"):
        schema, _ = discover(frame, spec, epsilon=1.0, rng=0)
    assert schema.constraints == [{"s": ["a"], "t": ["y"]}]


def test_a_constraint_naming_no_column_fails_before_reading():
    spec = {"columns": {"s": {"kind": "categorical"}}, "constraints": [{"z": ["a"]}]}
    with pytest.raises(DomainError, match="names no column 'z'"):
        discover(object(), spec, epsilon=1.0)  # never touched


def test_bounds_that_fell_back_to_one_bin_say_so():
    from dpgm.errors import SchemaNote

    frame = pd.DataFrame({"x": [5.0] * 3})  # too few records to rise above the noise
    spec = {"columns": {"x": {"kind": "numeric", "bins": 2}}}
    with pytest.warns(SchemaNote, match="fell back|largest noisy count"):
        discover(frame, spec, epsilon=0.1, rng=1)


@pytest.mark.filterwarnings("ignore::dpgm.errors.SchemaNote")
def test_a_precision_learnt_too_coarse_for_the_bins_asked_costs_fewer_bins_not_the_run():
    rng = np.random.default_rng(0)
    # whole numbers 0..5 in ten public bins: some bins would hold no whole number
    frame = pd.DataFrame({"x": rng.integers(0, 6, 2000),
                          "y": np.round(rng.uniform(0, 1, 2000), 1)})
    spec = {"columns": {
        "x": {"kind": "numeric", "lower": 0, "upper": 5, "bins": 10, "integer": None,
              "decimals": None},
        "y": {"kind": "numeric", "lower": 0, "upper": 1, "bins": 20, "integer": None,
              "decimals": None}}}
    schema, budget = discover(frame, spec, epsilon=1.0, rng=0)  # spent, and written
    assert [e.label for e in budget.ledger] == ["precision of x", "precision of y"]
    assert schema.columns["x"].integer and schema.columns["x"].size == 6
    assert schema.columns["y"].decimals == 1 and schema.columns["y"].size == 10
