"""Two independent measurements of one attribute's residual combined into one (post-processing).

A one-way residual ``z = L μ_a`` (:mod:`dpgm.residuals`: ``L`` has orthonormal rows
orthogonal to the all-ones vector) may be answered twice: once by a residual plan,
``y = z + e`` with ``e ~ N(0, v I)``, and once inside a noisy one-way marginal measured
on its own, ``r = μ_a + f`` with ``f ~ N(0, D)``, ``D`` diagonal (a merged value's count
sums the noise of the values it stands for). ``L r = z + L f`` answers the same residual
with covariance ``S = L D Lᵀ``, and the generalised least-squares estimate from both,

    ẑ = C (y / v + S⁻¹ L r),      C = (I / v + S⁻¹)⁻¹,

is unbiased with covariance ``C``, no larger than either's (``C ≤ v I`` and ``C ≤ S``).
Where ``D = σ² I``, ``S = σ² I`` and ``ẑ`` is the inverse-variance weighted mean entry by
entry. The marginal's total is not used: the plan's record count is measured far more
precisely.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from dpgm.errors import ParameterError
from dpgm.measurement import Measurement
from dpgm.residuals import query_factors, residual_subset


def fold_one_way(residual: Measurement, marginal: Measurement) -> Measurement:
    """``residual`` (a one-way residual, perhaps stated on a larger marginal with the other
    attributes summed out) combined with ``marginal``, an independent noisy one-way
    marginal of the same attribute (identity query): the generalised least-squares
    estimate from both, on ``residual``'s query. Its ``std`` is the root mean of the
    combined variances (the entries' variances differ where ``marginal``'s do)."""
    subset = residual_subset(residual)
    if subset is None or len(subset) != 1:
        raise ParameterError("fold_one_way takes a residual of one attribute")
    attr = subset[0]
    if tuple(marginal.clique) != (attr,) or marginal.query is not None:
        raise ParameterError(f"fold_one_way takes a one-way marginal of {attr!r} "
                             f"(identity query), not of {list(marginal.clique)}")
    basis = np.asarray(query_factors(residual)[list(residual.clique).index(attr)])
    if basis.shape[1] != marginal.values.size:
        raise ParameterError(f"the marginal of {attr!r} has {marginal.values.size} values, "
                             f"the residual's basis {basis.shape[1]}")
    plan_variance = float(residual.std) ** 2
    cell_variances = np.broadcast_to(np.asarray(marginal.std, dtype=np.float64) ** 2,
                                     marginal.values.shape)
    projected = (basis * cell_variances) @ basis.T  # S = L D Lᵀ
    precision = np.linalg.inv(projected)
    combined = np.linalg.inv(np.eye(len(basis)) / plan_variance + precision)
    values = combined @ (residual.values / plan_variance + precision @ (basis @ marginal.values))
    return Measurement(residual.clique, values, float(np.sqrt(np.mean(np.diag(combined)))),
                       residual.query)


def fold_one_ways(residuals: Sequence[Measurement],
                  marginals: Mapping[str, Measurement]) -> list[Measurement]:
    """``residuals`` with each one-way residual of an attribute in ``marginals`` (one-way
    marginals measured apart, by attribute) folded in by :func:`fold_one_way`; the others
    as they are."""
    folded = []
    for m in residuals:
        subset = residual_subset(m)
        if subset is not None and len(subset) == 1 and subset[0] in marginals:
            m = fold_one_way(m, marginals[subset[0]])
        folded.append(m)
    return folded
