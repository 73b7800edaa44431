"""An HTML page comparing synthetic data with the real data (no privacy spent, not private).

One self-contained file: per-column histograms real vs synthetic in original units (the
schema's labels and bins), for numeric columns KS, Wasserstein-1, quantiles, CDF overlays
and correlation matrices, a heat map of the TV error of every pair of columns, the
workload error, the privacy ledger of the run, and tables of per-column and per-pair
errors. Plots need matplotlib (``pip install dpgm[report]``); without it the page has the
tables and says so. Like :mod:`dpgm.evaluation` it reads the real data without noise: it
is for the data steward's checks, not for release.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Mapping, Sequence
from itertools import combinations
from os import PathLike
from typing import Any

import numpy as np

from dpgm.dataset import Dataset
from dpgm.evaluation import marginal_errors
from dpgm.evaluation.copies import CopyChecks
from dpgm.evaluation.numeric import ColumnFidelity, NumericFidelity
from dpgm.evaluation.utility import Utility
from dpgm.files import atomic_write
from dpgm.workload import Workload

MISSING_LABEL = "(missing)"
NOT_PRIVATE = (
    "This page reads the real data without noise: it is for the data steward's own "
    "checks, not for release."
)
STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 70rem; color: #222; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.2rem; margin-top: 2rem; }
table { border-collapse: collapse; margin: 0.5rem 0; }
td, th { border: 1px solid #ccc; padding: 0.25rem 0.6rem; text-align: right; }
th { background: #f3f3f3; } td:first-child, th:first-child { text-align: left; }
.note { background: #fff7e0; border-left: 4px solid #e0a800; padding: 0.5rem 1rem; }
.grid { display: flex; flex-wrap: wrap; gap: 0.5rem; }
.grid img { width: 22rem; }
"""


def _labels(data: Dataset, attr: str) -> list[str]:
    domain = data.domain
    if attr not in domain.labels:
        return [str(code) for code in range(domain[attr])]
    return [MISSING_LABEL if v is None else str(v) for v in domain.labels[attr]]


def _png(figure) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(figure)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _img(png: str, alt: str) -> str:
    return f'<img src="data:image/png;base64,{png}" alt="{html.escape(alt)}">'


def _histogram(real: Dataset, synthetic: Dataset, attr: str) -> str:
    import matplotlib.pyplot as plt

    labels = _labels(real, attr)
    p = real.marginal([attr])
    q = synthetic.marginal([attr])
    p, q = p / max(p.sum(), 1e-300), q / max(q.sum(), 1e-300)
    figure, axes = plt.subplots(figsize=(4.6, 2.8))
    x = np.arange(len(labels))
    axes.bar(x - 0.2, p, 0.4, label="real", color="#4c72b0")
    axes.bar(x + 0.2, q, 0.4, label="synthetic", color="#dd8452")
    axes.set_title(attr)
    axes.set_ylabel("share of records")
    step = max(1, len(labels) // 12)
    axes.set_xticks(x[::step], labels[::step], rotation=45, ha="right", fontsize=7)
    axes.legend(fontsize=7)
    return _img(_png(figure), f"histogram of {attr}")


def _heat_map(attrs: Sequence[str], pair_errors: Mapping[tuple[str, ...], float]) -> str:
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

    figure, axes = plt.subplots(figsize=(4.6, 2.8))
    axes.step(column.grid, column.real_cdf, where="post", label="real", color="#4c72b0")
    axes.step(column.grid, column.synthetic_cdf, where="post", label="synthetic",
              color="#dd8452")
    axes.set_title(f"{name}: KS {column.ks:.3g}, W1/range {column.wasserstein:.3g}",
                   fontsize=8)
    axes.set_ylabel("share of records at most x")
    axes.legend(fontsize=7)
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


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    def cell(value: Any) -> str:
        return f"{value:.4g}" if isinstance(value, float) else html.escape(str(value))

    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{cell(v)}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def build_report(
    real: Dataset,
    synthetic: Dataset,
    *,
    workload: Workload | None = None,
    ledger: Mapping[str, Any] | None = None,
    numeric: NumericFidelity | None = None,
    copies: CopyChecks | None = None,
    utility: Utility | None = None,
    title: str = "dpgm: synthetic data report",
) -> str:
    """The report page as HTML text (see the module docstring).

    ``ledger`` is what ``dpgm synth --ledger`` writes: ``{"spent": {...}, "entries": [...]}``;
    ``numeric`` (:func:`dpgm.evaluation.numeric.numeric_fidelity`) adds KS, Wasserstein-1,
    quantiles, CDF overlays and correlation matrices of the numeric columns; ``copies``
    (:func:`dpgm.evaluation.copies.copy_checks`) the privacy sanity checks against a
    holdout.
    """
    attrs = list(real.domain.attrs)
    column_errors = marginal_errors(real, synthetic, [(a,) for a in attrs])
    pair_errors = marginal_errors(real, synthetic, list(combinations(attrs, 2)))
    try:
        import matplotlib

        matplotlib.use("Agg")
        plots = True
    except ImportError:
        plots = False
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
        f"<style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>",
        f"<p class='note'>{NOT_PRIVATE}</p>",
        "<h2>Summary</h2>",
        _table(
            ["", "value"],
            [
                ["columns", len(attrs)],
                ["synthetic records", len(synthetic)],
                ["mean TV error, columns", float(np.mean(list(column_errors.values())))],
                ["mean TV error, pairs", float(np.mean(list(pair_errors.values()) or [0.0]))],
            ]
            + (
                [["workload error (Private-PGM Sec. 5.1)", workload.error(real, synthetic)]]
                if workload is not None
                else []
            ),
        ),
    ]
    parts.append("<h2>Privacy ledger</h2>")
    if ledger:
        spent = ledger.get("spent", {})
        parts.append(
            "<p>" + ", ".join(f"{html.escape(k)} = {v:.6g}" for k, v in spent.items()) + "</p>"
        )
        def number(value: Any) -> str:
            return "" if not value else f"{value:.3g}"

        rows = [
            [e.get("label", "")] + [number(e.get(k)) for k in ("epsilon", "rho", "delta")]
            for e in ledger.get("entries", [])
        ]
        parts.append(_table(["spent on", "epsilon", "rho", "delta"], rows))
    else:
        parts.append("<p>No ledger given (write one with <code>dpgm synth --ledger</code>).</p>")
    if plots:
        parts.append("<h2>Columns: real and synthetic</h2><div class='grid'>")
        parts += [_histogram(real, synthetic, a) for a in attrs]
        parts.append("</div>")
        if len(attrs) > 1:
            parts.append("<h2>Pairs</h2>" + _heat_map(attrs, pair_errors))
    else:
        parts.append(
            "<p class='note'>Plots need matplotlib: <code>pip install dpgm[report]</code>."
            "</p>"
        )
    if numeric is not None and numeric.columns:
        parts += _numeric_section(numeric, plots)
    if utility is not None:
        parts.append("<h2>Utility: train on synthetic, test on real</h2>")
        parts.append(f"<p>Models predicting <b>{html.escape(utility.target)}</b> "
                     f"({utility.task}), trained on the real training records or on the "
                     "synthetic ones, scored on the holdout.</p>")
        parts.append(_table(["model", "metric", "trained on real", "trained on synthetic"],
                            [[s.model, s.metric, s.real, s.synthetic] for s in utility.scores]))
    if copies is not None:
        parts.append("<h2>Privacy sanity (a check, not a guarantee)</h2>")
        parts += [f"<p>{html.escape(line)}</p>" for line in copies.summary()]
    parts.append("<h2>Per-column errors</h2>")
    parts.append(_table(["column", "TV error"], [[a, column_errors[(a,)]] for a in attrs]))
    worst = sorted(pair_errors.items(), key=lambda kv: -kv[1])
    parts.append("<h2>Per-pair errors (worst first)</h2>")
    parts.append(_table(["column", "column", "TV error"], [[a, b, e] for (a, b), e in worst]))
    if workload is not None:
        parts.append("<h2>Workload</h2>")
        rows = [
            [" × ".join(c), e]
            for c, e in marginal_errors(real, synthetic, workload.cliques).items()
        ]
        parts.append(_table(["marginal", "TV error"], rows))
    parts.append("</body></html>")
    return "\n".join(parts)


def write_report(path: str | PathLike[str], page: str) -> None:
    """Write the page, whole or not at all."""
    with atomic_write(path) as handle:
        handle.write(page)
