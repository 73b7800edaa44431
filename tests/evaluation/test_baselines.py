"""The paper's reference points: the non-private MLE approaches the truth at rate 1/N
(the note's check 11); the random estimator reads no data."""

from __future__ import annotations

import numpy as np
import pytest

from dpgm.datasets.synthetic import dirichlet_model
from dpgm.evaluation import kl_divergence
from dpgm.evaluation.baselines import dirichlet_baseline, nonprivate_mle

EDGES = [("x0", "x1"), ("x1", "x2"), ("x0", "x2"), ("x2", "x3")]


@pytest.fixture(scope="module")
def truth():
    return dirichlet_model(EDGES, 3, rng=0)


def test_the_nonprivate_mle_approaches_the_truth_at_rate_one_over_n(truth):
    kls = {}
    for n in (1_000, 100_000):
        runs = [kl_divergence(truth, nonprivate_mle(truth.sample(n, rng=s), EDGES))
                for s in range(4)]
        kls[n] = float(np.mean(runs))
    slope = np.log10(kls[100_000] / kls[1_000]) / 2.0
    assert -1.3 < slope < -0.7, kls  # E KL ≈ (free parameters)/(2N): slope -1


def test_the_random_baseline_reads_no_data_and_is_far_from_the_truth(truth):
    domain = truth.domain
    one = dirichlet_baseline(domain, EDGES, 1000.0, rng=3)
    again = dirichlet_baseline(domain, EDGES, 1000.0, rng=3)
    for clique in EDGES:
        np.testing.assert_array_equal(one.marginal(clique), again.marginal(clique))
    learned = nonprivate_mle(truth.sample(10_000, rng=1), EDGES)
    assert kl_divergence(truth, one) > 10 * kl_divergence(truth, learned)
