"""Exact sum-product and max-product message passing on a junction tree, in log space.

Every clique table keeps its axes in domain order, so a separator has the same axis
order in both cliques it joins: a message reduced with ``keepdims`` in one clique is
moved into the other by a plain reshape, never a transpose. That keeps each message to a
handful of NumPy calls, which matters on trees with thousands of cliques.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from dpgm.domain import Domain
from dpgm.inference.cliques import Clique, smallest_containing
from dpgm.inference.junction_tree import JunctionTree

LINEAR_RANGE = 600.0  # widest log-potential range passed in linear space (exp(-600) > 0)
_FLOOR = -1e300  # stands in for a -inf maximum so that exp(b - max) stays defined
# the ufuncs' own reductions: ndarray.sum/max add a Python-level wrapper per call, which
# shows on trees with thousands of cliques
_add = np.add.reduce
_max = np.maximum.reduce
_min = np.minimum.reduce
#: messages with no cell below this may divide a belief (no overflow, no subnormals)
_SAFE_DIVISOR = 1e-250


def _reduce_logsumexp(values: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    if not axes:
        return values
    peak = _max(values, axis=axes, keepdims=True)
    np.maximum(peak, _FLOOR, out=peak)
    total = _add(np.exp(values - peak), axis=axes, keepdims=True)
    np.log(total, out=total)  # callers silence the divide warning of an all -inf slice
    total += peak
    return total


def _reduce_max(values: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    return _max(values, axis=axes, keepdims=True) if axes else values


@dataclass
class Calibration:
    """Result of message passing: unnormalised log beliefs per clique and log Z."""

    log_beliefs: list[np.ndarray]
    log_partition: float
    upward: list[np.ndarray | None]
    downward: list[np.ndarray | None]

    def log_marginals(self) -> list[np.ndarray]:
        """Normalised log clique marginals (sum-product) or max-marginals (max-product)."""
        return [b - self.log_partition for b in self.log_beliefs]


class CliqueLayout:
    """Tables on ``cliques`` over ``domain`` as one flat vector (the layout estimation works
    in): each clique's shape, size and offset; :meth:`pack`, :meth:`unpack` and
    :meth:`find`, the part of the :class:`~dpgm.inference.engine.Engine` protocol that both
    engines share."""

    def __init__(self, domain: Domain, cliques: Sequence[Clique]):
        self.domain = domain
        self.cliques: list[Clique] = list(cliques)
        self.shapes = [domain.project(c).shape for c in cliques]
        self.sizes = np.array([int(np.prod(s)) for s in self.shapes], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)]).astype(np.int64)

    def pack(self, tables: list[np.ndarray]) -> np.ndarray:
        """Clique tables concatenated into one flat vector (the layout of ``marginals``)."""
        return np.concatenate([np.asarray(t, dtype=np.float64).ravel() for t in tables])

    def unpack(self, flat: np.ndarray) -> list[np.ndarray]:
        """Views of a flat vector as one table per clique."""
        return [
            flat[a:b].reshape(shape)
            for a, b, shape in zip(self.offsets, self.offsets[1:], self.shapes)
        ]

    def find(self, attrs: Iterable[str]) -> int | None:
        """Index of the smallest clique containing ``attrs``, or None."""
        return smallest_containing(self.cliques, attrs, self.domain)


class MessagePlan(CliqueLayout):
    """The exact engine (:class:`~dpgm.inference.engine.Engine`): belief propagation on one
    junction tree, with the axis bookkeeping of its messages computed once."""

    description = "exact"

    def __init__(self, tree: JunctionTree):
        super().__init__(tree.domain, tree.cliques)
        self.tree = tree
        domain = tree.domain
        n = len(tree.cliques)
        self.up_axes: list[tuple[int, ...]] = [()] * n  # axes of i summed out towards its parent
        self.up_shape: list[tuple[int, ...]] = [()] * n  # message i->parent shaped for the parent
        self.down_axes: list[tuple[int, ...]] = [()] * n  # axes of parent summed out towards i
        self.down_shape: list[tuple[int, ...]] = [()] * n  # message parent->i shaped for i
        for i, p in enumerate(tree.parent):
            if p < 0:
                continue
            sep = set(tree.separator(i))
            child, par = tree.cliques[i], tree.cliques[p]
            self.up_axes[i] = tuple(k for k, a in enumerate(child) if a not in sep)
            self.up_shape[i] = tuple(domain[a] if a in sep else 1 for a in par)
            self.down_axes[i] = tuple(k for k, a in enumerate(par) if a not in sep)
            self.down_shape[i] = tuple(domain[a] if a in sep else 1 for a in child)

    def find(self, attrs: Iterable[str]) -> int | None:
        """Index of the smallest clique containing ``attrs``, or None (the tree's index)."""
        return self.tree.find(attrs)

    def calibrate(
        self, log_potentials: list[np.ndarray], mode: str = "sum", finite: bool = False
    ) -> Calibration:
        """Pass messages up and down the tree; ``mode`` is ``"sum"`` or ``"max"``.

        ``finite=True`` promises that no log-potential is ``-inf``, which skips a check
        per message.
        """
        with np.errstate(divide="ignore"):
            return self._calibrate(log_potentials, mode, finite)

    def _calibrate(self, log_potentials: list[np.ndarray], mode: str, finite: bool) -> Calibration:
        reduce = _reduce_logsumexp if mode == "sum" else _reduce_max
        tree = self.tree
        n = len(log_potentials)
        upward: list[np.ndarray | None] = [None] * n
        downward: list[np.ndarray | None] = [None] * n
        # inbound[i] = potential of i plus messages from its children
        inbound: list[np.ndarray] = [None] * n  # type: ignore[list-item]
        for i in reversed(tree.order):
            acc = log_potentials[i]
            kids = tree.children[i]
            if kids:
                acc = acc + upward[kids[0]]
                for c in kids[1:]:
                    acc += upward[c]
            inbound[i] = acc
            if tree.parent[i] >= 0:
                upward[i] = reduce(acc, self.up_axes[i]).reshape(self.up_shape[i])
        beliefs: list[np.ndarray] = [None] * n  # type: ignore[list-item]
        for i in tree.order:
            p = tree.parent[i]
            if p < 0:
                beliefs[i] = inbound[i]
                continue
            up = upward[i]
            if not finite and np.isneginf(up).any():
                # the parent's belief minus this message is undefined where the message is
                # -inf: rebuild the parent's other inputs explicitly
                rest = log_potentials[p] + (downward[p] if downward[p] is not None else 0.0)
                for c in tree.children[p]:
                    if c != i:
                        rest = rest + upward[c]
            else:
                rest = beliefs[p] - up
            downward[i] = reduce(rest, self.down_axes[i]).reshape(self.down_shape[i])
            beliefs[i] = inbound[i] + downward[i]
        root = tree.order[0]
        if mode == "sum":
            log_z = float(
                _reduce_logsumexp(beliefs[root], tuple(range(beliefs[root].ndim))).reshape(())
            )
        else:
            log_z = float(beliefs[root].max()) if beliefs[root].size else 0.0
        return Calibration(beliefs, log_z, upward, downward)

    def marginals(self, log_potentials: np.ndarray, total: float) -> tuple[np.ndarray, float]:
        """Clique count tables (each summing to ``total``) as one flat vector, and log Z.

        The fast path of estimation: ``log_potentials`` is flat (see :meth:`pack`), finite
        but for structural zeros (``-inf``). Messages pass in linear space on
        ``exp(θ − max θ)`` per clique, each rescaled to max 1 with its log-scale kept,
        which takes about half the NumPy calls of log space; the per-clique work around
        them is batched over the flat vector.
        Where a clique's log-potentials span more than ``LINEAR_RANGE`` (so that ``exp``
        could underflow cells that matter), or where messages that peak on different
        cells multiply below the smallest double, it falls back to log-space
        :meth:`calibrate`.
        """
        starts = self.offsets[:-1]
        peaks = np.maximum.reduceat(log_potentials, starts)
        lows = np.minimum.reduceat(log_potentials, starts)
        finite = not np.isneginf(lows).any()
        if not finite:  # structural zeros: exp(-inf) = 0 is exact, the range is the rest's
            lows = np.minimum.reduceat(
                np.where(np.isneginf(log_potentials), np.inf, log_potentials), starts
            )
        found = None
        if not np.any(peaks - lows > LINEAR_RANGE):
            with np.errstate(under="ignore"):
                psi = np.exp(log_potentials - np.repeat(peaks, self.sizes))
                found = self._linear_marginals(self.unpack(psi), peaks.tolist(), total)
        if found is None:  # past the range, or a product of messages underflowed
            cal = self.calibrate(self.unpack(log_potentials), "sum", finite=finite)
            shift = cal.log_partition - math.log(total)
            return self.pack([np.exp(b - shift) for b in cal.log_beliefs]), cal.log_partition
        return found

    def _linear_marginals(
        self, psi: list[np.ndarray], peaks: list[float], total: float,
        known: list | None = None, keep: list | None = None,
        wanted: list[bool] | None = None,
    ) -> tuple[np.ndarray, float] | None:
        """The linear-space pass; None where a product of messages lost its range
        (each clique's range is bounded, but messages peaking on different cells of one
        clique can multiply below the smallest double).

        ``known[i]``, where not None, is clique i's upward message and its log-scale from
        an earlier pass whose potentials below i were the same: it is used as it is.
        ``keep``, a list of n, receives this pass's (message, log-scale) pairs.
        ``wanted[i]`` False: clique i's belief is not needed (its part of the result is
        left unwritten), nor the downward messages into subtrees that hold no wanted
        clique."""
        tree = self.tree
        n = len(psi)
        upward: list[np.ndarray | None] = [None] * n
        log_scale = [0.0] * n  # log of what upward[i] was divided by, children's included
        log_z = 0.0
        for i in reversed(tree.order):
            if known is not None and known[i] is not None:
                upward[i], log_scale[i] = known[i]
                continue
            acc = psi[i]
            scale = peaks[i]
            for c in tree.children[i]:
                acc = acc * upward[c]
                scale += log_scale[c]
            if tree.parent[i] < 0:
                mass = float(_add(acc, None))
                if not mass > _SAFE_DIVISOR:
                    return None
                log_z = math.log(mass) + scale
                continue
            message = _sum_out(acc, self.up_axes[i])
            top = float(_max(message, None))
            if not top > _SAFE_DIVISOR:
                return None
            upward[i] = (message * (1.0 / top)).reshape(self.up_shape[i])
            log_scale[i] = scale + math.log(top)
        if keep is not None:
            keep[:] = list(zip(upward, log_scale))
        # downward: top_side[i] = psi_i times the (rescaled) message from its parent
        out = np.empty(int(self.offsets[-1]))
        beliefs = self.unpack(out)
        top_side: list[np.ndarray | None] = [None] * n
        unnormalised: list[np.ndarray | None] = [None] * n
        siblings: dict[int, dict[int, np.ndarray]] = {}  # see _leave_one_out
        down = None  # where downward messages must go: towards the wanted cliques
        if wanted is not None:
            down = list(wanted)
            for i in reversed(tree.order):
                if down[i] and tree.parent[i] >= 0:
                    down[tree.parent[i]] = True
        for i in tree.order:
            if down is not None and not down[i]:
                continue
            p = tree.parent[i]
            if p < 0:
                top_side[i] = psi[i]
            else:
                up = upward[i]
                message = None
                if unnormalised[p] is not None:
                    # zeros of the message divide as ones: where the child's subtree makes
                    # a separator state impossible, the parent's belief is 0 and what the
                    # child is told there changes no belief (its own belief is 0 there too)
                    divisor = np.where(up > 0.0, up, 1.0)
                    if float(_min(divisor, None)) > _SAFE_DIVISOR:
                        # the parent's belief over the separator, divided by this child's
                        # message (which varies over the separator only): exact to a few
                        # ulps, O(1) per child where multiplying the siblings' messages is
                        # O(children), quadratic on the star-shaped trees of AIM, and the
                        # division is on the separator, not the clique
                        message = _sum_out(unnormalised[p], self.down_axes[i]) / divisor
                if message is None:
                    if len(tree.children[p]) > 2:  # a tiny divisor: the siblings' product
                        if p not in siblings:
                            siblings[p] = _leave_one_out(
                                top_side[p], tree.children[p], upward,
                                None if down is None else
                                [c for c in tree.children[p] if down[c]])
                        rest = siblings[p].pop(i)
                    else:
                        rest = top_side[p]
                        for c in tree.children[p]:
                            if c != i:
                                rest = rest * upward[c]
                    message = _sum_out(rest, self.down_axes[i])
                top = float(_max(message, None))
                if not top > _SAFE_DIVISOR:
                    return None
                message = message * (1.0 / top)
                top_side[i] = psi[i] * message.reshape(self.down_shape[i])
            kids = tree.children[i]
            if wanted is not None and not wanted[i] and (
                    len(kids) <= 2 or not any(down[c] for c in kids)):
                continue  # nobody needs this belief, not even to divide it (above)
            belief = top_side[i]
            for c in kids:
                belief = belief * upward[c]
            if len(kids) > 2:
                unnormalised[i] = belief  # divided by each child's message (above)
            if wanted is not None and not wanted[i]:
                continue
            mass = float(_add(belief, None))
            if not mass > _SAFE_DIVISOR:
                return None
            np.multiply(belief, total / mass, out=beliefs[i])
        return out, log_z


def _sum_out(values: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """``values`` summed over ``axes`` (kept as axes of size 1), as a product with a vector
    of ones: the summed axes moved last, one copy, one BLAS matrix-vector product. NumPy's
    own reduction over axes that alternate with kept ones runs 5–13× slower on the large
    cliques of a junction tree (and 2× on small ones)."""
    if not axes or values.size <= 64:  # tiny: NumPy's reduction is quicker than a copy
        return _add(values, axes, keepdims=True) if axes else values
    ndim = values.ndim
    kept = [k for k in range(ndim) if k not in axes]
    summed = 1
    for k in axes:
        summed *= values.shape[k]
    moved = values.transpose(kept + list(axes)).reshape(-1, summed)
    shape = tuple(1 if k in axes else values.shape[k] for k in range(ndim))
    return (moved @ _ones(summed)).reshape(shape)


@functools.lru_cache(maxsize=256)
def _ones(n: int) -> np.ndarray:
    ones = np.ones(n)
    ones.flags.writeable = False
    return ones


def _leave_one_out(base: np.ndarray, children: list[int], upward: list,
                   wanted: list[int] | None = None) -> dict[int, np.ndarray]:
    """For each child ``c`` (of ``wanted``, default all): ``base`` times the upward
    messages of the other children, by
    prefix and suffix products (3k products for k children, where multiplying the
    siblings' messages for each child takes k²; dividing the whole product by the
    child's message is not exact where that message has zeros)."""
    suffix: list[np.ndarray | None] = [None] * len(children)
    for j in range(len(children) - 2, -1, -1):
        after = upward[children[j + 1]]
        suffix[j] = after if suffix[j + 1] is None else after * suffix[j + 1]
    out = {}
    prefix = base
    last = max((j for j, c in enumerate(children) if wanted is None or c in wanted),
               default=-1)
    for j, c in enumerate(children[:last + 1]):
        if wanted is None or c in wanted:
            out[c] = prefix if suffix[j] is None else prefix * suffix[j]
        if j < last:
            prefix = prefix * upward[c]
    return out
