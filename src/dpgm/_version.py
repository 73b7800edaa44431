"""The version of dpgm, in one place."""

__version__ = "0.1.0"
