"""``dpgm mrf fit|structure``: labels in and out, the ledger line, checks before the data
are read."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpgm.cli import main
from dpgm.models import IsingModel

pytestmark = pytest.mark.filterwarnings("ignore::dpgm.errors.SeedWarning")


@pytest.fixture(scope="module")
def survey(tmp_path_factory):
    """A 5-question chain of yes/no answers (couplings ±0.5) and its public schema."""
    folder = tmp_path_factory.mktemp("mrf")
    a = np.zeros((5, 5))
    for i in range(4):
        a[i, i + 1] = a[i + 1, i] = 0.5 * (-1) ** i
    data = IsingModel(a, names=[f"q{i}" for i in range(5)]).sample(40_000, rng=0)
    data.to_pandas().replace({0: "no", 1: "yes"}).to_csv(folder / "survey.csv", index=False)
    schema = {"columns": {f"q{i}": {"kind": "categorical", "labels": ["no", "yes"],
                                    "nullable": False} for i in range(5)}}
    (folder / "schema.json").write_text(json.dumps(schema))
    return folder / "survey.csv", folder / "schema.json"


def run(capsys, argv):
    status = main([str(a) for a in argv])
    return status, capsys.readouterr()


def test_fit_writes_the_model_in_names_and_labels_and_the_ledger_line(survey, tmp_path, capsys):
    data, schema = survey
    out, ledger = tmp_path / "ising.json", tmp_path / "ledger.json"
    status, printed = run(capsys, ["mrf", "fit", data, "--schema", schema, "--rho", "1",
                                   "--width", "1", "--seed", "1", "--out", out,
                                   "--ledger", ledger])
    assert status == 0
    assert printed.out.strip() == "privacy spent: epsilon=9.52146 delta=1e-09 rho=1"
    model = json.loads(out.read_text())
    assert model["labels"]["q0"] == ["no", "yes"]
    strongest = max(model["couplings"], key=lambda c: abs(c["value"]))
    assert strongest["pair"] in (["q0", "q1"], ["q1", "q2"], ["q2", "q3"], ["q3", "q4"])
    couplings = {tuple(c["pair"]): c["value"] for c in model["couplings"]}
    assert couplings[("q0", "q1")] == pytest.approx(0.5, abs=0.1)
    assert couplings[("q1", "q2")] == pytest.approx(-0.5, abs=0.1)
    assert json.loads(ledger.read_text())["spent"]["rho"] == pytest.approx(1.0)
    assert "40000" not in printed.err and "40,000" not in printed.err  # the count is private


@pytest.mark.parametrize("extra", [["--model", "pairwise", "--mode", "paper"],
                                   ["--model", "twise", "--order", "2", "--goal", "linf"]])
def test_fit_runs_every_model(survey, tmp_path, capsys, extra):
    data, schema = survey
    out = tmp_path / "model.json"
    status, printed = run(capsys, ["mrf", "fit", data, "--schema", schema, "--rho", "1",
                                   "--width", "1", "--seed", "2", "--out", out, *extra])
    assert status == 0 and "privacy spent" in printed.out
    assert json.loads(out.read_text())["model"] == extra[1]


def test_structure_releases_the_chain_in_names(survey, tmp_path, capsys):
    data, schema = survey
    out = tmp_path / "edges.json"
    status, printed = run(capsys, ["mrf", "structure", data, "--schema", schema, "--epsilon",
                                   "1", "--width", "1", "--min-edge-weight", "0.5", "--seed",
                                   "2", "--out", out])
    assert status == 0
    assert printed.out.strip() == "privacy spent: epsilon=1 delta=1e-09"
    found = json.loads(out.read_text())
    assert found["released"] and found["edges"] == [["q0", "q1"], ["q1", "q2"], ["q2", "q3"],
                                                    ["q3", "q4"]]


@pytest.mark.parametrize(("argv", "needle"), [
    (["structure", "--epsilon", "1", "--min-edge-weight", "0.5", "--blocks", "40"],
     "at least 57 blocks"),
    (["fit", "--rho", "1", "--model", "twise"], "needs --order"),
    (["fit", "--rho", "1", "--order", "3"], "apply to --model twise"),
])
def test_what_is_knowable_in_advance_fails_before_the_data_are_read(survey, tmp_path, capsys,
                                                                    argv, needle):
    data, schema = survey
    command, *rest = argv
    status, printed = run(capsys, ["mrf", command, data, "--schema", schema, "--width", "1",
                                   "--out", tmp_path / "out.json", *rest])
    assert status == 2
    assert printed.err.strip().splitlines()[-1].startswith("dpgm: error:")
    assert needle in printed.err and "[dpgm] read" not in printed.err
    assert not (tmp_path / "out.json").exists()


def test_a_non_binary_domain_is_refused_for_ising(tmp_path, capsys):
    (tmp_path / "domain.json").write_text(json.dumps({"a": 2, "b": 3}))
    (tmp_path / "data.csv").write_text("a,b\n0,2\n")
    status, printed = run(capsys, ["mrf", "fit", tmp_path / "data.csv", "--domain",
                                   tmp_path / "domain.json", "--rho", "1", "--width", "1",
                                   "--out", tmp_path / "out.json"])
    assert status == 2 and "binary" in printed.err


@pytest.fixture(scope="module")
def few(tmp_path_factory):
    """50 records of three independent yes/no answers: too few for blocks to agree."""
    folder = tmp_path_factory.mktemp("few")
    rng = np.random.default_rng(0)
    lines = ["a,b,c"] + [",".join(map(str, row)) for row in rng.integers(0, 2, (50, 3))]
    (folder / "few.csv").write_text("\n".join(lines) + "\n")
    (folder / "domain.json").write_text(json.dumps({"a": 2, "b": 2, "c": 2}))
    return folder / "few.csv", folder / "domain.json"


def test_no_release_advises_only_what_the_options_allow(few, tmp_path, capsys):
    """Fewer blocks are suggested only where fewer can release (at epsilon 1, delta 1e-9:
    43 at least, 57 by default); every hint names an option or the data."""
    data, domain = few
    base = ["mrf", "structure", data, "--domain", domain, "--epsilon", "1", "--width", "1",
            "--min-edge-weight", "0.3", "--seed", "1", "--force", "--out", tmp_path / "e.json"]
    status, printed = run(capsys, base)
    assert status == 0 and not json.loads((tmp_path / "e.json").read_text())["released"]
    assert "fewer blocks (--blocks 43 at least; 57 now)" in printed.err
    status, printed = run(capsys, [*base, "--blocks", "43"])
    assert status == 0
    (advice,) = [line for line in printed.err.splitlines() if "What may help" in line]
    assert "fewer blocks" not in advice
    for hint in ("more records", "a larger --epsilon", "a larger --min-edge-weight",
                 "--method zcdp"):
        assert hint in advice


def test_an_impossible_release_is_refused_before_the_data_are_read(few, tmp_path, capsys):
    """The default blocks are checked too: at epsilon 1e-5 none up to the limit can
    release, which is said (with the zCDP route) before reading or charging."""
    data, domain = few
    status, printed = run(capsys, ["mrf", "structure", data, "--domain", domain, "--epsilon",
                                   "1e-5", "--width", "1", "--min-edge-weight", "0.3",
                                   "--out", tmp_path / "e.json"])
    assert status == 2 and "[dpgm] read" not in printed.err
    last = printed.err.strip().splitlines()[-1]
    assert last.startswith("dpgm: error:") and "--method zcdp" in last and "--epsilon" in last
    assert not (tmp_path / "e.json").exists()


def test_a_width_beyond_the_float_range_is_refused_before_the_data_are_read(few, tmp_path,
                                                                           capsys):
    data, domain = few
    status, printed = run(capsys, ["mrf", "fit", data, "--domain", domain, "--rho", "1",
                                   "--width", "1e308", "--out", tmp_path / "m.json"])
    assert status == 2 and "[dpgm] read" not in printed.err and "--width" in printed.err
