"""Moved to :mod:`dpgm.measurement` (below the privacy layer); kept as an alias."""

from dpgm.measurement import KroneckerQuery, Measurement, is_integral, is_sparse

__all__ = ["KroneckerQuery", "Measurement", "is_integral", "is_sparse"]
