"""Counting integer-coded records with Spark (a cluster, or ``local[*]``): the counting
interface of :class:`~dpgm.dataset.Dataset` on a Spark DataFrame or a CSV / Parquet path.
Only the count tables come back to the driver — never a record. PySpark is an optional
dependency (``pip install 'dpgm[spark]'``; it needs Java).

On a cluster, with the integer-coded table in Parquet on shared storage::

    spark-submit --master yarn fit.py      # fit.py:
    #   from pyspark.sql import SparkSession
    #   import dpgm
    #   from dpgm.engines.spark import SparkTable
    #   spark = SparkSession.builder.getOrCreate()
    #   data = SparkTable("hdfs:///census/codes.parquet", dpgm.Domain.load("domain.json"),
    #                     session=spark)
    #   model = dpgm.mechanisms.MST(epsilon=1.0).fit(data)
    #   model.synthetic_data().to_pandas().to_csv("synthetic.csv", index=False)
"""

from __future__ import annotations

import itertools
from os import PathLike

import numpy as np

from dpgm.domain import Domain
from dpgm.engines.sql import SQLCounts
from dpgm.errors import DataError

_views = itertools.count()


class SparkTable(SQLCounts):
    """Integer-coded records counted by Spark SQL: ``source`` a Spark DataFrame, or the
    path of a CSV (with a header) or Parquet file; one column per attribute of ``domain``
    with codes ``0..size-1``, optionally a ``weights`` column in [0, 1]; ``session`` the
    SparkSession (the active one by default). Checked when made, as a Dataset is."""

    grouping = "grouping_id"
    quote = "`"

    def __init__(self, source, domain: Domain, *, weights: str | None = None,
                 session=None):
        try:
            from pyspark.sql import DataFrame, SparkSession
        except ImportError:
            raise ImportError("the spark engine needs PySpark: pip install 'dpgm[spark]'"
                              ) from None
        if not isinstance(domain, Domain):
            raise DataError(f"domain must be a dpgm.Domain, got {type(domain).__name__}")
        spark = session or SparkSession.getActiveSession()
        if spark is None:
            raise DataError("no active SparkSession: start one, or pass session=")
        if isinstance(source, DataFrame):
            frame, self.path = source, None
        elif isinstance(source, (str, PathLike)):
            path = str(source)
            if path.lower().endswith((".parquet", ".pq")):
                frame = spark.read.parquet(path)
            elif path.lower().endswith((".csv", ".csv.gz")):
                frame = spark.read.csv(path, header=True, inferSchema=True)
            else:
                raise DataError(f"{path}: the spark engine reads .csv, .csv.gz and .parquet")
            self.path = path
        else:
            raise DataError(f"source must be a Spark DataFrame or a path, not "
                            f"{type(source).__name__}")
        self.domain, self.weight_column, self._spark = domain, weights, spark
        self._from = f"dpgm_records_{next(_views)}"
        frame.createOrReplaceTempView(self._from)
        self._check(list(frame.columns))

    def _fetch(self, sql: str) -> list[np.ndarray]:
        frame = self._spark.sql(sql)
        rows = frame.collect()  # count tables only: small
        if not rows:
            return [np.array([]) for _ in frame.columns]
        return [np.array([row[k] for row in rows], dtype=object if any(
            row[k] is None for row in rows) else None) for k in range(len(rows[0]))]

    def __repr__(self) -> str:
        return f"SparkTable({self.path!r}, {self.domain!r})"
