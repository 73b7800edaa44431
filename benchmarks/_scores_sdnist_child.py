"""SDNist's k-marginal score on the fixture tables; run by ``scores_record.py`` in SDNist's venv.

Reads a JSON job on stdin (written by ``scores_record.py``), prepares each table pair the way
SDNist's report does (its own percentile binning of the numeric features, -1 for missing
values; categorical columns as integer codes), writes the discrete tables as CSV, reads them
back and scores them with SDNist's ``KMarginal``. Prints the results as JSON on stdout.
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import version
from typing import Any

import numpy as np
import pandas as pd
import sdnist.report  # noqa: F401  (imported first: sdnist.metrics.kmarginal is circular)
from sdnist.metrics.kmarginal import KMarginal
from sdnist.report.dataset.binning import (
    add_bin_for_NA,
    percentile_rank_synthetic,
    percentile_rank_target,
)

EPOCH = pd.Timestamp("1970-01-01")


def _with_na_marker(column: pd.Series, datetime_format: str | None) -> pd.Series:
    """Numbers (dates as whole days since 1970-01-01) as objects, 'N' where missing."""
    if datetime_format is not None:
        dates = pd.to_datetime(column, format=datetime_format)
        column = (dates - EPOCH).dt.days
    out = column.astype(object)
    out[column.isna()] = "N"
    return out


def _codes(column: pd.Series, labels: list[Any] | None) -> pd.Series:
    """Integer codes: the label's position (or the value itself when labels is None),
    -1 where missing, len(labels) + i for the i-th unseen value (sorted as strings)."""
    if labels is None:
        return column.astype("int64")
    present = [v for v in column.dropna().unique() if v not in labels]
    extra = sorted(present, key=str)
    lookup = {v: i for i, v in enumerate(labels + extra)}
    return column.map(lambda v: -1 if pd.isna(v) else lookup[v]).astype("int64")


def prepare(
    real: pd.DataFrame, synthetic: pd.DataFrame, spec: dict[str, Any]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """SDNist's binning (sdnist/report/dataset/__init__.py lines 209-221) on the numeric and
    datetime columns; codes for the categorical ones."""
    numeric = list(spec["numeric"]) + list(spec["datetime"])
    c_real, c_synth = real.copy(), synthetic.copy()
    for column in numeric:
        fmt = spec["datetime_format"] if column in spec["datetime"] else None
        c_real[column] = _with_na_marker(real[column], fmt)
        c_synth[column] = _with_na_marker(synthetic[column], fmt)
    d_real = percentile_rank_target(c_real, numeric)
    d_real = add_bin_for_NA(d_real, c_real, numeric)
    d_synth = percentile_rank_synthetic(c_synth, c_real, d_real, numeric)
    d_synth = add_bin_for_NA(d_synth, c_synth, numeric)
    for column, labels in spec["categorical"].items():
        merged = pd.concat([real[column], synthetic[column]], ignore_index=True)
        codes = _codes(merged, labels)
        d_real[column] = codes.iloc[: len(real)].to_numpy()
        d_synth[column] = codes.iloc[len(real) :].to_numpy()
    columns = list(real.columns)
    return d_real[columns].astype("int64"), d_synth[columns].astype("int64")


def score(real: pd.DataFrame, synthetic: pd.DataFrame, group: list[str] | None) -> dict:
    """KMarginal's score, and each marginal's sum of absolute density differences."""
    metric = KMarginal(real, synthetic, group)
    total = float(metric.compute_score())
    pairs = []
    for marginal in metric.marginal_pairs():
        _, _, diff = metric.marginal_densities(metric.td, list(group or []) + marginal)
        pairs.append({"columns": marginal, "abs_density_diff_sum": float(diff.sum())})
    out: dict[str, Any] = {"score": total, "group_features": group, "marginals": pairs}
    if group:
        out["group_scores"] = [
            {"group": list(np.atleast_1d(key).tolist()), "score": float(value)}
            for key, value in metric.scores.items()
        ]
    return out


def main() -> None:
    job = json.load(sys.stdin)
    results: dict[str, Any] = {
        "versions": {
            "sdnist": version("sdnist"),
            "pandas": pd.__version__,
            "numpy": np.__version__,
            "python": sys.version.split()[0],
        },
        "tables": {},
    }
    for spec in job["tables"]:
        real = pd.read_csv(spec["real_csv"])
        synthetic = pd.read_csv(spec["synthetic_csv"])
        if spec.get("discrete_real_csv"):
            d_real, d_synth = prepare(real, synthetic, spec)
            d_real.to_csv(spec["discrete_real_csv"], index=False)
            d_synth.to_csv(spec["discrete_synthetic_csv"], index=False)
            d_real = pd.read_csv(spec["discrete_real_csv"])
            d_synth = pd.read_csv(spec["discrete_synthetic_csv"])
        else:
            d_real, d_synth = real, synthetic
        entry = {"plain": score(d_real, d_synth, None)}
        for group in spec.get("groups", []):
            entry["grouped_" + "_".join(group)] = score(d_real, d_synth, group)
        if spec.get("nan_variant"):
            entry["plain_missing_as_nan"] = score(
                d_real.where(d_real != -1), d_synth.where(d_synth != -1), None
            )
        results["tables"][spec["name"]] = entry
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
