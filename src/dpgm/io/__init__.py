"""Readers for model files: Bayesian networks in BIF format."""

from dpgm.io.bif import BayesianNetwork, parse_bif, read_bif

__all__ = ["BayesianNetwork", "parse_bif", "read_bif"]
