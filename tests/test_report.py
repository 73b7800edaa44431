"""The HTML report of dpgm evaluate --report: its content, and that a browser renders it."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from schema_helpers import SPEC, block_import, raw_table

from dpgm.cli import main
from dpgm.report import build_report

BROWSERS = ("chromium", "chromium-browser", "google-chrome")


@pytest.fixture
def run(tmp_path):
    data = tmp_path / "raw.csv"
    raw_table(300).to_csv(data, index=False)
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"columns": SPEC["columns"]}))
    synthetic, ledger = tmp_path / "synthetic.csv", tmp_path / "ledger.json"
    common = ["--schema", str(schema)]
    assert main(["synth", str(data), *common, "--epsilon", "2", "--out", str(synthetic),
                 "--ledger", str(ledger), "--seed", "0"]) == 0
    report = tmp_path / "report"
    assert main(["evaluate", str(data), str(synthetic), *common, "--ways", "1",
                 "--report", str(report), "--ledger", str(ledger)]) == 0
    return report / "index.html", ledger


def test_the_report_holds_plots_errors_and_the_ledger(run):
    page = run[0].read_text()
    # one histogram per column, the heat map, a CDF overlay per numeric or date column (age,
    # paid, seen) and the Pearson and Spearman matrices
    assert page.count("<img") == 7 + 1 + 3 + 2
    assert "<h2>Numeric columns</h2>" in page
    assert "Privacy ledger" in page and "one-way marginals" in page
    assert "epsilon = 2" in page
    assert "Per-pair errors" in page and "(missing)" not in page.split("<img")[0]
    assert json.loads(run[1].read_text())["spent"]["epsilon"] == pytest.approx(2.0)


def test_the_report_is_refused_over_an_existing_page_and_needs_no_matplotlib(run, monkeypatch):
    page, _ = run
    folder = str(page.parent)
    assert main(["evaluate", "x.csv", "y.csv", "--domain", "d.json", "--report", folder]) == 2
    from dpgm.schema import Schema

    schema = Schema.from_json({"columns": SPEC["columns"]})
    data = schema.encode(raw_table(50))
    block_import(monkeypatch, "matplotlib")
    html = build_report(data, data)
    assert "<img" not in html and "pip install dpgm[report]" in html


@pytest.mark.skipif(
    not any(shutil.which(b) for b in BROWSERS), reason="no headless browser installed"
)
def test_a_headless_browser_renders_the_report(run, tmp_path):
    browser = next(shutil.which(b) for b in BROWSERS if shutil.which(b))
    shot = tmp_path / "report.png"
    subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1200,2000",
         f"--screenshot={shot}", run[0].as_uri()],
        check=True, capture_output=True, timeout=120,
    )
    assert shot.stat().st_size > 50_000  # a blank page is a few kilobytes
