"""The wifi stand-in (paper 000, §4.2) and the per-individual release it needs (the
note's check 12: every individual moves each released table by at most 1 in L1)."""

from __future__ import annotations

import numpy as np
import pytest

from dpgm.datasets.wifi import NULL, WifiChain, chain_edges, hourly_records
from dpgm.errors import BudgetExceededError
from dpgm.privacy import PrivacyBudget
from dpgm.privacy.measure import measure_per_individual


@pytest.fixture(scope="module")
def days():
    return WifiChain.draw(rng=0).simulate_days(300, rng=1)


def test_the_chain_is_a_chain_and_days_follow_it(days):
    chain = WifiChain.draw(rng=0)
    np.testing.assert_allclose(chain.transition.sum(axis=1), 1.0)
    np.testing.assert_allclose(chain.initial.sum(), 1.0)
    assert days.shape == (300, 144) and days.min() >= 0 and days.max() < 21
    # empirical transitions out of "not connected" match the chain's row
    big = chain.simulate_days(3000, rng=2)
    before, after = big[:, :-1].ravel(), big[:, 1:].ravel()
    stay = np.mean(after[before == NULL] == NULL)
    assert stay == pytest.approx(0.95, abs=0.005)


def exact_tables(data, owners, ignore):
    """The per-individual tables with no noise (a huge epsilon's noise is negligible)."""
    measured = measure_per_individual(data, owners, chain_edges(), epsilon=1e12, rng=0,
                                      ignore=ignore)
    return [m.values for m in measured]


def test_every_individual_moves_each_table_by_at_most_one(days):
    data, owners = hourly_records(days[:40])
    ignore = {f"slot{i}": NULL for i in range(6)}
    full = exact_tables(data, owners, ignore)
    for person in range(40):
        keep = owners != person
        without = exact_tables(type(data)(data.records[keep], data.domain), owners[keep], ignore)
        for a, b in zip(full, without):
            moved = np.abs(a - b).sum()
            assert moved <= 1.0 + 1e-6
    # someone connected at some point moves a table by exactly 1
    assert max(np.abs(a).sum() for a in full) > 0


def test_null_to_null_transitions_are_left_out(days):
    data, owners = hourly_records(days[:20])
    ignore = {f"slot{i}": NULL for i in range(6)}
    tables = exact_tables(data, owners, ignore)
    for table in tables:
        assert abs(table[0]) < 1e-6  # cell (null, null)
    plain = exact_tables(data, owners, None)
    assert plain[0][0] > 0


def test_the_release_charges_once_with_scale_tables_over_epsilon(days):
    data, owners = hourly_records(days[:50])
    budget = PrivacyBudget(epsilon=1.0)
    measured = measure_per_individual(data, owners, chain_edges(), epsilon=0.5, budget=budget,
                                      rng=3)
    assert [e.epsilon for e in budget.ledger] == [0.5]
    assert all(m.std == pytest.approx(np.sqrt(2) * 5 / 0.5) for m in measured)
    with pytest.raises(BudgetExceededError):
        measure_per_individual(data, owners, chain_edges(), epsilon=0.6, budget=budget, rng=3)
