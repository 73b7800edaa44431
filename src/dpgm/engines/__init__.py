"""Counting engines: where the counts every mechanism needs (marginals, the record count)
are computed. A :class:`~dpgm.dataset.Dataset` counts in memory with NumPy;
:class:`~dpgm.engines.duckdb.DuckDBTable` counts a CSV or Parquet file with DuckDB, out of
core. Engines compute exact counts only: noise is the privacy layer's job.
"""
