"""Releasing the answer that most disjoint blocks of the data agree on: subsample and
aggregate with a stability test (Zhang et al. 2020, Lem. 6.1; the implementation note's D9).

A non-private algorithm that gives one fixed answer with probability above 1/2 on a block
of records is run on m blocks; only the answer most blocks gave (the mode) can be released,
and only when it is stable.

Guarantee ((ε, δ)-DP, add/remove neighbours): records are assigned to blocks uniformly at
random, independently of the data, so adding or removing a record changes one block,
hence at most one of the m block answers. With c₁ ≥ c₂ the two largest answer counts
(ties broken by the answers' own order, a public rule), the gap g = c₁ − c₂ moves by at most
2 and d = max(0, ⌈g/2⌉ − 1) by at most 1, and two neighbours with different modes both
have d = 0.

* ``method="ptr"`` (propose-test-release): release the mode if d + Laplace(1/ε) > τ with
  τ = ln(1/(2δ))/ε, else nothing (``None``). Same mode: an ε-DP test. Different modes:
  d = 0 on both, and the mode is released with probability P(Laplace(1/ε) > τ) = δ.
* ``method="histogram"`` (stable histogram): Laplace(2/ε) on the count of every answer
  that occurs (one block's change moves two counts by 1: L1 sensitivity 2); keep those
  above 1 + 2·ln(1/δ)/ε and release the one with the largest noisy count, or nothing. A
  label that appears or disappears passes the threshold with probability at most δ/2.

Either is one (ε, δ) entry in an (ε, δ) budget (:meth:`PrivacyBudget.approximate`),
charged before the blocks are read. Nothing about the counts is released but the answer.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable, Sequence

import numpy as np

from dpgm.dataset import Dataset, require_records
from dpgm.errors import ParameterError, PrivacyParameterError
from dpgm.privacy.budget import PrivacyBudget
from dpgm.privacy.noise import laplace_noise
from dpgm.privacy.policy import check_delta, check_epsilon
from dpgm.random import RngLike, as_generator
from dpgm.validation import integer, one_of

METHODS = ("ptr", "histogram")


def ptr_threshold(epsilon: float, delta: float) -> float:
    """τ = ln(1/(2δ))/ε: the noisy distance to instability must exceed it."""
    return math.log(1.0 / (2.0 * delta)) / epsilon


def gap_needed(epsilon: float, delta: float, failure: float) -> float:
    """The gap c₁ − c₂ at which PTR releases the mode with probability ≥ 1 − ``failure``:
    2 + 2·(ln(1/(2δ)) + ln(1/(2β)))/ε (the note's §2.6)."""
    return 2.0 + 2.0 * (math.log(1.0 / (2.0 * delta)) + math.log(1.0 / (2.0 * failure))) / epsilon


def release_probability(votes: int, others: int, epsilon: float, delta: float,
                        method: str = "ptr") -> float:
    """P(the mode is released) when ``votes`` blocks give it and ``others`` blocks the most
    frequent other answer (for the histogram: the mode's own test only)."""
    if method == "ptr":
        distance = max(0, math.ceil((votes - others) / 2) - 1)
        excess, scale = distance - ptr_threshold(epsilon, delta), 1.0 / epsilon
    else:
        excess, scale = votes - (1.0 + 2.0 * math.log(1.0 / delta) / epsilon), 2.0 / epsilon
    tail = 0.5 * math.exp(-abs(excess) / scale)  # P(Laplace(scale) > |excess|)
    return 1.0 - tail if excess > 0 else tail


def blocks_for(epsilon: float, delta: float, method: str = "ptr", agree: float = 0.9,
               probability: float = 0.95) -> int:
    """The fewest blocks m at which, if a share ``agree`` of them give the mode and the rest
    another answer, the mode is released with at least ``probability`` (a public choice)."""
    blocks = 1
    while release_probability(math.ceil(agree * blocks), blocks - math.ceil(agree * blocks),
                              epsilon, delta, method) < probability:
        blocks += 1
    return blocks


def check_blocks(blocks: int, epsilon: float, delta: float, method: str = "ptr") -> int:
    """``blocks``, refused (a public fact) where even unanimous blocks would be released
    with probability below 1/2."""
    blocks = integer("blocks", blocks, least=1)
    best = release_probability(blocks, 0, epsilon, delta, method)
    if best < 0.5:
        raise ParameterError(
            f"{blocks} blocks cannot release at epsilon={epsilon:g}, delta={delta:g}: even if "
            f"every block agreed the answer would come out with probability {best:.2g}; use "
            f"at least {blocks_for(epsilon, delta, method)} blocks (90% agreeing, 95% release)")
    return blocks


def assign_blocks(records: int, blocks: int, rng: RngLike = None,
                  shares: Sequence[float] | None = None) -> np.ndarray:
    """Each record's block, independent of the data and of the other records: uniform
    over ``blocks``, or block b with probability ``shares[b]`` (public, summing to 1).
    A record added keeps the others' blocks, so a neighbour changes one block only."""
    generator = np.random.default_rng() if rng is None else as_generator(rng)
    if shares is None:
        return generator.integers(blocks, size=records)
    cumulative = np.cumsum(np.asarray(shares, dtype=np.float64))
    if len(cumulative) != blocks or not np.isclose(cumulative[-1], 1.0) or np.any(
            np.asarray(shares) < 0):
        raise ParameterError(f"shares must be {blocks} probabilities summing to 1")
    return np.minimum(np.searchsorted(cumulative, generator.random(records), "right"),
                      blocks - 1)


def release_mode(answers: Sequence[Hashable], epsilon: float, delta: float, *,
                 method: str = "ptr", rng: RngLike = None,
                 budget: PrivacyBudget | None = None, label: str = "") -> Hashable | None:
    """The most frequent of ``answers`` (one per disjoint block of records) if it is
    stable, else ``None``; (ε, δ)-DP (see the module). Answers must be mutually orderable
    (their order breaks ties). ``budget`` (an (ε, δ) budget) is charged one entry first."""
    epsilon, delta, method = _checked(epsilon, delta, method, budget)
    _charge(budget, epsilon, delta, method, label, len(answers))
    return _release(list(answers), epsilon, delta, method, rng)


def subsample_and_aggregate(data: Dataset, learner: Callable[[Dataset], Hashable], blocks: int,
                            epsilon: float, delta: float, *, method: str = "ptr",
                            rng: RngLike = None, budget: PrivacyBudget | None = None,
                            label: str = "") -> Hashable | None:
    """Run the non-private ``learner`` on ``blocks`` random disjoint blocks of ``data`` and
    release the answer most of them agree on, if stable, else ``None``; (ε, δ)-DP.

    ``learner`` must be deterministic and return orderable, hashable answers (e.g. a
    sorted tuple of edges); a block on which it raises votes for releasing nothing.
    ``rng=None`` (a release): OS entropy for the blocks, OpenDP for the noise; a seed makes
    the run reproducible (research only).
    """
    data = require_records(data)
    if not callable(learner):
        raise ParameterError("learner must be a function of a Dataset")
    epsilon, delta, method = _checked(epsilon, delta, method, budget)
    blocks = check_blocks(blocks, epsilon, delta, method)
    _charge(budget, epsilon, delta, method, label, blocks)
    # the data are read from here on
    generator = None if rng is None else as_generator(rng)  # one stream: blocks, then noise
    block_of = assign_blocks(len(data), blocks, generator)
    weights = data.weights
    answers = [_answer(learner, Dataset(data.records[block_of == b], data.domain,
                                        None if weights is None else weights[block_of == b]))
               for b in range(blocks)]
    found = _release(answers, epsilon, delta, method, generator)
    return None if found is None or found[0] else found[1]


def _answer(learner: Callable[[Dataset], Hashable], block: Dataset) -> tuple:
    """(0, the learner's answer), or (1, "") where it fails on this block: a failure is a
    vote like any answer (it cannot end the release, which would tell something about the
    block), and releases nothing if it is the stable mode."""
    try:
        return (0, learner(block))
    except MemoryError:
        raise
    except Exception:  # noqa: BLE001 - any failure of a block is one vote for "none"
        return (1, "")


def _checked(epsilon, delta, method, budget) -> tuple[float, float, str]:
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    if delta is None:
        raise PrivacyParameterError("a stability release needs delta > 0")
    method = one_of("method", method, METHODS)
    if budget is not None and budget.mode != "approx":
        raise PrivacyParameterError(
            "a stability release is (epsilon, delta)-DP, not zCDP or pure: give a budget "
            "made with PrivacyBudget.approximate")
    return epsilon, delta, method


def _charge(budget, epsilon, delta, method, label, blocks) -> None:
    if budget is not None:
        what = "propose-test-release" if method == "ptr" else "stable histogram"
        budget.charge(epsilon=epsilon, delta=delta, label=label or f"{what} of the mode",
                      accounting=f"{what} over {blocks} disjoint random blocks")


def _release(answers: list, epsilon: float, delta: float, method: str, rng) -> Hashable | None:
    if not answers:
        return None
    # most frequent first, ties by the answers' order (public): the mode is the first
    ranked = sorted(Counter(answers).items(), key=lambda item: (-item[1], item[0]))
    if method == "ptr":
        second = ranked[1][1] if len(ranked) > 1 else 0
        distance = max(0, math.ceil((ranked[0][1] - second) / 2) - 1)
        noisy = float(laplace_noise(np.array([distance], dtype=float), 1.0 / epsilon, rng)[0])
        return ranked[0][0] if noisy > ptr_threshold(epsilon, delta) else None
    counts = laplace_noise(np.array([c for _, c in ranked], dtype=float), 2.0 / epsilon, rng)
    best = int(np.argmax(counts))
    return ranked[best][0] if counts[best] > 1.0 + 2.0 * math.log(1.0 / delta) / epsilon else None
