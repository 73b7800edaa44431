"""CGM-EM: the dual E-step solves Eq. 6, EM's limit is the L1 projection, stopping rules."""

from __future__ import annotations

import numpy as np
import pytest
from brute_force import joint

from dpgm import Domain, MarkovRandomField
from dpgm.cgm import cgm_em
from dpgm.cgm.em import e_step
from dpgm.errors import ParameterError
from dpgm.estimation import estimate
from dpgm.estimation.algorithms import MarginalOracle
from dpgm.estimation.losses import Loss
from dpgm.inference.belief_propagation import MessagePlan
from dpgm.inference.junction_tree import JunctionTree
from dpgm.measurement import Measurement

DOMAIN = Domain(list("abc"), [2, 3, 2])
CLIQUES = [("a", "b"), ("b", "c")]
TOTAL = 1000.0


def noisy_tables(seed: int, scale: float) -> dict:
    rng = np.random.default_rng(seed)
    truth = MarkovRandomField(DOMAIN, {c: rng.normal(size=DOMAIN.project(c).shape)
                                       for c in CLIQUES}, total=TOTAL)
    return {c: truth.marginal(c) + rng.laplace(0, scale, DOMAIN.project(c).shape)
            for c in CLIQUES}


@pytest.mark.parametrize("seed", range(3))
def test_the_dual_e_step_closes_the_duality_gap_of_eq_6(seed):
    """θᵀn + H(n) − ‖y − n‖₁/b at n = Nμ(θ + g*) equals N A(θ + g*) − g*ᵀy."""
    scale = 20.0
    layout = Loss(DOMAIN, CLIQUES)
    y = np.concatenate([t.ravel() for t in noisy_tables(seed, scale).values()])
    oracle = MarginalOracle(MessagePlan(JunctionTree.build(DOMAIN, CLIQUES)), layout, TOTAL)
    theta = np.random.default_rng(seed + 9).normal(0, 0.5, y.size)
    g, n = e_step(oracle, theta, y, scale)
    assert np.all(np.abs(g) <= 1 / scale + 1e-12)

    def brute(flat):
        return dict(zip(CLIQUES, layout.split(flat)))

    p, log_z = joint(DOMAIN, brute(theta + g))
    entropy = -float(np.sum(p[p > 0] * np.log(p[p > 0])))
    primal = theta @ n + TOTAL * entropy - np.abs(y - n).sum() / scale
    dual = TOTAL * log_z - g @ y
    assert primal == pytest.approx(dual, rel=1e-7)
    # and no other feasible n does better: shifts within the box only raise the dual
    for _ in range(5):
        other = np.clip(g + np.random.default_rng(_).normal(0, 0.01, g.size), -1 / scale,
                        1 / scale)
        _, other_log_z = joint(DOMAIN, brute(theta + other))
        assert TOTAL * other_log_z - other @ y >= dual - 1e-6


def test_converged_em_reaches_the_l1_projection():  # the note's D3
    scale = 2.0  # a large epsilon: EM's steps (|g| <= 1/b) are long enough to converge
    noisy = noisy_tables(0, scale)
    model, trace = cgm_em(DOMAIN, noisy, TOTAL, scale, stop="converge", max_iters=400)
    assert trace.stopped == "converged"
    em_residual = trace.residuals[-1]
    measured = [Measurement(c, t.ravel(), 1.0) for c, t in noisy.items()]
    l1 = estimate(DOMAIN, measured, total=TOTAL, loss="l1", iters=3000)
    l1_residual = sum(np.abs(l1.marginal(c) - t).sum() for c, t in noisy.items())
    assert em_residual == pytest.approx(l1_residual, rel=0.01)
    assert em_residual == pytest.approx(
        sum(np.abs(model.marginal(c) - t).sum() for c, t in noisy.items()), rel=1e-6)


def l1_projection_by_linear_programming(noisy: dict) -> float:
    """min ‖y − n‖₁ over tables n ≥ 0 of the chain a–b–c that agree on b and sum to N."""
    from scipy.optimize import linprog

    y = np.concatenate([noisy[("a", "b")].ravel(), noisy[("b", "c")].ravel()])
    d = y.size  # unknowns: n (d cells), then s ≥ |y − n| (d slacks)
    objective = np.concatenate([np.zeros(d), np.ones(d)])
    bounds = np.block([[-np.eye(d), -np.eye(d)], [np.eye(d), -np.eye(d)]])
    rows = []
    for b in range(3):  # Σ_a n_ab(a, b) = Σ_c n_bc(b, c)
        row = np.zeros(2 * d)
        row[[a * 3 + b for a in range(2)]] = 1.0
        row[[6 + b * 2 + c for c in range(2)]] = -1.0
        rows.append(row)
    total = np.zeros(2 * d)
    total[:6] = 1.0
    rows.append(total)
    found = linprog(objective, A_ub=bounds, b_ub=np.concatenate([-y, y]), A_eq=np.array(rows),
                    b_eq=[0.0, 0.0, 0.0, TOTAL], bounds=[(0, None)] * (2 * d))
    assert found.status == 0
    return float(found.fun)


@pytest.mark.parametrize(("scale", "seed"), [(2.0, 0), (20.0, 2), (60.0, 1)])
def test_converged_em_ends_at_the_minimum_of_the_l1_linear_program(scale, seed):
    """The note's check 9 (D3): ‖y − n_t‖₁ reaches min over 𝓜_N of ‖y − n‖₁."""
    noisy = noisy_tables(seed, scale)
    _, trace = cgm_em(DOMAIN, noisy, TOTAL, scale, stop="converge", max_iters=2000)
    assert trace.stopped == "converged"
    assert trace.residuals[-1] == pytest.approx(l1_projection_by_linear_programming(noisy),
                                                rel=1e-4)


def test_the_discrepancy_principle_stops_early_and_the_trace_says_why():
    scale = 5.0
    noisy = noisy_tables(1, scale)
    cells = sum(t.size for t in noisy.values())
    _, trace = cgm_em(DOMAIN, noisy, TOTAL, scale)
    assert trace.stopped == "discrepancy"
    assert trace.residuals[-1] <= scale * cells < trace.residuals[0]
    assert all(a >= b - 1e-6 for a, b in zip(trace.residuals, trace.residuals[1:]))
    seen = []
    _, capped = cgm_em(DOMAIN, noisy, TOTAL, scale, stop="converge", max_iters=2,
                       callback=lambda t, r: seen.append((t, r)))
    assert capped.stopped == "max_iters" and [t for t, _ in seen] == [1, 2]
    with pytest.raises(ParameterError, match="stop must be one of"):
        cgm_em(DOMAIN, noisy, TOTAL, scale, stop="never")


def eq6_objective(theta, n, y, scale, layout):
    """θᵀn + H(n) − ‖y − n‖₁/b, H(n) = N × the entropy of the max-entropy distribution
    with marginals n/N (found by moment matching, then enumerated)."""
    from dpgm.cgm.naive import clique_oracle, maximise_likelihood

    oracle = clique_oracle(DOMAIN, CLIQUES, TOTAL)
    fitted = maximise_likelihood(oracle, n, np.zeros(n.size), 1e-12, max_iters=5000, tol=1e-9)
    p, _ = joint(DOMAIN, dict(zip(CLIQUES, layout.split(fitted))))
    entropy = -float(np.sum(p[p > 0] * np.log(p[p > 0])))
    return theta @ n + TOTAL * entropy - np.abs(y - n).sum() / scale


def test_nlbp_with_the_decreasing_step_reaches_the_dual_e_steps_objective():
    from dpgm.cgm.em import nlbp

    scale = 20.0
    layout = Loss(DOMAIN, CLIQUES)
    y = np.concatenate([t.ravel() for t in noisy_tables(5, scale).values()])
    oracle = MarginalOracle(MessagePlan(JunctionTree.build(DOMAIN, CLIQUES)), layout, TOTAL)
    theta = np.random.default_rng(3).normal(0, 0.5, y.size)
    _, n_dual = e_step(oracle, theta, y, scale)
    n_nlbp, _ = nlbp(oracle, theta, y, scale, max_iters=5000)
    best = eq6_objective(theta, n_dual, y, scale, layout)
    assert eq6_objective(theta, n_nlbp, y, scale, layout) == pytest.approx(best, rel=1e-6)
    # the paper's fixed damping gets no further than the optimum (it may stop short of it:
    # sign(y - n) flips as n crosses y)
    n_fixed, _ = nlbp(oracle, theta, y, scale, alpha=0.2, max_iters=300)
    assert eq6_objective(theta, n_fixed, y, scale, layout) <= best + 1e-6 * abs(best)


def test_em_with_the_nlbp_e_step_follows_the_dual_one():
    scale = 5.0
    noisy = noisy_tables(2, scale)
    _, dual = cgm_em(DOMAIN, noisy, TOTAL, scale, stop="converge", max_iters=3)
    _, paper = cgm_em(DOMAIN, noisy, TOTAL, scale, stop="converge", max_iters=3,
                      e_step_method="nlbp")
    np.testing.assert_allclose(paper.residuals, dual.residuals, rtol=1e-2)
