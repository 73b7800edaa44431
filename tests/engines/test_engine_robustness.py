"""Issue 24, item 7: the SQL engines read integer codes from a CSV file's text (a fraction is
refused wherever it is, as in memory), their failures are one-line errors naming the file,
and a file that changes between passes stops the count."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from engine_helpers import synth_on_engines

from dpgm import Dataset, Domain, Schema
from dpgm.errors import DataError, ParameterError

duckdb = pytest.importorskip("duckdb")
from dpgm.engines.duckdb import DuckDBTable  # noqa: E402

DOMAIN = Domain(["a", "b"], [3, 2])
COLOURS = Schema.from_json({"columns": {"colour": {"kind": "categorical",
                                                   "labels": ["red", "blue"]}}})
#: more records than DuckDB's sniffer samples (20,480), so a type guessed from them is
#: BIGINT, which rounds a later 1.5 to 2
SAMPLED = 21_000


def write_late_fraction(path, *, weights: bool = False) -> None:
    """Whole codes (and weights 0 or 1) for SAMPLED records, then a 1.5 (a weight 0.5)."""
    if weights:
        path.write_text("a,b,w\n" + "0,1,1\n" * SAMPLED + "1,0,0.5\n")
    else:
        path.write_text("a,b\n" + "0,1\n" * SAMPLED + "1.5,0\n")


def run_cli(argv: list[str], capsys) -> tuple[int, list[str]]:
    """``dpgm`` run in process: its status and the lines of stderr that are not progress."""
    from dpgm.cli import main

    status = main(argv)
    lines = [line for line in capsys.readouterr().err.splitlines()
             if line and not line.startswith("[dpgm]")]
    return status, lines


def synth(path, tmp_path, *extra: str) -> list[str]:
    (tmp_path / "domain.json").write_text(json.dumps(DOMAIN.to_dict()))
    return ["synth", str(path), "--domain", str(tmp_path / "domain.json"), "--epsilon", "1",
            "--engine", "duckdb", "--out", str(tmp_path / "out.csv"), *extra]


# -- 1. integer codes are whole numbers on the text ------------------------------------------
def test_a_fraction_among_integer_codes_is_refused_wherever_it_is(tmp_path):
    path = tmp_path / "codes.csv"
    write_late_fraction(path)
    with pytest.raises(DataError, match="non-integer value 1.5") as in_memory:
        Dataset.load(path, DOMAIN)
    with pytest.raises(DataError, match="column 'a' has a non-integer value 1.5; records "
                       "must be integer codes 0..2"):
        DuckDBTable(path, DOMAIN)
    assert "non-integer value 1.5" in str(in_memory.value)


def test_a_fractional_weight_after_whole_ones_is_not_rounded(tmp_path):
    path = tmp_path / "weights.csv"
    write_late_fraction(path, weights=True)
    assert DuckDBTable(path, DOMAIN, weights="w").total == SAMPLED + 0.5


def test_codes_read_from_text_follow_the_in_memory_reader(tmp_path):
    path = tmp_path / "texts.csv"
    path.write_text('a,b\n 2 ,1\n1e0,0\n+1,1\n2.,0\n"\t0",1\n')
    np.testing.assert_array_equal(DuckDBTable(path, DOMAIN).marginal(["a", "b"]),
                                  Dataset.load(path, DOMAIN).marginal(["a", "b"]))
    for text, found in (("0x1", "non-numeric value '0x1'"), ("inf", "non-numeric value 'inf'"),
                        ("1_0", "non-numeric value '1_0'"), ("5", "value 5, outside its domain"),
                        ("", "missing value")):
        path.write_text(f"a,b\n0,1\n{text},0\n")
        with pytest.raises(DataError, match=found):
            DuckDBTable(path, DOMAIN)


def test_the_command_line_refuses_the_fraction_in_one_line(tmp_path, capsys):
    path = tmp_path / "codes.csv"
    write_late_fraction(path)
    status, lines = run_cli(synth(path, tmp_path), capsys)
    assert status == 2
    assert lines == ["dpgm: error: column 'a' has a non-integer value 1.5; records must be "
                     "integer codes 0..2"]
    assert not (tmp_path / "out.csv").exists()


@pytest.mark.filterwarnings("ignore")
def test_spark_refuses_the_fraction_as_duckdb_does(spark, tmp_path):
    from dpgm.engines.spark import SparkTable

    path = tmp_path / "codes.csv"
    write_late_fraction(path)
    with pytest.raises(DataError, match="column 'a' has a non-integer value 1.5"):
        SparkTable(str(path), DOMAIN, session=spark)
    path.write_text("a,b\n 2 ,1\n1e0,0\n+1,1\n")
    np.testing.assert_array_equal(SparkTable(str(path), DOMAIN, session=spark).marginal(["a"]),
                                  Dataset.load(path, DOMAIN).marginal(["a"]))


# -- 2. the engines' failures are one-line errors ---------------------------------------------
def test_a_header_only_file_gives_what_the_in_memory_path_gives(tmp_path):
    path = tmp_path / "header.csv"
    path.write_text("a,b\n")
    (tmp_path / "domain.json").write_text(json.dumps(DOMAIN.to_dict()))
    outputs = synth_on_engines(path, ["--domain", str(tmp_path / "domain.json")],
                               ("numpy", "duckdb"), tmp_path, seed=1, rows=5)
    assert outputs[0] == outputs[1]


def test_a_row_shorter_than_the_header_reads_as_missing_values_as_in_memory(tmp_path):
    """pandas reads the missing fields of a short row as missing; DuckDB's sniffer refused
    the whole file, so the result depended on the engine (and on the size, under auto)."""
    path = tmp_path / "short.csv"
    path.write_text("a,b\nx,1\ny\nx,2\n")
    schema = Schema.from_json({"columns": {
        "a": {"kind": "categorical", "labels": ["x", "y"]},
        "b": {"kind": "categorical", "labels": ["1", "2"], "nullable": True}}})
    from dpgm.dataset import read_raw_table

    expected = schema.encode(read_raw_table(path)).marginal(["a", "b"])
    assert expected[1, 2] == 1  # the short row: b missing
    np.testing.assert_array_equal(DuckDBTable.encode(path, schema).marginal(["a", "b"]),
                                  expected)


def test_an_empty_file_is_refused_as_in_memory(tmp_path, capsys):
    path = tmp_path / "empty.csv"
    path.write_text("")
    status, lines = run_cli(synth(path, tmp_path), capsys)
    assert status == 2 and lines == [f"dpgm: error: {path}: the file is empty"]


def test_a_corrupt_parquet_file_is_one_line_naming_it(tmp_path, capsys):
    good, bad = tmp_path / "good.parquet", tmp_path / "bad.parquet"
    frame = pd.DataFrame({"a": np.arange(200_000) % 3, "b": np.arange(200_000) % 2})  # noqa: F841
    duckdb.sql(f"COPY (SELECT * FROM frame) TO '{good}' (FORMAT parquet)")
    data = good.read_bytes()
    # the first pages, not the footer: DuckDB fails with a bare duckdb.Error, not a reader's
    bad.write_bytes(data[:4] + b"\xff" * 3000 + data[3004:])
    status, lines = run_cli(synth(bad, tmp_path), capsys)
    assert status == 2 and len(lines) == 1
    assert lines[0].startswith(f"dpgm: error: {bad}: not a readable Parquet file")


def test_a_memory_limit_duckdb_cannot_work_in_is_refused_before_reading(tmp_path, capsys):
    broken = tmp_path / "broken.csv"
    broken.write_text('a,b\n0,1\n0\n"x\n')
    with pytest.raises(ParameterError, match="needs at least 134 MB of memory; memory_limit= "
                       "gives it 1 kB"):
        DuckDBTable(broken, DOMAIN, memory_limit="1kB")  # before the broken file is read
    with pytest.raises(ParameterError, match="needs at least"):
        DuckDBTable.encode(broken, COLOURS, memory_limit="1MB")
    with pytest.raises(ParameterError, match="expected a size such as 1GB"):
        DuckDBTable(broken, DOMAIN, memory_limit="lots")
    path = tmp_path / "codes.csv"
    path.write_text("a,b\n0,1\n")
    status, lines = run_cli(synth(path, tmp_path, "--max-memory", "1k"), capsys)
    assert status == 2 and len(lines) == 1
    assert "the duckdb engine needs at least 134 MB of memory" in lines[0]


def test_running_out_of_memory_is_one_line_naming_the_file(tmp_path, monkeypatch):
    import dpgm.engines.duckdb

    monkeypatch.setattr(dpgm.engines.duckdb, "MIN_MEMORY", 0)
    path = tmp_path / "codes.csv"
    path.write_text("a,b\n0,1\n")
    with pytest.raises(DataError, match=f"^{path}: DuckDB ran out of memory counting it; give "
                       "it more"):
        DuckDBTable(path, DOMAIN, memory_limit="1kB")


def without_java(tmp_path, java: str | None) -> dict[str, str]:
    """The environment of a process where JAVA_HOME holds ``java`` (a script) or nothing."""
    home = tmp_path / "jdk"
    if java is not None:
        (home / "bin").mkdir(parents=True)
        (home / "bin" / "java").write_text(java)
        (home / "bin" / "java").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "SPARK"))}
    return env | {"JAVA_HOME": str(home)}


START = ("from dpgm.engines.spark import start_session\n"
         "try:\n    start_session()\n"
         "except Exception as e:\n    print(type(e).__name__, e)\n")


@pytest.mark.parametrize(("java", "said"), [
    (None, "ParameterError the spark engine needs Java: JAVA_HOME ({home}) has no bin/java"),
    ("#!/bin/sh\nexit 1\n", "ParameterError the spark engine could not start Spark: its Java "
     "process exited"),
])
def test_spark_without_java_is_one_line(tmp_path, java, said):
    pytest.importorskip("pyspark")
    done = subprocess.run([sys.executable, "-c", START], env=without_java(tmp_path, java),
                          capture_output=True, text=True, timeout=120)
    assert done.stdout.startswith(said.format(home=tmp_path / "jdk"))
    assert done.stdout.count("\n") == 1


# -- 3. a file that changes between passes ----------------------------------------------------
def rewrite(path, text: str, *, keep_mtime: bool = False) -> None:
    """Write ``text`` into ``path``; its modification time moves on, or stays."""
    before = path.stat()
    path.write_text(text)
    if keep_mtime:
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    else:
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 10**9))


@pytest.mark.parametrize("keep_mtime", [False, True])
def test_a_file_changed_between_two_counts_stops_the_count(tmp_path, keep_mtime):
    path = tmp_path / "codes.csv"
    path.write_text("a,b\n0,1\n2,1\n")
    table = DuckDBTable(path, DOMAIN)
    table.marginal(["a"])
    rewrite(path, "a,b\n1,0\n1,0\n", keep_mtime=keep_mtime)  # the same size
    with pytest.raises(DataError) as error:
        table.marginal(["b"])
    assert str(error.value) == (f"{path} changed while it was being read; counts of two "
                                "versions cannot be mixed: read a copy that nothing writes to")


def test_a_changed_parquet_file_is_found_too(tmp_path):
    path = tmp_path / "codes.parquet"
    duckdb.sql(f"COPY (SELECT 0 AS a, 1 AS b) TO '{path}' (FORMAT parquet)")
    table = DuckDBTable(path, DOMAIN)
    duckdb.sql(f"COPY (SELECT 2 AS a, 0 AS b) TO '{path}' (FORMAT parquet)")
    with pytest.raises(DataError, match="changed while it was being read"):
        len(table)


def test_an_encoded_file_is_read_once(tmp_path):
    path = tmp_path / "raw.csv"
    path.write_text("colour\nred\nblue\nred\n")
    table = DuckDBTable.encode(path, COLOURS)
    rewrite(path, "colour\nblue\nblue\nblue\n")
    np.testing.assert_array_equal(table.marginal(["colour"]), [2, 1])  # the codes kept


@pytest.mark.filterwarnings("ignore")
def test_spark_finds_a_changed_file(spark, tmp_path):
    from dpgm.engines.spark import SparkTable

    path = tmp_path / "codes.csv"
    path.write_text("a,b\n0,1\n2,1\n")
    table = SparkTable(str(path), DOMAIN, session=spark)
    table.marginal(["a"])
    rewrite(path, "a,b\n1,0\n1,0\n", keep_mtime=True)
    with pytest.raises(DataError, match="changed while it was being read"):
        table.marginal(["b"])


def test_raw_weights_are_read_by_the_in_memory_grammar(tmp_path):
    path = tmp_path / "raw.csv"
    path.write_text("colour,w\nred, 0.5 \nblue,1\n")
    assert DuckDBTable.encode(path, COLOURS, weights="w").total == 1.5
    path.write_text("colour,w\nred,0_1\nblue,1\n")  # DuckDB's cast reads 1
    with pytest.raises(DataError, match="weights column 'w' must hold numbers in"):
        DuckDBTable.encode(path, COLOURS, weights="w")
