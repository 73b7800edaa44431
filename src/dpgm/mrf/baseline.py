"""The usual non-private baseline for Ising models: nodewise L1-penalised logistic
regression (Ravikumar, Wainwright & Lafferty 2010), by scikit-learn (an optional extra:
``pip install dpgm[bench]``). Not private: for checks and comparisons only.
"""

from __future__ import annotations

import math

import numpy as np

from dpgm.dataset import Dataset, require_records
from dpgm.errors import DataError
from dpgm.models.pairwise import IsingModel
from dpgm.validation import optional, positive


def l1_logistic_ising(data: Dataset, penalty: float | None = None, *,
                      max_iter: int = 200) -> IsingModel:
    """An Ising model of binary ``data`` from p L1-penalised logistic regressions of z_i
    on z_−i (Â_ij = w_ij/2, θ̂_i = the intercept/2, symmetrised). ``penalty`` per record,
    by default √(log p / n) (the theory's rate). Not private."""
    try:
        from sklearn.linear_model import LogisticRegression
    except ImportError:
        raise ImportError("the L1 logistic baseline needs scikit-learn: "
                          "pip install 'dpgm[bench]'") from None
    data = require_records(data)
    if any(size != 2 for size in data.domain.shape):
        raise DataError("an Ising model needs binary attributes")
    penalty = optional(positive, "penalty", penalty)
    z = 2.0 * data.records - 1.0
    n, p = z.shape
    if n == 0:
        raise DataError("the baseline needs records")
    penalty = penalty if penalty is not None else math.sqrt(math.log(max(p, 2)) / n)
    couplings, fields = np.zeros((p, p)), np.zeros(p)
    for i in range(p):
        x = np.delete(z, i, axis=1)
        if np.all(z[:, i] == z[0, i]):  # not private: the data may be shown
            raise DataError(f"{data.domain.attrs[i]!r} takes one value only: its field "
                            "would be infinite")
        # C is the inverse of the summed penalty: penalty per record times n. liblinear's
        # coordinate descent is 2-3x faster than saga here (and saga stalls on some nodes);
        # it penalises the intercept too, which a large intercept_scaling makes negligible
        fit = LogisticRegression(l1_ratio=1.0, C=1.0 / (penalty * n), solver="liblinear",
                                 intercept_scaling=100.0, max_iter=max_iter).fit(x, z[:, i])
        couplings[i, np.arange(p) != i] = fit.coef_[0] / 2.0
        fields[i] = fit.intercept_[0] / 2.0
    return IsingModel((couplings + couplings.T) / 2.0, fields, names=list(data.domain.attrs))
