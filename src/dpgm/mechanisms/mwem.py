"""MWEM (Hardt, Ligett & McSherry 2012): select badly answered queries, measure, reweight.

Each of ``rounds`` rounds chooses one counting query of the workload (one row of one
``W_C``, Private-PGM Sec. 5.1) whose answer on the current estimate is furthest from the
truth, measures it with noise, and updates the estimate from all measurements so far.

Privacy accounting (neighbours differ by adding or removing one record). With
``delta=None`` the budget is pure ε-DP, otherwise ρ-zCDP with ρ = cdp_rho(ε, δ); write B
for the whole budget in its unit (ε or ρ) and s for ``total_share``.

1. The record count, unknown under add/remove DP: ``s·B``, one linear query (the all-ones
   row on the first attribute's marginal, sensitivity 1): Laplace noise of scale 1/(s·ε)
   in pure mode, Gaussian noise of std 1/sqrt(2·s·ρ) in zCDP mode. One scalar has the
   least noise; summing a noisy one-way marginal of n cells would have n times the variance.
2. Each round gets ``(1 − s)·B / rounds``, half each for
   a. selection: the exponential mechanism over every query of the workload with score
      ``|answer on the data − answer on the estimate|``. Sensitivity 1: a 0/1 counting query
      moves by at most 1 when a record is added or removed, and the estimate is a function
      of earlier private outputs only. Pure mode: ε_sel = (1 − s)·ε / (2·rounds); zCDP mode:
      ε_sel = sqrt(8·ρ_sel) with ρ_sel = (1 − s)·ρ / (2·rounds), as the exponential
      mechanism is ε²/8-zCDP;
   b. measurement of the chosen query (a 0/1 row, L1 and L2 sensitivity 1): Laplace of
      scale 1/ε_meas with ε_meas = (1 − s)·ε / (2·rounds), or Gaussian of std
      1/sqrt(2·ρ_meas) with ρ_meas = (1 − s)·ρ / (2·rounds).

The parts sum to B, so ``fit`` spends exactly the budget (sequential composition in ε, or
additive composition in ρ); everything else is post-processing of the noisy outputs.

Estimators (both start each run from the uniform table with the noisy count):

* ``"original"``: multiplicative weights (Private-PGM eq. (2)) on full tables, factored as
  Hardt et al. describe: one table per group of attributes that measured queries connect,
  uniform on attributes never measured. A measured query whose clique joins groups merges
  their tables (outer product), so overlapping queries soon need the full joint table;
  the size is computed before allocating and :class:`~dpgm.errors.ModelTooLargeError` is
  raised beyond ``max_memory``. After every round ``mw_passes`` passes over all
  measurements so far are made (Hardt et al. reuse past measurements). Returns a
  :class:`~dpgm.models.tables.TableModel` of the independent groups.
* ``"pgm"``: Private-PGM (Algorithm 2, L2 loss) on all measurements so far, warm-started
  from the previous round's model; to keep the model tractable a round considers only
  workload cliques whose addition keeps the junction tree within ``max_cells`` cells
  (decided from the domain and the cliques measured so far: no privacy cost).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dpgm.dataset import Dataset
from dpgm.domain import Domain
from dpgm.errors import ModelTooLargeError, option
from dpgm.estimation.algorithms import DEFAULT_MAX_CELLS
from dpgm.estimation.multiplicative_weights import multiplicative_weights
from dpgm.inference.cliques import Clique
from dpgm.inference.junction_tree import TreeSizes
from dpgm.measurement import Measurement
from dpgm.mechanisms.base import Mechanism, Progress
from dpgm.memory import check_memory, table_bytes
from dpgm.models.markov_random_field import MarkovRandomField
from dpgm.models.tables import TableModel
from dpgm.privacy.budget import PrivacyBudget
from dpgm.privacy.exponential import exponential_mechanism
from dpgm.privacy.measure import measure_linear, measure_record_count
from dpgm.random import Randomness
from dpgm.validation import fraction, integer, positive
from dpgm.workload import Workload


class MWEM(Mechanism):
    """The MWEM mechanism; ``fit`` returns a model (``"pgm"``) or factored tables (``"original"``).

    ``rounds`` selection-and-measurement rounds; ``total_share`` of the budget measures the
    record count. ``"original"``: ``mw_passes`` passes of multiplicative weights per round,
    tables within ``max_memory`` bytes. ``"pgm"``: ``round_iters`` iterations of
    Private-PGM per round and ``iters`` for the final model, junction trees of at most
    ``max_cells`` cells. Pure ε-DP without ``delta``, zCDP reported as (ε, δ) with one.
    See the module docstring for the privacy accounting.
    """

    privacy = "either"
    plans_ranges = True  # plans for the workload's prefix ranges
    estimators = ("pgm", "original")

    def __init__(
        self,
        epsilon: float,
        delta: float | None = None,
        *,
        estimator: str = "pgm",
        rounds: int = 10,
        total_share: float = 0.05,
        mw_passes: int = 10,
        round_iters: int = 100,
        iters: int = 1000,
        max_cells: float = 2e7,
        max_memory: float | None = None,
        progress: Progress | None = None,
    ):
        super().__init__(
            epsilon, delta, estimator=estimator, max_memory=max_memory, progress=progress
        )
        self.rounds = integer("rounds", rounds, least=1)
        self.total_share = fraction("total_share", total_share)
        self.mw_passes = integer("mw_passes", mw_passes, least=1)
        self.round_iters = integer("round_iters", round_iters, least=1)
        self.iters = integer("iters", iters, least=1)
        self.max_cells = positive("max_cells", max_cells)

    def _reset(self) -> None:
        super()._reset()
        #: the chosen queries, one per round: (clique, row index of W_C)
        self.selected: list[tuple[Clique, tuple[int, ...]]] = []
        #: the noisy record count
        self.total: float | None = None

    def plan(self, domain: Domain, workload: Workload) -> None:
        """The workload's true answers fit in memory, and one clique fits the model."""
        super().plan(domain, workload)
        self.check_tables(domain, workload.cliques, "the workload's true answers")
        if self.estimator == "pgm":
            if not _TreeGuard(domain, self.max_cells).allowed(workload.cliques, None):
                raise ModelTooLargeError(
                    "no workload clique fits a junction tree of "
                    f"{option('max_cells', self.max_cells)} cells"
                )
        else:
            smallest = min(workload.cliques, key=domain.size)
            _FactoredTables(domain, self.max_memory).plan(smallest)

    # -- the mechanism ----------------------------------------------------------------
    def _fit(self, data: Dataset, workload: Workload, randomness: Randomness):
        """Spend ``epsilon`` (and ``delta``) on ``data`` answering ``workload`` (default: 2-way)."""
        budget = self.budget
        domain = data.domain
        pure = budget.mode == "pure"

        # the budget split (module docstring); the last part is what is left, so the
        # parts add up to the total exactly
        count_part = self.total_share * budget.total
        select_part = (budget.total - count_part) / (2 * self.rounds)
        select_epsilon = select_part if pure else math.sqrt(8.0 * select_part)

        def spend(part: float) -> dict[str, float]:
            return {"epsilon": part} if pure else {"rho": part}

        guard = _TreeGuard(domain, self.max_cells) if self.estimator == "pgm" else None
        tables = _FactoredTables(domain, self.max_memory) if self.estimator == "original" else None

        count = measure_record_count(data, budget, randomness.noise, **spend(count_part))
        self.total = total = max(1.0, float(count.values[0]))
        self.measurements = [count]
        self._say(f"measured the record count: {total:.1f} ({budget.mode}, {count_part:.4g})")

        truth = {c: workload.answer(c, counts).ravel()  # one pass where the engine can
                 for c, counts in zip(workload.cliques, data.marginals(workload.cliques),
                                      strict=True)}
        current: MarkovRandomField | TableModel = TableModel(domain, {}, total, independent=True)
        model: MarkovRandomField | None = None
        for t in range(1, self.rounds + 1):
            cliques = workload.cliques if guard is None else guard.allowed(workload.cliques, model)
            if not cliques:
                raise ModelTooLargeError(
                    f"round {t}: no workload clique keeps the junction tree within "
                    f"{option('max_cells', self.max_cells)} cells"
                )
            clique, index = self._select(
                workload,
                domain,
                truth,
                current,
                cliques,
                select_epsilon,
                budget,
                randomness.selection,
                label=f"round {t}: select",
            )
            self.selected.append((clique, index))
            if tables is not None:
                try:
                    tables.plan(clique)
                except ModelTooLargeError as exc:
                    raise ModelTooLargeError(f"round {t}: {exc}") from None
            # the last round's measurement takes what is left, so rounding cannot overspend
            part = select_part if t < self.rounds else budget.remaining
            row = workload.query(clique, index, domain).reshape(1, -1)
            measured = measure_linear(
                data,
                clique,
                row,
                **spend(part),
                budget=budget,
                rng=randomness.noise,
                label=f"round {t}: measure",
            )
            self.measurements.append(measured)
            rounds_so_far = self.measurements[1:]
            if tables is not None:
                tables.admit(clique, total)
                tables.update(rounds_so_far, total, self.mw_passes)
                current = tables.model(total)
                detail = f"{len(tables.groups)} group(s), largest {tables.largest():,.0f} cells"
            else:
                last = t == self.rounds
                model = self.estimate(
                    domain,
                    rounds_so_far,
                    total=total,
                    method="accelerated",
                    iters=self.iters if last else self.round_iters,
                    warm_start=model,
                    max_cells=max(int(self.max_cells), DEFAULT_MAX_CELLS),
                )
                current = model
                detail = f"model of {model.tree.size():,} cells"
            self._say(
                f"round {t}/{self.rounds}: query {index} of {clique} "
                f"(from {sum(domain.size(c) for c in cliques):,} candidates); {detail}"
            )
        return current

    def _select(
        self,
        workload: Workload,
        domain: Domain,
        truth: dict[Clique, np.ndarray],
        current,
        cliques: Sequence[Clique],
        epsilon: float,
        budget: PrivacyBudget,
        rng: np.random.Generator | None,
        label: str = "select",
    ) -> tuple[Clique, tuple[int, ...]]:
        """One query of ``cliques``' sub-workloads by the exponential mechanism.

        Score: ``|true answer − answer on current|`` (sensitivity 1), candidates in the
        order of ``cliques``, each ``W_C``'s rows in C order.
        """
        scores = np.concatenate(
            [np.abs(truth[c] - workload.answer(c, current.marginal(c)).ravel()) for c in cliques]
        )
        pick = exponential_mechanism(scores, epsilon, 1.0, rng, budget, label=label)
        offsets = np.cumsum([0] + [domain.size(c) for c in cliques])
        k = int(np.searchsorted(offsets, pick, side="right")) - 1
        clique = cliques[k]
        index = np.unravel_index(pick - offsets[k], tuple(domain[a] for a in clique))
        return clique, tuple(int(i) for i in index)


class _TreeGuard:
    """Which cliques a Private-PGM model can add within ``max_cells`` (from public facts only).

    The model's next junction tree covers the previous model's tree cliques plus the new
    measurement (``estimate`` warm-starts on them), so the check is made on those. A clique
    found too big stays excluded: adding cliques never shrinks the tree that is needed.
    """

    def __init__(self, domain: Domain, max_cells: float):
        self.max_cells = max_cells
        self.sizes = TreeSizes(domain)
        self.too_big: set[Clique] = set()

    def allowed(self, cliques: Sequence[Clique], model: MarkovRandomField | None) -> list[Clique]:
        base = model.tree.cliques if model is not None else ()
        found = []
        for clique in cliques:
            if clique in self.too_big:
                continue
            if self.sizes.fits(base, clique, self.max_cells):
                found.append(clique)
            else:
                self.too_big.add(clique)
        return found


class _FactoredTables:
    """Factored MWEM's state: a full table per group of attributes (disjoint, domain order)."""

    def __init__(self, domain: Domain, max_memory: float):
        self.domain = domain
        self.max_memory = max_memory
        self.groups: list[Clique] = []
        self.tables: list[np.ndarray] = []

    def _order(self, attrs) -> Clique:
        return tuple(a for a in self.domain.attrs if a in set(attrs))

    def plan(self, clique: Sequence[str]) -> tuple[Clique, list[int]]:
        """The group that measuring ``clique`` makes, and the groups it merges.

        Raises :class:`ModelTooLargeError` when the tables would exceed ``max_memory``:
        all groups' tables plus the new one are alive while it is built.
        """
        touched = [i for i, g in enumerate(self.groups) if set(g) & set(clique)]
        merged = self._order(set(clique).union(*(self.groups[i] for i in touched)))
        cells = float(np.prod([float(self.domain[a]) for a in merged]))
        if len(touched) == 1 and set(merged) == set(self.groups[touched[0]]):
            return merged, touched  # already one group: nothing to allocate
        kept = sum(float(t.size) for t in self.tables)
        check_memory(
            f"MWEM's multiplicative weights with a table of {cells:.3g} cells over {merged}",
            table_bytes(cells + kept),
            self.max_memory,
            alternative=f"use {option('estimator', 'pgm')}",
        )
        return merged, touched

    def admit(self, clique: Sequence[str], total: float) -> None:
        """Merge the groups ``clique`` touches (and its new attributes) into one table."""
        merged, touched = self.plan(clique)
        if len(touched) == 1 and self.groups[touched[0]] == merged:
            return
        shape = self.domain.project(merged).shape
        # the product of the groups' distributions, uniform on new attributes; each group
        # keeps its relative axis order in ``merged``, so a reshape places it
        table = np.full(shape, total / float(np.prod([float(s) for s in shape])))
        for i in touched:
            group = self.groups[i]
            sizes = [float(self.domain[a]) for a in group]
            broadcast = tuple(self.domain[a] if a in group else 1 for a in merged)
            table *= (self.tables[i] * (float(np.prod(sizes)) / total)).reshape(broadcast)
        keep = [i for i in range(len(self.groups)) if i not in touched]
        self.groups = [self.groups[i] for i in keep] + [merged]
        self.tables = [self.tables[i] for i in keep] + [table]

    def update(self, measurements: Sequence[Measurement], total: float, passes: int) -> None:
        """``passes`` cyclic multiplicative-weights passes over each group's measurements."""
        for group, table in zip(self.groups, self.tables):
            mine = [m for m in measurements if set(m.clique) <= set(group)]
            if mine:
                multiplicative_weights(
                    self.domain.project(group), mine, total, passes, table=table, sequential=True
                )

    def largest(self) -> float:
        return max((float(t.size) for t in self.tables), default=0.0)

    def model(self, total: float) -> TableModel:
        return TableModel(self.domain, dict(zip(self.groups, self.tables)), total, True)
