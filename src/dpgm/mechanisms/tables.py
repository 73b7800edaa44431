"""Deprecated: :class:`TableModel` lives in :mod:`dpgm.models.tables`; this alias stays
for one release."""

from dpgm.models.tables import TableModel  # noqa: F401
