"""dpgm: differentially private learning, estimation and inference with graphical models."""

from dpgm.dataset import Dataset
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
from dpgm.model import MarkovRandomField

__all__ = [
    "BudgetExceededError",
    "DataError",
    "Dataset",
    "Domain",
    "DomainError",
    "DpgmError",
    "Factor",
    "MarkovRandomField",
    "Measurement",
    "ModelTooLargeError",
    "PrivacyParameterError",
    "estimate",
]
__version__ = "0.1.0"
