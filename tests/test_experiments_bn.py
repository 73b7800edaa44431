"""The paper-002 experiment harness (the note's A13), on Asia with two runs."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from bn_helpers import BN_DIR, bn_path

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def harness(monkeypatch, tmp_path):
    bn_path("asia")  # skips where the networks are absent
    if str(ROOT) not in sys.path:
        monkeypatch.syspath_prepend(str(ROOT))
    if importlib.util.find_spec("experiments") is None:
        pytest.skip("the experiments folder is not importable")
    import experiments._common as common
    import experiments.bn_fig1_tables as harness

    monkeypatch.setattr(harness, "OUTPUT", tmp_path)
    monkeypatch.setattr(harness, "BN_FOLDER", BN_DIR)  # the networks bundled with the tests
    monkeypatch.setattr(common, "BN_FOLDER", BN_DIR)
    monkeypatch.setattr(common, "OUTPUT", tmp_path)
    return harness


@pytest.mark.filterwarnings("ignore")
def test_the_harness_writes_tables_curves_allocations_and_its_protocol(harness, tmp_path,
                                                                       capsys):
    harness.main(["--runs", "2", "--networks", "asia", "--jobs", "1",
                  "--methods", "dind", "ours"])
    printed = capsys.readouterr().out
    assert "Table 1: MAP accuracy" in printed and "Table 2: mu" in printed
    result = json.loads((tmp_path / "bn_fig1_tables.json").read_text())
    protocol = result["protocol"]
    assert protocol["runs"] == 2 and protocol["query_seed"] == harness.QUERY_SEED
    assert set(protocol["switches"]) == {f"C{i}" for i in range(1, 15)}
    summary = result["summary"]["asia"]
    for method in ("dind", "ours"):
        for eps in map(str, harness.EPSILONS):
            assert set(summary[method][eps]) >= {"param_l1_column", "marginal_l1",
                                                 "conditional_kl", "map", "mu"}
    allocation = result["allocation"]["asia"]["1.0"]
    assert set(allocation) == {"asia", "tub", "smoke", "lung", "bronc", "either", "xray",
                               "dysp"}
    assert sum(mean for mean, _ in allocation.values()) == pytest.approx(0.9)
    assert set(result["verdicts"]) >= {"R1", "R2", "R3", "R4", "R5"}
    assert result["networks"]["asia"]["delta_check"] < 1e-12
    assert (tmp_path / "bn_fig1_tables.md").exists()
