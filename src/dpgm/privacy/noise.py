"""Additive Laplace and Gaussian noise on count vectors.

Two sources of randomness:

* ``rng=None`` (the default, and the only choice for a real release): exact samplers from
  OpenDP. Integer-valued counts get discrete Laplace / discrete Gaussian noise on integers
  (Canonne, Kamath & Steinke 2020), which carry the same ε-DP / ρ-zCDP guarantees as their
  continuous namesakes for integer sensitivities, and have no floating-point weaknesses.
  Other counts (weighted data) get OpenDP's float samplers, which are exact up to a fine
  rounding grid.
* an integer seed or a ``numpy.random.Generator``: NumPy's ``laplace`` / ``normal``.
  **Seeded noise is for research and testing (reproducible experiments), not for a
  release**: anyone who knows the seed can subtract the noise, and NumPy's floating-point
  samplers are not hardened against precision attacks.

The privacy guarantee depends on the sensitivity of ``counts`` under the add/remove-one-record
neighbour relation, which the caller accounts for (see :mod:`dpgm.privacy.measure`).
"""

from __future__ import annotations

import numpy as np

from dpgm.errors import DataError
from dpgm.privacy._checks import positive
from dpgm.random import as_generator

# Counts up to 2**53 are exactly representable as floats, so the integer path is lossless.
_MAX_EXACT_INT = 2.0**53


def _as_counts(counts) -> np.ndarray:
    array = np.asarray(counts, dtype=np.float64)
    if not np.all(np.isfinite(array)):
        raise DataError("counts must be finite numbers (found NaN or infinity)")
    return array


def _is_integer_valued(array: np.ndarray) -> bool:
    return bool(np.all(array == np.round(array)) and np.all(np.abs(array) <= _MAX_EXACT_INT))


def _opendp_noise(array: np.ndarray, scale: float, kind: str) -> np.ndarray:
    """``array`` plus exact OpenDP noise of the given ``kind`` ("laplace" or "gaussian")."""
    if array.size == 0:
        return array.copy()
    # Imported here: opendp loads a native library, which would slow down `import dpgm`.
    import opendp.prelude as dp

    dp.enable_features("contrib")
    flat = array.ravel()
    integer = _is_integer_valued(flat)
    if integer:
        atom = dp.atom_domain(T="i64")
        values = flat.astype(np.int64).tolist()
    else:
        atom = dp.atom_domain(T="f64", nan=False)
        values = flat.tolist()
    # The distance type only fixes the sensitivity units; the sensitivity itself is the
    # caller's concern, so it is never evaluated here.
    if kind == "laplace":
        metric = dp.l1_distance(T="i64" if integer else "f64")
        mechanism = dp.m.make_laplace(dp.vector_domain(atom), metric, scale=scale)
    else:
        metric = dp.l2_distance(T="i64" if integer else "f64")
        mechanism = dp.m.make_gaussian(dp.vector_domain(atom), metric, scale=scale)
    noisy = np.asarray(mechanism(values), dtype=np.float64)
    return noisy.reshape(array.shape)


def laplace_noise(counts, scale: float, rng: np.random.Generator | int | None = None) -> np.ndarray:
    """``counts`` plus independent Laplace noise of scale ``scale`` (std √2·scale) per entry.

    ``rng=None`` uses OpenDP's exact (discrete, for integer counts) sampler; a seed or
    generator uses NumPy — reproducible, for research only.
    """
    scale = positive("scale", scale)
    array = _as_counts(counts)
    if rng is None:
        return _opendp_noise(array, scale, "laplace")
    return array + as_generator(rng).laplace(0.0, scale, size=array.shape)


def gaussian_noise(
    counts, sigma: float, rng: np.random.Generator | int | None = None
) -> np.ndarray:
    """``counts`` plus independent Gaussian noise of standard deviation ``sigma`` per entry.

    ``rng=None`` uses OpenDP's exact (discrete, for integer counts) sampler; a seed or
    generator uses NumPy — reproducible, for research only.
    """
    sigma = positive("sigma", sigma)
    array = _as_counts(counts)
    if rng is None:
        return _opendp_noise(array, sigma, "gaussian")
    return array + as_generator(rng).normal(0.0, sigma, size=array.shape)
