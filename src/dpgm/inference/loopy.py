"""Loopy belief propagation on a factor graph: approximate marginals and the Bethe log Z.

For models whose junction tree is too large. The factors are the maximal cliques (a smaller
clique's potential belongs in a clique that contains it, as with a junction tree), each
attribute in no clique gets a factor of its own, and messages pass between factors and
single attributes (the Bethe approximation; Yedidia, Freeman & Weiss 2005):

    m_{v→f}(x_v) = Σ_{g ∋ v, g ≠ f} m_{g→v}(x_v)
    m_{f→v}(x_v) = log Σ_{x_f \\ x_v} exp(θ_f(x_f) + Σ_{u ∈ f, u ≠ v} m_{u→f}(x_u))

in log space, normalised, all at once per sweep, damped (new = (1 − d)·update + d·old).
The messages are kept between calls, so a call with nearby potentials (an iteration of
estimation) starts from the last fixed point. Where the factor graph is a tree the fixed
point is exact: the marginals and log Z equal the junction tree's. On loopy graphs they
are the Bethe approximation, and BP may not converge: every call reports whether it did.

:class:`LoopyPlan` has the layout of :class:`~dpgm.inference.belief_propagation.MessagePlan`
(``offsets``, ``shapes``, ``pack``, ``unpack``, ``marginals(θ, total)``, ``find``), so that
estimation can run on either.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from dpgm.domain import Domain
from dpgm.errors import ParameterError
from dpgm.factor import logsumexp
from dpgm.validation import integer, number


@dataclass(frozen=True)
class LoopyResult:
    """How the last :meth:`LoopyPlan.calibrate` ended."""

    converged: bool
    iterations: int
    change: float  # the largest change of a log-message in the last sweep


def maximal_cliques(cliques: Iterable[Sequence[str]]) -> list[tuple[str, ...]]:
    """The cliques contained in no other (first occurrence kept, order kept)."""
    unique: list[tuple[str, ...]] = []
    for clique in cliques:
        clique = tuple(clique)
        if clique and not any(set(clique) == set(u) for u in unique):
            unique.append(clique)
    return [c for c in unique if not any(set(c) < set(o) for o in unique)]


class LoopyPlan:
    """Loopy BP on the maximal ``cliques`` over ``domain`` (see the module docstring).

    ``damping`` d ∈ [0, 1) weighs the old message; sweeps stop when no log-message moves
    by more than ``tol`` or after ``max_iters`` sweeps.
    """

    def __init__(
        self,
        domain: Domain,
        cliques: Iterable[Sequence[str]],
        *,
        damping: float = 0.5,
        tol: float = 1e-8,
        max_iters: int = 1000,
    ):
        self.domain = domain
        found = maximal_cliques(domain.canonical(c) for c in cliques)
        covered = {a for c in found for a in c}
        self.cliques: list[tuple[str, ...]] = found + [(a,) for a in domain if a not in covered]
        self.damping = number("damping", damping, low=0.0, high=1.0, high_open=True)
        self.tol = number("tol", tol, low=0.0, low_open=True)
        self.max_iters = integer("max_iters", max_iters, least=1)
        self.shapes = [domain.project(c).shape for c in self.cliques]
        self.sizes = np.array([math.prod(s) for s in self.shapes], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)]).astype(np.int64)
        # the edges of the factor graph: (factor, attribute, axis of the attribute)
        self.edges = [(f, a, k) for f, c in enumerate(self.cliques) for k, a in enumerate(c)]
        self.degree = {a: sum(a in c for c in self.cliques) for a in domain}
        self._messages: list[np.ndarray] | None = None  # log m_{f→v}, one per edge
        self.result = LoopyResult(False, 0, math.inf)

    # -- the layout shared with MessagePlan ---------------------------------------------------
    def find(self, attrs: Iterable[str]) -> int | None:
        """Index of the smallest clique containing ``attrs``, or None."""
        attrs = set(attrs)
        holders = [i for i, c in enumerate(self.cliques) if attrs <= set(c)]
        return min(holders, key=lambda i: self.sizes[i]) if holders else None

    def pack(self, tables: list[np.ndarray]) -> np.ndarray:
        """Clique tables concatenated into one flat vector."""
        return np.concatenate([np.asarray(t, dtype=np.float64).ravel() for t in tables])

    def unpack(self, flat: np.ndarray) -> list[np.ndarray]:
        """Views of a flat vector as one table per clique."""
        return [
            flat[a:b].reshape(shape)
            for a, b, shape in zip(self.offsets, self.offsets[1:], self.shapes)
        ]

    def reset(self) -> None:
        """Forget the messages: the next call starts from uniform ones."""
        self._messages = None

    # -- message passing ------------------------------------------------------------------------
    def _incoming(self, messages: list[np.ndarray]) -> dict[str, np.ndarray]:
        """Σ of the factor-to-attribute messages at each attribute."""
        total = {a: np.zeros(self.domain[a]) for a in self.domain}
        for (_, a, _), m in zip(self.edges, messages):
            total[a] = total[a] + m
        return total

    def _to_factor(self, f: int, messages_in: dict, messages: list[np.ndarray], first: int):
        """θ_f plus every attribute-to-factor message, broadcast over the clique."""
        clique = self.cliques[f]
        parts = []
        for k, a in enumerate(clique):
            m = messages_in[a] - messages[first + k]  # m_{a→f}
            shape = [1] * len(clique)
            shape[k] = m.size
            parts.append(m.reshape(shape))
        return parts

    def calibrate(self, log_potentials: list[np.ndarray]) -> tuple[list[np.ndarray], float]:
        """Clique beliefs (probabilities) and the Bethe log Z for these log-potentials.

        Continues from the messages of the last call; :attr:`result` says whether the
        sweeps converged.
        """
        thetas = [np.asarray(t, dtype=np.float64) for t in log_potentials]
        if len(thetas) != len(self.cliques) or any(
            t.shape != s for t, s in zip(thetas, self.shapes)
        ):
            raise ParameterError("give one log-potential table per clique, shaped like it")
        messages = self._messages
        if messages is None:
            messages = [np.full(self.domain[a], -math.log(self.domain[a])) for _, a, _ in
                        self.edges]
        starts = np.cumsum([0] + [len(c) for c in self.cliques])
        change, sweeps = math.inf, 0
        while sweeps < self.max_iters and change > self.tol:
            sweeps += 1
            into = self._incoming(messages)
            updated = []
            for f, clique in enumerate(self.cliques):
                parts = self._to_factor(f, into, messages, starts[f])
                for k in range(len(clique)):
                    psi = thetas[f]
                    for j, part in enumerate(parts):
                        if j != k:
                            psi = psi + part
                    others = tuple(j for j in range(len(clique)) if j != k)
                    new = logsumexp(psi, others) if others else psi
                    updated.append(new - logsumexp(new))
            change = 0.0
            for i, (old, new) in enumerate(zip(messages, updated)):
                step = (1.0 - self.damping) * new + self.damping * old
                step = step - logsumexp(step)
                with np.errstate(invalid="ignore"):  # -inf - -inf: a zero that stays zero
                    moved = np.where(np.isneginf(step) & np.isneginf(old), 0.0, step - old)
                change = max(change, float(np.max(np.abs(moved))))
                messages[i] = step
        self._messages = messages
        self.result = LoopyResult(change <= self.tol, sweeps, change)
        into = self._incoming(messages)
        beliefs = []
        for f in range(len(self.cliques)):
            log_b = thetas[f]
            for part in self._to_factor(f, into, messages, starts[f]):
                log_b = log_b + part
            beliefs.append(np.exp(log_b - logsumexp(log_b)))
        return beliefs, self._bethe(thetas, beliefs)

    def _bethe(self, thetas: list[np.ndarray], beliefs: list[np.ndarray]) -> float:
        """log Z ≈ Σ_f (⟨b_f, θ_f⟩ + H(b_f)) − Σ_v (d_v − 1) H(b_v): minus the Bethe free
        energy at the beliefs (exact on a tree)."""

        def entropy(p: np.ndarray) -> float:
            positive = p[p > 0]
            return float(-np.sum(positive * np.log(positive)))

        value = 0.0
        singles: dict[str, np.ndarray] = {}
        for theta, belief, clique in zip(thetas, beliefs, self.cliques):
            value += float(np.sum(np.where(belief > 0, belief * theta, 0.0))) + entropy(belief)
            for k, a in enumerate(clique):
                if a not in singles:
                    others = tuple(j for j in range(len(clique)) if j != k)
                    singles[a] = belief.sum(axis=others) if others else belief
        for a, p in singles.items():
            value -= (self.degree[a] - 1) * entropy(p)
        return value

    def marginals(self, log_potentials: np.ndarray, total: float) -> tuple[np.ndarray, float]:
        """Clique count tables (each summing to ``total``) as one flat vector, and the
        Bethe log Z: the call estimation makes (see :meth:`MessagePlan.marginals`)."""
        beliefs, log_z = self.calibrate(self.unpack(log_potentials))
        return self.pack(beliefs) * total, log_z
