"""AIM+RP: AIM chooses the marginals, ResidualPlanner measures them together.

AIM (:mod:`dpgm.mechanisms.aim`) measures each marginal it selects on its own, with the
noise of its round. Marginals share their lower-order parts — two selected pairs share
an attribute, every marginal shares the record count — so measuring them one at a time
spends budget on the same information again and again. AIM+RP spends a share of the
budget, ``selection_share``, on AIM (its selections and its measurements, all kept), then
the rest on one ResidualPlanner plan (:mod:`dpgm.residuals`) over the marginals AIM
selected and every one-way marginal: each residual of their downward closure measured
once, with the allocation of least total variance. Private-PGM then fits every
measurement of both steps, warm-started from AIM's model.

Where the whole workload fits one small model (its junction tree has at most
``one_shot_cells`` cells: a table of few, small columns), selection buys nothing that
measuring every workload marginal would not give: ``selection_share="auto"`` (the
default) then skips AIM and spends the whole budget on the plan over the workload, and
otherwise gives AIM :data:`SELECTION_SHARE`. The switch reads public facts only.

**Rare values** (``compress=True``, the default). Where the workload is too large for the
one-shot model and the schema orders some columns (numeric and datetime bins), the run
first spends :data:`RARE_SHARE` of ρ on those columns' one-way marginals and merges each
one's rare bins (:class:`~dpgm.models.compression.DomainCompression`, as MST and dpmm's
AIM do with every value): a run of neighbouring bins whose noisy counts are each below
:data:`RARE_SIGMAS` noise standard deviations, and whose sum is below as many of its own,
becomes one wider bin in its place, so that the column stays ordered; a missing value
keeps its own code. Every later step works on the merged domain, where each pair table
has fewer, fuller cells, and the model is read back on the data's domain, uniform within
each merged bin (records: each drawn among the bins its code stands for); the one-way
answers join the Private-PGM fit, or, on the records' route, are folded into the plan's
one-way residuals (:func:`~dpgm.estimation.combination.fold_one_ways`, generalised least
squares). A schema's documented ranges leave bins all but empty
(the suite's diamonds: 9 of carat's 16 bins hold fewer than 30 of 53,940 records), and
merging them is what gives dpmm's AIM its edge over the reference there. Categorical
values are never merged (their rare labels are not alike: on the suite's network samples
merging them cost up to 25%), nor anything where the one-shot model fits (every pair is
measured finely there, and the cosine basis already smooths sparse tails), where a
column is refined, or on a structural zero's attributes (docs/benchmarks.md, idea 40).
All of these are public facts.

**Denoising** (``denoise=True``, the default). The schema's ordered columns (numeric and
datetime bins) are measured in the cosine residual basis
(:func:`dpgm.residuals.ordered_basis`), which puts a smooth table's weight in its first
rows, and every residual of two or more attributes is then shrunk towards zero band by
band (positive-part James–Stein, :mod:`dpgm.estimation.shrinkage`) before estimation:
less squared error than the raw answers whatever the truth, and far less where tables are
smooth or attributes nearly independent. Without a schema no column is ordered and each
residual is one band. Where the plan measures every workload pair (no selection), a pair
need not be shrunk towards independence: the Chow–Liu forest of the shrunk pair tables
(the pairs of most mutual information that form a forest) implies a table for every pair
it joins, through the path between them, and each pair off the forest is shrunk instead
towards the residual of that implied table (:func:`dpgm.estimation.records.forest_pairs`):
where the forest explains a pair, its noise is taken out; where it does not, the answer
stands. A pair's slow bands on its ordered attributes (cosine frequencies below four,
:data:`FOREST_FREE_BANDS`) are the exception, shrunk towards zero as before: they hold
its trend, which is measured well enough to stand nearly whole, and pulling them towards
the forest takes out what the forest does not explain, the partial effect a regression
reads (on the suite's diamonds, colour's and clarity's price effects given carat fell to
0.6 of theirs; idea 42). The model's error bars are the plan's variances of the answers
before shrinkage.

**Weighting** (the one-shot route). No nonnegative table fits noisy pair answers exactly,
and with each answer weighted by its plan's precision the fit pays for the pairs' noise
out of the one-way marginals, which the plan measures far more precisely: on the wage
survey of the benchmark suite it puts 163 records on the four lowest levels of schooling,
where the data have 106 and the measured one-way marginal 98, and their leverage flattens
the return to education. Where the plan measures the whole workload, the final fit
therefore weights the record count and the one-way answers :data:`LOW_ORDER_WEIGHT` times
more (``estimate``'s ``weights``; the error bars keep the plan's variances): a choice made
on the suite's tables at ε = 0.3, 1 and 3 (docs/benchmarks.md, idea 26). On AIM's route,
whose one-way marginals AIM measures too, the same weights cost 14–18%; it keeps the
plan's.

**Records** (``estimator="records"``). Private-PGM cannot estimate a model of every pair
where their junction tree is large; the records estimator needs none. It takes the
one-shot plan over the workload (no selection, the whole budget; ``"auto"`` resolves to
0), reconstructs every workload table (and every pair inside a larger one) from the
denoised residuals, draws the noisy record count of records (at most
:data:`MAX_FITTED_RECORDS`, or what ``max_memory`` holds: a larger table is fitted as a
sample, standing for the count) from the Chow–Liu tree of the pair tables and moves them
until their counts follow the tables (:mod:`dpgm.estimation.records`), told the plan's
noise so that the fit goes on until it is within a share of it (idea 32): a
:class:`~dpgm.models.RecordsModel`. Post-processing of the same release. The default
workload is every pair; a larger marginal named in the workload — a regression's outcome
with two of its inputs, say — is measured and fitted as well, which carries an effect
that no pair holds (docs/benchmarks.md, idea 28).

**The route** (``estimator="auto"``, the default). The records beat AIM's selection where
every pair's table is measured well, and lose where the noise swamps the pair tables (the
budget is better spent on the few pairs AIM selects) or where the table's structure lives
in triples that no pair holds (docs/benchmarks.md, ideas 19–25). Where the records are
possible at all (a workload of pairs too large for the one-shot model, the share left
``"auto"``, no structural zeros, no refined column, and room in ``max_memory``: public
facts), ``"auto"`` spends :data:`COUNT_SHARE` of ρ on the record count, then reads from it
:meth:`AIMResidual.records_signal`, the records per pair cell over the plan's noise
variance per cell, and takes the records where it is at least :data:`RECORDS_SIGNAL`, else
AIM and the plan, each on the rest of the budget. Elsewhere it is ``"pgm"`` and measures no
count. The statistic and its threshold were chosen on the benchmark suite's tables at
ε = 0.3, 1, 2 and 3 (ideas 25 and 30); they route the network samples the wrong way where
their triples matter (Child at ε = 1, Alarm at ε = 2 and 3) and GSS at ε = 1: see
docs/benchmarks.md.

**Privacy accounting** (ρ-zCDP with ρ = cdp_rho(ε, δ), reported as (ε, δ); neighbours
differ by adding or removing one record). Where rare values are merged, the k ordered
columns' one-way marginals are Gaussian measurements of L2 sensitivity 1 each (a record
is one cell of each), with σ = sqrt(k/(2·RARE_SHARE·ρ)): RARE_SHARE·ρ in all; the merged
domain, and every choice made from it (the route's below included), is post-processing
of those answers, and ρ below is what is left. Where ``"auto"`` measures the record
count, that count is a Gaussian measurement of sensitivity 1 costing :data:`COUNT_SHARE`·ρ,
and ρ below is the rest; the route is chosen from the released count and public facts
(post-processing). AIM spends ``selection_share``·ρ, accounted as
AIM's docstring says (its own budget, charged entry by entry to this run's). The plan is
chosen from AIM's outputs only (the cliques it selected: post-processing of released
values) and the public domain and workload; each residual of the plan is a Gaussian
measurement of ``p_B/(2u_B)``-zCDP (:mod:`dpgm.mechanisms.residual_planner`; the cosine
basis has Helmert's sensitivity, and is chosen from the public schema), summing to the
remaining (1 − ``selection_share``)·ρ. Sequential composition: ρ in all. Shrinkage and
estimation are post-processing.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from dpgm.dataset import Dataset
from dpgm.domain import Domain
from dpgm.errors import ParameterError
from dpgm.estimation.algorithms import DEFAULT_MAX_CELLS
from dpgm.estimation.combination import fold_one_ways
from dpgm.estimation.records import fit_records, forest_pairs, most_sweeps, tree_records
from dpgm.estimation.shrinkage import entry_bands, shrink_residuals
from dpgm.inference.junction_tree import TreeSizes
from dpgm.mechanisms.aim import AIM, DEFAULT_MODEL_SIZE
from dpgm.mechanisms.base import Mechanism, Progress, WorkloadLike
from dpgm.mechanisms.residual_planner import check_bases, measure_residuals
from dpgm.memory import CELL_BYTES
from dpgm.models.compression import DomainCompression
from dpgm.models.records import RecordsModel
from dpgm.privacy.measure import measure_marginals, measure_record_count
from dpgm.random import Randomness
from dpgm.residuals import (
    LOSSES,
    frequency_bands,
    ordered_basis,
    plan_residuals,
    reconstruct,
    residual_subset,
)
from dpgm.validation import flag, integer, number, one_of
from dpgm.workload import Workload

#: AIM's share of the budget where the workload does not fit one small model
SELECTION_SHARE = 0.9
#: the schema's column kinds whose values are ordered (their bins follow the number line)
ORDERED_KINDS = ("numeric", "datetime")
#: the largest junction tree of the workload measured without selection (``"auto"``)
ONE_SHOT_CELLS = 200_000
#: the most records the records estimator fits: a larger table is fitted as a sample
MAX_FITTED_RECORDS = 1_000_000
#: the copies of the records alive while they are fitted (theirs, the sampler's, a batch)
FITTED_COPIES = 4
#: the share of the budget ``estimator="auto"`` spends on the record count that chooses
#: its route
COUNT_SHARE = 0.01
#: the ledger's label of that count
COUNT_LABEL = "record count (the route)"
#: the records route's threshold on :meth:`AIMResidual.records_signal`
RECORDS_SIGNAL = 0.00125
#: the factor on the one-shot plan's record count and one-way answers in the final fit
LOW_ORDER_WEIGHT = 10.0
#: the share of the budget spent on the one-way marginals that decide which rare values
#: are merged (``compress=True``)
RARE_SHARE = 0.05
#: a value is rare where its noisy count is below this many noise standard deviations
RARE_SIGMAS = 1.0
#: the ledger's label of those one-way marginals
RARE_LABEL = "one-way marginals (rare values)"
#: the highest frequency band (band b: cosine frequencies in [2^b, 2^(b+1))) that the
#: Chow–Liu forest leaves alone: an entry of a pair off the forest in this band or a lower
#: one on each of the pair's ordered attributes (frequencies 1–3) is shrunk towards zero,
#: not pulled. A pair's trend lives there, and the part of it that the forest does not
#: explain is a partial effect (docs/benchmarks.md, idea 42). A missing value's row of
#: its own is always pulled; an ordered attribute of four values or fewer (a nullable one:
#: five, or two, whose one row is value against missing) has every other row in bands
#: 0–1, so its pairs with unordered attributes are pulled on that row at most.
FOREST_FREE_BANDS = 1
#: the fewest records the records estimator fits: a ``max_memory`` that holds fewer is
#: refused before the data are read
MIN_FITTED_RECORDS = 1_000


class AIMResidual(Mechanism):
    """AIM's selection, then one ResidualPlanner measurement of what it selected (see the
    module docstring). ``estimator``: ``"auto"`` (records or Private-PGM, as the noisy
    record count says), ``"pgm"`` or ``"records"``; ``selection_share``: AIM's part of the
    budget; ``loss``: the plan's (``"sum"`` or ``"max"`` of the cell variances, or
    ``"error"``, see :func:`~dpgm.residuals.plan_residuals`);
    ``denoise``: ordered columns in the cosine basis and residuals shrunk before
    estimation; ``compress``: rare values merged first; the other options are AIM's.
    """

    privacy = "zcdp"
    estimators = ("auto", "pgm", "records")
    refines = True  # as AIM: a refined column's one-way at its fine level, pairs at its bins

    def __init__(
        self,
        epsilon: float | None = None,
        delta: float | None = None,
        *,
        rho: float | None = None,
        estimator: str = "auto",
        selection_share: float | str = "auto",
        one_shot_cells: int = ONE_SHOT_CELLS,
        loss: str = "sum",
        denoise: bool = True,
        compress: bool = True,
        rounds: int | None = None,
        alpha: float = 0.9,
        max_model_size: float = DEFAULT_MODEL_SIZE,
        max_cells: int = 10_000,
        round_iters: int = 100,
        iters: int = 1000,
        max_memory: float | None = None,
        progress: Progress | None = None,
    ):
        super().__init__(epsilon, delta, rho=rho, estimator=estimator, max_memory=max_memory,
                         progress=progress)
        # 0: no selection (the plan over the workload); below 1: the plan needs some
        self.selection_share = (selection_share if selection_share == "auto" else number(
            "selection_share", selection_share, low=0.0, high=1.0, high_open=True))
        if estimator == "records" and self.selection_share not in ("auto", 0.0):
            raise ParameterError(
                "the records estimator fits the one-shot plan over every pair, without "
                f"selection: selection_share must be 0 or 'auto', got {selection_share!r}")
        self.one_shot_cells = integer("one_shot_cells", one_shot_cells, least=1)
        self.loss = one_of("loss", loss, LOSSES)
        self.denoise = flag("denoise", denoise)
        self.compress = flag("compress", compress)
        self.iters = integer("iters", iters, least=1)
        self._aim_options = dict(rounds=rounds, alpha=alpha, max_model_size=max_model_size,
                                 max_cells=max_cells, round_iters=round_iters, iters=iters)
        self._selector(1.0)  # AIM checks its own options here, before any data

    def _reset(self) -> None:
        super()._reset()
        #: the AIM run that selected the marginals, and the plan that measured them again
        self.selector: AIM | None = None
        self.residual_plan = None
        #: the estimator this run took ("pgm" or "records"; see ``estimator="auto"``)
        self.route: str | None = None
        #: the rare values merged (``compress``), or None
        self.compression: DomainCompression | None = None

    def _selector(self, rho: float) -> AIM:
        return AIM(rho=rho, delta=self.delta, max_memory=self.max_memory,
                   progress=self.progress, **self._aim_options)

    def workload_for(self, domain: Domain, workload: WorkloadLike | None) -> Workload:
        """AIM's: the given workload, or every 2-way marginal of at most ``max_cells``."""
        return self._selector(1.0).workload_for(domain, workload)

    def share(self, domain: Domain, workload: Workload) -> float:
        """AIM's share of the budget for this domain and workload (public facts only):
        ``selection_share``, or for ``"auto"`` none where the workload's junction tree
        has at most ``one_shot_cells`` cells, else :data:`SELECTION_SHARE`."""
        if self.selection_share != "auto":
            return float(self.selection_share)
        if self.estimator == "records":
            return 0.0
        return 0.0 if self.fits_one_shot(domain, workload) else SELECTION_SHARE

    def fits_one_shot(self, domain: Domain, workload: Workload) -> bool:
        """Whether the workload's junction tree has at most ``one_shot_cells`` cells (a
        public fact)."""
        return TreeSizes(domain).cells(workload.cliques) <= self.one_shot_cells

    def may_estimate_with_pgm(self) -> bool:
        """``"pgm"``, and ``"auto"`` (which takes Private-PGM wherever records cannot)."""
        return self.estimator in ("pgm", "auto")

    def records_possible(self, domain: Domain, workload: Workload) -> bool:
        """Whether ``estimator="auto"`` may take the records route here (public facts
        only): a workload whose junction tree is too large for the one-shot model,
        ``selection_share="auto"``, no structural zeros and no refined column, and room in
        ``max_memory`` for the workload's tables and :data:`MIN_FITTED_RECORDS` records."""
        if self.estimator != "auto" or self.selection_share != "auto":
            return False
        if self.zeros or self.refined is not None or self.share(domain, workload) == 0:
            return False
        return max(self.tables_bytes(domain, workload.cliques),
                   self._least_records_bytes(domain)) <= self.max_memory

    def records_signal(self, domain: Domain, workload: Workload, count: float,
                       rho: float) -> float:
        """How well the one-shot plan at ``rho`` would measure the workload's pair tables
        for ``count`` records: the records per pair cell (``count`` over the cells of
        every pair inside a workload marginal) over the mean of the cells' noise
        variances. Public but for ``count``."""
        return self._signal(domain, workload, count, self._one_shot_plan(domain, workload, rho))

    def _one_shot_plan(self, domain: Domain, workload: Workload, rho: float):
        """The plan over the workload without selection, at ``rho``."""
        return plan_residuals(domain, self._plan_cliques(domain, workload.cliques), rho,
                              self.loss)

    @staticmethod
    def _signal(domain: Domain, workload: Workload, count: float, plan) -> float:
        """:meth:`records_signal` read from the one-shot ``plan``."""
        pairs = _pairs_within(workload.cliques)
        if not pairs:
            return 0.0
        # over the variance, not the standard error: the records' gain over AIM's route
        # grows with rho faster than the standard error falls (idea 30)
        variance = sum(plan.variance(c) for c in pairs) / len(pairs)
        return count / sum(domain.size(c) for c in pairs) / variance

    def _plan_cliques(self, domain: Domain, chosen) -> list[tuple[str, ...]]:
        """The marginals the plan measures: the maximal ones of ``chosen``, and the one-way
        marginal of every attribute they leave out."""
        cliques = [c for c in dict.fromkeys(chosen)
                   if not any(set(c) < set(o) for o in chosen)]
        singles = self.one_way_cliques(domain)  # a refined attribute's: its bin and place
        return cliques + [s for s in singles if not any(set(s) <= set(c) for c in cliques)]

    def refinement(self, domain: Domain, refine):
        """AIM's refinement; none with the records estimator, which fits one resolution."""
        found = super().refinement(domain, refine)
        if found is not None and self.estimator == "records":
            raise ParameterError("the records estimator keeps every column at one resolution: "
                                 "pass refine={} (or use estimator='pgm')")
        return found

    def ordered_attributes(self, domain: Domain) -> dict[str, bool]:
        """The attributes whose values the schema orders (numeric and datetime bins, not
        refined), each with whether its last value is the missing one: public facts.
        Empty without a schema."""
        schema = self.schema
        refined = self.refined.factors if self.refined is not None else {}
        if schema is None:
            return {}
        return {a: c.nullable for a, c in schema.columns.items()
                if c.kind in ORDERED_KINDS and a in domain.attrs and a not in refined
                and c.size == domain[a]}

    def plan(self, domain: Domain, workload: Workload) -> None:
        """AIM's checks, or the one-shot plan's size (public facts); the plan after AIM
        follows its selection. Every route measures each attribute's residual (its
        one-way marginal at least)."""
        check_bases(self, domain, domain.attrs)
        if self.estimator == "records":
            self.check_tables(domain, workload.cliques, "the workload's marginals")
            self.check_memory(f"fitting at least {MIN_FITTED_RECORDS:,} records of "
                              f"{len(domain)} attributes", self._least_records_bytes(domain),
                              alternative="raise max_memory, or use estimator='pgm'")
        elif self.share(domain, workload) > 0:
            self._selector(1.0).plan(domain, workload)
        else:
            super().plan(domain, workload)
            self.check_tables(domain, workload.cliques, "the workload's marginals")

    def _fit(self, data: Dataset, workload: Workload, randomness: Randomness):
        budget = self.budget
        # AIM spends from its own budget, included in this run's afterwards: refuse here,
        # before AIM reads anything, where this run's ledger cannot take it all
        budget.require(budget.total, "AIM+RP")
        # the ordered attributes are read off the schema on the data's domain; merging
        # keeps their order (and their codes' kinds), so they stay ordered after it
        ordered = self.ordered_attributes(data.domain)
        available, rare = budget.total, []
        if self.merges_rare(data.domain, workload):
            self.compression, rare = self._merge_rare(data, ordered, RARE_SHARE * budget.total,
                                                      randomness)
            available -= RARE_SHARE * budget.total
            data = self.compression.apply(data)
        model = self._fit_merged(data, workload, randomness, available, rare,
                                 ordered if self.denoise else {})
        if self.compression is None:
            return model
        # a model of the merged values, read on the data's domain (post-processing)
        return self.compression.on_original(model, DEFAULT_MAX_CELLS, randomness.other)

    def merges_rare(self, domain: Domain, workload: Workload) -> bool:
        """Whether ``fit`` merges rare values (public facts only): ``compress``, an ordered
        column (only those are merged), no refined column, and a workload too large for
        the one-shot model (where it fits, every pair is measured finely enough that
        merging costs more than it saves)."""
        return (self.compress and self.refined is None
                and bool(self.ordered_attributes(domain))
                and not self.fits_one_shot(domain, workload))

    def _merge_rare(self, data: Dataset, ordered: dict[str, bool], rho: float,
                    randomness: Randomness) -> tuple[DomainCompression, list]:
        """Measure the one-way marginal of every ordered attribute with ``rho`` and merge
        each one's rare bins, run by run in their place
        (:class:`~dpgm.models.compression.DomainCompression`, as MST does). A categorical
        column's values stay apart: its rare labels are not alike (on the suite's network
        samples merging them cost up to 25%), a numeric column's neighbouring bins are.
        Returns the compression and the one-way answers on the merged domain."""
        domain = data.domain
        one_way = measure_marginals(data, [(a,) for a in ordered], rho=rho,
                                    budget=self.budget, rng=randomness.noise, label=RARE_LABEL)
        compression, restated = DomainCompression.from_one_way(
            domain, one_way, RARE_SIGMAS, keep={a for f in self.zeros for a in f.attrs},
            ordered=ordered, together=True)
        merged = sum(domain[a] - compression.compressed[a] for a in domain.attrs)
        self._say(f"merged {merged} rare values (rho={rho:.4g}); domain {domain.size():.3g} "
                  f"-> {compression.compressed.size():.3g} cells")
        return compression, restated

    def _fit_merged(self, data: Dataset, workload: Workload, randomness: Randomness,
                    available: float, rare: list, ordered: dict[str, bool]):
        """The mechanism on ``data`` (rare values merged where ``compress``) with
        ``available`` of the budget; ``rare``: the one-way answers that merged them."""
        budget, domain = self.budget, data.domain
        route, counted, one_shot = self.estimator, [], None
        if route == "auto":
            route = "pgm"
            if self.records_possible(domain, workload):
                spend = COUNT_SHARE * budget.total
                counted = [measure_record_count(data, budget, randomness.noise, rho=spend,
                                                label=COUNT_LABEL)]
                available -= spend
                one_shot = self._one_shot_plan(domain, workload, available)
                signal = self._signal(domain, workload, float(counted[0].values[0]), one_shot)
                route = "records" if signal >= RECORDS_SIGNAL else "pgm"
                self._say(f"the noisy record count gives {signal:.3g} records per pair cell "
                          f"over the noise variance: "
                          f"{'records' if route == 'records' else 'AIM'}")
        self.route = route
        share = 0.0 if route == "records" else self.share(domain, workload)
        warm = None
        if share > 0:
            selector = self._selector(share * available)
            own = selector.new_budget()
            # AIM's final model: the estimate below starts from it
            warm = selector.fit_within(data, workload, randomness, own, zeros=self.zeros,
                                       refined=self.refined)
            budget.include(own)
            self.selector = selector
            chosen = [m.clique for m in selector.measurements]
            self._say(f"AIM measured {len(chosen)} marginals with rho={own.total:.4g}")
        else:
            chosen = list(workload.cliques)
            self._say(f"the records: the workload's {len(chosen)} marginals measured without "
                      "selection" if route == "records" else
                      f"the workload's {len(chosen)} marginals fit one model of at most "
                      f"{self.one_shot_cells:,} cells: measured without selection")
        cliques = self._plan_cliques(domain, chosen)
        rest = (1.0 - share) * available  # this run's, whatever else the ledger holds
        # the records' plan is the one the route was read from: the same marginals and rho
        plan = (one_shot if route == "records" and one_shot is not None
                else plan_residuals(domain, cliques, rest, self.loss))
        self.residual_plan = plan
        self._say(f"planned {len(plan.subsets)} residuals over {len(cliques)} marginals "
                  f"(rho={rest:.4g})")
        bases = {a: ordered_basis(domain[a], missing) for a, missing in ordered.items()}
        raw = measure_residuals(data, plan, budget, randomness.noise, bases)
        if route == "records" and rare:
            # the rare values' one-way answers join the Private-PGM fit on the other routes;
            # here they are folded into the plan's one-way residuals (idea 41)
            raw = fold_one_ways(raw, {m.clique[0]: m for m in rare})
            self._say(f"folded the rare values' one-way answers of {len(rare)} columns "
                      "into the plan's")
        bands = {a: frequency_bands(domain[a], missing) for a, missing in ordered.items()}
        residuals = shrink_residuals(domain, raw, bands) if self.denoise else raw
        if self.denoise and share == 0:  # every workload pair measured: a forest to lean on
            residuals = self._shrink_towards_forest(domain, workload, raw, residuals, bases,
                                                    bands)
        selected = [] if self.selector is None else self.selector.measurements
        self.measurements = [*rare, *counted, *selected, *residuals]
        if route == "records":
            return self._fit_records(domain, workload, residuals, bases, randomness)
        # the one-shot plan's record count and one-way answers: weighted in the fit (see
        # the module docstring); AIM's route keeps the plan's weights
        weights = None if share > 0 else [
            LOW_ORDER_WEIGHT if (subset := residual_subset(m)) is not None and len(subset) < 2
            else 1.0 for m in self.measurements]
        model = self.estimate(domain, self.measurements, iters=self.iters, warm_start=warm,
                              weights=weights, callback=self._iteration_reporter(
                                  self.iters, "estimation: loss at iteration"))
        self._say(f"estimated the final model: {model.tree.size():,} cells, "
                  f"total≈{model.total:.0f}")
        return model

    @staticmethod
    def _shrink_towards_forest(domain: Domain, workload: Workload, raw, shrunk, bases,
                               bands) -> list:
        """``shrunk`` with each pair's residual off the Chow–Liu forest of the pair tables
        (read from ``shrunk``) shrunk from its raw answer towards the residual of the pair
        the forest implies, but for the entries of its ordered attributes' slow bands
        (:data:`FOREST_FREE_BANDS`), shrunk towards zero as in ``shrunk`` (see the module
        docstring; post-processing)."""
        targets, singles, _ = AIMResidual._tables(domain, _pairs_within(workload.cliques),
                                                  shrunk, bases)
        edges, implied = forest_pairs(domain, targets, singles)
        towards = {}
        for m in raw:
            subset = tuple(residual_subset(m))
            if len(subset) != 2 or len(m.clique) != 2 or frozenset(subset) in edges:
                continue
            ordered = tuple(sorted(subset, key=domain.attrs.index))
            if ordered in implied:  # the pair is joined by the forest
                table = implied[ordered]
                table = table if tuple(m.clique) == ordered else table.T
                target = m.query @ table.ravel()
                if any(a in bands for a in subset):  # its slow bands: towards zero
                    slow = np.all([b <= FOREST_FREE_BANDS
                                   for b in entry_bands(domain, subset, bands)], axis=0)
                    target = np.where(slow, 0.0, target)
                towards[subset] = target
        off = [m for m in raw if tuple(residual_subset(m)) in towards]
        moved = {tuple(residual_subset(m)): m
                 for m in shrink_residuals(domain, off, bands, towards=towards)}
        return [moved.get(tuple(residual_subset(m)), m) for m in shrunk]

    @staticmethod
    def _tables(domain: Domain, cliques, residuals, bases):
        """The tables on ``cliques``, every one-way table and the record count,
        reconstructed from the residual answers (a pair inside a larger measured marginal:
        its sum, the same answers)."""
        answers = {frozenset(residual_subset(m)): m.values for m in residuals}
        targets = {c: reconstruct(domain, c, answers, bases) for c in cliques}
        singles = {a: reconstruct(domain, (a,), answers, bases) for a in domain.attrs}
        return targets, singles, float(reconstruct(domain, (), answers))

    @staticmethod
    def _record_bytes(domain: Domain) -> int:
        """The bytes one fitted record takes while records are fitted."""
        return len(domain) * CELL_BYTES * FITTED_COPIES

    @staticmethod
    def _least_records_bytes(domain: Domain) -> int:
        """The bytes of the fewest records the records estimator fits."""
        return MIN_FITTED_RECORDS * AIMResidual._record_bytes(domain)

    def _fit_records(self, domain: Domain, workload: Workload, residuals, bases,
                     randomness: Randomness) -> RecordsModel:
        """The records estimator (see the module docstring): post-processing only. The
        records follow every workload table of two or more attributes and every pair
        inside one."""
        fitted = [*_pairs_within(workload.cliques), *(c for c in workload.cliques if len(c) > 2)]
        targets, singles, total = self._tables(domain, fitted, residuals, bases)
        # the model is the empirical distribution of its records, standing for the noisy
        # count: a larger table is fitted as a sample of at most MAX_FITTED_RECORDS (and
        # what max_memory holds), so that memory is bounded whatever the data's size
        room = int(self.max_memory // self._record_bytes(domain))
        rows = min(max(int(round(total)), 0), MAX_FITTED_RECORDS, room)
        self._say(f"fitting {rows:,} records to {len(targets)} tables")
        rng = randomness.other
        # the targets' expected squared noise (the plan's, before denoising): the fit goes
        # on until it is within a share of it (idea 32)
        noise = sum(self.residual_plan.variance(c) * t.size for c, t in targets.items())
        if rows < round(total):  # a sample: its tables (and noise) are the count's, scaled
            targets = {c: t * (rows / total) for c, t in targets.items()}
            singles = {a: t * (rows / total) for a, t in singles.items()}
            noise *= (rows / total) ** 2
        start = tree_records(domain, _pairs(targets), rows, rng, singles)
        # the bar's length is public (the most sweeps), wherever the fit stops
        report = self._iteration_reporter(most_sweeps(noise=noise),
                                          "records: squared error at sweep")
        heard: list[tuple[int, float]] = []

        def progress(sweep: int, error: float) -> None:
            heard.append((sweep, error))
            report(sweep, error)

        records = fit_records(domain, targets, start, rng, noise=noise, callback=progress)
        if heard:
            sweeps, error = heard[-1]
            self._say(f"fitted the records in {sweeps} sweeps: squared error {error:.4g}, "
                      f"{error / noise:.2f} of the plan's noise")
        return RecordsModel(domain, records, total)


def _pairs_within(cliques) -> list[tuple[str, str]]:
    """Every pair of attributes inside one of ``cliques``, once (as first met)."""
    pairs: dict[frozenset, tuple[str, str]] = {}
    for clique in cliques:
        for pair in combinations(clique, 2):
            pairs.setdefault(frozenset(pair), pair)
    return list(pairs.values())


def _pairs(tables: dict) -> dict:
    """The tables of ``tables`` on two attributes."""
    return {c: t for c, t in tables.items() if len(c) == 2}
