"""The four benchmark networks (Asia, Sachs, Child, Alarm) from ``../shared/data/bn``.

Tests that need them skip cleanly where the folder is absent; ``DPGM_BN_DIR`` points
elsewhere.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest

from dpgm.io import BayesianNetwork, read_bif

BN_DIR = Path(os.environ.get("DPGM_BN_DIR", Path(__file__).parents[1] / ".." / "shared/data/bn"))
NETWORKS = ("asia", "sachs", "child", "alarm")


def bn_path(name: str) -> Path:
    path = BN_DIR / f"{name}.bif"
    if not path.exists():
        pytest.skip(f"{path} not found (set DPGM_BN_DIR to the folder of the BIF files)")
    return path


@functools.cache
def _read(path: Path) -> BayesianNetwork:
    return read_bif(path)


def load(name: str) -> BayesianNetwork:
    """The network ``name`` (read once per test session; do not modify it)."""
    return _read(bn_path(name))
