"""Error bars: the standard error of a model's marginal, from the noise of the measurements
it was estimated from (post-processing of the release: free, no data read).

A model estimated from noisy measurements (Private-PGM; MST, AIM and the other mechanisms
that measure marginals) keeps them and its estimator's settings
(:class:`~dpgm.measurement.MeasuredFit`). Two ways give the standard error of each cell
of a marginal it answers:

* **analytic**, where a measured clique holds the marginal's attributes and the fit is
  least squares (the L2 loss): the covariance of the least-squares estimate of the
  measured cliques' tables from all the measurements, the tables held consistent with
  one another on every overlap and with the structural zeros (generalised least squares
  under linear constraints), summed down to the marginal. Where the fit keeps every cell
  positive, this is the error of Private-PGM's estimate of those tables up to the noisy
  total; where cells are clipped at zero the clipping only shrinks the spread, so the
  analytic error overstates it. Where every measurement answers a residual
  (ResidualPlanner, :mod:`dpgm.residuals`) that estimate is the residuals'
  reconstruction (whatever the fit's weights), whose variance has a closed form: exact
  at any size. Other models with more than :data:`GLS_CELLS` measured cells use the
  inverse-variance combination of the direct measurements alone, a larger bound;
* **bootstrap**, otherwise (an unmeasured or conditional marginal, an L1 fit, a fit with
  ``weights`` of measurements that are not residuals): the
  measurements are drawn again around the model's own answers with the same noise
  (Gaussian, with the recorded standard deviations), the model is estimated again from
  them (at most :data:`BOOTSTRAP_ITERS` iterations with the fit's other settings,
  warm-started from the fit under exact inference), and the spread of the marginal over
  the replicates is its standard error.

Models that wrap an estimated model (a compressed domain, refined bins) pass the error on
through their own linear maps (covariances kept). Other models — a Bayesian network from
noisy tables, a model read from a file without measurements — keep no measurements and
give no error bars.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from weakref import WeakKeyDictionary

import numpy as np

from dpgm._refit import ESTIMATORS
from dpgm.errors import ParameterError
from dpgm.measurement import Measurement, dense_query
from dpgm.models.base import Model
from dpgm.models.compression import CompressedModel
from dpgm.models.markov_random_field import MarkovRandomField
from dpgm.models.refinement import RefinedModel
from dpgm.progress import ProgressLike, Reporter
from dpgm.random import RngLike, as_generator
from dpgm.residuals import marginal_variance, residual_variances
from dpgm.validation import integer, one_of

#: replicates of the bootstrap by default
REPLICATES = 50
#: the most iterations of each bootstrap estimate (warm-started from the fit)
BOOTSTRAP_ITERS = 200
#: the most cells of measured tables whose least-squares covariance is computed exactly
#: (a dense solve: a second at this size); larger models bound it by the direct error
GLS_CELLS = 3_000
METHODS = ("auto", "analytic", "bootstrap")


def standard_error(
    model: Model,
    attrs: Sequence[str],
    given: Mapping[str, object] | None = None,
    *,
    method: str = "auto",
    replicates: int = REPLICATES,
    rng: RngLike = None,
    progress: ProgressLike = None,
) -> np.ndarray:
    """The standard error of each cell of ``model.marginal(attrs, given)``, in counts.

    ``method``: ``"analytic"`` where the marginal was measured directly (an error where it
    was not), ``"bootstrap"`` with ``replicates`` re-estimations seeded by ``rng``, or
    ``"auto"``: analytic where it can be, else the bootstrap. See the module docstring.
    """
    return standard_errors(model, [attrs], given, method=method, replicates=replicates,
                           rng=rng, progress=progress)[0]


def standard_errors(
    model: Model,
    marginals: Sequence[Sequence[str]],
    given: Mapping[str, object] | None = None,
    *,
    method: str = "auto",
    replicates: int = REPLICATES,
    rng: RngLike = None,
    progress: ProgressLike = None,
) -> list[np.ndarray]:
    """:func:`standard_error` of several marginals, those not measured directly from one
    bootstrap (its replicates answer them all)."""
    one_of("method", method, METHODS)
    replicates = integer("replicates", replicates, least=2)
    marginals = [model.domain.check(attrs) for attrs in marginals]
    core = _require_core(model)
    if given and method == "analytic":
        raise ParameterError("a conditional marginal's error comes from the bootstrap")
    errors: list[np.ndarray | None] = [None] * len(marginals)
    if method != "bootstrap" and not given:
        errors = analytic_errors(model, marginals)
        missing = [list(m) for m, e in zip(marginals, errors) if e is None]
        if missing and method == "analytic":
            raise ParameterError(
                f"the marginal on {missing[0]} was not measured directly (or the fit is not "
                "generalised least squares: an L1 loss, or weights): its error comes from the "
                "bootstrap "
                "(method='bootstrap' or 'auto')")
    rest = [k for k, e in enumerate(errors) if e is None]
    if rest:
        found = _bootstrap(model, core, [marginals[k] for k in rest], given, replicates,
                           as_generator(rng), Reporter(progress))
        for k, error in zip(rest, found):
            errors[k] = error
    return errors


def analytic_errors(model: Model, marginals: Sequence[Sequence[str]]
                    ) -> list[np.ndarray | None]:
    """The analytic standard error of each marginal (see the module docstring), None for
    one that was not measured directly or where the fit's loss is not least squares (or,
    outside a residual plan, is weighted): quick, with no re-estimation."""
    core = _require_core(model)
    marginals = [model.domain.check(attrs) for attrs in marginals]
    if core.measured.options.get("loss", "l2") != "l2":
        return [None] * len(marginals)
    residuals = residual_variances(core.measured.measurements)
    if residuals is None and core.measured.options.get("weights") is not None:
        return [None] * len(marginals)  # weighted, not generalised, least squares
    if residuals is None and core not in _FITS:
        _FITS[core] = _LeastSquares(core)
    squares = None if residuals is not None else _FITS[core]
    errors: list[np.ndarray | None] = []
    for attrs in marginals:
        if squares is None or squares.too_large:
            variance = _bound_variance(model, attrs, residuals)
        else:
            rows = _rows(model, attrs, squares)
            variance = None if rows is None else squares.variance(rows)
        errors.append(None if variance is None else
                      np.sqrt(variance).reshape(model.domain.project(attrs).shape))
    return errors


def has_error_bars(model: Model) -> bool:
    """Whether ``model`` keeps the measurements its error bars come from."""
    return _core(model) is not None


def _require_core(model: Model) -> MarkovRandomField:
    core = _core(model)
    if core is None:
        raise ParameterError(
            f"this {type(model).__name__} keeps no measurements, so it has no error bars: "
            "they come with models estimated from noisy marginals (Private-PGM: mst, aim, "
            "mwem, …), fitted with this version of dpgm")
    return core


def _core(model: Model) -> MarkovRandomField | None:
    """The estimated model inside ``model`` that keeps its measurements, or None."""
    if isinstance(model, CompressedModel):
        return _core(model.compressed)
    if isinstance(model, RefinedModel):
        return _core(model.split)
    if isinstance(model, MarkovRandomField) and model.measured is not None:
        return model
    return None


def _with_core(model: Model, core: MarkovRandomField) -> Model:
    """``model`` with its estimated model replaced by ``core`` (same wrappers, schema)."""
    if isinstance(model, CompressedModel):
        new = CompressedModel(model.compression, _with_core(model.compressed, core))
    elif isinstance(model, RefinedModel):
        new = RefinedModel(model.refinement, _with_core(model.split, core))
    else:
        new = core
    new.schema = model.schema
    return new


def _rows(model: Model, attrs: tuple[str, ...], squares: _LeastSquares
          ) -> np.ndarray | None:
    """Each cell of the marginal as a linear function of the measured tables (rows, in
    the least-squares basis of ``squares``), through the wrappers' own maps: a compressed
    value is its code's cell times its share; a refined bin sums its digits' cells. None
    where a measured clique does not hold the marginal."""
    if isinstance(model, CompressedModel):
        inner = _rows(model.compressed, attrs, squares)
        if inner is None:
            return None
        grid = np.indices(model.domain.project(attrs).shape).reshape(len(attrs), -1)
        codes = [model.compression.mappings[a][grid[i]] for i, a in enumerate(attrs)]
        cell = np.ravel_multi_index(codes, model.compressed.domain.project(attrs).shape)
        share = np.prod([model.compression.shares(a)[grid[i]] for i, a in enumerate(attrs)],
                        axis=0)
        return share[:, None] * inner[cell]
    if isinstance(model, RefinedModel):
        digits = model.refinement.digits(attrs)
        inner = _rows(model.split, digits, squares)
        if inner is None:
            return None
        shape = model.split.domain.project(digits).shape
        size = int(np.prod(shape))
        joining = model.refinement.joined(attrs, np.eye(size).reshape(*shape, size))
        return joining.reshape(-1, size) @ inner
    return squares.rows(attrs)


def _bound_variance(model: Model, attrs: tuple[str, ...],
                    residuals: Mapping[frozenset[str], float] | None = None
                    ) -> np.ndarray | None:
    """Each cell's variance, through the wrappers' maps, where the least-squares
    covariance is not decomposed: exact where every measurement answers a residual
    (``residuals``, their variances by subset: the least-squares estimate is their
    reconstruction, :mod:`dpgm.residuals`), else an upper bound (for models too large for
    the decomposition): the direct measurements' combination."""
    if isinstance(model, CompressedModel):
        variance = _bound_variance(model.compressed, attrs, residuals)
        if variance is None:
            return None
        shares = {a: model.compression.shares(a) ** 2 for a in attrs}
        return model.spread(attrs, variance, shares)
    if isinstance(model, RefinedModel):
        digits = model.refinement.digits(attrs)
        variance = _bound_variance(model.split, digits, residuals)
        # a sum of cells: the sum of their bounds' standard errors squared bounds it
        return None if variance is None else np.square(
            model.refinement.joined(attrs, np.sqrt(variance)))
    if residuals is not None:
        variance = marginal_variance(model.domain, attrs, residuals)
        return None if variance is None else np.full(model.domain.project(attrs).shape,
                                                     variance)
    return _direct_variance_bound(model.measured.measurements, model.domain, attrs)


class _LeastSquares:
    """The constrained least-squares fit of a model's measured tables, decomposed once:
    the measured cliques (none inside another), where each one's cells sit, a basis of
    the tables that agree on every overlap and keep the zeros, and the information of the
    measurements in that basis (eigenvalues and eigenvectors)."""

    def __init__(self, model: MarkovRandomField):
        fit = model.measured
        self.domain = domain = model.domain
        cliques: list[tuple[str, ...]] = []
        for m in sorted(fit.measurements, key=lambda m: -len(m.clique)):
            if not any(set(m.clique) <= set(c) for c in cliques):
                cliques.append(m.clique)
        self.cliques = cliques
        sizes = [domain.size(c) for c in cliques]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
        cells = int(self.offsets[-1])
        self.too_large = cells > GLS_CELLS
        if self.too_large:
            return
        information = np.zeros((cells, cells))
        for m in fit.measurements:
            k = self.home(m.clique)
            design = _summing(domain, cliques[k], m.clique)
            if m.query is not None:
                design = dense_query(m.query) @ design
            weights = np.broadcast_to(1.0 / np.square(m.std), m.values.shape)
            span = slice(self.offsets[k], self.offsets[k + 1])
            information[span, span] += design.T @ (weights[:, None] * design)
        # the constraints C x = 0, gathered as CᵀC (cells × cells, however many rows):
        # tables agree where they share attributes, their totals agree (one chain links
        # every clique to the first), and structural zeros stay zero
        gram = np.zeros((cells, cells))

        def constrain(rows: np.ndarray) -> None:
            gram[...] += rows.T @ rows

        for i in range(len(cliques)):
            for j in range(i + 1, len(cliques)):
                shared = [a for a in cliques[i] if a in cliques[j]]
                if shared:
                    constrain(self.block(i, _summing(domain, cliques[i], shared))
                              - self.block(j, _summing(domain, cliques[j], shared)))
            if i:
                constrain(self.block(0, _summing(domain, cliques[0], []))
                          - self.block(i, _summing(domain, cliques[i], [])))
        for zero in fit.zeros:
            if any(set(zero.attrs) <= set(c) for c in cliques):
                k = self.home(zero.attrs)
                constrain(self.block(k, _summing(domain, cliques[k], zero.attrs)[
                    np.ravel(zero.mask)]))
        # the null space of C: the eigenvectors of CᵀC with eigenvalue 0
        values, vectors = np.linalg.eigh(gram)
        self.free = vectors[:, values <= 1e-9 * max(values.max(initial=0.0), 1.0)]
        self.values, self.vectors = np.linalg.eigh(self.free.T @ information @ self.free)
        self.seen = self.values > 1e-10 * max(self.values.max(initial=0.0), 1e-300)

    def home(self, inner: Sequence[str]) -> int:
        return next(k for k, c in enumerate(self.cliques) if set(inner) <= set(c))

    def block(self, k: int, rows: np.ndarray) -> np.ndarray:
        full = np.zeros((rows.shape[0], self.offsets[-1]))
        full[:, self.offsets[k]:self.offsets[k + 1]] = rows
        return full

    def rows(self, attrs: tuple[str, ...]) -> np.ndarray | None:
        """The marginal's cells as rows in the basis of the decomposition (None where no
        measured clique holds ``attrs``)."""
        if not any(set(attrs) <= set(c) for c in self.cliques):
            return None
        k = self.home(attrs)
        return self.block(k, _summing(self.domain, self.cliques[k], attrs)) @ (
            self.free @ self.vectors)

    def variance(self, rows: np.ndarray) -> np.ndarray | None:
        """Each row's variance; None where a row has a part in a direction no measurement
        sees (a merged value's share of its code, say)."""
        if np.abs(rows[:, ~self.seen]).max(initial=0.0) > 1e-8 * np.abs(rows).max(
                initial=1.0):
            return None
        return np.maximum(np.sum(rows[:, self.seen] ** 2 / self.values[self.seen], axis=1),
                          0.0)


#: each model's decomposed least-squares fit, made on its first error bar
_FITS: WeakKeyDictionary = WeakKeyDictionary()


def _direct_variance_bound(measurements: Sequence[Measurement], domain, attrs: tuple[str, ...]
                           ) -> np.ndarray | None:
    """The variance of the inverse-variance combination of the identity measurements
    holding ``attrs``, each summed down to them: an upper bound of the least-squares
    one, which also draws on overlapping measurements (for models too large for it)."""
    precision = None
    for m in measurements:
        if m.query is not None or not set(attrs) <= set(m.clique):
            continue
        variance = np.broadcast_to(np.square(m.std), m.values.shape)
        summed = _summing(domain, m.clique, attrs) @ variance
        precision = 1.0 / summed if precision is None else precision + 1.0 / summed
    return None if precision is None else (1.0 / precision).reshape(domain.project(attrs).shape)


def _summing(domain, clique: Sequence[str], attrs: Sequence[str]) -> np.ndarray:
    """The 0/1 matrix that sums a table on ``clique`` (flattened) down to ``attrs`` (in
    that order; one row, the total, for none)."""
    shape = domain.project(clique).shape
    index = np.indices(shape).reshape(len(shape), -1)
    target = np.ravel_multi_index([index[list(clique).index(a)] for a in attrs],
                                  domain.project(attrs).shape) if attrs else np.zeros(
        index.shape[1], dtype=np.int64)
    matrix = np.zeros((domain.size(attrs) if attrs else 1, index.shape[1]))
    matrix[target, np.arange(index.shape[1])] = 1.0
    return matrix


def _bootstrap(model: Model, core: MarkovRandomField, marginals: list[tuple[str, ...]],
               given: Mapping[str, object] | None, replicates: int,
               rng: np.random.Generator, reporter: Reporter) -> list[np.ndarray]:
    """The spread of the marginals over models estimated from measurements drawn again."""
    fit = core.measured
    estimator = ESTIMATORS.get(fit.estimator)
    if estimator is None:
        raise ParameterError(f"no estimator {fit.estimator!r} is registered to estimate "
                             "the model again")
    options = dict(fit.options)
    options["iters"] = min(options.get("iters", BOOTSTRAP_ITERS), BOOTSTRAP_ITERS)
    if options.get("inference", "exact") == "exact":
        options["warm_start"] = core  # from the fit, which the noise moves little
    expected = [(m, m.answer(core.marginal(m.clique))) for m in fit.measurements]
    step = reporter.steps(replicates, "bootstrap replicates")
    answers: list[list[np.ndarray]] = [[] for _ in marginals]
    for replicate in range(1, replicates + 1):
        noisy = [Measurement(m.clique, mean + rng.standard_normal(mean.shape) * m.std,
                             m.std, m.query) for m, mean in expected]
        again = _with_core(model, estimator(core.domain, noisy, zeros=fit.zeros, **options))
        for found, attrs in zip(answers, marginals):
            found.append(again.marginal(attrs, given=given))
        step(replicate, None)
    return [np.std(np.stack(found), axis=0, ddof=1) for found in answers]
