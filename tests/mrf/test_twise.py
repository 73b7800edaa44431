"""The t-wise learners (paper 001, Algs. 4-5; the note's D7, D8 and AC1, AC5)."""

from __future__ import annotations

import numpy as np
import pytest
from mechanism_helpers import PublicOnly

from dpgm import Dataset, Domain
from dpgm.errors import DataError, ModelTooLargeError, ParameterError
from dpgm.models import TwiseModel
from dpgm.mrf import learn_twise
from dpgm.mrf.moments import private_parity_moments, spin_table
from dpgm.mrf.twise import exact_parity_moments, l1_read_out, linf_read_out
from dpgm.privacy import PrivacyBudget
from dpgm.privacy.frank_wolfe import feature_columns

COEFFICIENTS = {(0, 1, 2): 0.4, (2, 3): -0.3, (3, 4): 0.3, (1,): 0.1, (0, 1): 0.2}


def binary_domain(p: int) -> Domain:
    return Domain([f"x{i}" for i in range(p)], [2] * p)


@pytest.fixture(scope="module")
def model():
    return TwiseModel(5, COEFFICIENTS)


def true_weights(model: TwiseModel, columns) -> np.ndarray:
    """w*_i = 2·∂_i h: the coefficient of z^J is 2·h̄(J ∪ {i}); the bias 2·h̄({i})."""
    p = model.attributes
    weights = np.zeros((len(columns) + 1, p))
    for i in range(p):
        for c, (subset, _) in enumerate(columns):
            if i not in subset:
                weights[c, i] = 2 * model.coefficients.get(tuple(sorted((i, *subset))), 0.0)
        weights[-1, i] = 2 * model.coefficients.get((i,), 0.0)
    return weights


def exact_law(model: TwiseModel) -> tuple[np.ndarray, np.ndarray]:
    z = spin_table(model.attributes).astype(float)
    h = sum(v * np.prod(z[:, list(k)], axis=1) for k, v in model.coefficients.items())
    law = np.exp(h)
    return z, law / law.sum()


def test_the_l1_read_out_of_the_true_weights_is_h(model):
    columns = feature_columns((2,) * 5, "parities", 3)
    read = l1_read_out(true_weights(model, columns), columns)
    for monomial in {*read, *model.coefficients}:
        assert read.get(monomial, 0.0) == pytest.approx(model.coefficients.get(monomial, 0.0))


def test_the_linf_read_out_is_exact_on_maximal_monomials_and_a_plug_in_elsewhere(model):
    """With the true weights and exact moments (AC5): h̄(I) on maximal monomials; on the
    others, E[∂_J v_i(X)] computed by enumeration."""
    columns = feature_columns((2,) * 5, "parities", 3)
    z, law = exact_law(model)
    moments = {s: float(law @ np.prod(z[:, list(s)], axis=1)) for s, _ in columns}
    read = linf_read_out(true_weights(model, columns), columns, moments)
    for monomial in model.maximal_monomials():
        assert read[monomial] == pytest.approx(model.coefficients[monomial], abs=1e-12)
    # (0, 1) is not maximal: ∂_{1} ∂_0 h = h̄(01) + h̄(012)·z_2, so the plug-in is
    # h̄(01) + h̄(012)·E[z_2]
    expected = 0.2 + 0.4 * moments[(2,)]
    assert read[(0, 1)] == pytest.approx(expected, abs=1e-12)
    assert read[(0, 1)] != pytest.approx(0.2, abs=1e-3)


def test_exact_moments_are_the_record_means():
    data = Dataset(np.array([[1, 1, 0], [0, 1, 1], [1, 0, 0]]), binary_domain(3))
    moments = exact_parity_moments(data, 2)
    assert moments[(0,)] == pytest.approx(1 / 3)
    assert moments[(0, 1)] == pytest.approx((1 - 1 - 1) / 3)


def test_the_non_private_l1_learner_recovers_the_model(model):
    data = model.sample(200_000, rng=1)
    estimate = learn_twise(data, None, 0.8, 3, steps=400)
    error = sum(abs(estimate.model.coefficients.get(k, 0.0) - model.coefficients.get(k, 0.0))
                for k in {*estimate.model.coefficients, *model.coefficients})
    assert error < 0.25  # the l1 goal, over all 25 monomials


def test_the_private_learners_charge_exactly_rho(model):
    data = model.sample(20_000, rng=2)
    budget = PrivacyBudget(rho=1.0)
    estimate = learn_twise(data, 1.0, 0.8, 3, rng=3, budget=budget)
    assert budget.spent_rho == pytest.approx(1.0, rel=1e-12)
    assert "x 5 regressions" in budget.ledger[-1].label and estimate.moments is None
    paper = PrivacyBudget(rho=1.0)
    estimate = learn_twise(data, 1.0, 0.8, 3, goal="linf", rng=3, budget=paper, rounds=6)
    labels = [e.label for e in paper.ledger]
    assert sum("moments: selection" in label for label in labels) == 6
    assert sum("moments: measurement" in label for label in labels) == 6
    assert paper.spent_rho == pytest.approx(1.0, rel=1e-9)
    # half each: the moments' rounds after a 2% count, the regressions' after a 1% count
    assert sum(e.rho for e in paper.ledger if "moments" in e.label) == pytest.approx(0.49)
    assert paper.ledger[-1].rho == pytest.approx(0.495)
    parallel = PrivacyBudget(rho=1.0)
    learn_twise(data, 1.0, 0.8, 3, goal="linf", split_budget="parallel", rng=3,
                budget=parallel, rounds=6)
    (only,) = parallel.ledger
    assert only.rho == 1.0 and "parallel composition" in only.accounting


def test_private_moments_approach_the_exact_ones_with_a_large_budget(model):
    data = model.sample(20_000, rng=4)
    exact = exact_parity_moments(data, 2)
    private = private_parity_moments(data, 100.0, 2, rounds=60, rng=5)
    worst = max(abs(private[s] - exact[s]) for s in exact)
    assert worst < 0.05
    assert max(abs(m) for m in exact.values()) > 0.2  # not trivially near zero


def test_what_is_knowable_in_advance_fails_before_the_data_are_read():
    binary = PublicOnly(binary_domain(4))
    with pytest.raises(DataError, match="binary"):
        learn_twise(PublicOnly(Domain(["a", "b"], [2, 3])), 1.0, 1.0, 3)
    with pytest.raises(ParameterError, match="order"):
        learn_twise(binary, 1.0, 1.0, 1)
    with pytest.raises(ParameterError, match="l1 goal only"):
        learn_twise(binary, 1.0, 1.0, 3, goal="linf", selection="paper")
    with pytest.raises(ModelTooLargeError):
        private_parity_moments(PublicOnly(binary_domain(21)), 1.0, 2)
