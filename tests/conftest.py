"""Shared test configuration: makes the brute-force helpers in ``tests/`` importable."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent
if str(_HERE) not in sys.path:  # also under --import-mode=importlib
    sys.path.insert(0, str(_HERE))

# whichever test starts Spark first (the engine tests' fixture, or a command's own
# session): two local threads, a failed task retried once, Python workers on this
# interpreter (it has dpgm)
os.environ.setdefault("PYSPARK_SUBMIT_ARGS", "--master local[2,2] pyspark-shell")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

# `make test` runs the suite on every core (pytest-xdist): one worker per core, so each
# worker's numerical libraries take one thread, or OpenMP's and BLAS's pools, sized for the
# whole machine, contend across workers (scikit-learn's boosting ran several times slower).
# Set before any test module loads numpy; the commands tests start inherit it.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _threads in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_threads, "1")


def pytest_addoption(parser):
    parser.addoption(
        "--audit-runs",
        action="store",
        default=None,
        help="multiply the privacy audits' runs (tests/audit) by this, e.g. 10 for a release",
    )
    parser.addoption(
        "--run-slow",
        action="store_true",
        default=False,
        help="also run the tests marked slow (skipped by default)",
    )


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: a long test, skipped unless --run-slow is given")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--run-slow"):
        return
    skip = pytest.mark.skip(reason="slow: give --run-slow to run it")
    for item in items:
        if item.get_closest_marker("slow") is not None:
            item.add_marker(skip)
