"""Deprecated: domain compression and :class:`CompressedModel` live in
:mod:`dpgm.models.compression`; this alias stays for one release."""

from dpgm.models.compression import (  # noqa: F401
    CompressedCounts,
    CompressedModel,
    DomainCompression,
)
