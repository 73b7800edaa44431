"""Private parameter learning of Ising models (Zhang et al. 2020, Alg. 2; the note's §2.2).

For every node i, the logistic regression of z_i on (z_{−i}, 1) over the L1 ball of radius
2λ (λ a public bound on the width: the true weights 2·(A_i·, θ_i) lie in it), by private
Frank–Wolfe, all nodes at once; Â_ij = w_ij / 2 and θ̂_i = w_ii / 2 (the bias). Â is not
symmetric; the model returned is the symmetrised one, (Â + Âᵀ)/2 (post-processing).

ρ-zCDP (add/remove neighbours): ``count_share``·ρ on the record count (when the number of
steps T is not given), the rest on the (T − 1)·p selections, ρ_fit/p for each node
(:mod:`dpgm.mrf.regressions`).

The § numbers of "the note" refer to the implementation note ``docs/notes/mrf.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpgm.dataset import Dataset, require_records
from dpgm.errors import DataError
from dpgm.models.pairwise import IsingModel
from dpgm.mrf.regressions import fit_regressions, with_release
from dpgm.privacy.budget import PrivacyBudget
from dpgm.random import RngLike
from dpgm.validation import positive


@dataclass
class IsingEstimate:
    """What :func:`learn_ising` learned: the symmetrised model, the nodewise estimates
    Â (row i: node i's regression) and θ̂, the ledger, and the steps T."""

    model: IsingModel
    couplings: np.ndarray
    fields: np.ndarray
    budget: PrivacyBudget | None
    steps: int


def learn_ising(
    data: Dataset,
    rho: float | None,
    width: float,
    *,
    rng: RngLike = None,
    steps: int | None = None,
    count_share: float = 0.01,
    step_constant: float = 0.5,
    selection: str = "em",
    budget: PrivacyBudget | None = None,
) -> IsingEstimate:
    """An Ising model of binary ``data`` (value v is the spin 2v − 1), ρ-zCDP.

    ``width`` is a public upper bound λ on the model's width; ``rho=None`` runs the
    non-private learner (exact Frank–Wolfe, for comparison only; ``steps`` required).
    ``steps`` (T) may be given as a public fact, else it is set from a noisy count with
    ``count_share`` of ρ. ``budget`` (zCDP) is charged; a fresh one of ρ otherwise.
    ``selection``: ``"em"`` (the note's corrected selection, the default), ``"laplace"``
    (report-noisy-min with the right scale), or ``"paper"`` (Alg. 1's printed Laplace
    scale at ρ, for comparison only: it is not ρ-zCDP; it warns and is charged its
    provable cost, up to twice the fit's ρ, which a fresh budget makes room for).
    """
    data = require_records(data)
    if any(size != 2 for size in data.domain.shape):
        raise DataError("an Ising model needs binary attributes")
    weights, budget, steps, records = fit_regressions(
        data, spin_regressions(len(data.domain)), radius=2.0 * positive("width", width),
        rho=rho, steps=steps, rng=rng, budget=budget, count_share=count_share,
        step_constant=step_constant, selection=selection, label="Ising")
    return with_release(_estimate(data, weights, budget, steps), "learn_ising", rng, records)


def spin_regressions(nodes: int) -> list[tuple[int, int, int]]:
    """Alg. 2's regressions: z_i = +1 (value 1) against −1 (value 0), for every node."""
    return [(i, 1, 0) for i in range(nodes)]


def _estimate(data: Dataset, weights: np.ndarray, budget, steps: int) -> IsingEstimate:
    couplings = weights[:-1].T / 2.0  # row i: node i's regression, Â_ij = w_ij / 2
    fields = weights[-1] / 2.0  # the bias, θ̂_i = w_i,bias / 2
    symmetric = (couplings + couplings.T) / 2.0
    model = IsingModel(symmetric, fields, names=list(data.domain.attrs))
    return IsingEstimate(model, couplings, fields, budget, steps)
