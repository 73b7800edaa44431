"""RecordsModel: the empirical distribution of fitted synthetic records."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest

import dpgm
from dpgm import Domain
from dpgm.errors import DataError
from dpgm.models import RecordsModel
from dpgm.models.files import ModelFileError

DOMAIN = Domain(["a", "b", "c"], [2, 3, 2])
RECORDS = np.array([[0, 1, 0], [1, 2, 1], [1, 2, 0], [0, 0, 1], [1, 2, 1], [0, 1, 1]])


def model(total: float = 12.0) -> RecordsModel:
    return RecordsModel(DOMAIN, RECORDS, total)


def test_a_marginal_is_the_records_counts_scaled_to_the_total():
    brute = np.zeros((3, 2))
    for record in RECORDS:
        brute[record[1], record[2]] += 1
    np.testing.assert_allclose(model().marginal(["b", "c"]), brute * 2.0)
    np.testing.assert_allclose(model().marginal(["c", "b"]), brute.T * 2.0)
    assert RecordsModel(DOMAIN, RECORDS).total == len(RECORDS)


def test_a_conditional_marginal_counts_the_records_that_agree():
    # b = 2: the records 1, 2 and 4, whose a is 1, 1, 1 and c is 1, 0, 1
    np.testing.assert_allclose(model().marginal(["c"], given={"b": 2}), [4.0, 8.0])
    # b in {0, 1}: the records 0, 3 and 5, all with a = 0, and c = 0, 1, 1
    np.testing.assert_allclose(model().probabilities(["a", "c"], given={"b": [0, 1]}),
                               np.array([[1.0, 2.0], [0.0, 0.0]]) / 3)
    with pytest.raises(DataError, match="probability zero"):
        model().marginal(["a"], given={"b": 0, "c": 0})


def test_records_are_dealt_out_evenly_and_follow_the_evidence():
    drawn = model().synthetic_data(15, rng=0).records
    assert drawn.shape == (15, 3)
    counts = {tuple(r): 0 for r in RECORDS}
    for r in drawn:
        counts[tuple(r)] += 1
    # 15 = 2 whole copies of 6 records and 3 more: each distinct record's count lies in
    # [copies · 2, copies · 3]
    for record, count in counts.items():
        copies = sum(tuple(r) == record for r in RECORDS)
        assert 2 * copies <= count <= 3 * copies
    given = model().synthetic_data(7, rng=1, given={"b": 2}).records
    assert np.all(given[:, 1] == 2)
    assert np.array_equal(model().synthetic_data(9, rng=4).records,
                          model().synthetic_data(9, rng=4).records)
    assert model().synthetic_data(0, rng=0).records.shape == (0, 3)


def test_the_most_probable_record_is_the_most_frequent_one():
    assert model().map_query() == {"a": 1, "b": 2, "c": 1}
    assert model().map_query(given={"a": 0}) in ({"b": 1, "c": 0}, {"b": 0, "c": 1},
                                                 {"b": 1, "c": 1})


def test_codes_outside_the_domain_are_refused_in_memory_and_in_a_file(tmp_path):
    with pytest.raises(DataError):
        RecordsModel(DOMAIN, np.array([[0, 3, 0]]))
    path = tmp_path / "m.dpgm"
    model().save(path)
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    bad = np.load(io.BytesIO(members["arrays/records.npy"]))
    bad[0, 1] = 7
    buffer = io.BytesIO()
    np.save(buffer, bad)
    members["arrays/records.npy"] = buffer.getvalue()
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    with pytest.raises(ModelFileError, match="outside the domain"):
        dpgm.load(path)
