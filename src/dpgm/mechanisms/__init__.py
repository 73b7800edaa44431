"""Differentially private mechanisms built on the shared core and Private-PGM estimation."""

from dpgm.mechanisms.base import Mechanism
from dpgm.mechanisms.compression import DomainCompression
from dpgm.mechanisms.mst import MST

#: the mechanisms by their command-line names
REGISTRY: dict[str, type[Mechanism]] = {"mst": MST}

__all__ = ["MST", "REGISTRY", "DomainCompression", "Mechanism"]
