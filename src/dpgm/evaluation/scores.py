"""The standard scores of synthetic data, computed as the reference libraries compute them
(not private: for the data steward's own checks, like the rest of :mod:`dpgm.evaluation`).

* SDMetrics' single-table **Quality Report** (sdmetrics 0.32): *Column Shapes* —
  KSComplement of each numerical or datetime column, TVComplement of each categorical one;
  *Column Pair Trends* — CorrelationSimilarity (Pearson) of each pair of numerical or
  datetime columns, ContingencySimilarity of every other pair (a numerical column cut
  into ten equal-width bins over each table's own range), each counted only where the
  real table's |correlation| exceeds 0.5 or its Cramér's V exceeds 0.3, as the report
  does. The overall score is the mean of the two properties.
* SDMetrics' **Diagnostic Report**: *Data Validity* — BoundaryAdherence of numerical and
  datetime columns, CategoryAdherence of categorical ones, DatetimeFormatAdherence of
  datetime columns given as text with a format; *Data Structure* — TableStructure, the
  overlap of the two tables' (column, dtype) pairs.
* NIST SDNist's **k-marginal** score (sdnist 2.4): over every pair of columns,
  ``(2 − mean Σ|p_real − p_synthetic|) × 500``, 0 to 1000, on discrete tables; its
  preparation bins numbers by percentiles of the real column (:func:`sdnist_bins`).

We compute them ourselves rather than depend on the libraries: sdmetrics requires pandas
below 3 and sdnist pins pandas 2.0, numpy 1.24 and scikit-learn 1.2, which dpgm's own
pins exclude; the libraries' numbers on three tables are recorded in the tests, which
hold these functions to them within 1e-9 (``benchmarks/scores_record.py`` records them).
Every rule below is the libraries' own, including the surprising ones: missing values
are dropped in Column Shapes but are a category in Column Pair Trends (and share the top
bin of a binned number); an unseen synthetic category adds 1e-6 to the real counts; a
pair below the thresholds scores NaN and is left out. One difference: SDMetrics
subsamples the pairs' tables to 50,000 rows without a seed above that size; these
functions use every row, so that a score is reproducible.

``metadata`` is SDMetrics' single-table form, ``{"columns": {name: {"sdtype": ...}}}``
with sdtypes ``numerical``, ``datetime`` (with ``datetime_format`` where the column is
text), ``categorical``, ``boolean`` or ``ordinal``; :func:`metadata_for` writes it for a
dpgm schema or domain.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import combinations
from typing import TYPE_CHECKING, Any

import numpy as np

from dpgm.evaluation.numeric import cdf_distances, pearson

if TYPE_CHECKING:
    import pandas as pd
    from numpy.typing import ArrayLike

    from dpgm.dataset import CountingSource, Dataset
    from dpgm.schema import Schema

CONTINUOUS = ("numerical", "datetime")
DISCRETE = ("categorical", "boolean", "ordinal")
#: the Quality Report's thresholds on the real table (sdmetrics.reports.utils)
CORRELATION_THRESHOLD = 0.5
ASSOCIATION_THRESHOLD = 0.3
#: SDMetrics' rounding of values before the KS statistic (sys.float_info.dig - 1)
_KS_DECIMALS = 14
#: TVComplement's count for a synthetic category the real column lacks
_UNSEEN = 1e-6


@dataclass(frozen=True)
class ScoreReport:
    """One SDMetrics report: its overall score, each property's, and each property's
    rows (as ``get_details`` lists them: ``Column`` or ``Column 1``/``Column 2``,
    ``Metric``, ``Score``, and for pairs the real statistic and whether it meets the
    threshold)."""

    name: str
    overall: float
    properties: dict[str, float]
    details: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The report as JSON-ready values (NaN as null)."""

        def plain(value: Any) -> Any:
            return None if isinstance(value, float) and np.isnan(value) else value

        return {"overall": plain(self.overall),
                "properties": {k: plain(v) for k, v in self.properties.items()},
                "details": {k: [{c: plain(v) for c, v in row.items()} for row in rows]
                            for k, rows in self.details.items()}}


def metadata_for(schema: Schema | None, attrs: Iterable[str]) -> dict[str, Any]:
    """SDMetrics metadata for a dpgm schema (numeric → numerical, datetime → datetime,
    categorical → categorical) or, without one, for coded attributes (all categorical)."""
    kinds = {"numeric": "numerical", "datetime": "datetime", "categorical": "categorical"}
    columns = {}
    for name in attrs:
        kind = "categorical" if schema is None else kinds[schema.columns[name].kind]
        columns[name] = {"sdtype": kind}
    return {"columns": columns}


# -- columns, read once ------------------------------------------------------------------------
@dataclass
class _Column:
    """One column of both tables as the metrics read it."""

    sdtype: str
    real: Any  # float64 array (NaN missing) for continuous columns, else an object Series
    synthetic: Any
    error: str | None = None  # a datetime column that would not parse: its metrics are NaN
    real_text: Any = None  # a datetime column's values as given (DatetimeFormatAdherence)
    synthetic_text: Any = None

    @property
    def continuous(self) -> bool:
        return self.sdtype in CONTINUOUS

    def bins(self) -> tuple[np.ndarray, np.ndarray, int]:
        """Both tables' own-range bins (1 to 11) as codes of a pair's contingency table."""
        if not hasattr(self, "_binned"):
            self._binned = (_own_bins(self.real), _own_bins(self.synthetic), 12)
        return self._binned

    def constant(self) -> bool:
        """Whether either table holds one value only (missing values aside)."""
        if not hasattr(self, "_constant"):
            self._constant = _constant(self.real) or _constant(self.synthetic)
        return self._constant

    def codes(self) -> tuple[np.ndarray, np.ndarray, int]:
        """Both tables' values as codes of one factorisation (missing a code too)."""
        if not hasattr(self, "_coded"):
            self._coded = _codes(self.real, self.synthetic)
        return self._coded


def _columns(real: pd.DataFrame, synthetic: pd.DataFrame, metadata: Mapping
             ) -> dict[str, _Column]:
    columns = {}
    for name, spec in metadata["columns"].items():
        sdtype = spec.get("sdtype")
        if sdtype not in CONTINUOUS + DISCRETE:
            continue  # SDMetrics skips other sdtypes (ids, text)
        column = _Column(sdtype, real[name], synthetic[name])
        if sdtype == "datetime":
            column.real_text, column.synthetic_text = real[name], synthetic[name]
            try:
                column.real, column.synthetic = (_nanoseconds(v, spec.get("datetime_format"))
                                                 for v in (real[name], synthetic[name]))
            except (ValueError, TypeError) as exc:
                column.error = str(exc)
        elif sdtype == "numerical":
            column.real, column.synthetic = (np.asarray(v, dtype=np.float64)
                                             for v in (real[name], synthetic[name]))
        columns[name] = column
    return columns


def _nanoseconds(values: pd.Series, form: str | None) -> np.ndarray:
    """Dates as float nanoseconds since 1970 (NaN where missing), as SDMetrics converts
    them (text through ``datetime_format``)."""
    import pandas as pd

    if not pd.api.types.is_datetime64_any_dtype(values):
        if form is None:
            raise ValueError("a datetime column given as text needs a datetime_format")
        values = pd.to_datetime(values, format=form)
    dates = values.astype("datetime64[ns]")
    out = dates.to_numpy().astype("int64").astype(np.float64)
    out[np.asarray(dates.isna())] = np.nan
    return out


def _codes(real, synthetic) -> tuple[np.ndarray, np.ndarray, int]:
    """Both columns' values as codes of one factorisation, missing values a code too."""
    import pandas as pd

    kinds = [getattr(v, "dtype", None) for v in (real, synthetic)]
    if all(isinstance(k, pd.CategoricalDtype) for k in kinds) and kinds[0] == kinds[1]:
        size = len(kinds[0].categories)  # codes already: missing (-1) becomes the last
        return (*(np.where(c < 0, size, c) for c in (np.asarray(v.cat.codes, dtype=np.int64)
                                                      for v in (real, synthetic))), size + 1)
    both = pd.concat([pd.Series(real, dtype=object), pd.Series(synthetic, dtype=object)],
                     ignore_index=True)
    codes, uniques = pd.factorize(both, use_na_sentinel=False)
    return codes[: len(real)], codes[len(real):], len(uniques)


# -- Column Shapes -----------------------------------------------------------------------------
def ks_complement(real: np.ndarray, synthetic: np.ndarray) -> float:
    """1 − the two-sample KS statistic, missing values dropped (NaN if a side is empty)."""
    r = np.sort(np.round(real[~np.isnan(real)], _KS_DECIMALS))
    s = np.sort(np.round(synthetic[~np.isnan(synthetic)], _KS_DECIMALS))
    if not r.size or not s.size:
        return float("nan")
    return 1.0 - cdf_distances(r, s)[0]


def tv_complement(real: ArrayLike, synthetic: ArrayLike) -> float:
    """1 − the TV distance of two categorical columns, missing values dropped; a synthetic
    category the real column lacks counts 1e-6 in it (NaN if a side is empty)."""
    import pandas as pd

    real, synthetic = pd.Series(real).dropna(), pd.Series(synthetic).dropna()
    if not len(real) or not len(synthetic):
        return float("nan")
    r, s, k = _codes(real, synthetic)
    counts_r = np.bincount(r, minlength=k).astype(np.float64)
    counts_s = np.bincount(s, minlength=k).astype(np.float64)
    counts_r[(counts_r == 0) & (counts_s > 0)] += _UNSEEN
    gap = np.abs(counts_s / counts_s.sum() - counts_r / counts_r.sum())
    return float(1.0 - 0.5 * gap.sum())


# -- Column Pair Trends ------------------------------------------------------------------------
def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson's r over the rows where both are present."""
    both = ~(np.isnan(x) | np.isnan(y))
    return pearson(x[both], y[both])


def _own_bins(values: np.ndarray) -> np.ndarray:
    """Ten equal-width bins over the values' own range, as the report cuts a number in a
    mixed pair: the largest value and every missing one fall in bin 11."""
    present = values[~np.isnan(values)]
    if not present.size:
        return np.full(values.shape, 11)
    return np.digitize(values, np.histogram_bin_edges(present))


def _constant(values) -> bool:
    values = np.asarray(values, dtype=np.float64)
    present = values[~np.isnan(values)]
    return bool(present.size) and bool(present.min() == present.max())


def _cramers_v(counts: np.ndarray) -> float:
    """Cramér's V of a contingency table (no continuity correction), over the rows and
    columns that hold records; NaN below 2 × 2."""
    table = counts[counts.sum(axis=1) > 0][:, counts.sum(axis=0) > 0]
    if min(table.shape) < 2:
        return float("nan")
    n = table.sum()
    expected = np.outer(table.sum(axis=1), table.sum(axis=0)) / n
    chi2 = float(np.sum((table - expected) ** 2 / expected))
    return float(np.sqrt(chi2 / n / (min(table.shape) - 1)))


def _pair_trend(first: _Column, second: _Column, real_rows: int, synthetic_rows: int,
                thresholds: bool) -> dict[str, Any]:
    nan = float("nan")
    row: dict[str, Any] = {"Score": nan, "Real Correlation": nan, "Synthetic Correlation": nan,
                           "Real Association": nan, "Meets Threshold?": False}
    if first.error or second.error:
        return {"Metric": "CorrelationSimilarity" if first.continuous and second.continuous
                else "ContingencySimilarity", **row, "Meets Threshold?": None}
    if first.continuous and second.continuous:
        row["Metric"] = "CorrelationSimilarity"
        if first.constant() or second.constant():
            row["Meets Threshold?"] = None  # SDMetrics' ConstantInputError
            return row
        real = _pearson(first.real, second.real)
        row["Real Correlation"] = real
        row["Meets Threshold?"] = bool(not np.isnan(real) and abs(real) > CORRELATION_THRESHOLD)
        if thresholds and not row["Meets Threshold?"]:
            return row
        synthetic = _pearson(first.synthetic, second.synthetic)
        row["Synthetic Correlation"] = synthetic
        row["Score"] = 1.0 - abs(real - synthetic) / 2.0
        return row
    row["Metric"] = "ContingencySimilarity"
    (a_real, a_synth, a_size), (b_real, b_synth, b_size) = (
        c.bins() if c.continuous else c.codes() for c in (first, second))
    counts_real = np.bincount(a_real * b_size + b_real, minlength=a_size * b_size)
    counts_synth = np.bincount(a_synth * b_size + b_synth, minlength=a_size * b_size)
    association = _cramers_v(counts_real.reshape(a_size, b_size).astype(np.float64))
    row["Real Association"] = association
    row["Meets Threshold?"] = bool(not np.isnan(association)
                                   and association > ASSOCIATION_THRESHOLD)
    if thresholds and not row["Meets Threshold?"]:
        return row
    gap = np.abs(counts_real / real_rows - counts_synth / synthetic_rows).sum()
    row["Score"] = float(1.0 - gap / 2.0)
    return row


def _mean(values) -> float:
    values = [v for v in values if v is not None and not np.isnan(v)]
    return float(np.mean(values)) if values else float("nan")


def quality_report(real: pd.DataFrame, synthetic: pd.DataFrame, metadata: Mapping,
                   *, thresholds: bool = True, ks: Mapping[str, float] | None = None
                   ) -> ScoreReport:
    """SDMetrics' Quality Report (see the module docstring); ``thresholds=False`` scores
    every pair and averages them all. ``ks``: numeric columns' KS distances where already
    computed (:mod:`dpgm.evaluation.numeric`; the same statistic, without SDMetrics'
    rounding to 14 decimals, which can only merge values closer than that)."""
    columns = _columns(real, synthetic, metadata)
    shapes = []
    for name, column in columns.items():
        if column.continuous:
            score = (float("nan") if column.error else 1.0 - ks[name] if ks and name in ks
                     else ks_complement(column.real, column.synthetic))
            shapes.append({"Column": name, "Metric": "KSComplement", "Score": score})
        else:
            shapes.append({"Column": name, "Metric": "TVComplement",
                           "Score": tv_complement(column.real, column.synthetic)})
    pairs = []
    for a, b in combinations(columns, 2):
        trend = _pair_trend(columns[a], columns[b], len(real), len(synthetic), thresholds)
        pairs.append({"Column 1": a, "Column 2": b, **trend})
    shape_score = _mean(r["Score"] for r in shapes)
    counted = [r["Score"] for r in pairs if not thresholds or r["Meets Threshold?"]]
    trend_score = _mean(counted)
    properties = {"Column Shapes": shape_score, "Column Pair Trends": trend_score}
    return ScoreReport("Quality", _mean(properties.values()), properties,
                       {"Column Shapes": shapes, "Column Pair Trends": pairs})


# -- Diagnostic Report ---------------------------------------------------------------------------
def boundary_adherence(real: np.ndarray, synthetic: np.ndarray) -> float:
    """The share of synthetic values within the real column's [min, max]; missing values
    are dropped where the real column has some, else they count as outside."""
    present = real[~np.isnan(real)]
    if np.isnan(real).any():
        synthetic = synthetic[~np.isnan(synthetic)]
    if not synthetic.size or not present.size:
        return float("nan")
    return float(np.mean((synthetic >= present.min()) & (synthetic <= present.max())))


def category_adherence(real: ArrayLike, synthetic: ArrayLike) -> float:
    """The share of synthetic values that are categories of the real column; a missing
    value counts as one where the real column has missing values."""
    import pandas as pd

    real, synthetic = pd.Series(real), pd.Series(synthetic)
    if not len(synthetic):
        return float("nan")
    r, s, k = _codes(real, synthetic)
    seen = np.zeros(k, dtype=bool)
    seen[r] = True
    valid = seen[s]
    missing = np.asarray(synthetic.isna())
    valid = np.where(missing, bool(real.isna().any()), valid)
    return float(np.mean(valid))


def datetime_format_adherence(synthetic: ArrayLike, form: str) -> float:
    """The share of synthetic values that are missing or read by ``form`` (NaN where the
    values are already dates, as SDMetrics gives)."""
    import pandas as pd

    synthetic = pd.Series(synthetic)
    if pd.api.types.is_datetime64_any_dtype(synthetic) or not len(synthetic):
        return float("nan")
    parsed = pd.to_datetime(synthetic, errors="coerce", format=form.replace("%-", "%"),
                            utc="%z" in form.lower())
    return float(np.mean(np.asarray(synthetic.isna() | parsed.notna())))


def table_structure(real: pd.DataFrame, synthetic: pd.DataFrame, metadata: Mapping) -> float:
    """The overlap |A ∩ B| / |A ∪ B| of the two tables' (column, dtype) pairs, datetime
    columns counted as dates on both sides."""
    def pairs(frame: pd.DataFrame) -> set[tuple[str, str]]:
        kinds = {n: s.get("sdtype") for n, s in metadata["columns"].items()}
        return {(name, "datetime" if kinds.get(name) == "datetime" else str(dtype))
                for name, dtype in frame.dtypes.items()}

    a, b = pairs(real), pairs(synthetic)
    return len(a & b) / len(a | b) if a | b else float("nan")


def diagnostic_report(real: pd.DataFrame, synthetic: pd.DataFrame, metadata: Mapping
                      ) -> ScoreReport:
    """SDMetrics' Diagnostic Report (see the module docstring)."""
    columns = _columns(real, synthetic, metadata)
    validity = []
    for name, column in columns.items():
        if column.continuous:
            score = (float("nan") if column.error else
                     boundary_adherence(column.real, column.synthetic))
            validity.append({"Column": name, "Metric": "BoundaryAdherence", "Score": score})
            form = metadata["columns"][name].get("datetime_format")
            if column.sdtype == "datetime" and form:
                validity.append({"Column": name, "Metric": "DatetimeFormatAdherence",
                                 "Score": datetime_format_adherence(column.synthetic_text,
                                                                    form)})
        else:
            validity.append({"Column": name, "Metric": "CategoryAdherence",
                             "Score": category_adherence(column.real, column.synthetic)})
    structure = table_structure(real, synthetic, metadata)
    properties = {"Data Validity": _mean(r["Score"] for r in validity),
                  "Data Structure": structure}
    return ScoreReport("Diagnostic", _mean(properties.values()), properties, {
        "Data Validity": validity,
        "Data Structure": [{"Metric": "TableStructure", "Score": structure}]})


# -- SDNist ------------------------------------------------------------------------------------
def k_marginal(real: pd.DataFrame, synthetic: pd.DataFrame) -> float:
    """SDNist's k-marginal score of two discrete tables: every pair of the columns (sorted
    by name; PUMA and INDP left out), ``(2 − mean Σ|p_real − p_synthetic|) × 500``, where
    a row missing either value of a pair is not counted (the denominator keeps it)."""
    names = sorted(set(real.columns) - {"PUMA", "INDP"})
    pairs = list(combinations(names, 2)) or [(names[0], names[0])]
    coded = {}
    for name in names:
        r, s, k = _codes(real[name], synthetic[name])
        missing_r, missing_s = np.asarray(real[name].isna()), np.asarray(synthetic[name].isna())
        coded[name] = (r, s, k, missing_r, missing_s)
    total = 0.0
    for a, b in pairs:
        ar, as_, ak, amr, ams = coded[a]
        br, bs, bk, bmr, bms = coded[b]
        cells_r, cells_s = ar * bk + br, as_ * bk + bs
        if amr.any() or bmr.any():  # rows missing either value are not counted
            cells_r = cells_r[~(amr | bmr)]
        if ams.any() or bms.any():
            cells_s = cells_s[~(ams | bms)]
        counts_r = np.bincount(cells_r, minlength=ak * bk)
        counts_s = np.bincount(cells_s, minlength=ak * bk)
        total += float(np.abs(counts_r / len(real) - counts_s / len(synthetic)).sum())
    return (2.0 - total / len(pairs)) * 500.0


def sdnist_bins(real: np.ndarray, synthetic: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """SDNist's percentile bins of a numeric column (its ``percentile_rank_target`` and
    ``percentile_rank_synthetic``): values truncated to integers; a real value's bin is
    ⌊20 × its percentile rank⌋ (19 at the top); a synthetic value goes to the first bin
    whose largest real value it does not exceed (the last bin above them all); missing
    values are −1. As in SDNist, where no real value falls in bin 0, synthetic values at
    or below 0 keep their own value."""
    real = np.asarray(real, dtype=np.float64)
    synthetic = np.asarray(synthetic, dtype=np.float64)
    out_real = np.full(real.shape, -1, dtype=np.int64)
    out_synth = np.full(synthetic.shape, -1, dtype=np.int64)
    present_r, present_s = ~np.isnan(real), ~np.isnan(synthetic)
    values_r = np.trunc(real[present_r]).astype(np.int64)
    values_s = np.trunc(synthetic[present_s]).astype(np.int64)
    if not values_r.size:
        return out_real, out_synth
    # each distinct value's average rank (pandas' rank(pct=True)): ties share the mean
    distinct, inverse, counts = np.unique(values_r, return_inverse=True, return_counts=True)
    rank = (np.cumsum(counts) - (counts - 1) / 2.0) / values_r.size
    bins = np.where(rank < 1, np.floor(20 * rank), 19).astype(np.int64)
    bins_r = bins[inverse]
    bins_s = values_s.copy()  # a value no rule below takes keeps itself, as in SDNist
    found, last = np.unique(bins[::-1], return_index=True)  # bins rise with the values:
    tops = distinct[len(distinct) - 1 - last]  # each bin's largest value
    below = 0
    for b, top in zip(found, tops):
        if b == 0:
            below = top
            bins_s[values_s <= below] = 0
        elif b != found[-1]:
            bins_s[(values_s > below) & (values_s <= top)] = b
            below = top
        else:
            bins_s[values_s > below] = b
    out_real[present_r] = bins_r
    out_synth[present_s] = bins_s
    return out_real, out_synth


def tables_for_scores(real: Dataset, synthetic: Dataset, schema: Schema | None = None,
                      frames: tuple[pd.DataFrame, pd.DataFrame] | None = None,
                      values: tuple[pd.DataFrame, pd.DataFrame] | None = None
                      ) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """Two encoded data sets as the tables the scores read, and their metadata: each
    categorical attribute by its labels (a pandas categorical of the public labels, so
    both tables have one dtype), each numeric or datetime column of ``schema`` in its
    original units where the raw tables ``frames`` are given (numbers as floats, dates
    as datetime64; ``values``: their :func:`~dpgm.evaluation.numeric.numeric_values`
    where already read), else by its bins (categorical)."""
    import pandas as pd

    from dpgm.evaluation.numeric import numeric_values

    domain = real.domain
    numbers = values
    if numbers is None and schema is not None and frames is not None:
        numbers = [numeric_values(frame, schema) for frame in frames]
    tables: list[dict[str, Any]] = [{}, {}]
    columns = {}
    for attr in domain.attrs:
        kind = None if schema is None else schema.columns[attr].kind
        if numbers is not None and kind in ("numeric", "datetime"):
            for table, values in zip(tables, numbers):
                column = values[attr].to_numpy()
                table[attr] = (column if kind == "numeric" else  # days since 1970: dates
                               pd.to_datetime(column, unit="D").astype("datetime64[ns]"))
            columns[attr] = {"sdtype": "numerical" if kind == "numeric" else "datetime"}
            continue
        labels = domain.labels.get(attr) or tuple(range(domain[attr]))
        present = [k for k, label in enumerate(labels) if label is not None]
        categories = [labels[k] if domain.labels.get(attr) else k for k in present]
        recode = np.full(domain[attr], -1, dtype=np.int64)  # the missing label: no category
        recode[present] = np.arange(len(present))
        dtype = pd.CategoricalDtype([str(c) for c in categories] if domain.labels.get(attr)
                                    else categories)
        for table, data in zip(tables, (real, synthetic)):
            codes = recode[np.asarray(data.records)[:, domain.attrs.index(attr)]]
            table[attr] = pd.Categorical.from_codes(codes, dtype=dtype)
        columns[attr] = {"sdtype": "categorical"}
    real_table, synthetic_table = (pd.DataFrame(t) for t in tables)
    return real_table, synthetic_table, {"columns": columns}


def sdnist_tables(real: pd.DataFrame, synthetic: pd.DataFrame, metadata: Mapping
                  ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """SDNist's preparation of two tables for :func:`k_marginal`: numbers and dates (in
    days) in percentile bins of the real column (:func:`sdnist_bins`), categories as
    codes, −1 where missing."""
    import pandas as pd

    out: list[dict[str, np.ndarray]] = [{}, {}]
    for name, spec in metadata["columns"].items():
        sdtype = spec.get("sdtype")
        if sdtype in CONTINUOUS:
            values = [np.asarray(v, dtype=np.float64) if sdtype == "numerical"
                      else _nanoseconds(v, spec.get("datetime_format")) / 86_400e9
                      for v in (real[name], synthetic[name])]
            out[0][name], out[1][name] = sdnist_bins(*values)
        elif sdtype in DISCRETE:
            r, s, k = _codes(real[name], synthetic[name])
            missing = [np.asarray(pd.Series(v).isna()) for v in (real[name], synthetic[name])]
            out[0][name] = np.where(missing[0], -1, r)
            out[1][name] = np.where(missing[1], -1, s)
    return pd.DataFrame(out[0]), pd.DataFrame(out[1])


def scores_from_counts(real: CountingSource, synthetic: CountingSource
                       ) -> tuple[ScoreReport, ScoreReport, float]:
    """The Quality and Diagnostic reports and the k-marginal score of two coded data sets
    from their counts alone (any counting source: records in memory or on an engine),
    every attribute a categorical column of its labels, the missing label (None) a
    missing value. Equal to :func:`quality_report`, :func:`diagnostic_report` and
    :func:`k_marginal` on the tables :func:`tables_for_scores` builds without raw
    tables (tested)."""
    domain = real.domain
    attrs = list(domain.attrs)
    pairs = list(combinations(attrs, 2))
    real_counts = real.marginals([(a,) for a in attrs] + pairs)
    synthetic_counts = synthetic.marginals([(a,) for a in attrs] + pairs)
    ones = {a: (r.astype(np.float64), s.astype(np.float64))
            for a, r, s in zip(attrs, real_counts, synthetic_counts)}
    twos = {p: (r.astype(np.float64), s.astype(np.float64))
            for p, r, s in zip(pairs, real_counts[len(attrs):], synthetic_counts[len(attrs):])}
    rows_real, rows_synth = (float(ones[attrs[0]][k].sum()) for k in (0, 1))
    missing = {a: np.array([label is None for label in domain.labels.get(a, ())] or
                           [False] * domain[a]) for a in attrs}
    shapes, validity = [], []
    for a in attrs:
        r, s = (c[~missing[a]] for c in ones[a])
        if r.sum() == 0 or s.sum() == 0:
            shape = float("nan")
        else:
            r = r + _UNSEEN * ((r == 0) & (s > 0))
            shape = float(1.0 - 0.5 * np.abs(s / s.sum() - r / r.sum()).sum())
        shapes.append({"Column": a, "Metric": "TVComplement", "Score": shape})
        r_all, s_all = ones[a]
        valid = (r_all > 0) & ~missing[a]
        valid |= missing[a] & bool((r_all[missing[a]] > 0).any())
        validity.append({"Column": a, "Metric": "CategoryAdherence",
                         "Score": float(s_all[valid].sum() / rows_synth)})
    trends = []
    total = 0.0
    for (a, b), (r, s) in twos.items():
        association = _cramers_v(r)
        meets = bool(not np.isnan(association) and association > ASSOCIATION_THRESHOLD)
        gap = float(np.abs(r / rows_real - s / rows_synth).sum())
        total += gap
        trends.append({"Column 1": a, "Column 2": b, "Metric": "ContingencySimilarity",
                       "Score": 1.0 - gap / 2.0 if meets else float("nan"),
                       "Real Correlation": float("nan"), "Synthetic Correlation": float("nan"),
                       "Real Association": association, "Meets Threshold?": meets})
    shape_score = _mean(r["Score"] for r in shapes)
    trend_score = _mean(r["Score"] for r in trends if r["Meets Threshold?"])
    quality = ScoreReport("Quality", _mean([shape_score, trend_score]),
                          {"Column Shapes": shape_score, "Column Pair Trends": trend_score},
                          {"Column Shapes": shapes, "Column Pair Trends": trends})
    # the columns are one categorical type in both tables: their structures agree
    diagnostic = ScoreReport("Diagnostic", _mean([_mean(r["Score"] for r in validity), 1.0]),
                             {"Data Validity": _mean(r["Score"] for r in validity),
                              "Data Structure": 1.0},
                             {"Data Validity": validity,
                              "Data Structure": [{"Metric": "TableStructure", "Score": 1.0}]})
    if not pairs:  # SDNist's one marginal of a single column: the column with itself
        r, s = ones[attrs[0]]
        return quality, diagnostic, float((2.0 - np.abs(r / rows_real - s / rows_synth).sum())
                                          * 500.0)
    return quality, diagnostic, (2.0 - total / len(pairs)) * 500.0
