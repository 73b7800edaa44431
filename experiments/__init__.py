"""Reproductions of the Private-PGM paper's experiments (run as ``python -m experiments.X``)."""
