"""Euclidean projection onto the simplex {w ≥ 0, Σ w = total} (Duchi et al. 2008, Fig. 1).

Post-processing of noisy count tables: the naive estimators of the CGM paper project each
noisy clique table onto the tables that sum to N before fitting (Bernstein et al. §3.1).
"""

from __future__ import annotations

import numpy as np

from dpgm.errors import ParameterError
from dpgm.validation import positive


def project_simplex(values: np.ndarray, total: float = 1.0, axis: int | None = None) -> np.ndarray:
    """The closest point (in L2) to ``values`` with non-negative entries summing to
    ``total``: over the whole array, or separately along ``axis``.

    w = max(v − τ, 0) with the one threshold τ that makes w sum to ``total``, found by
    sorting (O(n log n), vectorised over the other axes).
    """
    total = positive("total", total)
    v = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(v)):
        raise ParameterError("values to project must be finite")
    if axis is None:
        return project_simplex(v.reshape(1, -1), total, axis=1).reshape(v.shape)
    moved = np.moveaxis(v, axis, -1)
    flat = moved.reshape(-1, moved.shape[-1])
    if flat.shape[1] == 0:
        raise ParameterError("cannot project an empty table onto the simplex")
    ordered = -np.sort(-flat, axis=1)  # largest first
    cumulative = np.cumsum(ordered, axis=1) - total
    ranks = np.arange(1, flat.shape[1] + 1)
    # the largest k with ordered_k − (Σ_{j≤k} ordered_j − total)/k > 0
    k = np.count_nonzero(ordered - cumulative / ranks > 0, axis=1)
    tau = cumulative[np.arange(flat.shape[0]), k - 1] / k
    out = np.maximum(flat - tau[:, None], 0.0)
    return np.moveaxis(out.reshape(moved.shape), -1, axis)
