"""Projection onto the simplex: feasible, optimal (KKT), and the L2-closest point."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from dpgm.errors import ParameterError
from dpgm.estimation.projection import project_simplex


@pytest.mark.parametrize("seed", range(6))
def test_projection_is_feasible_and_closest(seed):
    rng = np.random.default_rng(seed)
    v = rng.normal(0, 30, size=12) + 5
    total = 50.0
    w = project_simplex(v, total)
    assert np.all(w >= 0) and w.sum() == pytest.approx(total)
    # KKT: w = max(v - tau, 0) for one tau
    tau = (v - w)[w > 0]
    np.testing.assert_allclose(tau, tau[0], atol=1e-9)
    assert np.all(v[w == 0] <= tau[0] + 1e-9)
    # no feasible point is closer (a numerical minimiser agrees)
    found = minimize(lambda x: np.sum((x - v) ** 2), np.full(12, total / 12), method="SLSQP",
                     bounds=[(0, None)] * 12,
                     constraints=[{"type": "eq", "fun": lambda x: x.sum() - total}])
    assert np.sum((w - v) ** 2) <= found.fun * (1 + 1e-9)  # SLSQP meets the sum loosely
    np.testing.assert_allclose(w, found.x, atol=1e-3)


def test_points_on_the_simplex_stay_and_axes_are_separate():
    p = np.array([0.2, 0.3, 0.5])
    np.testing.assert_allclose(project_simplex(p), p)
    tables = np.array([[3.0, -1.0, 2.0], [0.0, 0.0, 0.0]])
    rows = project_simplex(tables, 1.0, axis=1)
    np.testing.assert_allclose(rows.sum(axis=1), 1.0)
    np.testing.assert_allclose(rows[1], [1 / 3, 1 / 3, 1 / 3])
    np.testing.assert_allclose(rows[0], project_simplex(tables[0]))
    columns = project_simplex(tables.T, 1.0, axis=0)
    np.testing.assert_allclose(columns, rows.T)
    with pytest.raises(ParameterError, match="finite"):
        project_simplex(np.array([np.nan, 1.0]))
