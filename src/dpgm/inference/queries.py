"""Building blocks of factored linear queries (Private-PGM Table 2).

A factored query ``Q = Q_1 ⊗ ... ⊗ Q_d`` is given as ``{attribute: Q_i}`` with each
``Q_i`` an ``r_i × n_i`` matrix; attributes left out use the total ``1`` (summed out).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np

from dpgm.errors import ParameterError
from dpgm.workload import prefix_matrix


def identity(n: int) -> np.ndarray:
    """``I``: keep the attribute in the answer."""
    return np.eye(n)


def total(n: int) -> np.ndarray:
    """``1``: sum the attribute out."""
    return np.ones((1, n))


def indicator(n: int, value: int) -> np.ndarray:
    """``e_j``: evidence that the attribute equals ``value``."""
    if not 0 <= value < n:
        raise ParameterError(f"value {value} outside 0..{n - 1}")
    out = np.zeros((1, n))
    out[0, value] = 1.0
    return out


def set_indicator(n: int, values: Iterable[int]) -> np.ndarray:
    """``e_S``: evidence that the attribute lies in ``values``."""
    out = np.zeros((1, n))
    for value in values:
        if not 0 <= value < n:
            raise ParameterError(f"value {value} outside 0..{n - 1}")
        out[0, value] = 1.0
    return out


def prefix(n: int) -> np.ndarray:
    """``P``: the cumulative distribution, row ``b`` counts values ``a <= b``."""
    return prefix_matrix(n)


def compress(
    mapping: Sequence[int] | Callable[[int], int], n: int | None = None, r: int | None = None
) -> np.ndarray:
    """``R_f``: merge values, value ``a`` going to group ``f(a)``."""
    if callable(mapping):
        if n is None:
            raise ParameterError("give n, the attribute's size, with a callable mapping")
        groups = np.array([mapping(a) for a in range(n)])
    else:
        groups = np.asarray(mapping)
    r = int(groups.max()) + 1 if r is None else r
    out = np.zeros((r, groups.size))
    out[groups, np.arange(groups.size)] = 1.0
    return out


def mean(n: int, values: Sequence[float] | None = None) -> np.ndarray:
    """``E``: the (unnormalised) sum of the attribute's values (``0..n-1`` unless given)."""
    vals = np.arange(n, dtype=float) if values is None else np.asarray(values, dtype=float)
    return vals.reshape(1, n)


def moments(n: int, k: int, values: Sequence[float] | None = None) -> np.ndarray:
    """``E_k``: the first ``k`` (unnormalised) raw moments, row ``b`` sums ``a ** (b+1)``."""
    vals = np.arange(n, dtype=float) if values is None else np.asarray(values, dtype=float)
    return np.vstack([vals ** (b + 1) for b in range(k)])
