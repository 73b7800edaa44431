"""Oracles for :mod:`dpgm.bn`: Eq. 10 as printed, the expected-error model that
``allocate_expected_error`` minimises, and Eq. 8 by its definition (from the experiment,
which uses it too)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

_ROOT = str(Path(__file__).resolve().parents[1])
if _ROOT not in sys.path:  # the experiments package, also when pytest is run as a script
    sys.path.append(_ROOT)

from experiments._bn import sensitivity_by_derivative  # noqa: E402

__all__ = ["allocate_product_form", "expected_column_error", "sensitivity_by_derivative"]


def allocate_product_form(
    total: float, weights: Sequence[float], errors: Sequence[float]
) -> np.ndarray:
    """Eq. 10 as printed (products over the other nodes; small n only)."""
    c = 1.0 / (np.asarray(weights, dtype=np.float64) * np.asarray(errors, dtype=np.float64))
    n = c.size
    others = np.array([np.prod(np.sqrt(np.delete(c, i))) for i in range(n)])
    eps = total * others / others.sum()
    eps[-1] = total - eps[:-1].sum()
    return eps


def expected_column_error(
    budgets: np.ndarray, sizes: np.ndarray, counts: Sequence[np.ndarray]
) -> np.ndarray:
    """Each node's expected mean column L1 error at its budget ε_i, z/(1 + z) with
    z = 2·k_i/(ε_i·C[u]) averaged over its columns: the model ``allocate_expected_error``
    minimises, computed directly."""
    return np.array([
        float(np.mean(z / (1.0 + z)))
        for z in (2.0 * k / (e * c) for e, k, c in zip(budgets, sizes, counts))
    ])
