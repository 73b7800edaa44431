"""Noisy linear measurements of clique marginals: what the privacy layer releases and
estimation reads. It sits below both, so that neither imports the other."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from dpgm.domain import Domain
from dpgm.errors import DomainError, ParameterError


def is_sparse(matrix: object) -> bool:
    """Whether ``matrix`` is a scipy sparse matrix or array (without importing scipy)."""
    return type(matrix).__module__.startswith("scipy.sparse")


def is_integral(query: object) -> bool:
    """Whether every entry of a query matrix is a whole number (a public fact about it).

    Integer counts times an integral query are integers, which decides (from public facts
    only) whether exact integer noise can be used.
    """
    if query is None:
        return True
    if isinstance(query, KroneckerQuery):
        return all(bool(np.all(f == np.round(f))) for f in query.factors)
    data = query.data if is_sparse(query) else np.asarray(query, dtype=np.float64)
    return bool(np.all(data == np.round(data)))


class KroneckerQuery:
    """The query matrix ``Q = Q_1 ⊗ … ⊗ Q_k``, one small matrix per attribute of a clique.

    Never materialised: ``Q @ x`` applies each factor along its axis of ``x`` seen as a
    table, so a strategy over a million cells costs a few small matrix products. A factor
    of the form ``αI + β11ᵀ`` (an identity, a centring ``I − 11ᵀ/n``: the Gram matrix of a
    residual query) is applied in one pass over the table rather than as a product.
    """

    __slots__ = ("factors", "shape", "_scaled")

    def __init__(self, factors):
        self.factors = [f if isinstance(f, IdentityPlusOnes)
                        else np.atleast_2d(np.asarray(f, dtype=np.float64)) for f in factors]
        if not self.factors or any(f.ndim != 2 for f in self.factors):
            raise ParameterError("a Kronecker query needs one 2-d matrix per attribute")
        self.shape = (
            int(np.prod([f.shape[0] for f in self.factors])),
            int(np.prod([f.shape[1] for f in self.factors])),
        )
        self._scaled = [(f.alpha, f.beta) if isinstance(f, IdentityPlusOnes)
                        else _identity_plus_ones(f) for f in self.factors]

    @property
    def T(self) -> KroneckerQuery:  # noqa: N802 (the NumPy name)
        return KroneckerQuery([f.T for f in self.factors])

    def __matmul__(self, vector) -> np.ndarray:
        table = np.asarray(vector, dtype=np.float64).reshape([f.shape[1] for f in self.factors])
        for axis, (f, scaled) in enumerate(zip(self.factors, self._scaled)):
            if scaled is None:
                table = np.moveaxis(np.tensordot(f, table, axes=(1, axis)), 0, axis)
            else:
                alpha, beta = scaled
                table = alpha * table + beta * table.sum(axis=axis, keepdims=True)
        return table.ravel()

    def transpose_axes(self, axes) -> tuple[KroneckerQuery, np.ndarray]:
        """The query on the clique's attributes reordered by ``axes``, and its row order.

        ``Q' x' = (Q x)[rows]`` where ``x'`` is ``x``'s table with its axes permuted.
        """
        rows = [f.shape[0] for f in self.factors]
        order = np.arange(self.shape[0]).reshape(rows).transpose(axes).ravel()
        return KroneckerQuery([self.factors[i] for i in axes]), order

    def dense(self) -> np.ndarray:
        """The whole matrix (for small cliques only)."""
        matrix = np.ones((1, 1))
        for factor in self.factors:
            matrix = np.kron(matrix, factor)
        return matrix

    def squared(self) -> KroneckerQuery:
        """Entry-wise square (also a Kronecker product)."""
        return KroneckerQuery([f**2 for f in self.factors])

    def norm(self, ord: int) -> float:
        """Largest column norm, ``ord`` 1 or 2: the L1 or L2 sensitivity of ``Q μ``."""
        factors = [np.asarray(f) for f in self.factors]
        if ord == 1:
            return float(np.prod([np.abs(f).sum(axis=0).max() for f in factors]))
        if ord == 2:
            return float(np.sqrt(np.prod([(f**2).sum(axis=0).max() for f in factors])))
        raise ParameterError(f"ord must be 1 or 2, got {ord}")

    def __repr__(self) -> str:
        inner = " ⊗ ".join(f"{f.shape[0]}x{f.shape[1]}" for f in self.factors)
        return f"KroneckerQuery({inner})"


class IdentityPlusOnes:
    """The ``n`` x ``n`` matrix ``αI + β11ᵀ`` (the Gram matrix of a residual basis, a
    centring, a sum) held as its two numbers: a factor of a :class:`KroneckerQuery` that
    is applied in one pass and never materialised unless asked for (``np.asarray``)."""

    __slots__ = ("alpha", "beta", "shape")
    ndim = 2

    def __init__(self, n: int, alpha: float, beta: float):
        self.alpha, self.beta = float(alpha), float(beta)
        self.shape = (int(n), int(n))

    @property
    def T(self) -> IdentityPlusOnes:  # noqa: N802 (the NumPy name)
        return self

    def __pow__(self, power: float) -> IdentityPlusOnes:
        """Entry-wise power (the diagonal ``α + β``, every other entry ``β``)."""
        off = self.beta**power
        return IdentityPlusOnes(self.shape[0], (self.alpha + self.beta) ** power - off, off)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        matrix = np.full(self.shape, self.beta, dtype=dtype or np.float64)
        matrix[np.diag_indices(self.shape[0])] += self.alpha
        return matrix


def gram_matrix(factor: np.ndarray) -> np.ndarray | IdentityPlusOnes:
    """``FᵀF``; an :class:`IdentityPlusOnes` where it is one (a residual basis's Gram
    matrix is ``I − 11ᵀ/n``, a sum's ``11ᵀ``), found a block of rows at a time so that a
    large attribute's ``n`` x ``n`` is never held."""
    factor = np.asarray(factor, dtype=np.float64)
    n = factor.shape[1]
    if n < _SCALED_FROM:
        return factor.T @ factor
    found = _scaled_blocks(n, lambda rows: factor[:, rows].T @ factor)
    return factor.T @ factor if found is None else IdentityPlusOnes(n, *found)


#: the smallest factor worth applying as ``αI + β11ᵀ`` (below it a product is as quick)
_SCALED_FROM = 8
#: entries of an attribute's n x n matrix made or looked at a time (telling whether a
#: matrix is ``αI + β11ᵀ``, making a residual basis): a whole-matrix step would hold
#: several arrays of the size of the largest array of a fit
BLOCK_ENTRIES = 1 << 18


def _identity_plus_ones(factor: np.ndarray) -> tuple[float, float] | None:
    """``(α, β)`` where ``factor`` is ``αI + β11ᵀ`` (square, of at least ``_SCALED_FROM``
    rows), else None."""
    n = factor.shape[0]
    if n != factor.shape[1] or n < _SCALED_FROM:
        return None
    return _scaled_blocks(n, lambda rows: np.array(factor[rows]))


def _scaled_blocks(n: int, rows_of) -> tuple[float, float] | None:
    """``(α, β)`` where the ``n`` x ``n`` matrix whose rows ``rows_of(slice)`` gives (a new
    array each time) is ``αI + β11ᵀ`` up to rounding (a computed Gram matrix is one only
    so), else None; a block of rows at a time."""
    step = max(1, BLOCK_ENTRIES // n)
    alpha = beta = tolerance = 0.0
    for start in range(0, n, step):
        block = rows_of(slice(start, start + step))
        if start == 0:
            beta = float(block[0, 1])
            alpha = float(block[0, 0]) - beta
            tolerance = 1e-13 * max(abs(alpha + beta), abs(beta), 1e-300)
        diagonal = np.arange(block.shape[0])
        block[diagonal, start + diagonal] -= alpha
        block -= beta
        if not np.abs(block, out=block).max() <= tolerance:  # a NaN is not αI + β11ᵀ
            return None
    return alpha, beta


def dense_query(query) -> np.ndarray:
    """A query matrix (dense, scipy-sparse or Kronecker) as a dense array (small cliques
    only)."""
    if is_sparse(query):
        return query.toarray()
    if isinstance(query, KroneckerQuery):
        return query.dense()
    return np.asarray(query, dtype=np.float64)


class Measurement:
    """Noisy answers ``values ≈ query @ vec(μ_clique) + noise`` with noise std ``std``.

    ``vec(μ_clique)`` is the clique's count table flattened in the clique's attribute order
    (C order). ``query`` defaults to the identity; it may be a dense or scipy-sparse matrix
    or a :class:`KroneckerQuery`.
    ``std`` (a scalar or one entry per answer) weights the answers in the loss.
    """

    __slots__ = ("clique", "values", "std", "query")

    def __init__(self, clique: Iterable[str], values, std, query=None):
        self.clique: tuple[str, ...] = (clique,) if isinstance(clique, str) else tuple(clique)
        self.values = np.asarray(values, dtype=np.float64).ravel()
        std = np.asarray(std, dtype=np.float64)
        if np.any(~np.isfinite(std)) or np.any(std <= 0):
            raise ParameterError(f"std must be positive and finite, got {std}")
        if std.ndim and std.size == self.values.size:
            std = std.ravel()  # a table of stds shaped like the values' table
        if std.ndim and std.shape != self.values.shape:
            raise ParameterError(f"std has shape {std.shape}, the values {self.values.shape}")
        self.std = std if std.ndim else float(std)
        if query is not None and not is_sparse(query) and not isinstance(query, KroneckerQuery):
            query = np.asarray(query, dtype=np.float64)
            if query.ndim != 2:
                raise ParameterError("query must be a 2-d matrix")
        if query is not None and query.shape[0] != self.values.size:
            raise ParameterError(
                f"query has {query.shape[0]} rows but there are {self.values.size} values"
            )
        self.query = query
        if not np.all(np.isfinite(self.values)):
            raise ParameterError(f"measurement of {self.clique} has non-finite values")

    def validate(self, domain: Domain) -> None:
        """Raise a clear error if the measurement does not fit ``domain``."""
        domain.check(self.clique)
        cells = domain.size(self.clique)
        cols = cells if self.query is None else self.query.shape[1]
        if cols != cells:
            raise DomainError(
                f"measurement of {self.clique}: query has {cols} columns, the clique {cells} cells"
            )
        if self.query is None and self.values.size != cells:
            raise DomainError(
                f"measurement of {self.clique}: {self.values.size} values for {cells} cells"
            )

    def answer(self, marginal: np.ndarray) -> np.ndarray:
        """``query @ vec(marginal)`` (the noiseless answers for a given count table)."""
        flat = np.asarray(marginal).ravel()
        return flat if self.query is None else np.asarray(self.query @ flat).ravel()

    def __repr__(self) -> str:
        kind = (
            "identity"
            if self.query is None
            else f"{self.query.shape[0]}x{self.query.shape[1]} query"
        )
        std = self.std if np.ndim(self.std) == 0 else "vector"
        return f"Measurement({self.clique}, {kind}, std={std})"


class MeasuredFit:
    """How a model was estimated from released measurements: the measurements themselves
    (released, so keeping them is free), and the estimator's public settings. A model
    that carries one can give error bars (:mod:`dpgm.models.uncertainty`): its answers'
    spread when the noise is drawn again and the model estimated again, all
    post-processing.

    ``estimator`` names the estimation routine (``"private-pgm"``); ``options`` are its
    keyword settings (numbers, strings and lists of cliques: what a model file can hold);
    ``zeros`` the structural zeros it kept (public).
    """

    __slots__ = ("measurements", "options", "zeros", "estimator")

    def __init__(self, measurements: Iterable[Measurement], options: dict | None = None,
                 zeros: Iterable = (), estimator: str = "private-pgm"):
        self.measurements = tuple(measurements)
        self.options = dict(options or {})
        self.zeros = tuple(zeros)
        self.estimator = estimator

    def __repr__(self) -> str:
        return (f"MeasuredFit({len(self.measurements)} measurements, {self.estimator}, "
                f"{self.options})")
