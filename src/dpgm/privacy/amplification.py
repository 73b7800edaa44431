"""Privacy amplification by Poisson subsampling, with an inner ledger for the subsample.

Neighbours add or remove one record. If a mechanism is ε-DP and it runs on a subsample
that keeps every record independently with probability β (a Poisson subsample: its size
is random), the composition is ε′-DP with

    ε′ = ln(1 + β·(e^ε − 1))

(Li, Qardaji & Su 2012; Balle, Barthe & Gaboardi 2018, Thm 8; Lemma 2.1 of Roy Chowdhury
et al.). The formula needs both: add/remove neighbours and Poisson sampling. A fixed-size
sample without replacement has a different bound, so :func:`poisson_subsample` is the only
way this module draws one.

:func:`poisson_subsample` charges the outer ledger the amplified cost *before* the data
are read and returns the subsample with an inner :class:`PrivacyBudget` holding the raw ε
that may be spent on it; every measurement of the subsample charges the inner ledger, so
the inner spends can never exceed what the outer entry paid for.
"""

from __future__ import annotations

import math
import os

import numpy as np

from dpgm.dataset import Dataset, require_records
from dpgm.errors import PrivacyParameterError
from dpgm.privacy.budget import PrivacyBudget
from dpgm.privacy.policy import check_epsilon, warn_seeded
from dpgm.random import RngLike, as_generator, check_seed
from dpgm.validation import number


def check_rate(value: object, name: str = "beta") -> float:
    """A sampling rate in (0, 1]."""
    return number(name, value, low=0.0, high=1.0, low_open=True, error=PrivacyParameterError)


def amplified_epsilon(epsilon: float, beta: float) -> float:
    """ε′ = ln(1 + β(e^ε − 1)): the guarantee of an ε-DP mechanism run on a Poisson(β) subsample."""
    epsilon, beta = check_epsilon(epsilon), check_rate(beta)
    if epsilon <= 1.0:
        return math.log1p(beta * math.expm1(epsilon))
    # the same, factored as β·e^ε·(1 + (1 − β)e^{−ε}/β): no overflow for large ε
    return epsilon + math.log(beta) + math.log1p((1.0 - beta) * math.exp(-epsilon) / beta)


def subsample_epsilon(target: float, beta: float) -> float:
    """The ε to spend on a Poisson(β) subsample so that the amplified cost is ``target``:
    ln(1 + (e^target − 1)/β), the inverse of :func:`amplified_epsilon`."""
    target, beta = check_epsilon(target, "target"), check_rate(beta)
    if target <= 1.0:
        return math.log1p(math.expm1(target) / beta)
    # the same, factored as e^t·(1 − (1 − β)e^{−t})/β: no overflow for large targets
    return target - math.log(beta) + math.log1p((beta - 1.0) * math.exp(-target))


def secret_uniforms(size: int, rng: RngLike) -> np.ndarray:
    """``size`` uniforms in [0, 1): from the OS's cryptographic source when ``rng`` is None
    (who is in a subsample must stay secret), else from NumPy (research only)."""
    if rng is None:
        words = np.frombuffer(os.urandom(8 * size), dtype=np.uint64)
        return (words >> np.uint64(11)).astype(np.float64) * 2.0**-53
    warn_seeded()
    return as_generator(rng).random(size)


def poisson_subsample(
    data: Dataset,
    beta: float,
    budget: PrivacyBudget,
    epsilon: float,
    rng: RngLike = None,
    *,
    label: str = "",
) -> tuple[Dataset, PrivacyBudget]:
    """A Poisson(``beta``) subsample of ``data`` and the inner budget to spend on it.

    ``budget`` (pure ε-DP) is charged ``epsilon`` first, before the records are read;
    the returned inner budget holds :func:`subsample_epsilon` (``epsilon``, ``beta``):
    any ε-DP use of the subsample within it is ``epsilon``-DP for ``data``. Each record
    is kept independently with probability ``beta``; ``rng=None`` draws the choice from
    the OS's cryptographic source (a release), a seed makes it reproducible (research only).
    """
    data = require_records(data)
    beta = check_rate(beta)
    epsilon = check_epsilon(epsilon)
    rng = check_seed(rng)
    if not isinstance(budget, PrivacyBudget) or budget.mode != "pure":
        raise PrivacyParameterError(
            "amplification by subsampling is accounted in pure epsilon-DP: "
            "give a PrivacyBudget(epsilon=...)"
        )
    raw = subsample_epsilon(epsilon, beta)
    budget.charge(
        epsilon=epsilon, label=label or f"Poisson subsample (beta={beta:g}, epsilon={raw:.6g})"
    )
    keep = secret_uniforms(len(data), rng) < beta
    weights = None if data.weights is None else data.weights[keep]
    return Dataset(data.records[keep], data.domain, weights), PrivacyBudget(epsilon=raw)
