"""Utility of synthetic data and of models: errors on marginals between two data sets, and
the KL divergence between two models (no privacy spent).

Evaluation reads the real data without noise: it is for the data steward's own checks
and for experiments, never for a release.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import combinations

import numpy as np

from dpgm.dataset import CountingSource, Dataset
from dpgm.errors import DataError, DomainError
from dpgm.models.markov_random_field import MarkovRandomField


def tv_distance(p: np.ndarray, q: np.ndarray) -> float:
    """Total variation distance ½‖p/Σp − q/Σq‖₁ between two count tables."""
    p = np.asarray(p, dtype=np.float64).ravel()
    q = np.asarray(q, dtype=np.float64).ravel()
    sp, sq = p.sum(), q.sum()
    if sp <= 0 or sq <= 0:
        raise DataError("cannot compare an empty table")
    return 0.5 * float(np.abs(p / sp - q / sq).sum())


#: the most cells of marginals :func:`marginal_errors` holds at once (8 bytes each)
BATCH_CELLS = 2**22


def marginal_errors(
    real: CountingSource, synthetic, cliques: Iterable[Sequence[str]]
) -> dict[tuple[str, ...], float]:
    """TV distance on each clique; ``real`` is any counting source (records in memory or
    on an engine), ``synthetic`` one too or a model with ``marginal``."""
    if isinstance(synthetic, CountingSource) and synthetic.domain != real.domain:
        raise DomainError("the two data sets have different domains")
    errors: dict[tuple[str, ...], float] = {}
    # many cliques per call (one pass over the records on a counting engine), in batches
    # of at most BATCH_CELLS cells so that the tables held at once stay small
    for batch in _batches([tuple(c) for c in cliques], real.domain.size, BATCH_CELLS):
        truth = real.marginals(batch)
        guess = (synthetic.marginals(batch) if isinstance(synthetic, CountingSource)
                 else [synthetic.marginal(c) for c in batch])
        errors.update((c, tv_distance(t, g)) for c, t, g in zip(batch, truth, guess,
                                                                strict=True))
    return errors


def _batches(cliques: list[tuple[str, ...]], size, cap: int) -> Iterator[list[tuple[str, ...]]]:
    """``cliques`` in order, in runs of at most ``cap`` cells (a larger clique alone)."""
    batch: list[tuple[str, ...]] = []
    cells = 0
    for clique in cliques:
        if batch and cells + size(clique) > cap:
            yield batch
            batch, cells = [], 0
        batch.append(clique)
        cells += size(clique)
    if batch:
        yield batch


def sample_rows(count: int, cap: int, rng: np.random.Generator) -> np.ndarray:
    """The rows a check reads: all ``count`` of them, or a seeded sample of ``cap`` in
    their order."""
    if count <= cap:
        return np.arange(count)
    return np.sort(rng.choice(count, cap, replace=False))


def mean_tv(real: Dataset, synthetic, ways: int) -> float:
    """Mean TV distance over all ``ways``-way marginals."""
    cliques = list(combinations(real.domain.attrs, ways))
    return float(np.mean(list(marginal_errors(real, synthetic, cliques).values())))


def kl_divergence(p: MarkovRandomField, q: MarkovRandomField) -> float:
    """KL(p ‖ q) = Σ_x p(x) log(p(x)/q(x)) of two models on the same domain, exactly,
    without the joint table: Σ_C ⟨p_C, θ_C⟩ − log Z_p over p's cliques minus the same
    with q's potentials and p's marginals on q's cliques, plus log Z_q (their totals are
    ignored: the models are compared as distributions). Infinite where q gives
    probability zero to a cell p does not."""
    if p.domain != q.domain:
        raise DomainError("the two models have different domains")

    def expected(model: MarkovRandomField) -> float:
        """E_p[Σ_C θ_C(x_C)] for ``model``'s potentials θ."""
        value = 0.0
        for clique, factor in model.potentials.items():
            mu = p.marginal(clique) / p.total
            if np.any((mu > 0) & np.isneginf(factor.values)):
                return -np.inf  # p puts mass where the model has none
            seen = mu > 0  # only those cells: 0·(−inf) would be nan (and warn)
            value += float(np.sum(mu[seen] * np.broadcast_to(factor.values, mu.shape)[seen]))
        return value

    cross = expected(q)
    if cross == -np.inf:
        return float("inf")
    return max(expected(p) - p.log_partition - cross + q.log_partition, 0.0)
