"""The suite's discretisation for the peers: every column coded from the public spec alone,
exactly as dpgm codes it, and codes decoded as dpgm decodes them (numpy and pandas only:
each runner imports this in its peer's own venv).

- categorical: the spec's labels in order, codes 0..k-1;
- numeric: the spec's bins (``bins`` equal-width bins on [lower, upper], edges rounded to
  15 significant digits as dpgm rounds them, or the listed edges); bin i holds
  [e_i, e_i+1), the last bin its upper edge too; values outside the bounds are clipped;
- nullable: one more code, the last, for a missing value (a blank cell in the suite's
  CSV), written back as a blank cell.

Decoding draws a number uniformly within its bin: among the whole numbers (``integer``)
or the numbers written with ``decimals`` decimals that the bin holds, else on the line.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd


def check(columns: dict) -> None:
    """Refuse the spec features the runners do not code (before any data is read)."""
    for name, spec in columns.items():
        if spec["kind"] not in ("categorical", "numeric") or spec.get("other") or (
                spec.get("refine") or 1) > 1:
            raise SystemExit(f"column {name!r}: only categorical and numeric columns (no "
                             "other, no refine) are supported by the peers' runners")


def read_table(data: str, spec: str) -> tuple[dict, pd.DataFrame]:
    """The spec's columns (checked before the data are read) and the CSV's values of those
    columns, every one read as text (no type inference, blank kept as blank)."""
    columns = json.loads(Path(spec).read_text())["columns"]
    check(columns)
    frame = pd.read_csv(data, dtype=str, keep_default_na=False, na_filter=False)
    return columns, frame[list(columns)]


def edges(spec: dict) -> np.ndarray:
    """dpgm's bin edges of a numeric column."""
    if isinstance(spec["bins"], list):
        return np.array([float(e) for e in spec["bins"]])
    lo, hi = float(spec["lower"]), float(spec["upper"])
    return np.array([float(f"{e:.15g}") for e in np.linspace(lo, hi, int(spec["bins"]) + 1)])


def size(spec: dict) -> int:
    """The column's number of codes (the missing code included)."""
    values = len(spec["labels"]) if spec["kind"] == "categorical" else len(edges(spec)) - 1
    return values + bool(spec.get("nullable"))


def encode(frame: pd.DataFrame, columns: dict) -> dict[str, np.ndarray]:
    """Every column's codes 0..size-1 (values read as text, blank = missing)."""
    check(columns)
    out = {}
    for name, spec in columns.items():
        values = frame[name].astype(str).str.strip()
        missing = (values == "").to_numpy()
        if missing.any() and not spec.get("nullable"):
            raise SystemExit(f"column {name!r} has a missing value and is not nullable")
        if spec["kind"] == "categorical":
            codes = values.map(label_codes(spec["labels"])).to_numpy(dtype=np.float64)
            bad = np.isnan(codes) & ~missing
            if bad.any():
                raise SystemExit(f"column {name!r}: {values[bad].iloc[0]!r} is not one of "
                                 "the spec's labels")
        else:
            numbers = pd.to_numeric(values.where(~missing, "0"), errors="coerce").to_numpy(
                dtype=np.float64)
            if not np.isfinite(numbers).all():
                raise SystemExit(f"column {name!r}: "
                                 f"{values[~np.isfinite(numbers)].iloc[0]!r} is not a "
                                 "finite number")
            e = edges(spec)
            codes = np.minimum(np.searchsorted(e, np.clip(numbers, e[0], e[-1]),
                                               side="right") - 1, len(e) - 2)
        out[name] = np.where(missing, size(spec) - 1, codes).astype(np.int64)
    return out


def label_codes(labels: list) -> dict[str, int]:
    """Each label's code by its text, and by every text of its number where the label is a
    whole number ("16.0" is the label 16, as dpgm reads it from a float column)."""
    index: dict[str, int] = {}
    for code, label in enumerate(labels):
        index.setdefault(str(label), code)
    for code, label in enumerate(labels):
        number = label if isinstance(label, (int, float)) and not isinstance(label, bool) \
            else (int(label) if isinstance(label, str) and label.strip().lstrip("-").isdigit()
                  else None)
        if number is not None and float(number).is_integer():
            index.setdefault(f"{float(number)}", code)
    return index


def grid(e: np.ndarray, spec: dict) -> tuple[np.ndarray, np.ndarray]:
    """For each bin, the first and last step k of the column's grid (values k * unit) that
    its coding puts in the bin (dpgm's coarse-bin grid)."""
    integer, decimals = bool(spec.get("integer")), spec.get("decimals")
    unit = 1.0 if integer else 10.0 ** -decimals

    def value(k):
        return k if integer else np.round(k * unit, decimals)

    scaled = e / unit
    near = np.round(scaled)
    scaled = np.where(np.abs(scaled - near) <= 1e-9, near, scaled)
    first = np.ceil(scaled[:-1])
    last = np.concatenate([np.ceil(scaled[1:-1]) - 1, [np.floor(scaled[-1])]])
    first = np.where(value(first) < e[:-1], first + 1, first)
    first = np.where(value(first - 1) >= e[:-1], first - 1, first)
    upper = np.concatenate([e[1:-1], [np.inf]])
    last = np.where(value(last) >= upper, last - 1, last)
    last = np.where((value(last + 1) < upper) & (value(last + 1) <= e[-1]), last + 1, last)
    return first, last


def decode(codes, columns: dict, rng: np.random.Generator) -> pd.DataFrame:
    """Codes (a mapping or frame of columns) back to values: labels, or numbers drawn
    uniformly within their bin; the missing code to a blank cell."""
    out = {}
    for name, spec in columns.items():
        c = np.asarray(codes[name], dtype=np.int64)
        missing = (c == size(spec) - 1) if spec.get("nullable") else np.zeros(len(c), bool)
        c = np.where(missing, 0, c)
        if spec["kind"] == "categorical":
            values = np.asarray([str(v) for v in spec["labels"]], dtype=object)[c]
        else:
            e = edges(spec)
            line = e[c] + rng.random(len(c)) * (e[c + 1] - e[c])
            if not spec.get("integer") and spec.get("decimals") is None:
                values = line
            else:
                first, last = grid(e, spec)
                k = np.minimum(first[c] + np.floor(rng.random(len(c)) * (
                    last[c] - first[c] + 1)), last[c])
                empty = first[c] > last[c]  # a bin narrower than the grid's step
                if spec.get("integer"):
                    values = np.where(empty, np.round(line), k).astype(np.int64)
                else:
                    d = spec["decimals"]
                    values = np.where(empty, line, np.round(k * 10.0 ** -d, d))
        if missing.any():
            values = np.where(missing, "", values.astype(object))
        out[name] = values
    return pd.DataFrame(out, columns=list(columns))
