"""A Markov random field: the model Private-PGM estimation produces, answered by an inference
engine (:class:`~dpgm.inference.engine.Engine`): exact belief propagation on its junction
tree or, for a model too large for one, loopy belief propagation. It implements the model
protocol (:mod:`dpgm.models.base`)."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping

import numpy as np

from dpgm.dataset import Dataset
from dpgm.domain import Domain
from dpgm.errors import DataError, DomainError, DpgmError, ModelTooLargeError, ParameterError
from dpgm.factor import Factor, logsumexp
from dpgm.inference.belief_propagation import Calibration, MessagePlan
from dpgm.inference.elimination import variable_elimination
from dpgm.inference.engine import Engine
from dpgm.inference.junction_tree import JunctionTree
from dpgm.inference.loopy import LoopyPlan
from dpgm.inference.sampling import sample_records
from dpgm.inference.tree_marginals import TreeMarginals
from dpgm.measurement import MeasuredFit
from dpgm.memory import DEFAULT_MAX_MEMORY, MEASURED_CELL_BYTES, cells, check_memory
from dpgm.models.base import ModelBase
from dpgm.random import as_generator
from dpgm.validation import integer, positive

#: the largest junction tree (cells) an approximate model builds for an exact answer
EXACT_CELLS = 50_000_000
#: the largest table an approximate model completes for a query no clique holds
COMPLETION_CELLS = 1_000_000
_QUERY_PREFIX = "\x00query:"  # names the answer axis of an attribute's query matrix


class MarkovRandomField(ModelBase):
    """``p(x) ∝ exp(Σ_C θ_C(x_C))`` scaled to ``total`` records.

    ``potentials`` maps cliques to log-potentials (arrays shaped by the clique's attribute
    order, or :class:`~dpgm.factor.Factor`). Marginals and query answers are counts: they
    sum to ``total``. Exact answers come from the junction tree, built on first use (or
    given: ``tree``, or an exact ``engine``). With an approximate ``engine`` (``loopy``: a
    :class:`~dpgm.inference.loopy.LoopyPlan` on the same cliques) marginals inside a clique
    come from loopy belief propagation instead, and the junction tree is built only where
    it is small enough for an exact answer.
    """

    #: the most bytes exact inference may take where the junction tree is built on first
    #: use (None: half this machine's memory)
    max_memory: float | None = None
    #: the measurements it was estimated from and the estimator's settings (error bars;
    #: :mod:`dpgm.models.uncertainty`), or None
    measured: MeasuredFit | None = None

    def __init__(
        self,
        domain: Domain,
        potentials: Mapping[Iterable[str], np.ndarray | Factor],
        total: float = 1.0,
        tree: JunctionTree | None = None,
        loopy: LoopyPlan | None = None,
        *,
        engine: Engine | None = None,
    ):
        total = positive("total", total)
        if len(domain) == 0:
            raise DomainError("a model needs at least one attribute")
        self.domain = domain
        self.total = float(total)
        self.potentials: dict[tuple[str, ...], Factor] = {}
        for clique, table in potentials.items():
            clique = domain.check(clique)
            if isinstance(table, Factor):
                if set(table.attrs) != set(clique):
                    raise DomainError(f"potential on {table.attrs} given for clique {clique}")
                factor = table.transpose(clique)
                if factor.domain != domain.project(clique):
                    raise DomainError(
                        f"potential on {factor.domain} does not fit {domain.project(clique)}"
                    )
            else:
                values = np.asarray(table, dtype=np.float64)
                if values.shape != domain.project(clique).shape:
                    raise DomainError(
                        f"potential for {clique} has shape {values.shape}, "
                        f"expected {domain.project(clique).shape}"
                    )
                factor = Factor(domain.project(clique), values)
            self.potentials[clique] = factor
        if loopy is not None:
            if engine is not None:
                raise ParameterError("give the model's engine once: loopy= or engine=")
            engine = loopy
        self._tree = tree
        self._engine: Engine | None = None  # the approximate engine, if any
        if engine is not None and engine.tree is not None:
            self._tree = engine.tree  # exact: answered on its junction tree
        elif engine is not None:
            self._engine = engine
        self._plan: MessagePlan | None = None
        self._calibration: Calibration | None = None
        self._beliefs: list[np.ndarray] | None = None
        self._too_large = False  # an approximate model whose exact tree was refused

    @property
    def tree(self) -> JunctionTree:
        """The junction tree of the cliques, built when an exact computation first needs it.

        A model estimated with loopy belief propagation may have a tree too large to use:
        then this raises :class:`ModelTooLargeError`, and only its approximate clique
        marginals are available (:attr:`approximate`).
        """
        if self._tree is None:
            tree = JunctionTree.build(self.domain, self.potentials)
            if not self.approximate:  # calibrating it allocates its cells, several times
                check_memory(
                    f"exact inference on this model (a junction tree of {tree.size():,} "
                    f"cells, largest clique {tree.max_clique()})",
                    MEASURED_CELL_BYTES * tree.size(),
                    DEFAULT_MAX_MEMORY if self.max_memory is None else self.max_memory)
            elif tree.size() > EXACT_CELLS:
                raise ModelTooLargeError(
                    f"exact inference on this model needs a junction tree of {tree.size():,} "
                    f"cells (largest clique {tree.max_clique()}); it was estimated with loopy "
                    "belief propagation: only approximate marginals are available (inside a "
                    f"clique, or completed from the cliques for up to {COMPLETION_CELLS:,} cells)"
                )
            self._tree = tree
        return self._tree

    @property
    def approximate(self) -> bool:
        """Whether marginals come from loopy belief propagation (Bethe or convex counting
        numbers, ``model.loopy.counting``) rather than exact inference; after a query,
        ``model.loopy.result`` says whether its messages converged."""
        return self._engine is not None

    @property
    def loopy(self) -> Engine | None:
        """The approximate engine (loopy belief propagation: a
        :class:`~dpgm.inference.loopy.LoopyPlan`, the one dpgm's estimators make), or None
        for an exact model."""
        return self._engine

    @property
    def engine(self) -> Engine:
        """The inference engine that answers the model: its approximate engine, or exact
        belief propagation on the junction tree (:attr:`plan`)."""
        return self._engine if self._engine is not None else self.plan

    @classmethod
    def from_tree(
        cls, tree: JunctionTree, log_potentials: list[np.ndarray], total: float
    ) -> MarkovRandomField:
        """A model whose potentials live on the cliques of ``tree`` (as estimation produces)."""
        potentials = {
            c: Factor(tree.domain.project(c), t) for c, t in zip(tree.cliques, log_potentials)
        }
        return cls(tree.domain, potentials, total, tree=tree)

    # -- internals --------------------------------------------------------------------
    @property
    def cliques(self) -> list[tuple[str, ...]]:
        """The cliques the potentials are defined on."""
        return list(self.potentials)

    @property
    def plan(self) -> MessagePlan:
        """The exact engine: message passing on :attr:`tree`, built on first use."""
        if self._plan is None:
            self._plan = MessagePlan(self.tree)
        return self._plan

    def _summed_onto(self, engine: Engine | JunctionTree) -> list[np.ndarray]:
        """The log-potentials summed onto the engine's cliques (each into the smallest
        clique that holds it)."""
        tables = [np.zeros(self.domain.project(c).shape) for c in engine.cliques]
        for clique, factor in self.potentials.items():
            i = engine.find(clique)
            tables[i] = tables[i] + factor.broadcast_shape(self.domain.project(engine.cliques[i]))
        return tables

    def clique_log_potentials(
        self, evidence: Mapping[str, int | Iterable[int]] | None = None
    ) -> list[np.ndarray]:
        """Log-potentials summed onto the junction-tree cliques; ``evidence`` (a code, or
        a set of codes, per attribute) sets every other value's cells to −∞."""
        tables = self._summed_onto(self.tree)
        for attr, value in (evidence or {}).items():
            if attr not in self.domain:
                raise DomainError(f"evidence on unknown attribute {attr!r}")
            codes = [value] if isinstance(value, (int, np.integer)) else list(value)
            mask = np.full(self.domain[attr], -np.inf)
            for code in codes:
                if not 0 <= int(code) < self.domain[attr]:
                    raise DomainError(
                        f"evidence {attr}={code} outside its domain 0..{self.domain[attr] - 1}"
                    )
                mask[int(code)] = 0.0
            i = self.tree.find([attr])
            clique = self.tree.cliques[i]
            shape = [1] * len(clique)
            shape[clique.index(attr)] = self.domain[attr]
            tables[i] = tables[i] + mask.reshape(shape)
        return tables

    def calibrate(self) -> Calibration:
        """Sum-product beliefs on the junction tree (computed once, then cached)."""
        if self._calibration is None:
            self._calibration = self.plan.calibrate(self.clique_log_potentials(), "sum")
        return self._calibration

    @property
    def log_partition(self) -> float:
        """``log Z`` of the unnormalised potentials."""
        return self.calibrate().log_partition

    def clique_marginals(self) -> list[np.ndarray]:
        """Count tables of every junction-tree clique (axes in domain order)."""
        return [np.exp(b) * self.total for b in self.calibrate().log_marginals()]

    def _calibrated(self, evidence: Mapping[str, object] | None) -> Calibration:
        """The cached calibration, or one with ``evidence`` (labels or codes) entered."""
        if not evidence:
            return self.calibrate()
        codes = self.domain.evidence(evidence)
        key = tuple(sorted((a, tuple(c)) for a, c in codes.items()))
        last = self.__dict__.get("_given_calibration")
        if last is not None and last[0] == key:  # the chunks of one conditioned sample
            return last[1]
        calibration = self.plan.calibrate(self.clique_log_potentials(codes), "sum")
        if not np.isfinite(calibration.log_partition):
            raise DataError(f"the evidence {dict(evidence)} has probability zero under the model")
        self._given_calibration = (key, calibration)
        return calibration

    def _subtree_log_conditionals(
        self, attrs: Iterable[str], cal: Calibration | None = None
    ) -> list[Factor]:
        """Log-tables of a subtree containing ``attrs`` whose product is its marginal.

        The top clique gives its marginal, every other clique its conditional given the
        separator with its parent: normalised tables, so exponentiating them (for signed
        queries) neither overflows nor underflows to a wrong answer.
        """
        cal = self.calibrate() if cal is None else cal
        nodes = self.tree.steiner_subtree(attrs)
        factors = []
        for i in nodes:
            log_table = cal.log_beliefs[i] - cal.log_partition
            if i != nodes[0]:  # the parent of every other node is in the subtree
                log_sep = logsumexp(log_table, self.plan.up_axes[i], keepdims=True)
                with np.errstate(invalid="ignore"):
                    log_table = log_table - log_sep
                log_table[np.isnan(log_table)] = -np.inf  # separator values of probability 0
            factors.append(Factor(self.domain.project(self.tree.cliques[i]), log_table))
        return factors

    # -- queries ----------------------------------------------------------------------
    def marginal(
        self, attrs: Iterable[str], given: Mapping[str, object] | None = None, *,
        evidence: Mapping[str, object] | None = None, with_error: bool = False,
    ) -> np.ndarray:
        """Estimated counts of every cell of the marginal on ``attrs`` (in that order).

        ``given`` (``{attribute: label or code, or a list of them}``; raw values where the
        model carries a schema) gives the counts conditioned on it: the table sums to
        ``total``. ``evidence`` is its deprecated name. ``with_error=True`` gives the
        counts and their standard errors (:meth:`with_error`).
        """
        if with_error:
            return self.with_error(attrs, given if evidence is None else evidence)
        if evidence is not None:
            warnings.warn("marginal(evidence=) is deprecated: use given=", DeprecationWarning,
                          stacklevel=2)
            given = evidence if given is None else given
        evidence = self._given(given)
        attrs = self.domain.check(attrs)
        if self.approximate and not evidence:
            table = self._loopy_marginal(attrs, complete=False)
            if table is None and not self._exact_available():
                table = self._loopy_marginal(attrs, complete=True)
            if table is not None:
                return table
        return self._calibrated_probabilities(attrs, self._calibrated(evidence)) * self.total

    def _calibrated_probabilities(self, attrs: tuple[str, ...], cal: Calibration
                                  ) -> np.ndarray:
        """The probabilities of the cells on ``attrs`` from the calibration ``cal``: a
        clique's belief summed down, the product of the marginals of parts the tree keeps
        independent, or variable elimination on the subtree that holds them."""
        i = self.tree.find(attrs)
        if i is not None:
            clique = self.tree.cliques[i]
            drop = tuple(k for k, a in enumerate(clique) if a not in attrs)
            log_table = logsumexp(cal.log_beliefs[i], drop, keepdims=True) - cal.log_partition
            kept = [a for a in clique if a in attrs]
            table = np.exp(log_table).reshape(self.domain.project(kept).shape)
            return np.transpose(table, [kept.index(a) for a in attrs])
        groups = self.tree.independent_groups(attrs)
        if len(groups) > 1:
            table = np.ones(())
            for group in groups:
                table = np.multiply.outer(table, self._calibrated_probabilities(group, cal))
            joined = [a for group in groups for a in group]
            return np.transpose(table, [joined.index(a) for a in attrs])
        factors = self._subtree_log_conditionals(attrs, cal)
        result, _ = variable_elimination(factors, attrs, log_space=True)
        return np.exp(result.values)

    def _exact_available(self) -> bool:
        """Whether exact inference is within reach (the junction tree is small enough)."""
        if self._tree is None and not self._too_large:
            try:
                self.tree  # noqa: B018 (built and kept, or refused)
            except ModelTooLargeError:
                self._too_large = True
        return not self._too_large

    def _loopy_marginal(self, attrs: tuple[str, ...], complete: bool) -> np.ndarray | None:
        """The loopy-BP marginal on ``attrs``: a clique's belief where one holds them;
        else, if ``complete``, the maximum-entropy completion of the beliefs on their
        overlaps with the cliques; else None."""
        engine = self.loopy
        i = engine.find(attrs)
        if i is None and not complete:
            return None
        size = cells(self.domain.project(attrs).shape)
        if i is None and size > COMPLETION_CELLS:
            raise ModelTooLargeError(
                f"the marginal on {attrs} has {size:,} cells: an approximate model completes "
                f"tables of up to {COMPLETION_CELLS:,} cells (its exact junction tree is "
                "too large); ask for fewer attributes"
            )
        beliefs = self.loopy_beliefs()
        if i is None:
            return engine.completion(attrs, beliefs) * self.total
        clique = engine.cliques[i]
        drop = tuple(k for k, a in enumerate(clique) if a not in attrs)
        table = beliefs[i].sum(axis=drop) if drop else beliefs[i]
        kept = [a for a in clique if a in attrs]
        return np.transpose(table, [kept.index(a) for a in attrs]) * self.total

    def loopy_beliefs(self) -> list[np.ndarray]:
        """The clique beliefs (probabilities) of loopy belief propagation, one per clique of
        ``loopy``: computed on first use, then kept, so that every answer of the model
        comes from the same calibration (a model file stores them)."""
        engine = self.loopy
        if engine is None:
            raise DpgmError("this model is exact: it has no loopy beliefs")
        if self._beliefs is None:
            flat, _ = engine.marginals(engine.pack(self._summed_onto(engine)), 1.0)
            self._beliefs = engine.unpack(flat)
        return self._beliefs

    def marginals(self, cliques: Iterable[Iterable[str]]) -> list[np.ndarray]:
        """Estimated counts of the marginal on each of ``cliques`` (axes in each one's
        order), all from the model's kept calibration: many small marginals at once, as a
        mechanism scoring its candidates asks. Each equals :meth:`marginal` up to rounding."""
        cliques = [self.domain.check(c) for c in cliques]
        if self.approximate:  # every answer already comes from the one set of beliefs
            return [self.marginal(c) for c in cliques]
        cal = self.calibrate()
        with np.errstate(under="ignore"):
            tables = [np.exp(b - cal.log_partition) * self.total for b in cal.log_beliefs]
        answers = TreeMarginals(self.tree, tables)
        return [answers(c) for c in cliques]

    def project(self, attrs: Iterable[str]) -> Factor:
        """The marginal on ``attrs`` as a :class:`~dpgm.factor.Factor` of counts."""
        attrs = self.domain.check(attrs)
        return Factor(self.domain.project(attrs), self.marginal(attrs))

    def query(self, matrices: Mapping[str, np.ndarray]) -> np.ndarray:
        """Deprecated name of :meth:`answer_linear` (kept for one release)."""
        warnings.warn("MarkovRandomField.query is deprecated: use answer_linear",
                      DeprecationWarning, stacklevel=2)
        return self.answer_linear(matrices)

    def answer_linear(self, matrices: Mapping[str, np.ndarray]) -> np.ndarray:
        """Answers ``Q μ`` to the factored query ``Q = ⊗_i Q_i`` (Private-PGM Algorithm 3).

        ``matrices`` maps attributes to ``r_i × n_i`` matrices (see :mod:`dpgm.inference.queries`);
        other attributes are summed out. The result has one axis of length ``r_i`` per
        given attribute, in the given order, and counts as units.
        """
        attrs = self.domain.check(list(matrices))
        if not attrs:
            return np.array(self.total)
        factors = [f.exp() for f in self._subtree_log_conditionals(attrs)]
        answer_names = []
        for a in attrs:
            q = np.asarray(matrices[a], dtype=np.float64)
            if q.ndim == 1:
                q = q.reshape(1, -1)
            if q.ndim != 2 or q.shape[1] != self.domain[a]:
                raise DomainError(
                    f"query matrix for {a!r} must have {self.domain[a]} columns, "
                    f"got shape {q.shape}"
                )
            name = _QUERY_PREFIX + a
            answer_names.append(name)
            factors.append(Factor(Domain((name, a), q.shape), q))
        result, extra = variable_elimination(factors, answer_names, log_space=False)
        return result.values * np.exp(extra) * self.total

    def map(self, evidence: Mapping[str, object] | None = None) -> dict[str, int]:
        """The most probable record (given ``evidence``: labels or codes), as codes, by
        max-product message passing."""
        tables = self.clique_log_potentials(self.domain.evidence(evidence) if evidence else None)
        cal = self.plan.calibrate(tables, "max")
        if not np.isfinite(cal.log_partition):
            raise DataError(
                f"the evidence {dict(evidence or {})} has probability zero under the model"
            )
        assignment: dict[str, int] = {}
        for i in self.tree.order:
            clique = self.tree.cliques[i]
            belief = cal.log_beliefs[i]
            index = tuple(assignment[a] if a in assignment else slice(None) for a in clique)
            sub = belief[index]
            free = [a for a in clique if a not in assignment]
            if free:
                best = np.unravel_index(int(np.argmax(sub)), sub.shape)
                assignment.update({a: int(v) for a, v in zip(free, best)})
        return {a: assignment[a] for a in self.domain.attrs}

    def _structure(self) -> dict:
        # an exact model says so without building its junction tree
        engine = self.loopy
        described = MessagePlan.description if engine is None else engine.description
        return {"cliques": [list(c) for c in self.cliques], "inference": described}

    def _most_probable(self, given: Mapping[str, object] | None) -> dict[str, int]:
        return self.map(given)

    def sample(
        self,
        n: int | None = None,
        rng: np.random.Generator | int | None = None,
        method: str = "exact",
        given: Mapping[str, object] | None = None,
    ) -> Dataset:
        """``n`` records (default: the model's total, rounded) drawn from the model.

        ``method="exact"`` draws independent records; ``"rounded"`` rounds every
        conditional count from its expectation, which keeps the records' marginals much
        closer to the model's (the usual choice for synthetic data). ``given``
        (``{attribute: label or list of labels}``) draws from the model conditioned on
        it, exactly: the evidence enters the junction tree, nothing is rejected.
        """
        n = int(round(self.total)) if n is None else integer("n", n, least=0)
        calibration = self._calibrated(given)
        marginals = [np.exp(b) for b in calibration.log_marginals()]
        return Dataset(
            sample_records(self.tree, marginals, n, as_generator(rng), method), self.domain
        )

    def _records(self, n: int, rng: np.random.Generator,
                 given: Mapping[str, object] | None) -> Dataset:
        """Rounded sampling: the records' marginals stay much closer to the model's."""
        return self.sample(n, rng, method="rounded", given=given)

    def log_likelihood(self, data: Dataset) -> float:
        """Log-probability of ``data`` under the normalised model (weighted by record weights)."""
        if data.domain != self.domain:
            raise DomainError("the data's domain differs from the model's")
        tables = self.clique_log_potentials()
        score = np.zeros(len(data))
        for clique, table in zip(self.tree.cliques, tables):
            cols = self.domain.axes(clique)
            flat = np.ravel_multi_index(tuple(data.records[:, cols].T), table.shape)
            score += table.ravel()[flat]
        score -= self.log_partition
        if data.weights is None:
            return float(np.sum(score))
        # a record of weight 0 contributes nothing, even where its probability is 0
        return float(np.sum(np.where(data.weights > 0, data.weights * score, 0.0)))

    def __repr__(self) -> str:
        if self.loopy is not None:  # no junction tree to describe: it may be too large
            engine = "convex" if self.loopy.counting == "convex" else "Bethe"
            size = (f"{len(self.potentials)} cliques, approximate (loopy belief propagation, "
                    f"{engine})")
            return f"MarkovRandomField({size}, total={self.total:g})"
        size = f"{len(self.tree.cliques)} cliques, {self.tree.size()} cells"
        return f"MarkovRandomField({size}, total={self.total:g})"
