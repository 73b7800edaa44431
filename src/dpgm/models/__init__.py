"""Graphical models beyond the Markov random field: Bayesian networks."""

from dpgm.models.bayesian_network import BayesianNetwork

__all__ = ["BayesianNetwork"]
