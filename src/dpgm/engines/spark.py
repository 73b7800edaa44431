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
from collections.abc import Callable
from os import PathLike

import numpy as np

from dpgm.domain import Domain
from dpgm.engines.encoding import SPARK, check_encodable
from dpgm.engines.sql import RawSource, SQLCounts
from dpgm.errors import DataError

_views = itertools.count()


def _session(session):
    """The SparkSession to use: the one given, else the active one."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise ImportError("the spark engine needs PySpark: pip install 'dpgm[spark]'") from None
    spark = session or SparkSession.getActiveSession()
    if spark is None:
        raise DataError("no active SparkSession: start one, or pass session=")
    return spark


def _frame(source, spark, *, infer: bool):
    """A Spark DataFrame and its path (None for a DataFrame given); CSV files are read
    with types inferred (``infer``) or as text."""
    from pyspark.sql import DataFrame

    if isinstance(source, DataFrame):
        return source, None
    if not isinstance(source, (str, PathLike)):
        raise DataError(f"source must be a Spark DataFrame or a path, not "
                        f"{type(source).__name__}")
    path = str(source)
    if path.lower().endswith((".parquet", ".pq")):
        return spark.read.parquet(path), path
    if path.lower().endswith((".csv", ".csv.gz")):
        # quotes doubled inside quoted values, as pandas writes and reads them
        return spark.read.csv(path, header=True, inferSchema=infer, escape='"'), path
    raise DataError(f"{path}: the spark engine reads .csv, .csv.gz and .parquet")


class SparkTable(SQLCounts):
    """Integer-coded records counted by Spark SQL: ``source`` a Spark DataFrame, or the
    path of a CSV (with a header) or Parquet file; one column per attribute of ``domain``
    with codes ``0..size-1``, optionally a ``weights`` column in [0, 1]; ``session`` the
    SparkSession (the active one by default); ``progress`` is told what is counted.
    Checked when made, as a Dataset is. A raw table goes through :meth:`encode` instead."""

    dialect = SPARK

    def __init__(self, source, domain: Domain, *, weights: str | None = None,
                 session=None, progress: Callable[[str], None] | None = None):
        spark = _session(session)
        if not isinstance(domain, Domain):
            raise DataError(f"domain must be a dpgm.Domain, got {type(domain).__name__}")
        frame, self.path = _frame(source, spark, infer=True)
        self.domain, self.weight_column, self._spark = domain, weights, spark
        self.progress = progress
        self._from = f"dpgm_records_{next(_views)}"
        frame.createOrReplaceTempView(self._from)
        self._check(list(frame.columns))

    @classmethod
    def encode(cls, source, schema, *, weights: str | None = None, session=None,
               progress: Callable[[str], None] | None = None) -> SparkTable:
        """A raw table (a Spark DataFrame, or a CSV or Parquet path) encoded by its public
        ``schema`` inside Spark SQL: the codes of ``schema.encode`` (labels, bins,
        clipping, missing values; CSV files read as text). The codes are a view over the
        raw table, computed again by each count (cache the DataFrame to avoid it);
        ``weights`` may name a column of record weights in [0, 1]."""
        spark = _session(session)
        check_encodable(schema)
        frame, path = _frame(source, spark, infer=False)
        table = cls.__new__(cls)
        table.domain, table.path, table.weight_column = schema.domain, path, weights
        table._spark, table.progress = spark, progress
        raw = f"dpgm_raw_{next(_views)}"
        frame.createOrReplaceTempView(raw)
        csv = path is not None and path.lower().endswith((".csv", ".csv.gz"))
        table._raw = RawSource(schema, dict(frame.dtypes), raw, csv)
        table._from = f"dpgm_records_{next(_views)}"
        spark.sql(f"CREATE OR REPLACE TEMP VIEW {table._from} AS "
                  f"{table._encoding(table._raw, weights)}")
        table._say(f"encoding {path or 'the DataFrame'} with the schema in one pass")
        table._check(list(schema.domain.attrs) + ([weights] if weights else []))
        return table

    def _fetch(self, sql: str) -> list[np.ndarray]:
        frame = self._spark.sql(sql)
        rows = frame.collect()  # count tables only: small
        if not rows:
            return [np.array([]) for _ in frame.columns]
        return [np.array([row[k] for row in rows], dtype=object if any(
            row[k] is None for row in rows) else None) for k in range(len(rows[0]))]

    def __repr__(self) -> str:
        return f"SparkTable({self.path!r}, {self.domain!r})"
