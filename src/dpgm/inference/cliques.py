"""Cliques: the attribute sets models hold tables on, and the set operations every engine
and mechanism shares."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from dpgm.domain import Domain

#: a set of attributes, as a tuple of names (most often in domain order)
Clique = tuple[str, ...]


def maximal(cliques: Iterable[Iterable[str]]) -> list[Clique]:
    """The non-empty cliques contained in no other, each once (as first given), in the
    order first met."""
    first: dict[frozenset[str], Clique] = {}
    for clique in cliques:
        clique = tuple(clique)
        if clique:
            first.setdefault(frozenset(clique), clique)
    # a clique lies inside another only if inside a larger one: look at them largest first,
    # each against the kept cliques that hold one of its attributes (thousands of cliques
    # are common, so not against all of them)
    kept: set[frozenset[str]] = set()
    by_attr: dict[str, list[frozenset[str]]] = {}
    for members in sorted(first, key=len, reverse=True):
        if any(members <= k for k in by_attr.get(next(iter(members)), ())):
            continue
        for a in members:
            by_attr.setdefault(a, []).append(members)
        kept.add(members)
    return [clique for members, clique in first.items() if members in kept]


def smallest_containing(cliques: Sequence[Sequence[str]], attrs: Iterable[str],
                        domain: Domain) -> int | None:
    """Index of the clique with the fewest cells that contains ``attrs`` (the first such
    on a tie), or None: where a model answers a marginal on ``attrs``."""
    attrs = frozenset(attrs)
    holders = [i for i, clique in enumerate(cliques) if attrs.issubset(clique)]
    return min(holders, key=lambda i: domain.size(cliques[i])) if holders else None
