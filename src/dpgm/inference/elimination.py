"""Variable elimination over factors, in log space or (for signed factors) linear space."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

from dpgm.domain import Domain
from dpgm.errors import DomainError
from dpgm.factor import Factor, logsumexp


def _next_variable(factors: Sequence[Factor], candidates: set[str]) -> str:
    """The variable whose elimination creates the smallest table (greedy min-weight)."""
    best, best_cost = None, math.inf
    for v in sorted(candidates):
        scope: dict[str, int] = {}
        for f in factors:
            if v in f.domain:
                scope.update(f.domain.to_dict())
        cost = sum(math.log(s) for s in scope.values())
        if cost < best_cost:
            best, best_cost = v, cost
    return best  # type: ignore[return-value]


def _combine(factors: Sequence[Factor], log_space: bool) -> Factor:
    domain = factors[0].domain
    for f in factors[1:]:
        domain = domain.merge(f.domain)
    if log_space:
        values = np.zeros(domain.shape)
        for f in factors:
            values = values + f.broadcast_shape(domain)
    else:
        values = np.ones(domain.shape)
        for f in factors:
            values = values * f.broadcast_shape(domain)
    return Factor(domain, values)


def variable_elimination(
    factors: Iterable[Factor], keep: Sequence[str], log_space: bool = True
) -> tuple[Factor, float]:
    """Eliminate every variable not in ``keep`` from the product of ``factors``.

    In log space the factors are log-tables (product = sum, elimination = log-sum-exp)
    and the returned scale is 0. In linear space the factors may be signed (query
    matrices); each intermediate table is rescaled to max |value| = 1 and the result is
    ``factor * exp(scale)``.
    """
    pool = list(factors)
    keep = tuple(keep)
    scale = 0.0
    todo = {a for f in pool for a in f.attrs} - set(keep)
    while todo:
        v = _next_variable(pool, todo)
        todo.discard(v)
        touching = [f for f in pool if v in f.domain]
        pool = [f for f in pool if v not in f.domain]
        product = _combine(touching, log_space)
        axis = product.domain.axes([v])
        if log_space:
            reduced = Factor(product.domain.marginalize([v]), logsumexp(product.values, axis=axis))
        else:
            values = product.values.sum(axis=axis)
            peak = float(np.abs(values).max()) if values.size else 0.0
            if peak > 0:
                values = values / peak
                scale += math.log(peak)
            reduced = Factor(product.domain.marginalize([v]), values)
        pool.append(reduced)
    if not pool:
        return Factor(Domain((), ()), 0.0 if log_space else 1.0), scale
    result = _combine(pool, log_space)
    missing = [a for a in keep if a not in result.domain]
    if missing:
        raise DomainError(f"no factor mentions {missing}")
    return result.transpose(keep), scale
