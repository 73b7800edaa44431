"""Readers and writers for model files: Bayesian networks in BIF (read and write) and
XMLBIF (read)."""

from dpgm.io.bif import BayesianNetwork, parse_bif, read_bif, to_bif, write_bif
from dpgm.io.xmlbif import parse_xmlbif, read_xmlbif

__all__ = [
    "BayesianNetwork",
    "parse_bif",
    "parse_xmlbif",
    "read_bif",
    "read_xmlbif",
    "to_bif",
    "write_bif",
]
