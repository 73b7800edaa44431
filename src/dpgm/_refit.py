"""The estimators a model calls to estimate itself again from its measurements (error
bars, :mod:`dpgm.models.uncertainty`).

Estimation sits above the models it returns, so the models layer cannot import it; the
top-level package registers each estimator here by name (dependency inversion), and a
model's :class:`~dpgm.measurement.MeasuredFit` names the one that fitted it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: estimator name -> ``f(domain, measurements, **options)`` returning a model
ESTIMATORS: dict[str, Callable[..., Any]] = {}
