"""Random number generators: seeded for reproducible research, OS entropy otherwise."""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral

import numpy as np

from dpgm.errors import ParameterError

RngLike = np.random.Generator | int | None


def as_generator(rng: RngLike) -> np.random.Generator:
    """A NumPy generator from a seed (an integer >= 0), an existing generator, or None.

    None gives fresh OS entropy. Anything else (a float, a bool, a negative number) is a
    :class:`~dpgm.errors.ParameterError`: a seed that silently meant something else
    would make a run irreproducible.
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None:
        return np.random.default_rng()
    return np.random.default_rng(check_seed(rng))


def check_seed(rng: object) -> int | np.random.Generator | None:
    """``rng`` unchanged if it is None, a generator or an integer seed >= 0."""
    if rng is None or isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, bool) or not isinstance(rng, Integral):
        raise ParameterError(
            f"rng must be a numpy.random.Generator, an integer seed >= 0 or None, got {rng!r}"
        )
    if rng < 0:
        raise ParameterError(f"a seed must be an integer >= 0, got {rng!r}")
    return int(rng)


@dataclass(frozen=True)
class Randomness:
    """Where each kind of randomness of a private algorithm comes from.

    ``noise`` and ``selection`` are None on the release path, which means OpenDP's exact
    samplers; ``other`` (post-processing: sampling records, breaking ties) is always a
    NumPy generator. With a seed all three are one reproducible generator.
    """

    noise: np.random.Generator | None
    selection: np.random.Generator | None
    other: np.random.Generator

    @classmethod
    def from_user(cls, rng: RngLike) -> Randomness:
        """From a user's ``rng``: None (a release) or a seed/generator (research only)."""
        rng = check_seed(rng)
        if rng is None:
            return cls(None, None, np.random.default_rng())
        generator = as_generator(rng)
        return cls(generator, generator, generator)
