"""Utility metrics: total variation distance between marginals (dpgm.evaluation)."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest

from dpgm import Dataset, Domain, DomainError, MarkovRandomField
from dpgm.evaluation import kl_divergence, marginal_errors, mean_tv, tv_distance


def _random_data(seed: int, n: int, domain: Domain) -> Dataset:
    rng = np.random.default_rng(seed)
    records = np.column_stack([rng.integers(0, s, size=n) for s in domain.shape])
    return Dataset(records, domain)


DOMAIN = Domain(["q", "w", "e", "r", "t"], [2, 3, 4, 2, 5])


# -- tv_distance -------------------------------------------------------------------------
def test_identical_tables_have_zero_distance():
    p = np.array([[3.0, 1.0], [0.0, 6.0]])
    assert tv_distance(p, p) == 0.0
    assert tv_distance(p, 10 * p) == pytest.approx(0.0, abs=1e-15)  # counts are normalised


def test_disjoint_supports_have_distance_one():
    assert tv_distance([1.0, 0.0, 0.0], [0.0, 2.0, 5.0]) == pytest.approx(1.0)
    assert tv_distance(np.eye(3)[0], np.eye(3)[2] * 7) == pytest.approx(1.0)


def test_closed_form_values():
    # p = (.5, .5, 0), q = (.25, .25, .5): TV = ½(.25 + .25 + .5) = .5
    assert tv_distance([2, 2, 0], [1, 1, 2]) == pytest.approx(0.5)
    # p = (.7, .3), q = (.4, .6): TV = .3 (scaled tables give the same)
    assert tv_distance([7, 3], [4, 6]) == pytest.approx(0.3)
    assert tv_distance([70, 30], [0.4, 0.6]) == pytest.approx(0.3)
    # symmetric, in [0, 1], shape-agnostic (tables are flattened)
    rng = np.random.default_rng(0)
    p, q = rng.random((3, 4)), rng.random(12)
    assert tv_distance(p, q) == pytest.approx(tv_distance(q, p))
    assert 0 <= tv_distance(p, q) <= 1
    assert tv_distance(p, q) == pytest.approx(0.5 * np.abs(p.ravel() / p.sum() - q / q.sum()).sum())


def test_empty_table_raises():
    with pytest.raises(ValueError, match="empty"):
        tv_distance([0.0, 0.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="empty"):
        tv_distance([1.0], [0.0])


# -- mean_tv / marginal_errors -----------------------------------------------------------
@pytest.mark.parametrize("ways", [1, 2, 3])
def test_mean_tv_equals_brute_force(ways):
    real = _random_data(0, 500, DOMAIN)
    synthetic = _random_data(1, 300, DOMAIN)
    errors = []
    for attrs in combinations(DOMAIN.attrs, ways):
        cols = [DOMAIN.attrs.index(a) for a in attrs]
        shape = [DOMAIN[a] for a in attrs]
        p = np.zeros(shape)
        q = np.zeros(shape)
        for row in real.records[:, cols]:
            p[tuple(row)] += 1
        for row in synthetic.records[:, cols]:
            q[tuple(row)] += 1
        errors.append(0.5 * np.abs(p / p.sum() - q / q.sum()).sum())
    assert len(errors) == len(list(combinations(range(5), ways)))
    assert mean_tv(real, synthetic, ways) == pytest.approx(np.mean(errors), rel=1e-12)


def test_mean_tv_of_identical_data_is_zero_and_of_a_copy_reordered_too():
    real = _random_data(2, 400, DOMAIN)
    shuffled = Dataset(real.records[np.random.default_rng(0).permutation(400)], DOMAIN)
    for ways in (1, 2):
        assert mean_tv(real, real, ways) == 0.0
        assert mean_tv(real, shuffled, ways) == pytest.approx(0.0, abs=1e-15)


def test_marginal_errors_accepts_a_model():
    real = _random_data(3, 400, DOMAIN)
    rng = np.random.default_rng(0)
    model = MarkovRandomField(DOMAIN, {("q", "w"): rng.normal(size=(2, 3))}, total=400)
    cliques = [("q",), ("q", "w"), ("e", "t")]
    errors = marginal_errors(real, model, cliques)
    assert list(errors) == cliques
    for c in cliques:
        assert errors[c] == pytest.approx(tv_distance(real.marginal(c), model.marginal(c)))
    assert mean_tv(real, model, 2) == pytest.approx(
        np.mean(
            [
                tv_distance(real.marginal(c), model.marginal(c))
                for c in combinations(DOMAIN.attrs, 2)
            ]
        )
    )


@pytest.mark.parametrize(
    "other",
    [
        Domain(["q", "w", "e", "r", "t"], [2, 3, 4, 2, 6]),  # a size differs
        Domain(["q", "w", "e", "r"], [2, 3, 4, 2]),  # an attribute missing
        Domain(["w", "q", "e", "r", "t"], [3, 2, 4, 2, 5]),  # another order
    ],
)
def test_domain_mismatch_raises(other):
    real = _random_data(0, 100, DOMAIN)
    synthetic = _random_data(1, 100, other)
    with pytest.raises(DomainError, match="different domains"):
        mean_tv(real, synthetic, 1)
    with pytest.raises(DomainError):
        marginal_errors(real, synthetic, [("q",)])


@pytest.mark.parametrize("seed", range(6))
def test_kl_divergence_equals_brute_force(seed):
    from brute_force import joint, random_cliques, random_model, random_potentials

    domain, _, p_model, p, _ = random_model(seed, zero_fraction=0.1 if seed % 2 else 0.0)
    rng = np.random.default_rng(100 + seed)
    other = random_potentials(rng, domain, random_cliques(rng, domain))  # other cliques
    q_model = MarkovRandomField(domain, other, total=50.0)
    q, _ = joint(domain, other)
    mask = p > 0
    expected = float(np.sum(p[mask] * np.log(p[mask] / q[mask])))
    assert kl_divergence(p_model, q_model) == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert kl_divergence(p_model, p_model) == pytest.approx(0.0, abs=1e-9)


def test_kl_divergence_is_infinite_where_q_has_no_mass():
    domain = Domain(["a", "b"], [2, 2])
    p = MarkovRandomField(domain, {("a", "b"): np.zeros((2, 2))})
    q = MarkovRandomField(domain, {("a",): np.array([0.0, -np.inf])})
    assert kl_divergence(p, q) == float("inf")
    assert np.isfinite(kl_divergence(q, p))
    with pytest.raises(DomainError, match="different domains"):
        kl_divergence(p, MarkovRandomField(Domain(["a"], [2]), {("a",): np.zeros(2)}))


def test_marginal_errors_in_small_batches_are_the_same(monkeypatch):
    """The tables are counted in batches of bounded size; the errors do not depend on it."""
    import itertools

    import dpgm.evaluation as evaluation

    rng = np.random.default_rng(5)
    domain = Domain(["a", "b", "c", "d"], [3, 4, 2, 5])
    real = Dataset(np.column_stack([rng.integers(k, size=500) for k in domain.shape]), domain)
    fake = Dataset(np.column_stack([rng.integers(k, size=300) for k in domain.shape]), domain)
    cliques = list(itertools.combinations(domain.attrs, 2))
    whole = evaluation.marginal_errors(real, fake, cliques)
    calls = []
    original = Dataset.marginals
    monkeypatch.setattr(Dataset, "marginals",
                        lambda self, cs: calls.append(len(cs)) or original(self, cs))
    monkeypatch.setattr(evaluation, "BATCH_CELLS", 12)
    assert evaluation.marginal_errors(real, fake, cliques) == whole
    assert max(calls) < len(cliques) and sum(calls) == 2 * len(cliques)
    assert whole == {c: evaluation.tv_distance(real.marginal(c), fake.marginal(c))
                     for c in cliques}
