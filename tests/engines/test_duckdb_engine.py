"""The DuckDB counting engine gives the marginals the in-memory Dataset gives (issue 15's
first acceptance point, for the duckdb engine on integer codes)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpgm import Dataset, Domain
from dpgm.errors import DataError

duckdb = pytest.importorskip("duckdb")
from dpgm.engines.duckdb import DuckDBTable  # noqa: E402

DOMAIN = Domain(["a", "b", "c", "d"], [3, 2, 5, 4])


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    rng = np.random.default_rng(0)
    records = np.column_stack([rng.integers(k, size=5000) for k in DOMAIN.shape])
    weights = rng.uniform(0, 1, 5000)
    frame = pd.DataFrame(records, columns=DOMAIN.attrs).assign(w=weights, extra="x")
    folder = tmp_path_factory.mktemp("engine")
    frame.to_csv(folder / "records.csv", index=False)
    frame.to_csv(folder / "records.csv.gz", index=False)
    duckdb.sql(f"COPY (SELECT * FROM read_csv('{folder / 'records.csv'}')) "
               f"TO '{folder / 'records.parquet'}' (FORMAT parquet)")
    return folder, Dataset(records, DOMAIN), Dataset(records, DOMAIN, weights)


CLIQUES = [("a",), ("c", "a"), ("a", "b", "d"), (), ("d", "c", "b", "a")]


@pytest.mark.parametrize("name", ["records.csv", "records.csv.gz", "records.parquet"])
def test_every_marginal_is_the_in_memory_one(table, name):
    folder, plain, weighted = table
    for weights, reference in ((None, plain), ("w", weighted)):
        engine = DuckDBTable(folder / name, DOMAIN, weights=weights, memory_limit="256MB")
        assert len(engine) == len(reference)
        assert engine.total == pytest.approx(reference.total, rel=1e-12)
        for clique in CLIQUES:
            np.testing.assert_allclose(engine.marginal(clique), reference.marginal(clique),
                                       rtol=1e-12)
        for got, clique in zip(engine.marginals(CLIQUES), CLIQUES, strict=True):
            np.testing.assert_allclose(got, reference.marginal(clique), rtol=1e-12)


def test_cells_no_record_falls_in_are_zero(tmp_path):
    path = tmp_path / "few.csv"
    pd.DataFrame({"a": [0, 0, 2], "b": [1, 1, 1], "c": [4, 4, 0], "d": [0, 0, 0]}).to_csv(
        path, index=False)
    counts = DuckDBTable(path, DOMAIN).marginal(["a", "c"])
    expected = np.zeros((3, 5))
    expected[0, 4], expected[2, 0] = 2, 1
    np.testing.assert_array_equal(counts, expected)


@pytest.mark.parametrize(("frame", "needle"), [
    (pd.DataFrame({"a": [0, 3], "b": [0, 1], "c": [0, 0], "d": [0, 0]}),
     "column 'a' has value 3, outside its domain 0..2"),
    (pd.DataFrame({"a": [0, 1], "b": [0, None], "c": [0, 0], "d": [0, 0]}),
     "column 'b' has a missing value"),
    (pd.DataFrame({"a": [0, 1], "b": [0, 1], "c": [0, 0]}), "no column for ['d']"),
])
def test_bad_files_are_refused_with_a_clear_error(tmp_path, frame, needle):
    path = tmp_path / "bad.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(DataError) as error:
        DuckDBTable(path, DOMAIN)
    assert needle in str(error.value)


def test_weights_outside_zero_one_and_unknown_formats_are_refused(tmp_path):
    path = tmp_path / "w.csv"
    pd.DataFrame({"a": [0], "b": [0], "c": [0], "d": [0], "w": [1.5]}).to_csv(path, index=False)
    with pytest.raises(DataError, match="weights column"):
        DuckDBTable(path, DOMAIN, weights="w")
    with pytest.raises(DataError, match="reads .csv"):
        DuckDBTable(tmp_path / "records.json", DOMAIN)
    (tmp_path / "broken.csv").write_text('a,b,c,d\n1,2,3,4\n1,2\n"x\n')
    with pytest.raises(DataError, match="not a readable CSV file"):
        DuckDBTable(tmp_path / "broken.csv", DOMAIN)
    assert "5000" not in repr(DuckDBTable(path, DOMAIN))


def test_parquet_files_load_in_memory_too(table):
    from dpgm.dataset import read_table

    folder, plain, _ = table
    loaded = Dataset.from_pandas(read_table(folder / "records.parquet"), DOMAIN)
    np.testing.assert_array_equal(loaded.marginal(["a", "d"]), plain.marginal(["a", "d"]))
    assert list(read_table(folder / "records.parquet", nrows=0).columns)[:4] == list(DOMAIN.attrs)


def test_a_marginal_is_counted_once_and_its_cached_table_cannot_be_changed(table, monkeypatch):
    import dpgm.engines.sql

    folder, plain, _ = table
    said = []
    engine = DuckDBTable(folder / "records.parquet", DOMAIN)
    engine.progress = said.append
    first = engine.marginals([("a", "b"), ("c",)])
    first[0][:] = -1  # the caller's copy
    again = engine.marginals([("c",), ("a", "b"), ("a", "b")])
    assert len(said) == 1  # one pass for both calls
    np.testing.assert_array_equal(again[1], plain.marginal(["a", "b"]))
    np.testing.assert_array_equal(again[2], plain.marginal(["a", "b"]))
    engine.marginal(["d"])
    assert len(said) == 2
    # beyond the cache's size, tables are counted again
    monkeypatch.setattr(dpgm.engines.sql, "CACHED_CELLS", 3)
    small = DuckDBTable(folder / "records.parquet", DOMAIN)
    small.progress = said.append
    small.marginal(["a", "b"]), small.marginal(["a", "b"])
    assert len(said) == 4
