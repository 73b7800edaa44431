"""DP-SGD as a learner (the paper's PSGD baseline) and fit_cgm, the paper's entry point."""

from __future__ import annotations

import numpy as np
import pytest

import dpgm
from dpgm import Dataset, Domain, MarkovRandomField
from dpgm.cgm import naive_mle
from dpgm.cgm.psgd import dp_sgd
from dpgm.errors import ParameterError
from dpgm.evaluation import kl_divergence
from dpgm.privacy import PrivacyBudget
from dpgm.privacy.sgd import NoisyGradientSums

pytest.importorskip("dp_accounting")

DOMAIN = Domain(list("abc"), [2, 3, 2])
CLIQUES = [("a", "b"), ("b", "c")]


@pytest.fixture(scope="module")
def data() -> Dataset:
    rng = np.random.default_rng(0)
    truth = MarkovRandomField(DOMAIN, {c: rng.normal(size=DOMAIN.project(c).shape)
                                       for c in CLIQUES}, total=2000)
    return truth.synthetic_data(2000, rng=1)


def test_with_negligible_noise_full_batch_sgd_reaches_the_maximum_likelihood_model(data):
    exact = naive_mle(DOMAIN, {c: data.marginal(c) for c in CLIQUES}, 2000.0, penalty=1e-9)
    sums = NoisyGradientSums(
        data, CLIQUES, epsilon=1e4, delta=1e-9, sampling_rate=1.0, steps=400, clip=10.0,
        budget=PrivacyBudget.approximate(1e4, 1e-9), rng=2,
    )
    model = dp_sgd(DOMAIN, sums, CLIQUES, 2000.0, learning_rate=2.0)
    assert sums.remaining == 0
    assert model.total == 2000.0
    assert kl_divergence(exact, model) < 1e-4


def test_strong_noise_leaves_the_model_worse(data):
    exact = naive_mle(DOMAIN, {c: data.marginal(c) for c in CLIQUES}, 2000.0, penalty=1e-9)
    errors = []
    for epsilon in (1e4, 0.05):
        sums = NoisyGradientSums(
            data, CLIQUES, epsilon=epsilon, delta=1e-9, sampling_rate=0.2, steps=50, clip=1.0,
            budget=PrivacyBudget.approximate(epsilon, 1e-9), rng=3,
        )
        errors.append(kl_divergence(exact, dp_sgd(DOMAIN, sums, CLIQUES, 2000.0)))
    assert errors[0] < errors[1]


@pytest.mark.parametrize("method", ["em", "naive", "naive-projected", "pgm", "psgd"])
def test_fit_cgm_returns_a_model_on_the_cliques_for_every_method(data, method):
    options = {"total": 2000.0, "em_iters": 5, "iters": 20} if method != "psgd" else {
        "total": 2000.0, "sampling_rate": 0.2, "epochs": 2}
    model = dpgm.fit_cgm(data, CLIQUES, 1.0, method, rng=4, **options)
    assert isinstance(model, MarkovRandomField)
    assert model.marginal(("a", "b")).shape == (2, 3)
    assert model.marginal(("a", "b")).sum() == pytest.approx(2000.0)


def test_fit_cgm_names_its_methods():
    with pytest.raises(ParameterError, match="method must be one of"):
        dpgm.fit_cgm(None, CLIQUES, 1.0, "sgd")


def test_an_unattainable_target_fails_before_the_data_are_read():
    from mechanism_helpers import PublicOnly

    from dpgm.errors import PrivacyParameterError
    from dpgm.mechanisms import PSGD

    mechanism = PSGD(0.1, sampling_rate=0.5, epochs=5, largest_noise=5.0)
    with pytest.raises(PrivacyParameterError, match="not attainable"):
        mechanism.fit(PublicOnly(DOMAIN), CLIQUES, rng=0)
    assert mechanism.budget is None
