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


#: a hinted elimination order is followed while its tables stay below this many cells
#: (or the largest input table); past it, the greedy order takes over
_HINT_CELLS = 1 << 16


def product_marginal(
    tables: Sequence[np.ndarray],
    scopes: Sequence[Sequence[str]],
    keep: Sequence[str],
    order: Sequence[str] | None = None,
) -> np.ndarray:
    """Σ over every variable not in ``keep`` of the product of non-negative ``tables``.

    ``tables[i]`` has one axis per name in ``scopes[i]``; the result has one axis per name
    in ``keep`` (each must occur in some scope). The same elimination as
    :func:`variable_elimination` in linear space, on bare arrays: for the many small
    queries of a Bayesian network, where building factors and domains would cost more
    than the arithmetic. Variables go in ``order`` (a hint, e.g. children before parents,
    which costs nothing to choose) while its tables stay small, then greedily (the
    variable whose elimination makes the smallest table first). The tables must not
    underflow in linear space (probabilities of a network of moderate size are fine).
    """
    # variables by number: einsum takes the numbers as axis labels (fewer than 52 of them)
    ids: dict[str, int] = {}
    numbered = [[ids.setdefault(a, len(ids)) for a in scope] for scope in scopes]
    missing = [a for a in keep if a not in ids]
    if missing:
        raise DomainError(f"no table mentions {missing}")
    sizes = [0] * len(ids)
    pool: dict[int, tuple[np.ndarray, list[int]]] = {}
    holders: list[set[int]] = [set() for _ in ids]
    for i, (table, scope) in enumerate(zip(tables, numbered, strict=True)):
        table = np.asarray(table)
        pool[i] = (table, scope)
        for a, size in zip(scope, table.shape):
            sizes[a] = size
            holders[a].add(i)
    kept = [ids[a] for a in keep]
    todo = set(range(len(ids))) - set(kept)
    hinted = [ids[v] for v in reversed(order or ()) if v in ids and ids[v] in todo]
    limit = max([_HINT_CELLS, *(t.size for t, _ in pool.values())])
    contract = _einsum if len(ids) <= _EINSUM_LABELS else _relabelled
    fresh = len(pool)

    def scope_of(v: int) -> set[int]:
        return {a for i in holders[v] for a in pool[i][1]}

    cost: dict[int, int] = {}  # greedy costs, once the hint is given up
    while todo:
        best = hinted.pop() if hinted else None  # the hint is a stack: next one last
        if best is not None:
            best_scope = scope_of(best)
            if math.prod(sizes[a] for a in best_scope) > limit:
                hinted, best = [], None
        if best is None:
            if not cost:  # an elimination changes its neighbours' costs only: keep the rest
                cost = {v: math.prod(sizes[a] for a in scope_of(v)) for v in todo}
            best = min(todo, key=lambda v: (cost[v], v))
            best_scope = scope_of(best)
        todo.discard(best)
        touching = holders[best]
        holders[best] = set()
        out = sorted(best_scope - {best})
        pool[fresh] = (contract([pool[i] for i in touching], out), out)
        for i in touching:
            for a in pool.pop(i)[1]:
                if a != best:
                    holders[a].discard(i)
        for a in out:
            holders[a].add(fresh)
        fresh += 1
        if cost:
            for a in out:
                if a in todo:
                    cost[a] = math.prod(sizes[b] for b in scope_of(a))
    return contract(list(pool.values()), kept)


#: how many distinct axis labels numpy's einsum accepts
_EINSUM_LABELS = 52


def _einsum(operands: list[tuple[np.ndarray, list[int]]], out: list[int]) -> np.ndarray:
    """The product of ``operands`` (tables and their axis numbers) summed onto ``out``."""
    args: list[object] = []
    for table, scope in operands:
        args += [table, scope]
    return np.einsum(*args, out)


def _relabelled(operands: list[tuple[np.ndarray, list[int]]], out: list[int]) -> np.ndarray:
    """:func:`_einsum` for any number of variables: the labels of one call renumbered."""
    label: dict[int, int] = {}
    renumbered = [(t, [label.setdefault(a, len(label)) for a in s]) for t, s in operands]
    return _einsum(renumbered, [label[a] for a in out])
