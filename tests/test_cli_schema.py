"""The command line on raw tables: --schema in synth and evaluate, --given, dpgm schema."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from schema_helpers import SPEC, block_import, raw_table

from dpgm.cli import main
from dpgm.schema import Schema

pytestmark = pytest.mark.filterwarnings("ignore::dpgm.errors.DataWarning")


@pytest.fixture
def raw(tmp_path):
    frame = raw_table(400)
    frame.loc[frame["job"] == "pilot", "job"] = "clerk"  # keep "other" for the error test
    data = tmp_path / "raw.csv"
    frame.to_csv(data, index=False)
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SPEC))
    return data, schema


def test_a_raw_table_comes_back_with_its_columns_dtypes_and_labels(raw, tmp_path, capsys):
    data, schema = raw
    out = tmp_path / "synthetic.csv"
    args = ["synth", str(data), "--schema", str(schema), "--mechanism", "mst", "--epsilon", "2",
            "--out", str(out)]
    assert main([*args, "--seed", "0"]) == 0
    real, synthetic = pd.read_csv(data), pd.read_csv(out)
    assert list(synthetic.columns) == list(real.columns)
    assert dict(synthetic.dtypes) == dict(real.dtypes)
    for column in ("sex", "job", "ok", "grade"):
        assert set(synthetic[column].dropna()) <= set(real[column].dropna()) | {"other"}
    assert synthetic["sex"].isna().any()  # missing values come back as missing
    assert synthetic["age"].between(0, 100).all()
    assert "privacy spent: epsilon=2" in capsys.readouterr().out


def test_given_conditions_the_synthetic_table(raw, tmp_path):
    data, schema = raw
    out = tmp_path / "given.csv"
    args = ["synth", str(data), "--schema", str(schema), "--mechanism", "mst", "--epsilon", "2",
            "--out", str(out)]
    assert main([*args, "--seed", "0", "--given", "sex=M", "--given", "ok=True"]) == 0
    synthetic = pd.read_csv(out)
    assert (synthetic["sex"] == "M").all() and synthetic["ok"].all()


def test_a_value_outside_the_schema_is_one_clear_error(raw, tmp_path, capsys):
    data, schema = raw
    frame = pd.read_csv(data)
    frame.loc[7, "sex"] = "X"
    frame.to_csv(data, index=False)
    out = tmp_path / "synthetic.csv"
    args = ["synth", str(data), "--schema", str(schema), "--epsilon", "1", "--out", str(out)]
    assert main(args) == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("dpgm: error: column 'sex' has the value 'X' at row 7")
    assert not out.exists()


def test_bad_given_and_both_schema_and_domain_fail_before_reading(raw, tmp_path, capsys):
    data, schema = raw
    out = tmp_path / "synthetic.csv"
    base = ["synth", "missing.csv", "--schema", str(schema), "--epsilon", "1", "--out", str(out)]
    assert main([*base, "--given", "sex=X"]) == 2
    assert "not a label of column 'sex'" in capsys.readouterr().err
    assert main([*base, "--domain", str(schema)]) == 2
    assert "not both" in capsys.readouterr().err


def test_evaluate_reads_raw_tables_with_the_schema(raw, tmp_path, capsys):
    data, schema = raw
    assert main(["evaluate", str(data), str(data), "--schema", str(schema), "--ways", "1"]) == 0
    assert "mean TV error over all 1-way marginals: 0\n" in capsys.readouterr().out


def test_draft_then_discover(raw, tmp_path, capsys):
    data, _ = raw
    draft = tmp_path / "draft.json"
    assert main(["schema", "draft", str(data), "--out", str(draft)]) == 0
    assert "no value was read" in capsys.readouterr().err
    spec = json.loads(draft.read_text())
    assert list(spec["columns"]) == list(pd.read_csv(data).columns)
    out = tmp_path / "discovered.json"
    discover = ["schema", "discover", str(data), "--schema", str(draft), "--epsilon", "1"]
    assert main([*discover, "--out", str(out)]) == 2  # kinds are left to fill
    assert "has no kind" in capsys.readouterr().err and not out.exists()
    for name, column in spec["columns"].items():
        column["kind"] = "numeric" if name in ("age", "paid") else "categorical"
        if name == "seen":
            column.update(kind="datetime")
    draft.write_text(json.dumps(spec))
    assert main([*discover, "--out", str(out), "--delta", "1e-6", "--seed", "1"]) == 0
    printed = capsys.readouterr()
    # twelve questions, an equal share each: labels of sex, job, ok and grade; range,
    # precision and edges of age and paid; range and edges of seen
    assert "spent on labels of sex: epsilon=0.0833333" in printed.out
    assert "spent on edges of age: epsilon=0.0833333" in printed.out
    assert "spent on edges of seen: epsilon=0.0833333" in printed.out
    assert "privacy spent: epsilon=1 delta=1e-06 (basic composition)" in printed.out
    assert "values too rare to be released are coded 'other'" in printed.err
    learnt = json.loads(out.read_text())["columns"]
    assert learnt["seen"]["kind"] == "datetime" and learnt["sex"]["other"] is True
    assert isinstance(learnt["age"]["bins"], list)


def test_discover_may_replace_its_draft_as_the_readme_shows(raw, tmp_path, capsys):
    data, _ = raw
    schema = tmp_path / "patients-schema.json"
    assert main(["schema", "draft", str(data), "--out", str(schema)]) == 0
    spec = json.loads(schema.read_text())
    for name, column in spec["columns"].items():
        column["kind"] = "numeric" if name in ("age", "paid") else "categorical"
        if name == "seen":
            column.update(kind="datetime")
    schema.write_text(json.dumps(spec))
    discover = ["schema", "discover", str(data), "--schema", str(schema), "--epsilon", "1",
                "--out", str(schema), "--seed", "1"]
    assert main(discover) == 2  # exists: only with --force
    assert "--force" in capsys.readouterr().err
    assert json.loads(schema.read_text()) == spec  # the draft is untouched
    assert main([*discover, "--force"]) == 0
    assert Schema.load(schema).columns["age"].kind == "numeric"
    assert main(["schema", "discover", str(data), "--schema", str(schema), "--epsilon", "1",
                 "--out", str(data), "--force"]) == 2  # never over the data
    assert "one of the inputs" in capsys.readouterr().err


def test_parquet_without_pyarrow_is_refused_before_reading(raw, tmp_path, capsys, monkeypatch):
    data, schema = raw
    block_import(monkeypatch, "pyarrow")
    out = tmp_path / "synthetic.parquet"
    args = ["synth", "unread.csv", "--schema", str(schema), "--epsilon", "1", "--out", str(out)]
    assert main(args) == 2
    assert "Parquet needs pyarrow" in capsys.readouterr().err


def test_times_are_written_in_their_declared_format_and_read_back(tmp_path, capsys):
    """A schema's date format is how the synthetic file writes its dates too, so that
    evaluate (and any later run) reads it back by the same schema (issue 24)."""
    days = pd.date_range("2020-01-01", periods=300, freq="D")
    pd.DataFrame({"day": days.strftime("%d/%m/%Y"), "k": ["a", "b", "c"] * 100}).to_csv(
        tmp_path / "d.csv", index=False)
    spec = {"columns": {
        "day": {"kind": "datetime", "lower": "2020-01-01", "upper": "2021-01-01",
                "width": "30D", "format": "%d/%m/%Y"},
        "k": {"kind": "categorical", "labels": ["a", "b", "c"]}}}
    (tmp_path / "s.json").write_text(json.dumps(spec))
    out = tmp_path / "o.csv"
    assert main(["synth", str(tmp_path / "d.csv"), "--schema", str(tmp_path / "s.json"),
                 "--epsilon", "1", "--seed", "0", "--out", str(out)]) == 0
    written = pd.read_csv(out, dtype=str)["day"]
    assert written.str.fullmatch(r"\d{2}/\d{2}/2020").all()
    assert main(["evaluate", str(tmp_path / "d.csv"), str(out), "--schema",
                 str(tmp_path / "s.json"), "--ways", "1"]) == 0
    assert "mean TV error over all 1-way marginals" in capsys.readouterr().out


def test_a_short_row_is_named_as_such(tmp_path, capsys):
    (tmp_path / "d.csv").write_text("a,b\nx,1\ny\n")
    spec = {"columns": {"a": {"kind": "categorical", "labels": ["x", "y"]},
                        "b": {"kind": "numeric", "lower": 0, "upper": 10}}}
    (tmp_path / "s.json").write_text(json.dumps(spec))
    assert main(["synth", str(tmp_path / "d.csv"), "--schema", str(tmp_path / "s.json"),
                 "--epsilon", "1", "--out", str(tmp_path / "o.csv")]) == 2
    assert "fewer fields than the header) at row 1" in capsys.readouterr().err
