"""The suite's tables, each with its one public discretisation (a dpgm schema, identical
for every system) and the column its utility check predicts.

* ``adult``: the 48,842 Adult records bundled with dpgm, 14 attributes discretised as
  in Private-PGM's experiments (codes; UCI, CC BY 4.0); target ``income>50K``.
* ``diamonds``: the 53,940 diamonds bundled with dpgm (ggplot2, MIT), its public schema
  with every numeric column cut into 16 equal bins of its catalogue range; target ``cut``.
* ``alarm``, ``child``: 20,000 records drawn (seed 0) from the Alarm and Child Bayesian
  networks in ``../shared/data/bn`` (bnlearn repository, CC BY-SA 3.0); targets a
  central node each. Skipped where ``../shared`` is absent.

Each table is written as a CSV of raw values with its schema, which is what every system
reads (the peers' runners in ``benchmarks/peers`` take the same pair).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
DATASETS = ROOT / "src" / "dpgm" / "datasets"
BN_FOLDER = ROOT.parent / "shared" / "data" / "bn"
NETWORK_RECORDS = 20_000
NUMERIC_BINS = 16


@dataclass
class Table:
    name: str
    frame: pd.DataFrame  # raw values
    schema: dict  # the public discretisation (dpgm schema JSON)
    target: str
    source: str


def _coded(name: str, frame: pd.DataFrame, sizes: dict[str, int], target: str,
           source: str) -> Table:
    """A table of integer codes: every column categorical over its public codes."""
    schema = {"columns": {c: {"kind": "categorical", "labels": list(range(sizes[c]))}
                          for c in frame.columns}}
    return Table(name, frame, schema, target, source)


def adult() -> Table:
    frame = pd.read_csv(DATASETS / "adult.csv.gz")
    sizes = json.loads((DATASETS / "adult-domain.json").read_text())
    return _coded("adult", frame, sizes, "income>50K", "UCI Adult (bundled), CC BY 4.0")


def diamonds() -> Table:
    frame = pd.read_csv(DATASETS / "diamonds.csv.gz", dtype=str)
    schema = json.loads((DATASETS / "diamonds-schema.json").read_text())
    for column in schema["columns"].values():
        if column["kind"] == "numeric" and column.get("bins") is None:
            column["bins"] = NUMERIC_BINS
    schema.pop("note", None)
    return Table("diamonds", frame, schema, "cut", "ggplot2 diamonds (bundled), MIT")


def network(name: str, target: str) -> Table | None:
    from dpgm.io import read_bif

    path = BN_FOLDER / f"{name}.bif"
    if not path.exists():
        return None
    data = read_bif(path).sample(NETWORK_RECORDS, rng=0)
    frame = pd.DataFrame(data.records, columns=data.domain.attrs)
    sizes = {a: data.domain[a] for a in data.domain.attrs}
    return _coded(name, frame, sizes, target,
                  f"{NETWORK_RECORDS:,} records drawn from the {name} network (bnlearn, "
                  "CC BY-SA 3.0), seed 0")


def load(name: str) -> Table | None:
    """A table of the suite by name (None where its source is absent)."""
    if name == "adult":
        return adult()
    if name == "diamonds":
        return diamonds()
    if name == "alarm":
        return network("alarm", "LVFAILURE")
    if name == "child":
        return network("child", "Disease")
    raise KeyError(name)


TABLES = ("adult", "diamonds", "alarm", "child")
