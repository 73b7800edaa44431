"""Private-PGM estimation: noisy measurements in, a graphical model out (post-processing)."""

from dpgm.estimation.algorithms import (
    METHODS,
    MarginalOracle,
    accelerated,
    estimate,
    fit_targets,
    mirror_descent,
)
from dpgm.estimation.losses import CustomLoss, L1Loss, L2Loss, Loss, make_loss
from dpgm.estimation.multiplicative_weights import multiplicative_weights
from dpgm.estimation.total import estimate_total, total_estimates
from dpgm.measurement import KroneckerQuery, Measurement

__all__ = [
    "METHODS",
    "CustomLoss",
    "L1Loss",
    "KroneckerQuery",
    "L2Loss",
    "Loss",
    "MarginalOracle",
    "Measurement",
    "accelerated",
    "estimate",
    "estimate_total",
    "fit_targets",
    "make_loss",
    "mirror_descent",
    "multiplicative_weights",
    "total_estimates",
]
