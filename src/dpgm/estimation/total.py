"""The number of records, estimated from the measurements alone (Private-PGM App. E.1)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpgm.errors import ParameterError
from dpgm.measurement import KroneckerQuery, Measurement, is_sparse


def total_estimates(measurements: Sequence[Measurement]) -> list[tuple[float, float]]:
    """``(m_C, Var(m_C))`` for each measurement whose row space contains the all-ones vector.

    ``m_C = 1ᵀ Q⁺ y`` is unbiased for the total; its variance is ``Σ_i (1ᵀQ⁺)_i² σ_i²``.
    """
    found = []
    for m in measurements:
        variance = np.broadcast_to(np.asarray(m.std, dtype=np.float64) ** 2, m.values.shape)
        if m.query is None:
            found.append((float(m.values.sum()), float(variance.sum())))
            continue
        if isinstance(m.query, KroneckerQuery):
            if any(not np.any(np.abs(f.sum(axis=1)) > 1e-9 * max(np.abs(f).max(), 1e-300))
                   for f in m.query.factors):
                continue  # a factor's rows are all orthogonal to 1 (a residual): no total
            # (Qᵀ)⁺ 1 = ⊗ (Q_iᵀ)⁺ 1: solved per factor, never materialised
            parts = [
                np.linalg.lstsq(f.T, np.ones(f.shape[1]), rcond=None)[0] for f in m.query.factors
            ]
            if any(
                np.linalg.norm(f.T @ v - 1.0) > 1e-6 * np.sqrt(f.shape[1])
                for f, v in zip(m.query.factors, parts)
            ):
                continue
            v = KroneckerQuery([p[None, :] for p in parts])
            found.append((float((v @ m.values)[0]), float((v.squared() @ variance)[0])))
            continue
        cells = m.query.shape[1]
        ones = np.ones(cells)
        # v = (Qᵀ)⁺ 1, the minimum-norm solution of Qᵀ v = 1, so that vᵀ y = 1ᵀ Q⁺ y
        if is_sparse(m.query):
            from scipy.sparse.linalg import lsqr

            v = lsqr(m.query.T, ones, atol=1e-12, btol=1e-12)[0]
        else:
            v = np.linalg.lstsq(m.query.T, ones, rcond=None)[0]
        if np.linalg.norm(m.query.T @ v - ones) > 1e-6 * np.sqrt(cells):
            continue  # the total is not determined by this measurement
        found.append((float(v @ m.values), float(np.sum(v**2 * variance))))
    return found


def estimate_total(measurements: Sequence[Measurement]) -> float:
    """Inverse-variance weighted estimate of the number of records (at least 1)."""
    found = total_estimates(measurements)
    if not found:
        raise ParameterError(
            "the total number of records cannot be estimated from these measurements "
            "(no query has the all-ones vector in its row space); pass total= explicitly"
        )
    estimates = np.array([e for e, _ in found])
    weights = 1.0 / np.array([v for _, v in found])
    return max(1.0, float(np.sum(weights * estimates) / np.sum(weights)))
