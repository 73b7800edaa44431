"""Naive MLE on (noisy) sufficient statistics: gradients, moment matching, projection."""

from __future__ import annotations

import numpy as np
import pytest
from brute_force import joint, marginal

from dpgm import Domain, MarkovRandomField
from dpgm.cgm import naive_mle, projected_targets
from dpgm.errors import ParameterError

DOMAIN = Domain(list("abcd"), [2, 3, 2, 2])
CLIQUES = [("a", "b"), ("b", "c"), ("c", "d"), ("a", "d")]  # a loop: a non-trivial tree


def truth(seed: int, total: float = 500.0) -> MarkovRandomField:
    rng = np.random.default_rng(seed)
    return MarkovRandomField(DOMAIN, {c: rng.normal(size=DOMAIN.project(c).shape)
                                      for c in CLIQUES}, total=total)


@pytest.mark.parametrize("seed", range(3))
def test_consistent_targets_are_matched_as_the_penalty_vanishes(seed):
    model = truth(seed)
    targets = {c: model.marginal(c) for c in CLIQUES}
    fitted = naive_mle(DOMAIN, targets, 500.0, penalty=1e-9)
    for c in CLIQUES:
        np.testing.assert_allclose(fitted.marginal(c), targets[c], atol=1e-3)
    # a larger penalty pulls the model towards uniform
    flat = naive_mle(DOMAIN, targets, 500.0, penalty=1e3)
    spread = [np.abs(flat.marginal(c) - 500.0 / flat.marginal(c).size).max() for c in CLIQUES]
    closer = [np.abs(fitted.marginal(c) - 500.0 / fitted.marginal(c).size).max()
              for c in CLIQUES]
    assert max(spread) < min(closer)


def test_the_fit_is_the_stationary_point_and_the_maximum_of_the_objective():
    """θᵀt − N A(θ) − λ‖θ‖² by brute force over the model cliques' θ."""
    rng = np.random.default_rng(4)
    targets = {c: truth(1).marginal(c) + rng.normal(0, 20, DOMAIN.project(c).shape)
               for c in CLIQUES}  # noisy: inconsistent and partly negative
    penalty, total = 0.5, 500.0
    fitted = naive_mle(DOMAIN, targets, total, penalty=penalty)

    def objective(thetas):
        _, log_z = joint(DOMAIN, thetas)
        fit = sum(float(np.sum(thetas[c] * targets[c])) for c in CLIQUES)
        return fit - total * log_z - penalty * sum(float(np.sum(v**2)) for v in thetas.values())

    # at the maximum, t − Nμ − 2λθ = 0 on every clique: θ = (t − Nμ)/(2λ) must give back
    # the fitted distribution
    p, _ = joint(DOMAIN, {c: f.values for c, f in fitted.potentials.items()})
    implied = {c: (targets[c] - total * marginal(DOMAIN, p, c)) / (2 * penalty)
               for c in CLIQUES}
    np.testing.assert_allclose(joint(DOMAIN, implied)[0], p, atol=1e-6)
    best = objective(implied)
    for _ in range(5):
        moved = {c: v + rng.normal(0, 0.05, v.shape) for c, v in implied.items()}
        assert objective(moved) < best


def test_projected_targets_are_tables_of_n_nonnegative_counts():
    rng = np.random.default_rng(0)
    noisy = {c: truth(2).marginal(c) + rng.normal(0, 50, DOMAIN.project(c).shape)
             for c in CLIQUES}
    projected = projected_targets(noisy, 500.0)
    for table in projected.values():
        assert np.all(table >= 0) and table.sum() == pytest.approx(500.0)
    naive_mle(DOMAIN, projected, 500.0, penalty=1.0)  # runs on the projected targets


def test_bad_inputs_are_refused():
    table = np.ones((2, 3))
    with pytest.raises(ParameterError, match="penalty must be > 0"):
        naive_mle(DOMAIN, {("a", "b"): table}, 10.0, penalty=0.0)
    with pytest.raises(ParameterError, match="shape"):
        naive_mle(DOMAIN, {("a", "b"): np.ones((3, 2))}, 10.0)
    with pytest.raises(ParameterError, match="at least one"):
        naive_mle(DOMAIN, {}, 10.0)
    # a clique given out of domain order is read in its own order
    fitted = naive_mle(DOMAIN, {("b", "a"): table.T * 10.0 / 6}, 10.0, penalty=1e-9)
    np.testing.assert_allclose(fitted.marginal(("b", "a")), table.T * 10.0 / 6, atol=1e-3)


def test_the_fit_is_stationary_on_very_noisy_projected_tables():
    """Zero cells from the projection drive parameters far negative, where one L-BFGS run
    stops on "no relative reduction" far from the optimum (here with max |gradient| near
    9,000 counts: the case of experiments/cgm_fig1.py that found it); the fit must not."""
    from dpgm.cgm.naive import clique_oracle, maximise_likelihood
    from dpgm.cgm.tables import flatten_tables
    from dpgm.datasets.synthetic import dirichlet_model, third_order_chain
    from dpgm.privacy import PrivacyBudget, measure_marginals

    edges = third_order_chain(10)
    model = dirichlet_model(edges, 10, rng=0)
    data = model.sample(10_000, rng=10_100)
    measured = measure_marginals(data, edges, epsilon=0.1, rng=np.random.default_rng(10_200),
                                 budget=PrivacyBudget(epsilon=0.1))
    noisy = {m.clique: m.values.reshape(10, 10) for m in measured}
    cliques, t = flatten_tables(model.domain, projected_targets(noisy, 1e4))
    oracle = clique_oracle(model.domain, cliques, 1e4)
    theta = maximise_likelihood(oracle, t, np.zeros(t.size), 1.0)
    mu, _ = oracle.evaluate(oracle.lift(theta))
    assert np.abs(t - mu - 2.0 * theta).max() < 1e-2
