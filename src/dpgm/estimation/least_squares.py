"""Ordinary least squares on noisy linear measurements: HDMM's original estimators.

HDMM (McKenna et al. 2018) reconciles its noisy strategy answers ``y = A x + z`` by the
least-squares estimate ``x̂ = argmin ‖A x − y‖₂``, unconstrained: ``x̂`` may have negative
cells and need not sum to the true number of records. Two versions:

* **local** (Private-PGM's "HDMM+LLS", Sec. 5.1): one measurement at a time,
  ``x̂_C = A_C⁺ y_C`` on its own clique. A Kronecker query has ``(⊗ A_a)⁺ = ⊗ A_a⁺``, so
  the solution is a few small matrix products, one per attribute. The tables of
  different cliques need not agree with one another.
* **global** (HDMM's own): one table ``x̂`` over the whole domain, found by LSMR on the
  linear operator that marginalises the table to each measured clique and applies that
  measurement's query; its adjoint broadcasts back. It needs several copies of the full
  table, so it is feasible only on small domains.

Each answer is weighted by ``1/std`` (least squares for independent noise of unequal
variance); with one noise level, as in HDMM, this is ordinary least squares. Where the
measurements do not determine the table, the minimum-norm solution is returned.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.sparse.linalg import LinearOperator, lsmr

from dpgm.domain import Domain
from dpgm.errors import DpgmError, ModelTooLargeError
from dpgm.measurement import KroneckerQuery, Measurement, is_sparse
from dpgm.validation import integer

#: full-table vectors LSMR keeps at once (x, v, h, h̄ and a temporary)
LSMR_TABLE_COPIES = 5
DEFAULT_LSQ_MAX_CELLS = 10_000_000


def _weights(m: Measurement) -> np.ndarray:
    """``1/std`` for each answer of ``m``."""
    return np.broadcast_to(1.0 / np.asarray(m.std, dtype=np.float64), m.values.shape)


def _clique_shape(m: Measurement, domain: Domain | None) -> tuple[int, ...]:
    if domain is not None:
        m.validate(domain)
        return domain.project(m.clique).shape
    if isinstance(m.query, KroneckerQuery) and len(m.query.factors) == len(m.clique):
        return tuple(f.shape[1] for f in m.query.factors)
    raise DpgmError(
        f"the table shape of the measurement on {m.clique} is not known from its query; "
        "pass domain="
    )


def _apply(query, vector: np.ndarray) -> np.ndarray:
    """``query @ vector`` for an identity (None), dense, sparse or Kronecker query."""
    if query is None:
        return vector
    return np.asarray(query @ vector, dtype=np.float64).ravel()


def _apply_transpose(query, vector: np.ndarray) -> np.ndarray:
    if query is None:
        return vector
    return np.asarray(query.T @ vector, dtype=np.float64).ravel()


def local_least_squares(measurement: Measurement, domain: Domain | None = None) -> np.ndarray:
    """The least-squares table of one measurement's clique (axes in its clique's order).

    ``argmin_x ‖(Q x − y)/σ‖₂`` (minimum norm where ``Q`` is rank deficient). ``domain``
    gives the table's shape; it may be left out for a Kronecker query, whose factors know it.
    """
    m = measurement
    shape = _clique_shape(m, domain)
    cells = int(np.prod(shape))
    if m.query is None:
        if m.values.size != cells:
            raise DpgmError(f"measurement of {m.clique}: {m.values.size} values for {cells} cells")
        return m.values.reshape(shape).copy()  # one answer per cell: the answers themselves
    if m.query.shape[1] != cells:
        raise DpgmError(
            f"measurement of {m.clique}: query has {m.query.shape[1]} columns, the clique {cells}"
        )
    weights = _weights(m)
    uniform = np.ptp(weights) == 0
    if isinstance(m.query, KroneckerQuery) and uniform:
        # (⊗ Q_a)⁺ = ⊗ Q_a⁺; a common weight cancels out
        inverse = KroneckerQuery([np.linalg.pinv(f) for f in m.query.factors])
        return (inverse @ m.values).reshape(shape)
    if not isinstance(m.query, KroneckerQuery) and not is_sparse(m.query):
        solution = np.linalg.lstsq(m.query * weights[:, None], m.values * weights, rcond=None)[0]
        return solution.reshape(shape)
    # sparse, or Kronecker with unequal noise: weighted least squares by LSMR on the clique
    query = m.query
    operator = LinearOperator(
        (query.shape[0], cells),
        matvec=lambda x: weights * _apply(query, np.ravel(x)),
        rmatvec=lambda r: _apply_transpose(query, weights * np.ravel(r)),
        dtype=np.float64,
    )
    solution = lsmr(operator, m.values * weights, atol=1e-12, btol=1e-12, maxiter=10 * cells)[0]
    return solution.reshape(shape)


class _Entry:
    """One measurement prepared for the full-table operator."""

    __slots__ = ("canonical", "to_measured", "to_canonical", "shape", "query", "weights", "rows")

    def __init__(self, m: Measurement, domain: Domain, rows: slice):
        self.canonical = domain.canonical(m.clique)
        self.to_measured = [self.canonical.index(a) for a in m.clique]
        self.to_canonical = [m.clique.index(a) for a in self.canonical]
        self.shape = domain.project(m.clique).shape
        self.query = m.query
        self.weights = _weights(m)
        self.rows = rows


def full_table_operator(
    domain: Domain,
    measurements: Sequence[Measurement],
    max_cells: float | None = None,
) -> tuple[LinearOperator, np.ndarray]:
    """``(A, b)`` with ``A x = [(Q_i · marginal_i(x)) / σ_i]_i`` on the full table ``x``.

    ``x`` is the table over all of ``domain`` raveled (C order, domain attribute order);
    ``b`` stacks the measurements' ``values / σ``, so ``argmin ‖A x − b‖`` is the global
    least-squares table. ``A.rmatvec`` is the adjoint (each clique's answers pulled back
    through its query and broadcast over the attributes it leaves out).
    Raises :class:`ModelTooLargeError` when the table has more than ``max_cells`` cells.
    """
    measurements = list(measurements)
    if not measurements:
        raise DpgmError("no measurements to fit")
    cells = domain.size()
    if max_cells is not None and cells > max_cells:
        raise ModelTooLargeError(
            f"global least squares would need {cells:,} cells "
            f"({cells * 8 * LSMR_TABLE_COPIES / 1e9:.3g} GB for LSMR's {LSMR_TABLE_COPIES} "
            f"copies of the full table), over max_cells={max_cells:,.0f}; "
            "use local least squares or Private-PGM"
        )
    entries, offset = [], 0
    for m in measurements:
        m.validate(domain)
        entries.append(_Entry(m, domain, slice(offset, offset + m.values.size)))
        offset += m.values.size
    rhs = np.concatenate([m.values * e.weights for m, e in zip(measurements, entries)])
    shape = domain.shape
    canonical = list(dict.fromkeys(e.canonical for e in entries))
    summed = {c: tuple(i for i, a in enumerate(domain.attrs) if a not in c) for c in canonical}
    expanded = {c: tuple(domain[a] if a in c else 1 for a in domain.attrs) for c in canonical}

    def matvec(x: np.ndarray) -> np.ndarray:
        table = np.asarray(x, dtype=np.float64).reshape(shape)
        # one pass over the full table per distinct clique, whatever the measurements on it
        margins = {c: table.sum(axis=summed[c]) if summed[c] else table for c in canonical}
        out = np.empty(offset)
        for e in entries:
            vector = np.transpose(margins[e.canonical], e.to_measured).ravel()
            out[e.rows] = e.weights * _apply(e.query, vector)
        return out

    def rmatvec(r: np.ndarray) -> np.ndarray:
        r = np.asarray(r, dtype=np.float64).ravel()
        pulled: dict[tuple[str, ...], np.ndarray] = {}
        for e in entries:
            back = _apply_transpose(e.query, e.weights * r[e.rows]).reshape(e.shape)
            back = np.transpose(back, e.to_canonical)
            pulled[e.canonical] = pulled[e.canonical] + back if e.canonical in pulled else back
        out = np.zeros(shape)
        for c, table in pulled.items():
            out += table.reshape(expanded[c])  # broadcast over the attributes left out
        return out.ravel()

    operator = LinearOperator((offset, cells), matvec=matvec, rmatvec=rmatvec, dtype=np.float64)
    return operator, rhs


def global_least_squares(
    domain: Domain,
    measurements: Sequence[Measurement],
    *,
    iters: int = 1000,
    tol: float = 1e-10,
    max_cells: float = DEFAULT_LSQ_MAX_CELLS,
) -> np.ndarray:
    """The least-squares table over the whole domain (shape ``domain.shape``), by LSMR.

    ``argmin_x Σ_i ‖(Q_i · marginal_i(x) − y_i)/σ_i‖²``, the minimum-norm one where the
    measurements leave directions free; at most ``iters`` LSMR iterations with tolerance
    ``tol`` (LSMR's ``atol`` and ``btol``). Raises :class:`ModelTooLargeError` before
    allocating anything when the domain has more than ``max_cells`` cells.
    """
    iters = integer("iters", iters, least=1)
    operator, rhs = full_table_operator(domain, measurements, max_cells=max_cells)
    solution = lsmr(operator, rhs, atol=tol, btol=tol, maxiter=int(iters))[0]
    return solution.reshape(domain.shape)
