"""Noiseless recovery and agreement of the two algorithms (Private-PGM Section 3).

With every clique measured exactly, the L2 (or L1) optimum is the true marginals and the
estimated model is the maximum-entropy model that has them; with cliques that form a
junction tree or come from the true model's own cliques that is the true distribution,
so every marginal, measured or not, must come back.
"""

from __future__ import annotations

import numpy as np
import pytest
from brute_force import marginal
from estimation_helpers import (
    brute_force_l2_optimum,
    brute_force_maxent,
    cycle_model,
    cycle_problem,
    exact_measurements,
    model_l2_loss,
    random_tree_problem,
    tv,
)

from dpgm import Measurement, estimate

METHODS = ("mirror_descent", "accelerated")
INITS = ("fit", "uniform")
TOTAL = 1000.0


def unmeasured_pairs(domain, cliques):
    """Every pair of attributes that no clique contains."""
    attrs = domain.attrs
    return [
        (a, b)
        for i, a in enumerate(attrs)
        for b in attrs[i + 1 :]
        if not any(a in c and b in c for c in cliques)
    ]


@pytest.mark.parametrize("init", INITS)
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_exact_marginals_on_a_junction_tree_are_recovered(seed, method, init):
    domain, cliques, p = random_tree_problem(seed)
    measurements = exact_measurements(domain, p, cliques, TOTAL)
    model = estimate(domain, measurements, total=TOTAL, method=method, init=init, iters=400)
    assert model.total == pytest.approx(TOTAL)
    for c in cliques:  # measured, in the measurement's attribute order
        assert tv(model.marginal(c), marginal(domain, p, c)) < 1e-3, c
    pairs = unmeasured_pairs(domain, cliques)
    assert pairs  # a tree on >= 4 attributes leaves pairs unmeasured
    for pair in pairs:  # implied by the max-ent model only
        assert tv(model.marginal(pair), marginal(domain, p, pair)) < 1e-3, pair
    assert tv(model.marginal(domain.attrs), p) < 1e-3


# init="fit" once put interactions outside the measured cliques' span into θ
INIT_MAX_ENT = ["uniform", "fit"]


@pytest.mark.parametrize("init", INITS)
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("seed", [0, 1])
def test_exact_marginals_on_a_cycle_are_recovered(seed, method, init):
    """The cliques of a 4-cycle are not a junction tree: the initial fit is not exact."""
    domain, cliques, p = cycle_problem(seed)
    measurements = exact_measurements(domain, p, cliques, TOTAL)
    model = estimate(domain, measurements, total=TOTAL, method=method, init=init, iters=600)
    for c in cliques:
        assert tv(model.marginal(c), marginal(domain, p, c)) < 1e-3, c


@pytest.mark.parametrize("init", INIT_MAX_ENT)
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("seed", [0, 1])
def test_cycle_estimate_is_the_max_ent_model(seed, method, init):
    """The true model has exactly the measured cliques, so it is the max-ent model with
    their marginals: the unmeasured chord q-e and the whole joint must come back too."""
    domain, cliques, p = cycle_problem(seed)
    measurements = exact_measurements(domain, p, cliques, TOTAL)
    model = estimate(domain, measurements, total=TOTAL, method=method, init=init, iters=600)
    assert tv(model.marginal(("q", "e")), marginal(domain, p, ("q", "e"))) < 1e-3
    assert tv(model.marginal(domain.attrs), p) < 1e-3


@pytest.mark.parametrize("init", INIT_MAX_ENT)
@pytest.mark.parametrize("method", METHODS)
def test_sampled_data_gives_the_brute_force_max_ent_model(method, init):
    """Data drawn with ``model.sample``: the estimate is the max-ent joint with the data's
    marginals, computed independently by proportional fitting over the full joint."""
    truth, cliques = cycle_model(0)
    domain = truth.domain
    data = truth.sample(20000, rng=11)
    targets = {c: data.marginal(c) for c in cliques}
    assert all(t.min() > 0 for t in targets.values())  # the max-ent model is interior
    reference = brute_force_maxent(domain, targets)
    measurements = [Measurement(c, t, 1.0) for c, t in targets.items()]
    model = estimate(domain, measurements, method=method, init=init, iters=600)
    assert model.total == pytest.approx(len(data))
    for c in cliques:
        assert tv(model.marginal(c), targets[c]) < 1e-3
    for pair in unmeasured_pairs(domain, cliques):
        assert tv(model.marginal(pair), marginal(domain, reference, pair)) < 1e-3, pair
    assert tv(model.marginal(domain.attrs), reference) < 1e-3


def noisy_problem(seed: int, std: float):
    domain, cliques, p = cycle_problem(seed)
    rng = np.random.default_rng(100 + seed)
    cliques = cliques + [("w",), ("t", "q")]
    measurements = []
    for k, c in enumerate(cliques):
        sd = std * (1 + k % 3)  # unequal noise levels across measurements
        exact = TOTAL * marginal(domain, p, c).ravel()
        measurements.append(Measurement(c, exact + rng.normal(0, sd, exact.size), sd))
    return domain, measurements


@pytest.mark.parametrize("seed", [0, 2])  # seed 2: slow for mirror descent
def test_mirror_descent_and_accelerated_reach_the_same_loss(seed):
    domain, measurements = noisy_problem(seed, std=10.0)
    # mirror descent needs more steps: the optimum has empty cells, which the fitted
    # start (noisy targets clipped at 1e-6) approaches only slowly
    md = estimate(domain, measurements, total=TOTAL, method="mirror_descent", iters=2000)
    acc = estimate(domain, measurements, total=TOTAL, method="accelerated", iters=800)
    loss_md = model_l2_loss(md, measurements)
    loss_acc = model_l2_loss(acc, measurements)
    assert loss_md == pytest.approx(loss_acc, rel=1e-2)
    # and both reach the minimum over the whole marginal polytope (brute force)
    optimum, _ = brute_force_l2_optimum(domain, measurements, TOTAL)
    assert optimum <= min(loss_md, loss_acc) * (1 + 1e-6)
    assert max(loss_md, loss_acc) <= optimum * 1.01 + 1e-6


def test_both_methods_from_uniform_agree_with_the_default_start():
    domain, measurements = noisy_problem(3, std=20.0)
    losses = [
        model_l2_loss(
            estimate(domain, measurements, total=TOTAL, method=m, init=i, iters=800),
            measurements,
        )
        for m in METHODS
        for i in INITS
    ]
    assert max(losses) <= min(losses) * 1.01


def test_loss_decreases_under_mirror_descent_line_search():
    domain, measurements = noisy_problem(4, std=5.0)
    seen: list[float] = []
    estimate(
        domain,
        measurements,
        total=TOTAL,
        method="mirror_descent",
        init="uniform",
        iters=200,
        callback=lambda t, v: seen.append(v),
    )
    assert all(b <= a * (1 + 1e-12) for a, b in zip(seen, seen[1:]))
    assert seen[-1] < 0.01 * seen[0]
