"""synth/fit --discretize-share (issue 26, item 1): numeric bins learnt inside the run, paid
for from a share of its budget, on one ledger; every public failure before the data."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import dpgm
from dpgm.cli import main

pytestmark = pytest.mark.filterwarnings("ignore::dpgm.errors.SeedWarning")

SPEC = {"columns": {
    "income": {"kind": "numeric", "lower": 0, "upper": 300_000, "bins": None,
               "decimals": None, "integer": None, "refine": None},
    "age": {"kind": "numeric", "lower": None, "upper": None, "bins": None, "integer": True},
    "job": {"kind": "categorical", "labels": ["a", "b", "c"]},
}}


@pytest.fixture()
def files(tmp_path):
    rng = np.random.default_rng(0)
    n = 3000
    table = pd.DataFrame({"income": np.round(np.exp(rng.normal(10.3, 0.7, n)), 2),
                          "age": np.clip(rng.normal(45, 12, n), 18, 90).round().astype(int),
                          "job": rng.choice(list("abc"), n)})
    data, schema = tmp_path / "people.csv", tmp_path / "schema.json"
    table.to_csv(data, index=False)
    schema.write_text(json.dumps(SPEC))
    return data, schema


@pytest.mark.parametrize("mechanism", ["mst", "aim", "mwem"])
def test_the_bins_are_learnt_and_paid_for_on_one_ledger(files, tmp_path, capsys, mechanism):
    data, schema = files
    out, ledger, model = tmp_path / "s.csv", tmp_path / "ledger.json", tmp_path / "m.dpgm"
    args = ["synth", str(data), "--schema", str(schema), "--epsilon", "1", "--mechanism",
            mechanism, "--discretize-share", "0.25", "--out", str(out), "--ledger",
            str(ledger), "--seed", "3", "--save-model", str(model)]
    if mechanism == "mwem":
        args += ["--delta", "1e-9"]
    assert main(args) == 0
    printed = capsys.readouterr()
    assert "income: " in printed.err and "bin(s) learnt from the data (PrivTree)" in printed.err
    entries = json.loads(ledger.read_text())["entries"]
    labels = [e["label"] for e in entries]
    # the discretisation first (one question per null, in the schema's order), then the
    # mechanism's own entries
    assert labels[:5] == ["precision of income", "edges of income", "range of age",
                          "edges of age", "one-way marginals"][:4] + labels[4:5]
    learnt = entries[:4]
    total = sum(e["rho"] for e in entries)
    # a quarter of rho went to the four questions, equally; everything adds up to the budget
    assert sum(e["rho"] for e in learnt) == pytest.approx(0.25 * total, rel=1e-6)
    assert "privacy spent: epsilon=1 delta=1e-09" in printed.out
    synthetic = pd.read_csv(out)
    assert synthetic["income"].between(0, 300_000).all()
    saved = dpgm.load(model)
    assert saved.release.ledger == json.loads(ledger.read_text())  # the whole run's ledger
    assert isinstance(saved.schema.columns["income"].coarse_edges, np.ndarray)


@pytest.mark.parametrize(("extra", "message"), [
    (["--discretize-share", "0"], "strictly between 0 and 1"),
    (["--discretize-share", "1"], "strictly between 0 and 1"),
    (["--discretize-share", "0.1", "--engine", "duckdb"], "reads the table in memory"),
    (["--discretize-share", "0.1", "--given", "age=40"], "'age' has no public bounds"),
])
def test_public_failures_come_before_the_data_are_read(files, tmp_path, capsys, extra,
                                                       message):
    _, schema = files
    args = ["synth", str(tmp_path / "absent.csv"), "--schema", str(schema), "--epsilon",
            "1", "--out", str(tmp_path / "s.csv"), *extra]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and "absent.csv" not in err


def test_a_schema_with_nothing_numeric_to_learn_is_refused(files, tmp_path, capsys):
    data, schema = files
    done = {"columns": {"job": {"kind": "categorical", "labels": ["a", "b", "c"]}}}
    schema.write_text(json.dumps(done))
    assert main(["synth", str(tmp_path / "absent.csv"), "--schema", str(schema), "--epsilon",
                 "1", "--discretize-share", "0.1", "--out", str(tmp_path / "s.csv")]) == 2
    assert "leaves nothing numeric to learn" in capsys.readouterr().err
    unlabelled = {"columns": {"job": {"kind": "categorical", "labels": None},
                              "age": {"kind": "numeric", "lower": 0, "upper": 100,
                                      "bins": None}}}
    schema.write_text(json.dumps(unlabelled))
    assert main(["synth", str(tmp_path / "absent.csv"), "--schema", str(schema), "--epsilon",
                 "1", "--discretize-share", "0.1", "--out", str(tmp_path / "s.csv")]) == 2
    assert "'job' has no labels" in capsys.readouterr().err


def test_resolutions_too_fine_for_memory_are_refused_before_reading(tmp_path, capsys):
    schema = tmp_path / "fine.json"
    schema.write_text(json.dumps({"columns": {
        "x": {"kind": "numeric", "lower": 0, "upper": 1, "bins": 1000, "refine": 100},
        "y": {"kind": "categorical", "labels": ["a", "b"]}}}))
    assert main(["synth", str(tmp_path / "absent.csv"), "--schema", str(schema), "--epsilon",
                 "1", "--mechanism", "aim", "--max-memory", "1MB",
                 "--out", str(tmp_path / "s.csv")]) == 2
    err = capsys.readouterr().err
    assert "--max-memory" in err and "absent.csv" not in err


def test_a_column_of_one_value_is_learnt_without_failing(tmp_path, capsys):
    data = tmp_path / "one.csv"
    pd.DataFrame({"x": [0.5] * 200, "y": ["a", "b"] * 100}).to_csv(data, index=False)
    schema = tmp_path / "one.json"
    schema.write_text(json.dumps({"columns": {
        "x": {"kind": "numeric", "lower": 0, "upper": 1, "bins": None, "integer": None,
              "decimals": None},
        "y": {"kind": "categorical", "labels": ["a", "b"]}}}))
    out = tmp_path / "s.csv"
    assert main(["synth", str(data), "--schema", str(schema), "--epsilon", "3",
                 "--discretize-share", "0.3", "--out", str(out), "--seed", "0"]) == 0
    assert pd.read_csv(out)["x"].between(0, 1).all()


@pytest.mark.parametrize("command", ["discover", "synth"])
def test_bins_asked_of_a_categorical_column_are_refused_before_reading(tmp_path, capsys,
                                                                      command):
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"columns": {
        "job": {"kind": "categorical", "labels": ["a", "b"], "bins": 8},
        "age": {"kind": "numeric", "lower": 0, "upper": 100, "bins": None}}}))
    absent = str(tmp_path / "absent.csv")
    args = (["schema", "discover", absent, "--schema", str(schema), "--epsilon", "1",
             "--out", str(tmp_path / "out.json")] if command == "discover" else
            ["synth", absent, "--schema", str(schema), "--epsilon", "1",
             "--discretize-share", "0.1", "--out", str(tmp_path / "s.csv")])
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "column 'job' (categorical) has no field 'bins'" in err and "absent.csv" not in err


def test_dates_get_learnt_bins_too(tmp_path, capsys):
    rng = np.random.default_rng(1)
    n = 4000
    days = np.where(rng.random(n) < 0.7, rng.normal(300, 20, n), rng.uniform(0, 700, n))
    data = tmp_path / "visits.csv"
    pd.DataFrame({"seen": (pd.Timestamp("2020-01-01") + pd.to_timedelta(
        np.clip(days, 0, 700).round(), "D")).strftime("%Y-%m-%d"),
        "ward": rng.choice(list("ab"), n)}).to_csv(data, index=False)
    schema = tmp_path / "visits.json"
    schema.write_text(json.dumps({"columns": {
        "seen": {"kind": "datetime", "lower": "2020-01-01", "upper": "2022-01-01",
                 "bins": None, "width": None, "refine": None},
        "ward": {"kind": "categorical", "labels": ["a", "b"]}}}))
    out, ledger, model = tmp_path / "s.csv", tmp_path / "l.json", tmp_path / "m.dpgm"
    assert main(["synth", str(data), "--schema", str(schema), "--epsilon", "2",
                 "--discretize-share", "0.2", "--out", str(out), "--ledger", str(ledger),
                 "--seed", "0", "--save-model", str(model)]) == 0
    assert "seen: " in capsys.readouterr().err
    assert [e["label"] for e in json.loads(ledger.read_text())["entries"]][0] == "edges of seen"
    seen = dpgm.load(model).schema.columns["seen"]
    assert seen.width is None and seen.refine > 1
    # the bins follow the data: narrower around day 300, where most visits are
    starts = (seen.coarse_edges - seen.coarse_edges[0]) / pd.Timedelta("1D").value
    widths = np.diff(starts)
    busy = (starts[:-1] >= 240) & (starts[1:] <= 360)
    assert busy.any() and widths[busy].mean() < 0.5 * widths[~busy].mean()
    synthetic = pd.to_datetime(pd.read_csv(out)["seen"])
    assert synthetic.between("2020-01-01", "2022-01-01").all()
    assert (synthetic == synthetic.dt.floor("D")).all()


def test_learnt_date_bins_with_sub_bins_given_hold_them_all(tmp_path):
    from dpgm.discover import discover, questions

    rng = np.random.default_rng(0)  # dense near the upper bound: a short last bin is likely
    days = pd.Timestamp("2020-01-01") + pd.to_timedelta(
        np.clip(rng.normal(55, 3, 3000), 0, 59).round(), "D")
    frame = pd.DataFrame({"d": days.strftime("%Y-%m-%d")})
    spec = {"columns": {"d": {"kind": "datetime", "lower": "2020-01-01",
                              "upper": "2020-03-01", "bins": None, "refine": 4}}}
    for seed in range(10):  # never fails after spending
        column = discover(frame, spec, 1.0, rng=seed)[0].columns["d"]
        assert (np.diff(column.coarse_edges) >= 4 * pd.Timedelta("1D").value).all()
    # nine days hold two sub-bins of four days: a valid draft, accepted before reading
    assert questions({"columns": {"d": {**spec["columns"]["d"], "upper": "2020-01-10"}}})
    # what learnt bins cannot hold is refused before reading, in one line
    for bad, needle in [({"resolution": "7D"}, "whole days"),
                        ({"lower": "garbage"}, "bounds")]:
        with pytest.raises(dpgm.errors.DomainError, match=needle):
            questions({"columns": {"d": {**spec["columns"]["d"], **bad}}})
    # bounds written as Datetime reads them (not ISO) are read so when learning
    loose = {"columns": {"d": {"kind": "datetime", "lower": "2020/01/01", "upper": None,
                               "width": "7D"}}}
    assert discover(frame, loose, 1.0, rng=0)[0].columns["d"].lower == pd.Timestamp("2020-01-01")
