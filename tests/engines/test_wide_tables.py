"""Tables of any width: the SQL engines count marginals of 65, 100 and 300 attributes as
the in-memory Dataset does (a GROUPING() call reads at most 64 columns, and Spark groups
by at most 64 in one query)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpgm import Dataset, Domain
from dpgm.engines.encoding import GROUPING_BITS
from dpgm.engines.sql import grouping_batches

WIDTHS = [65, 100, 300]


def _table(folder, width: int, rows: int = 400):
    rng = np.random.default_rng(width)
    domain = Domain([f"c{i}" for i in range(width)], [2 + i % 3 for i in range(width)])
    records = np.column_stack([rng.integers(k, size=rows) for k in domain.shape])
    path = folder / f"wide-{width}.parquet"
    pd.DataFrame(records, columns=domain.attrs).to_parquet(path, index=False)
    return path, Dataset(records, domain)


def _cliques(width: int) -> list[tuple[str, ...]]:
    """One-ways, neighbours, pairs across the table and a few triples: sets that reach
    every column, so that no one query could group them all in 64."""
    attrs = [f"c{i}" for i in range(width)]
    return ([(a,) for a in attrs] + list(zip(attrs, attrs[1:], strict=False))
            + [(attrs[i], attrs[i + width // 2]) for i in range(0, width // 2, 7)]
            + [(attrs[0], attrs[width // 3], attrs[-1]), ()])


def test_batches_group_by_at_most_the_limit_and_keep_every_clique():
    cliques = _cliques(300)
    batches = grouping_batches(cliques, GROUPING_BITS)
    assert sorted(c for b in batches for c in b) == sorted(cliques)
    assert all(len({a for c in b for a in c}) <= GROUPING_BITS for b in batches)
    assert len(batches) < 20  # first fit packs neighbours together
    assert grouping_batches(cliques, None) == [cliques]


@pytest.mark.parametrize("width", WIDTHS)
def test_duckdb_counts_tables_of_any_width(tmp_path, width):
    pytest.importorskip("duckdb")
    from dpgm.engines.duckdb import DuckDBTable

    path, reference = _table(tmp_path, width)
    engine = DuckDBTable(path, reference.domain)
    cliques = _cliques(width)
    for got, clique in zip(engine.marginals(cliques), cliques, strict=True):
        np.testing.assert_array_equal(got, reference.marginal(clique))


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("width", WIDTHS)
def test_spark_counts_tables_of_any_width(spark, tmp_path, width):
    from dpgm.engines.spark import SparkTable

    path, reference = _table(tmp_path, width, rows=200)
    engine = SparkTable(str(path), reference.domain, session=spark)
    cliques = _cliques(width)
    for got, clique in zip(engine.marginals(cliques), cliques, strict=True):
        np.testing.assert_array_equal(got, reference.marginal(clique))


def test_mst_runs_on_a_wide_parquet_file_with_duckdb(tmp_path):
    """The failure reported: 100 attributes in Parquet, dpgm synth --engine duckdb."""
    pytest.importorskip("duckdb")
    from dpgm.cli import main

    path, reference = _table(tmp_path, 100, rows=300)
    reference.domain.save(tmp_path / "domain.json")
    out = tmp_path / "synthetic.csv"
    assert main(["synth", str(path), "--domain", str(tmp_path / "domain.json"),
                 "--mechanism", "mst", "--epsilon", "1", "--engine", "duckdb", "--rows", "50",
                 "--seed", "0", "--out", str(out)]) == 0
    assert pd.read_csv(out).shape == (50, 100)


def test_batches_hold_at_most_max_sets():
    cliques = _cliques(100)
    batches = grouping_batches(cliques, None, 32)
    assert [c for b in batches for c in b] == cliques  # in order, none lost
    assert max(len(b) for b in batches) == 32
    both = grouping_batches(cliques, 10, 5)
    assert sorted(c for b in both for c in b) == sorted(cliques)
    assert all(len(b) <= 5 and len({a for c in b for a in c}) <= 10 for b in both)
