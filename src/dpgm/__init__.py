"""dpgm: differentially private learning, estimation and inference with graphical models."""

# subpackages users reach as dpgm.privacy, dpgm.mechanisms, ... after `import dpgm`
from dpgm import datasets, evaluation, inference, mechanisms, models, mrf, privacy, schema
from dpgm._version import __version__ as __version__
from dpgm.dataset import Dataset, read_raw_table
from dpgm.domain import Domain
from dpgm.errors import (
    BudgetExceededError,
    DataError,
    DomainError,
    DpgmError,
    ModelTooLargeError,
    PrivacyParameterError,
)
from dpgm.estimation import Measurement, estimate
from dpgm.factor import Factor
from dpgm.mechanisms.cgm import fit_cgm
from dpgm.models import MarkovRandomField, load
from dpgm.schema import Schema
from dpgm.schema.draft import draft

__all__ = [
    "datasets",
    "evaluation",
    "inference",
    "mechanisms",
    "models",
    "mrf",
    "privacy",
    "schema",
    "BudgetExceededError",
    "DataError",
    "Dataset",
    "Domain",
    "DomainError",
    "DpgmError",
    "Factor",
    "fit_cgm",
    "MarkovRandomField",
    "load",
    "read_raw_table",
    "Measurement",
    "ModelTooLargeError",
    "PrivacyParameterError",
    "Schema",
    "draft",
    "estimate",
]
