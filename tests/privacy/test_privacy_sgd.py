"""DP-SGD's data access: accounting against an independent computation, clipping, the
ledger, the noise, and refusal to overspend."""

from __future__ import annotations

import math

import numpy as np
import pytest
from mechanism_helpers import PublicOnly
from scipy import stats
from scipy.special import gammaln, logsumexp

from dpgm import Dataset, Domain
from dpgm.errors import BudgetExceededError, DataError, PrivacyParameterError
from dpgm.privacy import PrivacyBudget
from dpgm.privacy.sgd import (
    NoisyGradientSums,
    clipped_gradient_sum,
    clipped_individual_gradient_sum,
    sgd_epsilon,
    sgd_noise_multiplier,
)

pytest.importorskip("dp_accounting")

DOMAIN = Domain(["a", "b", "c"], [2, 3, 2])
CLIQUES = [("a", "b"), ("b", "c")]
INTEGER_ORDERS = [*range(2, 64), 128, 256, 512, 1024]


def independent_epsilon(sigma: float, q: float, steps: int, delta: float) -> float:
    """ε of T Poisson-subsampled Gaussian steps from first principles: the integer-order
    RDP of Mironov, Talwar & Zhang (2019, §3.3),
    A_α = Σ_k C(α, k) (1 − q)^{α−k} q^k exp((k² − k)/(2σ²)), RDP_α = T·log A_α/(α − 1),
    converted by Canonne, Kamath & Steinke (2020, Prop. 12 of Balle et al.'s form):
    ε = min_α RDP_α + log(1 − 1/α) − (log δ + log α)/(α − 1)."""
    best = math.inf
    for alpha in INTEGER_ORDERS:
        k = np.arange(alpha + 1)
        log_binomial = gammaln(alpha + 1) - gammaln(k + 1) - gammaln(alpha - k + 1)
        with np.errstate(divide="ignore"):
            terms = (log_binomial + (alpha - k) * np.log1p(-q) if q < 1 else
                     np.where(k == alpha, 0.0, -np.inf))
        terms = terms + k * math.log(q) + (k * k - k) / (2 * sigma**2)
        rdp = steps * logsumexp(terms) / (alpha - 1)
        best = min(best, rdp + math.log1p(-1 / alpha) - (math.log(delta) + math.log(alpha))
                   / (alpha - 1))
    return best


@pytest.mark.parametrize(("sigma", "q", "steps", "delta"), [
    (1.0, 0.01, 1000, 1e-5), (4.0, 0.05, 100, 1e-6), (0.8, 0.001, 10_000, 1e-4),
    (2.0, 1.0, 1, 1e-5), (6.0, 1.0, 50, 1e-9),
])
def test_epsilon_matches_an_independent_rdp_computation(sigma, q, steps, delta):
    ours = sgd_epsilon(sigma, q, steps, delta)
    mine = independent_epsilon(sigma, q, steps, delta)
    # dp-accounting also uses fractional orders, so it can only be at or below the
    # integer-order value; it must not be far below (that would be a different quantity)
    assert ours <= mine + 1e-9
    assert ours >= 0.9 * mine


def test_one_full_batch_step_is_the_gaussian_closed_form():
    # q = 1, one step: RDP_α = α/(2σ²) exactly; the conversion minimised over a fine grid
    sigma, delta = 3.0, 1e-5
    alphas = np.linspace(1.02, 200, 200_000)
    closed = np.min(alphas / (2 * sigma**2) + np.log1p(-1 / alphas)
                    - (math.log(delta) + np.log(alphas)) / (alphas - 1))
    assert sgd_epsilon(sigma, 1.0, 1, delta) == pytest.approx(closed, rel=0.02)
    assert sgd_epsilon(sigma, 1.0, 1, delta) >= closed - 1e-9


def test_the_noise_multiplier_is_the_smallest_that_meets_the_target():
    sigma = sgd_noise_multiplier(1.0, 1e-5, 0.01, 500)
    assert sgd_epsilon(sigma, 0.01, 500, 1e-5) <= 1.0
    assert sgd_epsilon(sigma * (1 - 1e-6), 0.01, 500, 1e-5) > 1.0 - 1e-6
    with pytest.raises(PrivacyParameterError, match="not attainable"):
        sgd_noise_multiplier(0.01, 1e-5, 0.5, 1000, largest=50)


def data_set(n: int = 200, seed: int = 0) -> Dataset:
    rng = np.random.default_rng(seed)
    return Dataset(np.column_stack([rng.integers(s, size=n) for s in DOMAIN.shape]), DOMAIN)


def model_marginals(seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.dirichlet(np.ones(6)), rng.dirichlet(np.ones(6))])


def per_record_gradients(data: Dataset, mu: np.ndarray) -> np.ndarray:
    """g(x) = μ − φ(x) for every record, one loop iteration per record."""
    rows = []
    for record in data.records:
        phi = np.zeros(12)
        phi[record[0] * 3 + record[1]] = 1.0
        phi[6 + record[1] * 2 + record[2]] = 1.0
        rows.append(mu - phi)
    return np.array(rows)


def gradients(data: Dataset, budget=None, **options) -> NoisyGradientSums:
    settings = {"epsilon": 1.0, "delta": 1e-5, "sampling_rate": 1.0, "steps": 3,
                "clip": 0.7, "rng": 0, **options}
    budget = budget or PrivacyBudget.approximate(settings["epsilon"], settings["delta"])
    return NoisyGradientSums(data, CLIQUES, budget=budget, **settings)


@pytest.mark.parametrize("clip", [0.3, 1.0, 10.0])
def test_the_vectorised_clipped_sum_is_the_per_record_loop(clip):
    data, mu = data_set(), model_marginals()
    loop = per_record_gradients(data, mu)
    norms = np.linalg.norm(loop, axis=1)
    clipped = loop * np.minimum(1.0, clip / norms)[:, None]
    assert np.linalg.norm(clipped, axis=1).max() <= clip + 1e-12
    assert norms.max() <= math.sqrt(2 * len(CLIQUES)) + 1e-12
    sums = gradients(data, clip=clip)
    fast = clipped_gradient_sum(sums._cells, mu, sums.offsets, clip)
    np.testing.assert_allclose(fast, clipped.sum(axis=0), atol=1e-12)


def test_neighbours_move_the_clipped_sum_by_at_most_the_clip():
    data, mu = data_set(), model_marginals()
    one = gradients(data)
    fewer = Dataset(data.records[1:], DOMAIN)
    other = gradients(fewer)
    full = clipped_gradient_sum(one._cells, mu, one.offsets, 0.7)
    less = clipped_gradient_sum(other._cells, mu, other.offsets, 0.7)
    assert np.linalg.norm(full - less) == pytest.approx(0.7)  # the removed record, clipped


def test_the_whole_spend_is_charged_once_before_the_data_are_read_with_its_accounting():
    budget = PrivacyBudget.approximate(2.0, 1e-5)
    sums = gradients(data_set(), budget=budget, epsilon=1.5, steps=40, sampling_rate=0.1)
    (entry,) = budget.ledger
    assert (entry.epsilon, entry.delta) == (1.5, 1e-5)
    assert "RDP" in entry.accounting and "40 Poisson-subsampled Gaussian steps" in entry.accounting
    assert sgd_epsilon(sums.noise_multiplier, 0.1, 40, 1e-5) <= 1.5
    for _ in range(40):
        sums.step(model_marginals())
    with pytest.raises(BudgetExceededError, match="all 40 DP-SGD steps"):
        sums.step(model_marginals())


def test_overspend_and_bad_budgets_are_refused_before_the_data_are_read():
    data = PublicOnly(DOMAIN)
    small = PrivacyBudget.approximate(0.5, 1e-5)
    with pytest.raises(BudgetExceededError):
        gradients(data, budget=small)
    assert small.ledger == []
    with pytest.raises(PrivacyParameterError, match="approximate"):
        gradients(data, budget=PrivacyBudget(epsilon=1.0))


def test_seeded_runs_repeat_and_lots_differ_between_steps():
    mu = model_marginals()
    first = gradients(data_set(), sampling_rate=0.3, steps=3, rng=5)
    second = gradients(data_set(), sampling_rate=0.3, steps=3, rng=5)
    a = [first.step(mu) for _ in range(3)]
    b = [second.step(mu) for _ in range(3)]
    np.testing.assert_array_equal(np.array(a), np.array(b))
    assert not np.array_equal(a[0], a[1])


def test_the_noise_is_gaussian_at_the_accounted_scale_and_a_halved_one_is_caught():
    data, mu = data_set(50), model_marginals()
    sums = gradients(data, steps=1, clip=0.5, rng=3)
    exact = clipped_gradient_sum(sums._cells, mu, sums.offsets, 0.5)
    draws = []
    for _ in range(400):
        sums._taken = 0  # the same one-step release, drawn again
        draws.append(sums.step(mu) - exact)
    noise = np.concatenate(draws)
    scale = sums.noise_multiplier * 0.5
    assert stats.kstest(noise, "norm", args=(0, scale)).pvalue > 1e-4
    assert stats.kstest(noise, "norm", args=(0, scale / 2)).pvalue < 1e-6


def test_a_given_noise_multiplier_is_checked_against_the_accountant():
    sigma = sgd_noise_multiplier(1.0, 1e-5, 0.5, 3)
    sums = gradients(data_set(), sampling_rate=0.5, noise_multiplier=sigma)
    assert sums.noise_multiplier == sigma
    budget = PrivacyBudget.approximate(1.0, 1e-5)
    with pytest.raises(PrivacyParameterError, match="more than epsilon=1"):
        gradients(PublicOnly(DOMAIN), budget=budget, sampling_rate=0.5,
                  noise_multiplier=0.5 * sigma)
    assert budget.ledger == []


@pytest.mark.parametrize("clip", [0.3, 2.0, 100.0])
def test_the_per_individual_clipped_sum_is_the_loop_over_individuals(clip):
    """Each individual's summed gradient G_u clipped to C, summed: as a loop over owners."""
    data, mu = data_set(), model_marginals()
    owners = np.random.default_rng(3).integers(0, 30, size=len(data)) * 7  # any labels
    loop = per_record_gradients(data, mu)
    expected = np.zeros(12)
    for owner in np.unique(owners):
        summed = loop[owners == owner].sum(axis=0)
        clipped = summed * min(1.0, clip / np.linalg.norm(summed))
        assert np.linalg.norm(clipped) <= clip + 1e-12
        expected += clipped
    sums = gradients(data, clip=clip)
    fast = clipped_individual_gradient_sum(sums._cells, owners, mu, sums.offsets, clip)
    np.testing.assert_allclose(fast, expected, atol=1e-10)
    # one record per individual: the per-record clipping
    single = clipped_individual_gradient_sum(sums._cells, np.arange(len(data)), mu,
                                             sums.offsets, clip)
    np.testing.assert_allclose(single, clipped_gradient_sum(sums._cells, mu, sums.offsets, clip),
                               atol=1e-10)


def test_removing_an_individual_moves_the_sum_by_at_most_the_clip():
    data, mu = data_set(), model_marginals()
    owners = np.random.default_rng(4).integers(0, 20, size=len(data))
    sums = gradients(data)
    full = clipped_individual_gradient_sum(sums._cells, owners, mu, sums.offsets, 0.7)
    moved = []
    for owner in np.unique(owners):
        keep = owners != owner
        less = clipped_individual_gradient_sum(sums._cells[keep], owners[keep], mu,
                                               sums.offsets, 0.7)
        moved.append(np.linalg.norm(full - less))
    assert max(moved) == pytest.approx(0.7)  # individuals of several records are clipped
    assert min(moved) > 0


def test_lots_sample_individuals_whole():
    """With individuals, a lot holds all of an owner's records or none of them."""
    data = data_set()
    owners = np.repeat(np.arange(40), 5)
    sums = gradients(data, sampling_rate=0.3, individuals=owners, steps=5)
    for _ in range(5):
        keep = sums._lot(sums._owner_count)[sums._owner]
        per_owner = np.bincount(owners[keep], minlength=40)
        assert set(per_owner.tolist()) <= {0, 5}
    with pytest.raises(DataError, match="owner of each") as refused:
        gradients(data, individuals=owners[:10])
    assert str(len(data)) not in str(refused.value)  # the record count is never shown
