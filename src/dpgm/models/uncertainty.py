"""Error bars: the standard error of a model's marginal, from the noise of the measurements
it was estimated from (post-processing of the release: free, no data read).

A model estimated from noisy measurements (Private-PGM; MST, AIM and the other mechanisms
that measure marginals) keeps them and its estimator's settings
(:class:`~dpgm.measurement.MeasuredFit`). Two ways give the standard error of each cell
of a marginal it answers:

* **analytic**, where a measured clique holds the marginal's attributes: the covariance
  of the least-squares estimate of the measured cliques' tables from all the
  measurements, the tables held consistent with one another on every overlap and with
  the structural zeros (generalised least squares under linear constraints), summed
  down to the marginal. Where the estimate keeps every cell positive, this is the
  estimate Private-PGM's L2 fit makes of those tables, so the error is exact up to the
  noisy total; where cells are clipped at zero, it is an upper bound. Models with more
  than :data:`GLS_CELLS` measured cells use the inverse-variance combination of the
  direct measurements alone, a larger bound;
* **bootstrap**, otherwise: the measurements are drawn again around the model's own
  answers with the same noise (Gaussian, with the recorded standard deviations), the
  model is estimated again from them (warm-started from the fit, with the fit's
  settings), and the spread of the marginal over the replicates is its standard error.

Models that wrap an estimated model (a compressed domain, refined bins) pass the error on
through their own mapping. Other models — a Bayesian network from noisy tables, a model
read from a file without measurements — keep no measurements and give no error bars.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from dpgm._refit import ESTIMATORS
from dpgm.errors import ParameterError
from dpgm.measurement import KroneckerQuery, Measurement
from dpgm.models.compression import CompressedModel
from dpgm.models.markov_random_field import MarkovRandomField
from dpgm.models.refinement import RefinedModel
from dpgm.progress import ProgressLike, Reporter
from dpgm.random import RngLike, as_generator
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
    model,
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
    one_of("method", method, METHODS)
    replicates = integer("replicates", replicates, least=2)
    attrs = model.domain.check(attrs)
    core = _core(model)
    if core is None:
        raise ParameterError(
            f"this {type(model).__name__} keeps no measurements, so it has no error bars: "
            "they come with models estimated from noisy marginals (Private-PGM: mst, aim, "
            "mwem, …), fitted with this version of dpgm")
    if method != "bootstrap" and not given:
        variance = _direct_variance(model, attrs)
        if variance is not None:
            return np.sqrt(variance)
        if method == "analytic":
            raise ParameterError(
                f"the marginal on {list(attrs)} was not measured directly: its error comes "
                "from the bootstrap (method='bootstrap' or 'auto')")
    elif method == "analytic":
        raise ParameterError("a conditional marginal's error comes from the bootstrap")
    return _bootstrap(model, core, attrs, given, replicates, as_generator(rng),
                      Reporter(progress))


def has_error_bars(model) -> bool:
    """Whether ``model`` keeps the measurements its error bars come from."""
    return _core(model) is not None


def _core(model) -> MarkovRandomField | None:
    """The estimated model inside ``model`` that keeps its measurements, or None."""
    if isinstance(model, CompressedModel):
        return _core(model.compressed)
    if isinstance(model, RefinedModel):
        return _core(model.split)
    if isinstance(model, MarkovRandomField) and model.measured is not None:
        return model
    return None


def _with_core(model, core: MarkovRandomField):
    """``model`` with its estimated model replaced by ``core`` (same wrappers, schema)."""
    if isinstance(model, CompressedModel):
        new = CompressedModel(model.compression, _with_core(model.compressed, core))
    elif isinstance(model, RefinedModel):
        new = RefinedModel(model.refinement, _with_core(model.split, core))
    else:
        new = core
    new.schema = model.schema
    return new


def _direct_variance(model, attrs: tuple[str, ...]) -> np.ndarray | None:
    """Each cell's variance where the marginal was measured directly (None where not),
    through the wrappers' own maps: a compressed value's count is spread by fixed shares
    (variance × share²), a refined bin is the sum of its digits' cells."""
    if isinstance(model, CompressedModel):
        variance = _direct_variance(model.compressed, attrs)
        if variance is None:
            return None
        shares = {a: model.compression.shares(a) ** 2 for a in attrs}
        return model.spread(attrs, variance, shares)
    if isinstance(model, RefinedModel):
        digits = model.refinement.digits(attrs)
        variance = _direct_variance(model.split, digits)
        return None if variance is None else model.refinement.joined(attrs, variance)
    return _measured_variance(model, attrs)


def _measured_variance(model: MarkovRandomField, attrs: tuple[str, ...]) -> np.ndarray | None:
    """Each cell's variance of the least-squares estimate of the measured cliques' tables,
    held consistent with one another (and with the structural zeros), on ``attrs``; None
    where no measurement holds ``attrs`` or the tables are not all identified."""
    fit = model.measured
    domain = model.domain
    if not any(set(attrs) <= set(m.clique) for m in fit.measurements):
        return None
    cliques: list[tuple[str, ...]] = []  # the largest measured cliques, none inside another
    for m in sorted(fit.measurements, key=lambda m: -len(m.clique)):
        if not any(set(m.clique) <= set(c) for c in cliques):
            cliques.append(m.clique)
    sizes = [domain.size(c) for c in cliques]
    if sum(sizes) > GLS_CELLS:
        return _direct_variance_bound(fit.measurements, domain, attrs)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(int)

    def home(inner: Sequence[str]) -> int:
        return next(k for k, c in enumerate(cliques) if set(inner) <= set(c))

    def block(k: int, rows: np.ndarray) -> np.ndarray:
        full = np.zeros((rows.shape[0], offsets[-1]))
        full[:, offsets[k]:offsets[k + 1]] = rows
        return full

    information = np.zeros((offsets[-1], offsets[-1]))
    for m in fit.measurements:
        k = home(m.clique)
        design = _summing(domain, cliques[k], m.clique)
        if m.query is not None:
            design = _dense(m.query) @ design
        weights = np.broadcast_to(1.0 / np.square(m.std), m.values.shape)
        span = slice(offsets[k], offsets[k + 1])
        information[span, span] += design.T @ (weights[:, None] * design)
    constraints = []
    for i in range(len(cliques)):  # consistent on every overlap (the total where none)
        for j in range(i + 1, len(cliques)):
            shared = [a for a in cliques[i] if a in cliques[j]]
            constraints.append(block(i, _summing(domain, cliques[i], shared))
                               - block(j, _summing(domain, cliques[j], shared)))
    for zero in fit.zeros:  # structural zeros stay zero
        if any(set(zero.attrs) <= set(c) for c in cliques):
            k = home(zero.attrs)
            constraints.append(block(k, _summing(domain, cliques[k], zero.attrs)[
                np.ravel(zero.mask)]))
    free = np.eye(offsets[-1])
    if constraints:
        from scipy.linalg import null_space

        free = null_space(np.vstack(constraints))
    values, vectors = np.linalg.eigh(free.T @ information @ free)
    seen = values > 1e-10 * max(values.max(initial=0.0), 1e-300)
    k = home(attrs)
    answer = block(k, _summing(domain, cliques[k], attrs)) @ free @ vectors
    # the marginal's cells must be told by the measurements: no part of them in a
    # direction no measurement sees (a merged value's share of its code, say)
    if np.abs(answer[:, ~seen]).max(initial=0.0) > 1e-8 * np.abs(answer).max(initial=1.0):
        return None
    variance = np.sum(answer[:, seen] ** 2 / values[seen], axis=1)
    return np.maximum(variance, 0.0).reshape(domain.project(attrs).shape)


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


def _dense(query) -> np.ndarray:
    """A query matrix (dense, sparse or Kronecker) as a dense array (small cliques only)."""
    if hasattr(query, "toarray"):
        return query.toarray()
    if isinstance(query, KroneckerQuery):
        return query.dense()
    return np.asarray(query, dtype=np.float64)


def _bootstrap(model, core: MarkovRandomField, attrs: tuple[str, ...],
               given: Mapping[str, object] | None, replicates: int,
               rng: np.random.Generator, reporter: Reporter) -> np.ndarray:
    """The spread of the marginal over models estimated from measurements drawn again."""
    fit = core.measured
    estimator = ESTIMATORS.get(fit.estimator)
    if estimator is None:
        raise ParameterError(f"no estimator {fit.estimator!r} is registered to estimate "
                             "the model again")
    options = dict(fit.options)
    if options.get("inference", "exact") == "exact":
        # from the fit, which the noise moves little: fewer iterations reach the new optimum
        options["warm_start"] = core
        options["iters"] = min(options.get("iters", BOOTSTRAP_ITERS), BOOTSTRAP_ITERS)
    expected = [(m, m.answer(core.marginal(m.clique))) for m in fit.measurements]
    step = reporter.steps(replicates, "bootstrap replicates")
    answers = []
    for replicate in range(1, replicates + 1):
        noisy = [Measurement(m.clique, mean + rng.standard_normal(mean.shape) * m.std,
                             m.std, m.query) for m, mean in expected]
        again = estimator(core.domain, noisy, zeros=fit.zeros, **options)
        answers.append(_with_core(model, again).marginal(attrs, given=given))
        step(replicate, None)
    return np.std(np.stack(answers), axis=0, ddof=1)
