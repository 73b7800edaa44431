"""Structural zeros: combinations of values that no record can have.

A :class:`Forbidden` pattern names a few attributes and, for each, the codes it matches;
the cells where every attribute matches are impossible (a cause of death for someone
alive). Constraints are public input, like the domain: estimation keeps these cells at
exactly zero probability and sampling never draws them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from dpgm.domain import Domain
from dpgm.errors import DomainError

#: the most cells a pattern may span: the estimator's own limit on a model's size
#: (dpgm.estimation.algorithms.DEFAULT_MAX_CELLS), as a model holds a table on them
MAX_PATTERN_CELLS = 50_000_000


@dataclass(frozen=True)
class Forbidden:
    """The cells of the marginal on ``attrs`` (domain order) where ``mask`` is True."""

    attrs: tuple[str, ...]
    mask: np.ndarray

    @classmethod
    def pattern(cls, domain: Domain, codes: Mapping[str, Iterable[int]]) -> Forbidden:
        """The cells where each attribute takes one of its listed codes."""
        if not codes:
            raise DomainError("a forbidden pattern needs at least one attribute")
        attrs = domain.canonical(codes)
        shape = domain.project(attrs).shape
        if domain.size(attrs) > MAX_PATTERN_CELLS:
            raise DomainError(
                f"a constraint on {list(attrs)} spans {domain.size(attrs):,} cells, over "
                f"{MAX_PATTERN_CELLS:,} (a model must hold a table on them): constrain fewer "
                "or smaller columns together")
        mask = np.ones(shape, dtype=bool)
        for axis, attr in enumerate(attrs):
            listed = np.zeros(domain[attr], dtype=bool)
            for code in codes[attr]:
                if isinstance(code, bool) or not 0 <= int(code) < domain[attr]:
                    raise DomainError(f"code {code!r} of {attr!r} is outside 0..{domain[attr] - 1}")
                listed[int(code)] = True
            view = [1] * len(attrs)
            view[axis] = domain[attr]
            mask &= listed.reshape(view)
        return cls(attrs, mask)

    def check(self, domain: Domain) -> Forbidden:
        """This pattern, checked against ``domain``."""
        attrs = domain.canonical(self.attrs)
        if attrs != tuple(self.attrs):
            raise DomainError(f"forbidden cells on {self.attrs}: list them in domain order")
        mask = np.asarray(self.mask, dtype=bool)
        if mask.shape != domain.project(attrs).shape:
            raise DomainError(
                f"forbidden cells on {attrs}: mask of shape {mask.shape}, "
                f"expected {domain.project(attrs).shape}"
            )
        return Forbidden(attrs, mask)


def check_forbidden(domain: Domain, forbidden: Iterable[Forbidden]) -> list[Forbidden]:
    """The patterns checked against ``domain``; refuses a set that forbids every record.

    Whether every record is forbidden is decided on the union of the patterns'
    attributes, which must be small enough to enumerate.
    """
    patterns = [f.check(domain) for f in forbidden]
    if not patterns:
        return patterns
    attrs = domain.canonical({a for f in patterns for a in f.attrs})
    if domain.size(attrs) <= 10_000_000:
        allowed = allowed_cells(domain, attrs, patterns)
        if not allowed.any():
            raise DomainError("the constraints forbid every record")
    return patterns


def allowed_cells(
    domain: Domain, attrs: Iterable[str], forbidden: Iterable[Forbidden]
) -> np.ndarray:
    """Boolean table on ``attrs`` (domain order): False where a pattern inside forbids the cell.

    Patterns on attributes outside ``attrs`` are ignored.
    """
    attrs = domain.canonical(attrs)
    allowed = np.ones(domain.project(attrs).shape, dtype=bool)
    for pattern in forbidden:
        if not set(pattern.attrs) <= set(attrs):
            continue
        shape = [domain[a] if a in pattern.attrs else 1 for a in attrs]
        allowed &= ~pattern.mask.reshape(shape)
    return allowed


def evidence_possible(
    domain: Domain, forbidden: Iterable[Forbidden], evidence: Mapping[str, Iterable[int]]
) -> bool:
    """Whether some record holds the evidence (each attribute one of its codes) and no
    pattern forbids it: decided on the evidence's and the patterns' attributes, the only
    ones a pattern constrains (True where they are too many to enumerate)."""
    patterns = list(forbidden)
    if not patterns or not evidence:
        return True
    attrs = domain.canonical({*evidence, *(a for f in patterns for a in f.attrs)})
    if domain.size(attrs) > 10_000_000:
        return True
    allowed = allowed_cells(domain, attrs, patterns)
    index = tuple(sorted({int(c) for c in evidence[a]}) if a in evidence else slice(None)
                  for a in attrs)
    for axis, chosen in enumerate(index):  # one axis at a time: a product of the choices
        if not isinstance(chosen, slice):
            allowed = np.take(allowed, chosen, axis=axis)
    return bool(allowed.any())
