"""A raw table and its public schema, shared by the schema and command-line tests."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpgm.schema import Schema

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


# -- texts of every shape, each read on its own (issue 24) --------------------------------
RAW_SCHEMA = Schema.from_json({"columns": {
    "zip": {"kind": "categorical", "labels": ["01234", "02139", 7, 2.5, True, "x y", "NA"],
            "other": True, "nullable": True},
    "size": {"kind": "numeric", "bins": [-10, 0, 1, 10, 100, 1000], "nullable": True},
    "iso": {"kind": "datetime", "lower": "2020-01-01", "upper": "2021-01-01", "width": "7D",
            "nullable": True},
    "dmy": {"kind": "datetime", "lower": "2020-01-01", "upper": "2021-01-01", "width": "1D",
            "format": "%d/%m/%Y", "nullable": True},
    "stamp": {"kind": "datetime", "lower": "2020-01-01", "upper": "2020-01-03",
              "width": "1h", "format": "%Y%m%d %H:%M", "nullable": True},
}})

TEXTS = {
    "zip": ["01234", "1234", "02139", "2139", "7", "07", "7.0", "2.5", "2.50", "True", "true",
            "TRUE", "1", "x y", " x y ", "NA", "n/a", "", "  ", "word", "1e0", "None"],
    "size": ["0", "00", "-0", "0.5", ".5", "5.", "1e2", " 12 ", "-3", "1000", "1e9", "-1e9",
             "", "nan", "NULL", "0010", "+7"],
    "iso": ["2020-03-05", "2020-03-05 10:00", "2020-03-05T10:00:01", "2020-03-05 10:00:01.5",
            "2019-12-31", "2022-01-01", "", "NA"],
    "dmy": ["05/03/2020", "13/02/2020", "01/12/2020", "31/12/2019", "02/01/2021", "",
            "null"],
    "stamp": ["20200101 00:00", "20200102 13:59", "20200103 00:00", "20191231 23:00", ""],
}


def random_text_table(n: int, rng: np.random.Generator) -> pd.DataFrame:
    """A raw table of texts of every shape RAW_SCHEMA reads (issue 24)."""
    return pd.DataFrame({name: rng.choice(np.array(values, dtype=object), size=n)
                         for name, values in TEXTS.items()})
