"""Variable elimination in log space and (signed, rescaled) linear space."""

from __future__ import annotations

import string

import numpy as np
import pytest
from brute_force import random_domain
from scipy.special import logsumexp

from dpgm import Domain, Factor
from dpgm.inference import variable_elimination


def random_factors(rng, domain, signed=False):
    factors = []
    for _ in range(int(rng.integers(2, 6))):
        k = int(rng.integers(1, min(3, len(domain)) + 1))
        attrs = [str(a) for a in rng.choice(domain.attrs, size=k, replace=False)]
        sub = domain.project(attrs)
        values = rng.normal(size=sub.shape) if signed else rng.normal(size=sub.shape) * 3
        factors.append(Factor(sub, values))
    return factors


def dense(domain, factors, log_space):
    out = np.zeros(domain.shape) if log_space else np.ones(domain.shape)
    for f in factors:
        b = f.broadcast_shape(domain)
        out = out + b if log_space else out * b
    return out


def letters_for(domain, attrs):
    letters = string.ascii_letters[: len(domain)]
    return letters, "".join(letters[domain.attrs.index(a)] for a in attrs)


@pytest.mark.parametrize("seed", range(15))
def test_log_space_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    domain = random_domain(rng)
    factors = random_factors(rng, domain)
    mentioned = [a for a in domain.attrs if any(a in f.domain for f in factors)]
    sub = domain.project(mentioned)
    table = dense(sub, factors, log_space=True)
    for k in range(len(mentioned) + 1):
        keep = [str(a) for a in rng.permutation(mentioned)[:k]]
        result, scale = variable_elimination(factors, keep, log_space=True)
        assert scale == 0.0
        assert result.attrs == tuple(keep)
        drop = tuple(i for i, a in enumerate(sub.attrs) if a not in keep)
        expected = logsumexp(table, axis=drop) if drop else table
        kept = [a for a in sub.attrs if a in keep]
        expected = np.transpose(np.asarray(expected), [kept.index(a) for a in keep])
        np.testing.assert_allclose(result.values, expected, atol=1e-9)


@pytest.mark.parametrize("seed", range(15))
def test_linear_space_signed_factors_match_einsum(seed):
    rng = np.random.default_rng(seed)
    domain = random_domain(rng)
    factors = random_factors(rng, domain, signed=True)
    mentioned = [a for a in domain.attrs if any(a in f.domain for f in factors)]
    sub = domain.project(mentioned)
    table = dense(sub, factors, log_space=False)
    keep = [str(a) for a in rng.permutation(mentioned)[: int(rng.integers(0, 3))]]
    result, scale = variable_elimination(factors, keep, log_space=False)
    letters, out = letters_for(sub, keep)
    expected = np.einsum(f"{letters}->{out}", table)
    np.testing.assert_allclose(result.values * np.exp(scale), expected, atol=1e-9)


def test_rescaling_avoids_overflow():
    """A long chain of large factors: the linear-space answer stays finite via the scale."""
    n = 60
    domain = Domain([f"x{i}" for i in range(n)], [2] * n)
    big = np.full((2, 2), 1e10)
    factors = [Factor(domain.project([f"x{i}", f"x{i + 1}"]), big) for i in range(n - 1)]
    result, scale = variable_elimination(factors, ["x0"], log_space=False)
    assert np.all(np.isfinite(result.values))
    # sum over x1..x59 of prod 1e10 = 2^59 * 1e590 for each value of x0
    expected_log = 59 * np.log(1e10) + 59 * np.log(2)
    np.testing.assert_allclose(np.log(result.values) + scale, [expected_log] * 2)


def test_edge_cases():
    d = Domain(["a", "b"], [2, 3])
    f = Factor(d, np.arange(6.0))
    result, _ = variable_elimination([], [], log_space=True)
    assert result.values.shape == () and result.values == 0.0
    result, _ = variable_elimination([], [], log_space=False)
    assert result.values == 1.0
    result, _ = variable_elimination([f], ["b", "a"], log_space=False)
    np.testing.assert_array_equal(result.values, f.values.T)
    with pytest.raises(ValueError, match="no factor mentions"):
        variable_elimination([f], ["a", "z"], log_space=True)
