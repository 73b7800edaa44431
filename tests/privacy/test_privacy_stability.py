"""Stability releases of the mode of block answers (the note's D9 and AC6): the released
answer is always the mode, a stable mode is released, an unstable one with probability
exactly delta, and the ledger holds one (epsilon, delta) entry."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from mechanism_helpers import PublicOnly

from dpgm import Dataset, Domain
from dpgm.errors import BudgetExceededError, ParameterError, PrivacyParameterError, PrivacyWarning
from dpgm.privacy import PrivacyBudget
from dpgm.privacy.stability import (
    assign_blocks,
    blocks_for,
    gap_needed,
    ptr_threshold,
    release_mode,
    release_probability,
    subsample_and_aggregate,
)

RUNS = 10_000


def released(answers, epsilon, delta, method="ptr", seed=0):
    rng = np.random.default_rng(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        return [release_mode(answers, epsilon, delta, method=method, rng=rng)
                for _ in range(RUNS)]


def test_a_unanimous_mode_is_released_and_twice_the_noise_would_be_seen():
    """40 equal answers: d = 19 >= tau + 5/epsilon (epsilon 1, delta 1e-6, tau 13.1), so
    the mode comes out unless Laplace(1) < -5.9: 99.86 %. With Laplace(2) it would be
    97.4 %, below the 99 % asked."""
    assert ptr_threshold(1.0, 1e-6) == pytest.approx(math.log(5e5))
    assert math.ceil(40 / 2) - 1 >= ptr_threshold(1.0, 1e-6) + 5
    out = released([(0, 1)] * 40, 1.0, 1e-6)
    assert all(a in ((0, 1), None) for a in out)
    rate = sum(a == (0, 1) for a in out) / RUNS
    assert rate >= 0.99
    assert 1 - 0.5 * math.exp(-5.9 / 2) < 0.99 < 1 - 0.5 * math.exp(-5.9)  # the power


def test_an_even_split_is_released_with_probability_delta():
    """g = 0 so d = 0: the mode comes out with probability P(Laplace(1/eps) > tau) = delta
    exactly; half the noise would give 2 delta**2 = 0.005, far outside the band."""
    delta = 0.05
    out = released([(0, 1)] * 20 + [(1, 2)] * 20, 1.0, delta)
    rate = sum(a is not None for a in out) / RUNS
    sd = math.sqrt(delta * (1 - delta) / RUNS)
    assert abs(rate - delta) < 4 * sd
    assert all(a in ((0, 1), None) for a in out)  # the tie goes to the first in order
    assert abs(0.5 * math.exp(-2 * math.log(1 / (2 * delta))) - delta) > 8 * sd


def test_propose_test_release_only_ever_releases_the_mode():
    answers = [(0, 1)] * 25 + [(1, 2)] * 10 + [(0, 2)] * 5
    out = released(answers, 1.0, 0.05)
    assert set(out) == {(0, 1), None}
    # the stable histogram releases the largest noisy count, now and then not the mode
    assert set(released(answers, 1.0, 0.05, method="histogram")) <= {*answers, None}


def test_the_histogram_lets_a_lone_answer_through_with_probability_delta_over_two():
    delta = 0.05
    out = released([(0, 1)], 1.0, delta, method="histogram")
    rate = sum(a is not None for a in out) / RUNS
    assert abs(rate - delta / 2) < 4 * math.sqrt(delta / 2 * (1 - delta / 2) / RUNS)
    assert sum(a is not None for a in released([(0, 1)] * 40, 1.0, 1e-6, "histogram")) / RUNS > 0.99


def test_the_gap_needed_releases_with_the_promised_probability():
    """At g = gap_needed(eps, delta, beta) the mode comes out with probability >= 1 - beta."""
    epsilon, delta, beta = 1.0, 1e-3, 0.1
    gap = math.ceil(gap_needed(epsilon, delta, beta))
    answers = [(0, 1)] * (10 + gap) + [(1, 2)] * 10
    rate = sum(a is not None for a in released(answers, epsilon, delta, seed=3)) / RUNS
    assert rate >= 1 - beta - 4 * math.sqrt(beta * (1 - beta) / RUNS)


def test_blocks_are_uniform_and_a_neighbour_changes_one_block():
    block_of = assign_blocks(40_000, 40, rng=5)
    counts = np.bincount(block_of, minlength=40)
    assert counts.min() > 800 and counts.max() < 1200
    again = assign_blocks(40_001, 40, rng=5)  # one record more: the others keep their block
    assert np.array_equal(again[:40_000], block_of)


def test_subsample_and_aggregate_charges_one_entry_before_reading_the_data():
    domain = Domain(["a", "b"], [2, 2])
    data = Dataset(np.zeros((400, 2), dtype=np.int64), domain)
    budget = PrivacyBudget.approximate(1.0, 1e-6)
    seen = []

    def learner(block):
        seen.append(len(block))
        return ("same",)

    assert subsample_and_aggregate(data, learner, 40, 1.0, 1e-6, rng=1, budget=budget) == ("same",)
    assert sum(seen) == 400 and len(seen) == 40
    (entry,) = budget.ledger
    assert (entry.epsilon, entry.delta, entry.rho) == (1.0, 1e-6, None)
    assert "40 disjoint random blocks" in entry.accounting
    public = PublicOnly(domain)
    with pytest.raises(PrivacyParameterError, match="approximate"):
        subsample_and_aggregate(public, learner, 40, 1.0, 1e-6, budget=PrivacyBudget(rho=1))
    with pytest.raises(BudgetExceededError):
        subsample_and_aggregate(public, learner, 40, 1.0, 1e-6,
                                budget=PrivacyBudget.approximate(0.5, 1e-6))
    with pytest.raises(PrivacyParameterError, match="delta"):
        subsample_and_aggregate(public, learner, 40, 1.0, None)


@pytest.mark.parametrize("method", ["ptr", "histogram"])
def test_the_release_probability_is_what_the_draws_show(method):
    for votes, others, delta in ((30, 8, 1e-3), (40, 0, 1e-6), (21, 19, 0.05)):
        answers = [(0, 1)] * votes + [(1, 2)] * others
        rate = sum(a is not None for a in released(answers, 1.0, delta, method)) / RUNS
        expected = release_probability(votes, others, 1.0, delta, method)
        assert abs(rate - expected) < 4 * math.sqrt(expected * (1 - expected) / RUNS) + 1e-3


def test_too_few_blocks_are_refused_before_anything_is_spent():
    assert blocks_for(1.0, 1e-6) == 39  # the note's 40 blocks, within one
    m = blocks_for(1.0, 1e-9)
    agree = math.ceil(0.9 * m)
    assert release_probability(agree, m - agree, 1.0, 1e-9) >= 0.95
    budget = PrivacyBudget.approximate(1.0, 1e-9)
    with pytest.raises(ParameterError, match=f"at least {m} blocks"):
        subsample_and_aggregate(PublicOnly(Domain(["a"], [2])), lambda b: (), 40, 1.0, 1e-9,
                                budget=budget)
    assert budget.ledger == []


def test_a_learner_failing_on_some_blocks_votes_for_nothing_without_ending_the_run():
    domain = Domain(["a"], [2])
    data = Dataset(np.zeros((400, 1), dtype=np.int64), domain)
    calls = []

    def fragile(block):  # fails on every other block: a data-dependent failure
        calls.append(1)
        if len(calls) % 2:
            raise ValueError("no convergence")
        return ("edges",)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = subsample_and_aggregate(data, fragile, 40, 1.0, 0.05, rng=2)
        assert found in (("edges",), None)

        def broken(block):
            raise ValueError("always")

        assert subsample_and_aggregate(data, broken, 40, 1.0, 1e-6, rng=3) is None


def test_blocks_without_a_seed_come_from_the_os_source(monkeypatch):
    """Who shares a block is a secret partition: with rng=None it is drawn from os.urandom
    (through secret_uniforms, as a Poisson subsample is), never from NumPy's generator."""
    import os

    import dpgm.privacy.stability as stability

    drawn = []

    def urandom(size):
        drawn.append(size)
        return real(size)

    real = os.urandom
    monkeypatch.setattr(os, "urandom", urandom)

    def no_numpy(*args, **kwargs):
        raise AssertionError("NumPy's generator drew a secret partition")

    monkeypatch.setattr(stability.np.random, "default_rng", no_numpy)
    block_of = assign_blocks(40_000, 40)
    assert drawn == [8 * 40_000]
    counts = np.bincount(block_of, minlength=40)
    assert block_of.min() >= 0 and block_of.max() < 40
    assert counts.min() > 800 and counts.max() < 1200
    parts = assign_blocks(10_000, 2, shares=[0.3, 0.7])
    assert len(drawn) == 2 and 2_700 < np.sum(parts == 0) < 3_300


def test_empty_blocks_vote_for_nothing():
    """More blocks than records: the learner's answer on no records must not be counted
    (it says nothing about the data); the empty blocks vote for releasing nothing."""
    domain = Domain(["a"], [2])
    data = Dataset(np.zeros((5, 1), dtype=np.int64), domain)
    seen = []

    def learner(block):
        seen.append(len(block))
        return ("no edges",)  # what a learner gives on no data, too

    assert subsample_and_aggregate(data, learner, 100, 1.0, 1e-6, rng=4) is None
    assert seen and min(seen) > 0 and sum(seen) == 5


def test_no_release_possible_is_refused_quickly_before_anything_is_spent():
    """At a tiny epsilon no number of blocks up to MAX_BLOCKS can release: refused at once
    (the search starts where a release first becomes possible) instead of counting up."""
    from dpgm.privacy.stability import MAX_BLOCKS, check_blocks, fewest_blocks

    with pytest.raises(ParameterError, match="more than 1,000,000 blocks"):
        blocks_for(1e-5, 1e-9)
    assert fewest_blocks(1e-5, 1e-9) is None
    assert fewest_blocks(1.0, 1e-9) == 43 and check_blocks(43, 1.0, 1e-9) == 43
    with pytest.raises(ParameterError, match="blocks"):
        check_blocks(42, 1.0, 1e-9)
    with pytest.raises(ParameterError, match="more than the 1,000,000 blocks allowed"):
        check_blocks(MAX_BLOCKS + 1, 1.0, 1e-9)
    budget = PrivacyBudget.approximate(1e-5, 1e-9)
    with pytest.raises(ParameterError, match="more than"):
        subsample_and_aggregate(PublicOnly(Domain(["a"], [2])), lambda b: (), 1000, 1e-5,
                                1e-9, budget=budget)
    assert budget.ledger == []
