"""The paper-000 experiment harnesses (Figs. 2 and 3), on small settings."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def experiments(monkeypatch, tmp_path):
    if str(ROOT) not in sys.path:
        monkeypatch.syspath_prepend(str(ROOT))
    if importlib.util.find_spec("experiments") is None:
        pytest.skip("the experiments folder is not importable")
    import experiments._common as common
    import experiments.cgm_fig2 as fig2
    import experiments.cgm_fig3 as fig3

    for module in (common, fig2, fig3):
        monkeypatch.setattr(module, "OUTPUT", tmp_path)
    return fig2, fig3


@pytest.mark.filterwarnings("ignore")
def test_the_wifi_harness_fits_every_learner_on_both_releases(experiments, tmp_path):
    _, fig3 = experiments
    fig3.main(["--quick", "--jobs", "1"])
    result = json.loads((tmp_path / "cgm_fig3_quick.json").read_text())
    releases = {t["normalisation"] for t in result["b"]}
    assert releases == {"paper", "every-record"}
    for trial in result["b"]:
        assert np.isfinite(trial["cgm"]["all"]) and trial["cgm"]["iterations"] >= 1
        assert set(trial["naive"]) == {f"{lam:g}" for lam in fig3.LAMBDAS_B}
    (extra,) = result["b_baselines"]
    assert extra["psgd"] and np.isfinite(extra["nonprivate"]["all"])
    # the non-private model is the best, the random one no better than it
    assert extra["nonprivate"]["all"] > extra["random"]["all"]


@pytest.mark.filterwarnings("ignore")
def test_psgd_runs_report_their_noise_and_unattainable_targets(experiments, monkeypatch):
    fig2, _ = experiments
    run = fig2.psgd_run("chain", 1.0, 1_000, 0, 0, (0.05, 1.0, 1.0))
    assert run["attainable"] and run["kl"] > 0 and run["sigma"] > 0
    monkeypatch.setattr(fig2, "PSGD_NOISE_CAP", 0.5)  # below what ε = 1 needs
    refused = fig2.psgd_run("chain", 1.0, 1_000, 0, 0, (0.05, 1.0, 1.0))
    assert refused["attainable"] is False and "attainable" in refused["reason"]


def test_the_fig2_checks_read_the_summary_rows(experiments):
    fig2, _ = experiments
    rows = []
    for family in fig2.FAMILIES:
        for epsilon, n in fig2.CELLS:
            shrink = 1000 / n
            rows.append({"family": family, "epsilon": epsilon, "N": n, "cgm": 1.0 * shrink,
                         "naive_a_priori": 2.0 * shrink, "naive_1e-3": 50.0,
                         "naive_best": 0.5 * shrink, "psgd": 3.0 * shrink,
                         "pgm": 4.0 * shrink, "nonprivate": 0.01, "random": 20.0})
    checks = fig2.checks(rows)
    assert checks["i_cgm_below_naive_1e-3_every_cell"]
    assert checks["i_cgm_below_naive_a_priori_cells"] == len(rows)
    assert all(checks["ii_private_kl_decreases_1e3_to_1e5"].values())
    assert checks["cgm_below_naive_best_cells"] == 0
    assert checks["cgm_lowest_private_cells"] == 0 and checks["pgm_below_cgm_cells"] == 0
