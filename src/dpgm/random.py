"""Random number generators: seeded for reproducible research, OS entropy otherwise."""

from __future__ import annotations

import numpy as np


def as_generator(rng: np.random.Generator | int | None) -> np.random.Generator:
    """A NumPy generator from a seed, an existing generator, or fresh OS entropy (None)."""
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None:
        return np.random.default_rng()
    if isinstance(rng, (bool, float)) or not isinstance(rng, (int, np.integer)):
        raise TypeError(
            f"rng must be a numpy.random.Generator, an integer seed or None, got {rng!r}"
        )
    return np.random.default_rng(int(rng))
