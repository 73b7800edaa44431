"""The paper-001 experiment harnesses (E1-E3), on tiny settings: they run, save their
results and summaries, and the summaries read what the runs found."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def experiments(monkeypatch, tmp_path):
    if str(ROOT) not in sys.path:
        monkeypatch.syspath_prepend(str(ROOT))
    if importlib.util.find_spec("experiments") is None:
        pytest.skip("the experiments folder is not importable")
    import experiments._common as common
    import experiments.mrf_e1 as e1
    import experiments.mrf_e2 as e2
    import experiments.mrf_e3 as e3

    for module in (common, e1, e2, e3):
        monkeypatch.setattr(module, "OUTPUT", tmp_path)
    monkeypatch.setattr(e1, "SIZES", [8, 16])
    monkeypatch.setattr(e1, "PRIVATE_NS", [1_000, 4_000])
    monkeypatch.setattr(e1, "NONPRIVATE_NS", [250, 1_000])
    monkeypatch.setattr(e2, "NS", [1_000, 2_000, 4_000])
    monkeypatch.setattr(e2, "SELECTION_NS", [1_000, 2_000])
    monkeypatch.setattr(e3, "BLOCK_NS", [100, 400])
    monkeypatch.setattr(e3, "ZCDP_NS", [2_000, 8_000])
    monkeypatch.setattr(e3, "BLOCKS_DRAWN", 6)
    monkeypatch.setattr(e3, "RESAMPLES", 20)
    return e1, e2, e3


@pytest.mark.filterwarnings("ignore")
def test_e1_finds_error_curves_and_thresholds(experiments, tmp_path):
    e1, _, _ = experiments
    e1.main(["--quick", "--jobs", "1"])
    result = json.loads((tmp_path / "mrf_e1_quick.json").read_text())
    private = [c for c in result["curves"] if c["rho"] is not None]
    assert {c["p"] for c in private} == {8, 16}
    for curve in private:  # more records, smaller error
        assert curve["errors"][-1] < curve["errors"][0]
    assert set(result["summary"]["n_star_private"]) == {"8", "16"}
    assert {f["p"] for f in result["full"]} == {8, 16}


@pytest.mark.filterwarnings("ignore")
def test_e2_compares_budgets_selections_and_step_rules(experiments, tmp_path):
    _, e2, _ = experiments
    e2.main(["--quick", "--jobs", "1"])
    result = json.loads((tmp_path / "mrf_e2_quick.json").read_text())
    parts = {c["part"] for c in result["curves"]}
    assert parts == {"a", "b", "c", "d"}
    assert {c.get("selection") for c in result["curves"] if c["part"] == "c"} == {
        "em", "laplace", "paper"}


@pytest.mark.filterwarnings("ignore")
def test_e3_scores_blocks_ptr_and_the_zcdp_route(experiments, tmp_path):
    _, _, e3 = experiments
    e3.main(["--quick", "--jobs", "1"])
    result = json.loads((tmp_path / "mrf_e3_quick.json").read_text())
    for entry in result["blocks_drawn"]:
        assert 0 <= entry["ptr"] <= 1 and 0 <= entry["nonprivate"] <= 1
    assert {r["p"] for r in result["zcdp"]} == {16, 64}
    assert len(result["privacy_sweep"]) == 9
