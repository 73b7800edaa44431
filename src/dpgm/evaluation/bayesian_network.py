"""Errors of a private Bayesian network against a reference one (no privacy spent).

The metrics of Roy Chowdhury et al. §5.1, as the implementation note fixes them: L1
distance and KL divergence D(P̃ ‖ P) — note the direction: the private table first — on
CPDs (every parent configuration) and on query answers; MAP accuracy; and the error
bounds of Thm 4.1 / 4.2 with the normalised error μ of Table 2. These read the reference
network (typically the MLE on the real data) without noise: for experiments and the data
steward's own checks, never for a release.

The implementation note is ``docs/notes/bn-data-dependent.md``; labels such as [C8] and [E10]
refer to it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import networkx as nx
import numpy as np

from dpgm.errors import DomainError
from dpgm.models.bayesian_network import BayesianNetwork

#: added to every cell (then renormalised) before a KL divergence, so that a cell the
#: reference gives probability 0 does not make it infinite (the note's [C14])
SMOOTHING = 1e-6


def l1(private: np.ndarray, reference: np.ndarray) -> float:
    """Σ |P̃ − P| over every cell."""
    return float(np.abs(np.asarray(private) - np.asarray(reference)).sum())


def smoothed(table: np.ndarray, smoothing: float = SMOOTHING) -> np.ndarray:
    """Each distribution over the last axis moved towards uniform: (p + s)/(1 + k·s)."""
    table = np.asarray(table, dtype=np.float64)
    return (table + smoothing) / (1.0 + table.shape[-1] * smoothing)


def kl(private: np.ndarray, reference: np.ndarray, smoothing: float = SMOOTHING) -> float:
    """D(P̃ ‖ P) = Σ P̃ ln(P̃ / P) over every cell (distributions on the last axis), both
    smoothed by :func:`smoothed`."""
    p, q = smoothed(private, smoothing), smoothed(reference, smoothing)
    return float(np.sum(p * np.log(p / q)))


def _same_structure(reference: BayesianNetwork, private: BayesianNetwork) -> None:
    if reference.variables != private.variables or reference.parents != private.parents:
        raise DomainError("the two networks differ in their variables or structure")


@dataclass(frozen=True)
class CPDErrors:
    """CPD errors averaged over the nodes: paper-literal sums over every cell, and the
    same per parent configuration (the note's [C13]); ``zero_cells`` of the reference."""

    l1: float
    l1_column: float
    kl: float
    kl_column: float
    zero_cells: int


def cpd_errors(reference: BayesianNetwork, private: BayesianNetwork) -> CPDErrors:
    """How far ``private``'s CPDs are from ``reference``'s (same structure and states)."""
    _same_structure(reference, private)
    l1s, kls, columns, zeros = [], [], [], 0
    for v in reference.variables:
        ref, priv = reference.cpds[v], private.cpds[v]
        l1s.append(l1(priv, ref))
        kls.append(kl(priv, ref))
        columns.append(ref.size // ref.shape[-1])
        zeros += int(np.count_nonzero(ref == 0))
    q = np.array(columns, dtype=np.float64)
    return CPDErrors(
        float(np.mean(l1s)), float(np.mean(np.array(l1s) / q)),
        float(np.mean(kls)), float(np.mean(np.array(kls) / q)), zeros,
    )


def map_accuracy(assignments: list[dict], references: list[dict]) -> float:
    """ρ: the share of MAP assignments equal to the reference's, exactly."""
    if len(assignments) != len(references) or not references:
        raise DomainError("give one assignment per reference assignment")
    return sum(a == r for a, r in zip(assignments, references)) / len(references)


# -- the error bounds of Thm 4.1 and 4.2, and μ (Table 2) ---------------------------------------
@dataclass(frozen=True)
class BoundConstants:
    """η = max (in + out degree) + 1, d = the largest domain, κ = the treewidth (min-fill
    on the moral graph) of a network: the constants of Thm 4.1 / 4.2."""

    eta: int
    d: int
    kappa: int


def bound_constants(network: BayesianNetwork) -> BoundConstants:
    """The constants of the bounds for ``network`` (public: structure and domains)."""
    from networkx.algorithms.approximation import treewidth_min_fill_in

    graph = network.graph
    eta = max(graph.in_degree(v) + graph.out_degree(v) for v in network.variables) + 1
    d = max(len(s) for s in network.states.values())
    kappa, _ = treewidth_min_fill_in(nx.moral_graph(graph))
    return BoundConstants(eta, d, int(kappa))


def error_bounds(
    reference: BayesianNetwork, private: BayesianNetwork, constants: BoundConstants | None = None
) -> tuple[float, float]:
    """(lower, upper) bounds of Thm 4.1 and 4.2 on a query's L1 error, evaluated once per
    run from the CPD-level errors (the note's [C8]): δ^min, δ^max the least and largest
    |Θ − Θ̃| over every CPD cell, φ^min the least reference CPD entry.

    Lower √(η − 1)·δ^min·(φ^min)^(η−2); upper 2·η·d^κ·δ^max. The bounds are heuristic
    (the note's [E10]): they serve the μ statistic only, never as a check of correctness.
    """
    _same_structure(reference, private)
    constants = constants or bound_constants(reference)
    gaps = np.concatenate([
        np.abs(reference.cpds[v] - private.cpds[v]).ravel() for v in reference.variables
    ])
    floor = min(float(reference.cpds[v].min()) for v in reference.variables)
    eta = constants.eta
    lower = math.sqrt(eta - 1) * float(gaps.min()) * floor ** (eta - 2)
    upper = 2.0 * eta * constants.d ** constants.kappa * float(gaps.max())
    return lower, upper


def normalised_error(error: float, bounds: tuple[float, float]) -> float:
    """μ = (δ − lower) / (upper − lower): where a query's L1 error lies between the bounds."""
    lower, upper = bounds
    return (error - lower) / (upper - lower) if upper > lower else math.nan


def query_error(private: np.ndarray, reference: np.ndarray) -> Mapping[str, float]:
    """L1 and KL (D(P̃‖P), smoothed) between two answers to one query (tables of one
    distribution: a marginal P[X], or a conditional P[X | Y = y])."""
    flat_private, flat_reference = np.ravel(private), np.ravel(reference)
    return {"l1": l1(flat_private, flat_reference), "kl": kl(flat_private, flat_reference)}
