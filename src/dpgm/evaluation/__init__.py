"""Utility of synthetic data: errors on marginals between two data sets (no privacy spent).

Evaluation reads the real data without noise: it is for the data steward's own checks
and for experiments, never for a release.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import combinations

import numpy as np

from dpgm.dataset import Dataset
from dpgm.errors import DataError, DomainError


def tv_distance(p: np.ndarray, q: np.ndarray) -> float:
    """Total variation distance ½‖p/Σp − q/Σq‖₁ between two count tables."""
    p = np.asarray(p, dtype=np.float64).ravel()
    q = np.asarray(q, dtype=np.float64).ravel()
    sp, sq = p.sum(), q.sum()
    if sp <= 0 or sq <= 0:
        raise DataError("cannot compare an empty table")
    return 0.5 * float(np.abs(p / sp - q / sq).sum())


def marginal_errors(
    real: Dataset, synthetic, cliques: Iterable[Sequence[str]]
) -> dict[tuple[str, ...], float]:
    """TV distance on each clique; ``synthetic`` is a Dataset or a model with ``marginal``."""
    if isinstance(synthetic, Dataset) and synthetic.domain != real.domain:
        raise DomainError("the two data sets have different domains")
    return {tuple(c): tv_distance(real.marginal(c), synthetic.marginal(c)) for c in cliques}


def mean_tv(real: Dataset, synthetic, ways: int) -> float:
    """Mean TV distance over all ``ways``-way marginals."""
    cliques = list(combinations(real.domain.attrs, ways))
    return float(np.mean(list(marginal_errors(real, synthetic, cliques).values())))
