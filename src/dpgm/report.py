"""The evaluation of synthetic data against the real data, as one page and its JSON twin
(no privacy spent, not private: for the data steward's own checks).

:func:`evaluate` computes every number once (:class:`Evaluation`); the page
(:meth:`Evaluation.to_html`, one self-contained HTML file) shows, in order:

1. **scores**: SDMetrics' Quality and Diagnostic scores and SDNist's k-marginal score
   (:mod:`dpgm.evaluation.scores`), the mean TV error of the marginals compared, and
   the utility and privacy-sanity verdicts where they were run;
2. **columns**: real and synthetic histograms in original units (the schema's labels and
   bins), with the model's 95% intervals where a model with error bars is given, and
   per-column scores;
3. **pairs**: a heat map of the TV error of every pair of columns and the worst pairs;
4. numeric columns: KS, Wasserstein-1, quantiles, CDF overlays, correlation matrices;
5. **utility**: train on synthetic, test on real (:mod:`dpgm.evaluation.utility`);
6. **privacy sanity** against a holdout (:mod:`dpgm.evaluation.copies`);
7. the privacy **ledger** of the run, and the workload.

:meth:`Evaluation.to_json` holds every number of the page; a notebook shows the page
inline (``_repr_html_``). Plots need matplotlib (``pip install dpgm[report]``); without
it the page has the tables and says so. Like :mod:`dpgm.evaluation` it reads the real
data without noise: it is for the data steward's checks, not for release.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from os import PathLike
from typing import TYPE_CHECKING, Any

import numpy as np

from dpgm.dataset import CountingSource, Dataset
from dpgm.evaluation import marginal_errors
from dpgm.evaluation.copies import CopyChecks
from dpgm.evaluation.numeric import ColumnFidelity, NumericFidelity
from dpgm.evaluation.scores import ScoreReport
from dpgm.evaluation.utility import Utility
from dpgm.files import atomic_write
from dpgm.workload import Workload

if TYPE_CHECKING:
    import pandas as pd

    from dpgm.schema import Schema

MISSING_LABEL = "(missing)"
NOT_PRIVATE = (
    "This page reads the real data without noise: it is for the data steward's own "
    "checks, not for release."
)
#: the worst pairs listed on the page (every pair is in the JSON)
WORST_PAIRS = 20
STYLE = """
.dpgm-report { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 72rem;
  color: #222; }
.dpgm-report h1 { font-size: 1.6rem; } .dpgm-report h2 { font-size: 1.2rem; margin-top: 2rem; }
.dpgm-report table { border-collapse: collapse; margin: 0.5rem 0; }
.dpgm-report td, .dpgm-report th { border: 1px solid #ccc; padding: 0.25rem 0.6rem;
  text-align: right; }
.dpgm-report th { background: #f3f3f3; }
.dpgm-report td:first-child, .dpgm-report th:first-child { text-align: left; }
.dpgm-report .note { background: #fff7e0; border-left: 4px solid #e0a800; padding: 0.5rem 1rem; }
.dpgm-report .flag { background: #fde8e8; border-left: 4px solid #c62828; padding: 0.5rem 1rem; }
.dpgm-report .grid { display: flex; flex-wrap: wrap; gap: 0.5rem; }
.dpgm-report .grid img { width: 22rem; }
.dpgm-report .scores td:nth-child(2) { font-weight: bold; }
.dpgm-report .scores td:last-child { text-align: left; }
"""


@dataclass
class Evaluation:
    """Every number of the evaluation (see the module docstring)."""

    columns: list[str]
    real_rows: int
    synthetic_rows: int
    #: the standard scores (from counts where the records are counted outside memory)
    quality: ScoreReport
    diagnostic: ScoreReport
    k_marginal: float
    #: each column's label for each cell, and its share of records, real and synthetic
    labels: dict[str, list[str]]
    real_shares: dict[str, np.ndarray]
    synthetic_shares: dict[str, np.ndarray]
    column_errors: dict[str, float]
    pair_errors: dict[tuple[str, str], float]
    mean_errors: dict[int, float]  # ways -> mean TV over all marginals of that size
    workload_error: float | None = None
    workload_errors: dict[tuple[str, ...], float] = field(default_factory=dict)
    numeric: NumericFidelity | None = None
    utility: Utility | None = None
    copies: CopyChecks | None = None
    ledger: Mapping[str, Any] | None = None
    #: the model's standard error of each column's share of records (None: no model; a
    #: column's None: the model did not measure it directly)
    share_errors: Mapping[str, np.ndarray | None] | None = None
    title: str = "dpgm: synthetic data report"

    # -- words -------------------------------------------------------------------------
    def summary(self) -> list[str]:
        """The headline figures in words, as ``dpgm evaluate`` prints them."""
        q, d = self.quality, self.diagnostic
        lines = [
            f"SDMetrics quality score: {_pct(q.overall)} (Column Shapes "
            f"{_pct(q.properties['Column Shapes'])}, Column Pair Trends "
            f"{_pct(q.properties['Column Pair Trends'])})",
            f"SDMetrics diagnostic score: {_pct(d.overall)} (Data Validity "
            f"{_pct(d.properties['Data Validity'])}, Data Structure "
            f"{_pct(d.properties['Data Structure'])})",
            f"SDNist k-marginal score: {self.k_marginal:.4g} of 1000",
        ]
        return lines

    # -- numbers -----------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """Every number of the page (NaN as null)."""
        out: dict[str, Any] = {
            "rows": {"real": self.real_rows, "synthetic": self.synthetic_rows},
            "scores": {"sdmetrics_quality": self.quality.to_json(),
                       "sdmetrics_diagnostic": self.diagnostic.to_json(),
                       "sdnist_k_marginal": self.k_marginal},
            "mean_tv_error": {str(k): v for k, v in self.mean_errors.items()},
            "columns": {
                name: {"tv_error": self.column_errors[name],
                       "labels": self.labels[name],
                       "real_share": self.real_shares[name].tolist(),
                       "synthetic_share": self.synthetic_shares[name].tolist(),
                       "model_standard_error": None if self.share_errors is None
                       or self.share_errors.get(name) is None
                       else self.share_errors[name].tolist()}
                for name in self.columns},
            "pairs": [{"columns": list(pair), "tv_error": e}
                      for pair, e in self.worst_pairs(None)],
        }
        if self.workload_error is not None:
            out["workload"] = {"error": self.workload_error,
                               "marginals": [{"columns": list(c), "tv_error": e}
                                             for c, e in self.workload_errors.items()]}
        if self.numeric is not None and self.numeric.columns:
            n = self.numeric
            out["numeric"] = {
                "quantiles": list(n.quantiles),
                "columns": {name: {"ks": c.ks, "wasserstein_over_range": c.wasserstein,
                                   "real_quantiles": c.real_quantiles.tolist(),
                                   "synthetic_quantiles": c.synthetic_quantiles.tolist()}
                            for name, c in n.columns.items()},
                "largest_correlation_difference": {
                    "pearson": n.correlation_difference("pearson"),
                    "spearman": n.correlation_difference("spearman")}}
        if self.utility is not None:
            out["utility"] = {"target": self.utility.target, "task": self.utility.task,
                              "scores": [{"model": s.model, "metric": s.metric,
                                          "trained_on_real": s.real,
                                          "trained_on_synthetic": s.synthetic}
                                         for s in self.utility.scores]}
        if self.copies is not None:
            c = self.copies
            out["privacy_sanity"] = {
                "compared": c.compared, "exact_match_train": c.exact_train,
                "exact_match_holdout": c.exact_holdout,
                "median_distance_train": float(np.median(c.distance_train)),
                "median_distance_holdout": float(np.median(c.distance_holdout)),
                "closer_to_train": c.closer_to_train,
                "copies_flagged": c.copies_flagged, "distances_flagged": c.distances_flagged}
        if self.ledger:
            out["ledger"] = dict(self.ledger)
        return _plain(out)

    def worst_pairs(self, count: int | None = WORST_PAIRS) -> list[tuple[tuple[str, str], float]]:
        ordered = sorted(self.pair_errors.items(), key=lambda kv: -kv[1])
        return ordered if count is None else ordered[:count]

    # -- the page ----------------------------------------------------------------------
    def to_html(self, fragment: bool = False) -> str:
        """The page: a whole HTML document, or (``fragment``) its body for a notebook."""
        body = "\n".join(_sections(self, _plots()))
        content = f"<style>{STYLE}</style><div class='dpgm-report'>{body}</div>"
        if fragment:
            return content
        return ("<!doctype html><html><head><meta charset='utf-8'>"
                f"<title>{html.escape(self.title)}</title></head><body>{content}</body></html>")

    def _repr_html_(self) -> str:
        return self.to_html(fragment=True)

    def write(self, path: str | PathLike[str], format: str = "html") -> None:
        """Write the page (``format="html"``) or its numbers (``"json"``), whole or not at
        all."""
        import json

        text = (self.to_html() if format == "html"
                else json.dumps(self.to_json(), indent=2, allow_nan=False))
        with atomic_write(path) as handle:
            handle.write(text)


def _plain(value: Any) -> Any:
    """JSON-ready: NaN and infinities as null, NumPy numbers as Python's."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (np.floating, float)):
        return float(value) if np.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def _pct(value: float) -> str:
    return "n/a" if value is None or np.isnan(value) else f"{100 * value:.1f}%"


# -- computing ---------------------------------------------------------------------------------
def evaluate(
    real: CountingSource | pd.DataFrame,
    synthetic: CountingSource | pd.DataFrame,
    *,
    schema: Schema | None = None,
    frames: tuple[pd.DataFrame, pd.DataFrame] | None = None,
    ways: Sequence[int] = (1, 2),
    workload: Workload | None = None,
    ledger: Mapping[str, Any] | None = None,
    numeric: NumericFidelity | None = None,
    copies: CopyChecks | None = None,
    utility: Utility | None = None,
    model: Any = None,
    share_errors: Mapping[str, np.ndarray | None] | None = None,
    title: str = "dpgm: synthetic data report",
) -> Evaluation:
    """Evaluate ``synthetic`` against ``real``: encoded data sets, or raw DataFrames with
    their public ``schema`` (read by its rules, numbers compared in original units).

    ``frames`` are the raw tables of two encoded data sets (numbers in original units for
    the scores); ``numeric``, ``copies`` and ``utility`` are checks already run
    (:mod:`dpgm.evaluation`); ``model``, the model the synthetic records came from, adds
    its error bars to the histograms where it keeps its measurements (post-processing:
    free: the analytic standard errors of the columns it measured directly), or
    ``share_errors`` gives them ({column: each share's standard error, or None}).
    ``ways`` are the sizes of the marginals whose mean TV error is given.
    """
    from dpgm.evaluation import mean_tv
    from dpgm.evaluation.scores import (
        diagnostic_report,
        k_marginal,
        quality_report,
        scores_from_counts,
        sdnist_tables,
        tables_for_scores,
    )
    from dpgm.privacy.quiet import on_records

    with on_records():  # warnings raised on records say something about them
        if not isinstance(real, CountingSource):  # raw DataFrames
            if schema is None:
                raise TypeError("raw tables need their schema: evaluate(real, synthetic, "
                                "schema=...)")
            frames = (real, synthetic)
            real, synthetic = schema.encode(real), schema.encode(synthetic)
        values = None
        if frames is not None and schema is not None:  # each table's numbers, read once
            from dpgm.evaluation.numeric import numeric_fidelity, numeric_values

            values = tuple(numeric_values(frame, schema) for frame in frames)
            if numeric is None:
                numeric = numeric_fidelity(*frames, schema, values=values)
        attrs = list(real.domain.attrs)
        column_errors = marginal_errors(real, synthetic, [(a,) for a in attrs])
        pair_errors = marginal_errors(real, synthetic, list(combinations(attrs, 2)))
        means = {w: mean_tv(real, synthetic, w) for w in ways if 1 <= w <= len(attrs)}
        if frames is not None and schema is not None:  # numbers in their own units
            scored = tables_for_scores(real, synthetic, schema, frames, values)
            quality = quality_report(*scored, ks=None if numeric is None else {
                name: column.ks for name, column in numeric.columns.items()})
            diagnostic = diagnostic_report(*scored)
            k_score = k_marginal(*sdnist_tables(*scored))
        else:  # every column by its labels or bins: from counts, on any engine
            quality, diagnostic, k_score = scores_from_counts(real, synthetic)
        labels = {a: _labels(real, a) for a in attrs}
        real_shares = {a: _shares(real.marginal([a])) for a in attrs}
        synthetic_shares = {a: _shares(synthetic.marginal([a])) for a in attrs}
        workload_error = workload_errors = None
        if workload is not None:
            workload_error = workload.error(real, synthetic)
            workload_errors = marginal_errors(real, synthetic, workload.cliques)
    if share_errors is None and model is not None:  # the model's own error: no records
        from dpgm.models.uncertainty import analytic_errors, has_error_bars

        if has_error_bars(model):
            found = analytic_errors(model, [[a] for a in attrs])
            share_errors = {a: None if e is None else e / model.total
                            for a, e in zip(attrs, found)}
    return Evaluation(
        columns=attrs, real_rows=len(real), synthetic_rows=len(synthetic), quality=quality,
        diagnostic=diagnostic, k_marginal=k_score, labels=labels, real_shares=real_shares,
        synthetic_shares=synthetic_shares,
        column_errors={a: column_errors[(a,)] for a in attrs},
        pair_errors={(a, b): e for (a, b), e in pair_errors.items()}, mean_errors=means,
        workload_error=workload_error, workload_errors=workload_errors or {},
        numeric=numeric, utility=utility, copies=copies, ledger=ledger,
        share_errors=share_errors, title=title)


def _shares(counts: np.ndarray) -> np.ndarray:
    counts = np.asarray(counts, dtype=np.float64)
    return counts / max(counts.sum(), 1e-300)


def _labels(data: Dataset, attr: str) -> list[str]:
    domain = data.domain
    if attr not in domain.labels:
        return [str(code) for code in range(domain[attr])]
    return [MISSING_LABEL if v is None else str(v) for v in domain.labels[attr]]


# -- drawing -----------------------------------------------------------------------------------
def _plots() -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
    except ImportError:
        return False
    return True


def _png(figure) -> str:
    buffer = io.BytesIO()
    # constrained layout keeps every label in the figure: one draw (a tight bounding box
    # would draw it twice)
    figure.savefig(buffer, format="png", dpi=90)
    import matplotlib.pyplot as plt

    plt.close(figure)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _img(png: str, alt: str) -> str:
    return f'<img src="data:image/png;base64,{png}" alt="{html.escape(alt)}">'


def _histogram(report: Evaluation, attr: str) -> str:
    import matplotlib.pyplot as plt

    labels = report.labels[attr]
    p, q = report.real_shares[attr], report.synthetic_shares[attr]
    figure, axes = plt.subplots(figsize=(4.6, 2.8), layout="constrained")
    x = np.arange(len(labels))
    axes.bar(x - 0.2, p, 0.4, label="real", color="#4c72b0")
    error = None if report.share_errors is None or report.share_errors.get(attr) is None \
        else 1.96 * report.share_errors[attr]
    axes.bar(x + 0.2, q, 0.4, label="synthetic" if error is None else
             "synthetic (model's 95% interval)", color="#dd8452", yerr=error,
             error_kw={"elinewidth": 0.8, "capsize": 1.5, "ecolor": "#333"})
    axes.set_title(attr)
    axes.set_ylabel("share of records")
    step = max(1, len(labels) // 12)
    axes.set_xticks(x[::step], labels[::step], rotation=45, ha="right", fontsize=7)
    axes.legend(fontsize=7, loc="upper right")  # "best" searches every bar: slow
    return _img(_png(figure), f"histogram of {attr}")


def _heat_map(attrs: Sequence[str], pair_errors: Mapping[tuple[str, str], float]) -> str:
    import matplotlib.pyplot as plt

    n = len(attrs)
    matrix = np.full((n, n), np.nan)
    for (a, b), error in pair_errors.items():
        i, j = attrs.index(a), attrs.index(b)
        matrix[i, j] = matrix[j, i] = error
    # constrained layout and a figure title: an axes title ran under the colour bar
    figure, axes = plt.subplots(figsize=(2.2 + 0.45 * n, 1.3 + 0.45 * n), layout="constrained")
    image = axes.imshow(matrix, cmap="viridis", vmin=0)
    axes.set_xticks(range(n), attrs, rotation=60, ha="right", fontsize=7)
    axes.set_yticks(range(n), attrs, fontsize=7)
    figure.colorbar(image, ax=axes, label="TV error")
    figure.suptitle("TV error of each pair of columns", fontsize=9)
    return _img(_png(figure), "heat map of per-pair TV errors")


def _cdf_overlay(name: str, column: ColumnFidelity) -> str:
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(4.6, 2.8), layout="constrained")
    axes.step(column.grid, column.real_cdf, where="post", label="real", color="#4c72b0")
    axes.step(column.grid, column.synthetic_cdf, where="post", label="synthetic",
              color="#dd8452")
    axes.set_title(f"{name}: KS {column.ks:.3g}, W1/range {column.wasserstein:.3g}",
                   fontsize=8)
    axes.set_ylabel("share of records at most x")
    axes.legend(fontsize=7, loc="lower right")  # "best" searches every bar: slow
    return _img(_png(figure), f"CDFs of {name}, real and synthetic")


def _correlations(method: str, pair: tuple[Any, Any]) -> str:
    import matplotlib.pyplot as plt

    real, synthetic = pair
    names = list(real.columns)
    n = len(names)
    figure, panels = plt.subplots(1, 3, figsize=(3.4 * 3 + 0.3 * n, 1.6 + 0.3 * n),
                                  layout="constrained")
    for k, (axes, matrix, title, cmap, low) in enumerate((
            (panels[0], real.to_numpy(), "real", "coolwarm", -1),
            (panels[1], synthetic.to_numpy(), "synthetic", "coolwarm", -1),
            (panels[2], np.abs(real.to_numpy() - synthetic.to_numpy()), "|difference|",
             "viridis", 0))):
        image = axes.imshow(matrix, cmap=cmap, vmin=low, vmax=1)
        axes.set_xticks(range(n), names, rotation=60, ha="right", fontsize=6)
        axes.set_yticks(range(n), names if k == 0 else [], fontsize=6)
        axes.set_title(f"{method}: {title}", fontsize=8)
        figure.colorbar(image, ax=axes, fraction=0.046)
    return _img(_png(figure), f"{method} correlations, real, synthetic and difference")


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]], css: str = "") -> str:
    def cell(value: Any) -> str:
        if isinstance(value, (float, np.floating)):
            return "n/a" if np.isnan(value) else f"{value:.4g}"
        return html.escape(str(value))

    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{cell(v)}</td>" for v in row) + "</tr>" for row in rows)
    klass = f" class='{css}'" if css else ""
    return f"<table{klass}><tr>{head}</tr>{body}</table>"


# -- the sections ------------------------------------------------------------------------------
def _sections(report: Evaluation, plots: bool) -> list[str]:
    parts = [f"<h1>{html.escape(report.title)}</h1>", f"<p class='note'>{NOT_PRIVATE}</p>"]
    parts += _scores_section(report)
    parts += _columns_section(report, plots)
    parts += _pairs_section(report, plots)
    if report.numeric is not None and report.numeric.columns:
        parts += _numeric_section(report.numeric, plots)
    if report.utility is not None:
        parts += _utility_section(report.utility)
    if report.copies is not None:
        parts.append("<h2>Privacy sanity (a check, not a guarantee)</h2>")
        parts.append("<p>Synthetic records compared with the training records and with a "
                     "holdout the mechanism never saw, at equal size; distance: the number "
                     "of columns in which two records differ, on the schema's bins.</p>")
        for line in report.copies.summary():
            css = " class='flag'" if line.startswith("FLAG") else ""
            parts.append(f"<p{css}>{html.escape(line)}</p>")
    parts += _ledger_section(report.ledger)
    if report.workload_error is not None:
        parts.append("<h2>Workload</h2>")
        parts.append(f"<p>Workload error (Private-PGM Sec. 5.1): "
                     f"{report.workload_error:.4g}.</p>")
        parts.append(_table(["marginal", "TV error"],
                            [[" × ".join(c), e] for c, e in report.workload_errors.items()]))
    return parts


def _scores_section(report: Evaluation) -> list[str]:
    q, d = report.quality, report.diagnostic
    rows = [
        ["SDMetrics Quality", _pct(q.overall), "mean of Column Shapes and Column Pair Trends"],
        ["— Column Shapes", _pct(q.properties["Column Shapes"]),
         "1 − KS (numbers, dates) or 1 − TV (categories) of each column"],
        ["— Column Pair Trends", _pct(q.properties["Column Pair Trends"]),
         "1 − |Δ Pearson|/2 or 1 − TV of each pair the real data relate (|r| > 0.5, "
         "Cramér's V > 0.3)"],
        ["SDMetrics Diagnostic", _pct(d.overall), "mean of Data Validity and Data Structure"],
        ["— Data Validity", _pct(d.properties["Data Validity"]),
         "synthetic values within the real range and categories"],
        ["— Data Structure", _pct(d.properties["Data Structure"]),
         "the same columns with the same types"],
        ["SDNist k-marginal", f"{report.k_marginal:.4g} / 1000",
         "1000 × (1 − mean TV) over every pair, numbers in percentile bins"],
    ]
    rows += [[f"mean TV error, {w}-way", f"{e:.4g}",
              f"the share of records in any set of cells of {w} column(s) differs by at most "
              "this, on average"] for w, e in report.mean_errors.items()]
    if report.utility is not None:
        best = report.utility.scores[-1]  # gradient boosting's AUC, or its R²
        rows.append([f"utility ({best.model}, {best.metric})",
                     f"{best.synthetic:.4g} vs {best.real:.4g}",
                     f"predicting {report.utility.target} on the holdout, trained on "
                     "synthetic vs on real"])
    if report.copies is not None:
        rows.append(["privacy sanity", "FLAGGED" if report.copies.flagged else "no gap found",
                     "synthetic records against training and holdout records"])
    return ["<h2>Scores</h2>",
            f"<p>{report.real_rows:,} real and {report.synthetic_rows:,} synthetic records, "
            f"{len(report.columns)} columns. Scores as SDMetrics 0.32 and SDNist 2.4 compute "
            "them (dpgm's implementation, tested against theirs).</p>",
            _table(["score", "value", "what it measures"], rows, "scores")]


def _columns_section(report: Evaluation, plots: bool) -> list[str]:
    parts = ["<h2>Columns: real and synthetic</h2>"]
    if report.share_errors is not None:
        parts.append("<p>Error bars: the model's 95% interval of each share (±1.96 standard "
                     "errors, from the noise of its measurements), on the columns it "
                     "measured directly.</p>")
    if plots:
        parts.append("<div class='grid'>")
        parts += [_histogram(report, a) for a in report.columns]
        parts.append("</div>")
    else:
        parts.append("<p class='note'>Plots need matplotlib: <code>pip install "
                     "dpgm[report]</code>.</p>")
    shapes = {r["Column"]: r for r in report.quality.details["Column Shapes"]}
    validity: dict[str, float] = {}
    for r in report.diagnostic.details["Data Validity"]:
        validity.setdefault(r["Column"], r["Score"])
    rows = [[a, report.column_errors[a], shapes[a]["Metric"], shapes[a]["Score"],
             validity.get(a, float("nan"))] for a in report.columns]
    parts.append(_table(["column", "TV error", "shape metric", "shape score", "validity"],
                        rows))
    return parts


def _pairs_section(report: Evaluation, plots: bool) -> list[str]:
    if len(report.columns) < 2:
        return []
    parts = ["<h2>Pairs: which relationships were lost</h2>"]
    if plots:
        parts.append(_heat_map(report.columns, report.pair_errors))
    trends = {(r["Column 1"], r["Column 2"]): r
              for r in report.quality.details["Column Pair Trends"]}
    rows = []
    for (a, b), error in report.worst_pairs():
        trend = trends.get((a, b)) or trends.get((b, a)) or {}
        rows.append([a, b, error, trend.get("Metric", ""),
                     trend.get("Score", float("nan")) if trend.get("Score") is not None
                     else float("nan")])
    parts.append(f"<p>The {len(rows)} worst of {len(report.pair_errors)} pairs (all in the "
                 "JSON). A pair trend is n/a where the real columns hardly relate (the "
                 "Quality Report leaves it out).</p>")
    parts.append(_table(["column", "column", "TV error", "trend metric", "trend score"], rows))
    return parts


def _numeric_section(numeric: NumericFidelity, plots: bool) -> list[str]:
    """KS, W1 and quantiles per numeric column, CDF overlays and correlation matrices."""
    shown = [i for i, q in enumerate(numeric.quantiles) if q in (0.05, 0.5, 0.95)]
    header = ["column", "KS distance", "W1 / range"] + [
        f"{who} q{round(100 * numeric.quantiles[i])}" for i in shown
        for who in ("real", "synthetic")]
    rows = [[name, column.ks, column.wasserstein] + [
        float(q[i]) for i in shown for q in (column.real_quantiles, column.synthetic_quantiles)]
        for name, column in numeric.columns.items()]
    parts = ["<h2>Numeric columns</h2>",
             f"<p>Mean KS distance {numeric.mean_ks:.4g}; mean Wasserstein-1 over the public "
             f"range {numeric.mean_wasserstein:.4g}. Dates in days.</p>",
             _table(header, rows)]
    if numeric.pearson is not None:
        parts.append(f"<p>Largest correlation difference over numeric pairs: Pearson "
                     f"{numeric.correlation_difference('pearson'):.4g}, Spearman "
                     f"{numeric.correlation_difference('spearman'):.4g}.</p>")
    if plots:
        parts.append("<div class='grid'>")
        parts += [_cdf_overlay(name, column) for name, column in numeric.columns.items()]
        parts.append("</div>")
        for method, pair in (("Pearson", numeric.pearson), ("Spearman", numeric.spearman)):
            if pair is not None:
                parts.append(_correlations(method, pair))
    return parts


def _utility_section(utility: Utility) -> list[str]:
    return ["<h2>Utility: train on synthetic, test on real</h2>",
            f"<p>Models predicting <b>{html.escape(utility.target)}</b> ({utility.task}), "
            "trained on the real training records or on the synthetic ones, scored on the "
            "holdout.</p>",
            _table(["model", "metric", "trained on real", "trained on synthetic"],
                   [[s.model, s.metric, s.real, s.synthetic] for s in utility.scores])]


def _ledger_section(ledger: Mapping[str, Any] | None) -> list[str]:
    parts = ["<h2>Privacy ledger</h2>"]
    if not ledger:
        parts.append("<p>No ledger given (write one with <code>dpgm synth --ledger</code>)."
                     "</p>")
        return parts
    spent = ledger.get("spent", {})
    parts.append("<p>" + ", ".join(f"{html.escape(k)} = {v:.6g}" for k, v in spent.items())
                 + "</p>")

    def number(value: Any) -> str:
        return "" if not value else f"{value:.3g}"

    rows = [[e.get("label", "")] + [number(e.get(k)) for k in ("epsilon", "rho", "delta")]
            for e in ledger.get("entries", [])]
    parts.append(_table(["spent on", "epsilon", "rho", "delta"], rows))
    return parts


# -- the earlier entry points ------------------------------------------------------------------
def build_report(real: Dataset, synthetic: Dataset, **options: Any) -> str:
    """The page as HTML text (:func:`evaluate`'s options)."""
    return evaluate(real, synthetic, **options).to_html()


def write_report(path: str | PathLike[str], page: str) -> None:
    """Write a page, whole or not at all."""
    with atomic_write(path) as handle:
        handle.write(page)
