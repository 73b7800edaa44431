"""Synthetic tables written chunk by chunk (issue 27): CSV, gzip CSV and Parquet hold the
same records; the output is whole or absent after an error, a full disk or SIGTERM; the
budget's ledger line is printed even when writing fails after spending."""

from __future__ import annotations

import errno
import gzip
import os
import resource
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

from dpgm import Domain, MarkovRandomField
from dpgm.cli import main
from dpgm.cli.output import probe, table_format, write_chunks
from dpgm.cli.signals import Terminated

DOMAIN = Domain(["a", "b", "c"], [2, 3, 4], labels={"b": ["x", "y", "z"]})


@pytest.fixture
def model_file(tmp_path):
    rng = np.random.default_rng(0)
    model = MarkovRandomField(DOMAIN, {("a", "b"): rng.normal(size=(2, 3)),
                                       ("b", "c"): rng.normal(size=(3, 4))}, 1000.0)
    path = tmp_path / "model.dpgm"
    model.save(path)
    return path


def sample(model, out, *options) -> int:
    return main(["model", "sample", str(model), "--out", str(out), "--seed", "4", *options])


def leftovers(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_csv_gzip_and_parquet_hold_the_same_records(model_file, tmp_path):
    frames = {}
    for name in ("t.csv", "t.csv.gz", "t.parquet"):
        assert sample(model_file, tmp_path / name, "--rows", "2500", "--chunk-rows", "700") == 0
        read = pd.read_parquet if name.endswith("parquet") else pd.read_csv
        frames[name] = read(tmp_path / name)
    with gzip.open(tmp_path / "t.csv.gz", "rt") as handle:  # a real gzip stream
        assert handle.readline().strip() == "a,b,c"
    assert frames["t.csv"].shape == (2500, 3)
    pd.testing.assert_frame_equal(frames["t.csv"], frames["t.csv.gz"])
    pd.testing.assert_frame_equal(frames["t.csv"], frames["t.parquet"])
    assert set(frames["t.csv"]["b"]) <= {"x", "y", "z"}  # labels, not codes
    assert not leftovers(tmp_path)


def test_one_chunk_and_many_give_records_of_one_law(model_file, tmp_path):
    """Chunked and whole outputs follow the model: same one-way shares within noise."""
    sample(model_file, tmp_path / "one.csv", "--rows", "20000")
    sample(model_file, tmp_path / "many.csv", "--rows", "20000", "--chunk-rows", "1500")
    one, many = pd.read_csv(tmp_path / "one.csv"), pd.read_csv(tmp_path / "many.csv")
    for column in DOMAIN.attrs:
        shares = [f[column].value_counts(normalize=True).sort_index() for f in (one, many)]
        np.testing.assert_allclose(shares[0], shares[1], atol=0.01)
    assert not one.equals(many)


def test_parquet_types_come_from_the_domain_not_from_a_chunk(tmp_path):
    """A first chunk whose label column is all missing must not fix its type as null."""
    domain = Domain(["k"], [2], labels={"k": ["p", "q"]})
    types = probe(domain, lambda d: d.to_pandas(labels=True))
    chunks = [pd.DataFrame({"k": pd.Series([None, None], dtype=object)}),
              pd.DataFrame({"k": ["p", "q"]})]
    assert write_chunks(chunks, tmp_path / "k.parquet", types=types) == 4
    read = pd.read_parquet(tmp_path / "k.parquet")
    assert read["k"].tolist()[2:] == ["p", "q"] and read["k"].isna().sum() == 2


def test_an_error_mid_stream_leaves_nothing(tmp_path):
    def chunks():
        yield pd.DataFrame({"a": [1, 2]})
        raise OSError(errno.ENOSPC, "No space left on device")

    for name in ("e.csv", "e.csv.gz", "e.parquet"):
        with pytest.raises(OSError, match="No space"):
            write_chunks(chunks(), tmp_path / name, types=pd.DataFrame({"a": [0]}))
    assert not list(tmp_path.iterdir())


def test_a_full_disk_while_synth_writes_prints_the_ledger_and_leaves_nothing(
        tmp_path, capsys, monkeypatch):
    """The budget was spent before writing: its ledger line is printed beside the one-line
    error, and neither the output nor its temporary file is left."""
    rng = np.random.default_rng(1)
    pd.DataFrame(rng.integers(2, size=(500, 3)), columns=["a", "b", "c"]).to_csv(
        tmp_path / "data.csv", index=False)
    Domain(["a", "b", "c"], [2, 2, 2]).save(tmp_path / "domain.json")
    written = []

    def full(self, *args, **kwargs):
        if written:
            raise OSError(errno.ENOSPC, "No space left on device")
        written.append(1)
        return original(self, *args, **kwargs)

    original = pd.DataFrame.to_csv
    monkeypatch.setattr(pd.DataFrame, "to_csv", full)
    out = tmp_path / "out" / "synthetic.csv"
    out.parent.mkdir()
    code = main(["synth", str(tmp_path / "data.csv"), "--domain", str(tmp_path / "domain.json"),
                 "--epsilon", "1", "--seed", "0", "--rows", "1000", "--chunk-rows", "300",
                 "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 2
    assert "dpgm: error: No space left on device" in captured.err
    assert "privacy spent: epsilon=1" in captured.err
    assert not list(out.parent.iterdir())


def _dpgm(*args, **options) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "dpgm", *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            **options)


def test_a_file_size_limit_fails_the_command_in_one_line_and_leaves_nothing(
        model_file, tmp_path):
    """A real write failure (the file-size limit: Python ignores SIGXFSZ, so writing
    fails with EFBIG as on a full disk)."""
    out = tmp_path / "out"
    out.mkdir()

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))

    run = _dpgm("model", "sample", model_file, "--rows", "200000", "--chunk-rows", "20000",
                "--out", out / "big.csv", preexec_fn=limit)
    _, err = run.communicate(timeout=120)
    assert run.returncode == 2, err
    assert err.strip().splitlines()[-1] == "dpgm: error: File too large"
    assert not list(out.iterdir())


def test_sigterm_while_writing_leaves_nothing(model_file, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    run = _dpgm("model", "sample", model_file, "--rows", "100000000", "--chunk-rows",
                "50000", "--out", out / "huge.csv.gz")
    deadline = time.monotonic() + 60
    while not list(out.iterdir()) and time.monotonic() < deadline:  # its temporary file
        time.sleep(0.05)
    assert list(out.iterdir()), "the command never started writing"
    run.send_signal(signal.SIGTERM)
    _, err = run.communicate(timeout=60)
    assert run.returncode == 143, err  # 128 + SIGTERM
    assert "interrupted; no output was written" in err
    assert not list(out.iterdir())


def test_formats_are_chosen_by_the_name(tmp_path):
    assert table_format(tmp_path / "x.parquet") == "parquet"
    assert table_format(tmp_path / "x.CSV.GZ") == "csv.gz"
    assert table_format(tmp_path / "x.csv") == "csv"
    assert table_format("-") == "csv"


def test_stdout_gets_one_header_and_every_chunk(model_file, capsys):
    assert sample(model_file, "-", "--rows", "50", "--chunk-rows", "20") == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "a,b,c" and len(lines) == 51


@pytest.mark.skipif(not hasattr(os, "statvfs"), reason="needs a file system's free space")
def test_rows_beyond_the_free_disk_space_are_refused_before_sampling(model_file, tmp_path,
                                                                     capsys):
    code = sample(model_file, tmp_path / "t.csv", "--rows", "1e13", "--chunk-rows", "1000")
    assert code == 2
    assert "need at least" in capsys.readouterr().err
    assert not list(p for p in tmp_path.iterdir() if p.name != "model.dpgm")


def test_a_model_estimating_over_a_billion_records_asks_for_rows(tmp_path, capsys):
    """A tiny epsilon makes the noisy record count huge: beyond a billion, --rows must be
    given (up to it, the records are written a chunk at a time)."""
    rng = np.random.default_rng(0)
    model = MarkovRandomField(DOMAIN, {("a", "b"): rng.normal(size=(2, 3))}, 2e9)
    model.save(tmp_path / "huge.dpgm")
    assert sample(tmp_path / "huge.dpgm", tmp_path / "t.csv.gz") == 2
    assert "estimates 2,000,000,000 records" in capsys.readouterr().err
    assert not (tmp_path / "t.csv.gz").exists()


def test_sigterm_whose_exception_was_swallowed_still_stops_the_write(model_file, tmp_path,
                                                                   monkeypatch, capsys):
    """The signal's exception can land in a finaliser, where Python only prints it: the
    writer still stops at the next chunk and leaves nothing."""
    to_csv = pd.DataFrame.to_csv

    def swallowed_kill(self, *args, **kwargs):
        to_csv(self, *args, **kwargs)
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)  # the handler runs here, in this frame
        except Terminated:
            pass

    monkeypatch.setattr(pd.DataFrame, "to_csv", swallowed_kill)
    assert sample(model_file, tmp_path / "o.csv", "--rows", "100", "--chunk-rows", "20") == 143
    assert "interrupted" in capsys.readouterr().err
    assert not list(tmp_path.glob("o.csv*")) and not list(tmp_path.glob(".o.csv*"))
