"""A Bayesian network learnt privately, structure and CPDs (dpgm bn learn): its ledger,
its structure at large ε against the non-private greedy, the law of its selections, and
its refusals before reading the data."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from bn_helpers import load
from mechanism_helpers import PublicOnly
from scipy import stats
from selection_helpers import tree_law, triple

from dpgm import Dataset, Domain
from dpgm.bn.structure import structural_hamming_distance
from dpgm.errors import ModelTooLargeError, ParameterError
from dpgm.mechanisms import NetworkLearner
from dpgm.mechanisms.network_selection import (
    parent_sets,
    r_score,
    score_table_cells,
)


@pytest.fixture(scope="module")
def asia_data():
    return load("asia").sample(20_000, 0)


def test_the_ledger_is_exact(asia_data):
    epsilon, d = 1.0, len(asia_data.domain)
    learner = NetworkLearner(epsilon, structure_share=0.4, count_share=0.1,
                             parameters="dind", estimator="original")
    network = learner.fit(asia_data, rng=1)
    ledger = learner.budget.ledger
    structure = 0.4 * epsilon
    count = 0.1 * structure
    assert ledger[0].epsilon == pytest.approx(count, rel=1e-12)
    rounds = ledger[1:d]
    assert [e.label for e in rounds] == [f"round {t}: select" for t in range(1, d)]
    for entry in rounds:
        assert entry.epsilon == pytest.approx((structure - count) / (d - 1), rel=1e-12)
    tables = ledger[d:]
    assert len(tables) == 2 * d  # D-Ind: a family and a parent table per node
    for entry in tables:
        assert entry.epsilon == pytest.approx((epsilon - structure) / (2 * d), rel=1e-12)
    assert learner.budget.spent_epsilon == pytest.approx(epsilon, rel=1e-12)
    assert network.release.ledger == learner.budget.to_json()
    # the released network: the chosen structure, in state names, normalised CPDs
    assert network.parents == learner.parents
    assert network.states == load("asia").states
    for v in network.variables:
        np.testing.assert_allclose(network.cpds[v].sum(axis=-1), 1.0)


def _greedy_choices(data: Dataset, network: list, degree: int) -> list[set]:
    """For each round of ``network``: the pairs the non-private greedy could take there
    (the highest score, ties included; θ-usefulness off)."""
    attrs = data.domain.attrs
    inside, found = {network[0][0]}, []
    for child, _ in network[1:]:
        members = [a for a in attrs if a in inside]
        candidates = [(c, ps) for c in attrs if c not in inside
                      for ps in parent_sets(data.domain, c, members, degree, math.inf)]
        scores = np.array([r_score(data.marginal((c, *ps))) for c, ps in candidates])
        found.append({p for p, s in zip(candidates, scores) if s >= scores.max() - 1e-9})
        inside.add(child)
    return found


@pytest.mark.parametrize("name", ["asia", "sachs"])
@pytest.mark.parametrize(("method", "degree"), [("privbayes", 2), ("tree", 1)])
def test_at_a_huge_epsilon_the_structure_is_the_non_private_greedys(name, method, degree):
    """Each pick is the greedy's best; where scores tie exactly (Asia's deterministic
    node, a pair of Sachs's), one of the tied best."""
    data = load(name).sample(20_000, 0)
    learner = NetworkLearner(1e7, method=method, theta=1e-12, parameters="dind",
                             estimator="original")
    learner.fit(data, rng=3)
    best = _greedy_choices(data, learner.network, degree)
    assert all(pick in choices for pick, choices in zip(learner.network[1:], best))
    assert sum(len(choices) == 1 for choices in best) >= len(best) // 2  # mostly no tie
    if method == "tree":
        assert all(len(ps) <= 1 for ps in learner.parents.values())


def test_the_selections_follow_the_exponential_mechanisms_law():
    """Whole runs of the learner (tree, θ-usefulness off) on three binary attributes: the
    12 possible structures against their law by a chi-square test at significance 1e-3;
    the law with twice the ε per round must be rejected (the test's power)."""
    data = triple()
    scores = {frozenset((u, v)): r_score(data.marginal((u, v)))
              for u, v in (("x", "y"), ("x", "z"), ("y", "z"))}
    share, count_share = 0.5, 0.05
    epsilon_round = 0.012  # about a 0.7 chance of y over z as x's first child
    epsilon = 2 * epsilon_round / (share * (1 - count_share))
    learner = NetworkLearner(epsilon, method="tree", structure_share=share,
                             count_share=count_share, theta=1e-12, parameters="dind",
                             estimator="original")
    assert learner._split(3)[1] == pytest.approx(epsilon_round, rel=1e-12)
    law = tree_law(scores, epsilon_round)
    repeats = 1500
    outcomes = Counter()
    for seed in range(repeats):
        learner.fit(data, rng=seed)
        outcomes[tuple(learner.network)] += 1
    keys = sorted(law)
    assert set(outcomes) <= set(keys)
    observed = np.array([outcomes[k] for k in keys])
    assert stats.chisquare(observed, repeats * np.array([law[k] for k in keys])).pvalue > 1e-3
    wrong = tree_law(scores, 2 * epsilon_round)
    assert stats.chisquare(observed, repeats * np.array([wrong[k] for k in keys])).pvalue < 1e-3


def test_refuses_before_reading_when_the_score_tables_do_not_fit():
    domain = Domain([f"a{i}" for i in range(30)], [20] * 30)
    cells = score_table_cells(domain, 3)
    with pytest.raises(ModelTooLargeError, match="score tables of one selection round"):
        NetworkLearner(1.0, degree=3, max_memory=cells).fit(PublicOnly(domain), rng=0)
    # the bound holds what a round counts: here, degree 2 on ten small attributes
    small = Domain([f"b{i}" for i in range(10)], [3] * 10)
    assert score_table_cells(small, 2) == max((10 - t) * 9 * (1 + 3 * (t - 1))
                                              for t in range(1, 10))


def test_bad_options_fail_at_construction():
    with pytest.raises(ParameterError, match="method"):
        NetworkLearner(1.0, method="greedy")
    with pytest.raises(ParameterError, match="drop degree"):
        NetworkLearner(1.0, method="tree", degree=3)
    with pytest.raises(ParameterError, match="parameters"):
        NetworkLearner(1.0, parameters="paper")
    assert NetworkLearner(1.0, method="tree").degree == 1


def test_the_default_cpds_are_private_pgm_on_the_data_dependent_tables(asia_data):
    learner = NetworkLearner(2.0)
    network = learner.fit(asia_data, rng=2)
    assert learner.budget.spent_epsilon == pytest.approx(2.0, rel=1e-12)
    assert learner.learner.allocation_rule == "error"
    assert learner.learner.estimator == "pgm" and learner.model is not None
    assert network.parents == learner.parents


def test_structural_hamming_distance():
    true = {"a": (), "b": ("a",), "c": ("b",)}
    assert structural_hamming_distance(true, true) == 0
    assert structural_hamming_distance({"a": ("b",), "b": (), "c": ("b",)}, true) == 1
    assert structural_hamming_distance({"a": (), "b": (), "c": ("a",)}, true) == 3
