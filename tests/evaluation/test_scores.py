"""SDMetrics' Quality and Diagnostic reports and SDNist's k-marginal score, computed by
dpgm, equal the libraries' own numbers within 1e-9 on three tables (penguins with missing
values and dates, a diamonds sample, an Adult sample; each against an imperfect copy
with values out of range and unseen categories). The numbers were recorded with
sdmetrics 0.32.0 and sdnist 2.4 by benchmarks/scores_record.py (tests/evaluation/data/
scores/reference.json); where the library is installed, it is also run live."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpgm.evaluation.scores import (
    diagnostic_report,
    k_marginal,
    quality_report,
    sdnist_bins,
    sdnist_tables,
)

DATA = Path(__file__).parent / "data" / "scores"
REFERENCE = json.loads((DATA / "reference.json").read_text())
TABLES = sorted(REFERENCE["tables"])
SCHEMAS = Path(__file__).resolve().parents[2] / "src" / "dpgm" / "datasets"
TOLERANCE = 1e-9


def _close(ours, theirs) -> bool:
    if theirs is None:
        return ours is None or math.isnan(ours)
    return ours is not None and abs(ours - theirs) <= TOLERANCE


@pytest.fixture(scope="module", params=TABLES)
def table(request):
    name = request.param
    return (name, pd.read_csv(DATA / f"{name}-real.csv"),
            pd.read_csv(DATA / f"{name}-synthetic.csv"),
            json.loads((DATA / f"{name}-metadata.json").read_text()), REFERENCE["tables"][name])


def _same_report(ours, theirs, per_column: str) -> None:
    """The overall and property scores, and the per-column rows of ``per_column``, equal
    the library's."""
    assert _close(ours.overall, theirs["overall"])
    for name, value in theirs["properties"].items():
        assert _close(ours.properties[name], value), name
    for mine, row in zip(ours.details[per_column], theirs["details"][per_column], strict=True):
        assert (mine["Column"], mine["Metric"]) == (row["Column"], row["Metric"])
        assert _close(mine["Score"], row["Score"]), row


def test_the_quality_report_equals_sdmetrics(table):
    _, real, synthetic, metadata, reference = table
    ours = quality_report(real, synthetic, metadata)
    theirs = reference["quality"]
    _same_report(ours, theirs, "Column Shapes")
    for mine, row in zip(ours.details["Column Pair Trends"],
                         theirs["details"]["Column Pair Trends"], strict=True):
        assert (mine["Column 1"], mine["Column 2"], mine["Metric"]) == (
            row["Column 1"], row["Column 2"], row["Metric"])
        assert bool(mine["Meets Threshold?"]) == bool(row["Meets Threshold?"]), row
        for key in ("Score", "Real Correlation", "Synthetic Correlation", "Real Association"):
            assert _close(mine[key], row[key]), (key, row)


def test_every_pair_scores_as_sdmetrics_without_thresholds(table):
    _, real, synthetic, metadata, reference = table
    ours = quality_report(real, synthetic, metadata, thresholds=False)
    theirs = reference["column_pair_trends_no_threshold"]
    assert _close(ours.properties["Column Pair Trends"], theirs["score"])
    for mine, row in zip(ours.details["Column Pair Trends"], theirs["details"], strict=True):
        assert _close(mine["Score"], row["Score"]), row


def test_the_diagnostic_report_equals_sdmetrics(table):
    _, real, synthetic, metadata, reference = table
    _same_report(diagnostic_report(real, synthetic, metadata), reference["diagnostic"],
                 "Data Validity")


def test_the_k_marginal_score_equals_sdnist(table):
    name, real, synthetic, _, reference = table
    if name != "adult":  # SDNist's own preparation (percentile bins) written by the recorder
        real = pd.read_csv(DATA / f"{name}-real-kmarginal.csv")
        synthetic = pd.read_csv(DATA / f"{name}-synthetic-kmarginal.csv")
    scores = reference["sdnist_kmarginal"]
    assert _close(k_marginal(real, synthetic), scores["plain"]["score"])
    if "plain_missing_as_nan" in scores:  # missing mass is dropped, not compared
        assert _close(k_marginal(real.where(real != -1), synthetic.where(synthetic != -1)),
                      scores["plain_missing_as_nan"]["score"])


@pytest.mark.parametrize("name", ["penguins", "diamonds"])
def test_sdnist_percentile_bins_equal_its_own(name):
    schema = json.loads((SCHEMAS / f"{name}-schema.json").read_text())
    real = pd.read_csv(DATA / f"{name}-real.csv")
    synthetic = pd.read_csv(DATA / f"{name}-synthetic.csv")
    binned_real = pd.read_csv(DATA / f"{name}-real-kmarginal.csv")
    binned_synthetic = pd.read_csv(DATA / f"{name}-synthetic-kmarginal.csv")
    for column, spec in schema["columns"].items():
        if spec["kind"] == "categorical":
            continue
        r, s = real[column], synthetic[column]
        if spec["kind"] == "datetime":  # whole days since 1970, as the recorder fed SDNist
            r, s = ((pd.to_datetime(v, format="%Y-%m-%d") - pd.Timestamp("1970-01-01")).dt.days
                    for v in (r, s))
        ours = sdnist_bins(r.to_numpy(dtype=float), s.to_numpy(dtype=float))
        np.testing.assert_array_equal(ours[0], binned_real[column], err_msg=column)
        np.testing.assert_array_equal(ours[1], binned_synthetic[column], err_msg=column)


def test_identical_tables_score_one_and_k_marginal_1000():
    frame = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0, np.nan], "y": [2.0, 4.1, 6.0, 8.2, 9.0],
                          "c": ["a", "b", "a", None, "b"]})
    metadata = {"columns": {"x": {"sdtype": "numerical"}, "y": {"sdtype": "numerical"},
                            "c": {"sdtype": "categorical"}}}
    quality = quality_report(frame, frame.copy(), metadata)
    assert quality.overall == pytest.approx(1.0)
    assert diagnostic_report(frame, frame.copy(), metadata).overall == pytest.approx(1.0)
    assert k_marginal(frame[["c"]].fillna("?"), frame[["c"]].fillna("?")) == 1000.0


def test_live_sdmetrics_where_installed(table):
    """Runs only where sdmetrics is importable (it needs pandas < 3)."""
    reports = pytest.importorskip("sdmetrics.reports.single_table")
    _, real, synthetic, metadata, _ = table
    theirs = reports.QualityReport()
    theirs.generate(real, synthetic, metadata, verbose=False)
    assert _close(quality_report(real, synthetic, metadata).overall, theirs.get_score())


def test_scores_from_counts_equal_the_scores_of_the_tables():
    """Without raw tables every column is categorical: its scores from counts (any
    engine) equal the table scores, missing labels included."""
    from dpgm import Dataset, Domain
    from dpgm.evaluation.scores import scores_from_counts, tables_for_scores

    domain = Domain(["a", "b", "c"], [3, 4, 2], labels={"a": ["x", None, "z"],
                                                        "c": [False, True]})
    rng = np.random.default_rng(0)
    a = rng.integers(0, 3, 500)
    b = np.where(rng.random(500) < 0.7, a, rng.integers(0, 4, 500))
    real = Dataset(np.column_stack([a, b, rng.integers(0, 2, 500)]), domain)
    fake = np.column_stack([rng.integers(0, 3, 400), rng.integers(0, 3, 400),
                            rng.integers(0, 2, 400)])  # b's code 3 never appears
    synthetic = Dataset(fake, domain)
    tables = tables_for_scores(real, synthetic)
    expected = (quality_report(*tables), diagnostic_report(*tables))
    found = scores_from_counts(real, synthetic)
    for mine, theirs in zip(found[:2], expected):
        assert mine.overall == pytest.approx(theirs.overall, abs=1e-12)
        for name, value in theirs.properties.items():
            assert mine.properties[name] == pytest.approx(value, abs=1e-12, nan_ok=True)
        for key, rows in theirs.details.items():
            for row, other in zip(mine.details[key], rows, strict=True):
                assert row["Score"] == pytest.approx(other["Score"], abs=1e-12, nan_ok=True)
    assert found[2] == pytest.approx(k_marginal(*sdnist_tables(*tables)), abs=1e-9)
