"""Progress a person can see (issue 25, item 7): bars or lines with public facts only —
step i of a public N, released values — and never a time."""

from __future__ import annotations

import re
import sys

import pytest
from schema_helpers import block_import

from dpgm.errors import ParameterError
from dpgm.progress import Reporter

#: what a time looks like in tqdm's output: elapsed/remaining, rates
TIMING = re.compile(r"\d\d:\d\d|it/s|s/it|<|\?it")


def test_lines_come_every_tenth_step_with_the_released_value():
    lines: list[str] = []
    step = Reporter(lines.append).steps(20, "estimation")
    for i in range(1, 21):
        step(i, 1.0 / i)
    assert lines == [f"estimation {i}/20: {1.0 / i:.6g}" for i in range(2, 21, 2)]


def test_say_once_says_each_line_once_and_say_repeats():
    lines: list[str] = []
    reporter = Reporter(lines.append)
    for line in ("a notice", "a notice", "another", "a notice"):
        reporter.say_once(line)
    reporter.say("a stage")
    reporter.say("a stage")
    assert lines == ["a notice", "another", "a stage", "a stage"]


def test_a_bar_shows_steps_and_values_and_no_time(capsys):
    pytest.importorskip("tqdm")
    reporter = Reporter(True)
    assert reporter.bars is not None
    # draw every update (tqdm draws at most every 0.1 s) so that each one can be read
    reporter.bar_options["mininterval"] = 0
    step = reporter.steps(50, "estimation")
    for i in range(1, 51):
        step(i, 3.25)
    reporter.say("measured 4 marginals")
    err = capsys.readouterr().err
    assert "49/50" in err and "3.25" in err and "[dpgm] measured 4 marginals" in err
    assert not TIMING.search(err), err


def test_without_tqdm_true_gives_lines_on_stderr(monkeypatch, capsys):
    block_import(monkeypatch, "tqdm")
    reporter = Reporter(True)
    assert reporter.bars is None
    step = reporter.steps(10, "round")
    for i in range(1, 11):
        step(i)
    assert capsys.readouterr().err.splitlines() == [f"[dpgm] round {i}/10" for i in range(1, 11)]


def test_silent_by_default_except_in_a_notebook(monkeypatch):
    pytest.importorskip("tqdm")
    assert Reporter(None).silent and Reporter(False).silent
    monkeypatch.setitem(sys.modules, "ipykernel", object())
    assert Reporter(None).bars is not None


def test_a_mechanism_takes_true_and_refuses_what_is_not_progress(capsys):
    import numpy as np

    from dpgm import Dataset, Domain
    from dpgm.mechanisms import MST

    data = Dataset(np.random.default_rng(0).integers(0, 2, (300, 3)), Domain.from_dict(
        {"a": 2, "b": 2, "c": 2}))
    MST(1.0, iters=20, progress=True).fit(data, rng=0)
    err = capsys.readouterr().err
    assert "[dpgm] measured" in err and "300" not in err and not TIMING.search(err)
    with pytest.raises(ParameterError, match="progress must be a function"):
        MST(1.0, progress=3)


def test_a_bars_frames_do_not_depend_on_time(capsys):
    """Which steps a bar draws must not follow the clock (tqdm's default redraws every
    0.1 s): the rate would show, and with it the number of records."""
    pytest.importorskip("tqdm")
    import time

    outputs = []
    for pause in (0.0, 0.003):
        step = Reporter(True).steps(120, "estimation")
        for i in range(1, 121):
            time.sleep(pause)
            step(i)
        outputs.append(capsys.readouterr().err)
    assert outputs[0] == outputs[1] and "60/120" in outputs[0]
