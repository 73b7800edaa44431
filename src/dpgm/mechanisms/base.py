"""The interface every mechanism shares: data and a budget in, a private model out.

:class:`Mechanism` owns everything that is the same for every mechanism, so that a new
one gets it by subclassing: the checks of ε, δ (:mod:`dpgm.privacy.policy`), the
estimator and the memory limit at construction; in ``fit``, the checks of the data, the
seed and the workload, the public-facts plan (sizes, memory) made before the data are
read, a fresh budget, and the reset of everything a previous ``fit`` left. A subclass
writes :meth:`Mechanism.plan` (what can fail on public facts) and
:meth:`Mechanism._fit` (the private algorithm).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar

from dpgm.constraints import Forbidden, check_forbidden
from dpgm.dataset import CountingSource, Dataset, require_dataset, require_records
from dpgm.domain import Domain
from dpgm.errors import (
    DomainError,
    DpgmError,
    ModelTooLargeError,
    ParameterError,
    PrivacyParameterError,
    PrivacyWarning,
    option,
)
from dpgm.estimation import estimate
from dpgm.estimation.algorithms import DEFAULT_MAX_CELLS
from dpgm.inference.cliques import Clique
from dpgm.inference.junction_tree import TreeSizes
from dpgm.measurement import Measurement
from dpgm.memory import (
    DEFAULT_MAX_MEMORY,
    MEASURED_CELL_BYTES,
    cells,
    check_memory,
    default_chunk_rows,
)
from dpgm.models.base import Model, Release
from dpgm.models.markov_random_field import MarkovRandomField
from dpgm.models.refinement import RefinedModel, Refinement
from dpgm.privacy.budget import PrivacyBudget
from dpgm.privacy.policy import DEFAULT_DELTA, check_delta, check_epsilon
from dpgm.privacy.quiet import on_records
from dpgm.progress import ProgressLike, Reporter
from dpgm.random import Randomness, RngLike, as_generator
from dpgm.schema import Schema
from dpgm.validation import integer, one_of, positive
from dpgm.workload import Workload, as_workload

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

#: a function called with each progress line, True (bars, or lines), False or None (silent,
#: but bars in a notebook): dpgm.progress
Progress = ProgressLike
WorkloadLike = Workload | Sequence[Iterable[str]]

#: the accounting a mechanism uses: "pure" ε-DP (a δ is accepted and not spent), "zcdp"
#: (ρ-zCDP reported as (ε, δ), δ defaults to DEFAULT_DELTA), "either" (pure without a
#: δ, zCDP with one), or "approx" ((ε, δ)-DP under basic composition, δ defaults to
#: DEFAULT_DELTA)
PRIVACY_KINDS = ("pure", "zcdp", "either", "approx")


class Mechanism:
    """A differentially private mechanism that fits a model of the data.

    ``fit`` spends exactly the budget given at construction through :mod:`dpgm.privacy`
    and keeps its ledger in ``budget``; everything after the measurements is
    post-processing. ``progress`` receives one line per stage of the work; the lines
    carry only public facts and released (noisy) values, never exact counts or timings.

    ``estimator="pgm"`` returns a :class:`MarkovRandomField` estimated by Private-PGM; a
    mechanism's ``"original"`` estimator returns what the mechanism's authors released
    (synthetic records as a :class:`Dataset`, or a :class:`~dpgm.models.tables.TableModel`).
    Either answers ``marginal(attrs)``; ``self.result`` holds it after ``fit``.

    ``delta`` follows one policy (:mod:`dpgm.privacy.policy`): zCDP mechanisms default to
    ``DEFAULT_DELTA``; pure ε-DP mechanisms accept a δ and spend none of it. ``max_memory``
    (bytes, default half the machine's RAM) bounds every table the mechanism allocates;
    work that would exceed it is refused, before any budget is spent where the size
    follows from public facts.
    """

    #: whether the mechanism reads records one by one (then it needs a Dataset in memory;
    #: the others need counts only and run on any counting engine, e.g. DuckDBTable)
    needs_records = False
    #: whether the workload steers what is measured (False: a workload given is refused,
    #: never silently ignored)
    uses_workload = True
    #: whether the mechanism plans for a workload's prefix ranges (its ``numeric``
    #: attributes); the others measure the marginals that hold the ranges, and say so
    plans_ranges: ClassVar[bool] = False
    #: what the learner learns: "synthesizer" (a model of the whole table), "bn" (a
    #: Bayesian network's CPDs on a public structure) or "mrf" (an Ising, pairwise or
    #: t-wise model, or an edge set)
    kind: ClassVar[str] = "synthesizer"
    #: the accounting, one of PRIVACY_KINDS
    privacy: ClassVar[str] = "zcdp"
    #: the estimators a mechanism supports; "pgm" is Private-PGM estimation
    estimators: ClassVar[tuple[str, ...]] = ("pgm",)
    #: the estimators that release synthetic records (a Dataset) rather than a model
    releases_records: ClassVar[tuple[str, ...]] = ()
    #: whether the mechanism measures refined numeric columns (a schema's ``"refine"``)
    #: at two resolutions (:mod:`dpgm.models.refinement`); the others use the fine cells
    refines: ClassVar[bool] = False
    #: whether the release can hold a schema's constraints (structural zeros) exactly
    holds_constraints: ClassVar[bool] = True

    def __init__(
        self,
        epsilon: float | None = None,
        delta: float | None = None,
        *,
        rho: float | None = None,
        estimator: str = "pgm",
        max_memory: float | None = None,
        progress: Progress = None,
    ):
        if rho is not None:  # a zCDP budget given natively (δ only to report (ε, δ))
            if epsilon is not None:
                raise PrivacyParameterError("give epsilon (with delta) or rho, not both")
            if self.privacy != "zcdp":
                raise PrivacyParameterError(
                    f"{type(self).__name__} is not zCDP: give epsilon, not rho")
            self.rho: float | None = positive("rho", rho)
            self.epsilon = None
        else:
            self.rho = None
            self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(delta)
        if self.delta is None and self.privacy in ("zcdp", "approx"):
            self.delta = DEFAULT_DELTA
        self.estimator = one_of("estimator", estimator, self.estimators)
        self.max_memory = (
            float(DEFAULT_MAX_MEMORY) if max_memory is None else positive("max_memory", max_memory)
        )
        self.progress = progress
        self._reporter = Reporter(progress)
        self._reset()

    # -- the template ---------------------------------------------------------------------
    def may_estimate_with_pgm(self) -> bool:
        """Whether this run may estimate with Private-PGM, the one estimator that holds
        structural zeros (a public fact of the options)."""
        return self.estimator == "pgm"

    @property
    def releases_model(self) -> bool:
        """Whether ``fit`` returns a model (which can be saved, queried and sampled with
        ``given``) rather than records: a public fact of the estimator."""
        return self.estimator not in self.releases_records

    @property
    def accounting(self) -> str:
        """``"pure"`` (ε-DP), ``"zcdp"`` (ρ-zCDP, reported as (ε, δ)) or ``"approx"``
        ((ε, δ)-DP, basic composition) for this run."""
        if self.privacy == "either":
            return "pure" if self.delta is None else "zcdp"
        return self.privacy

    def new_budget(self) -> PrivacyBudget:
        """An empty budget of the kind this mechanism spends."""
        if self.rho is not None:
            return PrivacyBudget(rho=self.rho, delta=self.delta)
        if self.accounting == "pure":
            return PrivacyBudget(epsilon=self.epsilon)
        if self.accounting == "approx":
            return PrivacyBudget.approximate(self.epsilon, self.delta)
        with warnings.catch_warnings():  # a large delta was warned about at construction
            warnings.simplefilter("ignore", PrivacyWarning)
            return PrivacyBudget(epsilon=self.epsilon, delta=self.delta)

    def fit(
        self,
        data: Dataset | pd.DataFrame,
        workload: WorkloadLike | None = None,
        rng: RngLike = None,
        *,
        schema: Schema | None = None,
        zeros: Sequence[Forbidden] = (),
        refine: Mapping[str, int] | None = None,
    ) -> Model | Dataset:
        """Spend the budget on ``data`` and return the estimate (see the class docstring):
        a model (:class:`~dpgm.models.base.Model`, carrying the schema and the release's
        ledger), or a :class:`Dataset` where the estimator released records.

        ``data`` is a :class:`Dataset`, or a raw DataFrame with its public ``schema``
        (which encodes it, and whose constraints become structural zeros; then
        :meth:`synthetic_data` decodes). ``zeros`` adds structural zeros on the integer
        path. ``rng=None`` (a release) uses OpenDP's exact samplers for every noise and
        selection; a seed or a ``numpy.random.Generator`` makes the run reproducible, for
        research only (a :class:`~dpgm.errors.SeedWarning` says so once). ``refine``
        (``{attribute: sub-bins per bin}``; default: the schema's) holds those attributes
        at two resolutions where the mechanism can (:attr:`refines`); ``{}`` keeps them flat.
        """
        if schema is not None and not isinstance(schema, Schema):
            raise ParameterError(f"schema must be a dpgm.Schema, got {type(schema).__name__}")
        if schema is None:
            data = require_records(data) if self.needs_records else require_dataset(data)
        randomness = Randomness.from_user(rng)
        self._reset()
        domain = data.domain if schema is None else schema.domain
        forbidden = check_forbidden(domain, [*zeros, *(schema.forbidden if schema else ())])
        if refine is None and schema is not None:
            refine = schema.refinements()
        refinement = self.refinement(domain, refine)
        # everything that can fail on public facts fails here, before the data are read
        workload = self.check(domain, workload, zeros=forbidden, refine=refine)
        with on_records():  # no warning raised on the records reaches the user
            if schema is not None:
                data = schema.encode(data) if not isinstance(data, CountingSource) else data
                if data.domain != schema.domain:
                    raise DomainError("the Dataset's domain is not the schema's")
            if refinement is not None:  # measured on the split domain
                data, forbidden = refinement.apply(data), refinement.forbidden(forbidden)
            self.schema, self.zeros, self.refined = schema, forbidden, refinement
            self.budget = self.new_budget()
            result = self._fit(data, workload, randomness)
        if isinstance(result, MarkovRandomField):
            self.model = result  # on the split domain where refined
        if refinement is not None and self.releases_model:
            result = RefinedModel(refinement, result)
        self.result = result
        if self.releases_model:  # the release carries what it was made from
            result.schema = schema
            result.release = Release.of(self.budget, type(self).__name__, self.options(),
                                        seeded=randomness.noise is not None)
        return result

    def __init_subclass__(cls, **kwargs):
        """Each learner's constructor records the arguments it was called with (the
        outermost call: a subclass's, not the ``super().__init__`` it makes)."""
        super().__init_subclass__(**kwargs)
        if "__init__" in cls.__dict__:
            cls.__init__ = _recording_arguments(cls.__dict__["__init__"])

    def options(self) -> dict[str, object]:
        """The options this mechanism was made with, every constructor parameter with its
        default where not given (``max_memory`` and ``delta`` as resolved; ``progress``
        left out), as JSON values (a structure as ``{child: [parents]}``): what a model
        file records."""
        import inspect

        given = dict(getattr(self, "_arguments", {}))
        for kind in type(self).__mro__:  # the defaults of the constructors it passes to
            if "__init__" not in kind.__dict__ or kind is object:
                continue
            init = getattr(kind.__dict__["__init__"], "__wrapped__", kind.__dict__["__init__"])
            for name, parameter in inspect.signature(init).parameters.items():
                if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
                    continue
                if name not in given and parameter.default is not parameter.empty:
                    given[name] = parameter.default
        given.pop("self", None)
        given.pop("progress", None)
        given["max_memory"], given["delta"] = self.max_memory, self.delta
        return {name: json_value(value) for name, value in given.items()}

    def synthetic_data(
        self,
        rows: int | None = None,
        rng: RngLike = None,
        given: Mapping[str, object] | None = None,
    ) -> Dataset | pd.DataFrame:
        """Synthetic records from what ``fit`` released (post-processing, free).

        ``rows`` defaults to the model's noisy estimate of the number of records.
        ``given`` (``{attribute: value}``, raw values where ``fit`` had a schema,
        labels or codes otherwise) conditions the model exactly. With a schema the
        records come back decoded, as a DataFrame in original units.
        """
        if self.result is None:
            raise DpgmError("call fit first: there is no model to sample from")
        rows = None if rows is None else integer("rows", rows, least=0)
        result = self.result
        if self.releases_model:
            return result.synthetic_data(rows, rng, given=given, max_memory=self.max_memory)
        # the mechanism released records itself
        if given:
            raise ParameterError(
                "given needs a model; this estimator released records: use estimator='pgm'")
        generator = as_generator(rng)
        if rows is None or rows == len(result):
            records = result
        elif len(result) == 0:
            raise DpgmError("the mechanism released no records to draw rows from")
        else:  # resampling released records is post-processing
            picks = generator.integers(len(result), size=rows)
            records = Dataset(result.records[picks], result.domain)
        return records if self.schema is None else self.schema.decode(records, generator)

    def synthetic_chunks(
        self,
        rows: int | None = None,
        rng: RngLike = None,
        given: Mapping[str, object] | None = None,
        *,
        chunk_rows: int | None = None,
    ) -> Iterator[Dataset | pd.DataFrame]:
        """:meth:`synthetic_data`'s records in chunks of at most ``chunk_rows``, in memory
        bounded by the chunk (:meth:`dpgm.models.base.ModelBase.synthetic_chunks`); records
        the mechanism released itself are already in memory and come back in slices."""
        if self.result is None:
            raise DpgmError("call fit first: there is no model to sample from")
        rows = None if rows is None else integer("rows", rows, least=0)
        if self.releases_model:
            return self.result.synthetic_chunks(rows, rng, given, chunk_rows=chunk_rows,
                                                max_memory=self.max_memory)
        if given:
            raise ParameterError(
                "given needs a model; this estimator released records: use estimator='pgm'")
        size = default_chunk_rows(len(self.result.domain)) if chunk_rows is None else \
            integer("chunk_rows", chunk_rows, least=1)
        count = len(self.result) if rows is None else rows
        if count and not len(self.result):
            raise DpgmError("the mechanism released no records to draw rows from")
        return self._released_chunks(rows, count, size, as_generator(rng))

    def _released_chunks(self, rows: int | None, count: int, size: int,
                         generator: np.random.Generator) -> Iterator[Dataset | pd.DataFrame]:
        released = self.result
        for start in range(0, max(count, 1), size):
            if rows is None or rows == len(released):
                records = released.records[start:start + size]
            else:  # resampling released records is post-processing
                picks = generator.integers(len(released), size=min(size, count - start))
                records = released.records[picks]
            chunk = Dataset(records, released.domain)
            yield chunk if self.schema is None else self.schema.decode(chunk, generator)

    def _fit(self, data: Dataset, workload: Workload, randomness: Randomness):
        """The private algorithm: spend ``self.budget`` on ``data``; return the result."""
        raise NotImplementedError

    def fit_within(self, data: Dataset, workload: Workload, randomness: Randomness,
                   budget: PrivacyBudget, zeros: Sequence[Forbidden] = (),
                   refined: Refinement | None = None):
        """Run as one step of a larger mechanism: spend this mechanism's ε on ``data``,
        charged to ``budget`` (the larger one's, or its own to be included in it), holding
        the larger one's structural ``zeros`` and measuring through its ``refined``
        domain, and return what it found. The caller has done :meth:`fit`'s checks and
        encoding."""
        self._reset()
        self.budget = budget
        self.zeros, self.refined = list(zeros), refined
        return self._fit(data, workload, randomness)

    def _reset(self) -> None:
        """Forget what a previous ``fit`` found (subclasses add their own state)."""
        self.budget: PrivacyBudget | None = None
        self.measurements: list[Measurement] = []
        self.model: MarkovRandomField | None = None
        self.result: Model | Dataset | None = None
        self.schema: Schema | None = None
        self.zeros: list[Forbidden] = []
        #: the refinement the last fit measured through (None: one resolution)
        self.refined: Refinement | None = None

    def workload_for(self, domain: Domain, workload: WorkloadLike | None) -> Workload:
        """The workload checked against the domain; None: all 2-way marginals."""
        return as_workload(workload, domain, 2)

    def plan(self, domain: Domain, workload: Workload) -> None:
        """Raise if ``fit`` would fail on public facts (sizes, memory); reads no data.

        The base plan checks that every attribute's one-way marginal can be counted.
        """
        largest = max(domain.attrs, key=lambda a: domain[a])
        self.check_memory(
            f"the one-way marginal of {largest!r} ({domain[largest]:,} values)",
            MEASURED_CELL_BYTES * domain[largest],
        )

    def check(
        self,
        domain: Domain,
        workload: WorkloadLike | None = None,
        *,
        zeros: Sequence[Forbidden] = (),
        refine: Mapping[str, int] | None = None,
    ) -> Workload:
        """What ``fit`` checks before reading data: the workload and :meth:`plan`.

        Returns the workload ``fit`` would use (on the split domain where ``refine``
        holds attributes at two resolutions). A caller that loads data itself (the
        command line) calls this first, so that a run bound to fail spends nothing.
        """
        if len(domain) == 0:
            raise DomainError("the domain has no attributes: name at least one")
        if workload is not None and not self.uses_workload:
            raise ParameterError(
                f"{type(self).__name__} measures no workload (it chooses what it measures "
                "itself), so the workload given would be ignored: drop it, or use a "
                f"mechanism that measures one ({', '.join(mechanisms_that('uses_workload'))})")
        refinement = self.refinement(domain, refine)
        if refinement is not None:
            # the default workload at the coarse level, each refined one-way at the fine
            cliques = (self.workload_for(refinement.coarse, None).cliques if workload is None
                       else refinement.workload(as_workload(workload, domain).cliques))
            if workload is None:
                cliques = refinement.default_workload(cliques)
            domain, workload = refinement.split, cliques
            zeros = refinement.forbidden(zeros)
        if zeros and not self.holds_constraints:
            raise ParameterError(
                f"{type(self).__name__} cannot hold constraints (structural zeros) exactly: "
                "drop them from the schema")
        if zeros and not self.may_estimate_with_pgm():
            remedy = (f"use {option('estimator', 'pgm')}" if "pgm" in self.estimators else
                      f"{type(self).__name__} has none: use another mechanism")
            raise ParameterError(
                f"structural zeros (constraints) need the Private-PGM estimator: {remedy}"
            )
        if zeros:
            self._check_constraints(domain, zeros)
        checked = self.workload_for(domain, workload)
        ranged = sorted(checked.numeric & {a for c in checked.cliques for a in c})
        if ranged and not self.plans_ranges:
            # once: the command line checks before reading the data, and fit checks again
            self._reporter.say_once(
                f"{type(self).__name__} plans for the workload's marginals; the prefix "
                f"ranges over {', '.join(map(repr, ranged))} are answered from them, not "
                f"planned for (the mechanisms that plan for ranges: "
                f"{', '.join(mechanisms_that('plans_ranges'))})")
        self.plan(domain, checked)
        return checked

    def one_way_cliques(self, domain: Domain) -> list[tuple[str, ...]]:
        """The marginal that measures each attribute on its own: its one-way marginal, or
        for a refined attribute the pair of its bin and place (its fine one-way)."""
        refined = self.refined
        if refined is None or domain != refined.split:
            return [(a,) for a in domain]
        return [refined.digits((a,)) for a in refined.domain.attrs]

    def refinement(self, domain: Domain, refine: Mapping[str, int] | None
                   ) -> Refinement | None:
        """The refinement ``fit`` measures through: None where nothing is refined or the
        mechanism measures at one resolution (:attr:`refines`)."""
        if refine is not None and not isinstance(refine, Mapping):
            raise ParameterError(f"refine must be {{attribute: sub-bins per bin}}, got "
                                 f"{refine!r}")
        if not refine or not self.refines:
            return None
        return Refinement(domain, {a: integer(f"refine[{a!r}]", f, least=2)
                                   for a, f in refine.items()})

    def _check_constraints(self, domain: Domain, zeros: Sequence[Forbidden]) -> None:
        """The model holds a table on each constraint's columns: the junction tree of those
        tables alone is a lower bound on every model's, so one that is too large fails
        here, before anything is spent."""
        size = TreeSizes(domain).cells([z.attrs for z in zeros])
        if size > DEFAULT_MAX_CELLS:
            raise ModelTooLargeError(
                f"the constraints' tables need a model of {size:,} cells, over "
                f"{DEFAULT_MAX_CELLS:,}; constrain fewer or smaller columns together")
        self.check_memory(f"the constraints' tables ({size:,} cells)",
                          MEASURED_CELL_BYTES * size,
                          alternative="constrain fewer or smaller columns together")

    def check_synthesizable(self, domain: Domain, workload: WorkloadLike | None = None) -> None:
        """Raise :class:`DpgmError` if ``fit`` on this domain could not yield synthetic data.

        Decided from public facts only, so a caller that needs records can refuse before
        any budget is spent.
        """

    # -- helpers for subclasses -------------------------------------------------------------
    def estimate(
        self, domain: Domain, measurements: Sequence[Measurement], **options
    ) -> MarkovRandomField:
        """Private-PGM estimation with this fit's structural zeros (post-processing).

        ``domain`` may be a compression of the data's, provided it keeps the zeros'
        attributes whole.
        """
        return estimate(domain, measurements, zeros=self.zeros, **options)


    def check_memory(self, what: str, nbytes: float, alternative: str = "") -> None:
        """Refuse a step of more than ``max_memory`` bytes (see :mod:`dpgm.memory`)."""
        check_memory(what, nbytes, self.max_memory, alternative=alternative)

    @staticmethod
    def tables_bytes(domain: Domain, cliques: Iterable[Clique]) -> float:
        """The bytes of counting tables on ``cliques`` together."""
        return MEASURED_CELL_BYTES * sum(cells(domain.project(c).shape) for c in cliques)

    def check_tables(self, domain: Domain, cliques: Iterable[Clique], what: str) -> None:
        """Refuse to count tables on ``cliques`` if they would not fit in memory together."""
        cliques = list(cliques)
        if not cliques:
            return
        largest = max(cliques, key=lambda c: cells(domain.project(c).shape))
        self.check_memory(
            f"{what} ({len(cliques)} table(s), the largest on {largest})",
            self.tables_bytes(domain, cliques),
            alternative="use a workload with smaller cliques",
        )

    def _say(self, message: str) -> None:
        self._reporter.say(message)

    def _iteration_reporter(self, iters: int, what: str) -> Callable[[int, float], None]:
        """An estimation callback: a bar of ``iters`` iterations, or a line every tenth
        (:mod:`dpgm.progress`)."""
        return self._reporter.steps(iters, what)


class CliqueModelMechanism(Mechanism):
    """A mechanism that fits a model whose cliques are the workload's (CGM, PSGD)."""

    def plan(self, domain: Domain, workload: Workload) -> None:
        """The model's clique tables and junction tree fit in memory (public facts)."""
        super().plan(domain, workload)
        cliques = list(workload.cliques)
        self.check_tables(domain, cliques, "the model's clique tables")
        size = TreeSizes(domain).cells(cliques)
        self.check_memory(
            f"the junction tree of the model ({size:,} cells)",
            MEASURED_CELL_BYTES * size,
            alternative="use a workload with fewer or smaller cliques",
        )


def mechanisms_that(capability: str) -> list[str]:
    """The registered synthesizers (by command-line name) whose class attribute
    ``capability`` is true: ``"uses_workload"`` (they measure a workload),
    ``"plans_ranges"`` (they plan for a workload's prefix ranges)."""
    from dpgm.mechanisms import REGISTRY

    return [name for name, cls in REGISTRY.items() if getattr(cls, capability)]


def _recording_arguments(init: Callable) -> Callable:
    """``init``, recording on the instance (``_arguments``) the arguments of the outermost
    constructor call, by parameter name (keyword-only extras merged in)."""
    import functools
    import inspect

    signature = inspect.signature(init)

    @functools.wraps(init)
    def recorded(self, *args, **kwargs):
        if "_arguments" not in self.__dict__:
            try:
                bound = signature.bind(self, *args, **kwargs)
            except TypeError:
                pass  # the call itself fails with Python's own message
            else:
                arguments = {}
                for name, value in bound.arguments.items():
                    kind = signature.parameters[name].kind
                    if kind is inspect.Parameter.VAR_KEYWORD:
                        arguments.update(value)
                    elif kind is not inspect.Parameter.VAR_POSITIONAL:
                        arguments[name] = value
                self.__dict__["_arguments"] = arguments
        init(self, *args, **kwargs)

    return recorded


def json_value(value: object) -> object:
    """``value`` as JSON: numbers (a non-finite one as its text), texts, lists and
    mappings of them; a Bayesian network or a networkx DiGraph as ``{child: [parents]}``;
    anything else by its type's name (never dropped, never code)."""
    import numpy as np

    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, np.generic):
        return json_value(value.item())
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((json_value(v) for v in value), key=repr)
    if isinstance(value, Mapping):
        return {str(k): json_value(v) for k, v in value.items()}
    parents = getattr(value, "parents", None)  # a BayesianNetwork
    if isinstance(parents, Mapping):
        return json_value({child: list(ps) for child, ps in parents.items()})
    predecessors = getattr(value, "pred", None)  # a networkx DiGraph
    if isinstance(predecessors, Mapping):
        return {str(n): sorted(map(str, ps)) for n, ps in predecessors.items()}
    if isinstance(value, np.ndarray) and value.size <= 10_000:
        return json_value(value.tolist())
    return f"<{type(value).__name__}>"


# a mechanism without a constructor of its own records its arguments too
Mechanism.__init__ = _recording_arguments(Mechanism.__init__)  # type: ignore[method-assign]
