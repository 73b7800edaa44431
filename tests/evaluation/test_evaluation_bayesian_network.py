"""Errors of a private network against a reference: L1, KL direction, smoothing, bounds, μ."""

from __future__ import annotations

import math

import numpy as np
import pytest
from bn_helpers import NETWORKS, load

from dpgm.errors import DomainError
from dpgm.evaluation import bayesian_network as ev
from dpgm.models import BayesianNetwork


def test_kl_is_private_against_reference_and_smoothed():
    p_private, p_reference = np.array([0.5, 0.5]), np.array([0.9, 0.1])
    by_hand = sum(a * math.log(a / b) for a, b in zip(ev.smoothed(p_private),
                                                       ev.smoothed(p_reference)))
    assert ev.kl(p_private, p_reference) == pytest.approx(by_hand)
    assert ev.kl(p_private, p_reference) != pytest.approx(ev.kl(p_reference, p_private))
    # a reference zero is finite after smoothing; equal tables give zero
    assert math.isfinite(ev.kl(np.array([0.5, 0.5]), np.array([1.0, 0.0])))
    assert ev.kl(p_reference, p_reference) == pytest.approx(0.0, abs=1e-15)
    np.testing.assert_allclose(ev.smoothed(np.array([[1.0, 0.0]])).sum(-1), 1.0)


def two_node(cpd_b):
    return BayesianNetwork(["a", "b"], {"a": ["0", "1"], "b": ["0", "1"]},
                           {"a": (), "b": ("a",)},
                           {"a": np.array([0.5, 0.5]), "b": np.asarray(cpd_b)})


def test_cpd_errors_by_hand():
    reference = two_node([[1.0, 0.0], [0.3, 0.7]])
    private = two_node([[0.8, 0.2], [0.3, 0.7]])
    errors = ev.cpd_errors(reference, private)
    assert errors.l1 == pytest.approx((0 + 0.4) / 2)  # mean over nodes of the cell sums
    assert errors.l1_column == pytest.approx((0 / 1 + 0.4 / 2) / 2)  # per parent config
    assert errors.zero_cells == 1
    assert ev.cpd_errors(reference, reference).l1 == 0.0
    with pytest.raises(DomainError, match="structure"):
        ev.cpd_errors(reference, BayesianNetwork(["a", "b"], reference.states,
                                                 {"a": (), "b": ()}, reference.cpds))


def test_map_accuracy():
    assert ev.map_accuracy([{"a": "x"}, {"a": "y"}], [{"a": "x"}, {"a": "x"}]) == 0.5


@pytest.mark.parametrize(("name", "eta", "d", "kappa"),
                         [("asia", 5, 2, 2), ("sachs", 8, 3, 3), ("child", 9, 6, 3),
                          ("alarm", 7, 4, 4)])
def test_bound_constants_of_the_four_networks(name, eta, d, kappa):  # the note's §2.7 table
    assert ev.bound_constants(load(name)) == ev.BoundConstants(eta, d, kappa)


def test_bounds_and_mu():
    reference = two_node([[0.9, 0.1], [0.3, 0.7]])
    private = two_node([[0.8, 0.2], [0.3, 0.7]])
    constants = ev.BoundConstants(eta=3, d=2, kappa=1)
    lower, upper = ev.error_bounds(reference, private, constants)
    assert lower == pytest.approx(math.sqrt(2) * 0.0 * 0.1)  # δ^min = 0 here
    assert upper == pytest.approx(2 * 3 * 2 * 0.1)
    assert ev.normalised_error(0.3, (0.0, 1.2)) == pytest.approx(0.25)
    assert math.isnan(ev.normalised_error(0.3, (0.0, 0.0)))


@pytest.mark.parametrize("name", NETWORKS)
def test_query_error_of_identical_answers_is_zero(name):
    network = load(name)
    table = network.probabilities([network.variables[0]])
    assert ev.query_error(table, table) == {"l1": 0.0, "kl": 0.0}
