"""Counting integer-coded records with Spark (a cluster, or ``local[*]``): the counting
interface of :class:`~dpgm.dataset.Dataset` on a Spark DataFrame or a CSV / Parquet path.
Only the count tables come back to the driver — never a record. PySpark is an optional
dependency (``pip install 'dpgm[spark]'``; it needs Java: :func:`start_session` says so in
one line where it is missing). A local file or folder that changes between passes stops
the count (:func:`dpgm.engines.sql.fingerprint`).

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
import os
import shutil
import sys
from collections.abc import Callable, Mapping
from os import PathLike

import numpy as np

from dpgm.domain import Domain
from dpgm.engines.encoding import SPARK, check_encodable
from dpgm.engines.sql import RawSource, SQLCounts
from dpgm.errors import DataError, ParameterError

_views = itertools.count()


def check_java() -> None:
    """Refuse, in one line, to start Spark where there is no Java to run it (where
    spark-submit looks: ``$JAVA_HOME/bin/java``, else ``java`` on the PATH); otherwise
    Spark fails with a Java gateway error after its launcher's own messages."""
    home = os.environ.get("JAVA_HOME")
    if home:
        java = os.path.join(home, "bin", "java")
        if not (os.path.isfile(java) and os.access(java, os.X_OK)):
            raise ParameterError(f"the spark engine needs Java: JAVA_HOME ({home}) has no "
                                 "bin/java; point it at a Java runtime Spark supports")
    elif shutil.which("java") is None:
        raise ParameterError("the spark engine needs Java: install a Java runtime Spark "
                             "supports and put java on the PATH, or set JAVA_HOME")


def start_session(app_name: str = "dpgm", config: Mapping[str, str] | None = None):
    """The SparkSession of this process (the one spark-submit made), else a new one with
    ``config``; where Java is missing or Spark cannot start, a one-line ParameterError
    before any data are read."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise ImportError("the spark engine needs PySpark: pip install 'dpgm[spark]'") from None
    builder = SparkSession.builder.appName(app_name)
    for key, value in (config or {}).items():
        builder = builder.config(key, value)
    # spark-submit started the JVM and passes its port, and Spark Connect runs none here:
    # no Java is started from this process then
    remote = "SPARK_REMOTE" in os.environ or "spark.remote" in (config or {})
    if SparkSession.getActiveSession() is None and not remote and \
            "PYSPARK_GATEWAY_PORT" not in os.environ:
        check_java()
        # a JVM started from here runs its Python workers on this machine: with this
        # interpreter, which has dpgm (Spark's default is whatever python3 is on the PATH)
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    try:
        return builder.getOrCreate()
    except Exception as exc:  # PySparkRuntimeError, or RuntimeError in older PySpark
        text = str(exc)
        if "JAVA_GATEWAY_EXITED" not in text and "Java gateway" not in text:
            raise
        raise ParameterError("the spark engine could not start Spark: its Java process "
                             "exited (is the Java runtime one Spark supports?)") from None


def _session(session):
    """The SparkSession to use: the one given, else the active one."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise ImportError("the spark engine needs PySpark: pip install 'dpgm[spark]'") from None
    spark = session or SparkSession.getActiveSession()
    if spark is None:
        raise DataError("no active SparkSession: start one (dpgm.engines.spark."
                        "start_session()), or pass session=")
    return spark


def _path(source) -> str | None:
    """The path of a file source (None for a DataFrame), or a DataError."""
    from pyspark.sql import DataFrame

    if isinstance(source, DataFrame):
        return None
    if not isinstance(source, (str, PathLike)):
        raise DataError(f"source must be a Spark DataFrame or a path, not "
                        f"{type(source).__name__}")
    path = str(source)
    if not path.lower().endswith((".parquet", ".pq", ".csv", ".csv.gz")):
        raise DataError(f"{path}: the spark engine reads .csv, .csv.gz and .parquet")
    return path


def _frame(source, path: str | None, spark):
    """A Spark DataFrame of ``source``; CSV files are read as text, every cell on its own
    (inferring types would read the file once more, and judge a column by all its
    values)."""
    if path is None:
        return source
    try:
        if path.lower().endswith((".parquet", ".pq")):
            return spark.read.parquet(path)
        # quotes doubled inside quoted values, as pandas writes and reads them
        return spark.read.csv(path, header=True, inferSchema=False, escape='"')
    except Exception as exc:  # AnalysisException: a missing or unreadable file
        if type(exc).__name__ != "AnalysisException":
            raise
        kind = "Parquet" if path.lower().endswith((".parquet", ".pq")) else "CSV"
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else "unreadable"
        raise DataError(f"{path}: not a readable {kind} file ({reason})") from None


class SparkTable(SQLCounts):
    """Integer-coded records counted by Spark SQL: ``source`` a Spark DataFrame, or the
    path of a CSV (with a header) or Parquet file; one column per attribute of ``domain``
    with codes ``0..size-1``, optionally a ``weights`` column in [0, 1]; ``session`` the
    SparkSession (the active one by default); ``progress`` is told what is counted.
    Checked when made, as a Dataset is (a CSV file's cells as text, as on DuckDB). A raw
    table goes through :meth:`encode` instead."""

    dialect = SPARK

    def __init__(self, source, domain: Domain, *, weights: str | None = None,
                 session=None, progress: Callable[[str], None] | None = None):
        spark = _session(session)
        if not isinstance(domain, Domain):
            raise DataError(f"domain must be a dpgm.Domain, got {type(domain).__name__}")
        self.path = _path(source)
        self._watch(self.path)  # before the first read: every pass compares with it
        frame = _frame(source, self.path, spark)
        self.domain, self.weight_column, self._spark = domain, weights, spark
        self.progress = progress
        view = f"dpgm_records_{next(_views)}"
        frame.createOrReplaceTempView(view)
        self._check(view, dict(frame.dtypes))

    @classmethod
    def encode(cls, source, schema, *, weights: str | None = None, session=None,
               progress: Callable[[str], None] | None = None) -> SparkTable:
        """A raw table (a Spark DataFrame, or a CSV or Parquet path) encoded by its public
        ``schema`` inside Spark SQL: the codes of ``schema.encode`` (labels, bins,
        clipping, missing values; CSV files read as text). The codes are a view over the
        raw table, computed again by each count (cache the DataFrame to avoid it), each
        checking that the file did not change; ``weights`` may name a column of record
        weights in [0, 1]."""
        spark = _session(session)
        check_encodable(schema)
        path = _path(source)
        table = cls.__new__(cls)
        table.path = path
        table._watch(path)
        frame = _frame(source, path, spark)
        table.domain, table.weight_column = schema.domain, weights
        table._spark, table.progress = spark, progress
        raw = f"dpgm_raw_{next(_views)}"
        frame.createOrReplaceTempView(raw)
        csv = path is not None and path.lower().endswith((".csv", ".csv.gz"))
        table._raw = RawSource(schema, dict(frame.dtypes), raw, csv)
        table._from = f"dpgm_records_{next(_views)}"
        spark.sql(f"CREATE OR REPLACE TEMP VIEW {table._from} AS "
                  f"{table._encoding(table._raw, weights)}")
        table._say(f"encoding {path or 'the DataFrame'} with the schema in one pass")
        # the codes are integers and the weights numbers, by the encoding
        types = dict.fromkeys(schema.domain.attrs, "int")
        table._check(table._from, types | ({weights: "double"} if weights else {}))
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


#: Spark's type for each kind of pandas column a model's records come in
_SPARK_TYPES = {"i": "bigint", "u": "bigint", "f": "double", "b": "boolean",
                "M": "timestamp_ntz"}


def _spark_type(dtype) -> str:
    """The Spark SQL type of a pandas column of ``dtype`` (text for anything else)."""
    import numpy as np
    import pandas as pd

    if isinstance(dtype, pd.BooleanDtype):
        return "boolean"
    if isinstance(dtype, pd.core.dtypes.dtypes.BaseMaskedDtype):  # Int64 and the like
        return _SPARK_TYPES.get(np.dtype(dtype.numpy_dtype).kind, "string")
    try:
        return _SPARK_TYPES.get(np.dtype(dtype).kind, "string")
    except TypeError:  # pandas' own string and category dtypes
        return "string"


def sample_to(model, out: str, rows: int, *, session=None, seed: int | None = None,
              given=None, chunk_rows: int | None = None, force: bool = False,
              text: bool | None = None, _fail_first_attempt: bool = False) -> int:
    """Draw ``rows`` records of ``model`` on Spark and write them at ``out`` (any path
    Spark writes: a folder of part files, Parquet for ``.parquet``, else CSV with a
    header, gzip for ``.csv.gz``), so that no record passes through the driver; returns
    ``rows``. Partition i draws its share (``chunk_rows`` a partition) from the broadcast
    model with its own seed stream, ``SeedSequence(entropy, spawn_key=(i,))`` (the
    entropy drawn once on the driver, or ``seed``): a task that Spark retries after
    losing an executor draws the same records again, so no row is lost or written twice.
    Column types come from the model's domain and schema, never from the records.
    Post-processing of a released model: free."""
    import numpy as np

    from dpgm.dataset import Dataset, every_code
    from dpgm.memory import default_chunk_rows

    spark = _session(session)
    domain, schema = model.domain, getattr(model, "schema", None)
    size = chunk_rows or default_chunk_rows(len(domain))
    parts = max(-(-rows // size), 1)
    entropy = np.random.SeedSequence(seed).entropy
    csv = text if text is not None else not out.lower().endswith(".parquet")

    def frame(chunk):
        frame = chunk.to_pandas(labels=True) if isinstance(chunk, Dataset) else chunk
        return schema.as_text(frame) if csv and schema is not None else frame

    # every code of every attribute, decoded: the columns' types, from public facts
    codes = every_code(domain)
    probe = frame(schema.decode(codes, np.random.default_rng(0)) if schema is not None
                  else codes)
    types = {name: _spark_type(dtype) for name, dtype in probe.dtypes.items()}
    ddl = ", ".join(f"`{name}` {kind}" for name, kind in types.items())
    shipped = spark.sparkContext.broadcast(model)

    def draw(batches):
        from pyspark import TaskContext

        for batch in batches:
            for index in batch["id"].tolist():
                if _fail_first_attempt and index == 1 and TaskContext.get().attemptNumber() == 0:
                    raise RuntimeError("a simulated loss of the executor")
                generator = np.random.default_rng(np.random.SeedSequence(entropy,
                                                                         spawn_key=(index,)))
                count = min(size, rows - index * size)
                (chunk,) = shipped.value.synthetic_chunks(count, rng=generator, given=given,
                                                          chunk_rows=max(count, 1))
                records = frame(chunk)
                for name, kind in types.items():  # the declared types, whatever was drawn
                    if kind == "string":
                        records[name] = records[name].astype(object).where(
                            records[name].notna(), None).map(
                            lambda v: v if v is None else str(v))
                yield records

    frame_out = spark.range(parts, numPartitions=parts).mapInPandas(draw, schema=ddl)
    writer = frame_out.write.mode("overwrite" if force else "errorifexists")
    if not csv:
        writer.parquet(out)
    else:
        writer = writer.option("header", True).option("escape", '"')
        if out.lower().endswith(".gz"):
            writer = writer.option("compression", "gzip")
        writer.csv(out)
    return rows
