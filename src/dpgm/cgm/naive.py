"""Naive MLE on noisy sufficient statistics (Bernstein et al. 2017, §3.1; the note's M1).

θ̂_λ = argmax_θ θᵀt − N·A(θ) − λ‖θ‖²  over log-potentials θ on the model's cliques, with
targets t the noisy clique tables ("raw") or each table projected onto the tables of
N non-negative counts ("projected", Duchi et al.). λ is in count units. With λ = 0 the
maximum need not exist (a zero target, or inconsistent tables: the objective then grows
without bound along directions that leave the distribution unchanged), so λ > 0 is
required. Solved by L-BFGS with exact gradients t − N·μ(θ) − 2λθ from belief propagation
on the junction tree. Post-processing of the targets: no privacy is spent here.

Labels such as M1 refer to the implementation note ``docs/notes/cgm.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dpgm.cgm.tables import flatten_tables
from dpgm.domain import Domain
from dpgm.errors import ParameterError
from dpgm.estimation.algorithms import MarginalOracle
from dpgm.estimation.losses import Loss
from dpgm.estimation.projection import project_simplex
from dpgm.inference.belief_propagation import MessagePlan
from dpgm.inference.junction_tree import JunctionTree
from dpgm.models.markov_random_field import MarkovRandomField
from dpgm.validation import integer, positive

#: a tying of parameters: a (sparse or dense) matrix M with θ = M·w
Tying = Any

_RESTARTS = 10  # of L-BFGS, each with its own iteration cap


def projected_targets(
    targets: Mapping[Sequence[str], np.ndarray], total: float
) -> dict[tuple[str, ...], np.ndarray]:
    """Each table projected onto the non-negative tables summing to ``total`` (in L2)."""
    return {tuple(c): project_simplex(t, total) for c, t in targets.items()}


def naive_mle(
    domain: Domain,
    targets: Mapping[Sequence[str], np.ndarray],
    total: float,
    *,
    penalty: float = 1.0,
    max_iters: int = 1000,
    tol: float = 1e-6,
    tying: Tying | None = None,
) -> MarkovRandomField:
    """The model on the cliques of ``targets`` that maximises θᵀt − N A(θ) − λ‖θ‖².

    ``targets`` maps each clique to its (noisy) count table, axes in the clique's order;
    ``total`` is N, the number of records (public, as in the paper, or a noisy estimate);
    ``penalty`` is λ > 0 in count units. L-BFGS stops when no gradient entry exceeds
    ``tol`` (counts) or after ``max_iters`` iterations. ``tying`` (a matrix M, e.g.
    :func:`~dpgm.cgm.tables.shared_table_tying`, rows in the layout of the cliques each in
    domain order) ties the parameters: θ = M·w, and λ‖w‖² penalises w.
    """
    total = positive("total", total)
    penalty = positive("penalty", penalty)
    max_iters = integer("max_iters", max_iters, least=1)
    cliques, t = flatten_tables(domain, targets)
    oracle = clique_oracle(domain, cliques, total)
    start = np.zeros(t.size if tying is None else check_tying(tying, t.size).shape[1])
    weights = maximise_likelihood(oracle, t, start, penalty, max_iters, tol, tying)
    return model_of(oracle, weights if tying is None else tying @ weights)


def check_tying(tying: Tying, size: int) -> Tying:
    """``tying`` if it maps parameters onto ``size`` clique cells."""
    if tying.ndim != 2 or tying.shape[0] != size:
        raise ParameterError(f"a tying must have one row per clique cell ({size})")
    return tying


def clique_oracle(domain: Domain, cliques: list[tuple[str, ...]], total: float) -> MarginalOracle:
    """Exact marginals and log Z of a model with parameters on ``cliques`` (flat layout)."""
    return MarginalOracle(MessagePlan(JunctionTree.build(domain, cliques)), Loss(domain, cliques),
                          total)


def model_of(
    oracle: MarginalOracle, theta: np.ndarray, total: float | None = None
) -> MarkovRandomField:
    """The model whose log-potentials on the oracle's cliques are ``theta`` (flat), of
    ``total`` records (the oracle's total by default)."""
    return MarkovRandomField.from_tree(
        oracle.tree, oracle.plan.unpack(oracle.lift(theta)),
        oracle.total if total is None else total,
    )


def maximise_likelihood(
    oracle: MarginalOracle,
    targets: np.ndarray,
    start: np.ndarray,
    penalty: float,
    max_iters: int = 1000,
    tol: float = 1e-6,
    tying: Tying | None = None,
) -> np.ndarray:
    """argmax_θ θᵀt − N A(θ) − λ‖θ‖² from ``start`` (L-BFGS, exact gradients): the
    naive MLE, and with a vanishing λ on consistent tables the M-step of EM. With
    ``tying`` M the unknowns are w, θ = M·w (gradient Mᵀ(t − N·μ) − 2λw); w is returned."""
    from scipy.optimize import minimize

    total = oracle.total
    pulled = targets if tying is None else tying.T @ targets

    def objective(weights: np.ndarray) -> tuple[float, np.ndarray]:
        # θ lives on the model's cliques; the junction tree's cliques hold their sums
        theta = weights if tying is None else tying @ weights
        mu, log_z = oracle.evaluate(oracle.lift(theta))
        if tying is not None:
            mu = tying.T @ mu
        value = weights @ pulled - total * log_z - penalty * weights @ weights
        return -value, -(pulled - mu - 2.0 * penalty * weights)

    # L-BFGS can stop on "no relative reduction" far from the optimum when the curvature
    # is extreme (tables with zeros drive parameters far negative); a restart with a
    # fresh Hessian estimate goes on, until the gradient is small or nothing improves
    theta, best = start, np.inf
    for _ in range(_RESTARTS):
        found = minimize(objective, theta, jac=True, method="L-BFGS-B",
                         options={"maxiter": max_iters, "gtol": tol, "ftol": 1e-15})
        theta = found.x
        improved = found.fun < best - 1e-9 * abs(best) if np.isfinite(best) else True
        best = min(best, float(found.fun))
        if float(np.abs(found.jac).max()) <= tol or not improved:
            break
    return theta
