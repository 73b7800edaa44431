"""Issue 24: each raw value is read on its own, from the schema alone.

Neighbour tests: a table and the same table with one more record (anywhere, of any
shape) give every shared record the same code. Engine tests: DuckDB's SQL (and Spark's,
where installed) gives the codes of the in-memory reader record by record.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from schema_helpers import RAW_SCHEMA as SCHEMA
from schema_helpers import random_text_table as random_table

from dpgm.dataset import read_raw_table
from dpgm.errors import DomainError
from dpgm.schema import Schema
from dpgm.schema.parse import number, time_format


def test_the_tables_reach_every_label_both_ends_and_missing():
    """The neighbour tests have power: the random tables use every label, "other",
    the clipped first and last bins and the missing code of every column."""
    frame = random_table(4000, np.random.default_rng(0))
    codes = SCHEMA.encode(frame).records
    assert set(np.unique(codes[:, 0])) == set(range(SCHEMA.columns["zip"].size))
    for j, column in list(enumerate(SCHEMA.columns.values()))[1:]:
        ends = {0, column.size - 2, column.size - 1}
        assert ends <= set(np.unique(codes[:, j])), column.name


@pytest.mark.parametrize("seed", range(20))
def test_one_more_record_changes_no_other_record_s_code(seed, tmp_path):
    rng = np.random.default_rng(seed)
    frame = random_table(200, rng)
    extra = random_table(1, rng)
    at = int(rng.integers(0, len(frame) + 1))
    neighbour = pd.concat([frame.iloc[:at], extra, frame.iloc[at:]], ignore_index=True)
    frame.to_csv(tmp_path / "d.csv", index=False)
    neighbour.to_csv(tmp_path / "d1.csv", index=False)
    codes = SCHEMA.encode(read_raw_table(tmp_path / "d.csv")).records
    more = SCHEMA.encode(read_raw_table(tmp_path / "d1.csv")).records
    np.testing.assert_array_equal(np.delete(more, at, axis=0), codes)
    # and as a DataFrame of objects (fit(frame, schema=...)), the same codes
    np.testing.assert_array_equal(SCHEMA.encode(frame.astype(object)).records, codes)


def test_typed_values_are_read_by_their_own_type_in_an_object_column():
    column = SCHEMA.columns["zip"]
    mixed = pd.Series([True, 1, 1.0, "1", 7, 7.0, "7"], dtype=object)
    other = column.code("other")
    assert column.encode(mixed).tolist() == [4, other, other, other, 2, 2, 2]
    assert column.encode(mixed[::-1]).tolist() == [2, 2, 2, other, other, other, 4]


def test_the_number_grammar():
    assert [number(t) for t in ["1", "-1.5", ".5", "5.", "1e3", "+2E-1"]] == [
        1.0, -1.5, 0.5, 5.0, 1000.0, 0.2]
    assert [number(t) for t in ["inf", "nan", "1_0", "0x1", "1,5", " 1", ""]] == [None] * 7


def test_formats_are_checked_when_the_schema_is_read():
    assert time_format("%d/%m/%Y").java == "dd'/'MM'/'yyyy"
    for bad in ["%b %d %Y", "%d/%m", "%Y.%m.%d"]:
        with pytest.raises(DomainError):
            time_format(bad)


def test_labels_written_alike_are_refused():
    for labels in (["1", 1], [True, "True"], ["a", " a"]):
        with pytest.raises(DomainError, match="both written"):
            Schema.from_json({"columns": {"v": {"kind": "categorical", "labels": labels}}})


def test_schema_sizes_are_checked_before_anything_is_built():
    for spec in ({"kind": "numeric", "lower": 0, "upper": 1, "bins": 10**12},
                 {"kind": "datetime", "lower": "2000-01-01", "upper": "2001-01-01",
                  "width": "1us"}):
        with pytest.raises(DomainError, match="over 10,000,000"):
            Schema.from_json({"columns": {"v": spec}})


def test_a_draft_of_a_parquet_file_reads_its_types_and_no_record(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    from dpgm.schema.draft import draft

    path = tmp_path / "t.parquet"
    duckdb.sql(f"COPY (SELECT 'x' AS a, 1 AS n, DATE '2020-01-01' AS d) TO '{path}' "
               "(FORMAT parquet)")
    columns = draft(path)["columns"]
    assert [columns[c]["kind"] for c in "and"] == ["categorical", "numeric", "datetime"]
    assert columns["a"]["labels"] is None and columns["n"]["lower"] is None
