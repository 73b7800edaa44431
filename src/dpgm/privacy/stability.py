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

A block that receives no record votes for releasing nothing (the learner's answer on no
data says nothing about the data, and must not outvote the blocks that have some). The
number of blocks is refused above :data:`MAX_BLOCKS` (public), never against the number of
records, which only the data know: more blocks than records is allowed, and then at least
the empty blocks vote for nothing, so a stable answer is unlikely.

Labels such as D9, and the note's § numbers, refer to the implementation note
``docs/notes/mrf.md``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable, Sequence

import numpy as np

from dpgm.dataset import Dataset, require_records
from dpgm.errors import ParameterError, PrivacyParameterError, option
from dpgm.privacy.amplification import secret_uniforms
from dpgm.privacy.budget import PrivacyBudget
from dpgm.privacy.noise import laplace_noise
from dpgm.privacy.policy import check_delta, check_epsilon
from dpgm.privacy.quiet import on_records
from dpgm.random import RngLike, as_generator
from dpgm.validation import integer, one_of

METHODS = ("ptr", "histogram")
#: the most blocks a release may use (a public limit: each block is one learner run)
MAX_BLOCKS = 10**6


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


def _least_blocks(epsilon: float, delta: float, method: str) -> int:
    """A number of blocks below which not even unanimous blocks are released with
    probability 1/2 or more (d, or the count, must reach the threshold): where the
    searches below start (MAX_BLOCKS + 1 where that is beyond the limit)."""
    if method == "ptr":  # d = ⌈m/2⌉ − 1 ≥ τ needs m ≥ 2τ
        least = 2.0 * ptr_threshold(epsilon, delta)
    else:
        least = 1.0 + 2.0 * math.log(1.0 / delta) / epsilon
    return max(1, math.floor(least)) if least <= MAX_BLOCKS else MAX_BLOCKS + 1


def _first_blocks(released: Callable[[int], bool], start: int) -> int | None:
    """The fewest blocks m ≥ ``start``, at most MAX_BLOCKS, with ``released(m)``; None
    where there is none."""
    for blocks in range(start, MAX_BLOCKS + 1):
        if released(blocks):
            return blocks
    return None


def fewest_blocks(epsilon: float, delta: float, method: str = "ptr") -> int | None:
    """The fewest blocks that :func:`check_blocks` allows (unanimous blocks released with
    probability ≥ 1/2), or None where even MAX_BLOCKS blocks are too few."""
    return _first_blocks(lambda m: release_probability(m, 0, epsilon, delta, method) >= 0.5,
                         _least_blocks(epsilon, delta, method))


def blocks_for(epsilon: float, delta: float, method: str = "ptr", agree: float = 0.9,
               probability: float = 0.95) -> int:
    """The fewest blocks m at which, if a share ``agree`` of them give the mode and the rest
    another answer, the mode is released with at least ``probability`` (a public choice);
    refused where that would take more than MAX_BLOCKS blocks."""
    def released(blocks: int) -> bool:
        votes = math.ceil(agree * blocks)
        return release_probability(votes, blocks - votes, epsilon, delta, method) >= probability

    # below the fewest blocks that can release at all (probability < 1/2 < ``probability``)
    # none is released, so the search starts there: at small ε it is far from 1
    found = _first_blocks(released, _least_blocks(epsilon, delta, method))
    if found is None:
        raise ParameterError(
            f"at epsilon={epsilon:g}, delta={delta:g} a stability release would need more "
            f"than {MAX_BLOCKS:,} blocks (the most allowed): give a larger "
            f"{option('epsilon')} or {option('delta')}")
    return found


def check_blocks(blocks: int, epsilon: float, delta: float, method: str = "ptr") -> int:
    """``blocks``, refused (a public fact) above MAX_BLOCKS, or where even unanimous blocks
    would be released with probability below 1/2."""
    blocks = integer("blocks", blocks, least=1)
    if blocks > MAX_BLOCKS:
        raise ParameterError(f"{option('blocks', blocks)} is more than the {MAX_BLOCKS:,} "
                             "blocks allowed")
    best = release_probability(blocks, 0, epsilon, delta, method)
    if best < 0.5:
        enough = blocks_for(epsilon, delta, method)  # refuses where none would do
        raise ParameterError(
            f"{blocks} blocks cannot release at epsilon={epsilon:g}, delta={delta:g}: even if "
            f"every block agreed the answer would come out with probability {best:.2g}; use "
            f"at least {enough} blocks ({option('blocks', enough)}: 90% agreeing are "
            f"released with probability 95%)")
    return blocks


def assign_blocks(records: int, blocks: int, rng: RngLike = None,
                  shares: Sequence[float] | None = None) -> np.ndarray:
    """Each record's block, independent of the data and of the other records: uniform
    over ``blocks``, or block b with probability ``shares[b]`` (public, summing to 1).
    A record added keeps the others' blocks, so a neighbour changes one block only.

    ``rng=None`` (a release) draws from the OS's cryptographic source, as a Poisson
    subsample does: which records share a block must stay secret. A seed makes the
    partition reproducible (research only)."""
    cumulative = None
    if shares is not None:
        cumulative = np.cumsum(np.asarray(shares, dtype=np.float64))
        if len(cumulative) != blocks or not np.isclose(cumulative[-1], 1.0) or np.any(
                np.asarray(shares) < 0):
            raise ParameterError(f"shares must be {blocks} probabilities summing to 1")
    if rng is None:
        uniforms = secret_uniforms(records, None)
        if cumulative is None:  # u < 1, so ⌊u·m⌋ < m; the minimum guards the rounding
            return np.minimum((uniforms * blocks).astype(np.int64), blocks - 1)
    else:
        generator = as_generator(rng)
        if cumulative is None:
            return generator.integers(blocks, size=records)
        uniforms = generator.random(records)
    return np.minimum(np.searchsorted(cumulative, uniforms, "right"), blocks - 1)


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
    sorted tuple of edges); a block on which it raises, or with no record, votes for
    releasing nothing.
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
    # the records by block in one sort, not one pass over the data per block
    order = np.argsort(block_of, kind="stable")
    bounds = np.searchsorted(block_of[order], np.arange(blocks + 1))
    weights = data.weights
    answers = []
    with on_records():  # no warning raised on a block's records reaches the user
        for b in range(blocks):
            rows = order[bounds[b]:bounds[b + 1]]
            answers.append((1, "") if len(rows) == 0 else _answer(learner, Dataset(
                data.records[rows], data.domain, None if weights is None else weights[rows])))
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
