"""Numeric fidelity (issue 26, item 4): KS and Wasserstein-1 against closed forms and brute
force, quantiles, correlations, dates in days, and the evaluate command's output."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpgm.evaluation.numeric import QUANTILES, numeric_fidelity, numeric_values
from dpgm.schema import Schema

SCHEMA = Schema.from_json({"columns": {
    "x": {"kind": "numeric", "lower": 0, "upper": 10, "bins": 5},
    "y": {"kind": "numeric", "lower": -5, "upper": 5, "bins": 5, "nullable": True},
    "day": {"kind": "datetime", "lower": "2020-01-01", "upper": "2021-01-01", "width": "30D"},
    "s": {"kind": "categorical", "labels": ["a", "b"]},
}})


def table(x, y, days, n) -> pd.DataFrame:
    return pd.DataFrame({"x": x, "y": y, "day": pd.Timestamp("2020-01-01")
                         + pd.to_timedelta(days, "D"), "s": ["a"] * n})


def brute_ks(a: np.ndarray, b: np.ndarray) -> float:
    points = np.union1d(a, b)
    fa = np.array([(a <= p).mean() for p in points])
    fb = np.array([(b <= p).mean() for p in points])
    return float(np.abs(fa - fb).max())


def test_identical_tables_agree_exactly():
    rng = np.random.default_rng(0)
    n = 500
    real = table(rng.uniform(0, 10, n), rng.normal(0, 1, n), rng.integers(0, 300, n), n)
    found = numeric_fidelity(real, real.copy(), SCHEMA)
    assert set(found.columns) == {"x", "y", "day"}  # the categorical column is not numeric
    assert found.mean_ks == 0 and found.mean_wasserstein == 0
    assert found.correlation_difference("pearson") == pytest.approx(0, abs=1e-12)


def test_ks_and_w1_against_brute_force_and_a_closed_form():
    rng = np.random.default_rng(1)
    n = 400
    x = rng.uniform(0, 9, n)
    real = table(x, rng.normal(0, 1, n), rng.integers(0, 300, n), n)
    shifted = real.assign(x=x + 1.0, day=real["day"] + pd.Timedelta(days=7))
    found = numeric_fidelity(real, shifted, SCHEMA)
    # a shift by s moves every value by s: W1 = s, over the public range (10; 366 days)
    assert found.columns["x"].wasserstein == pytest.approx(1.0 / 10)
    assert found.columns["day"].wasserstein == pytest.approx(7 / 366)
    assert found.columns["x"].ks == pytest.approx(brute_ks(x, x + 1.0))
    assert found.columns["y"].ks == 0
    np.testing.assert_allclose(found.columns["x"].synthetic_quantiles,
                               np.quantile(x, QUANTILES) + 1.0)


def test_correlations_and_their_difference():
    rng = np.random.default_rng(2)
    n = 2000
    x = rng.uniform(0, 10, n)
    real = table(x, x - 5 + rng.normal(0, 0.1, n), rng.integers(0, 300, n), n)
    independent = real.assign(y=rng.permutation(real["y"].to_numpy()))
    found = numeric_fidelity(real, independent, SCHEMA)
    assert found.pearson[0].loc["x", "y"] > 0.99
    assert abs(found.pearson[1].loc["x", "y"]) < 0.1
    assert found.correlation_difference("pearson") > 0.9
    assert found.correlation_difference("spearman") > 0.9


def test_values_are_read_one_by_one_by_the_schema_missing_left_out():
    raw = pd.DataFrame({"x": ["1.5", " 2", "3e0"], "y": ["", "NA", "-1"],
                        "day": ["2020-01-02", "2020-01-03", "2020-01-04"], "s": ["a"] * 3})
    values = numeric_values(raw, SCHEMA)
    np.testing.assert_array_equal(values["x"], [1.5, 2.0, 3.0])
    assert values["y"].isna().tolist() == [True, True, False]
    np.testing.assert_array_equal(values["day"], [18263.0, 18264.0, 18265.0])


def test_evaluate_prints_numeric_fidelity_and_the_report_shows_it(tmp_path, capsys):
    from dpgm.cli import main

    rng = np.random.default_rng(3)
    n = 300
    real = table(rng.uniform(0, 10, n), rng.normal(0, 1, n), rng.integers(0, 300, n), n)
    synthetic = real.assign(x=rng.uniform(0, 10, n))
    real_path, synthetic_path = tmp_path / "real.csv", tmp_path / "synthetic.csv"
    real.to_csv(real_path, index=False)
    synthetic.to_csv(synthetic_path, index=False)
    schema = tmp_path / "schema.json"
    SCHEMA.save(schema)
    report = tmp_path / "report"
    assert main(["evaluate", str(real_path), str(synthetic_path), "--schema", str(schema),
                 "--ways", "1", "--report", str(report)]) == 0
    printed = capsys.readouterr().out
    assert "  y: KS 0; W1 0" in printed
    assert "mean KS distance over 3 numeric column(s)" in printed
    assert "largest correlation difference over numeric pairs" in printed
    assert "reading: for a column, the share of records in any set" in printed
    assert "reading: for a numeric column, the share of records below any value" in printed
    page = (report / "index.html").read_text()
    assert "<h2>Numeric columns</h2>" in page and "KS distance" in page


def test_correlations_equal_pandas_pairwise_complete_ones():
    """dpgm's Pearson and Spearman matrices (one sort per column) are pandas' corr,
    missing values dropped pair by pair, NaN for a constant column."""
    from dpgm.evaluation.numeric import correlations

    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(400, 4)), columns=list("abcd"))
    frame["b"] = 2 * frame["a"] + rng.normal(size=400)
    frame["d"] = np.round(frame["d"])  # ties
    frame.loc[::7, "a"] = np.nan
    frame.loc[::5, "c"] = np.nan
    frame["e"] = 1.0
    for method in ("pearson", "spearman"):
        np.testing.assert_allclose(correlations(frame, method).to_numpy(),
                                   frame.corr(method).to_numpy(), atol=1e-12)
