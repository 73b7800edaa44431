"""Issue 24: `--engine auto` picks an engine from the file's size, so the engines must
never disagree on a result: the raw-table battery (texts of every shape) gives the same
synthetic file, byte for byte, on every installed engine for a seed."""

from __future__ import annotations

import importlib.util
import json
import shutil

import numpy as np
import pytest
from engine_helpers import synth_on_engines
from schema_helpers import RAW_SCHEMA, random_text_table

pytest.importorskip("duckdb")


def installed_engines() -> list[str]:
    engines = ["numpy", "duckdb"]
    if importlib.util.find_spec("pyspark") and shutil.which("java"):
        engines.append("spark")
    return engines


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("suffix", [".csv", ".csv.gz"])
def test_every_engine_writes_the_same_synthetic_file(tmp_path, suffix):
    data = tmp_path / f"raw{suffix}"
    random_text_table(2000, np.random.default_rng(5)).to_csv(data, index=False)
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(RAW_SCHEMA.to_json()))
    outputs = synth_on_engines(data, ["--schema", str(schema)], installed_engines(), tmp_path,
                               seed=3, rows=500)
    assert len(set(outputs)) == 1
    assert outputs[0].count("\n") == 501
