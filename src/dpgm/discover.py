"""Fill a schema draft's missing labels and bounds privately, charged to a budget.

The one place where a schema is learnt from the data: every question asked of the data
goes through :mod:`dpgm.privacy.discovery` and is charged to an (ε, δ)-DP budget under
basic composition. ε is split equally between the questions (one per categorical column
without labels, one per missing bound), δ between the categorical columns (partition
selection has an inherent δ). What was asked is decided from the draft alone, before the
data are read.

Discovered bounds are edges of public bins (geometric, four per doubling, for numbers;
months for dates) where the noisy histogram first and last rises clearly above its
noise: coarse, and values beyond them are clipped. Public knowledge gives better bounds
whenever there is some.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from dpgm.errors import DataError, DomainError
from dpgm.privacy.budget import PrivacyBudget
from dpgm.privacy.discovery import geometric_edges, private_labels, private_range
from dpgm.privacy.policy import DEFAULT_DELTA, check_delta, check_epsilon
from dpgm.random import Randomness, RngLike
from dpgm.schema.columns import KINDS, missing_values
from dpgm.schema.draft import DEFAULT_WIDTH, KIND_CHOICES
from dpgm.schema.schema import Schema

if TYPE_CHECKING:
    import pandas as pd

#: dates are bounded on months between these
FIRST_MONTH, LAST_MONTH = "1900-01", "2101-01"


def questions(spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What must be learnt for ``spec`` (a draft): ``(column, "labels" | "range")``.

    Raises for a draft that cannot be completed (a column without a kind), before any
    data are read.
    """
    if not isinstance(spec, Mapping) or not isinstance(spec.get("columns"), Mapping):
        raise DomainError('a schema is an object with "columns": {name: {"kind": ...}}')
    asked = []
    for name, column in spec["columns"].items():
        kind = column.get("kind") if isinstance(column, Mapping) else None
        if kind not in KINDS:
            raise DomainError(
                f"column {name!r} has no kind: write one of {KIND_CHOICES} in the schema "
                "(a kind is public knowledge, never learnt from the data)"
            )
        if kind == "categorical" and not column.get("labels"):
            asked.append((name, "labels"))
        if kind in ("numeric", "datetime") and not isinstance(column.get("bins"), list):
            if column.get("lower") is None or column.get("upper") is None:
                asked.append((name, "range"))
    return asked


def discover(
    frame: pd.DataFrame,
    spec: Mapping[str, Any],
    epsilon: float,
    delta: float | None = None,
    rng: RngLike = None,
) -> tuple[Schema, PrivacyBudget]:
    """The schema ``spec`` with its missing labels and bounds learnt privately, and the
    budget that paid for them ((ε, δ)-DP; δ defaults to ``DEFAULT_DELTA``).

    Neighbouring tables differ by one row. ``rng`` seeds the noise for research only.
    """
    epsilon = check_epsilon(epsilon)
    delta = DEFAULT_DELTA if delta is None else check_delta(delta)
    asked = questions(spec)
    filled = copy.deepcopy(dict(spec))
    filled.pop("note", None)
    for name, _ in asked:  # a datetime column learnt without a width gets the draft's
        if filled["columns"][name]["kind"] == "datetime":
            filled["columns"][name].setdefault("width", DEFAULT_WIDTH)
    _rehearse(filled, asked)
    budget = PrivacyBudget.approximate(epsilon, delta)
    if not asked:
        return Schema.from_json(filled), budget
    missing_columns = sorted({name for name, _ in asked} - {str(c) for c in frame.columns})
    if missing_columns:
        raise DataError(f"the data has no column(s) {missing_columns}")
    noise = Randomness.from_user(rng).noise
    share = epsilon / len(asked)
    label_questions = sum(1 for _, what in asked if what == "labels")
    delta_share = delta / label_questions if label_questions else 0.0
    columns = filled["columns"]
    # every value is parsed before anything is spent, so a bad value costs nothing
    prepared = {}
    for name, what in asked:
        values = frame[name]
        if what == "labels":
            prepared[name, what] = values[~missing_values(values)].tolist()
        elif columns[name]["kind"] == "datetime":
            prepared[name, what] = _days(values, name)
        else:
            prepared[name, what] = _numbers(values, name)
    for name, what in asked:
        column = columns[name] = dict(columns[name])
        data = prepared[name, what]
        if what == "labels":
            labels = private_labels(data, share, delta_share, budget, noise, f"labels of {name}")
            column["labels"] = [_plain(v) for v in labels]
            if not labels:
                column["other"] = True  # no label reached the threshold: one code for all
            continue
        label = f"range of {name}"
        if column["kind"] == "datetime":
            lower, upper = private_range(data, _month_edges(), share, budget, noise, label)
            found = [str(np.datetime64(int(x), "D")) for x in (lower, upper)]
        else:
            lower, upper = private_range(data, geometric_edges(), share, budget, noise, label)
            found = [_round(lower, math.floor), _round(upper, math.ceil)]
        for bound, value in zip(("lower", "upper"), found):
            if column.get(bound) is None:  # a bound the steward gave is kept
                column[bound] = value
    for name in {name for name, what in asked if what != "labels"}:
        _repair_bounds(columns[name])
    return Schema.from_json(filled), budget


def _rehearse(spec: Mapping[str, Any], asked: list[tuple[str, str]]) -> None:
    """Raise, before any data are read, for what would make the schema invalid whatever is
    learnt: the draft is built with stand-ins for the answers (constraints, which may name
    labels still to be learnt, are left out)."""
    trial = copy.deepcopy(dict(spec))
    trial.pop("constraints", None)
    for name, what in asked:
        column = trial["columns"][name]
        if what == "labels":
            column["labels"] = ["\x00stand-in"]
        elif column["kind"] == "datetime":
            column["lower"] = column.get("lower") or "2000-01-01"
            column["upper"] = column.get("upper") or "2100-01-01"
        else:
            lower, upper = column.get("lower"), column.get("upper")
            if lower is None and upper is None:
                lower, upper = 0, 1e6
            elif lower is None:
                lower = upper - 1e6
            elif upper is None:
                upper = lower + 1e6
            column["lower"], column["upper"] = lower, upper
    Schema.from_json(trial)


# -- post-processing of what was learnt (free) ---------------------------------------------------
def _repair_bounds(column: dict[str, Any]) -> None:
    """Bounds in order and bins that fit them: post-processing of the released bounds."""
    if column["kind"] == "datetime":
        lower, upper = np.datetime64(column["lower"], "D"), np.datetime64(column["upper"], "D")
        if upper <= lower:
            upper = lower + np.timedelta64(1, "D")
        column["lower"], column["upper"] = str(lower), str(upper)
        return
    lower, upper = float(column["lower"]), float(column["upper"])
    if upper <= lower:
        upper = lower + 1.0
    if column.get("integer"):
        lower, upper = math.floor(lower), math.ceil(upper)
        bins = column.get("bins", 10)
        column["bins"] = int(min(bins, upper - lower + 1)) if isinstance(bins, int) else bins
    column["lower"] = int(lower) if float(lower).is_integer() else lower
    column["upper"] = int(upper) if float(upper).is_integer() else upper


def _plain(value: object) -> object:
    """A JSON-ready label: NumPy scalars as Python ones."""
    return value.item() if isinstance(value, np.generic) else value


def _numbers(values: pd.Series, name: str) -> np.ndarray:
    import pandas as pd

    present = values[~missing_values(values)]
    numbers = pd.to_numeric(present, errors="coerce")
    if numbers.isna().any():
        raise DataError(f"column {name!r} is declared numeric but holds a non-numeric value")
    return numbers.to_numpy(dtype=np.float64)


def _days(values: pd.Series, name: str) -> np.ndarray:
    import pandas as pd

    present = values[~missing_values(values)]
    times = pd.to_datetime(present, errors="coerce")
    if times.isna().any():
        raise DataError(f"column {name!r} is declared datetime but holds a value that is not")
    return times.to_numpy().astype("datetime64[D]").astype(np.int64).astype(np.float64)


def _month_edges() -> np.ndarray:
    """The first day of every month from FIRST_MONTH to LAST_MONTH, in days since 1970."""
    months = np.arange(np.datetime64(FIRST_MONTH), np.datetime64(LAST_MONTH) + 1)
    return months.astype("datetime64[D]").astype(np.int64).astype(np.float64)


def _round(x: float, direction) -> float | int:
    """A bound with two significant digits, rounded outwards (post-processing)."""
    if x == 0:
        return 0
    scale = 10.0 ** (math.floor(math.log10(abs(x))) - 1)
    rounded = direction(x / scale) * scale
    rounded = float(f"{rounded:.12g}")
    return int(rounded) if rounded.is_integer() else rounded
