"""The reference points of Bernstein et al.'s comparisons (§4.1): not private, or not
learned from the data at all. For experiments only, never for a release.

* :func:`nonprivate_mle` reads the exact clique tables of the data: the floor a private
  learner approaches as ε grows (the paper's "non-private MLE"; a tiny penalty makes it
  exist where a table has zero cells).
* :func:`dirichlet_baseline` ignores the data: clique marginals drawn from Dirichlet(1)
  and fitted by naive MLE (the paper's "random estimator"; the reading B3 of
  docs/notes/cgm.md, §2.6).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpgm.cgm.naive import Tying, naive_mle
from dpgm.dataset import Dataset, require_dataset
from dpgm.domain import Domain
from dpgm.models.markov_random_field import MarkovRandomField
from dpgm.random import RngLike, as_generator
from dpgm.validation import positive


def nonprivate_mle(
    data: Dataset, cliques: Sequence[Sequence[str]], *, penalty: float = 1e-6,
    tying: Tying | None = None,
) -> MarkovRandomField:
    """The maximum-likelihood model on ``cliques`` from the data's exact tables (NOT
    private); ``tying`` as in :func:`~dpgm.cgm.naive.naive_mle`."""
    data = require_dataset(data)
    tables = {tuple(c): data.marginal(c) for c in cliques}
    return naive_mle(data.domain, tables, float(data.total), penalty=penalty, tying=tying)


def dirichlet_baseline(
    domain: Domain,
    cliques: Sequence[Sequence[str]],
    total: float,
    rng: RngLike = None,
    *,
    penalty: float = 1.0,
    tying: Tying | None = None,
) -> MarkovRandomField:
    """A model on ``cliques`` fitted by naive MLE to random tables: each clique's
    marginal drawn from Dirichlet(1, ..., 1), scaled to ``total`` (no data read)."""
    total = positive("total", total)
    generator = as_generator(rng)
    tables = {}
    for clique in cliques:
        shape = domain.project(clique).shape
        tables[tuple(clique)] = total * generator.dirichlet(np.ones(int(np.prod(shape)))).reshape(
            shape)
    return naive_mle(domain, tables, total, penalty=penalty, tying=tying)
