"""Workloads: sub-workload answers, the Sec. 5.1 error, construction and JSON."""

import json
from itertools import product

import numpy as np
import pytest

from dpgm import Dataset, Domain
from dpgm.errors import DomainError, DpgmError
from dpgm.workload import Workload, as_workload, prefix_matrix

DOMAIN = Domain.from_dict({"a": 3, "b": 4, "c": 2})


def _data(rng, n=200):
    return Dataset(np.column_stack([rng.integers(k, size=n) for k in DOMAIN.shape]), DOMAIN)


def _explicit_matrix(workload, clique):
    """W_C as a dense Kronecker product (the definition)."""
    matrix = np.ones((1, 1))
    for a in clique:
        matrix = np.kron(matrix, workload.factor(a, DOMAIN[a]))
    return matrix


def test_prefix_matrix_counts_values_up_to_each_bound():
    assert np.array_equal(prefix_matrix(3), [[1, 0, 0], [1, 1, 0], [1, 1, 1]])


def test_answers_equal_the_kronecker_product_of_the_factors():
    rng = np.random.default_rng(0)
    table = rng.random((4, 3, 2))
    workload = Workload([("b", "a", "c")], numeric=["b", "c"])
    expected = _explicit_matrix(workload, ("b", "a", "c")) @ table.ravel()
    assert np.allclose(workload.answer(("b", "a", "c"), table).ravel(), expected)


def test_query_rows_are_rows_of_the_matrix():
    workload = Workload([("a", "b")], numeric=["b"])
    matrix = _explicit_matrix(workload, ("a", "b"))
    for row, (i, j) in enumerate(product(range(3), range(4))):
        assert np.array_equal(workload.query(("a", "b"), (i, j), DOMAIN).ravel(), matrix[row])


def test_error_is_tv_for_marginals_and_zero_for_itself():
    rng = np.random.default_rng(1)
    real, other = _data(rng), _data(rng, 500)
    workload = Workload([("a", "b"), ("c",)])
    assert workload.error(real, real) == 0
    tv = [
        0.5 * np.abs(real.marginal(c) / len(real) - other.marginal(c) / len(other)).sum()
        for c in workload.cliques
    ]
    assert workload.error(real, other) == pytest.approx(np.mean(tv))


def test_error_matches_the_formula_with_prefix_queries():
    rng = np.random.default_rng(2)
    real, other = _data(rng), _data(rng)
    workload = Workload([("a", "b")], numeric=["a"])
    w = _explicit_matrix(workload, ("a", "b"))
    mu, mu_hat = real.marginal(("a", "b")).ravel(), other.marginal(("a", "b")).ravel()
    expected = np.abs(w @ mu - w @ mu_hat).sum() / (2 * np.abs(w @ mu).sum())
    assert workload.error(real, other) == pytest.approx(expected)
    # a prefix workload weighs errors differently from the plain marginal
    assert expected != pytest.approx(Workload([("a", "b")]).error(real, other))


def test_random_workload_is_seeded_distinct_and_sized():
    w1 = Workload.random(DOMAIN, count=3, size=2, rng=5)
    w2 = Workload.random(DOMAIN, count=3, size=2, rng=5)
    assert w1.cliques == w2.cliques and len(set(w1.cliques)) == 3
    assert all(len(c) == 2 for c in w1.cliques)
    with pytest.raises(DpgmError, match="only 3 subsets"):
        Workload.random(DOMAIN, count=4, size=2)


def test_json_round_trip_and_plain_lists(tmp_path):
    workload = Workload([("a", "b"), ("c",)], numeric=["a"])
    path = tmp_path / "w.json"
    workload.save(path)
    loaded = Workload.load(path)
    assert loaded.cliques == workload.cliques and loaded.numeric == workload.numeric
    path.write_text(json.dumps([["a", "b"], ["c"]]))
    assert Workload.load(path).cliques == [("a", "b"), ("c",)]
    path.write_text("{not json")
    with pytest.raises(DpgmError, match="not valid JSON"):
        Workload.load(path)
    with pytest.raises(DpgmError, match="attribute-name lists"):
        Workload.from_json([["a", 3]])


def test_bad_workloads_are_refused():
    with pytest.raises(DpgmError, match="no cliques"):
        Workload([])
    with pytest.raises(DpgmError, match="distinct"):
        Workload([("a", "a")])
    with pytest.raises(DomainError):
        Workload([("a", "zzz")]).check(DOMAIN)
    with pytest.raises(DomainError, match="numeric"):
        Workload([("a",)], numeric=["zzz"]).check(DOMAIN)


def test_as_workload_defaults_to_all_marginals():
    assert as_workload(None, DOMAIN, 2).cliques == [("a", "b"), ("a", "c"), ("b", "c")]
    assert as_workload([["c", "a"]], DOMAIN).cliques == [("c", "a")]
