"""CPDs from noisy count tables, and the released network (Algorithm 1, ComputeParameters).

Each node X_i with parents pa_i has two noisy tables: T̃_i over its family and T̃_pa over
its parents (for a root, the record count), measured by a learner through the privacy
layer (:func:`dpgm.mechanisms.bn.measure_node_tables`). Everything here is
post-processing of those tables. The implementation note is
``docs/notes/bn-data-dependent.md``; its choices [C3] and [C4] are cited below.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from dpgm.bn.structure import Parents, families
from dpgm.domain import Domain
from dpgm.estimation.consistency import mutual_consistency
from dpgm.models.bayesian_network import BayesianNetwork
from dpgm.models.markov_random_field import MarkovRandomField

#: how a family's noisy tables become a probability table before consistency ([C3]):
#: "conditional" — clipped columns of T̃_i normalised, times the clipped, normalised T̃_pa;
#: "joint" — the clipped T̃_i normalised as a whole (T̃_pa unused)
JOINTS = ("conditional", "joint")


@dataclass(frozen=True)
class NoisyTables:
    """A node's raw noisy counts (before any clipping) and the budget E_i they cost."""

    family: np.ndarray  # axes (*parents, node)
    parents: np.ndarray  # axes parents; 0-dimensional (a noisy record count) for a root
    epsilon: float

    @property
    def std(self) -> float:
        """Noise standard deviation of every cell: √2 · 2/E_i."""
        return math.sqrt(2.0) * 2.0 / self.epsilon


def normalised_columns(table: np.ndarray) -> np.ndarray:
    """Each column (last axis) clipped at 0 and normalised; a column with no mass is uniform."""
    clipped = np.clip(table, 0.0, None)
    total = clipped.sum(axis=-1, keepdims=True)
    k = table.shape[-1]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, clipped / total, 1.0 / k)


def _distribution(table: np.ndarray) -> np.ndarray:
    """Clip at 0 and normalise the whole table; no mass gives the uniform table."""
    clipped = np.clip(np.asarray(table, dtype=np.float64), 0.0, None)
    total = clipped.sum()
    return clipped / total if total > 0 else np.full(clipped.shape, 1.0 / max(clipped.size, 1))


def noisy_joint(tables: NoisyTables, joint: str = "conditional") -> np.ndarray:
    """A probability table over the family from its noisy counts ([C3], Alg. 1 line 4)."""
    if joint == "joint":
        return _distribution(tables.family)
    return normalised_columns(tables.family) * _distribution(tables.parents)[..., None]


def cpds_from_tables(
    parents: Parents,
    noisy: Mapping[str, NoisyTables],
    *,
    consistency: bool = True,
    joint: str = "conditional",
) -> dict[str, np.ndarray]:
    """CPDs from noisy tables: joint tables ([C3]), mutual consistency weighted by E_i
    (App. 8.2.1), then clipped, normalised columns ([C4]) (Alg. 1 lines 4–9)."""
    nodes = list(parents)
    tables = [noisy_joint(noisy[v], joint) for v in nodes]
    if consistency:
        largest = max(noisy[v].epsilon for v in nodes)  # the same means, no overflow
        tables = mutual_consistency(
            families(parents), tables, [noisy[v].epsilon / largest for v in nodes]
        )
    return {v: normalised_columns(t) for v, t in zip(nodes, tables)}


def _states(domain: Domain) -> dict[str, list[str]]:
    """Each attribute's state names: its labels as text, else its codes."""
    return {
        a: [str(x) for x in domain.labels[a]] if a in domain.labels else
        [str(i) for i in range(domain[a])]
        for a in domain.attrs
    }


def release_network(
    domain: Domain, parents: Parents, cpds: Mapping[str, np.ndarray], total: float, name: str = ""
) -> BayesianNetwork:
    """The released network: the public structure and states with the private CPDs.

    Its variables come in ``parents``'s order (the learners: the domain's; PrivBayes: the
    order it chose them in, which its sampling follows).
    """
    return BayesianNetwork(
        list(parents), _states(domain), dict(parents), dict(cpds), name, float(total)
    )


def noisy_total(noisy: Mapping[str, NoisyTables]) -> float:
    """The record count from the roots' noisy totals, inverse-variance weighted (≥ 0)."""
    roots = [t for t in noisy.values() if t.parents.ndim == 0]
    largest = max(t.epsilon for t in roots)
    weights = np.array([(t.epsilon / largest) ** 2 for t in roots])  # ε² overflows at 1e155
    values = np.array([float(t.parents) for t in roots])
    return max(float(weights @ values / weights.sum()), 0.0)


def network_from_model(model: MarkovRandomField, parents: Parents) -> BayesianNetwork:
    """The CPDs read off a model's family marginals (normalised columns; empty: uniform)."""
    cpds = {v: normalised_columns(model.marginal((*ps, v))) for v, ps in parents.items()}
    return release_network(model.domain, parents, cpds, model.total)
