"""Loopy belief propagation on a factor graph: approximate marginals and the Bethe log Z.

For models whose junction tree is too large. The factors are the maximal cliques (a smaller
clique's potential belongs in a clique that contains it, as with a junction tree), each
attribute in no clique gets a factor of its own, and messages pass between factors and
single attributes (the Bethe approximation; Yedidia, Freeman & Weiss 2005):

    m_{v→f}(x_v) = Σ_{g ∋ v, g ≠ f} m_{g→v}(x_v)
    m_{f→v}(x_v) = log Σ_{x_f \\ x_v} exp(θ_f(x_f) + Σ_{u ∈ f, u ≠ v} m_{u→f}(x_u))

in log space, normalised, all at once per sweep, damped (new = (1 − d)·update + d·old).
The cliques of one shape are updated together, as arrays (a sweep over all the pairs of
binary attributes is a handful of NumPy calls). The messages are kept between calls, so a
call with nearby potentials (an iteration of estimation) starts from the last fixed point.
The Bethe log Z is Σ_f (⟨b_f, θ_f⟩ + H(b_f)) − Σ_v (d_v − 1) H(b_v). Where the factor
graph is a tree the fixed point is exact: the marginals and log Z equal the junction
tree's. On loopy graphs they are the Bethe approximation, and BP may not converge: every
call reports whether it did.

``counting="convex"`` gives every attribute the counting number +1 instead of Bethe's
1 − d_v: the free energy Σ_f (⟨b_f, θ_f⟩ + H(b_f)) + Σ_v H(b_v) is then concave in the
pseudo-marginals, with one maximiser, which message passing reaches from any start (the
fractional covering of Hazan & Shashua, and the oracle of McKenna et al.'s relaxed
marginal consistency, 2021). Only the attribute-to-factor message changes,
m_{v→f} = Σ_{g ∋ v} m_{g→v}/(1 + d_v) − m_{f→v}, and b_v ∝ exp(Σ_g m_{g→v}/(1 + d_v)).
It is not exact on trees, but it keeps mirror descent stable with long steps on dense
graphs, where Bethe's non-convexity makes the steps oscillate.

:class:`LoopyPlan` is an inference engine (:class:`~dpgm.inference.engine.Engine`), like
:class:`~dpgm.inference.belief_propagation.MessagePlan` (``cliques``, ``offsets``,
``shapes``, ``pack``, ``unpack``, ``find``, ``marginals(θ, total)``), so that estimation
and models run on either.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from dpgm.domain import Domain
from dpgm.errors import ParameterError
from dpgm.factor import logsumexp
from dpgm.inference.belief_propagation import CliqueLayout
from dpgm.inference.cliques import maximal
from dpgm.inference.region_graph import RegionGraph, largest_move
from dpgm.validation import integer, number, one_of


@dataclass(frozen=True)
class LoopyResult:
    """How the last :meth:`LoopyPlan.calibrate` ended."""

    converged: bool
    iterations: int
    change: float  # the largest change of a log-message in the last sweep


class LoopyPlan(CliqueLayout):
    """The approximate engine: loopy BP on the maximal ``cliques`` over ``domain`` (see the
    module docstring).

    ``damping`` d ∈ [0, 1) weighs the old message; sweeps stop when no log-message moves
    by more than ``tol`` or after ``max_iters`` sweeps.
    """

    tree = None  # approximate: no junction tree

    def __init__(
        self,
        domain: Domain,
        cliques: Iterable[Sequence[str]],
        *,
        damping: float = 0.5,
        tol: float = 1e-8,
        max_iters: int = 1000,
        counting: str = "bethe",
    ):
        found = maximal(domain.canonical(c) for c in cliques)
        covered = {a for c in found for a in c}
        self.damping = number("damping", damping, low=0.0, high=1.0, high_open=True)
        self.tol = number("tol", tol, low=0.0, low_open=True)
        self.max_iters = integer("max_iters", max_iters, least=1)
        self.counting = one_of("counting", counting, ("bethe", "convex"))
        super().__init__(domain, found + [(a,) for a in domain if a not in covered])
        self.degree = {a: sum(a in c for c in self.cliques) for a in domain}
        # Bethe: the factor graph, cliques of one shape batched; convex: the region graph,
        # its messages (up λ, down m) flat
        bethe = counting == "bethe"
        self._layout = self._groups() if bethe else []
        self._graph = None if bethe else RegionGraph(domain, self.cliques)
        self._messages = None  # Bethe: log m_{f→v}, by group and axis
        self.result = LoopyResult(False, 0, math.inf)

    @property
    def description(self) -> str:
        """How the engine infers, in words (its counting numbers)."""
        return f"approximate (loopy belief propagation, {self.counting})"

    def reset(self) -> None:
        """Forget the messages: the next call starts from uniform ones."""
        self._messages = None

    # -- message passing, batched over the cliques of one shape ---------------------------------
    def _groups(self) -> list[tuple[list[int], tuple[int, ...], list[np.ndarray]]]:
        """(cliques, shape, attribute numbers per axis) for each shape of clique."""
        by_shape: dict[tuple[int, ...], list[int]] = {}
        for f, shape in enumerate(self.shapes):
            by_shape.setdefault(shape, []).append(f)
        number = {a: i for i, a in enumerate(self.domain.attrs)}
        return [
            (members, shape, [np.array([number[self.cliques[f][j]] for f in members])
                              for j in range(len(shape))])
            for shape, members in by_shape.items()
        ]

    def _into(self, messages) -> np.ndarray:
        """Σ of the clique-to-attribute messages at each attribute (rows padded with 0)."""
        width = max(self.domain.shape)
        into = np.zeros((len(self.domain), width))
        for (_, shape, attrs), group in zip(self._layout, messages):
            for j, size in enumerate(shape):
                np.add.at(into[:, :size], attrs[j], group[j])
        return into

    @staticmethod
    def _axis(values: np.ndarray, j: int, arity: int) -> np.ndarray:
        """Messages ``(m, k_j)`` broadcast along axis ``j`` of ``(m, *shape)`` tables."""
        shape = [values.shape[0]] + [1] * arity
        shape[j + 1] = values.shape[1]
        return values.reshape(shape)

    def calibrate(self, log_potentials: list[np.ndarray]) -> tuple[list[np.ndarray], float]:
        """Clique beliefs (probabilities) and the approximate log Z for these log-potentials.

        Continues from the messages of the last call; :attr:`result` says whether the
        sweeps converged.
        """
        thetas = [np.asarray(t, dtype=np.float64) for t in log_potentials]
        if len(thetas) != len(self.cliques) or any(
            t.shape != s for t, s in zip(thetas, self.shapes)
        ):
            raise ParameterError("give one log-potential table per clique, shaped like it")
        if self._graph is not None:
            return self._calibrate_regions(thetas)
        layout = self._layout
        stacked = [np.stack([thetas[f] for f in members]) for members, _, _ in layout]
        messages = self._messages
        if messages is None:
            messages = [[np.full((len(members), k), -math.log(k)) for k in shape]
                        for members, shape, _ in layout]
        change, sweeps = math.inf, 0
        while sweeps < self.max_iters and change > self.tol:
            sweeps += 1
            into = self._into(messages)
            change = 0.0
            for g, ((_, shape, attrs), theta) in enumerate(zip(layout, stacked)):
                arity = len(shape)
                incoming = [  # attribute-to-clique messages, (m, k_j) per axis
                    self._axis(into[attrs[j], :k] - messages[g][j], j, arity)
                    for j, k in enumerate(shape)
                ]
                for j in range(arity):
                    psi = theta
                    for i, part in enumerate(incoming):
                        if i != j:
                            psi = psi + part
                    others = tuple(i + 1 for i in range(arity) if i != j)
                    new = logsumexp(psi, others) if others else psi
                    new = new - logsumexp(new, 1, keepdims=True)
                    old = messages[g][j]
                    step = (1.0 - self.damping) * new + self.damping * old
                    step = step - logsumexp(step, 1, keepdims=True)
                    change = max(change, largest_move(step, old))
                    messages[g][j] = step
        self._messages = messages
        self.result = LoopyResult(change <= self.tol, sweeps, change)
        into = self._into(messages)
        beliefs: list[np.ndarray] = [np.empty(0)] * len(self.cliques)
        log_z = 0.0
        for g, ((members, shape, attrs), theta) in enumerate(zip(layout, stacked)):
            log_b = theta
            for j, k in enumerate(shape):
                log_b = log_b + self._axis(into[attrs[j], :k] - messages[g][j], j, len(shape))
            axes = tuple(range(1, len(shape) + 1))
            belief = np.exp(log_b - logsumexp(log_b, axes, keepdims=True))
            log_z += _energy_and_entropy(belief, theta)
            for f, b in zip(members, belief):
                beliefs[f] = b
        # the attributes' entropies with Bethe's counting numbers 1 − d_v
        for v, a in enumerate(self.domain.attrs):
            k = self.domain[a]
            single = np.exp(into[v, :k] - logsumexp(into[v, :k]))
            log_z += (1.0 - self.degree[a]) * _entropy(single)
        return beliefs, log_z

    def _calibrate_regions(self, thetas: list[np.ndarray]) -> tuple[list[np.ndarray], float]:
        """:meth:`calibrate` with convex counting numbers, on the region graph."""
        graph = self._graph
        theta = np.concatenate([self.pack(thetas), np.zeros(graph.cells - self.offsets[-1])])
        up, down = self._messages if self._messages is not None else graph.initial()
        change, sweeps = math.inf, 0
        while sweeps < self.max_iters and change > self.tol:
            sweeps += 1
            up, down, change = graph.sweep(theta, up, down, self.damping)
        self._messages = (up, down)
        self.result = LoopyResult(change <= self.tol, sweeps, change)
        log_beliefs = graph.log_beliefs(theta, up)
        beliefs = [b.copy() for b in self.unpack(np.exp(log_beliefs[: self.offsets[-1]]))]
        return beliefs, graph.free_energy(theta, log_beliefs)

    def completion(self, attrs: Sequence[str], beliefs: list[np.ndarray]) -> np.ndarray:
        """The approximate marginal (probabilities, axes in ``attrs``'s order) of a set of
        attributes that no clique holds: the maximum-entropy table whose marginals on the
        set's overlaps with the cliques are the cliques' ``beliefs`` there.

        Found by iterative proportional fitting on the set's table (the caller bounds its
        size). Where the overlaps form a tree inside the set and the beliefs are exact,
        this is the exact marginal; otherwise it is an approximation, like the beliefs.
        """
        attrs = tuple(attrs)
        inside = set(attrs)
        shape = tuple(self.domain[a] for a in attrs)
        pieces: dict[tuple[str, ...], np.ndarray] = {}
        for f, clique in enumerate(self.cliques):
            piece = tuple(a for a in attrs if a in clique)
            if not piece or piece in pieces:
                continue
            drop = tuple(j for j, a in enumerate(clique) if a not in inside)
            table = beliefs[f].sum(axis=drop) if drop else beliefs[f]
            kept = [a for a in clique if a in inside]
            pieces[piece] = np.transpose(table, [kept.index(a) for a in piece])
        # only the largest pieces constrain: a piece inside another is implied by it
        kept_pieces = {p: t for p, t in pieces.items()
                       if not any(set(p) < set(q) for q in pieces)}
        return _max_entropy(shape, [([attrs.index(a) for a in p], t)
                                    for p, t in kept_pieces.items()])

    def marginals(self, log_potentials: np.ndarray, total: float) -> tuple[np.ndarray, float]:
        """Clique count tables (each summing to ``total``) as one flat vector, and the
        approximate log Z (Bethe or convex): the call estimation makes (see
        :meth:`MessagePlan.marginals`)."""
        beliefs, log_z = self.calibrate(self.unpack(log_potentials))
        return self.pack(beliefs) * total, log_z


def _max_entropy(
    shape: tuple[int, ...], targets: list[tuple[list[int], np.ndarray]],
    tol: float = 1e-10, sweeps: int = 200,
) -> np.ndarray:
    """The maximum-entropy table of ``shape`` with the given marginals (axes, table), by
    iterative proportional fitting from the uniform table."""
    table = np.full(shape, 1.0 / math.prod(shape))
    for _ in range(sweeps):
        change = 0.0
        for axes, target in targets:
            other = tuple(i for i in range(len(shape)) if i not in axes)
            current = table.sum(axis=other) if other else table
            order = np.argsort(axes)  # the target's axes in the table's order
            aligned = np.transpose(target, order)
            ratio = np.divide(aligned, current, out=np.zeros_like(current), where=current > 0)
            view = [shape[i] if i in axes else 1 for i in range(len(shape))]
            table = table * ratio.reshape(view)
            change = max(change, float(np.max(np.abs(current - aligned))))
        if change <= tol:
            break
    return table


def _entropy(p: np.ndarray) -> float:
    positive = p[p > 0]
    return float(-np.sum(positive * np.log(positive)))


def _energy_and_entropy(beliefs: np.ndarray, thetas: np.ndarray) -> float:
    """Σ over a batch of cliques of ⟨b, θ⟩ + H(b) (cells of probability 0 count 0)."""
    positive = beliefs > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(positive, beliefs * (thetas - np.log(beliefs)), 0.0)
    return float(terms.sum())
