"""Differentially private mechanisms built on the shared core and Private-PGM estimation."""

from dpgm.mechanisms.base import Mechanism
from dpgm.mechanisms.compression import DomainCompression
from dpgm.mechanisms.mst import MST
from dpgm.mechanisms.mwem import MWEM
from dpgm.mechanisms.privbayes import PrivBayes

#: the mechanisms by their command-line names
REGISTRY: dict[str, type[Mechanism]] = {"mst": MST, "mwem": MWEM, "privbayes": PrivBayes}

__all__ = ["MST", "MWEM", "PrivBayes", "REGISTRY", "DomainCompression", "Mechanism"]
