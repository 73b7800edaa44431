"""Readers and writers for model files: Bayesian networks in BIF format."""

from dpgm.io.bif import BayesianNetwork, parse_bif, read_bif, to_bif, write_bif

__all__ = ["BayesianNetwork", "parse_bif", "read_bif", "to_bif", "write_bif"]
