"""An event audit of DP-SGD's data access (one full-batch step) on neighbouring data sets.

The step releases the clipped gradient sum plus Gaussian noise; with the record x its
mean moves by x's clipped gradient c (norm C, the clip, by the choice of C below). The
event: the noisy sum's projection on c, in units of C, minus D's exact value, is at least
2. The claim is the (ε, δ) the step is charged; the power check halves the noise
(charges unchanged) and must prove it false.
"""

from __future__ import annotations

import numpy as np
import pytest
from audit_helpers import Claim, judge, run_scale

from dpgm import Dataset, Domain
from dpgm.privacy import PrivacyBudget
from dpgm.privacy.sgd import NoisyGradientSums, clipped_gradient_sum

pytest.importorskip("dp_accounting")

DOMAIN = Domain(["a", "b"], [2, 2])
BASE = np.array([[0, 0], [0, 1], [1, 0], [1, 1]] * 10)
RECORD = np.array([[1, 1]])
EPSILON, DELTA, CLIP, THRESHOLD, RUNS = 2.0, 1e-3, 0.5, 2.0, 10_000
MU = np.array([0.4, 0.3, 0.2, 0.1])  # the model's marginal on (a, b): public, fixed


def statistics(with_record: bool, runs: int, halved: bool, seed) -> list[float]:
    records = np.vstack([BASE, RECORD]) if with_record else BASE
    sums = NoisyGradientSums(
        Dataset(records, DOMAIN), [("a", "b")], epsilon=EPSILON, delta=DELTA,
        sampling_rate=1.0, steps=1, clip=CLIP, budget=PrivacyBudget.approximate(EPSILON, DELTA),
        rng=seed,
    )
    if halved:
        sums.noise_multiplier /= 2
    base = clipped_gradient_sum(sums._cells[: len(BASE)], MU, sums.offsets, CLIP)
    shift = clipped_gradient_sum(np.array([[3]]), MU, sums.offsets, CLIP)  # x = (1, 1): cell 3
    direction = shift / np.linalg.norm(shift)
    assert np.linalg.norm(shift) == pytest.approx(CLIP)  # x's gradient is clipped
    values = []
    for _ in range(runs):
        sums._taken = 0  # the same one-step release, drawn again
        values.append(float((sums.step(MU) - base) @ direction) / CLIP)
    return values


@pytest.fixture(scope="module")
def runs(pytestconfig) -> int:
    return int(RUNS * run_scale(pytestconfig))


def test_one_step_keeps_its_epsilon_delta_claim(runs):
    # the release path (OpenDP's sampler, ~0.6 ms a draw): fewer runs, ample margin
    runs //= 5
    outcome = judge(statistics(True, runs, False, None), statistics(False, runs, False, None),
                    THRESHOLD, Claim(epsilon=EPSILON, delta=DELTA))
    assert not outcome.violated, str(outcome)
    assert outcome.hits > outcome.hits_without


def test_halved_noise_is_caught(runs):
    outcome = judge(statistics(True, runs, True, 1), statistics(False, runs, True, 2),
                    THRESHOLD, Claim(epsilon=EPSILON, delta=DELTA))
    assert outcome.violated, str(outcome)
