"""Differentially private mechanisms built on the shared core and Private-PGM estimation."""

from dpgm.mechanisms.base import Mechanism
from dpgm.mechanisms.compression import DomainCompression
from dpgm.mechanisms.mst import MST
from dpgm.mechanisms.mwem import MWEM

#: the mechanisms by their command-line names
REGISTRY: dict[str, type[Mechanism]] = {"mst": MST, "mwem": MWEM}

__all__ = ["MST", "MWEM", "REGISTRY", "DomainCompression", "Mechanism"]
