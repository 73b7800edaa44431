"""Laplace and Gaussian noise: the stated scale, seeded (NumPy) and exact (OpenDP).

A scale check compares the sample std of the noise with the stated std. Over n draws the
relative standard error of the sample std is about sqrt((kurtosis - 1) / (4 n)): for the
Laplace (kurtosis 6) sqrt(5 / (4 n)), for the Gaussian (kurtosis 3) sqrt(1 / (2 n)).
"""

import math

import numpy as np
import pytest

from dpgm.errors import DataError, PrivacyParameterError
from dpgm.privacy import gaussian_noise, laplace_noise


def std_matches(noise: np.ndarray, expected_std: float, rel_tol: float) -> bool:
    return abs(float(np.std(noise)) / expected_std - 1.0) < rel_tol


def discrete_laplace_std(scale: float) -> float:
    """Std of the discrete Laplace, P(x) ∝ exp(-|x| / scale) on the integers."""
    q = math.exp(-1.0 / scale)
    return math.sqrt(2.0 * q) / (1.0 - q)


# --- seeded NumPy noise: 200k draws --------------------------------------------------------
# Relative SE of the sample std: Laplace 0.0025, Gaussian 0.0016. A tolerance of 1.5% is
# 6 SE (Laplace) or 9.5 SE (Gaussian): a false alarm has probability < 2e-9, far below 1e-6
# (and with fixed seeds the outcome is fixed anyway). A scale 30% off moves the std by 23-30%.
SEEDED_N = 200_000
SEEDED_TOL = 0.015


@pytest.mark.parametrize("scale", [0.5, 3.0, 40.0])
def test_seeded_laplace_has_stated_scale(scale):
    counts = np.full(SEEDED_N, 7.0)
    noise = laplace_noise(counts, scale, rng=12345) - counts
    assert std_matches(noise, math.sqrt(2) * scale, SEEDED_TOL)
    assert not std_matches(noise, math.sqrt(2) * scale * 1.3, SEEDED_TOL)
    assert not std_matches(noise, math.sqrt(2) * scale * 0.7, SEEDED_TOL)
    assert abs(noise.mean()) < 6 * math.sqrt(2) * scale / math.sqrt(SEEDED_N)


@pytest.mark.parametrize("sigma", [0.5, 3.0, 40.0])
def test_seeded_gaussian_has_stated_scale(sigma):
    counts = np.full(SEEDED_N, 7.0)
    noise = gaussian_noise(counts, sigma, rng=np.random.default_rng(54321)) - counts
    assert std_matches(noise, sigma, SEEDED_TOL)
    assert not std_matches(noise, sigma * 1.3, SEEDED_TOL)
    assert not std_matches(noise, sigma * 0.7, SEEDED_TOL)
    assert abs(noise.mean()) < 6 * sigma / math.sqrt(SEEDED_N)


def test_seeded_noise_is_reproducible_and_keeps_shape():
    counts = np.arange(12.0).reshape(3, 4)
    for draw in (laplace_noise, gaussian_noise):
        a, b, c = draw(counts, 2.0, 7), draw(counts, 2.0, 7), draw(counts, 2.0, 8)
        assert a.shape == (3, 4)
        np.testing.assert_array_equal(a, b)
        assert not np.array_equal(a, c)


# --- exact OpenDP samplers (unseeded): 20k draws, as they are slower ----------------------
# Relative SE of the sample std: Laplace 0.0079, Gaussian 0.0050. A tolerance of 10% is
# 12.6 SE (Laplace) or 20 SE (Gaussian): a false alarm has probability below 1e-30, i.e.
# never; a scale 30% off is still rejected. The mean is checked to 8 SE (< 1e-15).
EXACT_N = 20_000
EXACT_TOL = 0.10


@pytest.mark.parametrize("discrete", [True, False], ids=["discrete", "float"])
def test_exact_laplace_has_stated_scale(discrete):
    scale = 10.0
    counts = np.full(EXACT_N, 5.0)
    noise = laplace_noise(counts, scale, discrete=discrete) - counts
    # integer counts get the discrete Laplace, whose std is a hair below sqrt(2) * scale
    std = discrete_laplace_std(scale) if discrete else math.sqrt(2) * scale
    assert np.all(noise == np.round(noise)) == discrete
    assert std_matches(noise, std, EXACT_TOL)
    assert not std_matches(noise, std * 1.3, EXACT_TOL)
    assert not std_matches(noise, std * 0.7, EXACT_TOL)
    assert abs(noise.mean()) < 8 * std / math.sqrt(EXACT_N)


@pytest.mark.parametrize("discrete", [True, False], ids=["discrete", "float"])
def test_exact_gaussian_has_stated_scale(discrete):
    sigma = 10.0  # the discrete Gaussian's std equals sigma to ~exp(-2 pi^2 sigma^2)
    counts = np.full(EXACT_N, 5.0)
    noise = gaussian_noise(counts, sigma, discrete=discrete) - counts
    assert np.all(noise == np.round(noise)) == discrete
    assert std_matches(noise, sigma, EXACT_TOL)
    assert not std_matches(noise, sigma * 1.3, EXACT_TOL)
    assert not std_matches(noise, sigma * 0.7, EXACT_TOL)
    assert abs(noise.mean()) < 8 * sigma / math.sqrt(EXACT_N)


def test_exact_noise_keeps_shape_and_handles_edge_cases():
    counts = np.arange(6.0).reshape(2, 3)
    assert laplace_noise(counts, 1.0).shape == (2, 3)
    assert gaussian_noise(np.array(4.0), 1.0).shape == ()
    assert laplace_noise(np.zeros(0), 1.0).shape == (0,)


@pytest.mark.parametrize("bad", [0, -1.0, math.nan, math.inf])
def test_bad_scale(bad):
    with pytest.raises(PrivacyParameterError, match="scale"):
        laplace_noise(np.ones(3), bad, 0)
    with pytest.raises(PrivacyParameterError, match="sigma"):
        gaussian_noise(np.ones(3), bad, 0)


def test_non_finite_counts():
    with pytest.raises(DataError, match="finite"):
        laplace_noise(np.array([1.0, math.nan]), 1.0, 0)


@pytest.mark.parametrize("draw", [laplace_noise, gaussian_noise])
def test_the_sampler_is_chosen_by_the_caller_not_by_the_counts(draw):
    """Whole or fractional counts give outputs of the same kind: only ``discrete`` decides."""
    for discrete in (True, False):
        whole = draw(np.full(2000, 5.0), 3.0, discrete=discrete)
        fractional = draw(np.full(2000, 5.5), 3.0, discrete=discrete)
        # integer outputs under the discrete sampler, almost never under the float one
        assert np.all(whole == np.round(whole)) == discrete
        assert np.all(fractional == np.round(fractional)) == discrete
        assert np.mean(fractional == np.round(fractional)) < 1 or discrete
