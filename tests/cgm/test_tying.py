"""Tied parameters (the wifi chain's one ψ(x_t, x_{t+1}) and φ(x_1)) in the CGM learners."""

from __future__ import annotations

import numpy as np
import pytest

from dpgm import Dataset, Domain, MarkovRandomField
from dpgm.cgm import cgm_em, naive_mle
from dpgm.cgm.psgd import dp_sgd
from dpgm.cgm.tables import shared_table_tying
from dpgm.errors import ParameterError
from dpgm.evaluation import kl_divergence
from dpgm.privacy import PrivacyBudget
from dpgm.privacy.sgd import NoisyGradientSums

DOMAIN = Domain([f"s{i}" for i in range(4)], [3] * 4)
EDGES = [("s0", "s1"), ("s1", "s2"), ("s2", "s3")]


def tied_truth(seed: int = 0) -> tuple[MarkovRandomField, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    psi, phi = rng.normal(size=(3, 3)), rng.normal(size=3)
    potentials = {e: psi for e in EDGES}
    potentials[("s0",)] = phi
    return MarkovRandomField(DOMAIN, potentials, total=1.0), psi, phi


def test_the_tying_shares_one_table_and_adds_the_node_table_to_its_first_clique():
    tying = shared_table_tying(DOMAIN, EDGES, node="s0")
    assert tying.shape == (27, 12)
    rng = np.random.default_rng(1)
    psi, phi = rng.normal(size=(3, 3)), rng.normal(size=3)
    theta = tying @ np.concatenate([psi.ravel(), phi])
    np.testing.assert_allclose(theta[:9].reshape(3, 3), psi + phi[:, None])  # φ(s0) on (s0, s1)
    np.testing.assert_allclose(theta[9:18].reshape(3, 3), psi)
    np.testing.assert_allclose(theta[18:].reshape(3, 3), psi)
    with pytest.raises(ParameterError, match="one shape"):
        shared_table_tying(Domain(["a", "b", "c"], [2, 2, 3]), [("a", "b"), ("b", "c")])
    with pytest.raises(ParameterError, match="no clique holds"):
        shared_table_tying(DOMAIN, EDGES[1:], node="s0")


def test_tied_naive_mle_matches_the_pooled_moments_and_recovers_a_tied_truth():
    truth, _, _ = tied_truth()
    data = truth.sample(200_000, rng=2)
    tables = {e: data.marginal(e) for e in EDGES}
    tying = shared_table_tying(DOMAIN, EDGES, node="s0")
    model = naive_mle(DOMAIN, tables, 200_000.0, penalty=1e-6, tying=tying)
    # moment matching in the tied parameters: pooled edge tables and the node table
    pooled = sum(model.marginal(e) for e in EDGES)
    np.testing.assert_allclose(pooled, sum(tables.values()), atol=1e-2)
    np.testing.assert_allclose(model.marginal(["s0"]), data.marginal(["s0"]), atol=1e-2)
    assert kl_divergence(truth, model) < 1e-3  # 200,000 records of a model in the family
    untied = naive_mle(DOMAIN, tables, 200_000.0, penalty=1e-6)
    assert kl_divergence(truth, model) < kl_divergence(truth, untied)  # fewer parameters


def test_tied_cgm_em_with_vanishing_noise_is_the_tied_mle():
    """At ε → ∞ the E-step returns the tables themselves and the tied M-step fits them."""
    truth, _, _ = tied_truth(3)
    data = truth.sample(5_000, rng=4)
    tables = {e: data.marginal(e) for e in EDGES}
    tying = shared_table_tying(DOMAIN, EDGES, node="s0")
    em, trace = cgm_em(DOMAIN, tables, 5_000.0, 1e-6, max_iters=2, tying=tying)
    mle = naive_mle(DOMAIN, tables, 5_000.0, penalty=1e-9, tying=tying)
    assert kl_divergence(mle, em) < 1e-8
    assert len(trace.residuals) == 2
    with pytest.raises(ParameterError, match="one row per clique cell"):
        cgm_em(DOMAIN, tables, 5_000.0, 1.0, tying=np.eye(3))


def test_tied_dp_sgd_keeps_the_edge_tables_tied():
    truth, _, _ = tied_truth(5)
    data: Dataset = truth.sample(2_000, rng=6)
    cliques = [DOMAIN.canonical(e) for e in EDGES]
    owners = np.repeat(np.arange(500), 4)  # four records per individual
    gradients = NoisyGradientSums(
        data, cliques, epsilon=5.0, delta=1e-6, sampling_rate=0.2, steps=20, clip=2.0,
        budget=PrivacyBudget.approximate(5.0, 1e-6), rng=7, individuals=owners)
    tying = shared_table_tying(DOMAIN, cliques, node="s0")
    model = dp_sgd(DOMAIN, gradients, cliques, 2_000.0, learning_rate=1.0, tying=tying)
    tables = {c: f.values for c, f in model.potentials.items()}
    np.testing.assert_allclose(tables[("s1", "s2")], tables[("s2", "s3")], atol=1e-12)  # one ψ
    assert not np.allclose(tables[("s1", "s2")], 0.0)
    assert gradients.remaining == 0
