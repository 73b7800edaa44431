"""Noisy linear measurements of clique marginals: the only input estimation sees."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from dpgm.domain import Domain
from dpgm.errors import DomainError


def is_sparse(matrix: object) -> bool:
    """Whether ``matrix`` is a scipy sparse matrix or array (without importing scipy)."""
    return type(matrix).__module__.startswith("scipy.sparse")


class Measurement:
    """Noisy answers ``values ≈ query @ vec(μ_clique) + noise`` with noise std ``std``.

    ``vec(μ_clique)`` is the clique's count table flattened in the clique's attribute order
    (C order). ``query`` defaults to the identity; it may be a dense or scipy-sparse matrix.
    ``std`` (a scalar or one entry per answer) weights the answers in the loss.
    """

    __slots__ = ("clique", "values", "std", "query")

    def __init__(self, clique: Iterable[str], values, std, query=None):
        self.clique: tuple[str, ...] = (clique,) if isinstance(clique, str) else tuple(clique)
        self.values = np.asarray(values, dtype=np.float64).ravel()
        std = np.asarray(std, dtype=np.float64)
        if np.any(~np.isfinite(std)) or np.any(std <= 0):
            raise ValueError(f"std must be positive and finite, got {std}")
        if std.ndim and std.size == self.values.size:
            std = std.ravel()  # a table of stds shaped like the values' table
        if std.ndim and std.shape != self.values.shape:
            raise ValueError(f"std has shape {std.shape}, the values {self.values.shape}")
        self.std = std if std.ndim else float(std)
        if query is not None and not is_sparse(query):
            query = np.asarray(query, dtype=np.float64)
            if query.ndim != 2:
                raise ValueError("query must be a 2-d matrix")
        if query is not None and query.shape[0] != self.values.size:
            raise ValueError(
                f"query has {query.shape[0]} rows but there are {self.values.size} values"
            )
        self.query = query
        if not np.all(np.isfinite(self.values)):
            raise ValueError(f"measurement of {self.clique} has non-finite values")

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
