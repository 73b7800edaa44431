"""Domain: construction, validation errors, sub-domains, JSON round trip."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpgm import Domain, DomainError, DpgmError


@pytest.fixture
def domain() -> Domain:
    return Domain(["age", "sex", "income"], [5, 2, 3])


def test_basic_properties(domain):
    assert domain.attrs == ("age", "sex", "income")
    assert domain.shape == (5, 2, 3)
    assert domain["sex"] == 2
    assert len(domain) == 3
    assert list(domain) == ["age", "sex", "income"]
    assert "age" in domain and "zip" not in domain
    assert domain.size() == 30
    assert domain.size(["sex", "income"]) == 6
    assert domain.size([]) == 1
    assert domain.to_dict() == {"age": 5, "sex": 2, "income": 3}
    assert Domain.from_dict(domain.to_dict()) == domain
    assert hash(Domain.from_dict(domain.to_dict())) == hash(domain)
    assert "age: 5" in repr(domain)


def test_numpy_integer_sizes_are_accepted():
    d = Domain(["a", "b"], np.array([3, 4]))
    assert d.shape == (3, 4) and all(type(s) is int for s in d.shape)


def test_project_marginalize_canonical_axes(domain):
    assert domain.project(["income", "age"]) == Domain(["income", "age"], [3, 5])
    assert domain.marginalize(["sex"]) == Domain(["age", "income"], [5, 3])
    assert domain.canonical(["income", "age"]) == ("age", "income")
    assert domain.axes(["income", "age"]) == (2, 0)
    assert domain.check("sex") == ("sex",)


def test_merge_intersects_contains(domain):
    other = Domain(["income", "zip"], [3, 7])
    merged = domain.merge(other)
    assert merged.attrs == ("age", "sex", "income", "zip")
    assert merged["zip"] == 7
    assert domain.intersects(other)
    assert not domain.intersects(Domain(["zip"], [7]))
    assert merged.contains(domain) and not domain.contains(merged)
    assert domain.contains(["age", "sex"])


def test_merge_conflicting_sizes(domain):
    with pytest.raises(DomainError, match=r"'income'.*3.*4"):
        domain.merge(Domain(["income"], [4]))


@pytest.mark.parametrize("method", ["project", "marginalize", "canonical", "axes", "check", "size"])
def test_unknown_attribute_is_named(domain, method):
    with pytest.raises(DomainError, match="zip") as info:
        getattr(domain, method)(["age", "zip"])
    assert isinstance(info.value, DpgmError) and isinstance(info.value, ValueError)
    assert "age" in str(info.value)  # lists the attributes the domain does have


def test_getitem_unknown_attribute(domain):
    with pytest.raises(DomainError, match="'zip'"):
        domain["zip"]


def test_repeated_attribute_in_query(domain):
    with pytest.raises(DomainError, match="twice"):
        domain.project(["age", "age"])


@pytest.mark.parametrize("size", [0, -1, 2.5, True, None, float("nan"), "x", "3", float("inf")])
def test_invalid_size_names_attribute_and_value(size):
    with pytest.raises(DomainError) as info:
        Domain(["age", "sex"], [3, size])
    message = str(info.value)
    assert "'sex'" in message and repr(size) in message


def test_structural_errors():
    with pytest.raises(DomainError, match="2 attributes but 1 sizes"):
        Domain(["a", "b"], [2])
    with pytest.raises(DomainError, match="duplicate.*'a'"):
        Domain(["a", "b", "a"], [2, 2, 2])
    with pytest.raises(DomainError, match="non-empty strings"):
        Domain(["a", ""], [2, 2])
    with pytest.raises(DomainError, match="non-empty strings"):
        Domain(["a", 3], [2, 2])


def test_save_load_round_trip(tmp_path, domain):
    path = tmp_path / "domain.json"
    domain.save(path)
    assert json.loads(path.read_text()) == {"age": 5, "sex": 2, "income": 3}
    assert Domain.load(path) == domain


@pytest.mark.parametrize(
    ("content", "pattern"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "JSON object"),
        ('{"a": 0}', "'a' has size 0"),
        ('{"a": null}', "'a' has size None"),
        ('{"a": "three"}', "'a' has size 'three'"),
    ],
)
def test_load_bad_json(tmp_path, content, pattern):
    path = tmp_path / "domain.json"
    path.write_text(content)
    with pytest.raises(DomainError, match=pattern):
        Domain.load(path)


def test_labels_travel_with_projections_and_files(tmp_path):
    from dpgm.errors import DomainError

    domain = Domain(["a", "b"], [2, 3], labels={"b": ["x", "y", None]})
    assert domain.project(["b"]).labels == {"b": ("x", "y", None)}
    assert domain.marginalize(["b"]).labels == {}
    assert domain == Domain(["a", "b"], [2, 3])  # the integer view
    assert domain.code("b", "y") == 1 and domain.code("b", None) == 2
    assert domain.code("a", 1) == 1 and domain.code("a", "1") == 1
    assert domain.label("b", 0) == "x" and domain.label("a", 1) == 1
    with pytest.raises(DomainError, match="not a label"):
        domain.code("b", "q")
    with pytest.raises(DomainError, match="outside"):
        domain.code("a", 2)
    path = tmp_path / "domain.json"
    domain.save(path)
    loaded = Domain.load(path)
    assert loaded.labels == domain.labels and loaded.shape == (2, 3)
    with pytest.raises(DomainError, match="labels"):
        Domain(["a"], [2], labels={"a": ["x"]})
    with pytest.raises(DomainError, match="twice"):
        Domain(["a"], [2], labels={"a": ["x", "x"]})
    with pytest.raises(DomainError, match="different labels"):
        domain.merge(Domain(["b"], [3], labels={"b": ["p", "q", "r"]}))
    assert Domain(["a"], [2], labels={"a": [True, 1]}).code("a", 1) == 1  # 1 is not True
