"""Private structure learning (paper 001, Sec. 6; the note's section 2.6-2.7 and AC1)."""

from __future__ import annotations

import numpy as np
import pytest
from mechanism_helpers import PublicOnly

from dpgm import Domain
from dpgm.errors import DataError, ParameterError, PrivacyParameterError
from dpgm.models import IsingModel
from dpgm.mrf import ising_edges, learn_structure, threshold_edges
from dpgm.privacy import PrivacyBudget, cdp_rho


def chain(p: int) -> IsingModel:
    a = np.zeros((p, p))
    for i in range(p - 1):
        a[i, i + 1] = a[i + 1, i] = 0.4 * (-1) ** i
    return IsingModel(a, np.zeros(p), names=[f"x{i}" for i in range(p)])


@pytest.fixture(scope="module")
def sample():
    model = chain(5)
    return model, model.sample(40_000, rng=1)


def truth(p: int) -> list[tuple[str, str]]:
    return [(f"x{i}", f"x{i + 1}") for i in range(p - 1)]


def test_thresholding_keeps_the_pairs_above_it_once():
    a = np.array([[0, 0.2, -0.05], [0.2, 0, -0.3], [-0.05, -0.3, 0]])
    assert threshold_edges(a, 0.1) == ((0, 1), (1, 2))


def test_ptr_recovers_the_chain_with_one_epsilon_delta_entry(sample):
    _, data = sample
    estimate = learn_structure(data, 1.0, 1e-6, 0.8, 0.4, rng=2)
    assert estimate.edges == truth(5)
    (entry,) = estimate.budget.ledger
    assert (entry.epsilon, entry.delta, entry.rho) == (1.0, 1e-6, None)
    histogram = learn_structure(data, 1.0, 1e-6, 0.8, 0.4, method="histogram", rng=3)
    assert histogram.edges == truth(5)


def test_ptr_refuses_when_the_blocks_are_too_small_to_agree(sample):
    _, data = sample
    small = type(data)(data.records[:800], data.domain)  # 20 records a block
    assert ising_edges(type(data)(data.records[:20], data.domain), 0.8, 0.2, 150) != (
        (0, 1), (1, 2), (2, 3), (3, 4))
    assert learn_structure(small, 1.0, 1e-6, 0.8, 0.4, rng=4).edges is None


def test_the_zcdp_route_converts_its_rho_and_recovers_the_chain(sample):
    _, data = sample
    estimate = learn_structure(data, 4.0, 1e-6, 0.8, 0.4, method="zcdp", rng=5)
    assert estimate.edges == truth(5)
    (entry,) = estimate.budget.ledger
    assert (entry.epsilon, entry.delta) == (4.0, 1e-6)
    assert f"rho={cdp_rho(4.0, 1e-6):.6g}" in entry.accounting
    zcdp = PrivacyBudget(rho=cdp_rho(4.0, 1e-6))
    learn_structure(data, 4.0, 1e-6, 0.8, 0.4, method="zcdp", rng=5, budget=zcdp)
    assert zcdp.spent_rho == pytest.approx(cdp_rho(4.0, 1e-6), rel=1e-12)
    assert [e.label for e in zcdp.ledger][0].startswith("record count")


def test_what_is_knowable_in_advance_fails_before_the_data_are_read():
    binary = PublicOnly(Domain(["a", "b"], [2, 2]))
    with pytest.raises(DataError, match="binary"):
        learn_structure(PublicOnly(Domain(["a", "b"], [2, 3])), 1.0, 1e-6, 1.0, 0.3)
    with pytest.raises(PrivacyParameterError, match="delta"):
        learn_structure(binary, 1.0, None, 1.0, 0.3)
    with pytest.raises(PrivacyParameterError, match="approximate"):
        learn_structure(binary, 1.0, 1e-6, 1.0, 0.3, budget=PrivacyBudget(rho=1.0))
    with pytest.raises(PrivacyParameterError, match="zCDP budget"):
        learn_structure(binary, 1.0, 1e-6, 1.0, 0.3, method="zcdp",
                        budget=PrivacyBudget(epsilon=1.0))
    for bad in ({"blocks": 0}, {"steps": 1}, {"method": "mode"}):
        with pytest.raises(Exception, match=next(iter(bad))):
            learn_structure(binary, 1.0, 1e-6, 1.0, 0.3, **bad)


def test_more_blocks_than_records_never_release_the_empty_edge_set(sample):
    """200 blocks on 30 records: most blocks are empty. Their learner would give the empty
    edge set unanimously; they vote for nothing instead, and nothing is released."""
    _, data = sample
    few = type(data)(data.records[:30], data.domain)
    assert ising_edges(type(data)(data.records[:0], data.domain), 0.8, 0.2, 150) == ()
    estimate = learn_structure(few, 1.0, 1e-6, 0.8, 0.4, blocks=200, rng=6)
    assert estimate.edges is None
    assert len(estimate.budget.ledger) == 1  # paid for, as any run that reads the data


def test_a_release_that_is_impossible_is_refused_before_the_charge():
    """At epsilon 1e-5 the default blocks would be over MAX_BLOCKS: refused (naming the
    zCDP route) before the data are read or anything is charged; given blocks too few to
    release even when unanimous are refused the same way."""
    from dpgm.mrf.structure import structure_blocks

    binary = PublicOnly(Domain(["a", "b"], [2, 2]))
    budget = PrivacyBudget.approximate(1e-5, 1e-9)
    with pytest.raises(ParameterError, match="method='zcdp'"):
        learn_structure(binary, 1e-5, 1e-9, 1.0, 0.3, budget=budget)
    with pytest.raises(ParameterError, match="at least 57 blocks"):
        learn_structure(binary, 1.0, 1e-9, 1.0, 0.3, blocks=40, budget=budget)
    assert budget.ledger == []
    assert structure_blocks(1.0, 1e-9, "ptr", None) == 57
    assert structure_blocks(1e-5, 1e-9, "zcdp", None) is None
