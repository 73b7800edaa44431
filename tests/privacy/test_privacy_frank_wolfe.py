"""Private Frank-Wolfe's selections (paper 001, Alg. 1; the note's A1 and AC2): the exact
privacy loss of one selection on neighbouring data sets, for each selection rule."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import chi2

from dpgm import Dataset, Domain
from dpgm.errors import BudgetExceededError, PrivacyWarning
from dpgm.mrf import learn_ising
from dpgm.privacy import PrivacyBudget
from dpgm.privacy.frank_wolfe import (
    FrankWolfeSelections,
    exposure,
    feature_columns,
    feature_matrix,
    logistic_gradients,
    paper_cost,
)

SPINS = np.array([[1, 1], [-1, -1], [1, -1], [-1, 1]], dtype=np.int8)
ADDED = np.array([[1, -1]], dtype=np.int8)  # the neighbour has this record too
#: the weights (rows: spins of a and b, then the bias; columns: node 0's regression, node
#: 1's): node 0 has coupling 3 (the radius) to node 1, no bias. The added record's margin
#: is then wrong by 3, so it moves the + and - vertices' scores in opposite directions by
#: σ(3) = 0.95, near the sensitivity 1
WEIGHTS = np.array([[0.0, 0.0], [3.0, 0.0], [0.0, 0.0]])
REGRESSIONS = [(0, 1, 0), (1, 1, 0)]
DOMAIN = Domain(["a", "b"], [2, 2])


def dataset(spins: np.ndarray) -> Dataset:
    return Dataset(((spins + 1) // 2).astype(np.int64), DOMAIN)


def node0_scores(spins: np.ndarray) -> np.ndarray:
    design = np.column_stack([spins, np.ones(len(spins))])
    g = logistic_gradients(design, spins, WEIGHTS)[1:, 0]  # node 0 sees b and the bias
    return np.concatenate([-g, g])  # what select() scores: -<s, g>/r, +r e_j then -r e_j


def report_noisy_max_law(scores: np.ndarray, scale: float) -> np.ndarray:
    """P(argmax_j scores_j + Laplace(scale)_j = j), by quadrature."""
    x = np.linspace(scores.min() - 40 * scale, scores.max() + 40 * scale, 400_001)
    t = x[None, :] - scores[:, None]
    cdf = np.where(t < 0, 0.5 * np.exp(np.minimum(t, 0) / scale),
                   1 - 0.5 * np.exp(-np.maximum(t, 0) / scale))
    density = np.exp(-np.abs(t) / scale) / (2 * scale)
    law = np.array([np.sum(density[j] * np.prod(np.delete(cdf, j, axis=0), axis=0))
                    for j in range(len(scores))]) * (x[1] - x[0])
    assert law.sum() == pytest.approx(1.0, abs=1e-6)
    return law


def exponential_law(scores: np.ndarray, epsilon: float) -> np.ndarray:
    law = np.exp(epsilon * (scores - scores.max()) / 2)
    return law / law.sum()


def selections(selection: str, rho: float = 10.0, steps: int = 5):
    return FrankWolfeSelections(dataset(SPINS), REGRESSIONS, radius=3.0, steps=steps, rho=rho,
                                budget=PrivacyBudget(rho=100.0), rng=0, selection=selection)


def test_the_papers_laplace_scale_loses_more_than_it_claims_and_the_corrections_do_not():
    """One selection of node 0 at the same iterate on D and on D plus one record: the
    paper's scale (Laplace 1/ε_t, ε_t = √(ρ/(pT)) = 1 here) loses 1.8·ε_t, more than the ε_t it
    claims; report-noisy-min at scale 2/ε and the exponential mechanism lose at most
    their ε, the exponential mechanism's Rényi divergences at most a·ε²/8."""
    before, after = node0_scores(SPINS), node0_scores(np.vstack([SPINS, ADDED]))
    np.testing.assert_allclose(np.abs(after - before), 0.9525741268, rtol=1e-9)

    with pytest.warns(PrivacyWarning, match="not 10-zCDP"):
        paper = selections("paper")
    claimed = np.sqrt(10.0 / (2 * 5))  # the paper's per-step ε: √(ρ'/T), ρ' = ρ/p
    assert paper.noise_scale == pytest.approx(1 / claimed, rel=1e-12)
    loss = np.abs(np.log(report_noisy_max_law(before, paper.noise_scale))
                  - np.log(report_noisy_max_law(after, paper.noise_scale))).max()
    assert loss > 1.5 * claimed  # the paper's claim fails: this is the flagged mode
    assert loss <= paper.epsilon  # what it is charged for holds

    laplace = selections("laplace")
    loss = np.abs(np.log(report_noisy_max_law(before, laplace.noise_scale))
                  - np.log(report_noisy_max_law(after, laplace.noise_scale))).max()
    assert loss <= laplace.epsilon
    assert loss > 0.5 * laplace.epsilon  # the check is not vacuous

    em = selections("em")
    p, q = exponential_law(before, em.epsilon), exponential_law(after, em.epsilon)
    assert np.abs(np.log(p) - np.log(q)).max() <= em.epsilon
    for a in (1.5, 2.0, 4.0, 16.0, 64.0):
        for x, y in ((p, q), (q, p)):
            renyi = np.log(np.sum(x**a * y ** (1 - a))) / (a - 1)
            assert renyi <= a * em.epsilon**2 / 8 + 1e-12


def test_the_paper_mode_draws_the_law_its_loss_was_computed_for():
    """Pinned at the iterate above, the paper mode's selections of node 0 follow
    report-noisy-max with its noise_scale (chi-square); half the scale is rejected."""
    draws = 4000
    with pytest.warns(PrivacyWarning):
        chosen = FrankWolfeSelections(dataset(SPINS), REGRESSIONS, radius=3.0, steps=draws + 1,
                                      rho=2.0 * (draws + 1),  # scale 1: the scores' spread
                                      budget=PrivacyBudget(rho=4.0 * (draws + 1)), rng=1,
                                      selection="paper")
    chosen.start_at(WEIGHTS)
    picks = []
    for _ in range(draws):
        columns, signs = chosen.select()  # no move: every selection from these weights
        picks.append(columns[0] - 1 + (0 if signs[0] > 0 else 2))
    counts = np.bincount(picks, minlength=4)
    for scale, fits in ((chosen.noise_scale, True), (chosen.noise_scale / 2, False)):
        expected = draws * report_noisy_max_law(node0_scores(SPINS), scale)
        statistic = float(((counts - expected) ** 2 / expected).sum())
        assert (statistic < chi2.isf(1e-6, df=3)) == fits


def test_the_paper_mode_is_charged_its_provable_cost():
    budget = PrivacyBudget(rho=1.0)
    with pytest.warns(PrivacyWarning):
        FrankWolfeSelections(dataset(SPINS), REGRESSIONS, radius=3.0, steps=5, rho=0.2,
                             budget=budget, rng=0, selection="paper")
    (entry,) = budget.ledger
    assert entry.rho == pytest.approx(paper_cost(0.2, 5), rel=1e-12) == 0.32
    assert "claims rho=0.2" in entry.accounting


def test_the_ising_learner_with_the_papers_noise_makes_room_for_its_cost():
    data = dataset(np.tile(SPINS, (50, 1)))
    with pytest.warns(PrivacyWarning):
        estimate = learn_ising(data, 0.5, 1.0, rng=2, selection="paper")
    count, fit = estimate.budget.ledger
    assert count.rho == pytest.approx(0.005, rel=1e-12)
    assert fit.rho == pytest.approx(paper_cost(0.495, estimate.steps), rel=1e-12)
    with pytest.raises(BudgetExceededError, match="twice"):  # before the count is read
        learn_ising(data, 0.5, 1.0, rng=2, selection="paper", budget=PrivacyBudget(rho=0.5))


@pytest.mark.parametrize("features, shape, regressions", [
    ("spins", (2, 2, 2), [(i, 1, 0) for i in range(3)]),
    ("parities", (2, 2, 2, 2), [(i, 1, 0) for i in range(4)]),
    ("onehot", (3, 3, 3), [(i, u, v) for i in range(3) for u in range(3) for v in range(3)
                           if u < v]),
    ("onehot", (3, 3, 3), [(i, u, v) for i in range(3) for u in range(3) for v in range(3)
                           if u != v]),
])
def test_a_record_moves_each_score_by_at_most_one_in_at_most_its_exposure(
        features, shape, regressions):
    """For every possible record and random weights: the labels it gives are non-zero in
    at most exposure() regressions (the parallel composition charged), and its gradient
    moves every vertex's score −<s, g>/r by at most 1 (the sensitivity)."""
    columns = feature_columns(shape, features, order=3)
    records = np.array(list(itertools.product(*[range(k) for k in shape])))
    design = feature_matrix(records, columns, features)
    labels = np.array([[int(r[i] == u) - int(r[i] == v) for i, u, v in regressions]
                       for r in records], dtype=float)
    assert np.count_nonzero(labels, axis=1).max() == exposure(regressions, shape)
    weights = np.random.default_rng(3).normal(0, 2, (len(columns) + 1, len(regressions)))
    for m in range(len(records)):
        g = logistic_gradients(design[m:m + 1], labels[m:m + 1], weights)
        assert np.abs(g).max() <= 1.0
    assert np.abs(design).max() == 1.0


def test_the_noise_never_depends_on_the_number_of_records():
    """AC2c: with T given, the selections' ε and noise scale are the same for data sets of
    different sizes (no n, and no |S_uv| of the pairwise regressions, in any scale)."""
    scales = set()
    for copies in (1, 7):
        for selection in ("em", "laplace"):
            chosen = FrankWolfeSelections(dataset(np.tile(SPINS, (copies, 1))), REGRESSIONS,
                                          radius=3.0, steps=9, rho=0.3,
                                          budget=PrivacyBudget(rho=1.0), rng=0,
                                          selection=selection)
            scales.add((selection, chosen.epsilon, chosen.noise_scale))
    assert len(scales) == 2
