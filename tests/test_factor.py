"""Factor: named-axis arithmetic, checked with Hypothesis on small random domains."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpgm import Domain, DomainError, Factor
from dpgm.factor import logsumexp

SIZES = {"a": 2, "b": 3, "c": 1, "d": 2, "e": 3}  # one global size per name: domains merge
SETTINGS = settings(max_examples=40, deadline=None)


@st.composite
def domains(draw, min_size: int = 0, max_size: int = 4) -> Domain:
    attrs = draw(st.permutations(list(SIZES)))[: draw(st.integers(min_size, max_size))]
    return Domain(attrs, [SIZES[a] for a in attrs])


@st.composite
def factors(draw, min_size: int = 0, max_size: int = 4, positive: bool = False) -> Factor:
    domain = draw(domains(min_size, max_size))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    values = rng.random(domain.shape) + 0.1 if positive else rng.normal(size=domain.shape)
    return Factor(domain, values)


def cell(factor: Factor, assignment: dict[str, int]) -> float:
    return float(factor.values[tuple(assignment[a] for a in factor.attrs)])


def cells(domain: Domain):
    for combo in itertools.product(*(range(s) for s in domain.shape)):
        yield dict(zip(domain.attrs, combo, strict=True))


@SETTINGS
@given(factors(), factors())
def test_product_commutes_up_to_transposition(f, g):
    fg, gf = f * g, g * f
    assert set(fg.attrs) == set(gf.attrs)
    assert fg.attrs[: len(f.attrs)] == f.attrs  # this factor's attributes first
    np.testing.assert_allclose(fg.values, gf.transpose(fg.attrs).values)
    assert fg.allclose(gf)


@SETTINGS
@given(factors(max_size=3), factors(max_size=3), factors(max_size=3))
def test_product_and_sum_are_associative(f, g, h):
    assert ((f * g) * h).allclose(f * (g * h))
    assert ((f + g) + h).allclose(f + (g + h))


@SETTINGS
@given(factors(), factors())
def test_broadcast_aligns_by_name(f, g):
    """Every cell of f op g is f and g evaluated at that cell's values of their attributes."""
    for op, fn in [("*", np.multiply), ("+", np.add), ("-", np.subtract)]:
        out = {"*": f * g, "+": f + g, "-": f - g}[op]
        assert out.domain == f.domain.merge(g.domain)
        for assignment in cells(out.domain):
            assert cell(out, assignment) == pytest.approx(
                float(fn(cell(f, assignment), cell(g, assignment)))
            )


@SETTINGS
@given(factors(positive=True), factors(positive=True))
def test_division_aligns_by_name(f, g):
    out = f / g
    for assignment in cells(out.domain):
        assert cell(out, assignment) == pytest.approx(cell(f, assignment) / cell(g, assignment))


@SETTINGS
@given(factors(min_size=2), st.data())
def test_sum_over_two_attributes_in_either_order(f, data):
    x, y = data.draw(st.permutations(list(f.attrs)))[:2]
    one = f.sum([x]).sum([y])
    two = f.sum([y]).sum([x])
    both = f.sum([x, y])
    assert one.domain == two.domain == both.domain == f.domain.marginalize([x, y])
    np.testing.assert_allclose(one.values, two.values)
    np.testing.assert_allclose(one.values, both.values)
    axes = tuple(f.attrs.index(a) for a in (x, y))
    np.testing.assert_allclose(both.values, f.values.sum(axis=axes))


@SETTINGS
@given(factors(), st.data())
def test_logsumexp_is_log_of_sum_of_exp(f, data):
    k = data.draw(st.integers(0, len(f.attrs)))
    attrs = data.draw(st.permutations(list(f.attrs)))[:k]
    expected = np.log(f.exp().sum(attrs).values)
    np.testing.assert_allclose(f.logsumexp(attrs).values, expected)
    np.testing.assert_allclose(f.logsumexp().values, np.log(np.exp(f.values).sum()))
    np.testing.assert_allclose(
        f.project(f.attrs[:1], log=True).values, np.log(f.exp().project(f.attrs[:1]).values)
    )


@SETTINGS
@given(factors(positive=True), st.data())
def test_project_expand_project(f, data):
    """Projecting an expanded projection gives the projection back, times the number of
    cells of the attributes that were added (``expand`` repeats the table along them)."""
    k = data.draw(st.integers(0, len(f.attrs)))
    attrs = data.draw(st.permutations(list(f.attrs)))[:k]
    g = f.project(attrs)
    assert g.attrs == tuple(attrs)
    expanded = g.expand(f.domain)
    assert expanded.domain == f.domain
    others = [a for a in f.attrs if a not in attrs]
    again = expanded.project(attrs)
    np.testing.assert_allclose(again.values, g.values * f.domain.size(others))
    np.testing.assert_allclose(expanded.max(others).transpose(attrs).values, g.values)
    np.testing.assert_allclose(g.values.sum(), f.values.sum())


@SETTINGS
@given(factors(positive=True), st.floats(0.5, 1000.0))
def test_normalize_sums_to_total(f, total):
    assert f.normalize(total).values.sum() == pytest.approx(total)
    logged = f.log().normalize(total, log=True)
    assert np.exp(logged.values).sum() == pytest.approx(total)
    np.testing.assert_allclose(np.exp(logged.values), f.normalize(total).values)


@SETTINGS
@given(factors(), st.data())
def test_transpose_round_trip(f, data):
    perm = data.draw(st.permutations(list(f.attrs)))
    t = f.transpose(perm)
    assert t.attrs == tuple(perm)
    assert t.allclose(f)
    np.testing.assert_array_equal(t.transpose(f.attrs).values, f.values)
    for assignment in cells(f.domain):
        assert cell(t, assignment) == cell(f, assignment)


# -- plain unit tests -------------------------------------------------------------------
def test_constructors():
    d = Domain(["a", "b"], [2, 3])
    assert Factor.zeros(d).values.sum() == 0
    assert Factor.ones(d).values.sum() == 6
    assert Factor.uniform(d).values.sum() == pytest.approx(1)
    np.testing.assert_array_equal(Factor.random(d, 3).values, Factor.random(d, 3).values)
    assert Factor(d, np.arange(6)).values.shape == (2, 3)  # flat values are reshaped
    assert Factor(Domain([], []), 2.0).values.shape == ()
    with pytest.raises(DomainError, match="do not fit"):
        Factor(d, np.zeros(5))


def test_scalar_arithmetic_and_zero_division():
    d = Domain(["a"], [3])
    f = Factor(d, [0.0, 1.0, 2.0])
    np.testing.assert_allclose((2 * f).values, [0, 2, 4])
    np.testing.assert_allclose((f + 1).values, [1, 2, 3])
    np.testing.assert_allclose((1 - f).values, [1, 0, -1])
    np.testing.assert_allclose((-f).values, [0, -1, -2])
    np.testing.assert_allclose((f / Factor(d, [0.0, 2.0, 4.0])).values, [0.0, 0.5, 0.5])
    np.testing.assert_allclose(f.log().exp().values, f.values)
    assert f.log().values[0] == -np.inf


def test_errors():
    f = Factor(Domain(["a", "b"], [2, 3]), np.ones((2, 3)))
    with pytest.raises(DomainError, match="permutation"):
        f.transpose(["a"])
    with pytest.raises(DomainError, match="not contained"):
        f.broadcast_shape(Domain(["a"], [2]))
    with pytest.raises(DomainError, match="'z'"):
        f.sum(["z"])
    with pytest.raises(DomainError, match="size 2 here and 5 there"):
        f * Factor(Domain(["a"], [5]), np.ones(5))
    assert not f.allclose(Factor(Domain(["a"], [2]), np.ones(2)))


def test_logsumexp_function_edge_cases():
    values = np.array([[-np.inf, -np.inf], [0.0, np.log(3.0)]])
    np.testing.assert_allclose(logsumexp(values, axis=1), [-np.inf, np.log(4.0)])
    assert logsumexp(values).shape == ()
    assert logsumexp(values, axis=(0, 1)) == pytest.approx(np.log(4.0))
    np.testing.assert_array_equal(logsumexp(values, axis=()), values)
    big = np.array([1000.0, 1000.0])
    assert logsumexp(big) == pytest.approx(1000 + np.log(2))
    assert logsumexp(values, axis=1, keepdims=True).shape == (2, 1)
