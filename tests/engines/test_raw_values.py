"""Issue 24: DuckDB's SQL (and Spark's, where installed) reads every raw value as the
in-memory reader does, record by record, on tables of texts of every shape."""

from __future__ import annotations

import numpy as np
import pytest
from schema_helpers import RAW_SCHEMA as SCHEMA
from schema_helpers import random_text_table as random_table

from dpgm.dataset import read_raw_table


def table_codes(table, columns: int) -> np.ndarray:
    rows = table._fetch(f"SELECT * FROM {table._from}")  # the table keeps the file's order
    return np.column_stack([np.asarray(c, dtype=np.int64) for c in rows[:columns]])


@pytest.mark.parametrize("suffix", [".csv", ".csv.gz"])
def test_duckdb_reads_every_value_as_in_memory(tmp_path, suffix):
    pytest.importorskip("duckdb")
    from dpgm.engines.duckdb import DuckDBTable

    path = tmp_path / f"t{suffix}"
    random_table(3000, np.random.default_rng(1)).to_csv(path, index=False)
    expected = SCHEMA.encode(read_raw_table(path)).records
    table = DuckDBTable.encode(path, SCHEMA)
    np.testing.assert_array_equal(table_codes(table, len(SCHEMA.columns)), expected)


@pytest.mark.filterwarnings("ignore")
def test_spark_reads_every_value_as_in_memory(tmp_path, spark):
    from dpgm.engines.spark import SparkTable

    path = tmp_path / "t.csv"
    random_table(3000, np.random.default_rng(1)).to_csv(path, index=False)
    expected = SCHEMA.encode(read_raw_table(path))
    table = SparkTable.encode(str(path), SCHEMA, session=spark)
    names = tuple(SCHEMA.columns)
    np.testing.assert_array_equal(table.marginal(names), expected.marginal(names))
