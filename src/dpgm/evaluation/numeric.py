"""How well synthetic numbers follow the real ones, in original units (not private: for the
data steward's own checks, like the rest of :mod:`dpgm.evaluation`).

For each numeric or datetime column of a schema (dates in days):

* ``ks``: the two-sample Kolmogorov–Smirnov distance, the largest gap between the two
  empirical CDFs (0 to 1; SDMetrics reports ``KSComplement`` = 1 − ks);
* ``wasserstein``: the Wasserstein-1 distance (the area between the CDFs) divided by the
  column's public range, so that columns in different units compare (0 to 1);
* quantiles of both tables at :data:`QUANTILES`;

and over the numeric columns together, the Pearson and Spearman correlation matrices of
both tables and their difference (SDMetrics' ``CorrelationSimilarity`` of a pair is
1 − |difference| / 2). Values are read one by one by the schema's rules, as when they are
encoded; missing values are left out (pairwise for correlations).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

    from dpgm.schema import Schema

#: the quantiles tabulated for each column
QUANTILES = (0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99)
#: points at which the CDFs are kept for the report's overlays
CDF_POINTS = 256
_DAY_MICROS = 86_400_000_000


@dataclass
class ColumnFidelity:
    """One numeric column, real against synthetic (see the module docstring)."""

    ks: float
    wasserstein: float
    real_quantiles: np.ndarray
    synthetic_quantiles: np.ndarray
    #: both empirical CDFs on a common grid of values (for plots)
    grid: np.ndarray = field(default_factory=lambda: np.zeros(0))
    real_cdf: np.ndarray = field(default_factory=lambda: np.zeros(0))
    synthetic_cdf: np.ndarray = field(default_factory=lambda: np.zeros(0))


@dataclass
class NumericFidelity:
    """Every numeric column of a schema, and their correlations, real against synthetic."""

    columns: dict[str, ColumnFidelity]
    pearson: tuple[pd.DataFrame, pd.DataFrame] | None = None
    spearman: tuple[pd.DataFrame, pd.DataFrame] | None = None
    quantiles: tuple[float, ...] = field(default=QUANTILES)

    @property
    def mean_ks(self) -> float:
        return float(np.mean([c.ks for c in self.columns.values()]))

    @property
    def mean_wasserstein(self) -> float:
        return float(np.mean([c.wasserstein for c in self.columns.values()]))

    def correlation_difference(self, method: str = "pearson") -> float:
        """The largest |real − synthetic| correlation over pairs of numeric columns (0 where
        there are fewer than two)."""
        pair = self.pearson if method == "pearson" else self.spearman
        if pair is None:
            return 0.0
        difference = np.abs(pair[0].to_numpy() - pair[1].to_numpy())
        return float(np.nanmax(difference)) if np.isfinite(difference).any() else 0.0


def numeric_values(frame: pd.DataFrame, schema: Schema) -> pd.DataFrame:
    """The numeric and datetime columns of a raw table as floats (dates as days since
    1970), each value read by the schema's rules; NaN where missing or unreadable."""
    import pandas as pd

    from dpgm.schema.columns import missing_values, read_micros, read_numbers

    out = {}
    for name, column in schema.columns.items():
        if column.kind not in ("numeric", "datetime") or name not in frame.columns:
            continue
        values = frame[name]
        present = ~missing_values(values)
        numbers = np.full(len(values), np.nan)
        if column.kind == "numeric":
            numbers[present] = read_numbers(values[present])
        else:
            micros, found = read_micros(values[present], column.format, name)
            numbers[np.flatnonzero(present)[found]] = micros[found] / _DAY_MICROS
        out[name] = numbers
    return pd.DataFrame(out, index=frame.index)


def cdf_distances(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """The KS distance (largest gap between the two empirical CDFs) and the Wasserstein-1
    distance (the area between them) of two sorted samples, from one pass over their
    merged values (what scipy's ks_2samp and wasserstein_distance compute)."""
    merged = np.sort(np.concatenate([a, b]), kind="stable")  # two sorted runs: timsort
    gap = (np.searchsorted(a, merged, side="right") / a.size
           - np.searchsorted(b, merged, side="right") / b.size)
    return float(np.abs(gap).max()), float(np.sum(np.abs(gap[:-1]) * np.diff(merged)))


def public_range(schema: Schema, name: str) -> float:
    """The width of a column's public bounds (days for dates)."""
    column = schema.columns[name]
    if column.kind == "numeric":
        return float(column.edges[-1] - column.edges[0])
    return (column.upper - column.lower) / np.timedelta64(1, "D")


def numeric_fidelity(real: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema,
                     values: tuple[pd.DataFrame, pd.DataFrame] | None = None
                     ) -> NumericFidelity:
    """Per-column KS, normalised W1 and quantiles, and the correlation matrices, of the
    numeric and datetime columns of ``schema`` in two raw tables (``values``: their
    :func:`numeric_values`, where already read)."""
    real_values, synthetic_values = values or (numeric_values(real, schema),
                                               numeric_values(synthetic, schema))
    columns = {}
    ranks: tuple[dict, dict] = ({}, {})
    for name in real_values.columns:
        (a, ranks[0][name]), (b, ranks[1][name]) = (
            _sorted_and_ranks(v[name].to_numpy(dtype=np.float64))
            for v in (real_values, synthetic_values))
        if a.size == 0 or b.size == 0:
            continue
        grid = np.linspace(min(a[0], b[0]), max(a[-1], b[-1]), CDF_POINTS)
        ks, wasserstein = cdf_distances(a, b)
        columns[name] = ColumnFidelity(
            ks=ks,
            wasserstein=wasserstein / public_range(schema, name),
            real_quantiles=np.quantile(a, QUANTILES),
            synthetic_quantiles=np.quantile(b, QUANTILES),
            grid=grid,
            real_cdf=np.searchsorted(a, grid, side="right") / a.size,
            synthetic_cdf=np.searchsorted(b, grid, side="right") / b.size,
        )
    result = NumericFidelity(columns)
    names = list(columns)
    if len(names) >= 2:
        result.pearson = tuple(correlations(v[names], "pearson")
                               for v in (real_values, synthetic_values))
        result.spearman = tuple(correlations(v[names], "spearman", r)
                                for v, r in zip((real_values, synthetic_values), ranks))
    return result


def _sorted_and_ranks(column: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A column's present values sorted, and each value's average rank among them (ties
    share their mean rank; NaN where missing), from one sort."""
    present = ~np.isnan(column)
    seen = column[present]
    order = np.argsort(seen, kind="stable")
    ordered = seen[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]]) if seen.size else (
        np.zeros(0, dtype=np.int64))
    counts = np.diff(np.r_[starts, ordered.size])
    ranked = np.empty(seen.size)
    ranked[order] = np.repeat(starts + (counts + 1) / 2.0, counts)
    ranks = np.full(column.shape, np.nan)
    ranks[present] = ranked
    return ordered, ranks


def correlations(values: pd.DataFrame, method: str = "pearson",
                 ranks: dict[str, np.ndarray] | None = None) -> pd.DataFrame:
    """The Pearson or Spearman correlation of each pair of columns over the rows where
    both are present (what pandas' ``corr`` gives), NaN where a column is constant
    (``ranks``: each column's average ranks, where already known)."""
    import pandas as pd

    names = list(values.columns)
    columns = [values[n].to_numpy(dtype=np.float64) for n in names]
    present = [~np.isnan(c) for c in columns]
    whole = [(ranks[n] if ranks else _ranks(c)) if method == "spearman" else c
             for n, c in zip(names, columns)]
    matrix = np.eye(len(names))
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            both = present[i] & present[j]
            if both.all():
                x, y = whole[i], whole[j]
            elif method == "spearman":  # ranks among the rows the pair shares
                x, y = _ranks(columns[i][both]), _ranks(columns[j][both])
            else:
                x, y = columns[i][both], columns[j][both]
            matrix[i, j] = matrix[j, i] = pearson(x, y)
    for i, column in enumerate(columns):
        seen = column[present[i]]
        if seen.size < 2 or seen.min() == seen.max():
            matrix[i, i] = np.nan  # a constant column correlates with nothing
    return pd.DataFrame(matrix, index=names, columns=names)


def _ranks(values: np.ndarray) -> np.ndarray:
    """Average ranks (ties share their mean rank), NaN kept in place."""
    return _sorted_and_ranks(values)[1]


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson's r of two columns with no missing value (NaN for a constant one)."""
    if x.size < 2:
        return float("nan")
    x, y = x - x.mean(), y - y.mean()
    denominator = np.sqrt(np.dot(x, x) * np.dot(y, y))
    return float(np.dot(x, y) / denominator) if denominator > 0 else float("nan")
