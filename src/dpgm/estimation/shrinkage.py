"""Shrinking noisy residuals towards zero, band by band (post-processing).

A residual measurement (:mod:`dpgm.residuals`) answers ``z_B`` with independent Gaussian
noise of one known variance ``σ²`` on every entry. Where ``z_B`` is small against the
noise — attributes nearly independent given the lower-order residuals, or the fast
variation of a numeric attribute's smooth table — the noisy answer is mostly noise, and
the positive-part James–Stein estimate ``max(0, 1 − (k−2)σ²/‖y‖²)·y`` of a group of ``k ≥ 3``
entries has less expected squared error than ``y`` itself, whatever ``z_B`` is
(Stein 1956; James & Stein 1961).

The groups: the entries of one residual whose ordered attributes (cosine rows,
:func:`dpgm.residuals.ordered_basis`) lie in the same frequency band on each axis
(:func:`dpgm.residuals.frequency_bands`); an attribute without an order is one band.
Smooth signals keep their low bands nearly whole while the high bands, mostly noise,
shrink towards zero: the estimate adapts to how smooth each table is, and reads nothing
but the noisy answers and public facts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from dpgm.domain import Domain
from dpgm.measurement import Measurement
from dpgm.residuals import residual_subset

#: the fewest entries of a group that James–Stein shrinks (below three it cannot help)
SMALLEST_GROUP = 3


def band_shrinkage(values: np.ndarray, bands: np.ndarray, variance: float) -> np.ndarray:
    """``values`` (noise of ``variance`` on each) shrunk towards zero by the positive-part
    James–Stein factor of their band (``bands``: one integer per value)."""
    counts = np.bincount(bands)
    energy = np.bincount(bands, weights=values * values, minlength=counts.size)
    with np.errstate(divide="ignore", invalid="ignore"):
        factors = np.clip(1.0 - (counts - 2) * variance / energy, 0.0, 1.0)
    factors = np.where(counts >= SMALLEST_GROUP, np.nan_to_num(factors), 1.0)
    return values * factors[bands]


def entry_bands(domain: Domain, subset, bands: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """For each attribute of ``subset`` (in the residual's order, as
    :func:`~dpgm.residuals.residual_subset` gives it), the band of every entry of the
    residual on ``subset`` (its entries in C order) on that attribute's axis; an attribute
    without ``bands`` is one band, 0."""
    axes = [np.asarray(bands[a]) if a in bands else np.zeros(domain[a] - 1, np.int64)
            for a in subset]
    return [g.ravel() for g in np.meshgrid(*axes, indexing="ij")]


def shrink_residuals(domain: Domain, measurements: Iterable[Measurement],
                     bands: Mapping[str, np.ndarray], least_order: int = 2,
                     towards: Mapping[tuple[str, ...], np.ndarray] | None = None
                     ) -> list[Measurement]:
    """Each residual measurement of ``least_order`` or more attributes shrunk band by
    band (see the module docstring); other measurements as they are. ``bands``: the band
    of each basis row of the ordered attributes (others are one band each). ``towards``:
    for a residual's subset (in its measurement's order), the values to shrink it
    towards instead of zero (James–Stein's guarantee holds for any point chosen without
    that residual's noise)."""
    towards = {} if towards is None else towards
    out = []
    for m in measurements:
        subset = residual_subset(m)
        if subset is None or len(subset) < least_order:
            out.append(m)
            continue
        grid = entry_bands(domain, subset, bands)
        shape = [int(g.max()) + 1 if g.size else 1 for g in grid]
        key = np.ravel_multi_index(tuple(grid), shape)
        _, key = np.unique(key, return_inverse=True)  # dense band numbers
        prior = np.asarray(towards.get(tuple(subset), 0.0), dtype=np.float64)
        values = prior + band_shrinkage(m.values - prior, key.ravel(), float(m.std) ** 2)
        out.append(Measurement(m.clique, values, m.std, m.query))
    return out
