"""Private parity moments of binary records by private multiplicative weights (Zhang et al.
2020, Alg. 5 step 3 via Hardt & Rothblum 2010; the implementation note's D8).

The moments Q(I) = mean of z^I = Π_{j∈I} z_j over the records (spins z = 2v − 1), for every
set I of 1 to ``order`` attributes, estimated from a distribution P over all 2^p spin
vectors, uniform at first. Each round: the parity worst answered by P is chosen by the
exponential mechanism (score |a_I − n̂·E_P[z^I]|, a_I = Σ_m z^I, sensitivity 1 under
add/remove with n̂ a noisy count fixed before), its sum a_I is measured with Gaussian
noise (L2 sensitivity 1), and P is updated multiplicatively towards it:
P(x) ∝ P(x)·exp(x^I·(â_I/n̂ − E_P[z^I])/2).

ρ-zCDP: ``count_share``·ρ for n̂, the rest split evenly between the R selections
(ε = √(8ρ_r), ρ_r = ρ_rest/(2R) each; a little less where OpenDP's exact sampler is proven
to cost more) and the R measurements (ρ_r each). The released
moments are post-processing of these. P is a full table: p ≤ :data:`MAX_ATTRIBUTES`.

Labels such as D8 refer to the implementation note ``docs/notes/mrf.md``.
"""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np

from dpgm.dataset import Dataset
from dpgm.errors import DataError, ModelTooLargeError, PrivacyParameterError
from dpgm.privacy.budget import PrivacyBudget
from dpgm.privacy.exponential import epsilon_for, exponential_mechanism
from dpgm.privacy.measure import measure_linear, measure_record_count
from dpgm.privacy.quiet import on_records
from dpgm.random import RngLike, as_generator
from dpgm.validation import fraction, integer, optional, positive

#: the table P has 2^p cells
MAX_ATTRIBUTES = 20


def parity_sets(attributes: int, order: int) -> list[tuple[int, ...]]:
    """Every set of 1 to ``order`` attributes, by size then lexicographically."""
    return [s for size in range(1, order + 1) for s in combinations(range(attributes), size)]


def spin_table(attributes: int) -> np.ndarray:
    """The 2^p × p spins of every configuration, attribute 0 the slowest (C order)."""
    codes = np.arange(2**attributes)[:, None] >> np.arange(attributes - 1, -1, -1)
    return (2 * (codes & 1) - 1).astype(np.int8)


def default_rounds(records: float, rho: float, attributes: int, queries: int) -> int:
    """R ≈ n̂·√ρ·√(p·ln 2)/ln|Q| (the note's balance of the multiplicative-weights error
    against the noise), capped at 2|Q| rounds (a deviation: beyond it rounds only split
    the budget thinner on these sizes)."""
    balanced = max(records, 1.0) * math.sqrt(rho) * math.sqrt(attributes * math.log(2.0)) / (
        math.log(max(queries, 2)))
    return int(max(1, min(balanced, 2 * queries)))


def private_parity_moments(data: Dataset, rho: float, order: int, *,
                           rounds: int | None = None, count_share: float = 0.02,
                           rng: RngLike = None, budget: PrivacyBudget | None = None,
                           label: str = "parity moments") -> dict[tuple[int, ...], float]:
    """Q̂(I) for every set I of 1 to ``order`` attributes of binary ``data``, ρ-zCDP (see
    the module). ``rounds`` R is public; by default it is set from the noisy count."""
    if any(size != 2 for size in data.domain.shape):
        raise DataError("parity moments need binary attributes")
    p = len(data.domain)
    if p > MAX_ATTRIBUTES:
        raise ModelTooLargeError(f"private multiplicative weights keeps a table of 2^p cells: "
                                 f"p = {p} is over {MAX_ATTRIBUTES}")
    order = integer("order", order, least=1)
    rho = positive("rho", rho, error=PrivacyParameterError)
    count_share = fraction("count_share", count_share)
    rounds = optional(lambda name, v: integer(name, v, least=1), "rounds", rounds)
    budget = budget if budget is not None else PrivacyBudget(rho=rho)
    if budget.mode != "zcdp":
        raise PrivacyParameterError(f"{label} are rho-zCDP: give a zCDP budget")
    budget.require(rho, label)
    if data.weights is not None:
        raise DataError(f"{label} need unweighted records")
    queries = parity_sets(p, order)
    gen = None if rng is None else as_generator(rng)
    rest = rho * (1.0 - count_share)
    count = float(measure_record_count(data, budget, gen, rho=rho - rest).values[0])
    n_hat = max(count, 1.0)
    rounds = rounds if rounds is not None else default_rounds(n_hat, rest, p, len(queries))
    per_round = rest / (2 * rounds)
    selection_epsilon = epsilon_for(per_round, 1.0, gen is None)  # its charge ≤ per_round
    with on_records():  # no warning raised on the records reaches the user
        # the exact sums, for the selections' scores (released only through the mechanisms)
        spins = 2 * data.records.astype(np.int8) - 1
        sums = np.array([np.prod(spins[:, list(s)], axis=1, dtype=np.int64).sum() for s in queries],
                        dtype=np.float64)
        table = spin_table(p)
        parities = np.array([np.prod(table[:, list(s)], axis=1) for s in queries], dtype=np.float64)
        weights = np.full(2**p, 1.0 / 2**p)
        attrs = data.domain.attrs
        for r in range(rounds):
            expected = parities @ weights
            chosen = int(exponential_mechanism(
                np.abs(sums - n_hat * expected), selection_epsilon, 1.0, gen, budget,
                label=f"{label}: selection {r + 1} of {rounds}"))
            subset = queries[chosen]
            query = _parity_row(len(subset))
            measured = measure_linear(data, [attrs[j] for j in subset], query, rho=per_round,
                                      budget=budget, rng=gen,
                                      label=f"{label}: measurement {r + 1} of {rounds}")
            step = (float(measured.values[0]) / n_hat - expected[chosen]) / 2.0
            weights *= np.exp(np.clip(step, -50.0, 50.0) * parities[chosen])
            weights /= weights.sum()
    return dict(zip(queries, (parities @ weights).tolist(), strict=True))


def _parity_row(size: int) -> np.ndarray:
    """z^I over the cells of I's marginal (values 0/1 ↔ spins −1/+1), as a 1 × 2^|I| query."""
    row = np.ones(1)
    for _ in range(size):
        row = np.kron(row, np.array([-1.0, 1.0]))
    return row[None, :]
