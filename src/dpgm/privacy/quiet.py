"""Computing on records without saying anything about them.

A warning raised while computing on records is data-dependent output: NumPy's
"overflow encountered in exp" appears with one record and not without it, and pandas
warns about a column's contents. Such warnings are not paid for, so they never reach the
user: inside :func:`on_records`, floating-point errors are not raised (``np.errstate``)
and every warning but dpgm's own (:class:`~dpgm.errors.DpgmWarning`, which carry public
facts only) is dropped. dpgm's warnings are passed on when the block ends, through the
caller's own filters.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from dpgm.errors import DpgmWarning

#: where each source file's re-emitted warnings were shown (the warnings module's own
#: registry is its module's, which the re-emission cannot reach)
_REGISTRIES: dict[str, dict] = {}


@contextmanager
def on_records() -> Iterator[None]:
    """A block that computes on records: no warning of its own reaches the user."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with np.errstate(all="ignore"):
                yield
        finally:
            kept = [w for w in caught if issubclass(w.category, DpgmWarning)]
    for w in kept:  # outside the block: the caller's filters decide, as for any warning,
        # with a registry per source file, so that "default" shows a warning once per place
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno,
                               registry=_REGISTRIES.setdefault(w.filename, {}))
