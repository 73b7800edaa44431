"""Additive Laplace and Gaussian noise on count vectors.

Two sources of randomness:

* ``rng=None`` (the default, and the only choice for a real release): exact samplers from
  OpenDP. With ``discrete=True`` the counts are integers and get discrete Laplace /
  discrete Gaussian noise on the integers (Canonne, Kamath & Steinke 2020), which carry
  the same ε-DP / ρ-zCDP guarantees as their continuous namesakes for integer
  sensitivities. With ``discrete=False`` (the default) OpenDP's float samplers are used;
  they round to a lattice fixed by the scale alone.
* an integer seed or a ``numpy.random.Generator``: NumPy's ``laplace`` / ``normal``.
  **Seeded noise is for research and testing (reproducible experiments), not for a
  release**: anyone who knows the seed can subtract the noise, and NumPy's floating-point
  samplers are not hardened against precision attacks. The first seeded use in a process
  draws a :class:`~dpgm.errors.SeedWarning`.

Which sampler runs is decided by the caller from **public facts only** (whether the data
are weighted, whether the query has fractional entries), never from the counts: if it
were read off the counts, whether the released values are whole numbers would itself
reveal something about the data. With ``discrete=True`` the counts are rounded to
integers, which changes nothing when the public facts hold.

The privacy guarantee depends on the sensitivity of ``counts`` under the add/remove-one-record
neighbour relation, which the caller accounts for (see :mod:`dpgm.privacy.measure`).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from dpgm.errors import DataError, PrivacyParameterError
from dpgm.privacy.policy import warn_seeded
from dpgm.random import RngLike, as_generator
from dpgm.validation import flag, positive

# OpenDP takes Python lists; noising in chunks bounds the memory of those lists.
_CHUNK = 1 << 20
# Integer noise goes through int64; counts beyond this cannot come from records in memory.
_MAX_INTEGER = 2**62


def _as_counts(counts) -> np.ndarray:
    array = np.asarray(counts, dtype=np.float64)
    if not np.all(np.isfinite(array)):
        raise DataError("counts must be finite numbers (found NaN or infinity)")
    return array


@lru_cache(maxsize=256)  # a run measures many tables at a few scales: build each once
def _opendp_mechanism(scale: float, kind: str, discrete: bool):
    """OpenDP's exact sampler of the given ``kind`` ("laplace" or "gaussian") and scale on
    vectors of integers (``discrete``) or floats."""
    # Imported here: opendp loads a native library, which would slow down `import dpgm`.
    import opendp.prelude as dp

    dp.enable_features("contrib")
    kind_of_number = "i64" if discrete else "f64"
    atom = dp.atom_domain(T="i64") if discrete else dp.atom_domain(T="f64", nan=False)
    # The distance type only fixes the sensitivity units; the sensitivity itself is the
    # caller's concern, so it is never evaluated here.
    if kind == "laplace":
        metric = dp.l1_distance(T=kind_of_number)
        return dp.m.make_laplace(dp.vector_domain(atom), metric, scale=scale)
    metric = dp.l2_distance(T=kind_of_number)
    return dp.m.make_gaussian(dp.vector_domain(atom), metric, scale=scale)


def _opendp_noise(array: np.ndarray, scale: float, kind: str, discrete: bool) -> np.ndarray:
    """``array`` plus exact OpenDP noise of the given ``kind`` ("laplace" or "gaussian")."""
    if array.size == 0:
        return array.copy()
    mechanism = _opendp_mechanism(float(scale), kind, bool(discrete))
    flat = array.ravel()
    if discrete:
        flat = np.clip(np.rint(flat), -_MAX_INTEGER, _MAX_INTEGER).astype(np.int64)
    noisy = np.empty(flat.size, dtype=np.float64)
    for start in range(0, flat.size, _CHUNK):
        part = flat[start : start + _CHUNK]
        noisy[start : start + part.size] = mechanism(part.tolist())
    return noisy.reshape(array.shape)


def _noise(counts, scale: float, rng: RngLike, discrete: bool, kind: str) -> np.ndarray:
    flag("discrete", discrete, error=PrivacyParameterError)
    array = _as_counts(counts)
    if rng is None:
        return _opendp_noise(array, scale, kind, discrete)
    warn_seeded()
    generator = as_generator(rng)
    if kind == "laplace":
        return array + generator.laplace(0.0, scale, size=array.shape)
    return array + generator.normal(0.0, scale, size=array.shape)


def laplace_noise(
    counts, scale: float, rng: RngLike = None, *, discrete: bool = False
) -> np.ndarray:
    """``counts`` plus independent Laplace noise of scale ``scale`` (std √2·scale) per entry.

    ``rng=None`` uses OpenDP's exact sampler (discrete Laplace where ``discrete``, a public
    fact: the counts are integers); a seed or generator uses NumPy, for research only.
    """
    scale = positive("scale", scale, error=PrivacyParameterError)
    return _noise(counts, scale, rng, discrete, "laplace")


def gaussian_noise(
    counts, sigma: float, rng: RngLike = None, *, discrete: bool = False
) -> np.ndarray:
    """``counts`` plus independent Gaussian noise of standard deviation ``sigma`` per entry.

    ``rng=None`` uses OpenDP's exact sampler (discrete Gaussian where ``discrete``, a
    public fact: the counts are integers); a seed or generator uses NumPy, for research only.
    """
    sigma = positive("sigma", sigma, error=PrivacyParameterError)
    return _noise(counts, sigma, rng, discrete, "gaussian")
