"""Convex losses between clique marginals and noisy measurements (Private-PGM App. C).

A loss is a function of the count tables of its ``cliques`` (each in domain order),
which the estimation algorithms pass as one flat vector: the tables raveled and
concatenated in clique order. Working on one vector keeps every step of the algorithms
a single NumPy call, whatever the number of cliques.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from dpgm.domain import Domain
from dpgm.errors import ParameterError
from dpgm.measurement import IdentityPlusOnes, KroneckerQuery, Measurement, gram_matrix, is_sparse

LossFunction = Callable[[list[np.ndarray]], tuple[float, list[np.ndarray]]]


def _canonical_query(m: Measurement, domain: Domain):
    """The measurement restated over its clique in domain order: (clique, query, values, std).

    For an identity query the answers are cells, so values and stds are permuted with them;
    otherwise the answers stay as they are and the query's columns are permuted.
    """
    clique = domain.canonical(m.clique)
    std = np.broadcast_to(np.asarray(m.std, dtype=np.float64), m.values.shape)
    if clique == m.clique:
        return clique, m.query, m.values, std
    shape = domain.project(m.clique).shape
    axes = [m.clique.index(a) for a in clique]
    # position j of the canonical vector holds cell perm[j] of the measurement's vector
    perm = np.arange(int(np.prod(shape))).reshape(shape).transpose(axes).ravel()
    if m.query is None:
        return clique, None, m.values[perm], std[perm]
    if isinstance(m.query, KroneckerQuery):
        # reorder the factors; the answers come out in a permuted order, so permute them too
        query, rows = m.query.transpose_axes(axes)
        return clique, query, m.values[rows], std[rows]
    query = m.query.tocsc()[:, perm] if is_sparse(m.query) else m.query[:, perm]
    return clique, query, m.values, std


class Loss:
    """Base class: a convex function of the count tables on ``cliques`` (domain order)."""

    #: Lipschitz constant of the gradient w.r.t. the ℓ1 norm of the count tables
    #: (None: the loss is not smooth)
    lipschitz: float | None = None
    #: the largest such constant of one clique's table alone (None: unknown)
    block_lipschitz: float | None = None

    def __init__(self, domain: Domain, cliques: Sequence[tuple[str, ...]]):
        self.domain = domain
        self.cliques = list(cliques)
        self.shapes = [domain.project(c).shape for c in self.cliques]
        sizes = [int(np.prod(s)) for s in self.shapes]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
        self.slices = [slice(int(a), int(b)) for a, b in zip(self.offsets, self.offsets[1:])]

    @property
    def size(self) -> int:
        return int(self.offsets[-1])

    def split(self, flat: np.ndarray) -> list[np.ndarray]:
        """The flat vector as one table (a view) per clique."""
        return [flat[s].reshape(shape) for s, shape in zip(self.slices, self.shapes)]

    def __call__(self, flat: np.ndarray) -> tuple[float, np.ndarray]:
        """Value and gradient at the flat vector of count tables."""
        raise NotImplementedError

    def value(self, flat: np.ndarray) -> float:
        return self(flat)[0]

    def divergence(self, x: np.ndarray, y: np.ndarray, grad_y: np.ndarray) -> float:
        """Bregman divergence ``L(x) − L(y) − ⟨∇L(y), x − y⟩`` (``grad_y`` = ∇L(y))."""
        return self.value(x) - self.value(y) - float(np.dot(grad_y, x - y))

    def targets(self) -> list[np.ndarray | None]:
        """Per clique, a direct estimate of its count table (None where there is none)."""
        return [None] * len(self.cliques)


class _MeasurementLoss(Loss):
    """Shared set-up of the losses defined by measurements: grouped by clique."""

    def __init__(self, domain: Domain, measurements: Sequence[Measurement]):
        groups: dict[tuple[str, ...], list] = {}
        for m in measurements:
            m.validate(domain)
            clique, query, values, std = _canonical_query(m, domain)
            groups.setdefault(clique, []).append((query, values, std))
        super().__init__(domain, list(groups))
        # (slice of the flat vector, query or None, values, std) per measurement
        self.entries = [
            (s, q, y, sd) for s, c in zip(self.slices, self.cliques) for q, y, sd in groups[c]
        ]

    def targets(self) -> list[np.ndarray | None]:
        """Precision-weighted average of each clique's identity measurements."""
        weight = np.zeros(self.size)
        weighted = np.zeros(self.size)
        for s, query, values, std in self.entries:
            if query is None:
                weight[s] += 1.0 / std**2
                weighted[s] += values / std**2
        return [
            (weighted[s] / weight[s]).reshape(shape) if weight[s].all() else None
            for s, shape in zip(self.slices, self.shapes)
        ]

    def _max_column_precision(self) -> np.ndarray:
        """Per cell, the largest diagonal entry of Σ Qᵀ diag(1/σ²) Q (identity: Σ 1/σ²)."""
        peak = np.zeros(self.size)
        for s, query, _, std in self.entries:
            precision = 1.0 / std**2
            if query is None:
                peak[s] += precision
            elif isinstance(query, KroneckerQuery):
                peak[s] += query.squared().T @ precision
            elif is_sparse(query):
                peak[s] += np.asarray(
                    query.multiply(query).multiply(precision[:, None]).sum(axis=0)
                ).ravel()
            else:
                peak[s] += (query**2 * precision[:, None]).sum(axis=0)
        return peak


class L2Loss(_MeasurementLoss):
    """``½ Σ ‖(Q μ − y) / σ‖²``: the negative log-likelihood of Gaussian noise."""

    def __init__(self, domain: Domain, measurements: Sequence[Measurement]):
        super().__init__(domain, measurements)
        # identity measurements fold into ½ (a·μ² − 2 b·μ + c) over the flat vector
        self.a = np.zeros(self.size)
        self.b = np.zeros(self.size)
        self.c = 0.0
        self.general = []
        # Kronecker queries with one noise level fold into ½ μᵀGμ − hᵀμ with the Gram
        # matrix G = ⊗ QᵢᵀQᵢ / σ²: one small product per attribute instead of two. Each
        # factor's QᵢᵀQᵢ is made once and shared (a residual basis of a large attribute
        # is in several measurements, and its n x n Gram matrix is the fit's largest array)
        self.grams = []
        shared_grams: dict[int, tuple[np.ndarray, np.ndarray | IdentityPlusOnes]] = {}

        def gram_of(factor: np.ndarray) -> np.ndarray | IdentityPlusOnes:
            if id(factor) not in shared_grams:  # the factor is kept alive beside it
                shared_grams[id(factor)] = (factor, gram_matrix(factor))
            return shared_grams[id(factor)][1]

        for s, query, values, std in self.entries:
            precision = 1.0 / std**2
            if query is None:
                self.a[s] += precision
                self.b[s] += precision * values
                self.c += float(np.sum(precision * values**2))
            elif isinstance(query, KroneckerQuery) and np.ptp(precision) == 0:
                scale = float(precision[0]) if precision.size else 0.0
                gram = KroneckerQuery([gram_of(f) for f in query.factors])
                self.grams.append((s, scale, gram, query.T @ (precision * values)))
                self.c += float(np.sum(precision * values**2))
            else:
                self.general.append((s, query, values, precision))
        # the Hessian's largest entry is on its diagonal; one record adds to a cell of
        # every clique, so the per-clique maxima add up
        peak = self._max_column_precision()
        per_clique = [peak[s].max() for s in self.slices if s.stop > s.start]
        self.lipschitz = float(sum(per_clique))
        self.block_lipschitz = float(max(per_clique, default=0.0))

    def __call__(self, flat: np.ndarray) -> tuple[float, np.ndarray]:
        grad = self.a * flat - self.b
        value = 0.5 * (float(np.dot(grad - self.b, flat)) + self.c)
        for s, scale, gram, linear in self.grams:
            curvature = gram @ flat[s]
            curvature *= scale
            value += 0.5 * float(np.dot(curvature, flat[s])) - float(np.dot(linear, flat[s]))
            grad[s] += curvature - linear
        for s, query, values, precision in self.general:
            residual = query @ flat[s] - values
            value += 0.5 * float(np.dot(precision * residual, residual))
            grad[s] += np.asarray(query.T @ (precision * residual)).ravel()
        return value, grad

    def value(self, flat: np.ndarray) -> float:
        # one temporary only: on large models each extra vector costs more than the dots
        value = 0.5 * (
            float(np.dot(self.a * flat, flat)) - 2.0 * float(np.dot(self.b, flat)) + self.c
        )
        for s, scale, gram, linear in self.grams:
            value += (0.5 * scale * float(np.dot(gram @ flat[s], flat[s]))
                      - float(np.dot(linear, flat[s])))
        for s, query, values, precision in self.general:
            residual = query @ flat[s] - values
            value += 0.5 * float(np.dot(precision * residual, residual))
        return value

    def divergence(self, x: np.ndarray, y: np.ndarray, grad_y: np.ndarray) -> float:
        diff = x - y
        value = 0.5 * float(np.dot(self.a * diff, diff))
        for s, scale, gram, _ in self.grams:
            value += 0.5 * scale * float(np.dot(gram @ diff[s], diff[s]))
        for s, query, _, precision in self.general:
            change = query @ diff[s]
            value += 0.5 * float(np.dot(precision * change, change))
        return value


class L1Loss(_MeasurementLoss):
    """``Σ ‖(Q μ − y) / σ‖₁``: robust, the likelihood of Laplace noise, and not smooth."""

    def __init__(self, domain: Domain, measurements: Sequence[Measurement]):
        super().__init__(domain, measurements)
        self.lipschitz = None

    def __call__(self, flat: np.ndarray) -> tuple[float, np.ndarray]:
        value = 0.0
        grad = np.zeros_like(flat)
        for s, query, values, std in self.entries:
            residual = (flat[s] if query is None else query @ flat[s]) - values
            value += float(np.sum(np.abs(residual) / std))
            sign = np.sign(residual) / std
            grad[s] += sign if query is None else np.asarray(query.T @ sign).ravel()
        return value, grad


class CustomLoss(Loss):
    """A user's convex loss: ``function(tables) -> (value, gradients)`` on ``cliques``.

    ``tables`` and ``gradients`` are count tables shaped by each clique's attributes in the
    order given. ``lipschitz`` (of the gradient w.r.t. the ℓ1 norm of the tables) enables
    the accelerated method.
    """

    def __init__(
        self,
        domain: Domain,
        cliques: Sequence[Sequence[str]],
        function: LossFunction,
        lipschitz: float | None = None,
    ):
        self.user_cliques = [domain.check(c) for c in cliques]
        super().__init__(domain, [domain.canonical(c) for c in self.user_cliques])
        self.function = function
        self.lipschitz = lipschitz
        self._to_user = [[c.index(a) for a in u] for c, u in zip(self.cliques, self.user_cliques)]
        self._from_user = [[u.index(a) for a in c] for c, u in zip(self.cliques, self.user_cliques)]

    def __call__(self, flat: np.ndarray) -> tuple[float, np.ndarray]:
        tables = [np.transpose(t, axes) for t, axes in zip(self.split(flat), self._to_user)]
        value, grads = self.function(tables)
        if len(grads) != len(tables):
            raise ParameterError(
                f"the custom loss returned {len(grads)} gradients for {len(tables)} cliques"
            )
        return float(value), np.concatenate(
            [
                np.transpose(np.asarray(g, dtype=np.float64), axes).ravel()
                for g, axes in zip(grads, self._from_user)
            ]
        )


def make_loss(loss: str | Loss, domain: Domain, measurements: Sequence[Measurement]) -> Loss:
    """The loss named ``"l2"`` or ``"l1"`` over ``measurements``, or ``loss`` itself."""
    if isinstance(loss, Loss):
        return loss
    if loss == "l2":
        return L2Loss(domain, measurements)
    if loss == "l1":
        return L1Loss(domain, measurements)
    raise ParameterError(f"unknown loss {loss!r}; use 'l2', 'l1' or a dpgm.estimation.CustomLoss")
