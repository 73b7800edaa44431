"""Private structure learning of Ising models (Zhang et al. 2020, Sec. 6; the note's
§2.6–2.7).

The edge set is learned by thresholding estimated couplings at η/2 (η a public lower bound
on the smallest |A_ij| of an edge; correct whenever every coupling is estimated to within
η/2). Three routes:

* ``"ptr"`` / ``"histogram"``, (ε, δ)-DP (Lem. 6.1, Cor. 6.3): the non-private learner
  (Frank–Wolfe with the exact oracle, a fixed number of steps, deterministic) on m random
  disjoint blocks, and the edge set most blocks agree on released by propose-test-release
  or a stable histogram (:mod:`dpgm.privacy.stability`). Sample size ∝ log p.
* ``"zcdp"`` (Table 1's zCDP row): the private parameter learner at ρ = cdp_rho(ε, δ), then
  the threshold (post-processing). Sample size ∝ √p.

Labels such as D10, and the note's § numbers, refer to the implementation note
``docs/notes/mrf.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpgm.dataset import Dataset, require_records
from dpgm.errors import DataError, ParameterError, PrivacyParameterError, option
from dpgm.mrf.ising import learn_ising
from dpgm.privacy.accounting import cdp_rho
from dpgm.privacy.budget import PrivacyBudget
from dpgm.privacy.policy import check_delta, check_epsilon
from dpgm.privacy.stability import blocks_for, check_blocks, subsample_and_aggregate
from dpgm.random import RngLike
from dpgm.validation import integer, one_of, positive

METHODS = ("ptr", "histogram", "zcdp")


@dataclass
class StructureEstimate:
    """What :func:`learn_structure` released: the edges as pairs of attribute names, or
    ``None`` when the stability test refused (nothing is then known about the data)."""

    edges: list[tuple[str, str]] | None
    method: str
    budget: PrivacyBudget


def threshold_edges(couplings: np.ndarray, threshold: float) -> tuple[tuple[int, int], ...]:
    """The pairs i < j with |A_ij| > ``threshold``, sorted (A symmetric)."""
    rows, cols = np.nonzero(np.triu(np.abs(couplings) > threshold, k=1))
    return tuple(zip(rows.tolist(), cols.tolist(), strict=True))


def ising_edges(data: Dataset, width: float, threshold: float, steps: int
                ) -> tuple[tuple[int, int], ...]:
    """The non-private block learner (the note's D10): exact Frank–Wolfe with ``steps``
    steps, symmetrised, thresholded. Not private: for one block inside a stability release."""
    return threshold_edges(learn_ising(data, None, width, steps=steps).model.A, threshold)


def structure_blocks(epsilon: float, delta: float, method: str, blocks: int | None
                     ) -> int | None:
    """The number of blocks a stability release of the edges will use (None for the zCDP
    route), checked on public facts alone: ``blocks``, or by default the fewest at which
    90% of them agreeing is released with probability 95%. Refused where no release is
    possible: even unanimous blocks released with probability below 1/2, or more than
    :data:`~dpgm.privacy.stability.MAX_BLOCKS` blocks needed."""
    method = one_of("method", method, METHODS)
    if method == "zcdp":
        return None
    if blocks is None:
        try:
            blocks = blocks_for(epsilon, delta, method)
        except ParameterError as exc:  # the zCDP route needs no blocks
            raise ParameterError(f"{exc}, or {option('method', 'zcdp')}") from None
    return check_blocks(blocks, epsilon, delta, method)


def learn_structure(
    data: Dataset,
    epsilon: float,
    delta: float,
    width: float,
    min_edge_weight: float,
    *,
    method: str = "ptr",
    blocks: int | None = None,
    steps: int = 150,
    rng: RngLike = None,
    budget: PrivacyBudget | None = None,
) -> StructureEstimate:
    """The edges of an Ising model of binary ``data``, (ε, δ)-DP.

    ``width`` λ and ``min_edge_weight`` η are public bounds (threshold η/2). ``method``:
    ``"ptr"`` (default) or ``"histogram"`` over ``blocks`` random blocks (by default the
    fewest at which 90% of blocks agreeing is released with probability 95%: 39 at ε = 1,
    δ = 10⁻⁶), each fitted by ``steps`` non-private Frank–Wolfe steps; or ``"zcdp"``, the
    private parameter learner at ρ = cdp_rho(ε, δ). Blocks that cannot release even when
    unanimous are refused before anything is charged (:func:`structure_blocks`); more
    blocks than records is not refused (only the data know the count): the empty blocks
    vote for releasing nothing. ``budget``: an (ε, δ) budget
    (:meth:`PrivacyBudget.approximate`), charged one (ε, δ) entry; a fresh one of (ε, δ)
    otherwise. The zCDP route may also be given a zCDP budget, which is charged ρ.
    """
    data = require_records(data)
    if any(size != 2 for size in data.domain.shape):
        raise DataError("an Ising model needs binary attributes")
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    if delta is None:
        raise PrivacyParameterError("structure learning is (epsilon, delta)-DP: give delta > 0")
    width = positive("width", width)
    threshold = positive("min_edge_weight", min_edge_weight) / 2.0
    method = one_of("method", method, METHODS)
    if blocks is not None:
        blocks = integer("blocks", blocks, least=1)
    # whether a release is possible at all is a public fact: refused before any charge
    blocks = structure_blocks(epsilon, delta, method, blocks)
    steps = integer("steps", steps, least=2)
    budget = budget if budget is not None else PrivacyBudget.approximate(epsilon, delta)
    names = list(data.domain.attrs)
    if method == "zcdp":
        rho = cdp_rho(epsilon, delta)
        inner = budget
        if budget.mode == "approx":  # ρ-zCDP is (ε, δ)-DP: one (ε, δ) entry, charged first
            budget.charge(epsilon=epsilon, delta=delta, label="Ising structure (zCDP route)",
                          accounting=f"rho={rho:.6g}-zCDP converted to (epsilon, delta) "
                                     f"(Canonne, Kamath & Steinke 2020)")
            inner = PrivacyBudget(rho=rho)
        elif budget.mode != "zcdp":
            raise PrivacyParameterError("the zCDP route needs an (epsilon, delta) or zCDP budget")
        fitted = learn_ising(data, rho, width, rng=rng, budget=inner)
        found = threshold_edges(fitted.model.A, threshold)
    else:
        found = subsample_and_aggregate(
            data, lambda block: ising_edges(block, width, threshold, steps), blocks, epsilon,
            delta, method=method, rng=rng, budget=budget, label="Ising structure")
    edges = None if found is None else [(names[i], names[j]) for i, j in found]
    return StructureEstimate(edges, method, budget)
