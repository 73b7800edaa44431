"""AIM (McKenna, Mullins, Sheldon & Miklau 2022): adaptive, iterative, workload-aware.

AIM selects, round after round, the marginal of the workload's downward closure that the
current Private-PGM model answers worst (relative to the noise its measurement would
have), measures it with Gaussian noise, and re-estimates the model. When a measurement
barely moves the model, the noise is halved ("annealing"). AIM's own estimator is
Private-PGM, so ``estimator="original"`` and ``"pgm"`` are the same.

Privacy accounting (neighbours differ by adding or removing one record). The budget is
ρ-zCDP with ρ = cdp_rho(ε, δ); spends add up. With T = ``rounds`` (default 16·d) and
α = ``alpha`` (default 0.9), σ starts at sqrt(T/(2αρ)) and ε_select at sqrt(8(1−α)ρ/T):

1. every one-way marginal, Gaussian noise of std σ: d marginals of L2 sensitivity 1 each,
   ρ = d/(2σ²) = dαρ/T in all;
2. each round t (at most T rounds):
   a. selection by the exponential mechanism among the candidates C_t (decided from
      public facts only: the workload, the domain and the cliques measured so far) with
      score q_r = w_r·(‖M_r(D) − M_r(p̂)‖₁ − sqrt(2/π)·σ·n_r), where p̂ is the current
      model (a function of earlier private outputs) and n_r the cells of r. One record
      moves ‖M_r(D) − M_r(p̂)‖₁ by at most 1, so q_r by at most w_r: sensitivity
      Δ = max_{r ∈ C_t} w_r. P(r) ∝ exp(ε_select·q_r/(2Δ)) is ε_select²/8-zCDP;
   b. the chosen marginal with Gaussian noise of std σ (L2 sensitivity 1): 1/(2σ²);
   a round costs 1/(2σ²) + ε_select²/8, which is ρ/T until annealing; annealing halves
   σ and doubles ε_select, quadrupling the cost of later rounds;
3. the last round — when what remains, R, is less than two rounds' cost, or at round T —
   spends exactly R: ε_select = sqrt(8(1−α)R) (that is (1−α)R), then the measurement
   gets all that is left on the ledger (αR up to rounding, σ = sqrt(1/(2αR))).

The parts sum to ρ, so ``fit`` spends exactly the budget; selection scores, candidate
sets, annealing and estimation are post-processing of the noisy outputs (the scores'
use of the data is paid for by the exponential mechanism).

Candidates and sizes follow the paper and its reference code: the candidates are every
non-empty subset r of a workload clique, weighted by w_r = Σ_{s ∈ W} |r ∩ s|; the
default workload is every 2-way marginal of at most ``max_cells`` cells, weight 1 each
(a given workload is used as is, its cliques as marginals: AIM has no prefix queries).
A candidate is allowed in round t if it lies inside a clique of the current model or if
the junction tree of the model with r added needs at most (ρ_used/ρ)·``max_model_size``
MB (8 bytes per cell, 1 MB = 2²⁰ bytes), ρ_used counting round t's spend. The tree
checked is the one the next estimate builds (the current model's tree cliques plus r).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from dpgm.dataset import Dataset
from dpgm.domain import Domain
from dpgm.errors import ModelTooLargeError, ParameterError, option
from dpgm.estimation.algorithms import DEFAULT_MAX_CELLS
from dpgm.inference.cliques import Clique
from dpgm.inference.junction_tree import TreeSizes
from dpgm.mechanisms.base import Mechanism, Progress, WorkloadLike
from dpgm.memory import CELL_BYTES, cells
from dpgm.privacy.budget import PrivacyBudget
from dpgm.privacy.exponential import exponential_mechanism
from dpgm.privacy.measure import measure_marginals
from dpgm.random import Randomness
from dpgm.validation import fraction, integer, optional, positive
from dpgm.workload import Workload

MEGABYTE = 2.0**20
#: AIM's default model-size cap in MB (the paper's is 80: see the class docstring)
DEFAULT_MODEL_SIZE = 2.0
#: seconds per cell of the model and iteration of its estimation (mirror descent with its
#: line search), measured on the 2-core reference machine: the final 1000 iterations of a
#: 185,000-cell model took 12.5 s
CELL_ITERATION_SECONDS = 7e-8
BIAS = math.sqrt(2.0 / math.pi)  # E|N(0, σ²)| = sqrt(2/π)·σ: the L1 error per cell of noise alone


def downward_closure(domain: Domain, workload: Iterable[Iterable[str]]) -> dict[Clique, int]:
    """Every non-empty subset r of a workload clique (in domain order) with its weight.

    The weight is w_r = Σ_{s ∈ workload} |r ∩ s|: how much of the workload r informs.
    Candidates are listed by size, then in the order first met.
    """
    cliques = [domain.canonical(c) for c in workload]
    found: dict[Clique, None] = {}
    for clique in cliques:
        for k in range(1, len(clique) + 1):
            for sub in combinations(clique, k):
                found.setdefault(sub, None)
    # Σ_s |r ∩ s| = Σ_{a ∈ r} (the workload cliques holding a): linear in the candidates
    holding: dict[str, int] = {}
    for clique in cliques:
        for attr in set(clique):
            holding[attr] = holding.get(attr, 0) + 1
    ordered = sorted(found, key=len)
    return {r: sum(holding[a] for a in r) for r in ordered}


def scores(
    candidates: Mapping[Clique, float],
    truth: Mapping[Clique, np.ndarray],
    estimates: Mapping[Clique, np.ndarray],
    sigma: float,
) -> tuple[np.ndarray, float]:
    """AIM's quality scores q_r = w_r·(‖M_r(D) − M_r(p̂)‖₁ − sqrt(2/π)·σ·n_r), and Δ = max w_r.

    ``truth`` and ``estimates`` hold each candidate's marginal on the data and the model.
    """
    values = np.array(
        [
            w * (float(np.abs(truth[r] - estimates[r]).sum()) - BIAS * sigma * truth[r].size)
            for r, w in candidates.items()
        ]
    )
    return values, float(max(abs(w) for w in candidates.values()))


def anneals(before: np.ndarray, after: np.ndarray, sigma: float) -> bool:
    """True when measuring a marginal moved the model's answer by no more than the noise.

    AIM's rule: ‖M_r(p̂_new) − M_r(p̂_old)‖₁ ≤ sqrt(2/π)·σ·n_r, the expected L1 norm of the
    measurement's noise; then σ is halved and ε_select doubled for the rounds after.
    """
    before = np.asarray(before, dtype=np.float64)
    return float(np.abs(np.asarray(after) - before).sum()) <= BIAS * sigma * before.size


@dataclass(frozen=True)
class AIMRound:
    """One round: the chosen clique, its σ and ε_select, how many candidates were allowed,
    the model's size after it (cells), and whether it triggered annealing."""

    clique: Clique
    sigma: float
    epsilon: float
    candidates: int
    model_cells: int
    annealed: bool


class AIM(Mechanism):
    """The AIM synthesizer; ``fit`` returns its Private-PGM model.

    ``rounds`` is T (default 16·d), the most rounds run and the budget's initial
    per-round share; ``alpha`` the share of a round spent on measurement. Models are kept
    within ``max_model_size`` MB (default 2: 262,144 cells; the paper's 80 MB let a model
    of 54,000 records and 10 attributes grow to 5.6 million cells and the run last 22
    minutes and 2.5 GB, for workload error no lower than the 2 MB cap's in 30 s:
    docs/mechanisms.md); candidates larger than that can never be chosen and are dropped
    from the start. The default workload is every 2-way marginal of at most
    ``max_cells`` cells. Each round re-estimates the model with ``round_iters``
    warm-started iterations, the final model with ``iters``. See the module docstring
    for the privacy accounting. ``estimator="original"`` is ``"pgm"`` (AIM's own).
    """

    refines = True

    privacy = "zcdp"
    estimators = ("pgm", "original")

    def __init__(
        self,
        epsilon: float | None = None,
        delta: float | None = None,
        *,
        rho: float | None = None,
        estimator: str = "pgm",
        rounds: int | None = None,
        alpha: float = 0.9,
        max_model_size: float = DEFAULT_MODEL_SIZE,
        max_cells: int = 10_000,
        round_iters: int = 100,
        iters: int = 1000,
        max_memory: float | None = None,
        progress: Progress | None = None,
    ):
        super().__init__(
            epsilon, delta, rho=rho, estimator=estimator, max_memory=max_memory,
            progress=progress
        )
        self.rounds = optional(integer, "rounds", rounds, least=1)
        self.alpha = fraction("alpha", alpha)
        self.max_model_size = positive("max_model_size", max_model_size)
        self.max_cells = integer("max_cells", max_cells, least=1)
        self.round_iters = integer("round_iters", round_iters, least=1)
        self.iters = integer("iters", iters, least=1)

    def _reset(self) -> None:
        super()._reset()
        #: one entry per round, in order
        self.history: list[AIMRound] = []
        #: seconds spent in each stage of the last ``fit`` (a diagnostic: timings grow
        #: with the number of records, so they are not for release)
        self.timings: dict[str, float] = {}

    @property
    def selected(self) -> list[Clique]:
        """The clique measured in each round."""
        return [h.clique for h in self.history]

    # -- public facts ---------------------------------------------------------------------
    def workload_for(self, domain: Domain, workload: WorkloadLike | None) -> Workload:
        """The given workload, or every 2-way marginal of at most ``max_cells`` cells."""
        full = super().workload_for(domain, workload)
        if workload is not None:
            return full
        small = [c for c in full.cliques if domain.size(c) <= self.max_cells]
        if not small:
            raise ParameterError(
                f"no {len(full.cliques[0])}-way marginal has at most "
                f"{option('max_cells', self.max_cells)} cells: raise it or give a workload"
            )
        return Workload(small)

    @property
    def model_cap_cells(self) -> float:
        """The model's size cap, ``max_model_size`` MB, in cells."""
        return self.max_model_size * MEGABYTE / CELL_BYTES

    def candidates(self, domain: Domain, workload: Workload) -> dict[Clique, int]:
        """The downward closure of the workload, without cliques over the model size."""
        closure = downward_closure(domain, workload.cliques)
        return {r: w for r, w in closure.items()
                if cells(domain.project(r).shape) <= self.model_cap_cells}

    def plan(self, domain: Domain, workload: Workload) -> None:
        """Rounds, candidates and the memory of their true marginals (public facts)."""
        super().plan(domain, workload)
        singles = self.one_way_cliques(domain)  # a refined attribute's at its fine level
        d = len(singles)
        rounds = 16 * d if self.rounds is None else self.rounds
        if rounds < d:
            raise ParameterError(
                f"rounds must be at least the number of attributes ({d}), got {rounds}: "
                "the one-way marginals alone would cost alpha*d/rounds of the budget"
            )
        # the model of the one-way marginals, AIM's first estimate, must fit its size cap:
        # otherwise no round could select anything (found after spending, before)
        one_way = sum(domain.shape)
        if one_way > self.model_cap_cells:
            raise ModelTooLargeError(
                f"the one-way marginals alone make a model of {one_way:,} cells, over "
                f"{option('max_model_size', self.max_model_size)} MB "
                f"({self.model_cap_cells:,.0f} cells): raise it")
        candidates = self.candidates(domain, workload)
        # the true and the model's marginal of every candidate are kept at once
        self.check_tables(domain, candidates, "the candidates' true and model marginals")

    def outlook(self, domain: Domain, rounds: int | None = None) -> str:
        """What the settings allow, said before the first round (public facts only): the
        most rounds, the largest model, and about how long estimating a model that large
        takes, at ``CELL_ITERATION_SECONDS`` a cell and iteration (measured on the 2-core
        reference machine; another machine scales it)."""
        rounds = 16 * len(self.one_way_cliques(domain)) if rounds is None else rounds
        largest = int(self.model_cap_cells)
        per_round = self.round_iters * largest * CELL_ITERATION_SECONDS
        final = self.iters * largest * CELL_ITERATION_SECONDS
        # the cap grows with the budget spent, so the rounds' models average half of it
        most = rounds * per_round / 2.0 + final
        return (f"AIM: at most {rounds} rounds; the model may grow to {largest:,} cells "
                f"({self.max_model_size:g} MB, {option('max_model_size')}); at that size "
                f"estimation takes about {_duration(per_round)} a round and "
                f"{_duration(final)} for the final model, {_duration(most)} in all at most")

    # -- the mechanism ----------------------------------------------------------------
    def _fit(self, data: Dataset, workload: Workload, randomness: Randomness):
        """Spend ``epsilon``/``delta`` on ``data`` for ``workload`` (default: small 2-way)."""
        budget = self.budget
        domain = data.domain
        clock = _Stopwatch()
        self.timings = clock.seconds
        candidates = self.candidates(domain, workload)
        dropped = len(downward_closure(domain, workload.cliques)) - len(candidates)
        singles = self.one_way_cliques(domain)  # a refined attribute's at its fine level
        d = len(singles)
        rounds = 16 * d if self.rounds is None else self.rounds
        rho, alpha = budget.total, self.alpha
        sigma = math.sqrt(rounds / (2.0 * alpha * rho))
        epsilon = math.sqrt(8.0 * (1.0 - alpha) * rho / rounds)
        max_cells = self.model_cap_cells
        sizes = TreeSizes(domain)

        self._say(self.outlook(domain, rounds))
        one_way = measure_marginals(
            data,
            singles,
            rho=d / (2.0 * sigma**2),
            budget=budget,
            rng=randomness.noise,
            label="one-way marginals",
        )
        self.measurements = list(one_way)
        # the true marginal of every candidate, computed once (the scores' data access,
        # charged by each round's exponential mechanism)
        with clock("true marginals"):
            truth = dict(zip(candidates, data.marginals(candidates), strict=True))
        fit_cells = max(int(max_cells), DEFAULT_MAX_CELLS)
        with clock("estimation (rounds)"):
            model = self.estimate(
                domain, self.measurements, iters=self.round_iters, max_cells=fit_cells
            )
        self._say(
            f"measured {d} one-way marginals (sigma={sigma:.4g}, rho={d / (2 * sigma**2):.4g}); "
            f"{len(candidates)} candidates, at most {rounds} rounds"
            + (f" ({dropped} candidates over the model size left out)" if dropped else "")
        )

        # a bar of rounds out of the public maximum (where bars are shown: dpgm.progress);
        # the last round, which may come early when the budget runs low, fills it
        round_bar = self._reporter.steps(rounds, "AIM rounds") if self._reporter.bars else None
        for t in range(1, rounds + 1):
            remaining = budget.remaining
            last = t == rounds or remaining < 2.0 * (0.5 / sigma**2 + epsilon**2 / 8.0)
            if last:
                sigma = math.sqrt(1.0 / (2.0 * alpha * remaining))
                epsilon = math.sqrt(8.0 * (1.0 - alpha) * remaining)
            used = rho - remaining + 0.5 / sigma**2 + epsilon**2 / 8.0
            cap = (min(used, rho) / rho) * max_cells
            with clock("model-size checks"):
                base = model.tree.cliques
                # a clique inside the model adds nothing to it: always allowed, as in the
                # reference (mbi's filter_candidates), so the one-way candidates always are
                allowed = {r: w for r, w in candidates.items()
                           if sizes.fits(base, r, cap) or any(set(r) <= set(c) for c in base)}
            with clock("model marginals"):
                estimates = dict(zip(allowed, model.marginals(allowed), strict=True))
            with clock("selection"):
                clique = self._select(
                    allowed,
                    truth,
                    estimates,
                    sigma,
                    epsilon,
                    budget,
                    randomness.selection,
                    f"round {t}: select",
                )
            (measured,) = measure_marginals(
                data,
                [clique],
                rho=budget.remaining if last else 0.5 / sigma**2,
                budget=budget,
                rng=randomness.noise,
                label=f"round {t}: measure",
            )
            self.measurements.append(measured)
            with clock("estimation (rounds)"):
                model = self.estimate(
                    domain,
                    self.measurements,
                    iters=self.round_iters,
                    warm_start=model,
                    max_cells=fit_cells,
                )
            with clock("model marginals"):
                (after,) = model.marginals([clique])
                annealed = anneals(estimates[clique], after, sigma)
            self.history.append(
                AIMRound(clique, sigma, epsilon, len(allowed), model.tree.size(), annealed)
            )
            self._say(
                f"round {t}: {clique} (of {len(allowed)} candidates), sigma={sigma:.4g}, "
                f"eps_select={epsilon:.4g}, rho used {rho - budget.remaining:.4g}/{rho:.4g}; "
                f"model {model.tree.size():,} cells"
                + ("; annealing" if annealed and not last else "")
            )
            if round_bar is not None:
                round_bar(rounds if last else t)
            if last:
                break
            if annealed:
                sigma, epsilon = sigma / 2.0, 2.0 * epsilon

        with clock("estimation (final)"):
            model = self.estimate(
                domain, self.measurements, iters=self.iters, warm_start=model, max_cells=fit_cells
            )
        self._say(
            f"estimated the final model: {len(model.tree.cliques)} cliques, "
            f"{model.tree.size():,} cells, total≈{model.total:.0f}"
        )
        return model

    def _select(
        self,
        candidates: Mapping[Clique, float],
        truth: Mapping[Clique, np.ndarray],
        estimates: Mapping[Clique, np.ndarray],
        sigma: float,
        epsilon: float,
        budget: PrivacyBudget,
        rng: np.random.Generator | None,
        label: str = "select",
    ) -> Clique:
        """The candidate the exponential mechanism picks on AIM's scores (:func:`scores`)."""
        keys = list(candidates)
        values, sensitivity = scores(candidates, truth, estimates, sigma)
        pick = exponential_mechanism(values, epsilon, sensitivity, rng, budget, label=label)
        return keys[pick]


def _duration(seconds: float) -> str:
    """A rough duration as a person reads it."""
    if seconds < 1.0:
        return "under a second"
    if seconds < 90.0:
        return f"{seconds:.0f} s"
    if seconds < 5400.0:
        return f"{seconds / 60.0:.0f} min"
    return f"{seconds / 3600.0:.1f} h"


class _Stopwatch:
    """Seconds spent per named stage: ``with clock("stage"): ...`` adds to ``seconds``."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, stage: str) -> Iterator[None]:
        begin = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[stage] = self.seconds.get(stage, 0.0) + time.perf_counter() - begin
