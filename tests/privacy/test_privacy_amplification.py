"""Amplification by Poisson subsampling: the formula, its inverse, the sample, the ledgers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpgm import Dataset, Domain
from dpgm.errors import BudgetExceededError, PrivacyParameterError
from dpgm.privacy import PrivacyBudget, amplified_epsilon, poisson_subsample, subsample_epsilon

pytestmark = pytest.mark.filterwarnings("ignore::dpgm.errors.SeedWarning")


@pytest.mark.parametrize("target", [0.05, 0.1, 0.3, 1.0])
@pytest.mark.parametrize("beta", [0.01, 0.1, 0.5, 1.0])
def test_the_inverse_undoes_the_amplification(target, beta):  # A1
    raw = subsample_epsilon(target, beta)
    assert amplified_epsilon(raw, beta) == pytest.approx(target, rel=1e-12)
    assert raw >= target
    if beta == 1.0:
        assert raw == pytest.approx(target, rel=1e-15)


def test_values_of_the_paper_defaults():  # A1: the note's §2.4 table
    for eps_b, raw in [(1.0, 0.718673), (1.5, 0.962541), (2.0, 1.167525), (2.5, 1.345539),
                       (3.0, 1.503764)]:
        assert subsample_epsilon(0.1 * eps_b, 0.1) == pytest.approx(raw, abs=5e-7)
    # the closed form, written out
    assert amplified_epsilon(2.0, 0.25) == pytest.approx(math.log(1 + 0.25 * (math.e**2 - 1)))


@pytest.mark.parametrize("beta", [0.0, -0.1, 1.5, math.nan, "0.1"])
def test_bad_rates_are_refused(beta):
    with pytest.raises(PrivacyParameterError, match="beta"):
        amplified_epsilon(1.0, beta)


def test_subsample_size_is_binomial_and_records_are_distinct():  # A3
    m, beta = 500, 0.1
    records = np.arange(m)[:, None] % 7
    data = Dataset(np.column_stack([records, np.arange(m) % 2]), Domain(["a", "b"], [7, 2]))
    rng = np.random.default_rng(0)
    sizes = []
    for _ in range(200):
        budget = PrivacyBudget(epsilon=1e6)
        sample, _ = poisson_subsample(data, beta, budget, 0.01, rng)
        sizes.append(len(sample))
    sizes = np.array(sizes)
    # two-sided test of the mean size against Binomial(m, beta), alpha = 1e-3
    z = (sizes.mean() - m * beta) / math.sqrt(m * beta * (1 - beta) / sizes.size)
    assert abs(z) < stats.norm.ppf(1 - 5e-4)
    # the spread is binomial too (not a fixed-size sample)
    assert sizes.std() == pytest.approx(math.sqrt(m * beta * (1 - beta)), rel=0.2)
    # no record twice: tag every record with its row number and look
    tagged = Dataset(np.column_stack([np.arange(m) % 7, np.arange(m) % 2]), data.domain,
                     weights=np.linspace(0.001, 1, m))
    sample, _ = poisson_subsample(tagged, 0.5, PrivacyBudget(epsilon=1), 0.5, rng)
    assert len(np.unique(sample.weights)) == len(sample)


def test_unseeded_subsample_comes_from_the_os_and_is_binomial():
    data = Dataset(np.zeros((20_000, 1), dtype=int), Domain(["a"], [2]))
    sample, _ = poisson_subsample(data, 0.3, PrivacyBudget(epsilon=1), 0.5, None)
    assert abs(len(sample) - 6000) < 5 * math.sqrt(20_000 * 0.21)


def test_outer_is_charged_the_amplified_cost_before_reading_inner_holds_the_raw():  # A2
    class Unread(Dataset):
        records = property(lambda self: pytest.fail("records read"))

    outer = PrivacyBudget(epsilon=1.0)
    outer.charge(epsilon=0.95, label="earlier")
    data = Unread.__new__(Unread)
    data.domain = Domain(["a"], [2])
    with pytest.raises(BudgetExceededError):
        poisson_subsample(data, 0.1, outer, 0.1, 0)
    assert len(outer.ledger) == 1  # nothing recorded, nothing read

    outer = PrivacyBudget(epsilon=1.0)
    data = Dataset(np.zeros((100, 1), dtype=int), Domain(["a"], [2]))
    _, inner = poisson_subsample(data, 0.1, outer, 0.1, 0)
    assert outer.spent_epsilon == pytest.approx(0.1)
    assert inner.total == pytest.approx(subsample_epsilon(0.1, 0.1), rel=1e-12)
    assert amplified_epsilon(inner.total, 0.1) == pytest.approx(outer.ledger[0].epsilon)
    with pytest.raises(PrivacyParameterError, match="pure epsilon-DP"):
        poisson_subsample(data, 0.1, PrivacyBudget(rho=1.0), 0.1, 0)


@pytest.mark.parametrize("target", [0.9, 1.0, 1.1, 5.0, 50.0, 1e9])
def test_large_budgets_neither_overflow_nor_lose_the_inverse(target):
    for beta in (0.01, 0.1, 1.0):
        raw = subsample_epsilon(target, beta)
        assert math.isfinite(raw)
        assert amplified_epsilon(raw, beta) == pytest.approx(target, rel=1e-12)
    assert subsample_epsilon(1e9, 0.1) == pytest.approx(1e9 - math.log(0.1), rel=1e-15)
