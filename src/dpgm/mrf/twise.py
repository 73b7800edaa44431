"""Private parameter learning of binary t-wise models (Zhang et al. 2020, Algs. 4 and 5; the
note's §2.4–2.5 and D7).

For every attribute i, the logistic regression of z_i on the parities z^J of up to t − 1
other attributes (and a bias) over the L1 ball of radius 2λ: its target is 2·∂_i h, whose
coefficient on z^J is 2·h̄(J ∪ {i}). ρ-zCDP (add/remove neighbours).

* ``goal="l1"`` (Alg. 4): ū(J ∪ {i}) = w_i(J)/2, each monomial read from its smallest
  attribute; ρ_fit/p per attribute.
* ``goal="linf"`` (Alg. 5): the records are split at random (each to part 2 with public
  probability ``moment_share``, never "the last n₂", which is not stable under add/remove);
  part 2 gives private parity moments Q̂ of order ≤ t − 1 (:mod:`dpgm.mrf.moments`), part 1
  the regressions, and ū(J ∪ {i}) = Σ_{J'} v̄_i(J ∪ J')·Q̂(J') (Q̂(∅) = 1, v̄_i = w_i/2): the
  plug-in estimate of E[∂_J v_i(X)], exact on maximal monomials. ``split_budget="paper"``
  gives each part ρ/2 (sequential, as printed); ``"parallel"`` gives each part ρ, which
  parallel composition allows because the parts are disjoint (one (ρ) entry recorded).

Labels such as D7, and the note's § numbers, refer to the implementation note
``docs/notes/mrf.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpgm.dataset import Dataset, require_records
from dpgm.errors import DataError, ParameterError, PrivacyParameterError
from dpgm.models.pairwise import TwiseModel
from dpgm.mrf.ising import spin_regressions
from dpgm.mrf.moments import private_parity_moments
from dpgm.mrf.regressions import fit_regressions, with_release
from dpgm.privacy.budget import PrivacyBudget
from dpgm.privacy.frank_wolfe import feature_columns
from dpgm.privacy.stability import assign_blocks
from dpgm.random import RngLike, as_generator
from dpgm.validation import fraction, integer, one_of, positive

GOALS = ("l1", "linf")
SPLITS = ("paper", "parallel")


@dataclass
class TwiseEstimate:
    """What :func:`learn_twise` learned: the model ū, the ledger, the steps T and, for the
    ℓ∞ goal, the released parity moments Q̂ (public)."""

    model: TwiseModel
    budget: PrivacyBudget | None
    steps: int
    moments: dict[tuple[int, ...], float] | None = None


def learn_twise(
    data: Dataset,
    rho: float | None,
    width: float,
    order: int,
    *,
    goal: str = "l1",
    moment_share: float = 0.5,
    split_budget: str = "paper",
    rounds: int | None = None,
    rng: RngLike = None,
    steps: int | None = None,
    count_share: float = 0.01,
    step_constant: float = 0.5,
    selection: str = "em",
    budget: PrivacyBudget | None = None,
) -> TwiseEstimate:
    """A binary t-wise model (t = ``order``) of binary ``data``, ρ-zCDP (see the module).

    ``width`` is a public bound λ ≥ max_i ‖∂_i h‖₁. ``rho=None``: non-private (``steps``
    required; the ℓ∞ goal then uses the exact moments of part 2). The other arguments as
    in :func:`dpgm.mrf.learn_ising`; ``rounds`` of the moments' multiplicative weights.
    """
    data = require_records(data)
    if any(size != 2 for size in data.domain.shape):
        raise DataError("a t-wise model needs binary attributes")
    order = integer("order", order, least=2)
    goal = one_of("goal", goal, GOALS)
    split_budget = one_of("split_budget", split_budget, SPLITS)
    moment_share = fraction("moment_share", moment_share)
    radius = 2.0 * positive("width", width)
    p = len(data.domain)
    columns = feature_columns(data.domain.shape, "parities", order)
    fit = {"radius": radius, "steps": steps, "count_share": count_share, "features": "parities",
           "order": order, "step_constant": step_constant, "selection": selection}
    if goal == "l1":
        weights, budget, steps, records = fit_regressions(
            data, spin_regressions(p), rho=rho, rng=rng, budget=budget, label="t-wise", **fit)
        return with_release(TwiseEstimate(_model(data, l1_read_out(weights, columns)), budget,
                                          steps), "learn_twise", rng, records)

    if rho is not None:
        rho = positive("rho", rho, error=PrivacyParameterError)
        if selection == "paper":
            raise ParameterError("selection='paper' (for comparison) is offered for the l1 "
                                 "goal only")
        budget = budget if budget is not None else PrivacyBudget(rho=rho)
        if budget.mode != "zcdp":
            raise PrivacyParameterError("t-wise learning is rho-zCDP: give a zCDP budget")
        budget.require(rho, "t-wise learning")  # refused before the data are read
    gen = None if rng is None else as_generator(rng)
    # the data are read from here on: the parts, independent of the data
    part = assign_blocks(len(data), 2, gen, shares=[1.0 - moment_share, moment_share])
    first, second = (Dataset(data.records[part == b], data.domain) for b in (0, 1))
    if rho is None:
        weights, _, steps, _ = fit_regressions(first, spin_regressions(p), rho=None, rng=None,
                                            budget=None, label="t-wise", **fit)
        moments = exact_parity_moments(second, order - 1)
        return TwiseEstimate(_model(data, linf_read_out(weights, columns, moments)), None,
                             steps, moments)
    each = rho / 2.0 if split_budget == "paper" else rho
    inner = budget if split_budget == "paper" else PrivacyBudget(rho=2.0 * rho)
    if split_budget == "parallel":
        budget.charge(rho=rho, label="t-wise (l-infinity): moments and regressions",
                      accounting="parallel composition: disjoint random parts, rho each")
    moments = private_parity_moments(second, each, order - 1, rounds=rounds, rng=gen,
                                     budget=inner, label="t-wise parity moments")
    weights, _, steps, records = fit_regressions(first, spin_regressions(p), rho=each,
                                                 rng=gen, budget=inner, label="t-wise", **fit)
    # the count is of the regressions' part: scaled to the whole (post-processing)
    whole = None if records is None else records / (1.0 - moment_share)
    return with_release(TwiseEstimate(_model(data, linf_read_out(weights, columns, moments)),
                                      budget, steps, moments), "learn_twise", rng, whole)


def exact_parity_moments(data: Dataset, order: int) -> dict[tuple[int, ...], float]:
    """The mean of z^I over the records, for every set I of 1 to ``order`` attributes (not
    private: the non-private reference)."""
    spins = 2.0 * data.records - 1.0
    columns = feature_columns(data.domain.shape, "parities", order + 1)
    n = max(len(data), 1)
    return {subset: float(np.prod(spins[:, list(subset)], axis=1).sum() / n)
            for subset, _ in columns}


def l1_read_out(weights: np.ndarray, columns: list) -> dict[tuple[int, ...], float]:
    """Alg. 4 steps 4–5: ū(J ∪ {i}) = w_i(J)/2 for J above i (the bias is J = ∅)."""
    p = weights.shape[1]
    out = {(i,): weights[-1, i] / 2.0 for i in range(p)}
    for c, (subset, _) in enumerate(columns):
        for node in range(subset[0]):  # each attribute below the set's smallest reads it
            out[(node, *subset)] = weights[c, node] / 2.0
    return out


def linf_read_out(weights: np.ndarray, columns: list, moments: dict[tuple[int, ...], float]
                  ) -> dict[tuple[int, ...], float]:
    """Alg. 5 step 9: ū(J ∪ {i}) = Σ_{J'} v̄_i(J ∪ J')·Q̂(J') over the J' disjoint from
    J ∪ {i} with J ∪ J' a feature of i (v̄_i = w_i/2, Q̂(∅) = 1), for J above i."""
    p = weights.shape[1]
    index = {subset: c for c, (subset, _) in enumerate(columns)}
    index[()] = len(columns)  # the bias
    out = {}
    for i in range(p):
        for below in [()] + [s for s, _ in columns if s[0] > i]:
            total = 0.0
            for feature, c in index.items():
                if i in feature or not set(below) <= set(feature):
                    continue
                rest = tuple(sorted(set(feature) - set(below)))
                total += weights[c, i] / 2.0 * (moments[rest] if rest else 1.0)
            out[(i, *below)] = total
    return out


def _model(data: Dataset, coefficients: dict[tuple[int, ...], float]) -> TwiseModel:
    return TwiseModel(len(data.domain), coefficients, names=list(data.domain.attrs))
