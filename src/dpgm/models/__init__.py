"""Graphical models beyond the Markov random field: Bayesian networks; Ising, pairwise
k-ary and binary t-wise models in the parametrisations their learners estimate."""

from dpgm.models.bayesian_network import BayesianNetwork
from dpgm.models.pairwise import IsingModel, PairwiseModel, TwiseModel, spins

__all__ = ["BayesianNetwork", "IsingModel", "PairwiseModel", "TwiseModel", "spins"]
