"""Private answers to the questions a schema asks: which labels occur, where values lie.

Neighbouring datasets differ by adding or removing one record; each record holds one
value of the column asked about.

* :func:`private_labels` — partition selection (the stability histogram of Korolova et
  al. 2009 / Bun, Nissim & Stemmer 2016): each distinct value's count gets discrete
  Laplace noise of scale 1/ε and is kept when the noisy count reaches
  τ = 1 + ⌈ln(1/δ)/ε⌉. Only the kept values are released (sorted, never their counts).
  Values in both neighbours: ε-DP. A value held by the one differing record alone is
  released with probability P(Z ≥ τ − 1) ≤ e^{−ε(τ−1)} ≤ δ. So (ε, δ)-DP.
* :func:`private_range` — a histogram over public bins (geometric for numbers) with
  discrete Laplace noise of scale 1/ε (one record changes one count by 1): ε-DP; the
  range from the first to the last bin whose noisy count is clearly above noise is
  post-processing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from dpgm.privacy.budget import PrivacyBudget
from dpgm.privacy.noise import laplace_noise
from dpgm.privacy.policy import check_epsilon, check_probability
from dpgm.random import RngLike


def selection_threshold(epsilon: float, delta: float) -> int:
    """The noisy count a value needs to be released by :func:`private_labels`."""
    return 1 + math.ceil(math.log(1.0 / delta) / epsilon)


def private_labels(
    values: Sequence[object],
    epsilon: float,
    delta: float,
    budget: PrivacyBudget,
    rng: RngLike = None,
    label: str = "labels",
) -> list[object]:
    """The distinct ``values`` whose noisy count reaches the threshold, sorted (see module).

    Charges (ε, δ) to ``budget`` (an :meth:`~PrivacyBudget.approximate` budget).
    """
    import pandas as pd

    epsilon = check_epsilon(epsilon)
    delta = check_probability("delta", delta)
    budget.charge(epsilon=epsilon, delta=delta, label=label)
    # keyed by type too: True, 1 and 1.0 are three values, not one counted three times
    keys = pd.Series(list(zip(map(type, values), values)), dtype=object)
    counts = keys.value_counts(dropna=True)
    if counts.empty:
        return []
    # record counts are whole numbers (unweighted): discrete Laplace, a public fact
    noisy = laplace_noise(counts.to_numpy(dtype=np.float64), 1.0 / epsilon, rng, discrete=True)
    kept = [key[1] for key, count in zip(counts.index, noisy) if count >= selection_threshold(
        epsilon, delta
    )]
    return sorted(kept, key=lambda v: (type(v).__name__, v))


def geometric_edges(per_octave: int = 4, smallest: float = 2.0**-10, largest: float = 2.0**40):
    """Public bin edges for bounds: 0 and ±2^(k/per_octave) between ``smallest`` and ``largest``."""
    low = round(math.log2(smallest) * per_octave)
    high = round(math.log2(largest) * per_octave)
    positive = 2.0 ** (np.arange(low, high + 1) / per_octave)
    return np.concatenate([-positive[::-1], [0.0], positive])


def range_threshold(epsilon: float, bins: int, failure: float = 0.01) -> float:
    """A noisy count above which a bin is taken to hold data: an empty bin's Laplace(1/ε)
    noise exceeds it with probability at most ``failure`` over all ``bins`` bins."""
    return math.log(bins / (2.0 * failure)) / epsilon


class Range(NamedTuple):
    """Public edges around the values; ``fallback``: no bin was clearly above noise, and
    the range is the bin with the largest noisy count."""

    lower: float
    upper: float
    fallback: bool


def private_range(
    values: np.ndarray,
    edges: np.ndarray,
    epsilon: float,
    budget: PrivacyBudget,
    rng: RngLike = None,
    label: str = "range",
) -> Range:
    """Public edges around where ``values`` lie, from a noisy histogram (ε-DP).

    The values are counted in the bins between the public ``edges`` (values outside go
    to the end bins); one record changes one count by 1, so discrete Laplace noise of
    scale 1/ε makes the histogram ε-DP. The range runs from the first to the last bin
    whose noisy count reaches :func:`range_threshold` (post-processing); where none
    does, it is the bin with the largest noisy count.
    """
    epsilon = check_epsilon(epsilon)
    grid = np.asarray(edges, dtype=np.float64)
    budget.charge(epsilon=epsilon, label=label)
    data = np.clip(np.asarray(values, dtype=np.float64), grid[0], grid[-1])
    bins = np.minimum(np.searchsorted(grid, data, side="right") - 1, grid.size - 2)
    counts = np.bincount(bins, minlength=grid.size - 1).astype(np.float64)
    noisy = laplace_noise(counts, 1.0 / epsilon, rng, discrete=True)
    held = np.flatnonzero(noisy >= range_threshold(epsilon, counts.size))
    fallback = held.size == 0
    if fallback:
        held = np.array([int(np.argmax(noisy))])
    return Range(float(grid[held[0]]), float(grid[held[-1] + 1]), fallback)
