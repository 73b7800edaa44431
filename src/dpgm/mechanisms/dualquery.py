"""DualQuery (Gaboardi, Arias, Hsu, Roth & Wu 2014), with Private-PGM estimation (App. C.3).

DualQuery plays a zero-sum game between a *query player*, who keeps a distribution over
the workload's counting queries and their complements, and a *data player*, who answers
each round with the single record satisfying the most queries drawn from it. The records
``x¹ … x^T`` are its output (synthetic data). Private-PGM instead fits a graphical model
that maximises the likelihood of the queries drawn (Algorithms 4 and 5 of the paper).

The queries are every row ``q`` of every ``W_C`` of the workload (counts ``y_q``, see
:class:`~dpgm.workload.Workload`) and its complement ``1 − q`` (count ``N − y_q``, with N
the number of records): DualQuery needs a query set closed under negation. In round
``t = 1 … T`` the query player's distribution is

    Q^t(q) ∝ exp(η·S_t(q)),   S_t(q) = Σ_{τ<t} (y_q − n̂·q(x^τ)),

so queries that the records so far under-represent gain weight; ``s`` queries are drawn
from ``Q^t`` and the data player returns ``x^t = argmax_x Σ_i q_i^t(x)``, found exactly by
max-product on a small Markov random field (no data access).

Privacy accounting (neighbours differ by adding or removing one record). The budget is
ρ-zCDP with ρ = cdp_rho(ε, δ), so spending it all is (ε, δ)-DP; ``delta`` defaults to
dpgm's one δ, 1e-9 (:mod:`dpgm.privacy.policy`).

1. The record count n̂: ``count_share·ρ``, one linear query (the all-ones row on the first
   attribute's marginal, L2 sensitivity 1) with Gaussian noise of std
   1/sqrt(2·count_share·ρ). n̂ is then public.
2. The query draws: ρ_rest = (1 − count_share)·ρ. A draw in round t is an exponential
   mechanism on the scores S_t. One record moves every y_q and N − y_q by at most 1, and
   the earlier records x^τ (outputs of earlier draws) and n̂ are public, so S_t has
   sensitivity Δ_t = t − 1. Sampling ∝ exp(η·S_t) = exp(ε_t·S_t / (2Δ_t)) with
   ε_t = 2η(t − 1); the exponential mechanism is ε_t²/8-zCDP (bounded range, Cesar &
   Rogers 2021). Round 1 (S_1 = 0) is uniform and uses no data. The s·(T − 1) draws
   compose to s·η²/2·Σ_{t=1}^{T} (t − 1)², and η is solved from it:

       η = sqrt(2·ρ_rest / (s·Σ_{t=1}^{T} (t − 1)²)),

   so the draws spend exactly ρ_rest (the paper's "four of (s, T, η, ε, δ) given, the
   fifth derived"). T is given, or chosen from the public n̂ (below), before the first
   draw. Each round's s draws are one :func:`~dpgm.privacy.exponential_mechanism` call
   (``size=s``: s independent draws) and one ledger entry of s times the cost of one.

The parts sum to ρ; the records, the model and everything else are post-processing
(the data player's random tie-breaking uses the choice generator, not the data).

Hyper-parameters. With answers as fractions of the records the learning rate is
ν = η·n̂. The defaults follow Private-PGM's own DualQuery experiments: s = 50 draws per
round and ν = 2, with T the largest number of rounds that keeps η·n̂ ≥ ν (at most
``max_rounds``); η is then solved for that T as above, so the budget is spent exactly.
On Adult (n ≈ 48,842) at ε = 1 this gives T = 102 with δ = 1e-9, and T = 161 with the
δ = 1e-3 of Private-PGM's experiments (ν ≈ 2.01). (Their
advanced-composition accounting allowed about 60 rounds; zCDP allows more.) A fixed T
instead would make ν scale with n̂ and ε: too small a ν leaves Q^t near uniform, too
large a ν makes every round chase a single query. Cost: the s·(T − 1) draws each
sample over all 2·|W| queries, and each evaluation of the PGM loss is T passes over them.

Estimators:

* ``"original"``: the records ``x¹ … x^T`` as a :class:`~dpgm.dataset.Dataset` of T
  records; their marginals scaled by n̂/T answer the workload.
* ``"pgm"``: Private-PGM (Algorithm 1 with line search) on the negative log-likelihood of
  the draws, :class:`DualQueryLoss`, a convex function of the workload cliques' marginals
  (Algorithm 5 in closed form), with the model's total fixed at n̂.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dpgm.dataset import Dataset
from dpgm.domain import Domain
from dpgm.errors import DpgmError, option
from dpgm.estimation.algorithms import DEFAULT_MAX_CELLS
from dpgm.estimation.losses import CustomLoss
from dpgm.inference.cliques import Clique
from dpgm.inference.junction_tree import TreeSizes
from dpgm.mechanisms.base import Mechanism, Progress
from dpgm.memory import MEASURED_CELL_BYTES, check_cells
from dpgm.models.markov_random_field import MarkovRandomField
from dpgm.privacy.budget import PrivacyBudget
from dpgm.privacy.exponential import exponential_mechanism
from dpgm.privacy.measure import measure_record_count
from dpgm.random import Randomness
from dpgm.validation import fraction, integer, number, optional, positive
from dpgm.workload import Workload


def _squares(rounds: int) -> float:
    """Σ_{t=1}^{T} (t − 1)²: the draws' privacy cost in units of s·η²/2."""
    return (rounds - 1) * rounds * (2 * rounds - 1) / 6.0


class QuerySet:
    """The workload's counting queries as one flat vector, followed by their complements.

    Query ``p < size`` is row ``p − offsets[k]`` (C order) of ``W_C`` for the clique ``k``
    holding it; query ``size + p`` is its complement ``1 − q_p``. Tables are in each
    workload clique's own attribute order.
    """

    def __init__(self, workload: Workload, domain: Domain):
        self.domain = domain
        self.workload = workload
        self.cliques: list[Clique] = list(workload.cliques)
        self.shapes = [domain.project(c).shape for c in self.cliques]
        sizes = [int(np.prod(s)) for s in self.shapes]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.slices = [slice(int(a), int(b)) for a, b in zip(self.offsets, self.offsets[1:])]
        self.size = int(self.offsets[-1])
        self.sizes = np.array(sizes, dtype=np.int64)
        #: per query, the index of its clique
        self.clique_of = np.repeat(np.arange(len(self.cliques)), sizes)
        self.columns = [domain.axes(c) for c in self.cliques]
        self.prefix = [[a in workload.numeric for a in c] for c in self.cliques]

    def __len__(self) -> int:
        """The number of candidates: the queries and their complements."""
        return 2 * self.size

    def answers(self, tables: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """(``W_C μ_C`` of every clique as one flat vector, each query's clique total)."""
        flat = np.concatenate(
            [self.workload.answer(c, t).ravel() for c, t in zip(self.cliques, tables)]
        )
        totals = np.array([float(np.sum(t)) for t in tables])
        return flat, totals[self.clique_of]

    def add_hits(self, hits: np.ndarray, record: np.ndarray, weight: float = 1.0) -> None:
        """Add ``weight`` to ``hits`` (flat, one entry per query) where ``q(record) = 1``.

        A record satisfies prefix query ``z`` of an attribute when its value is ``≤ z``,
        so its queries in a clique form a box: one index per categorical attribute, a
        tail of indices per numeric one.
        """
        for s, shape, cols, prefix in zip(self.slices, self.shapes, self.columns, self.prefix):
            box = tuple(
                slice(int(record[c]), None) if p else int(record[c]) for c, p in zip(cols, prefix)
            )
            hits[s].reshape(shape)[box] += weight

    def hits(self, records: np.ndarray) -> np.ndarray:
        """``Σ_τ q(x^τ)`` over ``records`` (rows), one entry per query (not complement)."""
        found = np.zeros(self.size)
        for record in np.atleast_2d(records):
            self.add_hits(found, record)
        return found

    def locate(self, p: int) -> tuple[int, tuple[int, ...], bool]:
        """(clique index, row index of ``W_C``, whether it is the complement) of query ``p``."""
        p = int(p)
        if not 0 <= p < 2 * self.size:
            raise DpgmError(f"query index {p} outside 0..{2 * self.size - 1}")
        negated = p >= self.size
        p -= self.size if negated else 0
        k = int(np.searchsorted(self.offsets, p, side="right")) - 1
        index = np.unravel_index(p - self.offsets[k], self.shapes[k])
        return k, tuple(int(i) for i in index), negated

    def rows(self, p: int) -> tuple[Clique, list[np.ndarray], bool]:
        """Query ``p`` as its clique, one 0/1 vector per attribute (a product), and negation."""
        k, index, negated = self.locate(p)
        clique = self.cliques[k]
        rows = [
            self.workload.factor(a, self.domain[a])[i].astype(bool) for a, i in zip(clique, index)
        ]
        return clique, rows, negated

    def table(self, p: int) -> tuple[Clique, np.ndarray]:
        """Query ``p`` as a 0/1 table over its clique's cells."""
        clique, rows, negated = self.rows(p)
        table = np.ones(())
        for row in rows:
            table = np.multiply.outer(table, row.astype(np.float64))
        return clique, 1.0 - table if negated else table

    def pullback(self, grad_answers: np.ndarray, grad_totals: np.ndarray) -> list[np.ndarray]:
        """Gradient w.r.t. each ``μ_C`` of a function of the answers and clique totals.

        ``W_Cᵀ g``: a prefix attribute's rows are lower-triangular, so its transpose sums
        the gradient from each value up: a reversed cumulative sum along its axis.
        """
        grads = []
        for k, (s, shape, prefix) in enumerate(zip(self.slices, self.shapes, self.prefix)):
            g = grad_answers[s].reshape(shape)
            for axis, p in enumerate(prefix):
                if p:
                    g = np.flip(np.cumsum(np.flip(g, axis), axis=axis), axis)
            grads.append(g + grad_totals[k])
        return grads


def dualquery_scores(
    answers: np.ndarray, totals: np.ndarray, hits: np.ndarray, done: int, n_hat: float
) -> np.ndarray:
    """``S_t`` of every query and complement after ``done = t − 1`` rounds (length 2·size).

    ``S_t(q) = done·y_q − n̂·hits_q`` with ``hits_q = Σ_{τ<t} q(x^τ)``; for ``1 − q``
    the count is ``totals − y_q`` and the hits ``done − hits_q``.
    """
    positive = done * answers - n_hat * hits
    negative = done * (totals - answers) - n_hat * (done - hits)
    return np.concatenate([positive, negative])


def draw_queries(
    scores: np.ndarray,
    done: int,
    eta: float,
    samples: int,
    rng: np.random.Generator | None,
    budget: PrivacyBudget | None = None,
    uniform: np.random.Generator | None = None,
) -> np.ndarray:
    """``samples`` independent draws from ``Q^t ∝ exp(η·scores)`` (round ``t = done + 1``).

    Each draw is an exponential mechanism with ε_t = 2η·done and sensitivity ``done``,
    charged to ``budget`` and drawn with ``rng`` (None: OpenDP's exact sampler); in
    round 1 (``done = 0``) the law is uniform and free, drawn with ``uniform`` (default
    ``rng``).
    """
    if done == 0:
        draw = uniform if uniform is not None else np.random.default_rng(rng)
        return draw.integers(0, len(scores), size=samples)
    epsilon = 2.0 * eta * done
    label = f"round {done + 1}: draw query"
    picks = exponential_mechanism(
        scores, epsilon, float(done), rng, budget, label=label, size=samples
    )
    return np.asarray(picks, dtype=np.int64)


def best_record(queries: QuerySet, picks: Sequence[int], rng: np.random.Generator) -> np.ndarray:
    """A record satisfying the most of the queries ``picks`` (the data player's move).

    Exact: max-product on a Markov random field whose log-potentials are the queries' 0/1
    tables. Each attribute's values are first merged into classes that no picked query
    tells apart (at most 2k + 1 classes for k queries on it), which keeps the field tiny
    whatever the domain. Ties are broken at random (from ``rng``): a small random
    potential (summing to < 1/2, so never outweighing one more satisfied query) picks
    among optimal classes, and a value is drawn uniformly within the chosen class and for
    attributes no query mentions. Uses no data.
    """
    domain = queries.domain
    picked = [queries.rows(p) for p in picks]
    used = [a for a in domain.attrs if any(a in clique for clique, _, _ in picked)]
    # per attribute: the class of each value, and each class's 0/1 answer to each picked
    # query that mentions the attribute (row j: the j-th such query)
    classes: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for a in used:
        stack = np.array(
            [rows[clique.index(a)] for clique, rows, _ in picked if a in clique], dtype=np.int8
        )
        # one class per distinct column: values that every picked query treats alike
        unique, inverse = np.unique(stack.T, axis=0, return_inverse=True)
        classes[a] = (unique.T.astype(np.float64), np.asarray(inverse).ravel())
    small = Domain(used, [classes[a][0].shape[1] for a in used])
    seen = dict.fromkeys(used, 0)
    potentials: dict[Clique, np.ndarray] = {}
    for clique, _, negated in picked:
        table = np.ones(())
        for a in clique:
            table = np.multiply.outer(table, classes[a][0][seen[a]])
            seen[a] += 1
        potentials[clique] = potentials.get(clique, 0.0) + (1.0 - table if negated else table)
    jitter = 0.5 / max(len(potentials), 1)
    for key in potentials:
        potentials[key] = potentials[key] + jitter * rng.random(potentials[key].shape)
    best = MarkovRandomField(small, potentials).map() if used else {}
    record = np.empty(len(domain), dtype=np.int64)
    for j, a in enumerate(domain.attrs):
        if a in best:
            members = np.flatnonzero(classes[a][1] == best[a])
            record[j] = members[rng.integers(len(members))]
        else:
            record[j] = rng.integers(domain[a])
    return record


class DualQueryLoss:
    """Negative log-likelihood of DualQuery's draws given the workload cliques' marginals.

    With ``y(μ) = W_C μ_C`` and each complement's count ``Σμ_C − y``, the round scores
    ``S_t(μ)`` are affine in μ and

        L(μ) = Σ_t [ s·logsumexp_q η·S_t(q) − η·Σ_i S_t(q_i^t) ],

    which is −Σ_t Σ_i log Q^t(q_i^t) (Algorithm 5) and convex. ``∂L/∂S_t(q) =
    η(s·Q^t(q) − c_t(q))`` with ``c_t(q)`` the draws of q in round t; ``S_t`` moves by
    ``t − 1`` per unit of ``y_q``. Call it with the tables in the workload's clique order;
    :meth:`custom_loss` wraps it for :func:`~dpgm.estimation.estimate`.
    """

    def __init__(
        self,
        queries: QuerySet,
        records: np.ndarray,
        draws: np.ndarray,
        eta: float,
        n_hat: float,
    ):
        self.queries = queries
        self.records = np.asarray(records, dtype=np.int64)
        self.draws = np.asarray(draws, dtype=np.int64)
        if self.draws.ndim != 2 or self.draws.shape[0] != self.records.shape[0]:
            raise DpgmError("draws must be one row of query indices per record")
        self.eta = float(eta)
        self.n_hat = float(n_hat)
        rounds, samples = self.draws.shape
        self.samples = samples
        # η(t − 1) for t = 1 … T: how much η·S_t moves per unit of y
        self.slopes = self.eta * np.arange(rounds, dtype=np.float64)
        # Σ_t η(t − 1)·c_t(q): the draws' part of the gradient w.r.t. the scores
        self.drawn = np.bincount(
            self.draws.ravel(),
            weights=np.repeat(self.slopes, samples),
            minlength=len(queries),
        )
        #: Lipschitz constant of ∇L w.r.t. the ℓ1 norm of the record counts: adding a
        #: record moves every S_t(q) by (t − 1)·(0 or 1), and a softmax's covariance of
        #: 0/1 values is at most 1/4
        self.lipschitz = samples * float(np.sum(self.slopes**2)) / 4.0

    def __call__(self, tables: Sequence[np.ndarray]) -> tuple[float, list[np.ndarray]]:
        """Value and gradients (one table per workload clique) at the count ``tables``."""
        q = self.queries
        size, starts, slices, s = q.size, q.offsets[:-1], q.slices, self.samples
        answers, totals = q.answers(tables)
        # A query and its complement have scores c ± d with c = (t − 1)(Σμ_C − n̂)/2, one
        # value per clique: one exponential per pair gives both weights (see below).
        half_gap = 0.5 * (totals[starts] - self.n_hat)
        centred = answers - np.repeat(half_gap, q.sizes)
        scaled_hits = np.zeros(size)  # η·n̂·Σ_{τ<t} q(x^τ)
        step_hits = self.eta * self.n_hat
        d, big, small = np.empty(size), np.empty(size), np.empty(size)
        grad_y = np.zeros(size)
        grad_totals = np.zeros(len(q.cliques))
        value = 0.0
        for t, slope in enumerate(self.slopes):
            if t == 0:
                value += s * math.log(len(q))  # Q¹ is uniform, whatever μ
                q.add_hits(scaled_hits, self.records[t], step_hits)
                continue
            c = slope * half_gap
            np.multiply(centred, slope, out=d)
            d -= scaled_hits  # η·S_t(q) = c + d, η·S_t(1 − q) = c − d
            picks = self.draws[t]
            index = picks % size
            sign = np.where(picks < size, 1.0, -1.0)
            chosen = float(np.sum(c[q.clique_of[index]] + sign * d[index]))
            np.abs(d, out=big)
            top = float(np.max(np.maximum.reduceat(big, starts) + c))
            shift = c - top
            for k, part in enumerate(slices):
                big[part] += shift[k]
            np.exp(big, out=big)  # exp(c + |d| − top), the larger weight of each pair
            # the smaller, exp(c − |d| − top) = exp(2(c − top)) / exp(c + |d| − top); where
            # the larger is below 1e-300 (next to the largest term, 1) both are negligible
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                np.divide(1.0, big, out=small)
                factor = np.exp(2.0 * shift)
                for k, part in enumerate(slices):
                    small[part] *= factor[k]
            np.putmask(small, big < 1e-300, 0.0)
            norm = float(big.sum()) + float(small.sum())
            value += s * (top + math.log(norm)) - chosen
            weight = slope * s / norm
            # ∂L/∂y_q gets η(t − 1)·s·(Q^t(q) − Q^t(1 − q)), the clique total the
            # complements' share η(t − 1)·s·Σ_C Q^t(1 − q)
            pair = np.add.reduceat(big, starts) + np.add.reduceat(small, starts)
            np.subtract(big, small, out=big)
            np.copysign(big, d, out=big)  # Q^t(q) − Q^t(1 − q), unnormalised
            grad_totals += 0.5 * weight * (pair - np.add.reduceat(big, starts))
            big *= weight
            grad_y += big
            q.add_hits(scaled_hits, self.records[t], step_hits)
        # the draws' part, −Σ_t η(t − 1)·c_t, with the same split
        grad_y -= self.drawn[:size] - self.drawn[size:]
        grad_totals -= np.add.reduceat(self.drawn[size:], starts)
        return value, q.pullback(grad_y, grad_totals)

    def custom_loss(self) -> CustomLoss:
        """This loss as a :class:`~dpgm.estimation.CustomLoss` on the workload cliques."""
        return CustomLoss(self.queries.domain, self.queries.cliques, self, self.lipschitz)


class DualQuery(Mechanism):
    """The DualQuery mechanism; ``fit`` returns synthetic records or a model.

    ``samples`` (s) queries are drawn in each of ``rounds`` (T) rounds and η follows from
    the budget (module docstring). With ``rounds=None`` T is the largest number of rounds
    (at most ``max_rounds``) whose η is still at least ``nu/n̂`` — the learning rate ``nu``
    on answers as fractions of the records, as in Private-PGM's DualQuery experiments
    (s = 50, ν = 2) — and η is then solved for that T. ``count_share`` of ρ measures the
    record count. ``"pgm"`` runs ``iters`` iterations of Algorithm 1 on the draws'
    likelihood, with a junction tree of at most ``max_cells`` cells. After ``fit``:
    ``records`` (the synthetic data), ``draws`` (T × s query indices of
    :class:`QuerySet`), ``eta``, ``rounds_used`` (T), ``total`` (n̂) and ``loss``
    (:class:`DualQueryLoss`).
    """

    privacy = "zcdp"
    plans_ranges = True  # plans for the workload's prefix ranges
    estimators = ("pgm", "original")
    releases_records = ("original",)

    def __init__(
        self,
        epsilon: float | None = None,
        delta: float | None = None,
        *,
        rho: float | None = None,
        estimator: str = "pgm",
        samples: int = 50,
        rounds: int | None = None,
        nu: float = 2.0,
        max_rounds: int = 1000,
        count_share: float = 0.02,
        iters: int = 1000,
        max_cells: float = DEFAULT_MAX_CELLS,
        max_memory: float | None = None,
        progress: Progress | None = None,
    ):
        super().__init__(
            epsilon, delta, rho=rho, estimator=estimator, max_memory=max_memory,
            progress=progress
        )
        self.samples = integer("samples", samples, least=1)
        self.rounds = optional(integer, "rounds", rounds, least=2)
        self.nu = positive("nu", nu)
        self.max_rounds = integer("max_rounds", max_rounds, least=2)
        self.count_share = fraction("count_share", count_share)
        self.iters = integer("iters", iters, least=1)
        self.max_cells = number("max_cells", max_cells, low=1)

    def _reset(self) -> None:
        super()._reset()
        self.eta: float | None = None
        self.rounds_used: int | None = None
        self.total: float | None = None
        self.records: Dataset | None = None
        self.draws: np.ndarray | None = None
        self.loss: DualQueryLoss | None = None

    def plan(self, domain: Domain, workload: Workload) -> None:
        """The queries' vectors fit in memory; for ``"pgm"`` the model fits its cap."""
        super().plan(domain, workload)
        # answers, hits, both halves of the scores and their exponentials live at once
        self.check_tables(domain, workload.cliques, "the workload's queries")
        queries = sum(domain.size(c) for c in workload.cliques)
        self.check_memory(
            f"DualQuery's scores over {2 * queries:,} queries", 2 * MEASURED_CELL_BYTES * queries
        )
        if self.estimator == "pgm":
            # the model's size depends on the public domain and workload only
            check_cells(
                "the workload's junction tree",
                TreeSizes(domain).cells(workload.cliques),
                self.max_cells,
                alternative=f"use {option('estimator', 'original')} or a smaller workload",
            )

    @staticmethod
    def learning_rate(rho: float, samples: int, rounds: int) -> float:
        """η that makes ``samples`` draws in each of ``rounds`` rounds spend ``rho``."""
        return math.sqrt(2.0 * rho / (samples * _squares(rounds)))

    @staticmethod
    def derived_rounds(rho: float, samples: int, eta: float, max_rounds: int) -> int:
        """The most rounds (2 … ``max_rounds``) whose draws at rate ``eta`` fit in ``rho``."""
        room = 2.0 * rho / (samples * eta**2)  # Σ_{t=1}^{T} (t − 1)² may not exceed this
        if _squares(max_rounds) <= room:
            return max_rounds
        rounds = max(2, min(max_rounds, int((3.0 * room) ** (1.0 / 3.0)) + 1))
        while rounds > 2 and _squares(rounds) > room:
            rounds -= 1
        while rounds < max_rounds and _squares(rounds + 1) <= room:
            rounds += 1
        return rounds

    def _fit(self, data: Dataset, workload: Workload, randomness: Randomness):
        """Spend ``epsilon``/``delta`` on ``data`` answering ``workload`` (default: 2-way)."""
        budget = self.budget
        domain = data.domain
        count_rho = self.count_share * budget.total
        draws_rho = budget.total - count_rho

        count = measure_record_count(data, budget, randomness.noise, rho=count_rho)
        self.measurements = [count]
        self.total = n_hat = max(1.0, float(count.values[0]))
        self._say(f"measured the record count: {n_hat:.1f} (rho={count_rho:.4g})")
        # T from the public n̂ (or given), then η so that the draws spend exactly draws_rho
        rounds = self.rounds
        if rounds is None:
            rounds = self.derived_rounds(draws_rho, self.samples, self.nu / n_hat, self.max_rounds)
        self.rounds_used = rounds
        self.eta = eta = self.learning_rate(draws_rho, self.samples, rounds)

        queries = QuerySet(workload, domain)
        answers, totals = queries.answers(data.marginals(queries.cliques))
        hits = np.zeros(queries.size)
        records = np.empty((rounds, len(domain)), dtype=np.int64)
        draws = np.empty((rounds, self.samples), dtype=np.int64)
        self._say(
            f"{rounds} rounds of {self.samples} draws among {len(queries):,} queries "
            f"(eta={eta:.4g}, i.e. {eta * n_hat:.3g} per fraction of the records; "
            f"rho={draws_rho:.4g})"
        )
        for t in range(rounds):
            scores = dualquery_scores(answers, totals, hits, t, n_hat)
            draws[t] = draw_queries(
                scores, t, eta, self.samples, randomness.selection, budget, randomness.other
            )
            records[t] = best_record(queries, draws[t], randomness.other)
            queries.add_hits(hits, records[t])
            self._say(
                f"round {t + 1}/{rounds}: record satisfies "
                f"{self._satisfied(queries, draws[t], records[t])}/{self.samples} draws"
            )
        self.records = Dataset(records, domain)
        self.draws = draws
        self.loss = DualQueryLoss(queries, records, draws, eta, n_hat)

        if self.estimator == "original":
            return self.records
        model = self.estimate(
            domain,
            [],
            total=n_hat,
            method="mirror_descent",
            loss=self.loss.custom_loss(),
            iters=self.iters,
            callback=self._iteration_reporter(self.iters, "estimation: negative log-likelihood"),
            max_cells=int(self.max_cells),
        )
        self._say("estimated the model")
        return model

    @staticmethod
    def _satisfied(queries: QuerySet, picks: np.ndarray, record: np.ndarray) -> int:
        found = 0
        for p in picks:
            clique, rows, negated = queries.rows(p)
            cols = queries.domain.axes(clique)
            inside = all(row[record[c]] for row, c in zip(rows, cols))
            found += int(inside != negated)
        return found
