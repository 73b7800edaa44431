"""The public schema of a raw table: column kinds, labels, bounds, bins, constraints.

:class:`Schema` encodes a raw pandas table to integer codes over its
:attr:`~Schema.domain` and decodes records back to original units. :func:`draft`
writes a skeleton from a file's header and dtypes alone; :func:`discover` fills what is
missing privately, charged to a budget.
"""

from dpgm.schema.columns import Categorical, Column, Datetime, Numeric
from dpgm.schema.schema import Schema

__all__ = ["Categorical", "Column", "Datetime", "Numeric", "Schema"]
