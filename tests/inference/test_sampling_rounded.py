"""Rounded sampling (``model.synthetic_data`` / ``model.sample(method="rounded")``).

Rounded sampling draws the records clique by clique along the junction tree; for every
value ``s`` of a clique's separator (the attributes drawn before it), the counts of the
clique's new attributes among the ``n_s`` records with ``s`` are ``n_s · q(x | s)`` rounded
up or down (a systematic sample decides which). Hence every conditional count is within
one of its expectation, and every marginal count is unbiased.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest
from brute_force import chi_square_pvalue, marginal, random_model
from scipy import stats

N = 2000
MODEL_SEEDS = [0, 1, 6, 7]


def _one_way_deviation(model, sample) -> float:
    """Largest |count − n·p| over the one-way marginals of every attribute."""
    worst = 0.0
    for attr in model.domain:
        expected = len(sample) * model.marginal([attr]) / model.total
        worst = max(worst, float(np.abs(sample.marginal([attr]) - expected).max()))
    return worst


def _rms_deviation(model, sample) -> float:
    """Root mean square of count − n·p over all cells of all one-way marginals."""
    errs = []
    for attr in model.domain:
        expected = len(sample) * model.marginal([attr]) / model.total
        errs.append(sample.marginal([attr]) - expected)
    return float(np.sqrt(np.mean(np.concatenate(errs) ** 2)))


def _separator_cells(model) -> int:
    """Number of separator values summed over the junction tree's non-root cliques."""
    tree, domain, done, cells = model.tree, model.domain, set(), 0
    for i in tree.order:
        sep = [a for a in tree.cliques[i] if a in done]
        if sep:
            cells += domain.size(sep)
        done.update(tree.cliques[i])
    return cells


@pytest.mark.parametrize("n", [0, 1, 7, N, 2 * N + 3])
@pytest.mark.parametrize("seed", [0, 3])
def test_rounded_returns_exactly_n_records_in_domain(seed, n):
    domain, _, model, _, _ = random_model(seed, total=1234.5)
    data = model.sample(n, rng=seed, method="rounded")
    assert len(data) == n
    assert data.domain == domain
    assert data.records.shape == (n, len(domain))
    assert (data.records >= 0).all()
    assert (data.records < np.array(domain.shape)).all()


def test_synthetic_data_is_rounded_sampling_of_model_total():
    _, _, model, _, _ = random_model(2, total=1234.4)
    synthetic = model.synthetic_data(rng=5)
    assert len(synthetic) == 1234  # default n: the model's total, rounded
    same = model.sample(rng=5, method="rounded")
    np.testing.assert_array_equal(synthetic.records, same.records)
    assert len(model.synthetic_data(17, rng=5)) == 17


def test_rounded_seed_reproducible():
    _, _, model, _, _ = random_model(4)
    a = model.synthetic_data(N, rng=11)
    b = model.synthetic_data(N, rng=11)
    c = model.synthetic_data(N, rng=12)
    np.testing.assert_array_equal(a.records, b.records)
    assert not np.array_equal(a.records, c.records)


@pytest.mark.parametrize("seed", MODEL_SEEDS)
def test_every_conditional_count_within_one_of_expectation(seed):
    """The defining property: per separator value s, counts are n_s·q(x|s) rounded."""
    _, _, model, _, _ = random_model(seed)
    tree = model.tree
    for sample_seed in range(3):
        data = model.sample(N, rng=sample_seed, method="rounded")
        done: set[str] = set()
        for i in tree.order:
            clique = tree.cliques[i]
            sep = tuple(a for a in clique if a in done)
            rest = tuple(a for a in clique if a not in done)
            done.update(clique)
            if not rest:
                continue
            rows = model.domain.size(sep) if sep else 1
            counts = data.marginal(sep + rest).reshape(rows, -1)
            probs = model.marginal(sep + rest).reshape(rows, -1)
            with np.errstate(invalid="ignore", divide="ignore"):
                cond = probs / probs.sum(axis=1, keepdims=True)
            n_s = counts.sum(axis=1)
            cond[n_s == 0] = 0.0
            expected = n_s[:, None] * cond
            np.testing.assert_array_less(np.abs(counts - expected), 1.0 + 1e-6)
            if not sep:  # the root clique: every cell is n·p rounded
                assert np.abs(counts.ravel() - N * probs.ravel() / model.total).max() < 1 + 1e-6


@pytest.mark.parametrize("seed", MODEL_SEEDS)
def test_rounded_one_way_counts_much_closer_than_exact(seed):
    """One-way counts stay within a few units of n·p; exact sampling errs by ~sqrt(n·p)."""
    _, _, model, _, _ = random_model(seed)
    n_cliques = len(model.tree.cliques)
    # Each separator value adds at most one unit of rounding per value, so the deviation
    # grows with the number of separator cells (not just the number of cliques): on these
    # models the mean worst deviation is 2.5-5.5 and the largest about 9 (16 separator cells).
    bound = 1 + n_cliques + _separator_cells(model)
    rounded_dev, exact_dev, rounded_rms, exact_rms = [], [], [], []
    for k in range(20):
        rounded = model.sample(N, rng=k, method="rounded")
        exact = model.sample(N, rng=k, method="exact")
        rounded_dev.append(_one_way_deviation(model, rounded))
        exact_dev.append(_one_way_deviation(model, exact))
        rounded_rms.append(_rms_deviation(model, rounded))
        exact_rms.append(_rms_deviation(model, exact))
    assert max(rounded_dev) <= bound
    assert np.mean(rounded_dev) <= 1 + 1.5 * np.sqrt(_separator_cells(model))
    # typical exact errors are ~ sqrt(N·p(1−p)) ≈ 15–20; rounded are a few units
    assert np.mean(rounded_rms) < np.mean(exact_rms) / 5
    assert np.mean(rounded_dev) < np.mean(exact_dev) / 3


@pytest.mark.parametrize("seed", [0, 7])
def test_rounded_counts_unbiased(seed):
    """The mean over R samples of every one- and two-way count equals n·p.

    Per cell a t statistic (count mean − n·p) / (s/√R); with a Bonferroni correction over
    all cells, the false-alarm rate of the whole test is at most 1e-3 per model.
    """
    _, _, model, _, _ = random_model(seed)
    domain = model.domain
    repeats = 300
    cliques = [(a,) for a in domain] + list(combinations(domain.attrs, 2))
    draws = {c: [] for c in cliques}
    for k in range(repeats):
        data = model.sample(N, rng=1000 + k, method="rounded")
        for c in cliques:
            draws[c].append(data.marginal(c).ravel())
    n_cells = sum(domain.size(c) for c in cliques)
    alpha = 1e-3
    critical = stats.t.ppf(1 - alpha / (2 * n_cells), df=repeats - 1)
    for c in cliques:
        counts = np.array(draws[c])
        expected = N * model.marginal(c).ravel() / model.total
        mean, sd = counts.mean(axis=0), counts.std(axis=0, ddof=1)
        constant = sd < 1e-12
        # a cell whose count never varies must equal its expectation (up to rounding)
        assert np.all(np.abs(mean[constant] - expected[constant]) < 1.0)
        t = (mean[~constant] - expected[~constant]) / (sd[~constant] / np.sqrt(repeats))
        assert np.abs(t).max() < critical, (c, t)


def test_rounded_never_draws_zero_probability_cells():
    domain, _, model, p, _ = random_model(5, zero_fraction=0.3)
    for k in range(5):
        data = model.sample(N, rng=k, method="rounded")
        cells = p[tuple(data.records.T)]
        assert (cells > 0).all()


def test_exact_method_still_works():
    """Exact sampling: n independent records whose joint fits the model (chi-square)."""
    domain, _, model, p, _ = random_model(1)
    data = model.sample(5000, rng=3, method="exact")
    assert len(data) == 5000
    attrs = domain.attrs[:2]
    observed = data.marginal(attrs)
    # false-alarm rate 1e-4 for this fixed seed
    assert chi_square_pvalue(observed, marginal(domain, p, attrs)) > 1e-4
    default = model.sample(50, rng=3)  # the default method is still "exact"
    np.testing.assert_array_equal(default.records, model.sample(50, rng=3, method="exact").records)


@pytest.mark.parametrize("method", ["round", "Rounded", "", None])
def test_unknown_method_raises(method):
    _, _, model, _, _ = random_model(0)
    with pytest.raises(ValueError, match="unknown sampling method"):
        model.sample(10, rng=0, method=method)


@pytest.mark.parametrize("seed", MODEL_SEEDS)
def test_chunked_rounded_sampling_keeps_its_quality(seed):
    """100,000 records in 10 chunks, each rounded on its own, against one whole sample:
    the L1 error of every 2-way marginal (mean of 3 samples) stays within a tenth of the
    error independent (exact) draws would have, the noise that rounding removes, and below
    0.4 of it; power: exact draws are far above (measured: chunked 0.09-0.28 of the exact
    draws' error, whole 0.04-0.33)."""
    from dpgm import Dataset

    domain, _, model, p, _ = random_model(seed, total=100_000.0)
    n = 100_000
    pairs = list(combinations(domain.attrs, 2))
    truth = [n * marginal(domain, p, pair) for pair in pairs]

    def error(records) -> float:
        return sum(float(np.abs(c - t).sum()) for c, t in zip(records.marginals(pairs), truth))

    # E|count - n·q| of a multinomial cell, summed over the cells
    exact = sum(float(np.sqrt(2 / np.pi * t * (1 - t / n)).sum()) for t in truth)
    chunked = np.mean([error(Dataset(np.concatenate(
        [c.records for c in model.synthetic_chunks(n, rng=s, chunk_rows=10_000)]), domain))
        for s in range(3)])
    whole = np.mean([error(model.synthetic_data(n, rng=s)) for s in range(3)])
    assert chunked < 0.4 * exact
    assert abs(chunked - whole) < 0.1 * exact
    assert error(model.sample(n, rng=seed, method="exact")) > 0.6 * exact
