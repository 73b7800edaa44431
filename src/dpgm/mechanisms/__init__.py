"""Differentially private mechanisms built on the shared core and Private-PGM estimation."""

from dpgm.mechanisms.aim import AIM
from dpgm.mechanisms.base import Mechanism
from dpgm.mechanisms.compression import DomainCompression
from dpgm.mechanisms.dualquery import DualQuery
from dpgm.mechanisms.hdmm import HDMM
from dpgm.mechanisms.mst import MST
from dpgm.mechanisms.mwem import MWEM
from dpgm.mechanisms.privbayes import PrivBayes

#: the mechanisms by their command-line names
REGISTRY: dict[str, type[Mechanism]] = {
    "mst": MST,
    "aim": AIM,
    "privbayes": PrivBayes,
    "mwem": MWEM,
    "dualquery": DualQuery,
    "hdmm": HDMM,
}

__all__ = [
    "AIM",
    "HDMM",
    "MST",
    "MWEM",
    "REGISTRY",
    "DomainCompression",
    "DualQuery",
    "Mechanism",
    "PrivBayes",
]
