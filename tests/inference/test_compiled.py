"""The compiled junction tree: every variable's marginal under evidence, against the
brute-force joint, with zeros, sets of states, factors left out and many children."""

from __future__ import annotations

import numpy as np
import pytest
from brute_force import joint, random_cliques, random_domain, random_potentials

from dpgm import Domain
from dpgm.inference.belief_propagation import _leave_one_out
from dpgm.inference.compiled import CompiledTree, ZeroProbability


def _conditioned(domain, p, evidence):
    for attr, codes in evidence.items():
        keep = np.zeros(domain[attr], dtype=bool)
        keep[codes] = True
        shape = [1] * p.ndim
        shape[domain.attrs.index(attr)] = keep.size
        p = np.where(keep.reshape(shape), p, 0.0)
    with np.errstate(invalid="ignore"):  # probability zero: nan, and the test expects so
        return p / p.sum()


def _marginal(domain, p, attr):
    axis = domain.attrs.index(attr)
    return p.sum(axis=tuple(k for k in range(p.ndim) if k != axis))


@pytest.mark.parametrize("seed", range(12))
def test_marginals_equal_brute_force(seed):
    rng = np.random.default_rng(seed)
    domain = random_domain(rng, 4, 7)
    cliques = random_cliques(rng, domain)
    logs = random_potentials(rng, domain, cliques, zero_fraction=0.15 * (seed % 2))
    tables = [np.exp(logs[c]) for c in cliques]
    compiled = CompiledTree(domain, cliques, tables)
    p, _ = joint(domain, logs)
    for _ in range(5):
        attrs = list(domain.attrs)
        given = [str(a) for a in rng.choice(attrs, int(rng.integers(0, 3)), replace=False)]
        evidence = {}
        for a in given:  # one state, or a set of them
            count = int(rng.integers(1, domain[a] + 1)) if rng.random() < 0.5 else 1
            evidence[a] = sorted(int(k) for k in rng.choice(domain[a], count, replace=False))
        conditioned = _conditioned(domain, p, evidence) if evidence else p
        if not np.isfinite(conditioned).all():
            with pytest.raises(ZeroProbability):
                compiled.marginals(attrs, evidence)
            continue
        found = compiled.marginals(attrs, evidence)
        for a in attrs:
            expected = _marginal(domain, conditioned, a)  # zero outside a's evidence
            np.testing.assert_allclose(found[a], expected, atol=1e-12)


def test_a_star_with_zeros_takes_the_prefix_and_suffix_products():
    """A hub with many leaves whose tables have zeros: the messages out of the hub cannot
    divide its belief by a leaf's message, and each leaf's marginal stays exact."""
    rng = np.random.default_rng(3)
    leaves = [f"L{i}" for i in range(7)]
    domain = Domain(["H", *leaves], [3] + [2] * 7)
    cliques = [("H", leaf) for leaf in leaves]
    tables = [rng.random((3, 2)) * (rng.random((3, 2)) > 0.3) + np.eye(3, 2) for _ in leaves]
    compiled = CompiledTree(domain, cliques, tables)
    with np.errstate(divide="ignore"):
        logs = {c: np.log(t) for c, t in zip(cliques, tables)}
    p, _ = joint(domain, logs)
    found = compiled.marginals(domain.attrs, {"L0": [1]})
    conditioned = _conditioned(domain, p, {"L0": [1]})
    for a in ["H", *leaves[1:]]:
        np.testing.assert_allclose(found[a], _marginal(domain, conditioned, a), atol=1e-12)


def test_leave_one_out_equals_the_siblings_product():
    rng = np.random.default_rng(0)
    base = rng.random((2, 3, 4))
    upward = [rng.random((2, 1, 1)), rng.random((1, 3, 1)) * [[[0], [1], [1]]],
              rng.random((1, 1, 4)), rng.random((2, 3, 1))]
    found = _leave_one_out(base, [0, 1, 2, 3], upward)
    for i in range(4):
        expected = base.copy()
        for j in range(4):
            if j != i:
                expected = expected * upward[j]
        np.testing.assert_allclose(found[i], expected, rtol=1e-14)


def test_factors_left_out_and_the_subtree_calibrated():
    """Leaving out factors the caller vouches for changes nothing it asks about; only the
    subtree that holds the rest is calibrated."""
    domain = Domain(list("ABCDE"), [2, 3, 2, 2, 3])
    rng = np.random.default_rng(5)
    cliques = [("A",), ("A", "B"), ("B", "C"), ("C", "D"), ("D", "E")]
    tables = [rng.dirichlet(np.ones(2))] + [
        rng.dirichlet(np.ones(domain[c[1]]), size=domain[c[0]]) for c in cliques[1:]
    ]  # a chain of conditionals: D and E are barren for a question about A, B, C
    compiled = CompiledTree(domain, cliques, tables)
    kept = [True, True, True, False, False]
    pruned = compiled.marginals(["A", "C"], {"B": [1]}, kept)
    whole = compiled.marginals(["A", "C"], {"B": [1]})
    for a in "AC":
        np.testing.assert_allclose(pruned[a], whole[a], atol=1e-14)


def test_a_wide_range_falls_back_to_log_space():
    domain = Domain(["A", "B"], [2, 2])
    table = np.array([[1.0, 1e-280], [1e-280, 1.0]])  # spans past exp(-600)
    compiled = CompiledTree(domain, [("A", "B")], [table])
    assert not compiled.linear
    found = compiled.marginals(["B"], {"A": [0]})
    np.testing.assert_allclose(found["B"], [1.0, 1e-280], rtol=1e-12)
