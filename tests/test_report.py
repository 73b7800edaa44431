"""The evaluation report of dpgm evaluate --report: the page (scores first, then columns,
pairs, utility, privacy sanity, ledger), its JSON twin, the notebook view, and that a
real headless browser renders it with every image and no console error."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from schema_helpers import SPEC, block_import, raw_table

from dpgm.cli import main
from dpgm.report import build_report, evaluate

BROWSERS = ("chromium", "chromium-browser", "google-chrome")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("report")
    data = tmp_path / "raw.csv"
    raw_table(300).to_csv(data, index=False)
    holdout = tmp_path / "holdout.csv"
    raw_table(150, seed=1).to_csv(holdout, index=False)
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"columns": SPEC["columns"]}))
    synthetic, ledger = tmp_path / "synthetic.csv", tmp_path / "ledger.json"
    model = tmp_path / "model.dpgm"
    assert main(["synth", str(data), "--schema", str(schema), "--epsilon", "2", "--out",
                 str(synthetic), "--ledger", str(ledger), "--seed", "0", "--save-model",
                 str(model), "--iters", "200"]) == 0  # the page's layout, not the fit
    report = tmp_path / "report"
    assert main(["evaluate", str(data), str(synthetic), "--model", str(model), "--ways", "1",
                 "2", "--report", str(report), "--ledger", str(ledger), "--holdout",
                 str(holdout), "--target", "job"]) == 0
    return report, ledger


def test_the_page_shows_scores_first_then_columns_pairs_utility_sanity_and_ledger(run):
    page = (run[0] / "index.html").read_text()
    order = ["<h2>Scores</h2>", "<h2>Columns", "<h2>Pairs", "<h2>Numeric columns</h2>",
             "<h2>Utility", "<h2>Privacy sanity", "<h2>Privacy ledger</h2>"]
    positions = [page.index(h) for h in order]
    assert positions == sorted(positions)
    # one histogram per column, the heat map, a CDF overlay per numeric or date column (age,
    # paid, seen) and the Pearson and Spearman matrices
    assert page.count("<img") == 7 + 1 + 3 + 2
    for score in ("SDMetrics Quality", "Column Pair Trends", "SDMetrics Diagnostic",
                  "SDNist k-marginal", "utility (gradient boosting, AUC)", "privacy sanity"):
        assert score in page.split("<h2>Columns")[0], score
    assert "model's 95% interval" in page  # error bars from the saved model
    assert "record count" in page and "epsilon = 2" in page  # the default mechanism's ledger
    assert "(missing)" not in page.split("<img")[0]
    assert json.loads(run[1].read_text())["spent"]["epsilon"] == pytest.approx(2.0)


def test_the_json_twin_holds_every_number_of_the_page(run):
    numbers = json.loads((run[0] / "report.json").read_text())
    assert set(numbers) >= {"rows", "scores", "mean_tv_error", "columns", "pairs", "numeric",
                            "utility", "privacy_sanity", "ledger"}
    quality = numbers["scores"]["sdmetrics_quality"]
    page = (run[0] / "index.html").read_text()
    assert f"{100 * quality['overall']:.1f}%" in page
    assert 0 <= numbers["scores"]["sdnist_k_marginal"] <= 1000
    assert len(numbers["pairs"]) == 21  # every pair of 7 columns, worst first
    errors = [p["tv_error"] for p in numbers["pairs"]]
    assert errors == sorted(errors, reverse=True)
    column = numbers["columns"]["age"]
    assert len(column["labels"]) == len(column["real_share"])
    assert sum(column["real_share"]) == pytest.approx(1.0)
    # the model's error bars on the columns it measured directly (merged values are not)
    errors = {n: c["model_standard_error"] for n, c in numbers["columns"].items()}
    measured = {n: e for n, e in errors.items() if e is not None}
    assert measured and all(len(e) == len(numbers["columns"][n]["labels"]) and min(e) > 0
                            for n, e in measured.items())
    assert {s["metric"] for s in numbers["utility"]["scores"]} == {"accuracy", "AUC"}
    assert numbers["privacy_sanity"]["compared"] > 0


def test_a_format_writes_one_file_and_an_existing_page_is_refused(run, capsys):
    report, _ = run
    schema = str(report.parent / "schema.json")
    args = ["evaluate", "absent.csv", "absent.csv", "--schema", schema, "--report", str(report)]
    assert main(args) == 2  # refused before any record is read
    assert "exists" in capsys.readouterr().err
    data, synthetic = str(report.parent / "raw.csv"), str(report.parent / "synthetic.csv")
    only = report.parent / "numbers"
    assert main(["evaluate", data, synthetic, "--schema", schema, "--ways", "1", "--report",
                 str(only), "--format", "json"]) == 0
    assert sorted(p.name for p in only.iterdir()) == ["report.json"]


def test_a_notebook_shows_the_page_inline_and_no_matplotlib_gives_tables(monkeypatch):
    from dpgm.schema import Schema

    schema = Schema.from_json({"columns": SPEC["columns"]})
    frame = raw_table(80)
    evaluation = evaluate(frame, raw_table(80, seed=3), schema=schema)
    inline = evaluation._repr_html_()
    assert inline.startswith("<style>") and "<html" not in inline and "<h2>Scores</h2>" in inline
    assert 0 < evaluation.quality.overall <= 1 and evaluation.k_marginal <= 1000
    same = evaluate(frame, frame.copy(), schema=schema)
    assert same.quality.overall == pytest.approx(1.0) and same.k_marginal == 1000.0
    block_import(monkeypatch, "matplotlib")
    data = schema.encode(frame)
    html = build_report(data, data)
    assert "<img" not in html and "pip install dpgm[report]" in html


def _browser():
    return next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)


@pytest.mark.skipif(_browser() is None, reason="no headless Chromium installed")
def test_a_headless_browser_renders_the_page_with_every_image_and_no_console_error(run):
    sync_api = pytest.importorskip("playwright.sync_api")
    errors: list[str] = []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=_browser(),
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto((run[0] / "index.html").as_uri())
            loaded = page.evaluate(
                "Array.from(document.images).map(i => i.complete && i.naturalWidth > 0)")
            headings = page.evaluate(
                "Array.from(document.querySelectorAll('h2')).map(h => h.textContent)")
            shot = page.screenshot(full_page=True)
        finally:
            browser.close()
    assert errors == []
    assert len(loaded) == 13 and all(loaded)
    assert headings[0] == "Scores"
    assert len(shot) > 50_000 and np.frombuffer(shot[:8], np.uint8).tolist()[1:4] == [80, 78, 71]
