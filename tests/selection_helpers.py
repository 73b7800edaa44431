"""Shared by the tests of the network selection (PrivBayes and bn learn): three binary
attributes and the exact law of the trees the selection draws on them."""

from __future__ import annotations

import numpy as np

from dpgm import Dataset, Domain
from dpgm.mechanisms.network_selection import R_SENSITIVITY


def triple(seed: int = 0, n: int = 1000) -> Dataset:
    """Three binary attributes: y = x with probability 0.85, z = x with probability 0.65."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 2, n)
    y = np.where(rng.random(n) < 0.85, x, 1 - x)
    z = np.where(rng.random(n) < 0.65, x, 1 - x)
    return Dataset(np.column_stack([x, y, z]), Domain(["x", "y", "z"], [2, 2, 2]))


def tree_law(scores: dict[frozenset, float], epsilon: float) -> dict[tuple, float]:
    """P(network) for degree 1 on three attributes: a uniform first attribute, then the
    exponential mechanism ∝ exp(ε·S/(2Δ)) over (child, parent) in each round."""
    attrs = ["x", "y", "z"]

    def softmax(values):
        w = np.exp(epsilon * (np.array(values) - max(values)) / (2 * R_SENSITIVITY))
        return w / w.sum()

    law = {}
    for first in attrs:
        children = [a for a in attrs if a != first]
        for c1, q1 in zip(children, softmax([scores[frozenset((c, first))] for c in children])):
            (last,) = [a for a in children if a != c1]
            parents = [a for a in attrs if a in (first, c1)]  # domain order
            for parent, q2 in zip(parents, softmax([scores[frozenset((last, p))]
                                                    for p in parents])):
                law[((first, ()), (c1, (first,)), (last, (parent,)))] = q1 * q2 / 3
    return law
