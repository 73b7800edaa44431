"""Train on synthetic, test on real: the same models trained on real and synthetic records,
scored on a holdout. Synthetic records that keep the target's relationships score as the
real ones do; records that lost them score as chance."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpgm import Dataset, Domain
from dpgm.errors import DomainError, ParameterError
from dpgm.evaluation.utility import tstr

pytest.importorskip("sklearn")

DOMAIN = Domain(["a", "b", "c", "y"], [3, 4, 2, 2])


def _records(rng, n):
    """y follows a and b closely; c is noise."""
    a, b, c = rng.integers(0, 3, n), rng.integers(0, 4, n), rng.integers(0, 2, n)
    signal = (a + b >= 3).astype(np.int64)
    y = np.where(rng.random(n) < 0.9, signal, 1 - signal)
    return np.column_stack([a, b, c, y])


@pytest.fixture(scope="module")
def parts():
    rng = np.random.default_rng(0)
    return tuple(Dataset(_records(rng, n), DOMAIN) for n in (3000, 1000))


def test_a_faithful_copy_scores_as_the_real_records(parts):
    train, holdout = parts
    found = tstr(train, train, holdout, "y", rng=4)
    assert found.task == "classification"
    assert [(s.model, s.metric) for s in found.scores] == [
        ("logistic regression", "accuracy"), ("logistic regression", "AUC"),
        ("gradient boosting", "accuracy"), ("gradient boosting", "AUC")]
    for s in found.scores:
        assert s.synthetic == s.real  # the same data and seed: the same model
        assert s.real > (0.85 if s.metric == "accuracy" else 0.88)
    assert "trained on synthetic" in found.summary()[1]


def test_records_that_lost_the_relationship_score_as_chance(parts):
    train, holdout = parts
    shuffled = np.asarray(train.records).copy()
    shuffled[:, 3] = np.random.default_rng(1).permutation(shuffled[:, 3])
    found = tstr(train, Dataset(shuffled, DOMAIN), holdout, "y")
    for s in found.scores:
        if s.metric == "AUC":
            # a model fitted to noise ranks by a random direction of informative features:
            # far from the real model, though not always at 0.5
            assert s.synthetic < s.real - 0.2 and s.real > 0.88


def test_one_class_in_the_synthetic_records_predicts_that_class(parts):
    train, holdout = parts
    constant = np.asarray(train.records).copy()
    constant[:, 3] = 1
    found = tstr(train, Dataset(constant, DOMAIN), holdout, "y")
    share = float(np.mean(np.asarray(holdout.records)[:, 3] == 1))
    for s in found.scores:
        assert s.synthetic == (pytest.approx(share) if s.metric == "accuracy" else 0.5)


def test_a_class_of_one_synthetic_record_is_fitted_without_early_stopping():
    # over 10,000 records gradient boosting holds out a stratified split, which a class of
    # one record breaks; the target has three classes, one of them once in the synthetic
    domain = Domain(["a", "y"], [3, 3])
    rng = np.random.default_rng(2)
    real = Dataset(np.column_stack([rng.integers(0, 3, 12_000), rng.integers(0, 3, 12_000)]),
                   domain)
    synthetic = np.asarray(real.records).copy()
    synthetic[:, 1] = np.where(synthetic[:, 1] == 2, 1, synthetic[:, 1])
    synthetic[0, 1] = 2
    found = tstr(real, Dataset(synthetic, domain), real, "y", rng=0)
    assert all(np.isfinite(s.synthetic) for s in found.scores)


def test_a_numeric_target_is_regressed_on_its_numbers(parts):
    train, holdout = parts

    def value(data):  # a number that the attributes explain, with a little noise
        records = np.asarray(data.records)
        noise = np.random.default_rng(len(records)).normal(0, 0.1, len(records))
        return 2.0 * records[:, 0] - records[:, 1] + noise

    numbers = (value(train), value(train), value(holdout))
    numbers[2][:10] = np.nan  # missing targets are left out
    found = tstr(train, train, holdout, "y", numbers=numbers)
    assert found.task == "regression"
    assert [s.metric for s in found.scores] == ["R²", "R²"]
    assert all(s.real > 0.9 for s in found.scores)


def test_a_multiclass_auc_averages_one_class_against_the_rest(parts):
    train, holdout = parts
    found = tstr(train, train, holdout, "b")
    auc = [s for s in found.scores if s.metric == "AUC"]
    # b is a quarter of the time the only cause of y, so it is told apart a little only
    assert all(0.5 < s.real < 0.8 for s in auc)


def test_bad_targets_and_domains_are_refused(parts):
    train, holdout = parts
    with pytest.raises(ParameterError, match="not an attribute"):
        tstr(train, train, holdout, "z")
    other = Dataset(np.zeros((3, 2), dtype=np.int64), Domain(["x", "y"], [2, 2]))
    with pytest.raises(DomainError):
        tstr(other, train, holdout, "y")


def test_evaluate_target_prints_the_scores_and_the_report_shows_them(parts, tmp_path, capsys):
    from dpgm.cli import main

    train, holdout = parts
    DOMAIN.save(tmp_path / "domain.json")
    for name, data in (("train", train), ("holdout", holdout)):
        data.save(tmp_path / f"{name}.csv")
    args = ["evaluate", str(tmp_path / "train.csv"), str(tmp_path / "train.csv"), "--domain",
            str(tmp_path / "domain.json"), "--ways", "1"]
    # refused before any record is read: no holdout, or a column that does not exist
    assert main([*args, "--target", "y"]) == 2
    assert "--holdout" in capsys.readouterr().err
    assert main([*args, "--holdout", str(tmp_path / "holdout.csv"), "--target", "q"]) == 2
    err = capsys.readouterr().err
    assert "'q' is not a column" in err and "real:" not in err
    assert main([*args, "--holdout", str(tmp_path / "holdout.csv"), "--target", "y",
                 "--report", str(tmp_path / "report")]) == 0
    out = capsys.readouterr().out
    assert "train on synthetic, test on real: classification of y" in out
    assert "gradient boosting, AUC" in out
    page = (tmp_path / "report" / "index.html").read_text()
    assert "Utility: train on synthetic, test on real" in page


def test_a_numeric_schema_column_is_regressed_from_the_raw_tables(tmp_path, capsys):
    import pandas as pd

    from dpgm.cli import main

    rng = np.random.default_rng(2)
    n = 1200
    group = rng.choice(["x", "y", "z"], n)
    value = np.round(np.where(group == "x", 10, np.where(group == "y", 50, 90))
                     + rng.normal(0, 3, n), 1)
    frame = pd.DataFrame({"group": group, "value": value})
    frame[:900].to_csv(tmp_path / "train.csv", index=False)
    frame[900:].to_csv(tmp_path / "holdout.csv", index=False)
    schema = {"columns": {"group": {"kind": "categorical", "labels": ["x", "y", "z"]},
                          "value": {"kind": "numeric", "lower": 0, "upper": 100,
                                    "bins": 10, "decimals": 1}}}
    (tmp_path / "schema.json").write_text(json.dumps(schema))
    assert main(["evaluate", str(tmp_path / "train.csv"), str(tmp_path / "train.csv"),
                 "--schema", str(tmp_path / "schema.json"), "--ways", "1", "--holdout",
                 str(tmp_path / "holdout.csv"), "--target", "value"]) == 0
    out = capsys.readouterr().out
    assert "regression of value on the holdout" in out
    r2 = [float(line.split("R²: ")[1].split()[0]) for line in out.splitlines() if "R²" in line]
    assert len(r2) == 2 and min(r2) > 0.95
