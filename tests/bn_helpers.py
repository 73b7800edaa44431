"""The benchmark networks, bundled in ``tests/data/bn``: Asia, Sachs, Child and Alarm (the
four of ``NETWORKS``), and Hailfinder, Win95pts and Hepar2 (for pyAgrum's answers).

The BIF files are copies of the bnlearn repository's networks (small text files), so the
tests need nothing outside the repository. ``DPGM_BN_DIR`` points elsewhere (a folder with
the same file names); a test whose network is missing there skips.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest

from dpgm.io import BayesianNetwork, read_bif

BN_DIR = Path(os.environ.get("DPGM_BN_DIR", Path(__file__).parent / "data" / "bn"))
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


def to_xmlbif(network) -> str:
    """A test-side writer (the last GIVEN fastest, as in the format; names escaped)."""
    from xml.sax.saxutils import escape

    parts = [f'<?xml version="1.0"?><BIF VERSION="0.3"><NETWORK><NAME>{network.name}</NAME>']
    for v in network.variables:
        outcomes = "".join(f"<OUTCOME>{escape(s)}</OUTCOME>" for s in network.states[v])
        parts.append(f'<VARIABLE TYPE="nature"><NAME>{v}</NAME>{outcomes}'
                     "<PROPERTY>position = (0, 0)</PROPERTY></VARIABLE>")
    for v in network.variables:
        given = "".join(f"<GIVEN>{p}</GIVEN>" for p in network.parents[v])
        table = " ".join(repr(float(x)) for x in network.cpds[v].ravel())
        parts.append(f"<DEFINITION><FOR>{v}</FOR>{given}<TABLE>{table}</TABLE></DEFINITION>")
    return "".join(parts) + "</NETWORK></BIF>"
