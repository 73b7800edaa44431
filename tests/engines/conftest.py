"""The Spark session the engine tests share (local[2,2]: two threads, and a failed task
retried once), skipped where PySpark or Java is missing."""

from __future__ import annotations

import shutil

import pytest


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("Spark needs Java")
    import os
    import sys

    from pyspark.sql import SparkSession

    # the Python workers that sample synthetic records need this interpreter (it has dpgm)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

    session = (SparkSession.builder.master("local[2,2]").appName("dpgm-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
