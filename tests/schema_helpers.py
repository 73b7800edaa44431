"""A raw table and its public schema, shared by the schema and command-line tests."""

from __future__ import annotations

import numpy as np
import pandas as pd

SPEC = {
    "columns": {
        "sex": {"kind": "categorical", "labels": ["F", "M"], "nullable": True},
        "job": {"kind": "categorical", "labels": ["clerk", "nurse"], "other": True},
        "age": {"kind": "numeric", "lower": 0, "upper": 100, "bins": 10, "integer": True},
        "paid": {"kind": "numeric", "bins": [0, 1000, 5000, 20000], "nullable": True},
        "ok": {"kind": "categorical", "labels": [False, True]},
        "grade": {"kind": "categorical", "labels": [1, 2, 3]},
        "seen": {"kind": "datetime", "lower": "2020-01-01", "upper": "2021-01-01",
                 "width": "30D", "nullable": True},
    },
    "constraints": [{"sex": ["F"], "job": ["!clerk"]}],
}


def raw_table(n: int = 200, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "sex": rng.choice(["F", "M"], n),
            "job": rng.choice(["clerk", "nurse", "pilot"], n),
            "age": rng.integers(0, 101, n),
            "paid": rng.uniform(0, 20000, n),
            "ok": rng.random(n) < 0.5,
            "grade": rng.integers(1, 4, n),
            "seen": pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 366, n), "D"),
        }
    )
    frame.loc[::7, "sex"] = None
    frame.loc[::5, "paid"] = np.nan
    frame.loc[::9, "seen"] = pd.NaT
    return frame


def block_import(monkeypatch, module: str) -> None:
    """Make ``import module`` (and its submodules) fail, as where it is not installed."""
    import builtins

    real_import = builtins.__import__

    def blocked(name, *args, **kwargs):
        if name == module or name.startswith(module + "."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", blocked)
