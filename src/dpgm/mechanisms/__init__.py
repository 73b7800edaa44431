"""Differentially private mechanisms built on the shared core and Private-PGM estimation."""

from dpgm.mechanisms.aim import AIM
from dpgm.mechanisms.base import Mechanism
from dpgm.mechanisms.bn_parameters import BNParameterLearner, DataDependentBN, DInd
from dpgm.mechanisms.cgm import CGM
from dpgm.mechanisms.dualquery import DualQuery
from dpgm.mechanisms.hdmm import HDMM
from dpgm.mechanisms.mst import MST
from dpgm.mechanisms.mwem import MWEM
from dpgm.mechanisms.privbayes import PrivBayes
from dpgm.mechanisms.psgd import PSGD
from dpgm.models.compression import DomainCompression

#: the mechanisms by their command-line names
REGISTRY: dict[str, type[Mechanism]] = {
    "mst": MST,
    "aim": AIM,
    "privbayes": PrivBayes,
    "mwem": MWEM,
    "dualquery": DualQuery,
    "hdmm": HDMM,
    "cgm": CGM,
    "psgd": PSGD,
}

#: the learners of a Bayesian network's CPDs on a public structure, by command-line name
BN_LEARNERS: dict[str, type[BNParameterLearner]] = {
    "dind": DInd,
    "data-dependent": DataDependentBN,
}

__all__ = [
    "AIM",
    "BN_LEARNERS",
    "BNParameterLearner",
    "CGM",
    "DInd",
    "DataDependentBN",
    "HDMM",
    "MST",
    "MWEM",
    "REGISTRY",
    "DomainCompression",
    "DualQuery",
    "Mechanism",
    "PrivBayes",
    "PSGD",
]
