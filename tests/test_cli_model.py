"""``dpgm fit``, ``synth --save-model`` and ``dpgm model info|sample|query|map``: a model is
fitted once, then answers with the data file gone and nothing more spent."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from schema_helpers import SPEC, raw_table

import dpgm
from dpgm.cli import main

pytestmark = pytest.mark.filterwarnings("ignore::dpgm.errors.SeedWarning")


@pytest.fixture
def raw(tmp_path):
    data, schema = tmp_path / "data.csv", tmp_path / "schema.json"
    raw_table(300, seed=4).to_csv(data, index=False)
    schema.write_text(json.dumps(SPEC))
    return data, schema


def one_line_error(capsys, status: int, needle: str) -> str:
    assert status == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("dpgm: error:") and needle in err[-1], err
    return err[-1]


def test_save_then_answer_with_the_data_file_deleted(raw, tmp_path, capsys):
    data, schema = raw
    model, out = tmp_path / "m.dpgm", tmp_path / "synth.csv"
    assert main(["synth", str(data), "--schema", str(schema), "--epsilon", "1", "--seed", "3",
                 "--iters", "200", "--out", str(out), "--save-model", str(model),
                 "--rows", "50"]) == 0
    spent_line = capsys.readouterr().out
    assert "privacy spent: epsilon=1" in spent_line
    data.unlink()
    schema.unlink()

    assert main(["model", "info", str(model), "--json"]) == 0
    captured = capsys.readouterr()
    facts = json.loads(captured.out)
    assert facts["kind"] == "MarkovRandomField" and facts["schema"] is True
    assert facts["release"]["mechanism"] == "AIMResidual"  # the default mechanism
    assert facts["release"]["seeded"] is True
    assert "not for release" in captured.err
    assert main(["model", "info", str(model)]) == 0
    assert "seeded:     yes" in capsys.readouterr().out

    sample = tmp_path / "given.csv"
    assert main(["model", "sample", str(model), "--rows", "40", "--given", "job=nurse",
                 "--given", "age=33", "--seed", "1", "--out", str(sample)]) == 0
    frame = pd.read_csv(sample)
    assert len(frame) == 40 and (frame["job"] == "nurse").all()
    assert frame["age"].between(30, 40).all()  # the bin of 33, in original units
    assert "privacy spent" not in capsys.readouterr().out  # nothing more was spent

    assert main(["model", "query", str(model), "P(sex | job=nurse)", "--json", "--seed", "2",
                 "--bootstrap", "2"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["assignment"]["sex"] for r in rows] == ["F", "M", None]
    assert sum(r["probability"] for r in rows) == pytest.approx(1.0)
    loaded = dpgm.load(model)
    expected = loaded.marginal(["sex"], given={"job": "nurse"})
    assert [r["probability"] for r in rows] == pytest.approx(list(expected / expected.sum()))
    # the standard error of each answer, bootstrapped (a conditional) from the file alone
    _, error = loaded.with_error(["sex"], {"job": "nurse"}, replicates=2, rng=2)
    assert [r["standard_error"] for r in rows] == pytest.approx(list(error / loaded.total))
    assert main(["model", "query", str(model), "P(sex)"]) == 0
    assert "standard error" in capsys.readouterr().out

    assert main(["model", "map", str(model), "--evidence", "job=nurse", "--json"]) == 0
    best = json.loads(capsys.readouterr().out)
    assert "job" not in best and set(best) == set(loaded.domain.attrs) - {"job"}
    assert main(["model", "map", str(model), "--variables", "sex", "--json"]) == 0
    assert set(json.loads(capsys.readouterr().out)) == {"sex"}


def test_fit_saves_a_model_without_sampling(raw, tmp_path, capsys):
    data, schema = raw
    model, ledger = tmp_path / "fit.dpgm", tmp_path / "ledger.json"
    assert main(["fit", str(data), "--schema", str(schema), "--epsilon", "0.5", "--seed", "2",
                 "--mechanism", "aim", "--out", str(model), "--ledger", str(ledger)]) == 0
    assert "privacy spent: epsilon=0.5" in capsys.readouterr().out
    loaded = dpgm.load(model)
    assert loaded.release.ledger == json.loads(ledger.read_text())
    assert loaded.release.mechanism == "AIM"


def test_a_mechanism_that_releases_records_cannot_save_a_model_and_reads_nothing(
        tmp_path, capsys):
    domain = tmp_path / "domain.json"
    domain.write_text(json.dumps({"a": 2, "b": 3}))
    missing = tmp_path / "no-such-data.csv"  # refused before the data would be read
    status = main(["fit", str(missing), "--domain", str(domain), "--epsilon", "1",
                   "--mechanism", "privbayes", "--estimator", "original",
                   "--out", str(tmp_path / "m.dpgm")])
    one_line_error(capsys, status, "releases synthetic records, not a model")
    status = main(["synth", str(missing), "--domain", str(domain), "--epsilon", "1",
                   "--mechanism", "dualquery", "--estimator", "original",
                   "--out", str(tmp_path / "s.csv"), "--save-model", str(tmp_path / "m.dpgm")])
    one_line_error(capsys, status, "releases synthetic records, not a model")
    assert not (tmp_path / "m.dpgm").exists() and not (tmp_path / "s.csv").exists()


def test_an_existing_model_file_is_not_overwritten_without_force(raw, tmp_path, capsys):
    data, schema = raw
    model = tmp_path / "m.dpgm"
    model.write_text("keep me")
    status = main(["fit", str(data), "--schema", str(schema), "--epsilon", "1",
                   "--out", str(model)])
    one_line_error(capsys, status, "exists")
    assert model.read_text() == "keep me"


def test_model_commands_refuse_a_bad_file_in_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.dpgm"
    bad.write_text("not a model")
    for argv in (["model", "info", str(bad)],
                 ["model", "query", str(bad), "P(a)"],
                 ["model", "map", str(bad)],
                 ["model", "sample", str(bad), "--out", str(tmp_path / "x.csv")]):
        one_line_error(capsys, main(argv), "not a dpgm model file")
    assert not (tmp_path / "x.csv").exists()


def test_model_commands_say_they_read_no_data_and_spend_nothing(capsys):
    for command in ("info", "sample", "query", "map"):
        assert main(["model", command, "--help"]) == 0
    assert main(["model", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert text.count("reads no data and spends no budget") >= 5
