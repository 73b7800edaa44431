"""Every dpgm model, in one home, implementing one protocol (:mod:`dpgm.models.base`):
the Markov random field that Private-PGM estimates, the original estimators' table models,
models fitted on a compressed domain, Bayesian networks, and Ising, pairwise k-ary and
binary t-wise models in the parametrisations their learners estimate, and sets of fitted
synthetic records. Any of them is saved with ``model.save(path)`` and read back with
:func:`load` (:mod:`dpgm.models.files`)."""

from dpgm.models.base import Model, Release
from dpgm.models.bayesian_network import BayesianNetwork
from dpgm.models.compression import CompressedModel, DomainCompression
from dpgm.models.files import load
from dpgm.models.markov_random_field import MarkovRandomField
from dpgm.models.pairwise import IsingModel, PairwiseModel, TwiseModel, spins
from dpgm.models.records import RecordsModel
from dpgm.models.tables import TableModel

__all__ = ["BayesianNetwork", "CompressedModel", "DomainCompression", "IsingModel",
           "MarkovRandomField", "Model", "PairwiseModel", "RecordsModel", "Release",
           "TableModel", "TwiseModel", "load", "spins"]
