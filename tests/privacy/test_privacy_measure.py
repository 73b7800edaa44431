"""Noisy marginals: noise scales, budget charges, reproducibility, refusals."""

import math

import numpy as np
import pytest

import dpgm
from dpgm.errors import BudgetExceededError, DataError, DomainError, PrivacyParameterError
from dpgm.measurement import Measurement
from dpgm.privacy import PrivacyBudget, gaussian_sigma, laplace_scale, measure_marginals

DOMAIN = dpgm.Domain.from_dict({"a": 2, "b": 3, "c": 4})


def make_data(n=500, seed=0, weights=None):
    gen = np.random.default_rng(seed)
    records = np.column_stack([gen.integers(0, s, n) for s in DOMAIN.shape])
    return dpgm.Dataset(records, DOMAIN, weights)


class Untouchable(dpgm.Dataset):
    """A dataset that fails the test if its marginals are read."""

    def marginal(self, attrs):
        raise AssertionError("the data were read")


def untouchable():
    return Untouchable(make_data().records, DOMAIN)


def test_scale_helpers():
    assert laplace_scale(2.0) == 0.5
    assert laplace_scale(1.0, 3) == 3.0
    assert gaussian_sigma(0.5) == 1.0
    assert gaussian_sigma(1.0, 8) == 2.0
    with pytest.raises(PrivacyParameterError):
        laplace_scale(0.0, 2)
    with pytest.raises(ValueError, match="k must be"):
        gaussian_sigma(1.0, 0)


def test_laplace_measurements():
    data = make_data()
    cliques = [("a", "b"), ("c",), ("b", "a", "c")]
    ms = measure_marginals(data, cliques, epsilon=1.5, rng=0)
    assert all(isinstance(m, Measurement) for m in ms)
    assert [m.clique for m in ms] == cliques
    assert [m.values.shape for m in ms] == [(6,), (4,), (24,)]
    assert all(m.query is None for m in ms)
    assert all(m.std == pytest.approx(math.sqrt(2) * 3 / 1.5) for m in ms)
    for m in ms:
        m.validate(DOMAIN)
        assert not np.allclose(m.values, data.marginal(m.clique).ravel())


def test_gaussian_measurements():
    ms = measure_marginals(make_data(), [("a",), ("b", "c")], rho=0.25, rng=0)
    assert [m.values.shape for m in ms] == [(2,), (12,)]
    assert all(m.std == pytest.approx(math.sqrt(2 / (2 * 0.25))) for m in ms)


@pytest.mark.parametrize("kind", ["epsilon", "rho"])
def test_noise_has_the_reported_std(kind):
    # 20k cells of one marginal, seeded. The sample std's relative SE is 0.8% (Laplace) or
    # 0.5% (Gaussian); an 8% tolerance is >= 10 SE (false alarm < 1e-20; the seed fixes the
    # outcome anyway) and would still catch a std 30% off.
    domain = dpgm.Domain.from_dict({"x": 20_000})
    data = dpgm.Dataset(np.arange(20_000).reshape(-1, 1) % 997, domain)
    (m,) = measure_marginals(data, [("x",)], **{kind: 0.7}, rng=3)
    noise = m.values - data.marginal(("x",)).ravel()
    assert np.std(noise) / m.std == pytest.approx(1.0, abs=0.08)


def test_reproducible_for_the_same_seed():
    data = make_data()
    cliques = [("a", "b"), ("c",)]
    for kw in ({"epsilon": 1.0}, {"rho": 0.5}):
        first = measure_marginals(data, cliques, rng=42, **kw)
        again = measure_marginals(data, cliques, rng=np.random.default_rng(42), **kw)
        other = measure_marginals(data, cliques, rng=43, **kw)
        for x, y, z in zip(first, again, other, strict=True):
            np.testing.assert_array_equal(x.values, y.values)
            assert not np.array_equal(x.values, z.values)


def test_exact_noise_without_seed():
    data = make_data()
    for kw in ({"epsilon": 1.0}, {"rho": 0.5}):
        ms = measure_marginals(data, [("a", "b")], **kw)
        # integer counts get integer-valued (discrete) noise
        assert np.all(ms[0].values == np.round(ms[0].values))
    weighted = make_data(weights=np.full(500, 0.5))
    (m,) = measure_marginals(weighted, [("c",)], rho=1.0)
    assert m.values.shape == (4,)


def test_budget_is_charged_exactly():
    data = make_data()
    pure = PrivacyBudget(epsilon=2.0)
    measure_marginals(data, [("a",), ("b",)], epsilon=0.5, budget=pure, rng=0, label="one-way")
    assert pure.spent_epsilon == 0.5
    assert [(e.label, e.epsilon) for e in pure.ledger] == [("one-way", 0.5)]

    zcdp = PrivacyBudget(rho=1.0)
    measure_marginals(data, [("a", "c")], rho=0.3, budget=zcdp, rng=0)
    assert zcdp.spent_rho == 0.3
    assert zcdp.ledger[0].label  # a default label is recorded
    measure_marginals(data, [("a", "c")], epsilon=0.4, budget=zcdp, rng=0)
    assert zcdp.spent_rho == pytest.approx(0.3 + 0.4**2 / 2)


def test_overspend_touches_nothing():
    budget = PrivacyBudget(epsilon=1.0)
    budget.charge(epsilon=0.8)
    with pytest.raises(BudgetExceededError):
        measure_marginals(untouchable(), [("a",)], epsilon=0.5, budget=budget)
    assert budget.spent_epsilon == pytest.approx(0.8)
    with pytest.raises(PrivacyParameterError, match="pure"):
        measure_marginals(untouchable(), [("a",)], rho=0.01, budget=budget)
    assert len(budget.ledger) == 1


@pytest.mark.parametrize("kind", ["epsilon", "rho"])
def test_uneven_weights_spend_exactly_the_budget(kind):
    total = 0.9
    weights = [1.0, 3.0, 0.5]
    budget = PrivacyBudget(**{kind: 2.0})
    ms = measure_marginals(
        make_data(),
        [("a",), ("b",), ("a", "c")],
        **{kind: total},
        weights=weights,
        budget=budget,
        rng=0,
    )
    shares = np.array(weights) / sum(weights)
    if kind == "epsilon":
        scales = [m.std / math.sqrt(2) for m in ms]
        np.testing.assert_allclose(scales, 1 / (total * shares))
        assert sum(1 / b for b in scales) == pytest.approx(total)  # sequential composition
        assert budget.spent_epsilon == total
    else:
        np.testing.assert_allclose([m.std for m in ms], 1 / np.sqrt(2 * total * shares))
        assert sum(1 / (2 * m.std**2) for m in ms) == pytest.approx(total)  # zCDP adds up
        assert budget.spent_rho == total
    # more weight, less noise
    assert ms[1].std < ms[0].std < ms[2].std


def test_equal_weights_match_the_default():
    data = make_data()
    a = measure_marginals(data, [("a",), ("b",)], rho=0.2, rng=1)
    b = measure_marginals(data, [("a",), ("b",)], rho=0.2, rng=1, weights=[2.0, 2.0])
    assert [m.std for m in a] == pytest.approx([m.std for m in b])


@pytest.mark.parametrize(
    ("kwargs", "error", "fragment"),
    [
        ({}, PrivacyParameterError, "exactly one"),
        ({"epsilon": 1.0, "rho": 1.0}, PrivacyParameterError, "exactly one"),
        ({"epsilon": 0.0}, PrivacyParameterError, "epsilon must be > 0"),
        ({"epsilon": -1.0}, PrivacyParameterError, "epsilon must be > 0"),
        ({"epsilon": math.nan}, PrivacyParameterError, "epsilon"),
        ({"rho": 0.0}, PrivacyParameterError, "rho must be > 0"),
        ({"rho": math.nan}, PrivacyParameterError, "rho"),
        ({"rho": 1.0, "weights": [1.0]}, PrivacyParameterError, "one entry per clique"),
        ({"rho": 1.0, "weights": [1.0, 0.0]}, PrivacyParameterError, "weights"),
        ({"rho": 1.0, "weights": [1.0, math.nan]}, PrivacyParameterError, "weights"),
    ],
)
def test_bad_parameters(kwargs, error, fragment):
    budget = PrivacyBudget(rho=10.0)
    with pytest.raises(error, match=fragment):
        measure_marginals(untouchable(), [("a",), ("b",)], budget=budget, **kwargs)
    assert budget.ledger == []


def test_bad_cliques_and_data():
    budget = PrivacyBudget(epsilon=10.0)
    with pytest.raises(DomainError, match="unknown attribute"):
        measure_marginals(untouchable(), [("a", "zzz")], epsilon=1.0, budget=budget)
    with pytest.raises(ValueError, match="no cliques"):
        measure_marginals(untouchable(), [], epsilon=1.0, budget=budget)
    with pytest.raises(ValueError, match="attribute tuples"):
        measure_marginals(untouchable(), "ab", epsilon=1.0, budget=budget)
    heavy = make_data(weights=np.r_[np.full(499, 1.0), 2.0])
    with pytest.raises(DataError, match="at most 1"):
        measure_marginals(heavy, [("a",)], epsilon=1.0, budget=budget)
    with pytest.raises(DataError, match="Dataset"):
        measure_marginals(np.zeros((3, 3)), [("a",)], epsilon=1.0, budget=budget)
    assert budget.ledger == []
    # weights in [0, 1] are fine
    light = make_data(weights=np.linspace(0, 1, 500))
    (m,) = measure_marginals(light, [("a",)], epsilon=1.0, budget=budget, rng=0)
    assert m.values.shape == (2,)
