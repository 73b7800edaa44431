"""CGM-EM (Bernstein et al. 2017, Algorithm 2) with the exact dual E-step (the note's M2–M4).

The release is y = n + Laplace(b) on every cell of every clique table, b = |𝒞|/ε. EM
alternates an approximate-MAP E-step, the expected true tables given y under the current
model (Eq. 6):

    n_t = argmax_{n ∈ 𝓜_N}  θ_tᵀn + H(n) − ‖y − n‖₁/b,

and an M-step, moment matching to n_t. Eq. 6 has an exact dual (derived in the note,
§2.4): min over ‖g‖_∞ ≤ 1/b of N·A(θ + g) − gᵀy, whose solution gives n_t = N·μ(θ + g);
L-BFGS-B solves it with one belief propagation per evaluation. Its optimality
conditions are those of the paper's NLBP fixed point, so this is NLBP solved exactly.
With untied parameters on the same cliques the M-step is then exactly θ_{t+1} = θ_t + g.

Converged EM ends at an L1 projection of y onto the marginal polytope (the note's D3:
Private-PGM with the L1 loss), where KL to the truth can grow again (D4), so the stopping
rule matters: ``"discrepancy"`` (default) stops at the first t with ‖y − n_t‖₁ ≤ b·D,
D the number of released cells (E‖z‖₁ = b·D; public quantities only), ``"converge"`` when
the residual changes by less than 1e-6 of itself, and ``max_iters`` caps either.
Post-processing of y: no privacy is spent here.

Labels such as M2 and D3, and the § numbers of "the note", refer to the implementation
note ``docs/notes/cgm.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from dpgm.cgm.naive import Tying, check_tying, clique_oracle, maximise_likelihood, model_of
from dpgm.cgm.tables import flatten_tables
from dpgm.domain import Domain
from dpgm.estimation.algorithms import MarginalOracle
from dpgm.models.markov_random_field import MarkovRandomField
from dpgm.validation import integer, one_of, positive

STOPS = ("discrepancy", "converge")


@dataclass
class EMTrace:
    """What each EM iteration did: the L1 residual ‖y − n_t‖₁, and why EM stopped."""

    residuals: list[float] = field(default_factory=list)
    stopped: str = ""


def e_step(
    oracle: MarginalOracle, theta: np.ndarray, y: np.ndarray, scale: float
) -> tuple[np.ndarray, np.ndarray]:
    """Eq. 6 by its dual: the bounded shift g (|g| ≤ 1/b) and n = N·μ(θ + g)."""
    from scipy.optimize import minimize

    total = oracle.total

    def dual(g: np.ndarray) -> tuple[float, np.ndarray]:
        n, log_z = oracle.evaluate(oracle.lift(theta + g))
        return total * log_z - g @ y, n - y

    bound = 1.0 / scale
    found = minimize(dual, np.zeros(y.size), jac=True, method="L-BFGS-B",
                     bounds=[(-bound, bound)] * y.size,
                     options={"maxiter": 1000, "ftol": 1e-15, "gtol": 1e-9})
    g = found.x
    return g, oracle(oracle.lift(theta + g))


def nlbp(
    oracle: MarginalOracle,
    theta: np.ndarray,
    y: np.ndarray,
    scale: float,
    *,
    alpha: float | None = None,
    max_iters: int = 5000,
    tol: float = 1e-8,
) -> tuple[np.ndarray, int]:
    """Eq. 6 by non-linear belief propagation (Algorithm 1; Sun et al. 2015): the table
    n and the iterations it took.

    θ′ = θ + sign(y − n)/b, n′ = N·μ(θ′), n ← (1 − α)n + α n′, from n = N·μ(θ). The paper's
    fixed damping ``alpha`` does not converge under Laplace noise (sign(y − n) flips as n
    crosses y; the note's §2.4); ``alpha=None`` takes α_k = 1/(k + 2), a running average
    of the BP outputs, which does. Stops when ‖Δn‖₁/N < ``tol`` or after ``max_iters``.
    """
    n = oracle(oracle.lift(theta))
    for k in range(max_iters):
        shifted = theta + np.sign(y - n) / scale
        step = 1.0 / (k + 2) if alpha is None else alpha
        moved = step * (oracle(oracle.lift(shifted)) - n)
        n = n + moved
        if np.abs(moved).sum() < tol * oracle.total:
            return n, k + 1
    return n, max_iters


def cgm_em(
    domain: Domain,
    noisy: Mapping[Sequence[str], np.ndarray],
    total: float,
    scale: float,
    *,
    stop: str = "discrepancy",
    max_iters: int = 1000,
    e_step_method: str = "dual",
    alpha: float | None = None,
    callback: Callable[[int, float], object] | None = None,
    monitor: Callable[[int, MarkovRandomField], object] | None = None,
    tying: Tying | None = None,
) -> tuple[MarkovRandomField, EMTrace]:
    """The model CGM-EM fits to the noisy clique tables ``noisy`` (Laplace noise of scale
    ``scale`` = b per cell), with ``total`` = N records; and its trace.

    Starts from the uniform model; ``callback(iteration, residual)`` follows every
    iteration (the residual ‖y − n_t‖₁ is post-processing of y, safe to show);
    ``monitor(iteration, model)`` is given each iterate's model (for diagnostics such as
    KL to a known truth against the iteration count).
    ``e_step_method="nlbp"`` runs the paper's Algorithm 1 instead of the dual (``alpha``:
    its damping, None for the converging schedule), with a moment-matching M-step.
    ``tying`` (θ = M·w, as in :func:`~dpgm.cgm.naive.naive_mle`) ties parameters across
    cliques: the E-step is unchanged (its shift g is per clique) and the M-step becomes a
    real moment matching, argmax_w wᵀMᵀn_t − N·A(M·w), by L-BFGS from the last w.
    """
    total, scale = positive("total", total), positive("scale", scale)
    one_of("stop", stop, STOPS)
    one_of("e_step_method", e_step_method, ("dual", "nlbp"))
    max_iters = integer("max_iters", max_iters, least=1)
    cliques, y = flatten_tables(domain, noisy)
    oracle = clique_oracle(domain, cliques, total)
    theta = np.zeros(y.size)
    weights = None if tying is None else np.zeros(check_tying(tying, y.size).shape[1])
    trace = EMTrace()
    for t in range(1, max_iters + 1):
        if e_step_method == "dual":
            g, n = e_step(oracle, theta, y, scale)
        else:
            n, _ = nlbp(oracle, theta, y, scale, alpha=alpha)
        if e_step_method == "dual" and tying is None:
            theta = theta + g  # the M-step: μ(θ + g) = n/N already
        else:  # the M-step: moment matching to n
            if tying is None:
                theta = maximise_likelihood(oracle, n, theta, 1e-9)
            else:
                weights = maximise_likelihood(oracle, n, weights, 1e-9, tol=1e-7 * total,
                                              tying=tying)
                theta = tying @ weights
            n = oracle(oracle.lift(theta))
        residual = float(np.abs(y - n).sum())
        trace.residuals.append(residual)
        if callback is not None:
            callback(t, residual)
        if monitor is not None:
            monitor(t, model_of(oracle, theta))
        if stop == "discrepancy" and residual <= scale * y.size:
            trace.stopped = "discrepancy"
            break
        if stop == "converge" and t > 1 and abs(trace.residuals[-2] - residual) < 1e-6 * residual:
            trace.stopped = "converged"
            break
    else:
        trace.stopped = "max_iters"
    return model_of(oracle, theta), trace
