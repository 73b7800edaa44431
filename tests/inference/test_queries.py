"""Factored linear queries: every building block, answered by the model vs einsum on the joint."""

from __future__ import annotations

import itertools
import string

import numpy as np
import pytest
from brute_force import random_model

from dpgm import Domain, DomainError, MarkovRandomField
from dpgm.inference import queries

SEEDS = range(10)


def einsum_answer(domain, p, matrices):
    """``Q p`` for ``Q = ⊗ Q_a`` (other attributes summed out), by einsum on the joint."""
    letters = string.ascii_letters[: len(domain)]
    upper = string.ascii_uppercase
    operands, specs, out = [p], [letters], ""
    for k, (a, q) in enumerate(matrices.items()):
        q = np.atleast_2d(q)
        operands.append(q)
        specs.append(upper[k] + letters[domain.attrs.index(a)])
        out += upper[k]
    return np.einsum(",".join(specs) + "->" + out, *operands)


def blocks(n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Every building block of :mod:`dpgm.inference.queries` for an attribute of size ``n``."""
    values = rng.normal(size=n)
    return {
        "identity": queries.identity(n),
        "total": queries.total(n),
        "indicator": queries.indicator(n, int(rng.integers(n))),
        "set_indicator": queries.set_indicator(n, rng.choice(n, size=2, replace=False).tolist()),
        "prefix": queries.prefix(n),
        "compress": queries.compress(rng.integers(0, 2, size=n).tolist(), r=2),
        "compress_callable": queries.compress(lambda a: a // 2, n=n),
        "mean": queries.mean(n),
        "mean_values": queries.mean(n, values),
        "moments": queries.moments(n, 3),
        "moments_values": queries.moments(n, 2, values),
        "signed": rng.normal(size=(2, n)),
        "vector": rng.normal(size=n),  # a 1-d query is one row
    }


BLOCK_NAMES = list(blocks(3, np.random.default_rng(0)))


def test_building_blocks_values():
    np.testing.assert_array_equal(queries.identity(3), np.eye(3))
    np.testing.assert_array_equal(queries.total(3), [[1, 1, 1]])
    np.testing.assert_array_equal(queries.indicator(3, 1), [[0, 1, 0]])
    np.testing.assert_array_equal(queries.set_indicator(4, [0, 3]), [[1, 0, 0, 1]])
    np.testing.assert_array_equal(queries.prefix(3), [[1, 0, 0], [1, 1, 0], [1, 1, 1]])
    np.testing.assert_array_equal(queries.compress([0, 0, 1]), [[1, 1, 0], [0, 0, 1]])
    np.testing.assert_array_equal(queries.compress(lambda a: a % 2, n=3), [[1, 0, 1], [0, 1, 0]])
    np.testing.assert_array_equal(queries.compress([0, 0], r=3), [[1, 1], [0, 0], [0, 0]])
    np.testing.assert_array_equal(queries.mean(3), [[0, 1, 2]])
    np.testing.assert_array_equal(queries.moments(3, 2), [[0, 1, 2], [0, 1, 4]])
    np.testing.assert_array_equal(queries.moments(2, 2, [2.0, 3.0]), [[2, 3], [4, 9]])
    for bad in (lambda: queries.indicator(3, 3), lambda: queries.set_indicator(3, [-1])):
        with pytest.raises(ValueError, match="outside 0..2"):
            bad()
    with pytest.raises(ValueError, match="give n"):
        queries.compress(lambda a: a)


@pytest.mark.parametrize("seed", SEEDS)
def test_each_block_on_one_attribute(seed):
    domain, _, model, p, _ = random_model(seed, total=250.0)
    rng = np.random.default_rng(seed)
    a = str(rng.choice(domain.attrs))
    for name, q in blocks(domain[a], rng).items():
        got = model.answer_linear({a: q})
        expected = 250.0 * einsum_answer(domain, p, {a: q})
        np.testing.assert_allclose(got, expected, atol=1e-9, err_msg=name)


@pytest.mark.parametrize("zeros", [0.0, 0.25])
@pytest.mark.parametrize("seed", SEEDS)
def test_random_products_of_blocks(seed, zeros):
    """Queries over 1-4 attributes (in and across cliques), each with a random block."""
    domain, _, model, p, _ = random_model(seed, zeros, total=1000.0)
    rng = np.random.default_rng(1000 + seed)
    for _ in range(8):
        k = int(rng.integers(1, min(4, len(domain)) + 1))
        attrs = [str(a) for a in rng.choice(domain.attrs, size=k, replace=False)]
        matrices = {a: blocks(domain[a], rng)[str(rng.choice(BLOCK_NAMES))] for a in attrs}
        got = model.answer_linear(matrices)
        expected = 1000.0 * einsum_answer(domain, p, matrices)
        assert got.shape == expected.shape
        np.testing.assert_allclose(got, expected, atol=1e-8, rtol=1e-9)


@pytest.mark.parametrize("seed", SEEDS)
def test_identity_query_is_the_marginal(seed):
    domain, _, model, _, _ = random_model(seed, total=10.0)
    attrs = list(domain.attrs[:3])[::-1]
    got = model.answer_linear({a: queries.identity(domain[a]) for a in attrs})
    np.testing.assert_allclose(got, model.marginal(attrs), atol=1e-12)
    assert model.answer_linear({}) == pytest.approx(10.0)


def test_query_matrix_of_wrong_width():
    domain, _, model, _, _ = random_model(0)
    a = domain.attrs[0]
    with pytest.raises(DomainError, match=rf"'{a}' must have {domain[a]} columns"):
        model.answer_linear({a: np.ones((1, domain[a] + 1))})
    with pytest.raises(DomainError, match="'nope'"):
        model.answer_linear({"nope": np.ones(2)})


@pytest.mark.parametrize("seed", [2, 4, 11])
def test_queries_across_cliques_with_extreme_log_potentials(seed):
    """Log-potentials of magnitude ~1000: the clique tables' peaks disagree by more than
    exp can represent, so a query spanning several cliques must not exponentiate
    unnormalised tables (it used to return 0 or nan here)."""
    from brute_force import joint, random_cliques, random_domain, random_potentials

    from dpgm import MarkovRandomField

    rng = np.random.default_rng(seed)
    domain = random_domain(rng)
    cliques = random_cliques(rng, domain)
    potentials = {c: 400.0 * t for c, t in random_potentials(rng, domain, cliques).items()}
    model = MarkovRandomField(domain, potentials, total=3.0)
    p, _ = joint(domain, potentials)
    for a, b in itertools.combinations(domain.attrs, 2):
        matrices = {a: queries.identity(domain[a]), b: queries.prefix(domain[b])}
        got = model.answer_linear(matrices)
        assert np.all(np.isfinite(got))
        np.testing.assert_allclose(got, 3.0 * einsum_answer(domain, p, matrices), atol=1e-9)


def test_query_is_a_deprecated_alias_of_answer_linear():
    domain = Domain(["a", "b"], [2, 3])
    model = MarkovRandomField(domain, {("a", "b"): np.arange(6.0).reshape(2, 3) / 6}, 10.0)
    matrices = {"a": queries.prefix(2)}
    with pytest.warns(DeprecationWarning, match="answer_linear"):
        old = model.query(matrices)
    np.testing.assert_array_equal(old, model.answer_linear(matrices))
