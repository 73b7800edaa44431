"""Writing outputs: whole or not at all for files; links written through; standard output
and pipes written as they are (never replaced by a file)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading

import numpy as np
import pandas as pd
import pytest

from dpgm.errors import OutputError
from dpgm.files import atomic_write, check_output, is_stream, writes_to_stdout


def test_a_link_is_written_through_and_stays_a_link(tmp_path):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "out.csv"
    target.write_text("old\n")
    link = tmp_path / "out.csv"
    link.symlink_to(target)
    with pytest.raises(OutputError, match="exists"):
        check_output(link)
    with atomic_write(check_output(link, force=True)) as handle:
        handle.write("new\n")
    assert link.is_symlink() and target.read_text() == "new\n"


def test_a_named_pipe_is_written_as_it_is_and_stays_a_pipe(tmp_path):
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    received = []
    reader = threading.Thread(target=lambda: received.append(pipe.read_text()))
    reader.start()
    assert is_stream(pipe) and not is_stream(tmp_path)
    with atomic_write(check_output(pipe)) as handle:  # no --force: nothing is replaced
        handle.write("a,b\n1,2\n")
    reader.join(timeout=10)
    assert received == ["a,b\n1,2\n"] and stat.S_ISFIFO(os.stat(pipe).st_mode)


def test_a_dash_is_standard_output(capsys, tmp_path):
    assert writes_to_stdout("-") and not writes_to_stdout(tmp_path / "x.csv")
    with atomic_write(check_output("-")) as handle:
        handle.write("to stdout\n")
    assert capsys.readouterr().out == "to stdout\n"
    assert not (tmp_path / "-").exists() and not os.path.exists("-")


@pytest.fixture
def small(tmp_path):
    rng = np.random.default_rng(0)
    pd.DataFrame({"a": rng.integers(3, size=400), "b": rng.integers(2, size=400)}).to_csv(
        tmp_path / "data.csv", index=False)
    (tmp_path / "domain.json").write_text(json.dumps({"a": 3, "b": 2}))
    return tmp_path


def test_synthetic_records_on_standard_output_and_the_ledger_line_apart(small, capsys):
    from dpgm.cli import main

    assert main(["synth", str(small / "data.csv"), "--domain", str(small / "domain.json"),
                 "--epsilon", "1", "--out", "-", "--rows", "25", "--seed", "1"]) == 0
    said = capsys.readouterr()
    assert said.out.splitlines()[0] == "a,b" and len(said.out.splitlines()) == 26
    assert "privacy spent" in said.err and "privacy spent" not in said.out


def test_a_reader_that_stops_early_is_not_an_error(small):
    """``dpgm synth ... --out - | head -1``: no "Broken pipe" message; the status of a
    process the pipe's signal ended."""
    command = (f"{sys.executable} -m dpgm synth {small / 'data.csv'} --domain "
               f"{small / 'domain.json'} --epsilon 1 --out - --rows 200000 --seed 1 "
               "| head -1; exit ${PIPESTATUS[0]}")
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True,
                          timeout=120)
    assert done.stdout == "a,b\n"
    assert done.returncode == 141 and "error" not in done.stderr.lower()


def test_two_outputs_on_standard_output_are_refused(small, capsys):
    from dpgm.cli import main

    with pytest.raises(OutputError, match="one of the inputs or outputs"):
        check_output("-", inputs=["/dev/stdout"] if writes_to_stdout("/dev/stdout") else ["-"])
    assert main(["synth", str(small / "data.csv"), "--domain", str(small / "domain.json"),
                 "--epsilon", "1", "--out", "-", "--ledger", "-"]) == 2
    said = capsys.readouterr()
    assert "one of the inputs or outputs" in said.err and said.out == ""
