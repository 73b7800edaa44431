"""The public schema: columns, encode / decode round trips, clear errors, the file format."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from schema_helpers import SPEC, block_import, raw_table

from dpgm import Dataset
from dpgm.errors import DataError, DataWarning, DomainError
from dpgm.schema import Categorical, Datetime, Numeric, Schema
from dpgm.schema.columns import column_from_json


@pytest.fixture
def schema() -> Schema:
    return Schema.from_json(SPEC)


def test_the_domain_is_the_integer_view_with_labels(schema):
    domain = schema.domain
    assert domain.shape == (3, 3, 10, 4, 2, 3, 14)
    assert domain.labels["sex"] == ("F", "M", None)
    assert domain.labels["job"] == ("clerk", "nurse", "other")
    assert domain.labels["age"][0] == "0-9" and domain.labels["age"][-1] == "90-100"
    assert domain.labels["paid"][:3] == ("[0, 1000)", "[1000, 5000)", "[5000, 20000]")
    assert domain.code("sex", "M") == 1 and domain.label("job", 2) == "other"


def test_decode_of_encode_gives_labels_exactly_and_numbers_inside_their_bins(schema):
    frame = raw_table()
    data = schema.encode(frame)
    back = schema.decode(data, rng=1)
    assert list(back.columns) == list(frame.columns)
    for name in ("job",):
        expected = frame[name].where(frame[name] != "pilot", "other")
        assert back[name].tolist() == expected.tolist()
    assert back["sex"].isna().tolist() == frame["sex"].isna().tolist()
    assert back["sex"].dropna().tolist() == frame["sex"].dropna().tolist()
    assert back["ok"].tolist() == frame["ok"].tolist()
    assert back["grade"].tolist() == frame["grade"].tolist()
    for name in ("age", "paid", "seen"):
        assert back[name].isna().tolist() == frame[name].isna().tolist()
    # numbers and dates come back inside the bin they were coded to
    assert (schema.encode(back).records == data.records).all()
    assert back["age"].dtype == np.int64 and back["ok"].dtype == bool
    assert back["grade"].dtype == np.int64 and back["paid"].dtype == np.float64
    assert str(back["seen"].dtype).startswith("datetime64")


def test_encode_of_decode_gives_identical_codes(schema):
    rng = np.random.default_rng(3)
    records = np.column_stack([rng.integers(0, s, 500) for s in schema.domain.shape])
    data = Dataset(records, schema.domain)
    for seed in range(3):
        assert (schema.encode(schema.decode(data, rng=seed)).records == records).all()


def test_decoding_is_reproducible_from_a_seed(schema):
    data = schema.encode(raw_table())
    pd.testing.assert_frame_equal(schema.decode(data, rng=5), schema.decode(data, rng=5))
    assert not schema.decode(data, rng=5).equals(schema.decode(data, rng=6))


def test_values_outside_the_bounds_are_clipped(schema):
    frame = raw_table(4)
    frame["age"] = [-5, 150, 100, 0]
    codes = schema.encode(frame).records[:, 2]
    assert codes.tolist() == [0, 9, 9, 0]


def test_a_label_not_in_the_schema_names_column_value_and_row(schema):
    frame = raw_table(5)
    frame.loc[3, "sex"] = "X"
    with pytest.raises(DataError, match=r"column 'sex' has the value 'X' at row 3.*\"other\""):
        schema.encode(frame)


def test_a_missing_value_in_a_column_that_is_not_nullable(schema):
    frame = raw_table(5)
    frame.loc[2, "age"] = np.nan
    with pytest.raises(DataError, match=r"'age' has a missing value .* at row 2.*nullable"):
        schema.encode(frame)


def test_a_non_numeric_value_in_a_numeric_column(schema):
    frame = raw_table(5).astype({"age": object})
    frame.loc[1, "age"] = "old"
    with pytest.raises(DataError, match=r"'age' has a non-numeric value 'old' at row 1"):
        schema.encode(frame)


def test_strings_and_category_dtype_and_empty_strings_are_read():
    schema = Schema([Categorical("c", ["a", "b"], nullable=True), Categorical("n", [1, 2])])
    frame = pd.DataFrame(
        {"c": pd.Categorical(["a", "b", None]), "n": ["1", "2", "2"]}  # numbers read as text
    )
    assert schema.encode(frame).records.tolist() == [[0, 0], [1, 1], [2, 1]]
    frame = pd.DataFrame({"c": ["a", "", "  "], "n": [1.0, 2.0, 1.0]})
    assert schema.encode(frame).records[:, 0].tolist() == [0, 2, 2]


def test_missing_and_unused_columns(schema):
    with pytest.raises(DataError, match="no column"):
        schema.encode(raw_table().drop(columns=["age"]))
    with pytest.warns(DataWarning, match="ignored"):
        schema.encode(raw_table().assign(extra=1))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"kind": "numeric", "lower": 5, "upper": 1}, "below upper"),
        ({"kind": "numeric", "lower": 0}, "public bounds"),
        ({"kind": "numeric", "lower": 0, "upper": 3, "bins": 10, "integer": True}, "no whole"),
        ({"kind": "categorical", "labels": ["a", "a"]}, "twice"),
        ({"kind": "categorical", "labels": None}, "has no labels"),
        ({"kind": "categorical", "labels": "abc"}, "labels must be a list"),
        ({"kind": "categorical", "labels": ["a", None]}, "nullable"),
        ({"kind": "colour"}, "kind must be one of"),
        ({"kind": "datetime", "lower": "2020", "upper": "2019", "width": "1D"}, "lower < upper"),
        ({"kind": "numeric", "lower": 0, "upper": 1, "colour": 2}, "colour"),
    ],
)
def test_bad_columns_fail_clearly(spec, message):
    with pytest.raises(DomainError, match=message):
        Schema.from_json({"columns": {"x": spec}})


def test_constraints_become_forbidden_cells(schema):
    (forbidden,) = schema.forbidden
    assert forbidden.attrs == ("sex", "job")
    assert forbidden.mask.tolist() == [[False, True, True], [False] * 3, [False] * 3]
    with pytest.raises(DomainError, match="every record"):
        Schema([Categorical("a", ["x", "y"])], [{"a": ["x", "y"]}])
    with pytest.raises(DomainError, match="no column"):
        Schema([Categorical("a", ["x", "y"])], [{"b": ["x"]}])
    with pytest.raises(DomainError, match="not a label"):
        Schema([Categorical("a", ["x", "y"])], [{"a": ["z"]}])


def test_numbers_in_constraints_name_their_bins():
    schema = Schema(
        [Numeric("age", 0, 100, 10, integer=True), Categorical("retired", [False, True])],
        [{"age": {"not": [70, 80, 90]}, "retired": [True]}],
    )
    mask = schema.forbidden[0].mask
    assert mask[:, 1].tolist() == [True] * 7 + [False] * 3 and not mask[:, 0].any()


def test_save_and_load_round_trip(schema, tmp_path):
    path = tmp_path / "schema.json"
    schema.save(path)
    assert Schema.load(path) == schema
    assert json.loads(path.read_text())["columns"]["age"]["lower"] == 0  # not 0.0
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(DomainError, match="not valid JSON"):
        Schema.load(tmp_path / "bad.json")


def test_datetime_decode_floors_to_days_inside_the_bin():
    column = Datetime("d", "2020-01-01", "2020-12-31", "7D")
    values = pd.Series(pd.to_datetime(["2020-01-03", "2020-06-15", "2019-01-01"]))
    codes = column.encode(values)
    back = column.decode(codes, np.random.default_rng(0))
    assert (back == back.dt.floor("D")).all()
    assert (column.encode(back) == codes).all()
    assert codes[2] == 0  # clipped to the first bin


def test_dates_between_edges_of_their_own_are_cut_on_whole_days():
    column = Datetime("d", bins=["2020-01-01", "2020-01-20", "2020-03-01"], refine=3)
    day = pd.Timedelta("1D").value
    # 19 days in three sub-bins of 6, 6 and 7 whole days; 41 days in 13, 14 and 14
    assert list(np.diff(column.edges) // day) == [6, 6, 7, 13, 14, 14]
    assert column.size == 6 and len(column.coarse_edges) == 3 and column.width is None
    assert column.values_labels[:2] == ("2020-01-01", "2020-01-07")
    assert column_from_json("d", column.to_json()) == column  # the edges, not a width
    assert column.to_json()["bins"] == ["2020-01-01", "2020-01-20", "2020-03-01"]
    codes = np.repeat(np.arange(6), 100)
    back = column.decode(codes, np.random.default_rng(0))
    assert (back == back.dt.floor("D")).all() and (column.encode(back) == codes).all()
    for bad, needle in [
        (dict(bins=["2020-01-01", "2020-01-03"], refine=3), "fewer than 3 steps"),
        (dict(bins=["2020-01-01", "2020-01-03"], width="1D"), "not both"),
        (dict(bins=["2020-01-05", "2020-01-03"]), "increasing"),
        (dict(bins=["2020-01-01", "2020-01-03"], lower="2019-01-01"), "lower differs"),
        (dict(bins="2020-01-01"), "list of at least two dates"),
    ]:
        with pytest.raises(DomainError, match=needle):
            Datetime("d", **bad)


def test_a_field_of_another_kind_is_named_in_the_error():
    with pytest.raises(DomainError, match="column 'c' \\(categorical\\) has no field 'bins'"):
        column_from_json("c", {"kind": "categorical", "labels": ["a"], "bins": 8})
    # a null there is a draft's field left unfilled: ignored
    assert column_from_json("c", {"kind": "categorical", "labels": ["a"], "bins": None})


def test_decimals_round_decoded_numbers_inside_their_bins():
    column = Numeric("x", 0, 1, 10, decimals=1)
    codes = np.repeat(np.arange(10), 200)
    values = column.decode(codes, np.random.default_rng(0))
    assert (values == values.round(1)).all()
    assert (column.encode(values) == codes).all()
    with pytest.raises(DomainError, match="narrower"):
        Numeric("x", 0, 1, 20, decimals=1)


def test_models_and_records_speak_in_labels(schema):
    from dpgm.estimation import estimate
    from dpgm.privacy import measure_marginals

    data = schema.encode(raw_table(300))
    assert data.to_pandas(labels=True)["job"].iloc[0] in ("clerk", "nurse", "other")
    assert data.to_pandas()["job"].dtype.kind == "i"
    measured = measure_marginals(data, [("sex", "job")], rho=1.0, rng=0)
    model = estimate(data.domain, measured, iters=50)
    table = model.marginal_table(["job", "sex"])
    assert list(table.index.names) == ["job", "sex"]
    assert ("nurse", "M") in table.index and table.sum() == pytest.approx(model.total)
    sample = model.sample(200, rng=0, given={"sex": "F"})
    assert (sample.to_pandas(labels=True)["sex"] == "F").all()


def test_yaml_needs_pyyaml_and_says_so(tmp_path, monkeypatch):
    path = tmp_path / "schema.yaml"
    path.write_text("columns:\n  a: {kind: categorical, labels: [x, y]}\n")
    try:
        import yaml  # noqa: F401

        assert Schema.load(path).domain.labels["a"] == ("x", "y")
    except ImportError:
        pass
    block_import(monkeypatch, "yaml")
    with pytest.raises(DomainError, match="needs PyYAML"):
        Schema.load(path)


def test_close_numeric_edges_get_labels_that_tell_them_apart():
    """Learnt edges cut into sub-bins can lie closer than six significant digits show:
    the labels take as many digits as they need (a repeated label would be refused)."""
    spec = {"columns": {"v": {"kind": "numeric", "lower": 3, "upper": 4,
                              "bins": [3, 3.25810, 3.25813, 4], "refine": 8}}}
    schema = Schema.from_json(spec)
    labels = schema.domain.labels["v"]
    assert len(set(labels)) == len(labels) == 24
    assert Schema.from_json({"columns": {"w": {"kind": "numeric", "lower": 0, "upper": 1,
                                               "bins": 4}}}).domain.labels["w"][0] == "[0, 0.25)"


def test_a_grid_value_decodes_into_the_cell_the_encoder_gives_it():
    # an edge a hair above a grid value (0.30000000000000004 over 0.3) leaves the value in
    # the bin below, as the encoder reads it; a whole-number edge off the grid likewise
    for bins, fields in [([0, 0.30000000000000004, 0.6], {"decimals": 1}),
                         ([0, 2.0000000000000004, 5], {"integer": True}),
                         ([0.5, 2.5], {"integer": True, "refine": 4})]:
        column = Numeric("x", bins=bins, **fields)
        codes = np.repeat(np.arange(column.size), 40)
        values = column.decode(codes, np.random.default_rng(0))
        coarse = codes // column.refine
        back = column.encode(values) // column.refine
        np.testing.assert_array_equal(back, coarse)
        assert len(set(column.values_labels)) == column.size  # hollow sub-bins named apart
