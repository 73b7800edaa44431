"""The exponential mechanism: choose a candidate, favouring high scores, privately.

Neighbouring datasets differ by adding or removing one record (unbounded DP);
``sensitivity`` bounds how much one record can change any candidate's score.

Candidate i is chosen with probability ∝ exp(ε·score_i / (2·sensitivity)), which is ε-DP
(McSherry & Talwar 2007). Its privacy loss is also bounded-range, so it is ε²/8-zCDP
(Cesar & Rogers 2021, "Bounding, Concentrating, and Truncating"), not merely ε²/2: a zCDP
budget is charged ρ = ε²/8, a pure budget ε.

One draw uses the Gumbel-max trick, several draws from one law the inverse CDF, with
NumPy floats; ``rng=None`` draws fresh OS entropy.
A seed or generator makes the choice reproducible — for research only, not for a release.
"""

from __future__ import annotations

import numpy as np

from dpgm.errors import DpgmError
from dpgm.privacy._checks import positive
from dpgm.privacy.budget import PrivacyBudget
from dpgm.random import as_generator


def exponential_mechanism(
    scores,
    epsilon: float,
    sensitivity: float = 1.0,
    rng: np.random.Generator | int | None = None,
    budget: PrivacyBudget | None = None,
    label: str = "",
    size: int | None = None,
) -> int | np.ndarray:
    """Index of the chosen candidate; P(i) ∝ exp(ε·scores[i] / (2·sensitivity)).

    ``size``: that many independent draws (an array of indices), each an exponential
    mechanism, so they cost ``size`` times one draw by sequential composition. A
    ``budget`` is charged (ε per draw in pure mode, ρ = ε²/8 per draw in zCDP mode) in one
    entry before anything is drawn.
    """
    epsilon = positive("epsilon", epsilon)
    sensitivity = positive("sensitivity", sensitivity)
    values = np.asarray(scores, dtype=np.float64)
    if values.ndim != 1 or values.size == 0:
        raise DpgmError(f"scores must be a non-empty 1-d sequence, got shape {values.shape}")
    if not np.all(np.isfinite(values)):
        raise DpgmError("scores must be finite (found NaN or infinity)")

    draws = 1
    if size is not None:
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
            raise DpgmError(f"size must be an integer >= 1, got {size!r}")
        draws = int(size)

    if budget is not None:
        what = label or "exponential mechanism"
        what = what if size is None else f"{what} (x{draws})"
        if budget.mode == "pure":
            budget.charge(epsilon=draws * epsilon, label=what)
        else:
            budget.charge(rho=draws * epsilon**2 / 8.0, label=what)

    # argmax of (log-weight + standard Gumbel) is distributed as the normalised weights.
    # Subtracting the max score keeps the log-weights <= 0 (it does not change the law); a
    # weight that underflows to exp(-inf) = 0 is already 0 in double precision.
    with np.errstate(over="ignore"):
        logits = (values - values.max()) * (epsilon / (2.0 * sensitivity))
    generator = as_generator(rng)
    if size is not None:
        # many draws from one law: inverse CDF, O(n + size·log n) instead of O(size·n)
        cumulative = np.cumsum(np.exp(logits))
        picks = np.searchsorted(cumulative, generator.random(draws) * cumulative[-1], "right")
        return np.minimum(picks, values.size - 1)
    gumbel = generator.gumbel(size=values.size)
    return int(np.argmax(logits + gumbel))
