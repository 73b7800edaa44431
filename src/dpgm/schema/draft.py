"""A schema skeleton from a table's header and dtypes, never from its values.

What a column holds (its labels, its bounds) is left empty for the data steward to fill
from public knowledge, or for :func:`dpgm.discover.discover` to learn privately. A CSV
file carries no dtypes without reading values, so from a CSV the draft has the column
names only and leaves every kind to fill; from a DataFrame (or a file format with typed
columns) the kinds are guessed from the dtypes.
"""

from __future__ import annotations

from os import PathLike
from typing import TYPE_CHECKING, Any

from dpgm.errors import DataError

if TYPE_CHECKING:
    import pandas as pd

#: the kinds a steward may write in place of a draft's ``null``
KIND_CHOICES = "categorical | numeric | datetime"
DEFAULT_BINS = 10
#: the most bins ``dpgm schema discover`` learns for a numeric or datetime column whose
#: bins are null
LEARNT_BINS = 16
#: the sub-bins per learnt bin where ``refine`` is null (fewer where a bin of whole
#: numbers holds fewer): the fine level AIM and MST measure one-way marginals at
LEARNT_REFINE = 8
#: every field a column may have, by kind; a draft lists them all with nulls to fill
FIELDS = {
    "categorical": ("labels", "other", "dtype"),
    "numeric": ("lower", "upper", "bins", "integer", "decimals", "refine"),
    "datetime": ("lower", "upper", "bins", "width", "refine", "format"),
}
NOTE = (
    "A draft written from the column names and dtypes only: nothing in it was read from "
    "the data. Each column lists every field with null where it is to be filled; a null "
    "left in a field of another kind is ignored. Fill from public knowledge (kind: "
    + KIND_CHOICES + "; categorical: labels, other (true: values not listed get the label "
    "'other'), dtype; numeric: lower, upper, bins (a number of equal-width bins, or the "
    "edges), integer, decimals, refine (sub-bins per bin: two resolutions); datetime: "
    "lower, upper, bins (the edges, as dates) or width (equal bins, such as 30D), refine, "
    "format (strftime, default ISO 8601)), or let "
    "`dpgm schema discover` learn privately, charged to a privacy budget, what is still "
    "null: labels (with other: true, so that values too rare to be released are coded "
    "'other'), bounds, data-adaptive bin edges (bins, each cut into sub-bins where refine "
    "is null), and the precision (integer, decimals). nullable is true everywhere, which "
    "is always safe; set it to false where public knowledge says no value is missing."
)


def _fields(*kinds: str) -> dict[str, None]:
    return {name: None for kind in kinds for name in FIELDS[kind]}


def column_draft(dtype: object | None) -> dict[str, Any]:
    """The draft of one column of pandas dtype ``dtype`` (None: unknown), every field of
    its kind (of every kind, where unknown) listed, null where it is to be filled."""
    import pandas as pd
    from pandas.api import types

    if dtype is None:
        return {"kind": None, **_fields("categorical", "numeric", "datetime"),
                "nullable": True}
    if types.is_bool_dtype(dtype):  # the labels of a boolean are public: True and False
        return {"kind": "categorical", **_fields("categorical"), "labels": [False, True],
                "other": False, "nullable": True}
    if types.is_integer_dtype(dtype) or types.is_float_dtype(dtype):
        out: dict[str, Any] = {"kind": "numeric", **_fields("numeric")}
        if types.is_integer_dtype(dtype):  # the dtype says so for every value: public
            out["integer"] = True
        out["nullable"] = True
        return out
    if types.is_datetime64_any_dtype(dtype):
        return {"kind": "datetime", **_fields("datetime"), "nullable": True}
    # strings, objects, and categories (whose categories may have been read off the data)
    if isinstance(dtype, pd.CategoricalDtype) or types.is_object_dtype(dtype) or (
        types.is_string_dtype(dtype)
    ):
        return {"kind": "categorical", **_fields("categorical"), "nullable": True}
    return {"kind": None, **_fields("categorical", "numeric", "datetime"), "nullable": True}


def draft(source: pd.DataFrame | str | PathLike[str]) -> dict[str, Any]:
    """A schema skeleton (JSON form, with nulls to fill) for a DataFrame, a CSV file or a
    Parquet file.

    Reads the DataFrame's column names and dtypes, the CSV file's header line, or the
    Parquet file's schema (names and types): never a value.
    """
    if str(source).lower().endswith((".parquet", ".pq")) and not hasattr(source, "columns"):
        from dpgm.dataset import read_table

        source = read_table(source, nrows=0)  # the file's own schema: no record is read
    if hasattr(source, "columns") and hasattr(source, "dtypes"):
        names = [str(c) for c in source.columns]
        dtypes = list(source.dtypes)
    else:
        names = read_header(source)
        dtypes = [None] * len(names)
    repeated = sorted({c for c in names if names.count(c) > 1})
    if repeated:
        raise DataError(f"the column name(s) {repeated} appear more than once")
    columns = {name: column_draft(dtype) for name, dtype in zip(names, dtypes)}
    return {"note": NOTE, "columns": columns}


def read_header(path: str | PathLike[str]) -> list[str]:
    """The column names of a CSV file: its first line, and nothing after it."""
    import csv
    import gzip

    opener = gzip.open if str(path).endswith(".gz") else open
    try:
        with opener(path, "rt", newline="") as handle:
            line = handle.readline()
    except (OSError, UnicodeDecodeError, EOFError) as exc:
        raise DataError(f"{path}: cannot read its header ({exc})") from None
    if not line.strip():
        raise DataError(f"{path}: the file has no header line")
    return next(csv.reader([line]))
