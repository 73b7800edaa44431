"""Workloads of counting queries over marginals, and the error of answering them.

A workload (Private-PGM Sec. 5.1) is a union of sub-workloads ``W_C``, one per clique
``C``: ``W_C = ⊗_{a ∈ C} W_a`` where ``W_a`` is the identity for a categorical attribute and
the prefix-range matrix (row ``z`` counts values ``0 … z``) for a numeric one. With only
categorical attributes ``W_C`` is the marginal on ``C``. Answers are counts; query ``z`` of
a prefix attribute sits at index ``z`` of its axis, so the answers to ``W_C`` form a table
shaped like the marginal, obtained by cumulative sums along the numeric axes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from itertools import combinations
from os import PathLike

import numpy as np

from dpgm.domain import Domain
from dpgm.errors import DomainError, DpgmError
from dpgm.random import as_generator


def prefix_matrix(size: int) -> np.ndarray:
    """``P`` with ``P[z, a] = 1`` for ``a ≤ z``: the prefix (CDF) queries of one attribute."""
    return np.tril(np.ones((size, size)))


class Workload:
    """Sub-workloads on ``cliques``; attributes in ``numeric`` are queried by prefix ranges."""

    def __init__(self, cliques: Iterable[Iterable[str]], numeric: Iterable[str] = ()):
        if isinstance(cliques, str):
            raise DpgmError(f"a workload is a list of attribute lists, got the string {cliques!r}")
        seen: dict[tuple[str, ...], None] = {}
        for clique in cliques:
            if isinstance(clique, str):
                clique = (clique,)
            clique = tuple(clique)
            if not clique or len(set(clique)) != len(clique):
                raise DpgmError(f"a workload clique needs distinct attributes, got {clique}")
            seen.setdefault(clique, None)
        if not seen:
            raise DpgmError("the workload has no cliques")
        self.cliques: list[tuple[str, ...]] = list(seen)
        self.numeric: frozenset[str] = frozenset(
            (numeric,) if isinstance(numeric, str) else numeric
        )

    # -- construction -----------------------------------------------------------------
    @classmethod
    def all_marginals(cls, domain: Domain, ways: int, numeric: Iterable[str] = ()) -> Workload:
        """Every ``ways``-way marginal of ``domain`` (all of its attributes if fewer)."""
        ways = min(int(ways), len(domain))
        return cls(combinations(domain.attrs, ways), numeric)

    @classmethod
    def random(
        cls,
        domain: Domain,
        count: int = 15,
        size: int = 3,
        numeric: Iterable[str] = (),
        rng: np.random.Generator | int | None = None,
    ) -> Workload:
        """``count`` distinct random ``size``-subsets of the attributes (Private-PGM Fig. 1)."""
        gen = as_generator(rng)
        attrs = list(domain.attrs)
        size = min(size, len(attrs))
        possible = len(list(combinations(range(len(attrs)), size)))
        if count > possible:
            raise DpgmError(f"only {possible} subsets of size {size} exist, asked for {count}")
        chosen: dict[tuple[str, ...], None] = {}
        while len(chosen) < count:
            picks = sorted(gen.choice(len(attrs), size=size, replace=False))
            chosen.setdefault(tuple(attrs[i] for i in picks), None)
        return cls(chosen, numeric)

    @classmethod
    def from_json(cls, spec) -> Workload:
        """From ``[[attrs], ...]`` or ``{"cliques": [[attrs], ...], "numeric": [attrs]}``."""
        if isinstance(spec, dict):
            unknown = set(spec) - {"cliques", "numeric"}
            if unknown or "cliques" not in spec:
                raise DpgmError(
                    "a workload object has keys 'cliques' and optionally 'numeric', "
                    f"got {sorted(spec)}"
                )
            cliques, numeric = spec["cliques"], spec.get("numeric", [])
        else:
            cliques, numeric = spec, []
        if not isinstance(cliques, list) or not all(
            isinstance(c, list) and all(isinstance(a, str) for a in c) for c in cliques
        ):
            raise DpgmError("a workload must be a JSON list of attribute-name lists")
        return cls(cliques, numeric)

    @classmethod
    def load(cls, path: str | PathLike[str]) -> Workload:
        """A workload JSON file (see :meth:`from_json`)."""
        try:
            with open(path) as f:
                spec = json.load(f)
        except json.JSONDecodeError as exc:
            raise DpgmError(f"{path}: not valid JSON ({exc})") from None
        return cls.from_json(spec)

    def to_json(self) -> dict:
        return {"cliques": [list(c) for c in self.cliques], "numeric": sorted(self.numeric)}

    def save(self, path: str | PathLike[str]) -> None:
        with open(path, "w") as f:
            json.dump(self.to_json(), f, indent=1)

    # -- structure --------------------------------------------------------------------
    def check(self, domain: Domain) -> Workload:
        """Raise :class:`DomainError` unless every attribute is in ``domain``; return self."""
        for clique in self.cliques:
            domain.check(clique)
        unknown = sorted(a for a in self.numeric if a not in domain)
        if unknown:
            raise DomainError(f"numeric attribute(s) {unknown} are not in the domain")
        return self

    def factor(self, attr: str, size: int) -> np.ndarray:
        """The per-attribute query matrix ``W_a`` (identity or prefix)."""
        return prefix_matrix(size) if attr in self.numeric else np.eye(size)

    def factors(self, clique: Sequence[str], domain: Domain) -> list[np.ndarray]:
        """``W_a`` for each attribute of ``clique``, in its order."""
        return [self.factor(a, domain[a]) for a in clique]

    def answer(self, clique: Sequence[str], table: np.ndarray) -> np.ndarray:
        """``W_C μ_C`` as a table shaped like ``table`` (axes in ``clique``'s order)."""
        answers = np.asarray(table, dtype=np.float64)
        for axis, attr in enumerate(clique):
            if attr in self.numeric:
                answers = np.cumsum(answers, axis=axis)
        return answers

    def answers(self, source) -> list[np.ndarray]:
        """Answers to every sub-workload, from anything with ``marginal(clique)``."""
        return [self.answer(c, source.marginal(c)) for c in self.cliques]

    def num_queries(self, domain: Domain) -> int:
        return int(sum(domain.size(c) for c in self.cliques))

    def query(self, clique: Sequence[str], index: Sequence[int], domain: Domain) -> np.ndarray:
        """Row ``index`` of ``W_C`` as a 0/1 table over the clique's cells."""
        rows = [self.factor(a, domain[a])[i] for a, i in zip(clique, index)]
        table = np.ones(())
        for row in rows:
            table = np.multiply.outer(table, row)
        return table

    def error(self, real, estimate) -> float:
        """Private-PGM's workload error (Sec. 5.1): mean of ``‖W_C(μ − μ̂)‖₁ / 2‖W_C μ‖₁``.

        ``real`` and ``estimate`` are anything with ``marginal(clique)`` (a Dataset or a
        model); each estimated marginal is rescaled to the real total first, so synthetic
        data of any size compare like distributions (with ``W_C = I`` this is the TV distance).
        """
        return float(np.mean(list(self.errors(real, estimate).values())))

    def errors(self, real, estimate) -> dict[tuple[str, ...], float]:
        """The summand of :meth:`error` for each clique."""
        found = {}
        for clique in self.cliques:
            truth = np.asarray(real.marginal(clique), dtype=np.float64)
            guess = np.asarray(estimate.marginal(clique), dtype=np.float64)
            if truth.shape != guess.shape:
                raise DomainError(f"marginals on {clique} differ in shape")
            scale = guess.sum()
            if not np.isfinite(scale) or scale <= 0:
                raise DpgmError(f"the estimated marginal on {clique} has no positive total")
            guess = guess * (truth.sum() / scale)
            exact = self.answer(clique, truth)
            denominator = 2.0 * np.abs(exact).sum()
            if denominator == 0:
                raise DpgmError(f"the real data have no records to compare on {clique}")
            found[clique] = float(np.abs(exact - self.answer(clique, guess)).sum() / denominator)
        return found

    def __len__(self) -> int:
        return len(self.cliques)

    def __iter__(self):
        return iter(self.cliques)

    def __repr__(self) -> str:
        return f"Workload({len(self.cliques)} cliques, numeric={sorted(self.numeric)})"


def as_workload(
    workload: Workload | Iterable[Iterable[str]] | None,
    domain: Domain,
    default_ways: int = 2,
    numeric: Iterable[str] = (),
) -> Workload:
    """``workload`` as a checked :class:`Workload`; None: all ``default_ways``-way marginals."""
    if workload is None:
        found = Workload.all_marginals(domain, default_ways, numeric)
    elif isinstance(workload, Workload):
        found = workload
    else:
        found = Workload(workload, numeric)
    return found.check(domain)
