"""One private selection of a Bayesian network's structure: PrivBayes's GreedyBayes
(Zhang, Cormode, Procopiuc, Srivastava & Xiao, TODS 2017), shared by the PrivBayes
synthesizer and ``dpgm bn learn`` (:mod:`dpgm.mechanisms.bn_learn`).

Structure (GreedyBayes with θ-usefulness). The first attribute is drawn uniformly at
random (no data involved). In each later round the network V is extended by one pair
(X, Π), X ∉ V, Π ⊆ V, |Π| ≤ k. A marginal is θ-useful when its average count per cell
is at least θ times the Laplace scale it will be measured with, i.e. when its cells
number at most a threshold τ that the caller sets from public facts and released values
(PrivBayes: τ = n̂·ε₂/(d·θ), with ε₂ the budget of the marginals). For each child X the
candidates are its *maximal* θ-useful parent sets of size at most min(k, |V|) —
θ-useful sets none of whose one-larger supersets (within the size cap) is θ-useful —
or {∅} if none is θ-useful. This is PrivBayes's MaximalParentSets rule for
general domains with the degree cap k; when every size-k set is θ-useful it gives
exactly the parent sets of size min(k, |V|). The candidates depend on the domain, V and
τ only.

The score (PrivBayes's R for general domains, in counts). For a candidate (X, Π) with
count table N(x, π) on its cells, total N and marginals N(x), N(π),

    S = ½ Σ_{x,π} |N(x, π) − N(x)·N(π)/N|      (S = 0 when N = 0),

i.e. N times R = ½‖Pr[X, Π] − Pr[X]⊗Pr[Π]‖₁. Sensitivity Δ = 2, proof: let D = N − E
with E(x, π) = N(x)N(π)/N, and add one record of weight w ∈ (0, 1] at cell (x₀, π₀)
(removal is the same pair of datasets the other way round). Write a(x) = N(x)/N,
b(π) = N(π)/N, u = 1 − a(x₀), v = 1 − b(π₀) ∈ [0, 1] and N' = N + w. Then

    E'(x, π) − E(x, π) = w·(−N·a·b + N·a·[π = π₀] + N·b·[x = x₀] + w·[x = x₀][π = π₀])/N',

whose absolute values sum to w·N·uv/N' over each of the three groups "x ≠ x₀, π ≠ π₀",
"x = x₀, π ≠ π₀" and "x ≠ x₀, π = π₀"; in the cell (x₀, π₀), D changes by
w − w·(N·(1 − uv) + w)/N' = w·N·uv/N'. Hence ‖D' − D‖₁ = 4·w·N·uv/N' < 4 and
|S' − S| ≤ ½‖D' − D‖₁ < 2 (for N = 0, S = S' = 0). The bound cannot be lowered: for a
table with N(x, π) = N(x)N(π)/N (S = 0) and a record with a new x₀ and a new π₀
(u = v = 1), every change above has the sign of D', so S' = 2N/(N + 1) → 2.
The exponential mechanism therefore picks (X, Π) with probability ∝ exp(ε_round·S/4).

Why R and not mutual information: n·I(X; Π) changes by up to about log n when one record
is added, so its sensitivity depends on n, which is itself private under add/remove DP;
R in counts has the constant sensitivity 2 whatever n is.

Privacy: each round is one exponential mechanism over the candidates' scores, ε_round-DP
under adding or removing one record (sensitivity 2, below), charged to the caller's
budget before it draws; d − 1 rounds cost (d − 1)·ε_round by sequential composition. The
candidates depend on public facts only (the domain, the degree, the network so far and
the caller's threshold, itself from public facts and released values).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from itertools import combinations

import numpy as np

from dpgm.dataset import Dataset
from dpgm.domain import Domain
from dpgm.privacy.budget import PrivacyBudget
from dpgm.privacy.exponential import exponential_mechanism

Pair = tuple[str, tuple[str, ...]]

#: sensitivity of :func:`r_score` under adding or removing one record (module docstring)
R_SENSITIVITY = 2.0


def r_score(table: np.ndarray) -> float:
    """PrivBayes's R score in counts: ½‖N(X, Π) − N(X)⊗N(Π)/N‖₁ (child on axis 0)."""
    table = np.asarray(table, dtype=np.float64)
    total = float(table.sum())
    if total <= 0:
        return 0.0
    child = table.sum(axis=tuple(range(1, table.ndim))) if table.ndim > 1 else table
    parents = table.sum(axis=0)
    product = np.multiply.outer(child, parents) / total
    return 0.5 * float(np.abs(table - product).sum())


def parent_sets(
    domain: Domain, child: str, network: list[str], degree: int, threshold: float
) -> list[tuple[str, ...]]:
    """The child's maximal θ-useful parent sets in ``network`` of size <= ``degree``, or [()].

    A set Π is θ-useful when the (child, Π) marginal has at most ``threshold`` cells; it is
    maximal when no θ-useful set one attribute larger (within the size cap) contains it.
    Sets come largest first, each size in ``itertools.combinations`` order of ``network``.
    """
    top = min(degree, len(network))
    limit = threshold / domain[child]  # most parent cells a θ-useful set may have
    fits = [
        [p for p in combinations(network, j) if math.prod(domain[a] for a in p) <= limit]
        for j in range(top + 1)
    ]
    found: list[tuple[str, ...]] = list(fits[top])
    for j in range(top - 1, -1, -1):
        larger = {frozenset(p) for p in fits[j + 1]}
        found += [
            p
            for p in fits[j]
            if not any(frozenset((*p, a)) in larger for a in network if a not in p)
        ]
    return found or [()]


def budget_split(epsilon: float, structure_share: float, count_share: float, d: int
                 ) -> tuple[float, float, float]:
    """(the record count, each of the d − 1 selection rounds, what the tables after them
    get): ``structure_share``·ε chooses the structure, ``count_share`` of it measuring the
    count; with one attribute there is nothing to select and the tables get all but the
    count."""
    structure = structure_share * epsilon
    count = count_share * structure
    if d == 1:
        return count, 0.0, epsilon - count
    return count, (structure - count) / (d - 1), epsilon - structure


def score_table_cells(domain: Domain, degree: int) -> int:
    """A bound on the cells of the score tables one round of :func:`select_network` counts
    at once (public: from the domain and the degree). A round scores the pairs it has not
    seen, whose parent sets hold the attribute the previous round added: with t
    attributes in the network, at most (d − t) children × Σ_{j<k} e_j(t − 1 others) sets,
    each table at most s² times the others' sizes (s the largest size, e_j the j-th
    elementary symmetric sum of the largest sizes)."""
    sizes = sorted(domain.shape, reverse=True)
    d, largest = len(sizes), (sizes[0] if sizes else 1)
    sums = [1] + [0] * max(degree - 1, 0)  # e_0..e_{k-1} of the sizes taken so far
    worst = 0
    for t in range(1, d):
        worst = max(worst, (d - t) * largest * largest * sum(sums))
        for j in range(len(sums) - 1, 0, -1):  # take the next largest size in
            sums[j] += sums[j - 1] * sizes[t - 1]
    return worst


def select_network(
    data: Dataset,
    degree: int,
    epsilon_round: float,
    threshold: float,
    budget: PrivacyBudget,
    rng: np.random.Generator | None,
    *,
    first: str | None = None,
    other: np.random.Generator | None = None,
    say: Callable[[str], None] | None = None,
) -> list[Pair]:
    """The greedy network of ``degree``: a random first attribute, then one private pick
    per round, as (child, parents) in the order chosen.

    ``first`` fixes the first attribute instead (for tests); otherwise it is drawn from
    ``other`` (no data involved; default ``rng``). Candidates come child by child in
    domain order, each child's sets as :func:`parent_sets` lists them with ``threshold``.
    ``rng`` is the selections' generator (None: OpenDP's exact sampler); each round
    charges ``epsilon_round`` to ``budget``. ``say`` gets one line per round.
    """
    domain = data.domain
    attrs = domain.attrs
    if first is None:
        draw = other if other is not None else np.random.default_rng(rng)
        first = attrs[int(draw.integers(len(attrs)))]
    network: list[Pair] = [(first, ())]
    inside = {first}
    scores: dict[Pair, float] = {}  # a pair's score does not change between rounds
    for t in range(1, len(attrs)):
        members = [a for a in attrs if a in inside]
        candidates = [
            (child, parents)
            for child in attrs
            if child not in inside
            for parents in parent_sets(domain, child, members, degree, threshold)
        ]
        new = [pair for pair in candidates if pair not in scores]
        for pair, counts in zip(new, data.marginals([(c, *ps) for c, ps in new]),
                                strict=True):  # one pass per round where it can
            scores[pair] = r_score(counts)
        pick = exponential_mechanism(
            [scores[p] for p in candidates],
            epsilon_round,
            R_SENSITIVITY,
            rng,
            budget,
            label=f"round {t}: select",
        )
        child, parents = candidates[pick]
        network.append((child, parents))
        inside.add(child)
        if say is not None:
            say(f"round {t}/{len(attrs) - 1}: {child} | {', '.join(parents) or '-'} "
                f"(from {len(candidates)} candidates)")
    return network
