"""Ising, pairwise k-ary and binary t-wise models: energies, widths, centring, samplers."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from brute_force import joint

from dpgm.errors import ModelTooLargeError, ParameterError
from dpgm.inference.gibbs import GibbsSampler
from dpgm.models import IsingModel, PairwiseModel, TwiseModel, spins


def random_ising(p: int, edges, seed: int, field: float = 0.3) -> IsingModel:
    rng = np.random.default_rng(seed)
    a = np.zeros((p, p))
    for i, j in edges:
        a[i, j] = a[j, i] = rng.uniform(0.2, 0.6) * rng.choice([-1, 1])
    return IsingModel(a, rng.uniform(-field, field, p))


def random_pairwise(p: int, k: int, edges, seed: int) -> PairwiseModel:
    rng = np.random.default_rng(seed)
    w = np.zeros((p, p, k, k))
    for i, j in edges:
        w[i, j] = rng.uniform(-0.8, 0.8, (k, k))
        w[j, i] = w[i, j].T
    return PairwiseModel(w, rng.uniform(-0.3, 0.3, (p, k)))


def log_weight_ising(model: IsingModel, z: np.ndarray) -> float:
    """Σ_{i<j} A_ij z_i z_j + Σ θ_i z_i, straight from Def. 2.1."""
    p = len(z)
    pairs = sum(model.A[i, j] * z[i] * z[j] for i in range(p) for j in range(i + 1, p))
    return float(pairs + model.theta @ z)


def test_an_ising_model_is_its_definition_on_every_configuration():
    model = random_ising(4, [(0, 1), (1, 2), (2, 3), (0, 3), (0, 2)], 0)
    mrf = model.to_markov_random_field()
    p, log_z = joint(mrf.domain, {c: f.values for c, f in mrf.potentials.items()})
    weights = {}
    for values in itertools.product([0, 1], repeat=4):
        weights[values] = log_weight_ising(model, 2 * np.array(values) - 1)
    normaliser = np.log(np.sum(np.exp(list(weights.values()))))
    for values, w in weights.items():
        assert p[values] == pytest.approx(np.exp(w - normaliser), rel=1e-12)
    assert mrf.log_partition == pytest.approx(log_z, rel=1e-12)


def test_widths_and_minimum_edge_weights():
    a = np.zeros((3, 3))
    a[0, 1] = a[1, 0] = 0.5
    a[1, 2] = a[2, 1] = -0.25
    model = IsingModel(a, [0.1, -0.2, 0.0])
    assert model.width == pytest.approx(0.95)  # node 1: 0.5 + 0.25 + 0.2
    assert model.min_edge_weight == pytest.approx(0.25)
    assert model.edges == [(0, 1), (1, 2)]
    w = np.zeros((2, 2, 3, 3))
    w[0, 1] = [[0.1, -0.4, 0], [0, 0.2, 0], [0, 0, 0]]
    w[1, 0] = w[0, 1].T
    pairwise = PairwiseModel(w, [[0, 0.3, 0], [0, 0, 0]])
    # attribute 0, value 0: max_b |W(0, b)| = 0.4; value 1: 0.2 + 0.3
    assert pairwise.width == pytest.approx(0.5)
    assert pairwise.min_edge_weight == pytest.approx(0.4)
    assert TwiseModel(3, {(0, 1, 2): 0.5, (0, 1): -0.25, (2,): 1.0}).width == pytest.approx(1.5)
    assert IsingModel(np.zeros((2, 2))).min_edge_weight == float("inf")


def test_bad_parameters_are_refused():
    with pytest.raises(ParameterError, match="symmetric"):
        IsingModel([[0, 1], [0.5, 0]])
    with pytest.raises(ParameterError, match="diagonal"):
        IsingModel([[1, 0], [0, 0]])
    w = np.zeros((2, 2, 2, 2))
    w[0, 1] = [[0, 1], [0, 0]]
    with pytest.raises(ParameterError, match="transposed"):
        PairwiseModel(w)
    with pytest.raises(ParameterError, match="distinct attributes"):
        TwiseModel(3, {(0, 0): 1.0})
    with pytest.raises(ParameterError, match="binary"):
        spins(random_pairwise(3, 3, [(0, 1)], 0).sample(5, rng=0))


def test_centring_keeps_the_distribution_and_centres_every_table():
    model = random_pairwise(4, 3, [(0, 1), (1, 2), (2, 3), (0, 3)], 1)
    centred = model.centred()
    w = centred.couplings
    np.testing.assert_allclose(w.sum(axis=3), 0.0, atol=1e-12)
    np.testing.assert_allclose(w.sum(axis=2), 0.0, atol=1e-12)
    first = model.to_markov_random_field()
    second = centred.to_markov_random_field()
    p1, _ = joint(first.domain, {c: f.values for c, f in first.potentials.items()})
    p2, _ = joint(second.domain, {c: f.values for c, f in second.potentials.items()})
    np.testing.assert_allclose(p1, p2, atol=1e-12)


def test_an_ising_model_is_the_pairwise_model_it_converts_to():
    model = random_ising(4, [(0, 1), (1, 2), (2, 3)], 2)
    as_pairwise = PairwiseModel(model.couplings, model.fields)
    one, two = model.to_markov_random_field(), as_pairwise.to_markov_random_field()
    for pair in itertools.combinations(one.domain.attrs, 2):
        np.testing.assert_allclose(one.marginal(pair), two.marginal(pair), atol=1e-12)


def test_a_twise_model_is_exp_of_its_polynomial():
    coefficients = {(0, 1, 2): 0.4, (1, 3): -0.3, (0,): 0.2, (2, 3): 0.1}
    model = TwiseModel(4, coefficients)
    assert model.order == 3 and sorted(model.maximal_monomials()) == [(0, 1, 2), (1, 3),
                                                                      (2, 3)]
    mrf = model.to_markov_random_field()
    p, _ = joint(mrf.domain, {c: f.values for c, f in mrf.potentials.items()})
    logs = {}
    for values in itertools.product([0, 1], repeat=4):
        z = 2 * np.array(values) - 1
        logs[values] = sum(c * np.prod(z[list(m)]) for m, c in coefficients.items())
    normaliser = np.log(np.sum(np.exp(list(logs.values()))))
    for values, h in logs.items():
        assert p[values] == pytest.approx(np.exp(h - normaliser), rel=1e-12)


def torus(side: int) -> list[tuple[int, int]]:
    edges = set()
    for r in range(side):
        for c in range(side):
            here = r * side + c
            for there in (r * side + (c + 1) % side, ((r + 1) % side) * side + c):
                edges.add((min(here, there), max(here, there)))
    return sorted(edges)


@pytest.mark.parametrize("k", [2, 3])
def test_gibbs_sampling_agrees_with_exact_marginals_on_a_loopy_model(k):
    """A 3×3 torus (loopy, odd cycles: three colours): the pair marginals of 20,000
    independent chains after 60 sweeps match the exact ones within 4 standard errors."""
    edges = torus(3)
    model = (random_ising(9, edges, 3) if k == 2 else random_pairwise(9, 3, edges, 3))
    mrf = model.to_markov_random_field()
    n = 20_000
    data = model.sample(n, rng=4, method="gibbs", burn_in=60)
    assert len(GibbsSampler(model.couplings, model.fields).classes) >= 3
    worst = 0.0
    for i, j in edges:
        pair = (model.names[i], model.names[j])
        exact = mrf.marginal(pair) / mrf.total
        empirical = data.marginal(pair) / n
        se = np.sqrt(exact * (1 - exact) / n)
        worst = max(worst, float(np.max(np.abs(empirical - exact) / se)))
    assert worst < 4.5
    # and the exact sampler ("auto" picks it here) agrees with the model too
    exact_data = model.sample(n, rng=5)
    pair = (model.names[0], model.names[1])
    np.testing.assert_allclose(exact_data.marginal(pair) / n, mrf.marginal(pair) / mrf.total,
                               atol=4.5 * 0.5 / np.sqrt(n))


def test_thinned_gibbs_chains_give_the_records_asked_for_and_exact_sampling_refuses_big_trees(
        monkeypatch):
    model = random_ising(6, torus(2) + [(4, 5)], 6)
    data = model.sample(25, rng=7, method="gibbs", burn_in=5, thin=3)
    assert data.records.shape == (25, 6)
    z = spins(data)
    assert set(np.unique(z)) <= {-1, 1}
    import dpgm.models.pairwise as pairwise

    monkeypatch.setattr(pairwise, "EXACT_SAMPLING_CELLS", 1)
    with pytest.raises(ModelTooLargeError, match="gibbs"):
        model.sample(5, rng=0, method="exact")
    assert model.sample(5, rng=0).records.shape == (5, 6)  # auto falls back to Gibbs
