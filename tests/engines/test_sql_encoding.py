"""A raw table encoded inside the SQL engines gets, record by record, the codes the
schema's in-memory encoder gives it (issue 15: labels, bins, clipping, missing values),
from CSV (read as text) and from Parquet (typed columns)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpgm.dataset import read_raw_table
from dpgm.errors import DataError, DomainError
from dpgm.schema import Schema

duckdb = pytest.importorskip("duckdb")
from dpgm.engines.duckdb import DuckDBTable  # noqa: E402

SCHEMA = Schema.from_json({"columns": {
    "colour": {"kind": "categorical", "labels": ["red", "green", "blue"], "other": True,
               "nullable": True},
    "code": {"kind": "categorical", "labels": [1, 2, 3, "4"]},
    "flag": {"kind": "categorical", "labels": [True, False], "nullable": True},
    "grade": {"kind": "categorical", "labels": [1.5, 2.5, "3"]},
    "score": {"kind": "numeric", "bins": [0, 0.1, 0.3, 1, 10, 100], "nullable": True},
    "age": {"kind": "numeric", "lower": 0, "upper": 90, "bins": 9, "integer": True},
    "when": {"kind": "datetime", "lower": "2020-01-01", "upper": "2020-03-01",
             "width": "7D", "nullable": True},
    # edges of its own, as discover learns them, each bin cut in two on whole days
    "seen": {"kind": "datetime", "bins": ["2020-01-01", "2020-01-15", "2020-01-20",
                                          "2020-03-01"], "refine": 2, "nullable": True},
}})


def to_parquet(frame: pd.DataFrame, path) -> None:
    """Written by DuckDB, so that the tests need no pyarrow."""
    connection = duckdb.connect()
    connection.register("frame", frame)
    connection.execute(f"COPY frame TO '{path}' (FORMAT parquet)")


def raw_frame(n: int, seed: int) -> pd.DataFrame:
    """Every rule at work: padded labels, other, missing values of each kind, values on
    bin edges and outside the bounds, floats that are whole numbers."""
    rng = np.random.default_rng(seed)
    edges = [0, 0.1, 0.3, 1, 10, 100, -5, 250, 0.30000000000000004]
    score = np.where(rng.random(n) < 0.3, rng.choice(edges, size=n),
                     np.round(rng.lognormal(0, 2, size=n), 3))
    score[rng.random(n) < 0.05] = np.nan
    times = pd.Timestamp("2019-12-20") + pd.to_timedelta(rng.integers(0, 80 * 24, n), unit="h")
    on_edge = rng.random(n) < 0.2
    times = times.where(~on_edge, pd.Timestamp("2020-01-08") + pd.to_timedelta(
        7 * rng.integers(0, 8, n), unit="D"))
    return pd.DataFrame({
        "colour": rng.choice(np.array(["red", "green", "blue", " red ", "\tgreen", "blue\x0c",
                                       "purple", None, ""], dtype=object), size=n),
        "code": rng.choice([1, 2, 3, 4], size=n),
        "flag": rng.choice(np.array([True, False, None], dtype=object), size=n),
        "grade": rng.choice([1.5, 2.5, 3.0], size=n),
        "score": score,
        "age": rng.integers(-10, 120, size=n),
        "when": times.where(rng.random(n) > 0.05),
        "seen": times.where(rng.random(n) > 0.05),
        "w": rng.uniform(0, 1, size=n),
    })


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("raw")
    frame = raw_frame(3000, 0)
    frame.to_csv(folder / "raw.csv", index=False)
    frame.to_csv(folder / "raw.csv.gz", index=False)
    to_parquet(frame, folder / "raw.parquet")
    return folder


def reference(path):
    from dpgm.dataset import read_raw_table

    return SCHEMA.encode(read_raw_table(path), weights="w")


def codes_of(table: DuckDBTable) -> np.ndarray:
    columns = table._fetch(f"SELECT * FROM {table._from}")  # the table keeps the file's order
    return np.column_stack([np.asarray(c, dtype=np.int64) for c in columns[:len(SCHEMA.columns)]])


@pytest.mark.parametrize("name", ["raw.csv", "raw.csv.gz", "raw.parquet"])
def test_every_record_gets_the_in_memory_code(files, name):
    expected = reference(files / name)
    table = DuckDBTable.encode(files / name, SCHEMA, weights="w")
    np.testing.assert_array_equal(codes_of(table), expected.records)
    assert table.weighted and table.total == pytest.approx(expected.total, rel=1e-12)
    for clique in [("colour", "flag"), ("score", "when"), tuple(SCHEMA.columns)]:
        np.testing.assert_allclose(table.marginal(clique), expected.marginal(clique),
                                   rtol=1e-12)


def test_the_encoding_is_tested_against_a_table_that_uses_every_code(files):
    """The comparison above has power: every code of every column occurs, so a rule
    that moved one value to another code would show."""
    expected = reference(files / "raw.csv")
    for j, column in enumerate(SCHEMA.columns.values()):
        assert set(np.unique(expected.records[:, j])) == set(range(column.size)), column.name


@pytest.mark.parametrize(("values", "spec", "needle"), [
    (["red", "pink"], {"kind": "categorical", "labels": ["red"]}, "'pink', which is not one"),
    (["red", None], {"kind": "categorical", "labels": ["red"]}, "has a missing value"),
    (["1.5", "x"], {"kind": "numeric", "lower": 0, "upper": 2}, "non-numeric value 'x'"),
    (["1.5", "inf"], {"kind": "numeric", "lower": 0, "upper": 2}, "infinite value 'inf'"),
    (["2020-01-02", "soon"], {"kind": "datetime", "lower": "2020-01-01",
                              "upper": "2020-02-01", "width": "1D"}, "'soon' that is not a date"),
])
def test_a_value_without_a_code_is_refused_with_the_in_memory_reason(tmp_path, values, spec,
                                                                      needle):
    schema = Schema.from_json({"columns": {"v": spec}})
    pd.DataFrame({"v": values}).to_csv(tmp_path / "bad.csv", index=False)
    with pytest.raises(DataError) as in_memory:
        schema.encode(read_raw_table(tmp_path / "bad.csv"))
    with pytest.raises(DataError, match=needle) as in_sql:
        DuckDBTable.encode(tmp_path / "bad.csv", schema)
    # the same kind of error, worded alike (the SQL engines cannot name a row)
    assert str(in_sql.value).split(" at row")[0][:20] == str(in_memory.value)[:20]


def test_missing_columns_repeated_names_and_sub_microsecond_dates_are_refused(tmp_path):
    (tmp_path / "broken.csv").write_text('colour,code\n1,2\n3,4,5\n"x\n')
    with pytest.raises(DataError, match="not a readable CSV file"):
        DuckDBTable.encode(tmp_path / "broken.csv", SCHEMA)
    (tmp_path / "broken.parquet").write_text("not parquet")
    with pytest.raises(DataError, match="not a readable Parquet file"):
        DuckDBTable.encode(tmp_path / "broken.parquet", SCHEMA)
    pd.DataFrame({"colour": ["red"]}).to_csv(tmp_path / "short.csv", index=False)
    with pytest.raises(DataError, match=r"no column for \['code'"):
        DuckDBTable.encode(tmp_path / "short.csv", SCHEMA)
    (tmp_path / "twice.csv").write_text("v,v\n1,2\n")
    schema = Schema.from_json({"columns": {"v": {"kind": "categorical", "labels": [1, 2]}}})
    with pytest.raises(DataError, match="more than once"):
        DuckDBTable.encode(tmp_path / "twice.csv", schema)
    fine = Schema.from_json({"columns": {"t": {
        "kind": "datetime", "lower": "2020-01-01", "upper": "2020-01-02",
        "width": "3600000000001ns"}}})
    pd.DataFrame({"t": ["2020-01-01"]}).to_csv(tmp_path / "t.csv", index=False)
    with pytest.raises(DomainError, match="whole microseconds"):
        DuckDBTable.encode(tmp_path / "t.csv", fine)
    with pytest.raises(DomainError, match="whole microseconds"):  # before opening a file
        DuckDBTable.encode(tmp_path / "absent.csv", fine)


def test_missing_texts_are_missing_in_every_text_column_and_a_label_wins(tmp_path):
    """pandas' missing-value texts are missing wherever a value is text, from CSV and from
    Parquet, on both paths; a label written that way is the label (issue 24)."""
    from dpgm.dataset import read_raw_table

    schema = Schema.from_json({"columns": {"v": {"kind": "categorical", "labels": ["NA", "a"],
                                                 "nullable": True}}})
    pd.DataFrame({"v": ["NA", "a", "n/a"]}).to_csv(tmp_path / "v.csv", index=False)
    to_parquet(pd.DataFrame({"v": ["NA", "a", "n/a"]}), tmp_path / "v.parquet")
    for name in ("v.csv", "v.parquet"):
        from_sql = DuckDBTable.encode(tmp_path / name, schema).marginal(["v"])
        np.testing.assert_array_equal(from_sql, [1, 1, 1])  # the label "NA", a, missing
        np.testing.assert_array_equal(
            from_sql, schema.encode(read_raw_table(tmp_path / name)).marginal(["v"]))


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", ["raw.csv", "raw.csv.gz", "raw.parquet", "frame"])
def test_spark_encodes_as_duckdb_and_the_in_memory_encoder_do(spark, files, name):
    """The same codes on Spark local[2], from files and from a DataFrame: compared
    through the marginal on every column, a count per distinct record."""
    from dpgm.engines.spark import SparkTable

    if name == "frame":
        frame = raw_frame(3000, 0)
        expected = SCHEMA.encode(frame, weights="w")
        rows = [tuple(None if pd.isna(v) else v.to_pydatetime() if isinstance(v, pd.Timestamp)
                      else v.item() if isinstance(v, np.generic) else v for v in row)
                for row in frame.itertuples(index=False)]
        source = spark.createDataFrame(rows, schema=list(frame.columns))
    else:
        expected, source = reference(files / name), str(files / name)
    zone = spark.conf.get("spark.sql.session.timeZone")
    if name != "frame":  # dates in files are read as written, whatever the session's zone
        spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        table = SparkTable.encode(source, SCHEMA, weights="w", session=spark)
        everything = tuple(SCHEMA.columns)
        np.testing.assert_allclose(table.marginals([everything, ("age",)])[0],
                                   expected.marginal(everything), rtol=1e-12)
        assert table.total == pytest.approx(expected.total, rel=1e-12)
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)


def test_the_codes_live_in_the_folder_given_while_the_table_lives(files, tmp_path):
    import gc

    folder = tmp_path / "not" / "yet"
    table = DuckDBTable.encode(files / "raw.parquet", SCHEMA, temp_directory=folder)
    assert list(folder.glob("dpgm-*/records.duckdb"))
    assert table.marginal(["code"]).sum() == 3000
    del table
    gc.collect()
    assert not list(folder.glob("dpgm-*"))
