"""The bundled example data (dpgm.datasets)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from dpgm import Dataset, Domain
from dpgm.datasets import load, load_adult, paths

ADULT_SIZES = {
    "age": 85,
    "workclass": 9,
    "fnlwgt": 100,
    "education-num": 16,
    "marital-status": 7,
    "occupation": 15,
    "relationship": 6,
    "race": 5,
    "sex": 2,
    "capital-gain": 100,
    "capital-loss": 100,
    "hours-per-week": 99,
    "native-country": 42,
    "income>50K": 2,
}
SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "adult"  # ../shared


@pytest.fixture(scope="module")
def adult() -> Dataset:
    return load_adult()


def test_adult_shape_and_domain(adult):
    assert isinstance(adult, Dataset)
    assert len(adult) == 48842
    assert adult.records.shape == (48842, 14)
    assert adult.domain.to_dict() == ADULT_SIZES
    assert list(adult.domain.attrs) == list(ADULT_SIZES)  # column order too
    assert adult.weights is None
    assert (adult.records >= 0).all()
    assert (adult.records < np.array(adult.domain.shape)).all()


def test_adult_domain_matches_bundled_and_shared_json():
    csv, domain_path = paths("adult")
    assert csv.is_file() and domain_path.is_file()
    assert csv.name.endswith(".csv.gz")
    assert Domain.load(domain_path).to_dict() == ADULT_SIZES
    shared = SHARED / "adult-domain.json"
    if not shared.is_file():
        pytest.skip(f"{shared} not available")
    with open(shared) as fh:
        assert json.load(fh) == ADULT_SIZES


def test_adult_records_match_shared_csv(adult):
    shared = SHARED / "adult.csv"
    if not shared.is_file():
        pytest.skip(f"{shared} not available")
    reference = Dataset.load(shared, adult.domain)
    np.testing.assert_array_equal(adult.records, reference.records)


def test_load_by_name_equals_load_adult(adult):
    np.testing.assert_array_equal(load("adult").records, adult.records)


@pytest.mark.parametrize("name", ["nope", "Adult", "adult.csv", ""])
def test_unknown_name_raises(name):
    with pytest.raises(ValueError, match="no bundled data set"):
        paths(name)
    with pytest.raises(ValueError, match="available: \\['adult'\\]"):
        load(name)


def test_the_shipped_pairs_workload_lists_the_benchmark_pairs():
    from importlib import resources

    from dpgm.datasets import ADULT_PAIRS
    from dpgm.workload import Workload

    workload = Workload.load(resources.files("dpgm.datasets") / "adult-pairs.json")
    assert workload.check(load("adult").domain).cliques == [
        load("adult").domain.canonical(p) for p in ADULT_PAIRS
    ]


def test_the_diamonds_table_and_its_schema():
    """The demo's table: 53,940 raw rows, every value read by the public schema (its grades
    are the GIA ones: no value falls outside them), its bins left to learn."""
    import json

    from dpgm.datasets import diamonds_paths, load_diamonds
    from dpgm.discover import numeric_questions, stand_in

    frame = load_diamonds()
    assert frame.shape == (53_940, 10)
    spec = json.loads(diamonds_paths()[1].read_text())
    asked = numeric_questions(spec)
    assert {what for _, what in asked} == {"edges"} and len(asked) == 7
    stand_in(spec, asked).encode(frame)  # every label known, every number read
