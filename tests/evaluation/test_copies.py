"""Privacy sanity checks: exact copies and distances to the closest record, training
against holdout. They must flag planted copies of training records and stay quiet on
records drawn afresh from the same population."""

from __future__ import annotations

import numpy as np
import pytest

from dpgm import Dataset, Domain
from dpgm.errors import DomainError
from dpgm.evaluation.copies import _closest, copy_checks

DOMAIN = Domain([f"a{i}" for i in range(10)], [4] * 10)


def _population(rng, n):
    """Records with some structure: each attribute copies the previous one 30% of the time."""
    records = np.empty((n, len(DOMAIN)), dtype=np.int64)
    records[:, 0] = rng.integers(0, 4, n)
    for j in range(1, len(DOMAIN)):
        fresh = rng.integers(0, 4, n)
        records[:, j] = np.where(rng.random(n) < 0.3, records[:, j - 1], fresh)
    return records


@pytest.fixture(scope="module")
def parts():
    rng = np.random.default_rng(0)
    train, holdout = _population(rng, 4000), _population(rng, 1000)
    return rng, Dataset(train, DOMAIN), Dataset(holdout, DOMAIN)


def test_fresh_records_raise_no_flag(parts):
    rng, train, holdout = parts
    synthetic = Dataset(_population(np.random.default_rng(7), 3000), DOMAIN)
    found = copy_checks(synthetic, train, holdout, rng=1)
    assert not found.flagged
    assert found.compared == 2000 and abs(found.closer_to_train - 0.5) < 0.05
    assert "no gap" in found.summary()[-1]


@pytest.mark.parametrize("share", [0.1, 0.3])
def test_planted_copies_of_training_records_are_flagged(parts, share):
    rng, train, holdout = parts
    fresh = _population(np.random.default_rng(8), 3000)
    copies = np.asarray(train.records)[np.random.default_rng(9).choice(4000, int(3000 * share))]
    synthetic = Dataset(np.vstack([fresh[: 3000 - len(copies)], copies]), DOMAIN)
    found = copy_checks(synthetic, train, holdout, rng=1)
    assert found.copies_flagged and found.distances_flagged
    # the training records are compared at the holdout's size (a quarter of them here), so
    # about a quarter of the planted copies meet their original
    assert found.exact_train > found.exact_holdout + 0.15 * share
    assert found.exact_holdout < 0.01
    assert any(line.startswith("FLAG: synthetic records copy") for line in found.summary())


def test_closest_distance_is_the_fewest_differing_attributes():
    records = np.array([[0, 1, 2], [3, 3, 3]])
    reference = np.array([[0, 1, 0], [3, 0, 0], [1, 1, 1]])
    np.testing.assert_array_equal(_closest(records, reference), [1, 2])
    brute = [min(int(np.sum(r != s)) for s in reference) for r in records]
    assert list(_closest(records, reference)) == brute


def test_domains_must_agree(parts):
    _, train, holdout = parts
    other = Dataset(np.zeros((3, 2), dtype=np.int64), Domain(["x", "y"], [2, 2]))
    with pytest.raises(DomainError):
        copy_checks(other, train, holdout)


def test_evaluate_with_a_holdout_prints_the_checks_and_flags_planted_copies(parts, tmp_path,
                                                                           capsys):
    from dpgm.cli import main

    _, train, holdout = parts
    folder = tmp_path
    DOMAIN.save(folder / "domain.json")
    train.save(folder / "train.csv")
    holdout.save(folder / "holdout.csv")
    copies = np.asarray(train.records)[:1500]
    fresh = _population(np.random.default_rng(3), 1500)
    for name, records in (("leaky.csv", np.vstack([fresh, copies])), ("fresh.csv", fresh)):
        Dataset(records, DOMAIN).save(folder / name)
    args = ["evaluate", str(folder / "train.csv"), "--domain", str(folder / "domain.json"),
            "--ways", "1", "--holdout", str(folder / "holdout.csv")]
    assert main([*args[:2], str(folder / "leaky.csv"), *args[2:]]) == 0
    out = capsys.readouterr().out
    assert "privacy sanity, against the holdout" in out and "FLAG: synthetic records copy" in out
    assert main([*args[:2], str(folder / "fresh.csv"), *args[2:], "--report",
                 str(folder / "report")]) == 0
    assert "no gap between training and holdout" in capsys.readouterr().out
    assert "Privacy sanity" in (folder / "report" / "index.html").read_text()
