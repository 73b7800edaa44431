"""The command line's release safety: nothing leaks, nothing is spent on a run bound to
fail, no traceback, no broken file.

The battery runs each bad input through ``dpgm.cli.main`` and checks the same things:
exit status 2, one ``dpgm: error:`` line, no traceback, no output file, the inputs
unchanged, and — where the reason is public (options, paths, domain, sizes) — not one
charge to any privacy budget.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from mechanism_helpers import sample_data

from dpgm import Dataset, Domain, __version__
from dpgm.cli import build_parser, main
from dpgm.mechanisms import REGISTRY
from dpgm.privacy.budget import PrivacyBudget

DOMAIN = Domain(["a", "b", "c", "d"], [2, 3, 4, 2])
N = 3761  # distinctive: must appear in no output line


@pytest.fixture
def charges(monkeypatch):
    """Every charge made to any budget during the test."""
    made: list[str] = []
    real = PrivacyBudget.charge

    def charge(self, **kwargs):
        made.append(kwargs.get("label", ""))
        return real(self, **kwargs)

    monkeypatch.setattr(PrivacyBudget, "charge", charge)
    return made


@pytest.fixture
def files(tmp_path):
    data = sample_data(DOMAIN, N, seed=1)
    csv, domain = tmp_path / "data.csv", tmp_path / "domain.json"
    data.save(csv)
    DOMAIN.save(domain)
    return tmp_path, csv, domain


def run(capsys, argv):
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_clean_failure(code, out, err, *needles):
    lines = err.strip().splitlines()
    errors = [line for line in lines if line.startswith("dpgm: error: ")]
    assert code == 2, err
    assert len(errors) == 1 and lines[-1] == errors[0], err
    assert "Traceback" not in err and "privacy spent" not in out
    for needle in needles:
        assert needle in errors[0], errors[0]
    return errors[0]


def synth_args(csv, domain, out, *extra):
    """``dpgm synth`` with MST unless ``extra`` names a mechanism (these checks were
    written for its messages; every mechanism's refusals are checked below)."""
    chosen = () if "--mechanism" in extra else ("--mechanism", "mst")
    return ["synth", csv, "--domain", domain, "--epsilon", "1", "--iters", "20", "--out", out,
            *chosen, *extra]


def _write_domain(folder: Path, sizes: dict) -> Path:
    path = folder / "big-domain.json"
    path.write_text(json.dumps(sizes))
    return path


# -- public reasons: refused before the data are read, nothing spent -------------------------
PUBLIC_CASES = {
    "out is a directory": (lambda t, csv, dom: synth_args(csv, dom, t), "is a directory"),
    "out folder missing": (
        lambda t, csv, dom: synth_args(csv, dom, t / "no" / "o.csv"), "does not exist"
    ),
    "out is the input": (
        lambda t, csv, dom: synth_args(csv, dom, csv, "--force"), "is one of the inputs"
    ),
    "out is the domain": (
        lambda t, csv, dom: synth_args(csv, dom, dom, "--force"), "is one of the inputs"
    ),
    "domain of 1e9": (
        lambda t, csv, dom: synth_args(
            t / "never.csv", _write_domain(t, {"a": 10**9, "b": 3}), t / "o.csv",
            "--max-memory", "16G",  # the default is half the machine's RAM
        ),
        "over the memory limit of 16 GB",
    ),
    "domain of 1e12": (
        lambda t, csv, dom: synth_args(
            t / "never.csv", _write_domain(t, {"a": 10**12, "b": 3}), t / "o.csv"
        ),
        "set by --max-memory",
    ),
    "domain of 2**70": (
        lambda t, csv, dom: synth_args(
            t / "never.csv", _write_domain(t, {"a": 2**70, "b": 3}), t / "o.csv"
        ),
        "1,180,591,620,717,411,303,424 values",
    ),
    "evaluate 3-way on large attributes": (
        lambda t, csv, dom: [
            "evaluate", t / "never.csv", t / "never.csv", "--domain",
            _write_domain(t, {"a": 3000, "b": 3000, "c": 3000}), "--ways", "3",
        ],
        "the 3-way marginal on ('a', 'b', 'c') would need 432 GB",
    ),
    "evaluate huge domain": (
        lambda t, csv, dom: [
            "evaluate", t / "never.csv", t / "never.csv", "--domain",
            _write_domain(t, {"a": 10**12}), "--ways", "1",
        ],
        "over the memory limit",
    ),
    "rows 1e12": (  # more than the free disk space holds as CSV
        lambda t, csv, dom: synth_args(t / "never.csv", dom, t / "o.csv", "--rows", "1e12"),
        "1,000,000,000,000 records of 4 columns need at least",
    ),
    "a chunk of 1e11 rows": (  # memory holds one chunk: a chunk too large for it
        lambda t, csv, dom: synth_args(t / "never.csv", dom, t / "o.csv.gz", "--rows", "1e12",
                                       "--chunk-rows", "1e11"),
        "100,000,000,000 synthetic records would need",
    ),
    "dualquery with a 1e9-cell clique": (
        lambda t, csv, dom: synth_args(
            t / "never.csv", _write_domain(t, {"a": 40000, "b": 25000, "c": 2}), t / "o.csv",
            "--mechanism", "dualquery", "--estimator", "original", "--workload",
            _workload(t, [["a", "b"]]), "--max-memory", "16G",
        ),
        "over the memory limit of 16 GB",
    ),
    "mwem's workload answers": (
        lambda t, csv, dom: synth_args(
            t / "never.csv", _write_domain(t, {"a": 3000, "b": 3000, "c": 3000}), t / "o.csv",
            "--mechanism", "mwem", "--estimator", "original", "--workload",
            _workload(t, [["a", "b", "c"]]),
        ),
        "the workload's true answers",
    ),
    "junction tree over --max-cells": (
        lambda t, csv, dom: synth_args(
            t / "never.csv", dom, t / "o.csv", "--mechanism", "dualquery", "--max-cells", "10"
        ),
        "over --max-cells 10",
    ),
    "option that does not apply": (
        lambda t, csv, dom: synth_args(t / "never.csv", dom, t / "o.csv", "--max-cells", "10"),
        "--max-cells does not apply to mst",
    ),
    "loss that does not apply": (
        lambda t, csv, dom: synth_args(t / "never.csv", dom, t / "o.csv", "--loss", "max"),
        "--loss does not apply to mst",
    ),
    "unknown loss": (
        lambda t, csv, dom: synth_args(t / "never.csv", dom, t / "o.csv", "--mechanism",
                                       "residual-planner", "--loss", "mean"),
        "invalid choice: 'mean'",
    ),
    "delta of 0.5": (
        lambda t, csv, dom: synth_args(t / "never.csv", dom, t / "o.csv", "--delta", "0.5"),
        "at least 0.1",
    ),
    "seed -1": (
        lambda t, csv, dom: synth_args(csv, dom, t / "o.csv", "--seed", "-1"),
        "--seed: must be at least 0",
    ),
    "seed 1.5": (
        lambda t, csv, dom: synth_args(csv, dom, t / "o.csv", "--seed", "1.5"),
        "expected a whole number",
    ),
    "rows -3": (
        lambda t, csv, dom: synth_args(csv, dom, t / "o.csv", "--rows", "-3"),
        "--rows: must be at least 1",
    ),
    # issue 24: each of these spent, then failed or did nothing
    "rows 0": (
        lambda t, csv, dom: synth_args(csv, dom, t / "o.csv", "--rows", "0"),
        "--rows: must be at least 1",
    ),
    "a workload MST ignores": (
        lambda t, csv, dom: synth_args(csv, dom, t / "o.csv", "--workload",
                                       _workload(t, [["a", "b"]])),
        "--mechanism mst measures no workload",
    ),
    "an empty domain": (
        lambda t, csv, dom: synth_args(csv, _text(t, "empty.json", "{}"), t / "o.csv"),
        "the domain has no attributes",
    ),
    "given outside the bounds": (
        lambda t, csv, dom: _schema_args(t, "--given", "n=50"),
        "--given n=50: outside the column's public bounds [0, 10]",
    ),
    "given that a constraint forbids": (
        lambda t, csv, dom: _schema_args(t, "--given", "s=x", "--given", "n=1"),
        "constraints make these values impossible together",
    ),
    "constraints whose model is too large": (
        lambda t, csv, dom: _schema_args(t, constraints=[
            {"p": [0], "q": [0]}, {"q": [0], "r": [0]}, {"r": [0], "p": [0]}]),
        "the constraints' tables need a model of",
    ),
    "evaluate with a file that is no ledger": (
        lambda t, csv, dom: ["evaluate", csv, csv, "--domain", dom, "--report", t / "report",
                             "--ledger", _text(t, "ledger.json", '{"a": 1}')],
        "not a ledger written by dpgm synth --ledger",
    ),
    "domain with a repeated key": (
        lambda t, csv, dom: synth_args(csv, _text(t, "dup.json", '{"a": 2, "a": 3}'), t / "o.csv"),
        "listed more than once",
    ),
}


def _schema_args(folder: Path, *extra, constraints=({"s": ["x"], "n": [1]},)) -> list:
    """dpgm synth on a raw table that is never read, with a schema of constraints."""
    wide = {"kind": "numeric", "lower": 0, "upper": 1, "bins": 4000}
    spec = {"columns": {"s": {"kind": "categorical", "labels": ["x", "y"]},
                        "n": {"kind": "numeric", "lower": 0, "upper": 10, "bins": 5},
                        "p": wide, "q": wide, "r": wide},
            "constraints": list(constraints)}
    schema = _text(folder, "schema.json", json.dumps(spec))
    return ["synth", folder / "never.csv", "--schema", schema, "--epsilon", "1", "--out",
            folder / "o.csv", *extra]


def _workload(folder: Path, cliques) -> Path:
    path = folder / "workload.json"
    path.write_text(json.dumps(cliques))
    return path


def _text(folder: Path, name: str, content: str) -> Path:
    path = folder / name
    path.write_text(content)
    return path


@pytest.mark.parametrize("case", list(PUBLIC_CASES))
def test_public_reasons_fail_before_reading_data_or_spending(files, capsys, charges, case):
    folder, csv, domain = files
    before = {p: p.read_bytes() for p in (csv, domain)}
    build, needle = PUBLIC_CASES[case]
    code, out, err = run(capsys, build(folder, csv, domain))
    assert_clean_failure(code, out, err, needle)
    assert charges == []  # not one charge to any budget
    assert not (folder / "o.csv").exists() and not (folder / "report").exists()
    assert {p: p.read_bytes() for p in (csv, domain)} == before  # inputs unchanged


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs a folder nobody can write to")
def test_unwritable_output_folder_fails_before_reading(files, capsys, charges):
    folder, csv, domain = files
    code, out, err = run(capsys, synth_args(folder / "never.csv", domain, "/proc/o.csv"))
    assert_clean_failure(code, out, err, "cannot write to /proc")
    assert charges == []


# -- reasons found in the data: a clear error, no file ----------------------------------------
def _data_case(folder: Path, csv: Path, content: bytes, name: str = "bad.csv") -> Path:
    path = folder / name
    path.write_bytes(content)
    return path


DATA_CASES = {
    "corrupt gzip": (b"not gzip", "bad.csv.gz", "corrupt or truncated compressed file"),
    "truncated gzip": (None, "cut.csv.gz", "corrupt or truncated compressed file"),
    "repeated column": (b"a,b,c,d,a\n0,0,0,0,1\n", "bad.csv", "appear more than once"),
    "int64 overflow": (b"a,b,c,d\n0,0,0,0\n99999999999999999999,0,0,0\n", "bad.csv",
                       "value 99999999999999999999 at row 1"),
    "empty file": (b"", "bad.csv", "the file is empty"),
}


@pytest.mark.parametrize("case", list(DATA_CASES))
def test_bad_data_files_fail_cleanly(files, capsys, charges, case):
    folder, csv, domain = files
    content, name, needle = DATA_CASES[case]
    if content is None:
        content = gzip.compress(csv.read_bytes())[:100]
    bad = _data_case(folder, csv, content, name)
    code, out, err = run(capsys, synth_args(bad, domain, folder / "o.csv"))
    assert_clean_failure(code, out, err, needle)
    assert charges == [] and not (folder / "o.csv").exists()


def test_evaluate_refuses_a_file_without_records(files, capsys):
    folder, csv, domain = files
    empty = _text(folder, "empty.csv", "a,b,c,d\n")
    code, out, err = run(capsys, ["evaluate", csv, empty, "--domain", domain])
    assert_clean_failure(code, out, err, "has no records")


def test_columns_the_domain_does_not_name_are_reported(files, capsys):
    folder, csv, domain = files
    frame = pd.read_csv(csv)
    frame["notes"] = "x"
    frame.to_csv(csv, index=False)
    code, out, err = run(capsys, synth_args(csv, domain, folder / "o.csv", "--seed", "0"))
    assert code == 0, err
    assert "dpgm: warning: column(s) ['notes'] are not in the domain" in err


def test_a_large_delta_is_a_one_line_warning(files, capsys):
    folder, csv, domain = files
    code, out, err = run(capsys, synth_args(csv, domain, folder / "o.csv", "--delta", "1e-4"))
    assert code == 0, err
    assert "dpgm: warning: delta=0.0001 is large" in err and "Traceback" not in err


def test_mwem_tables_that_outgrow_memory_mid_run_name_the_cli_flags(files, capsys):
    """Which cliques MWEM's tables merge depends on its (private) selections: a clear error."""
    folder, csv, domain = files
    big = _write_domain(folder, {"a": 1500, "b": 1500, "c": 1500, "d": 2})
    data = Dataset(np.random.default_rng(0).integers(0, 2, (300, 4)), Domain.load(big))
    data.save(csv)
    argv = synth_args(csv, big, folder / "o.csv", "--mechanism", "mwem", "--estimator",
                      "original", "--workload", _workload(folder, [["a", "b"], ["b", "c"]]),
                      "--epsilon", "50", "--seed", "0", "--max-memory", "2G")
    code, out, err = run(capsys, argv)
    assert_clean_failure(code, out, err, "--max-memory", "--estimator pgm")


def test_privbayes_noisy_count_beyond_memory_is_a_clear_error(files, capsys):
    """At epsilon = 1e-12 the noisy count is about 1e13: its sample is refused, in one line."""
    folder, csv, domain = files
    argv = ["synth", csv, "--domain", domain, "--epsilon", "1e-12", "--out", folder / "o.csv",
            "--mechanism", "privbayes", "--estimator", "original", "--seed", "0"]
    code, out, err = run(capsys, argv)
    assert_clean_failure(code, out, err, "synthetic records would need", "--rows")
    argv += ["--rows", "500"]
    code, out, err = run(capsys, argv)
    assert code == 0, err
    assert len(Dataset.load(folder / "o.csv", DOMAIN)) == 500


# -- nothing data-dependent is printed unless it was paid for ---------------------------------
@pytest.mark.parametrize("mechanism", sorted(REGISTRY))
def test_the_exact_record_count_appears_nowhere(files, capsys, mechanism):
    folder, csv, domain = files
    code, out, err = run(
        capsys, synth_args(csv, domain, folder / "o.csv", "--mechanism", mechanism, "--seed", "2")
    )
    assert code == 0, err
    assert len(err.splitlines()) >= 3  # there is progress to look at
    assert str(N) not in (out + err).replace(",", "")
    assert not re.search(r"\d+\.\d+ ?s\b", err)  # no timings: they grow with the data


# -- atomic output -------------------------------------------------------------------------------
def test_a_failed_write_leaves_no_partial_file(files, capsys, monkeypatch):
    folder, csv, domain = files
    out = folder / "o.csv"
    out.write_text("the previous release\n")

    def disk_full(self, handle, **kwargs):
        handle.write("a,b,c,d\n" + "0,1,2,1\n" * 5000)  # 40 kB written, then the disk fills
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_csv", disk_full)
    code, out_text, err = run(capsys, synth_args(csv, domain, out, "--force", "--seed", "0"))
    assert_clean_failure(code, out_text, err, "No space left on device")
    assert out.read_text() == "the previous release\n"
    assert sorted(p.name for p in folder.iterdir()) == ["data.csv", "domain.json", "o.csv"]


# -- the command itself ---------------------------------------------------------------------------
def test_version_and_python_dash_m(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"dpgm {__version__}"
    result = subprocess.run(
        [sys.executable, "-m", "dpgm", "--version"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0 and result.stdout.strip() == f"dpgm {__version__}"


def test_every_option_has_help_with_its_default():
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command")
    schema = commands.choices["schema"]
    nested = next(a for a in schema._actions if a.dest == "schema_command").choices
    parsers = {**commands.choices, **{f"schema {n}": p for n, p in nested.items()}}
    for name, sub in parsers.items():
        for action in sub._actions:
            if action.dest in ("help",) or not action.option_strings:
                continue
            assert action.help, f"{name} {action.option_strings} has no help"
            assert action.required or "default" in action.help, (name, action.option_strings)


def test_unexpected_errors_are_one_line_unless_debugging(files, capsys, monkeypatch):
    folder, csv, domain = files

    def broken(self, *args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(REGISTRY["mst"], "fit", broken)
    monkeypatch.delenv("DPGM_DEBUG", raising=False)
    code, out, err = run(capsys, synth_args(csv, domain, folder / "o.csv"))
    assert code == 3 and err.strip().splitlines()[-1].startswith("dpgm: internal error:")
    assert "Traceback" not in err and not (folder / "o.csv").exists()
    monkeypatch.setenv("DPGM_DEBUG", "1")
    with pytest.raises(RuntimeError, match="a bug"):
        main([str(a) for a in synth_args(csv, domain, folder / "o.csv")])


def test_release_path_without_a_seed_prints_no_note(files, capsys):
    folder, csv, domain = files
    code, out, err = run(capsys, synth_args(csv, domain, folder / "o.csv", "--mechanism", "aim"))
    assert code == 0, err
    assert "note:" not in err and "warning" not in err
    assert out.strip().splitlines()[-1].startswith("privacy spent: epsilon=1 delta=1e-09")
    assert np.all(Dataset.load(folder / "o.csv", DOMAIN).records >= 0)
    assert os.access(folder / "o.csv", os.R_OK)


@pytest.mark.parametrize(
    ("mechanism", "estimator"),
    [(name, est) for name, cls in sorted(REGISTRY.items()) for est in cls.estimators],
)
def test_every_mechanism_refuses_a_huge_domain_before_reading(files, capsys, charges,
                                                              mechanism, estimator):
    folder, csv, domain = files
    huge = _write_domain(folder, {"a": 10**12, "b": 3})
    code, out, err = run(capsys, synth_args(folder / "never.csv", huge, folder / "o.csv",
                                            "--mechanism", mechanism, "--estimator", estimator))
    # AIM's (and AIM+RP's) default workload (2-way marginals of at most --max-cells) is
    # refused first
    needles = (("--max-cells",) if mechanism in ("aim", "aim-rp") else
               ("would need", "set by --max-memory"))
    assert_clean_failure(code, out, err, *needles)
    assert charges == [] and not (folder / "o.csv").exists()


def test_a_terminated_run_leaves_no_file(files, capsys, monkeypatch):
    """SIGTERM during the write (a job scheduler's kill) unwinds like Ctrl-C: no output,
    no temporary file, exit status 143 (128 + SIGTERM)."""
    import signal

    folder, csv, domain = files

    def killed_while_writing(self, handle, **kwargs):
        handle.write("a,b,c,d\n0,1,")
        os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(pd.DataFrame, "to_csv", killed_while_writing)
    code, out, err = run(capsys, synth_args(csv, domain, folder / "o.csv", "--seed", "0"))
    assert code == 143 and "interrupted" in err
    assert sorted(p.name for p in folder.iterdir()) == ["data.csv", "domain.json"]
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # restored for the caller
