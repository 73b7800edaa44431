"""Deprecated: :class:`MarkovRandomField` lives in :mod:`dpgm.models` (one home for every
model). This alias module stays for one release."""

import warnings

from dpgm.models.markov_random_field import (  # noqa: F401
    COMPLETION_CELLS,
    EXACT_CELLS,
    MarkovRandomField,
)

warnings.warn("dpgm.model is deprecated: import MarkovRandomField from dpgm.models",
              DeprecationWarning, stacklevel=2)
