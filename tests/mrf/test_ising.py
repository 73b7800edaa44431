"""Private Frank-Wolfe and the Ising learner (paper 001, Alg. 1-2; the note's section 6)."""

from __future__ import annotations

import numpy as np
import pytest
from mechanism_helpers import PublicOnly
from scipy.stats import chi2

from dpgm import Dataset, Domain
from dpgm.errors import BudgetExceededError, DataError, ParameterError, PrivacyParameterError
from dpgm.models import IsingModel
from dpgm.mrf import frank_wolfe, learn_ising
from dpgm.mrf.ising import spin_regressions
from dpgm.privacy import PrivacyBudget
from dpgm.privacy.frank_wolfe import FrankWolfeSelections, logistic_gradients


def tree_ising(p: int, seed: int) -> IsingModel:
    rng = np.random.default_rng(seed)
    a = np.zeros((p, p))
    for v in range(1, p):
        u = int(rng.integers(v))
        a[u, v] = a[v, u] = rng.uniform(0.3, 0.5) * rng.choice([-1, 1])
    return IsingModel(a, rng.uniform(-0.2, 0.2, p))


@pytest.fixture(scope="module")
def sample():
    model = tree_ising(6, 0)
    return model, model.sample(20_000, rng=1)


def spin_design(data):
    z = 2.0 * data.records - 1.0
    return np.column_stack([z, np.ones(len(z))]), z


def test_the_batched_gradients_are_each_nodes_logistic_gradient(sample):
    _, data = sample
    design, z = spin_design(data)
    design, z = design[:500], z[:500]
    weights = np.random.default_rng(2).normal(0, 0.3, (7, 6))
    batched = logistic_gradients(design, z, weights)
    for i in range(6):
        y = z[:, i]
        g = (-y / (1 + np.exp(y * (design @ weights[:, i]))))[:, None] * design
        np.testing.assert_allclose(batched[:, i], g.sum(axis=0), rtol=1e-10)


def test_the_ledger_is_exactly_rho_count_and_fit(sample):
    _, data = sample
    budget = PrivacyBudget(rho=0.5)
    estimate = learn_ising(data, 0.5, 1.5, rng=3, budget=budget)
    count, fit = budget.ledger
    assert count.rho == pytest.approx(0.005, rel=1e-12) and "record count" in count.label
    assert fit.rho == pytest.approx(0.495, rel=1e-12)
    assert budget.spent_rho == pytest.approx(0.5, rel=1e-12)
    assert f"{estimate.steps - 1} selections x 6 regressions" in fit.label
    given = PrivacyBudget(rho=0.5)
    learn_ising(data, 0.5, 1.5, rng=3, budget=given, steps=20, selection="laplace")
    (only,) = given.ledger  # a public T: no count
    assert only.rho == pytest.approx(0.5, rel=1e-12)


def test_with_a_huge_rho_the_private_learner_is_the_non_private_one(sample):
    _, data = sample
    private = learn_ising(data, 1e12, 1.5, rng=4, steps=40)
    exact = learn_ising(data, None, 1.5, steps=40)
    np.testing.assert_allclose(private.couplings, exact.couplings, atol=1e-12)
    np.testing.assert_allclose(private.fields, exact.fields, atol=1e-12)


def test_non_private_frank_wolfe_closes_its_duality_gap(sample):
    _, data = sample
    design, z = spin_design(data)
    radius = 3.0
    selections = FrankWolfeSelections(data, spin_regressions(6), radius=radius, steps=300,
                                      rho=None, budget=None)
    allowed = selections.allowed

    def gap(weights):  # max over vertices of <w - s, g>: bounds the excess loss
        g = logistic_gradients(design, z, weights)
        usable = np.abs(g[allowed.T, np.arange(6)]).max(axis=0)
        return (np.sum(weights * g, axis=0) + radius * usable) / len(z)

    start = gap(np.zeros((7, 6)))
    weights = frank_wolfe(selections)
    assert np.all(np.abs(weights).sum(axis=0) <= radius + 1e-12)
    assert np.all(weights[np.arange(6), np.arange(6)] == 0)  # no node predicts itself
    assert np.all(gap(weights) < 0.02 * start)


def test_the_kept_margins_are_the_iterates(sample):
    """The margins updated step by step equal ⟨w_t, x⟩ recomputed from the iterate."""
    _, data = sample
    selections = FrankWolfeSelections(data, spin_regressions(6), radius=3.0, steps=30,
                                      rho=1.0, budget=PrivacyBudget(rho=1.0), rng=8)
    frank_wolfe(selections)
    design, _ = spin_design(data)
    np.testing.assert_allclose(selections.margins, design @ selections.weights, atol=1e-5)
    with pytest.raises(BudgetExceededError, match="selections are spent"):
        selections.select()


def test_the_learner_recovers_a_tree_model(sample):
    model, data = sample
    estimate = learn_ising(data, 5.0, 1.5, rng=5)
    assert np.abs(estimate.model.A - model.A).max() < 0.1
    assert np.abs(estimate.fields - model.theta).max() < 0.1


def test_em_selections_follow_the_exponential_mechanism(sample):
    """At fixed weights, node 0's chosen vertex over many selections has the law
    P(±r e_j) ∝ exp(∓ε g_j / 2) (chi-square), and twice the ε is rejected."""
    _, data = sample
    small = Dataset(data.records[:200], data.domain)
    draws = 3000
    weights = np.random.default_rng(7).normal(0, 0.2, (7, 6))
    weights[np.arange(6), np.arange(6)] = 0.0
    design, z = spin_design(small)
    g = logistic_gradients(design, z, weights)[1:, 0]  # node 0's: x1..x5, then the bias
    scores = np.concatenate([-g, g])
    target = 3.0 / np.ptp(scores)  # an ε that spreads the law over several vertices
    selections = FrankWolfeSelections(small, spin_regressions(6), radius=3.0,
                                      steps=draws + 1, rho=draws * 6 * target**2 / 8,
                                      budget=PrivacyBudget(rho=1e9), rng=6)
    epsilon = selections.epsilon
    assert epsilon == pytest.approx(target, rel=1e-9)
    selections.start_at(weights)
    picks = []
    for _ in range(draws):
        columns, signs = selections.select()  # no move: every selection from these weights
        picks.append(columns[0] - 1 + (0 if signs[0] > 0 else 6))
    counts = np.bincount(picks, minlength=12)
    critical = chi2.isf(1e-6, df=11)
    for eps, fits in ((epsilon, True), (2 * epsilon, False)):
        law = np.exp(eps * (scores - scores.max()) / 2)
        expected = draws * law / law.sum()
        keep = expected > 5
        statistic = float(((counts[keep] - expected[keep]) ** 2 / expected[keep]).sum())
        assert (statistic < critical) == fits


def test_what_is_knowable_in_advance_fails_before_the_data_are_read():
    binary = PublicOnly(Domain(["a", "b"], [2, 2]))
    with pytest.raises(DataError, match="binary"):
        learn_ising(PublicOnly(Domain(["a", "b"], [2, 3])), 1.0, 1.0)
    with pytest.raises(PrivacyParameterError, match="zCDP"):
        learn_ising(binary, 1.0, 1.0, budget=PrivacyBudget(epsilon=1.0))
    with pytest.raises(PrivacyParameterError, match="needs steps"):
        learn_ising(binary, None, 1.0)
    with pytest.raises(BudgetExceededError):
        learn_ising(binary, 1.0, 1.0, budget=PrivacyBudget(rho=0.5), steps=5)


def test_the_steps_from_the_noisy_count_are_capped_so_a_huge_width_ends():
    """T grows like the radius^(2/3): width 1e9 asked for ~10^6 steps even on one record,
    and a width near the float limit for infinitely many. T is capped at MAX_STEPS
    (public), and a width whose radius is not finite is refused before any charge."""
    from dpgm.mrf.regressions import MAX_STEPS, steps_for

    assert steps_for(2.0, 1e4, 0.3, 0.5) < MAX_STEPS  # the usual sizes are untouched
    assert steps_for(2e9, 1.0, 0.3, 0.5) == MAX_STEPS
    assert steps_for(1e308, 1e9, 1.0, 0.5) == MAX_STEPS  # (r·n·√ρ)^(2/3) overflows
    data = Dataset(np.array([[1, 0, 1]]), Domain(["a", "b", "c"], [2, 2, 2]))
    assert learn_ising(data, 1.0, 1e9, rng=1).steps == MAX_STEPS
    budget = PrivacyBudget(rho=1.0)
    with pytest.raises(ParameterError, match="radius"):
        learn_ising(PublicOnly(Domain(["a", "b"], [2, 2])), 1.0, 1e308, budget=budget)
    assert budget.ledger == []
