"""Shared test configuration: makes the brute-force helpers in ``tests/`` importable."""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
if str(_HERE) not in sys.path:  # also under --import-mode=importlib
    sys.path.insert(0, str(_HERE))


def pytest_addoption(parser):
    parser.addoption(
        "--audit-runs",
        action="store",
        default=None,
        help="multiply the privacy audits' runs (tests/audit) by this, e.g. 10 for a release",
    )
