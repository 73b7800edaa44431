"""Private parameter learning of Ising models (Zhang et al. 2020, Alg. 2; the note's §2.2).

For every node i, the logistic regression of z_i on (z_{−i}, 1) over the L1 ball of radius
2λ (λ a public bound on the width: the true weights 2·(A_i·, θ_i) lie in it), by private
Frank–Wolfe, all nodes at once; Â_ij = w_ij / 2 and θ̂_i = w_ii / 2 (the bias). Â is not
symmetric; the model returned is the symmetrised one, (Â + Âᵀ)/2 (post-processing).

ρ-zCDP (add/remove neighbours): ``count_share``·ρ on the record count (Gaussian, when the
number of steps T is not given), the rest on the (T − 1)·p selections. T follows Cor. 3.4
with the note's constant: T = max(2, ⌈c_T·(r·n̂·√(ρ_fit/p))^{2/3}⌉), n̂ the noisy count —
never the exact n, which is private.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpgm.dataset import Dataset, require_dataset
from dpgm.errors import BudgetExceededError, DataError, PrivacyParameterError
from dpgm.models.pairwise import IsingModel
from dpgm.privacy.budget import PrivacyBudget
from dpgm.privacy.frank_wolfe import SELECTIONS, FrankWolfeSelections
from dpgm.privacy.measure import measure_record_count
from dpgm.random import RngLike, as_generator
from dpgm.validation import fraction, integer, one_of, optional, positive


@dataclass
class IsingEstimate:
    """What :func:`learn_ising` learned: the symmetrised model, the nodewise estimates
    Â (row i: node i's regression) and θ̂, the ledger, and the steps T."""

    model: IsingModel
    couplings: np.ndarray
    fields: np.ndarray
    budget: PrivacyBudget | None
    steps: int


def frank_wolfe(selections: FrankWolfeSelections) -> np.ndarray:
    """Run Frank–Wolfe to its last step, step size 2/(t + 2), and return the iterate
    (column c: regression c's weights over the design's columns, the bias last)."""
    for t in range(1, selections.remaining + 1):
        selections.select()
        selections.move(2.0 / (t + 2.0))
    return selections.weights


def steps_for(radius: float, records: float, rho_per_node: float, constant: float) -> int:
    """T = max(2, ⌈c_T·(r·n·√ρ')^{2/3}⌉) (Cor. 3.4 with the note's constant, D5)."""
    return max(2, math.ceil(constant * (radius * max(records, 1.0)
                                        * math.sqrt(rho_per_node)) ** (2.0 / 3.0)))


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
    data = require_dataset(data)
    if any(size != 2 for size in data.domain.shape):
        raise DataError("an Ising model needs binary attributes")
    width = positive("width", width)
    radius = 2.0 * width
    nodes = len(data.domain)
    steps = optional(lambda name, v: integer(name, v, least=2), "steps", steps)
    if rho is None:
        if steps is None:
            raise PrivacyParameterError("the non-private learner needs steps")
        selections = FrankWolfeSelections(data, spin_regressions(nodes), radius=radius,
                                          steps=steps, rho=None, budget=None)
        return _estimate(data, frank_wolfe(selections), None, steps)
    rho = positive("rho", rho, error=PrivacyParameterError)
    count_share = fraction("count_share", count_share)
    step_constant = positive("step_constant", step_constant)
    selection = one_of("selection", selection, SELECTIONS)
    fit = rho if steps is not None else rho * (1.0 - count_share)
    # the paper's printed noise at a claimed ρ_fit provably costs up to 2·ρ_fit
    cost = (rho - fit) + (2.0 * fit if selection == "paper" else fit)
    budget = budget if budget is not None else PrivacyBudget(rho=cost)
    if budget.mode != "zcdp":
        raise PrivacyParameterError("learn_ising is rho-zCDP: give a zCDP budget")
    if cost > budget.remaining * (1.0 + 1e-9):  # refused before the count reads the data
        paper = " (selection='paper' provably costs up to twice the fit's rho)"
        raise BudgetExceededError(
            f"learn_ising needs rho={cost:g}{paper if selection == 'paper' else ''}, "
            f"only rho={budget.remaining:g} left")
    gen = None if rng is None else as_generator(rng)  # one stream for every draw
    if steps is None:
        count = measure_record_count(data, budget, gen, rho=rho - fit)
        steps = steps_for(radius, float(count.values[0]), fit / nodes, step_constant)
    selections = FrankWolfeSelections(data, spin_regressions(nodes), radius=radius, steps=steps,
                                      rho=fit, budget=budget, rng=gen, selection=selection,
                                      label="Ising: private Frank-Wolfe")
    return _estimate(data, frank_wolfe(selections), budget, steps)


def spin_regressions(nodes: int) -> list[tuple[int, int, int]]:
    """Alg. 2's regressions: z_i = +1 (value 1) against −1 (value 0), for every node."""
    return [(i, 1, 0) for i in range(nodes)]


def _estimate(data: Dataset, weights: np.ndarray, budget, steps: int) -> IsingEstimate:
    couplings = weights[:-1].T / 2.0  # row i: node i's regression, Â_ij = w_ij / 2
    fields = weights[-1] / 2.0  # the bias, θ̂_i = w_i,bias / 2
    symmetric = (couplings + couplings.T) / 2.0
    model = IsingModel(symmetric, fields, names=list(data.domain.attrs))
    return IsingEstimate(model, couplings, fields, budget, steps)
