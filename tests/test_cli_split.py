"""dpgm split: the steward's holdout, made before fitting."""

from __future__ import annotations

import gzip

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpgm.cli.split as split_module
from dpgm.cli import main


@pytest.fixture
def table(tmp_path):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"id": np.arange(5000), "x": rng.choice(["a", "b", ""], 5000),
                          "y": rng.normal(size=5000).round(6).astype(str)})
    frame.loc[3, "y"] = "007"  # a cell whose text a type inference would change
    path = tmp_path / "people.csv"
    frame.to_csv(path, index=False)
    return path


def _read(path):
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def test_every_record_goes_to_one_side_in_order_with_its_text(table, tmp_path, capsys,
                                                             monkeypatch):
    monkeypatch.setattr(split_module, "CHUNK_ROWS", 700)  # several chunks
    assert main(["split", str(table), "--holdout", "0.3", "--seed", "4"]) == 0
    out = capsys.readouterr()
    train, holdout = _read(tmp_path / "people-train.csv"), _read(tmp_path / "people-holdout.csv")
    original = _read(table)
    both = pd.concat([train, holdout]).sort_values("id", key=lambda c: c.astype(int))
    pd.testing.assert_frame_equal(both.reset_index(drop=True), original)
    for part in (train, holdout):  # each keeps the file's order
        assert part["id"].astype(int).is_monotonic_increasing
    assert "007" in set(original["y"]) and original.loc[3, "y"] == "007"
    # each record to the holdout with probability 0.3: a binomial count
    assert stats.binomtest(len(holdout), len(original), 0.3).pvalue > 1e-3
    # nothing data-dependent is printed: no count
    assert str(len(holdout)) not in out.out + out.err
    assert "probability 0.3" in out.err


def test_a_seed_repeats_the_split_and_none_draws_a_fresh_one(table, tmp_path, capsys):
    def holdout_ids(*options):
        out = tmp_path / "h.csv"
        assert main(["split", str(table), "--holdout-out", str(out), "--train",
                     str(tmp_path / "t.csv"), "--force", *options]) == 0
        return list(_read(out)["id"])

    assert holdout_ids("--seed", "1") == holdout_ids("--seed", "1")
    assert holdout_ids("--seed", "1") != holdout_ids("--seed", "2")
    assert holdout_ids() != holdout_ids()


def test_compressed_and_parquet_outputs(table, tmp_path):
    pytest.importorskip("pyarrow")
    train, holdout = tmp_path / "a.csv.gz", tmp_path / "b.parquet"
    assert main(["split", str(table), "--seed", "0", "--train", str(train),
                 "--holdout-out", str(holdout)]) == 0
    with gzip.open(train, "rt") as handle:
        first = pd.read_csv(handle, dtype=str, keep_default_na=False)
    second = pd.read_parquet(holdout)
    assert len(first) + len(second) == 5000
    assert set(first["id"]).isdisjoint(second["id"])


@pytest.mark.parametrize(("options", "needle"), [
    (["--holdout", "0"], "--holdout is the holdout's share"),
    (["--holdout", "1.5"], "--holdout is the holdout's share"),
    (["--train", "{data}"], "is one of the inputs"),
])
def test_bad_options_fail_in_one_line_before_reading(table, capsys, options, needle):
    options = [o.format(data=table) for o in options]
    assert main(["split", str(table), *options]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("dpgm: error:") and needle in err[-1], err


def test_existing_outputs_are_kept_without_force(table, tmp_path, capsys):
    (tmp_path / "people-train.csv").write_text("keep me")
    assert main(["split", str(table)]) == 2
    assert "exists" in capsys.readouterr().err
    assert (tmp_path / "people-train.csv").read_text() == "keep me"
    assert not (tmp_path / "people-holdout.csv").exists()
