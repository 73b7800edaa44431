"""Noisy marginals of a sensitive dataset: the one place where estimation inputs are made.

Neighbouring datasets differ by adding or removing one record (unbounded DP). One record
(of weight at most 1) changes a marginal's count vector by at most 1 in one cell, so a
marginal has L1 and L2 sensitivity 1, and k marginals measured together have L1
sensitivity k and L2 sensitivity √k. Hence:

* ``epsilon``: Laplace noise of scale b = k/ε per cell is ε-DP (each marginal is (1/b)-DP);
* ``rho``: Gaussian noise of std σ = sqrt(k/(2ρ)) per cell is ρ-zCDP (each is 1/(2σ²)-zCDP).

With ``weights`` w (normalised to sum 1) marginal i gets ε·w_i or ρ·w_i of the budget:
b_i = 1/(ε·w_i), σ_i = 1/sqrt(2ρ·w_i); the totals are still ε and ρ.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from dpgm.dataset import Dataset, require_dataset, require_records
from dpgm.errors import DataError, ParameterError, PrivacyParameterError
from dpgm.measurement import KroneckerQuery, Measurement, is_integral, is_sparse
from dpgm.privacy.budget import PrivacyBudget
from dpgm.privacy.noise import gaussian_noise, laplace_noise
from dpgm.privacy.policy import check_epsilon
from dpgm.random import as_generator
from dpgm.validation import integer


def laplace_scale(epsilon: float, k: int = 1) -> float:
    """Laplace scale b = k/ε that makes k marginals (sensitivity 1 each) ε-DP together."""
    return integer("k", k, least=1) / check_epsilon(epsilon)


def gaussian_sigma(rho: float, k: int = 1) -> float:
    """Gaussian std σ = sqrt(k/(2ρ)) that makes k marginals (L2 sensitivity √k) ρ-zCDP."""
    return math.sqrt(integer("k", k, least=1) / (2.0 * check_epsilon(rho, "rho")))


def _shares(weights: Sequence[float] | None, k: int) -> np.ndarray:
    """Each clique's share of the budget: ``weights`` normalised, or 1/k each."""
    if weights is None:
        return np.full(k, 1.0 / k)
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (k,):
        raise PrivacyParameterError(
            f"weights must have one entry per clique ({k}), got shape {w.shape}"
        )
    if not np.all(np.isfinite(w)) or np.any(w <= 0):
        # a zero share would mean infinite noise: drop the clique instead
        raise PrivacyParameterError(f"weights must be finite and > 0, got {w.tolist()}")
    return w / w.sum()


def _cliques(data: Dataset, cliques: Iterable[Iterable[str]]) -> list[tuple[str, ...]]:
    if isinstance(cliques, str):
        raise ParameterError(
            f"cliques must be a list of attribute tuples, got the string {cliques!r}"
        )
    checked = [data.domain.check(clique) for clique in cliques]  # DomainError if unknown
    if not checked:
        raise ParameterError("no cliques to measure")
    return checked


def _check_data(data: Dataset) -> None:
    require_dataset(data)
    # A weight above 1 would let one record move a count by more than 1 (sensitivity > 1).
    # This is a check of the input's form, made before charging so a bad call costs nothing.
    weights = getattr(data, "weights", None)  # a counting engine checks its own weights
    if weights is not None and weights.size and weights.max() > 1.0:
        raise DataError(
            "record weights must be at most 1 for measurement (a larger weight lets one "
            "record change a count by more than 1); rescale the weights"
        )


def _charge(budget: PrivacyBudget | None, epsilon, rho, label: str) -> None:
    if budget is not None:
        if rho is None:
            budget.charge(epsilon=epsilon, label=label)
        else:
            budget.charge(rho=rho, label=label)


def query_sensitivity(query, ord: int) -> float:
    """Largest column ℓ1 (``ord=1``) or ℓ2 (``ord=2``) norm of a query matrix.

    One record adds one column of ``Q`` to ``Q μ``, so this bounds the change of the answers.
    """
    if isinstance(query, KroneckerQuery):
        return query.norm(ord)
    if is_sparse(query):
        column = abs(query).power(ord).sum(axis=0)
    else:
        column = (np.abs(np.asarray(query, dtype=np.float64)) ** ord).sum(axis=0)
    return float(np.asarray(column).max() ** (1.0 / ord))


def measure_linear(
    data: Dataset,
    clique: Iterable[str],
    query,
    *,
    epsilon: float | None = None,
    rho: float | None = None,
    budget: PrivacyBudget | None = None,
    rng: np.random.Generator | int | None = None,
    label: str = "",
) -> Measurement:
    """Answer ``query @ vec(marginal on clique)`` with noise, spending ``epsilon`` or ``rho``.

    ``query`` is a dense, scipy-sparse or :class:`KroneckerQuery` matrix over the clique's
    cells (C order, attributes as given). Laplace noise of scale ``‖Q‖₁/ε`` (largest column
    ℓ1 norm) is ε-DP; Gaussian noise of std ``‖Q‖₂/sqrt(2ρ)`` is ρ-zCDP. The budget is
    charged before the data are read; ``rng`` as in :func:`measure_marginals`.
    """
    if (epsilon is None) == (rho is None):
        raise PrivacyParameterError("give exactly one of epsilon (Laplace) or rho (Gaussian)")
    total = check_epsilon(epsilon) if rho is None else check_epsilon(rho, "rho")
    _check_data(data)
    (clique,) = _cliques(data, [clique])
    cells = data.domain.size(clique)
    if query.shape[1] != cells:
        raise ParameterError(
            f"query has {query.shape[1]} columns, the clique {clique} {cells} cells"
        )
    sensitivity = query_sensitivity(query, 1 if rho is None else 2)
    if not sensitivity > 0:
        raise ParameterError("the query is all zeros: nothing to measure")
    _charge(budget, epsilon, rho, label or f"linear query on {clique}")
    gen = None if rng is None else as_generator(rng)
    # public facts only: unweighted counts times an integral query are integers
    discrete = not data.weighted and is_integral(query)
    answers = np.asarray(query @ data.marginal(clique).ravel(), dtype=np.float64).ravel()
    if rho is None:
        scale = sensitivity / total
        noisy = laplace_noise(answers, scale, gen, discrete=discrete)
        return Measurement(clique, noisy, math.sqrt(2.0) * scale, query)
    std = sensitivity / math.sqrt(2.0 * total)
    return Measurement(clique, gaussian_noise(answers, std, gen, discrete=discrete), std, query)


def measure_marginals(
    data: Dataset,
    cliques: Iterable[Iterable[str]],
    *,
    epsilon: float | None = None,
    rho: float | None = None,
    budget: PrivacyBudget | None = None,
    rng: np.random.Generator | int | None = None,
    weights: Sequence[float] | None = None,
    label: str = "",
) -> list[Measurement]:
    """Measure each clique's marginal of ``data`` with noise, spending ``epsilon`` or ``rho``.

    Exactly one of ``epsilon`` (Laplace, ε-DP) or ``rho`` (Gaussian, ρ-zCDP) is given; it is
    the total for all cliques, split evenly or by ``weights``. A ``budget`` is charged
    before the data are read, so an overspend raises BudgetExceededError having touched
    nothing. ``rng=None`` draws exact noise (for releases); a seed or generator gives
    reproducible NumPy noise (for research only). Returns one identity-query
    :class:`Measurement` per clique, in the order given, with its noise std.
    """
    if (epsilon is None) == (rho is None):
        raise PrivacyParameterError("give exactly one of epsilon (Laplace) or rho (Gaussian)")
    total = check_epsilon(epsilon) if rho is None else check_epsilon(rho, "rho")
    _check_data(data)
    cliques = _cliques(data, cliques)
    shares = _shares(weights, len(cliques))
    _charge(budget, epsilon, rho, label or f"{len(cliques)} marginal(s)")

    # One generator for all cliques, so that a seed reproduces the whole call.
    gen = None if rng is None else as_generator(rng)
    # a public fact, never read off the counts: unweighted records give integer counts
    discrete = not data.weighted
    measurements = []
    # every table in one pass over the data where the engine can (DuckDB's GROUPING SETS)
    for clique, share, counts in zip(cliques, shares, data.marginals(cliques), strict=True):
        if rho is None:
            scale = 1.0 / (total * share)
            noisy = laplace_noise(counts, scale, gen, discrete=discrete)
            std = math.sqrt(2.0) * scale
        else:
            std = 1.0 / math.sqrt(2.0 * total * share)
            noisy = gaussian_noise(counts, std, gen, discrete=discrete)
        measurements.append(Measurement(clique, noisy.ravel(), std))
    return measurements


def measure_per_individual(
    data: Dataset,
    individuals: np.ndarray,
    cliques: Iterable[Iterable[str]],
    *,
    epsilon: float,
    budget: PrivacyBudget | None = None,
    rng: np.random.Generator | int | None = None,
    ignore: Mapping[str, int] | None = None,
    label: str = "",
) -> list[Measurement]:
    """ε-DP marginals when the unit of privacy is an individual who owns several records.

    ``individuals[i]`` names the owner of record i. In each clique's table, an
    individual's records weigh 1/κ each, κ their number of records in that table (He et
    al. 2015), so that adding or removing an individual moves each table by at most 1 in
    L1: the k tables together have sensitivity k, and Laplace noise of scale k/ε per cell
    is ε-DP for neighbours that differ in one individual. ``ignore`` ({attribute: value})
    leaves out of a table the records whose attributes of the clique all take their
    ignored value (e.g. "not connected" at both ends of a wifi transition); they count
    neither in the table nor in κ.
    """
    epsilon = check_epsilon(epsilon)
    _check_data(data)
    data = require_records(data)
    if data.weights is not None:
        raise DataError("per-individual measurement weighs records itself: give unweighted data")
    cliques = _cliques(data, cliques)
    owners = np.asarray(individuals)
    if owners.shape != (len(data),):  # the count itself is never shown
        raise DataError("individuals must name the owner of each record, in order")
    ignore = dict(ignore or {})
    for attr in ignore:
        data.domain.check([attr])
    _charge(budget, epsilon, None, label or f"{len(cliques)} per-individual marginal(s)")
    gen = None if rng is None else as_generator(rng)
    _, owner = np.unique(owners, return_inverse=True)
    scale = len(cliques) / epsilon
    measurements = []
    for clique in cliques:
        columns = data.records[:, list(data.domain.axes(clique))]
        ignored = [a for a in clique if a in ignore]
        counted = np.ones(len(data), dtype=bool)
        if len(ignored) == len(clique):  # every attribute of the clique has an ignored value
            counted = ~np.all(columns == np.array([ignore[a] for a in clique]), axis=1)
        kappa = np.bincount(owner[counted], minlength=owner.max(initial=-1) + 1)
        weights = np.where(counted, 1.0 / np.maximum(kappa[owner], 1), 0.0)
        counts = Dataset(data.records, data.domain, weights).marginal(clique)
        noisy = laplace_noise(counts, scale, gen)
        measurements.append(Measurement(clique, noisy.ravel(), math.sqrt(2.0) * scale))
    return measurements


def measure_record_count(
    data: Dataset,
    budget: PrivacyBudget | None,
    rng: np.random.Generator | None,
    *,
    epsilon: float | None = None,
    rho: float | None = None,
    label: str = "record count",
) -> Measurement:
    """The record count with noise, charged to ``budget`` (``epsilon`` or ``rho`` of it)
    under ``label``.

    Under add/remove DP the count is private. It is one linear query, the all-ones row on
    the first attribute's marginal (sensitivity 1): one scalar has the least noise.
    """
    first = data.domain.attrs[0]
    return measure_linear(
        data,
        (first,),
        np.ones((1, data.domain[first])),
        epsilon=epsilon,
        rho=rho,
        budget=budget,
        rng=rng,
        label=label,
    )
