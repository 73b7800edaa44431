"""Differentially private mechanisms built on the shared core and Private-PGM estimation."""

from dpgm.mechanisms.aim import AIM
from dpgm.mechanisms.aim_residual import AIMResidual
from dpgm.mechanisms.base import Mechanism
from dpgm.mechanisms.bn import BNParameterLearner, DataDependentBN, DInd
from dpgm.mechanisms.bn_learn import NetworkLearner
from dpgm.mechanisms.cgm import CGM
from dpgm.mechanisms.dualquery import DualQuery
from dpgm.mechanisms.hdmm import HDMM
from dpgm.mechanisms.mrf import IsingLearner, PairwiseLearner, StructureLearner, TwiseLearner
from dpgm.mechanisms.mst import MST
from dpgm.mechanisms.mwem import MWEM
from dpgm.mechanisms.privbayes import PrivBayes
from dpgm.mechanisms.psgd import PSGD
from dpgm.mechanisms.residual_planner import ResidualPlanner
from dpgm.mechanisms.swift import SWIFT
from dpgm.models.compression import DomainCompression

#: the synthesizers (a model of the whole table) by their command-line names
REGISTRY: dict[str, type[Mechanism]] = {
    "mst": MST,
    "aim": AIM,
    "aim-rp": AIMResidual,
    "swift": SWIFT,
    "privbayes": PrivBayes,
    "mwem": MWEM,
    "dualquery": DualQuery,
    "hdmm": HDMM,
    "residual-planner": ResidualPlanner,
    "cgm": CGM,
    "psgd": PSGD,
}

#: the learners of a Bayesian network's CPDs on a public structure, by command-line name
BN_LEARNERS: dict[str, type[BNParameterLearner]] = {
    "dind": DInd,
    "data-dependent": DataDependentBN,
}

#: learners of a whole Bayesian network, structure and CPDs, from a table
NETWORK_LEARNERS: dict[str, type[Mechanism]] = {"bn-learn": NetworkLearner}
#: the private MRF learners of Zhang et al. 2020 (dpgm.mrf), by name
MRF_LEARNERS: dict[str, type[Mechanism]] = {
    "ising": IsingLearner,
    "pairwise": PairwiseLearner,
    "twise": TwiseLearner,
    "structure": StructureLearner,
}

#: every learner, one registry: each is a Mechanism (``fit`` spends its budget once and
#: returns a model, or records or an edge set where ``releases_model`` says so); the
#: synthesizers, the BN CPD learners, the network learner and the MRF learners are its
#: four groups
LEARNERS: dict[str, type[Mechanism]] = {**REGISTRY, **BN_LEARNERS, **NETWORK_LEARNERS,
                                        **MRF_LEARNERS}

__all__ = [
    "AIM",
    "AIMResidual",
    "BN_LEARNERS",
    "BNParameterLearner",
    "CGM",
    "DInd",
    "DataDependentBN",
    "HDMM",
    "IsingLearner",
    "LEARNERS",
    "MRF_LEARNERS",
    "MST",
    "MWEM",
    "NETWORK_LEARNERS",
    "NetworkLearner",
    "REGISTRY",
    "DomainCompression",
    "DualQuery",
    "Mechanism",
    "PairwiseLearner",
    "PrivBayes",
    "PSGD",
    "ResidualPlanner",
    "StructureLearner",
    "SWIFT",
    "TwiseLearner",
]
