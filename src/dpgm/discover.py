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
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from dpgm.errors import DataError, DomainError, SchemaNote, user_stacklevel
from dpgm.privacy.budget import PrivacyBudget
from dpgm.privacy.discovery import (
    geometric_edges,
    grouped_edges,
    private_labels,
    private_precision,
    private_range,
    privtree,
)
from dpgm.privacy.policy import DEFAULT_DELTA, check_delta, check_epsilon
from dpgm.privacy.quiet import on_records
from dpgm.random import Randomness, RngLike
from dpgm.schema import parse
from dpgm.schema.columns import (
    DEFAULT_OTHER,
    KINDS,
    grid_steps,
    missing_values,
    read_micros,
    read_numbers,
    text_values,
)
from dpgm.schema.draft import (
    DEFAULT_BINS,
    KIND_CHOICES,
    LEARNT_BINS,
    LEARNT_REFINE,
)
from dpgm.schema.schema import Schema

if TYPE_CHECKING:
    import pandas as pd

#: dates are bounded on months between these
FIRST_MONTH, LAST_MONTH = "1900-01", "2101-01"


def questions(spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What must be learnt for ``spec`` (a draft): ``(column, "labels" | "range" |
    "precision" | "edges")``.

    Raises for a draft that cannot be completed (a column without a kind, fields that no
    answer could make valid), before any data are read.
    """
    asked = _asked(spec)
    _filled(spec, asked)  # rehearsed: what cannot hold whatever is learnt fails here, unread
    return asked


def _asked(spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The questions of :func:`questions`, not yet rehearsed."""
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
        if kind == "numeric" and ("integer" in column or "decimals" in column) and \
                column.get("integer") is None and column.get("decimals") is None:
            asked.append((name, "precision"))
        if kind in ("numeric", "datetime") and "bins" in column and column["bins"] is None \
                and column.get("width") is None:  # a date's width is equal-width bins
            asked.append((name, "edges"))
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
    asked = _asked(spec)
    filled = _filled(spec, asked)  # rehearsed, before the data are read
    budget = PrivacyBudget.approximate(epsilon, delta)
    if not asked:
        return Schema.from_json(filled), budget
    labels = sum(1 for _, what in asked if what == "labels")
    _check_columns(frame, asked)
    with on_records():  # no warning raised on the records reaches the user
        schema = _learn(frame, filled, asked, budget, epsilon / len(asked),
                        delta / labels if labels else 0.0, rng)
    return schema, budget


def numeric_questions(spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What :func:`discretize` learns for ``spec``: the bounds, precision and bins of its
    numeric and datetime columns. A column without labels is refused (partition selection
    is (ε, δ)-DP: learn labels with :func:`discover`), before any data are read."""
    return _numeric_only(questions(spec))


def _numeric_only(asked: list[tuple[str, str]]) -> list[tuple[str, str]]:
    unlabelled = [name for name, what in asked if what == "labels"]
    if unlabelled:
        raise DomainError(f"column {unlabelled[0]!r} has no labels: list them, or learn them "
                          "with dpgm schema discover (bins are learnt here, labels there)")
    return asked


def stand_in(spec: Mapping[str, Any], asked: list[tuple[str, str]]) -> Schema:
    """The largest schema learning ``asked`` could give ``spec`` (the widest date range,
    the most bins and sub-bins): its sizes bound the learnt schema's, for the checks made
    before the data are read."""
    trial = _filled(spec, asked)
    for name, what in asked:
        column = trial["columns"][name]
        if what == "range" and column["kind"] == "datetime":
            column["lower"], column["upper"] = FIRST_MONTH + "-01", LAST_MONTH + "-01"
        elif what == "range":
            column["lower"] = 0 if column.get("lower") is None else column["lower"]
            column["upper"] = (float(column["lower"]) + 1e6 if column.get("upper") is None
                               else column["upper"])
        elif what == "edges" and column["kind"] == "datetime":
            refine = column["refine"] = column.get("refine") or LEARNT_REFINE
            first, last = _day_bounds(column)
            last = max(last, first + LEARNT_BINS * refine)
            column["bins"] = [_date(d) for d in np.linspace(first, last, LEARNT_BINS + 1)
                              .round().astype(np.int64)]
            column["lower"] = column["upper"] = column["width"] = None
        elif what == "edges":
            column["bins"] = LEARNT_BINS
            column["refine"] = column.get("refine") or LEARNT_REFINE
            column["integer"], column["decimals"] = None, None  # sizes only
    return Schema.from_json(trial)


def discretize(frame: pd.DataFrame, spec: Mapping[str, Any], budget: PrivacyBudget,
               epsilon: float, rng: RngLike = None) -> Schema:
    """The schema ``spec`` with the bounds, precision and bins of its numeric and datetime
    columns learnt privately (:func:`numeric_questions`), each question ε-DP at
    ``epsilon``, charged to ``budget`` (a zCDP budget records each as ρ = ε²/2)."""
    asked = _numeric_only(_asked(spec))
    filled = _filled(spec, asked)  # rehearsed, before the data are read
    if not asked:
        return Schema.from_json(filled)
    _check_columns(frame, asked)
    with on_records():
        return _learn(frame, filled, asked, budget, check_epsilon(epsilon), 0.0, rng)


def _filled(spec: Mapping[str, Any], asked: list[tuple[str, str]]) -> dict[str, Any]:
    """A copy of ``spec`` to fill (no note), checked to be completable."""
    filled = copy.deepcopy(dict(spec))
    filled.pop("note", None)
    _rehearse(filled, asked)
    return filled


def _check_columns(frame: pd.DataFrame, asked: list[tuple[str, str]]) -> None:
    missing_columns = sorted({name for name, _ in asked} - {str(c) for c in frame.columns})
    if missing_columns:
        raise DataError(f"the data has no column(s) {missing_columns}")


def _learn(frame: pd.DataFrame, filled: dict[str, Any], asked: list[tuple[str, str]],
           budget: PrivacyBudget, share: float, delta_share: float, rng: RngLike) -> Schema:
    """Learn what is ``asked`` of ``frame`` into ``filled``, each question charged
    ``share`` of ε (and a labels question ``delta_share`` of δ) to ``budget``."""
    noise = Randomness.from_user(rng).noise
    columns = filled["columns"]
    # every value is read before anything is spent, so a bad value costs nothing; each on
    # its own (dpgm.schema.parse), never by how the rest of its column was read
    prepared = {}
    for name in dict.fromkeys(name for name, _ in asked):
        values = frame[name]
        values = values[~missing_values(values)]
        if columns[name]["kind"] == "categorical":
            prepared[name] = _labels(values, columns[name].get("dtype"), name)
        elif columns[name]["kind"] == "datetime":
            prepared[name] = _days(values, columns[name].get("format"), name)
        else:
            prepared[name] = _numbers(values, name)
    fallbacks = []
    for name, what in asked:  # per column: labels or range, then precision, then edges
        column = columns[name] = dict(columns[name])
        data = prepared[name]
        if what == "labels":
            labels = private_labels(data, share, delta_share, budget, noise, f"labels of {name}")
            column["labels"] = [_plain(v) for v in labels]
            if column.get("other") is None or not labels:
                # values too rare to be released (or, where none was, every value) are
                # coded "other" rather than refused when the schema encodes the table
                column["other"] = True
            continue
        if what == "precision":
            places = private_precision(data, share, budget, noise, f"precision of {name}")
            if places == 0:
                column["integer"] = True
            elif places is not None:
                column["decimals"] = places
            continue
        if what == "edges":
            # dates are binned on whole days (their values are read as days since 1970)
            grid = (dict(column, lower=None, upper=None, integer=True, decimals=None)
                    if column["kind"] == "datetime" else column)
            # the bounds as the end of the run would leave them, so that the edges meet them
            if column["kind"] == "datetime":
                lower, upper = _day_bounds(column)
            else:
                lower, upper = float(column["lower"]), float(column["upper"])
            if grid.get("integer"):
                lower, upper = math.floor(lower), math.ceil(upper)
            if upper <= lower:  # a range learnt empty
                upper = lower + 1.0
            unit = _unit(grid)
            dates = column["kind"] == "datetime"
            # a date bin holds a day per sub-bin, a number one value of its grid
            steps = (column.get("refine") or 1) if dates else 1
            # room for the bins; public bounds were checked before reading
            upper = max(upper, lower + unit * steps)
            grid["lower"], grid["upper"] = _round_plain(lower), _round_plain(upper)
            # a number's leaves go down to half a step, so that one at the floor holds at
            # most one value of the grid: an atom keeps a bin of its own (grouped_edges).
            # Dates do not: their sub-bins are whole days, and a one-day bin would leave
            # every bin uncut
            tree = privtree(data, float(grid["lower"]), float(grid["upper"]), share,
                            budget, noise, f"edges of {name}",
                            smallest=unit if dates else unit / 2)
            if dates:
                tree = tree._replace(floor=None)
            grid["bins"] = _edges(grouped_edges(tree, LEARNT_BINS), grid, steps)
            if column.get("refine") is None:
                column["refine"] = _refine_for(grid, dates)
            if dates:
                column["bins"] = [_date(d) for d in grid["bins"]]
                column["lower"], column["upper"] = column["bins"][0], column["bins"][-1]
                column["width"] = None
            continue
        label = f"range of {name}"
        if column["kind"] == "datetime":
            found = private_range(data, _month_edges(), share, budget, noise, label)
            bounds = [str(np.datetime64(int(x), "D")) for x in found[:2]]
        else:
            found = private_range(data, geometric_edges(), share, budget, noise, label)
            bounds = [_round(found.lower, math.floor), _round(found.upper, math.ceil)]
        if found.fallback:
            fallbacks.append(name)
        for bound, value in zip(("lower", "upper"), bounds):
            if column.get(bound) is None:  # a bound the steward gave is kept
                column[bound] = value
    # what follows is post-processing of what was released: free, and it never fails, so
    # that a run that spent always writes its schema (a re-run would spend again)
    for name in fallbacks:
        _note(f"column {name!r}: no bin of its noisy histogram rose clearly above the noise; "
              "its bounds are the one bin with the largest noisy count (give public bounds, "
              "or more epsilon)")
    for name, what in asked:
        if what == "labels":
            _repair_labels(name, columns[name])
        elif what == "range":
            _repair_bounds(name, columns[name])
        elif what == "precision" and (name, "range") not in asked:
            _repair_bin_count(name, columns[name])
    _repair_constraints(filled)
    return Schema.from_json(filled)


def _note(message: str) -> None:
    warnings.warn(message, SchemaNote, stacklevel=user_stacklevel())


def _rehearse(spec: Mapping[str, Any], asked: list[tuple[str, str]]) -> None:
    """Raise, before any data are read, for what would make the schema invalid whatever is
    learnt: the draft is built with stand-ins for the answers (constraints, which may name
    labels still to be learnt, are left out)."""
    trial = copy.deepcopy(dict(spec))
    for pattern in trial.pop("constraints", None) or ():
        if not isinstance(pattern, Mapping) or not pattern:
            raise DomainError(f"a constraint is an object {{column: [values]}}, got {pattern!r}")
        unknown = sorted(set(pattern) - set(trial["columns"]))
        if unknown:
            raise DomainError(f"constraint {dict(pattern)} names no column {unknown[0]!r}")
    for name, what in asked:  # dates: public bounds too narrow for the sub-bins asked for
        column = spec["columns"][name]
        # a number's sub-bins may be finer than its grid (they decode to it)
        if what != "edges" or column["kind"] != "datetime":
            continue
        _check_day_resolution(name, column)
        lower, upper = _day_bounds(column, name)  # bounds that cannot be read fail here
        if column.get("lower") is None or column.get("upper") is None:
            continue  # a stand-in range: learnt bounds leave room for the sub-bins
        if upper - lower < (column.get("refine") or 1):
            raise DomainError(f"column {name!r}: its bounds are narrower than "
                              f"{column.get('refine')} sub-bins of a day; refine less")
    for name, what in asked:
        column = trial["columns"][name]
        if what == "edges" and column["kind"] == "datetime":
            # one bin over the whole range: the checks of a bin cut in whole days
            column["bins"], column["width"] = None, "73050D"
        elif what == "edges":
            column["bins"] = 1  # one bin: whatever the count learnt, the checks of a bin
        if what in ("precision", "edges"):
            continue
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
def _repair_bounds(name: str, column: dict[str, Any]) -> None:
    """Bounds in order and bins that fit them: post-processing of the released bounds."""
    if column["kind"] == "datetime":
        import pandas as pd

        # read as Datetime reads them (rehearsed before the data were read)
        lower = pd.Timestamp(column["lower"]).floor("D")
        upper = pd.Timestamp(column["upper"]).floor("D")
        if upper <= lower:
            upper = lower + pd.Timedelta("1D")
        column["lower"], column["upper"] = lower.strftime("%Y-%m-%d"), upper.strftime("%Y-%m-%d")
        return
    lower, upper = float(column["lower"]), float(column["upper"])
    if upper <= lower:
        upper = lower + 1.0
    bins = column.get("bins") or DEFAULT_BINS
    if column.get("integer"):
        lower, upper = math.floor(lower), math.ceil(upper)
        column["bins"] = int(min(bins, upper - lower + 1)) if isinstance(bins, int) else bins
    decimals = column.get("decimals")
    if isinstance(decimals, int) and isinstance(bins, int) and not isinstance(decimals, bool):
        unit = 10.0 ** -decimals
        if (upper - lower) / bins < unit * (1 - 1e-9):  # each bin at least one unit wide
            upper = float(f"{lower + bins * unit:.12g}")
            _note(f"column {name!r}: the range found is narrower than {bins} bins of "
                  f"{decimals} decimals; its upper bound was widened to {upper:g}")
    column["lower"] = int(lower) if float(lower).is_integer() else lower
    column["upper"] = int(upper) if float(upper).is_integer() else upper


def _repair_bin_count(name: str, column: dict[str, Any]) -> None:
    """No more equal-width bins than the public bounds hold values of the precision just
    learnt (each bin must hold one): post-processing, so that a run that spent on the
    precision still writes its schema."""
    bins = column.get("bins")
    if isinstance(bins, bool) or not isinstance(bins, int):
        return
    lower, upper = float(column["lower"]), float(column["upper"])
    if column.get("integer"):
        fit = math.floor(upper) - math.ceil(lower) + 1
    elif isinstance(column.get("decimals"), int):
        fit = math.floor((upper - lower) / 10.0 ** -column["decimals"] + 1e-9)
    else:
        return
    if 1 <= fit < bins:
        column["bins"] = fit
        _note(f"column {name!r}: each bin must hold a value at the precision learnt; "
              f"{fit} bin(s) instead of {bins}")


def _edges(edges: np.ndarray, column: Mapping[str, Any], steps: int = 1) -> list[float | int]:
    """Learnt edges as a schema writes them: on the column's grid where it has one (whole
    numbers, or its decimals), each bin then holding a value it can decode to, and the
    bounds exactly the column's (post-processing).

    An edge moves up to the grid, never to the nearest point: a bin [a, b) then holds
    exactly the values of the grid that the leaves it gathers held, so an atom that
    PrivTree isolated in a narrow leaf keeps a bin of its own, at most two steps wide (see
    :func:`dpgm.privacy.discovery.grouped_edges`). Each bin is at least ``steps`` steps
    wide (dates: as many days as their sub-bins)."""
    lower, upper = float(column["lower"]), float(column["upper"])
    inner = np.asarray(edges[1:-1], dtype=np.float64)
    unit = _unit(column)
    if unit:
        inner = _on_grid(inner, unit, np.ceil)
    elif inner.size:  # three significant digits of the narrowest bin: readable edges
        narrowest = np.diff(np.asarray(edges, dtype=np.float64)).min()
        inner = np.round(inner, max(0, 2 - math.floor(math.log10(narrowest))))
    inner = np.unique(inner[(inner > lower) & (inner < upper)])
    # each bin holds a value of the grid: the first from the grid's first value in the
    # bounds, the rest one step apart (the last holds its own edge, closed at upper)
    kept, last = [], float(_on_grid(np.array([lower]), unit, np.ceil)[0]) if unit else lower
    # the last bin [edge, upper] holds its own edge; cut into sub-bins of a step, it needs
    # as many steps as sub-bins too
    tail = steps * unit * (1 - 1e-9) if steps > 1 else 0.0
    for edge in inner:
        if edge - last >= steps * unit * (1 - 1e-9) and edge > last and upper - edge >= tail:
            kept.append(edge)
            last = edge
    return [column["lower"], *(_round_plain(e) for e in kept), column["upper"]]


def _on_grid(values: np.ndarray, unit: float, direction) -> np.ndarray:
    """``values`` moved by ``direction`` (np.ceil, np.floor) onto the grid of ``unit``,
    written as the grid writes them (3.258096, not 3.2580959999999997)."""
    decimals = max(0, -math.floor(math.log10(unit) + 1e-9))
    return np.round(direction(grid_steps(values, unit)) * unit, decimals)


def _unit(column: Mapping[str, Any]) -> float:
    """The step of a column's grid: 1 for whole numbers and dates (days), 10^−decimals,
    or 0."""
    if column.get("integer") or column.get("kind") == "datetime":
        return 1.0
    return 10.0 ** -column["decimals"] if column.get("decimals") is not None else 0.0


def _refine_for(column: Mapping[str, Any], dates: bool = False) -> int:
    """Sub-bins per learnt bin: :data:`LEARNT_REFINE`, or fewer where even the widest bin
    holds fewer values of the column's grid (whole numbers, or its decimals); a narrower
    bin's sub-bins that hold no value decode to its values (post-processing). Dates cut
    every bin into whole days: as many as the narrowest bin holds."""
    widths = np.diff(np.asarray(column["bins"], dtype=np.float64))
    unit = _unit(column)
    if unit == 0.0:
        return LEARNT_REFINE
    if dates:
        return int(max(1, min(LEARNT_REFINE, np.floor(widths.min() / unit + 1e-9))))
    # the widest bin [a, b] holds at most floor((b − a)/unit) + 1 values of the grid
    return int(max(1, min(LEARNT_REFINE, np.floor(widths.max() / unit + 1e-9) + 1)))


def _round_plain(value: float) -> float | int:
    value = float(f"{value:.15g}")
    return int(value) if value.is_integer() else value


def _repair_labels(name: str, column: dict[str, Any]) -> None:
    """Found labels that a schema can hold: one label per written form (the first), and an
    "other" label that no found label is written as (renamed)."""
    kept, written = [], set()
    for label in column["labels"]:
        text = str(label).strip()
        if text in written:
            _note(f"column {name!r}: the labels found include two written {text!r}; the "
                  "first is kept")
            continue
        kept.append(label)
        written.add(text)
    column["labels"] = kept
    other = column.get("other")
    if other is None or other is False:
        return
    named = DEFAULT_OTHER if other is True else str(other)
    if named.strip() in written:
        renamed = named
        while renamed.strip() in written:
            renamed += " (not listed)"
        column["other"] = renamed
        _note(f"column {name!r}: a label {named!r} was found, so the other values are "
              f"labelled {renamed!r}")


def _repair_constraints(spec: dict[str, Any]) -> None:
    """Constraints naming a value that discovery did not find are dropped, with a note."""
    if not spec.get("constraints"):
        return
    bare = Schema.from_json({**spec, "constraints": []})
    kept = []
    for pattern in spec["constraints"]:
        try:
            Schema(bare.columns.values(), [pattern])
        except DomainError as exc:
            _note(f"constraint {dict(pattern)} dropped: {exc}")
            continue
        kept.append(pattern)
    spec["constraints"] = kept


def _plain(value: object) -> object:
    """A JSON-ready label: NumPy scalars as Python ones."""
    return value.item() if isinstance(value, np.generic) else value


#: the labels' type a draft may declare with its "dtype" (default: the text as written)
DECLARED = {"int64": int, "Int64": int, "float64": float, "bool": bool, "boolean": bool}
_SPELLINGS = {"True": True, "TRUE": True, "true": True,
              "False": False, "FALSE": False, "false": False}


def _labels(values: pd.Series, dtype: object, name: str) -> list[object]:
    """Each value as the label it would be, read on its own in the draft's declared type
    (``dtype``): a text as it is written, or a number written canonically (1.0 as 1)."""
    import pandas as pd

    want = DECLARED.get(dtype) if isinstance(dtype, str) else None
    text = text_values(values)
    labels = np.empty(len(values), dtype=object)
    for part, read in ((text, _label_of_text), (~text, _label_of_value)):
        if part.any():
            chosen = values[part].astype(object)
            keys = chosen if read is _label_of_text else pd.Series(
                list(zip(map(type, chosen), chosen)), dtype=object)
            inverse, uniques = pd.factorize(keys)
            found = np.empty(len(uniques), dtype=object)
            found[:] = [read(u if read is _label_of_text else u[1], want, name)
                        for u in uniques]
            labels[part] = found[inverse]
    return labels.tolist()


def _label_of_text(text: str, want: type | None, name: str) -> object:
    written = parse.strip(text)
    if want is None:
        return written
    if want is bool:
        if written in _SPELLINGS:
            return _SPELLINGS[written]
    else:
        number = parse.number(written)
        if number is not None:
            return _label_of_value(number, want, name)
    raise DataError(f"column {name!r} is declared {want.__name__} but holds a value of "
                    "another type")


def _label_of_value(value: object, want: type | None, name: str) -> object:
    value = value.item() if isinstance(value, np.generic) else value
    if isinstance(value, bool):
        if want in (None, bool):
            return value
    elif isinstance(value, (int, float)) and math.isfinite(value) and want is not bool:
        if want is float:
            return float(value)
        if float(value).is_integer():
            return int(value)
        if want is None:
            return float(value)
    elif want is None:
        return str(value).strip()
    what = want.__name__ if want is not None else "a label"
    raise DataError(f"column {name!r} is declared {what} but holds a value of another type")


def _numbers(values: pd.Series, name: str) -> np.ndarray:
    numbers = read_numbers(values)
    if not np.isfinite(numbers).all():
        raise DataError(f"column {name!r} is declared numeric but holds a non-numeric value")
    return numbers


def _days(values: pd.Series, fmt: object, name: str) -> np.ndarray:
    micros, found = read_micros(values, parse.time_format(fmt, name), name)
    if not found.all():
        raise DataError(f"column {name!r} is declared datetime but holds a value that is not "
                        "a date in its format")
    return (micros // 86_400_000_000).astype(np.float64)


def _day_bounds(column: Mapping[str, Any], name: str = "") -> tuple[int, int]:
    """A date column's bounds in days since 1970, outwards to whole days (a stand-in range
    where one is not known yet)."""
    import pandas as pd

    try:  # read as Datetime reads them
        lower = pd.Timestamp(column.get("lower") or FIRST_MONTH + "-01")
        upper = pd.Timestamp(column.get("upper") or LAST_MONTH + "-01")
    except (TypeError, ValueError) as exc:
        raise DomainError(f"column {name!r}: bounds: {exc}") from None
    day = pd.Timedelta("1D").value
    return lower.value // day, -(-upper.value // day)


def _check_day_resolution(name: str, column: Mapping[str, Any]) -> None:
    import pandas as pd

    resolution = column.get("resolution")
    try:
        coarser = resolution is not None and pd.Timedelta(resolution) > pd.Timedelta("1D")
    except (TypeError, ValueError) as exc:
        raise DomainError(f"column {name!r}: resolution: {exc}") from None
    if coarser:
        raise DomainError(f"column {name!r}: learnt date bins are cut in whole days; leave "
                          f"resolution out (or at most 1D), or give the bins")


def _date(days: float) -> str:
    return str(np.datetime64(int(days), "D"))


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
