"""The exponential mechanism: selection law, budget charges, parameter checks."""

import itertools
import math
import warnings

import numpy as np
import pytest
from scipy.stats import chi2

from dpgm.errors import BudgetExceededError, DpgmError, PrivacyParameterError, SeedWarning
from dpgm.privacy import PrivacyBudget, exponential, exponential_mechanism

DRAWS = 30_000
# Chi-square goodness of fit with 2 degrees of freedom (3 candidates), rejecting at a
# false-alarm rate of 1e-6 (critical value 2 ln 1e6 = 27.6). The seed fixes the outcome.
CRITICAL = chi2.isf(1e-6, df=2)


def frequencies(scores, epsilon, sensitivity, seed):
    gen = np.random.default_rng(seed)
    picks = [exponential_mechanism(scores, epsilon, sensitivity, rng=gen) for _ in range(DRAWS)]
    return np.bincount(picks, minlength=len(scores))


def chi_square(counts, scores, epsilon, sensitivity):
    weights = np.exp(epsilon * np.asarray(scores) / (2 * sensitivity))
    expected = DRAWS * weights / weights.sum()
    return float(((counts - expected) ** 2 / expected).sum())


@pytest.mark.parametrize(
    ("scores", "epsilon", "sensitivity"),
    [([0.0, 1.0, 2.0], 2.0, 1.0), ([0.0, 1.0, 2.0], 2.0, 2.0), ([5.0, 3.0, 4.5], 1.0, 0.5)],
)
def test_selection_frequencies(scores, epsilon, sensitivity):
    counts = frequencies(scores, epsilon, sensitivity, seed=2024)
    assert chi_square(counts, scores, epsilon, sensitivity) < CRITICAL
    # the same test rejects the law without the factor 2 (i.e. twice the epsilon)
    assert chi_square(counts, scores, 2 * epsilon, sensitivity) > CRITICAL


@pytest.mark.parametrize(
    ("scores", "epsilon", "sensitivity"),
    [([0.0, 1.0, 2.0], 2.0, 1.0), ([5.0, 3.0, 4.5], 1.0, 0.5)],
)
def test_repeated_draws_follow_the_same_law(scores, epsilon, sensitivity):
    picks = exponential_mechanism(scores, epsilon, sensitivity, rng=7, size=DRAWS)
    counts = np.bincount(picks, minlength=len(scores))
    assert chi_square(counts, scores, epsilon, sensitivity) < CRITICAL
    assert chi_square(counts, scores, 2 * epsilon, sensitivity) > CRITICAL


def test_repeated_draws_charge_each_draw_at_once():
    zcdp = PrivacyBudget(rho=1.0)
    picks = exponential_mechanism([1.0, 2.0, -1e300], 0.4, budget=zcdp, rng=0, size=5)
    assert picks.shape == (5,) and set(picks.tolist()) <= {0, 1}  # weight 0 never drawn
    assert zcdp.spent_rho == pytest.approx(5 * 0.4**2 / 8) and len(zcdp.ledger) == 1
    pure = PrivacyBudget(epsilon=1.0)
    with pytest.raises(BudgetExceededError):
        exponential_mechanism([1.0, 2.0], 0.4, budget=pure, rng=0, size=3)
    assert pure.spent_epsilon == 0.0  # refused whole, nothing recorded
    with pytest.raises(DpgmError, match="size"):
        exponential_mechanism([1.0, 2.0], 0.4, rng=0, size=0)


def test_large_scores_do_not_overflow():
    assert exponential_mechanism([1e6, 0.0, -1e6], 1.0, rng=0) == 0
    assert exponential_mechanism([0.0, 1e308], 10.0, rng=0) == 1


def test_charges_the_budget():
    pure = PrivacyBudget(epsilon=1.0)
    exponential_mechanism([1.0, 2.0], 0.4, budget=pure, label="pick", rng=0)
    assert pure.spent_epsilon == 0.4 and pure.ledger[0].label == "pick"

    zcdp = PrivacyBudget(rho=1.0)
    exponential_mechanism([1.0, 2.0], 0.4, budget=zcdp, rng=0)
    assert zcdp.spent_rho == pytest.approx(0.4**2 / 8)  # bounded range: eps^2 / 8

    with pytest.raises(BudgetExceededError):
        exponential_mechanism([1.0, 2.0], 0.7, budget=pure, rng=0)
    assert pure.spent_epsilon == 0.4


def test_unseeded_draws_work():
    picks = {exponential_mechanism([0.0, 0.0, 0.0], 1.0) for _ in range(200)}
    assert picks == {0, 1, 2}  # each missing from 200 fair draws with probability ~1e-35


@pytest.mark.parametrize("epsilon", [0.0, -1.0, math.nan, math.inf])
def test_bad_epsilon(epsilon):
    with pytest.raises(PrivacyParameterError, match="epsilon"):
        exponential_mechanism([1.0, 2.0], epsilon)


@pytest.mark.parametrize("scores", [[1.0, math.nan], [math.inf, 0.0], [], [[1.0, 2.0]]])
def test_bad_scores(scores):
    budget = PrivacyBudget(epsilon=1.0)
    with pytest.raises(DpgmError, match="scores"):
        exponential_mechanism(scores, 0.5, budget=budget)
    assert budget.ledger == []


def test_bad_sensitivity():
    with pytest.raises(PrivacyParameterError, match="sensitivity"):
        exponential_mechanism([1.0, 2.0], 1.0, sensitivity=0.0)


# --- the release path: OpenDP's exact sampler ------------------------------------------------
EXACT_DRAWS = 12_000


def exponential_law(scores, epsilon, sensitivity):
    weights = np.exp(epsilon * (np.asarray(scores) - max(scores)) / (2 * sensitivity))
    return weights / weights.sum()


def permute_and_flip_law(scores, epsilon, sensitivity):
    """Exact law of permute-and-flip (McKenna & Sheldon 2020), by enumerating orders."""
    flips = exponential_law(scores, 2 * epsilon, 2 * sensitivity)  # exp(eps (q - q*) / 2Δ)
    flips = flips / flips.max()
    law = np.zeros(len(scores))
    orders = list(itertools.permutations(range(len(scores))))
    for order in orders:
        reach = 1.0  # probability that every candidate before this one was flipped away
        for i in order:
            law[i] += reach * flips[i] / len(orders)
            reach *= 1 - flips[i]
    return law


def chi_square_against(counts, law):
    expected = counts.sum() * law
    return float(((counts - expected) ** 2 / expected).sum())


@pytest.mark.parametrize(
    ("scores", "epsilon", "sensitivity"), [([0.0, 1.0, 2.0], 2.0, 1.0), ([5.0, 3.0, 4.5], 1.0, 0.5)]
)
def test_exact_sampler_draws_the_exponential_mechanism_not_permute_and_flip(
    scores, epsilon, sensitivity
):
    """The law behind the zCDP charge of eps^2/8 (bounded range) is the one drawn.

    OpenDP's noisy max drew permute-and-flip under zCDP up to 0.15 while claiming eps^2/8
    (opendp/opendp#2911); permute-and-flip is eps-DP but not eps-bounded-range. This test
    would reject it: the power check below computes its exact law and the same statistic.
    """
    picks = exponential_mechanism(scores, epsilon, sensitivity, size=EXACT_DRAWS)
    counts = np.bincount(picks, minlength=len(scores))
    assert chi_square_against(counts, exponential_law(scores, epsilon, sensitivity)) < CRITICAL
    assert chi_square_against(counts, permute_and_flip_law(scores, epsilon, sensitivity)) > CRITICAL
    assert chi_square_against(counts, exponential_law(scores, 2 * epsilon, sensitivity)) > CRITICAL


def test_blocked_exact_sampler_draws_the_same_law(monkeypatch):
    """Many candidates: a block, then a candidate inside it; the product is the same law."""
    monkeypatch.setattr(exponential, "BLOCKED_ABOVE", 4)
    scores = [0.0, 2.0, -1.0, 1.5, 0.5, 3.0, -2.0, 1.0, 2.5, 0.0]  # blocks of 4, 4 and 2
    picks = exponential_mechanism(scores, 1.0, 1.0, size=EXACT_DRAWS)
    counts = np.bincount(picks, minlength=len(scores))
    law = exponential_law(scores, 1.0, 1.0)
    critical = chi2.isf(1e-6, df=len(scores) - 1)
    assert chi_square_against(counts, law) < critical
    assert chi_square_against(counts, exponential_law(scores, 2.0, 1.0)) > critical


def test_exact_sampler_charges_what_opendp_proves():
    """OpenDP's privacy map for the sampler, at the scores' sensitivity, is eps^2/8."""
    for epsilon, sensitivity in [(0.3, 1.0), (2.0, 7.5)]:
        measurement = exponential.noisy_max_measurement(2 * sensitivity / epsilon)
        assert measurement.map(sensitivity) == pytest.approx(epsilon**2 / 8, rel=1e-12)
        budget = PrivacyBudget(rho=10.0)
        exponential_mechanism([1.0, 2.0, 3.0], epsilon, sensitivity, budget=budget, size=3)
        assert budget.spent_rho >= 3 * epsilon**2 / 8
        assert budget.spent_rho == pytest.approx(3 * epsilon**2 / 8, rel=1e-12)


def test_only_seeded_draws_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exponential_mechanism([1.0, 2.0], 1.0)
    with pytest.warns(SeedWarning, match="not for a release"):
        exponential_mechanism([1.0, 2.0], 1.0, rng=0)


def row_law(scores, epsilon, sensitivity):
    weights = np.exp(epsilon * np.asarray(scores) / (2 * sensitivity))
    return weights / weights.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("seeded", [True, False])
def test_one_exponential_mechanism_per_row(seeded):
    """Each row's selections follow its own law (chi-square per row), and a law with twice
    the epsilon is rejected; the release path (OpenDP) on fewer draws."""
    from dpgm.privacy import exponential_mechanism_rows

    scores = np.array([[0.0, 1.0, 2.0], [5.0, 3.0, 4.5], [1.0, 1.0, -2.0]])
    epsilon, sensitivity = 2.0, 1.0
    draws = DRAWS // 3 if seeded else 1500
    gen = np.random.default_rng(11) if seeded else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeedWarning)
        picks = np.stack([exponential_mechanism_rows(scores, epsilon, sensitivity, rng=gen)
                          for _ in range(draws)])
    assert picks.shape == (draws, 3)
    critical = chi2.isf(1e-6, df=2)
    for row in range(3):
        counts = np.bincount(picks[:, row], minlength=3)
        for eps, fits in ((epsilon, True), (2 * epsilon, False)):
            expected = draws * row_law(scores[row:row + 1], eps, sensitivity)[0]
            statistic = float(((counts - expected) ** 2 / expected).sum())
            if fits:
                assert statistic < critical
            else:
                assert statistic > critical


def test_rows_are_charged_once_for_all_before_drawing():
    from dpgm.privacy import exponential_mechanism_rows

    zcdp = PrivacyBudget(rho=1.0)
    picks = exponential_mechanism_rows(np.zeros((7, 4)), 0.5, 2.0, rng=0, budget=zcdp,
                                       label="FW step")
    assert picks.shape == (7,)
    (entry,) = zcdp.ledger
    assert zcdp.spent_rho == pytest.approx(7 * 0.5**2 / 8) and "x7" in entry.label
    pure = PrivacyBudget(epsilon=1.0)
    with pytest.raises(BudgetExceededError):
        exponential_mechanism_rows(np.zeros((3, 2)), 0.5, rng=0, budget=pure)
    assert pure.ledger == []  # refused before anything was drawn or charged
    with pytest.raises(DpgmError, match="m x c"):
        exponential_mechanism_rows(np.zeros(3), 0.5, rng=0)
    with pytest.raises(DpgmError, match="finite"):
        exponential_mechanism_rows(np.array([[0.0, np.nan]]), 0.5, rng=0)
