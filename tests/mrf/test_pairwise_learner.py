"""The pairwise learner (paper 001, Alg. 3; the note's D6 and AC1, AC3, AC4)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from mechanism_helpers import PublicOnly

from dpgm import Domain
from dpgm.errors import DataError
from dpgm.models import PairwiseModel
from dpgm.mrf import learn_pairwise
from dpgm.mrf.pairwise import centre, read_out, value_pairs
from dpgm.privacy import PrivacyBudget


def tree_pairwise(p: int, k: int, seed: int) -> PairwiseModel:
    """The note's F4: a random tree, W_ij double-centred U[-0.5, 0.5], fields U[-0.2, 0.2]."""
    rng = np.random.default_rng(seed)
    w = np.zeros((p, p, k, k))
    for v in range(1, p):
        u = int(rng.integers(v))
        table = rng.uniform(-0.5, 0.5, (k, k))
        w[u, v] = table
        w[v, u] = table.T
    return PairwiseModel(w, rng.uniform(-0.2, 0.2, (p, k))).centred()


@pytest.fixture(scope="module")
def sample():
    model = tree_pairwise(5, 3, 0)
    return model, model.sample(100_000, rng=1)


def test_centring_keeps_every_one_hot_inner_product():
    p, k = 3, 3
    weights = np.random.default_rng(2).normal(size=(p * k + 1, 4))
    centred = centre(weights, p, k)
    for values in itertools.product(range(k), repeat=p):
        x = np.zeros(p * k + 1)
        x[[j * k + a for j, a in enumerate(values)]] = 1.0
        x[-1] = 1.0
        np.testing.assert_allclose(x @ centred, x @ weights, atol=1e-12)
    np.testing.assert_allclose(centred[:-1].reshape(p, k, 4).sum(axis=1), 0.0, atol=1e-12)


def test_the_read_out_recovers_a_double_centred_model_from_its_true_weights():
    """Fed the targets w*(j, ·) = W_ij(u, ·) - W_ij(v, ·), bias θ_i(u) - θ_i(v), the
    read-out gives back W and the centred fields exactly, in both modes."""
    model = tree_pairwise(4, 3, 3)
    w, theta = model.couplings, model.fields
    p, k = 4, 3
    for mode in ("tight", "paper"):
        pairs = value_pairs(k, mode)
        weights = np.zeros((p * k + 1, p * len(pairs)))
        for i in range(p):
            for c, (u, v) in enumerate(pairs):
                column = np.zeros(p * k + 1)
                for j in range(p):
                    if j != i:
                        column[j * k:(j + 1) * k] = w[i, j, u] - w[i, j, v]
                column[-1] = theta[i, u] - theta[i, v]
                weights[:, i * len(pairs) + c] = column
        couplings, fields = read_out(weights, p, k, pairs)
        np.testing.assert_allclose(couplings, w, atol=1e-12)
        np.testing.assert_allclose(fields, theta - theta.mean(axis=1, keepdims=True),
                                   atol=1e-12)


def test_one_way_pairs_give_what_fitting_both_ways_gives(sample):
    """The loss is unchanged under (y, w) -> (-y, -w): the non-private fit of (v, u) is
    minus that of (u, v), so the tight mode's read-out is the paper mode's."""
    _, data = sample
    small = type(data)(data.records[:5000], data.domain)
    tight = learn_pairwise(small, None, 1.0, steps=60)
    paper = learn_pairwise(small, None, 1.0, steps=60, mode="paper")
    np.testing.assert_allclose(tight.couplings, paper.couplings, atol=1e-6)


def test_the_non_private_learner_recovers_the_model(sample):
    model, data = sample
    estimate = learn_pairwise(data, None, 1.0, steps=300)
    assert np.abs(estimate.model.couplings - model.couplings).max() < 0.05
    fields = model.fields - model.fields.mean(axis=1, keepdims=True)  # θ up to a constant
    assert np.abs(estimate.model.fields - fields).max() < 0.05


def test_the_private_learner_is_close_and_charges_exactly_rho(sample):
    model, data = sample
    budget = PrivacyBudget(rho=1.0)
    small = type(data)(data.records[:20_000], data.domain)
    estimate = learn_pairwise(small, 1.0, 1.0, rng=4, budget=budget)
    assert np.abs(model.couplings).max() > 0.3
    assert np.abs(estimate.model.couplings - model.couplings).max() < 0.15  # 0.065 seen
    count, fit = budget.ledger
    assert count.rho == pytest.approx(0.01, rel=1e-12)
    assert fit.rho == pytest.approx(0.99, rel=1e-12)
    assert "x 15 regressions" in fit.label
    assert "takes part in 10 of the 15" in fit.accounting  # (k - 1)·p
    paper = PrivacyBudget(rho=5.0)
    learn_pairwise(data, 5.0, 1.0, rng=4, budget=paper, mode="paper", steps=20)
    (only,) = paper.ledger
    assert only.rho == pytest.approx(5.0 * 2 * 2 / 9, rel=1e-12)  # 2(k - 1)/k² of it
    assert "takes part in 20 of the 30" in only.accounting


def test_with_a_huge_rho_the_private_learner_is_the_non_private_one(sample):
    _, data = sample
    small = type(data)(data.records[:3000], data.domain)
    private = learn_pairwise(small, 1e12, 1.0, rng=5, steps=30)
    exact = learn_pairwise(small, None, 1.0, steps=30)
    np.testing.assert_allclose(private.couplings, exact.couplings, atol=1e-12)


def test_what_is_knowable_in_advance_fails_before_the_data_are_read():
    with pytest.raises(DataError, match="one number of values"):
        learn_pairwise(PublicOnly(Domain(["a", "b"], [3, 2])), 1.0, 1.0)
    with pytest.raises(Exception, match="mode"):
        learn_pairwise(PublicOnly(Domain(["a", "b"], [3, 3])), 1.0, 1.0, mode="loose")
