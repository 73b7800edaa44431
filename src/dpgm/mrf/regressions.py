"""Running private Frank–Wolfe on a list of nodewise regressions, shared by the learners:
the budget split between the record count and the fit, the number of steps from the noisy
count, the refusals before the data are read, and the Frank–Wolfe loop.

ρ-zCDP (add/remove neighbours): ``count_share``·ρ on the record count (Gaussian, when the
number of steps T is not given), the rest on the selections. T follows Cor. 3.4 with the
note's constant: T = max(2, ⌈c_T·(r·n̂·√ρ')^{2/3}⌉), ρ' one regression's budget and n̂ the
noisy count — never the exact n, which is private — capped at :data:`MAX_STEPS` (a public
limit: T grows like the radius^{2/3}, so a huge width would otherwise never finish).

Labels such as D5 refer to the implementation note ``docs/notes/mrf.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dpgm.dataset import Dataset
from dpgm.errors import PrivacyParameterError
from dpgm.models.base import Release
from dpgm.privacy.budget import PrivacyBudget
from dpgm.privacy.frank_wolfe import SELECTIONS, FrankWolfeSelections, exposure
from dpgm.privacy.measure import measure_record_count
from dpgm.privacy.quiet import on_records
from dpgm.random import RngLike, as_generator
from dpgm.validation import fraction, integer, one_of, optional, positive

#: the most Frank–Wolfe steps T set from the noisy count (public; a T given is kept)
MAX_STEPS = 10_000


def with_release(estimate, learner: str, rng: RngLike, records: float | None = None):
    """``estimate``, its model carrying the ledger of the fit (``model.release``): a model
    a learner returns is a release, saved and reloaded with it. Non-private fits (no
    budget) carry none. ``records``, a noisy record count the fit measured, becomes the
    model's ``total`` (at least 1); without one the model stays a distribution (total 1)."""
    if records is not None:
        estimate.model.total = max(float(records), 1.0)
    if estimate.budget is not None:
        estimate.model.release = Release.of(estimate.budget, learner, seeded=rng is not None)
    return estimate


def frank_wolfe(selections: FrankWolfeSelections) -> np.ndarray:
    """Run Frank–Wolfe to its last step, step size 2/(t + 2), and return the iterate
    (column c: regression c's weights over the design's columns, the bias last). No
    warning raised on the records reaches the user (one record's margins can overflow an
    exponential that no record does not: :func:`dpgm.privacy.quiet.on_records`)."""
    with on_records():
        for t in range(1, selections.remaining + 1):
            selections.select()
            selections.move(2.0 / (t + 2.0))
    return selections.weights


def steps_for(radius: float, records: float, rho_per_regression: float, constant: float) -> int:
    """T = max(2, ⌈c_T·(r·n·√ρ')^{2/3}⌉) (Cor. 3.4 with the note's constant, D5), at most
    MAX_STEPS."""
    steps = constant * (radius * max(records, 1.0) * math.sqrt(rho_per_regression)) ** (2.0 / 3.0)
    return max(2, math.ceil(steps)) if steps < MAX_STEPS else MAX_STEPS  # also where inf


def fit_regressions(
    data: Dataset,
    regressions: Sequence[tuple[int, int, int]],
    *,
    radius: float,
    rho: float | None,
    steps: int | None,
    rng: RngLike,
    budget: PrivacyBudget | None,
    count_share: float,
    step_constant: float,
    selection: str,
    features: str = "spins",
    order: int = 2,
    spent_share: float = 1.0,
    label: str,
) -> tuple[np.ndarray, PrivacyBudget | None, int, float | None]:
    """The Frank–Wolfe weights of ``regressions`` (design columns × regressions), the
    budget charged, T, and the noisy record count that set T (None where T was given).
    ``rho=None``: non-private (``steps`` needed). Each regression gets ρ' =
    ``spent_share``·ρ_fit / (a record's exposure); so the fit costs ``spent_share``·ρ_fit
    (twice that, at most, with the paper's printed noise). T not given is set from a noisy
    count, at most MAX_STEPS."""
    steps = optional(lambda name, v: integer(name, v, least=2), "steps", steps)
    selection = one_of("selection", selection, SELECTIONS)
    radius = positive("radius (twice the width, times k for the pairwise model)", radius)
    if rho is None:
        if steps is None:
            raise PrivacyParameterError("the non-private learner needs steps")
        selections = FrankWolfeSelections(data, regressions, radius=radius, steps=steps,
                                          rho=None, budget=None, features=features, order=order)
        return frank_wolfe(selections), None, steps, None
    rho = positive("rho", rho, error=PrivacyParameterError)
    count_share = fraction("count_share", count_share)
    step_constant = positive("step_constant", step_constant)
    fit = rho if steps is not None else rho * (1.0 - count_share)
    charged = spent_share * fit
    # the paper's printed noise at a claimed ρ provably costs up to 2ρ
    cost = (rho - fit) + (2.0 * charged if selection == "paper" else charged)
    budget = budget if budget is not None else PrivacyBudget(rho=cost)
    if budget.mode != "zcdp":
        raise PrivacyParameterError(f"{label} is rho-zCDP: give a zCDP budget")
    # refused before the count reads the data
    budget.require(cost, label, " (selection='paper' provably costs up to twice the fit's "
                                "rho)" if selection == "paper" else "")
    per_regression = charged / exposure(regressions, data.domain.shape)
    gen = None if rng is None else as_generator(rng)  # one stream for every draw
    records = None
    if steps is None:
        records = float(measure_record_count(data, budget, gen, rho=rho - fit).values[0])
        steps = steps_for(radius, records, per_regression, step_constant)
    selections = FrankWolfeSelections(data, regressions, radius=radius, steps=steps,
                                      rho=charged, budget=budget, rng=gen, selection=selection,
                                      features=features, order=order,
                                      label=f"{label}: private Frank-Wolfe")
    return frank_wolfe(selections), budget, steps, records
