"""Checks of :mod:`dpgm.bn`'s closed forms against their definitions (the experiment's and
the tests' oracles; exact inference, so small networks or a few nodes only)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from dpgm.bn import children
from dpgm.models import BayesianNetwork


def sensitivity_by_derivative(network: BayesianNetwork, node: str) -> float:
    """Eq. 8's Δ_i computed from its definition on ``network``'s CPDs (exact inference).

    P[Y = y] is linear in each CPD entry, so ∂P[Y=y]/∂Θ[x|u] is P[pa = u, Y = y] in the
    network whose CPD for ``node`` is the indicator of x (for every parent configuration).
    """
    parents = {v: tuple(network.parents[v]) for v in network.variables}
    kids = children(parents)[node]
    if not kids:
        return 0.0
    cpd = network.cpds[node]
    means = []  # for each x and child Y: the mean over (u, y) of P'[u, y]
    for x in range(cpd.shape[-1]):
        indicator = np.zeros_like(cpd)
        indicator[..., x] = 1.0
        clamped = replace(network, cpds={**network.cpds, node: indicator})
        for child in kids:
            table = clamped.model.marginal((*parents[node], child)) / clamped.total  # P'[u, y]
            means.append(table.mean())
    # every child has one entry per x: the plain mean is the mean over cells (x, u), children
    # Y and y of ∂P[Y=y]/∂Θ[x|u]
    return float(np.mean(means))
