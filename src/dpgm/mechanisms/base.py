"""The interface every mechanism shares: data and a budget in, a private model out."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np

from dpgm.dataset import Dataset
from dpgm.estimation.measurement import Measurement
from dpgm.model import MarkovRandomField
from dpgm.privacy.budget import PrivacyBudget

Progress = Callable[[str], object]
Workload = Sequence[Iterable[str]]


class Mechanism:
    """A differentially private mechanism that fits a :class:`MarkovRandomField`.

    ``fit`` spends exactly the budget given at construction through :mod:`dpgm.privacy`
    and keeps its ledger in ``budget``; everything after the measurements is
    post-processing. ``progress`` receives one line per stage of the work.
    """

    #: the estimators a mechanism supports; "pgm" is Private-PGM estimation
    estimators: tuple[str, ...] = ("pgm",)

    def __init__(
        self,
        epsilon: float,
        delta: float | None = None,
        *,
        estimator: str = "pgm",
        progress: Progress | None = None,
    ):
        if estimator not in self.estimators:
            raise ValueError(
                f"{type(self).__name__} supports estimator in {self.estimators}, got {estimator!r}"
            )
        # built now so that bad privacy parameters fail before any data are read
        PrivacyBudget(epsilon=epsilon, delta=delta)
        self.epsilon = epsilon
        self.delta = delta
        self.estimator = estimator
        self.progress = progress
        self.budget: PrivacyBudget | None = None
        self.measurements: list[Measurement] = []
        self.model: MarkovRandomField | None = None

    def _say(self, message: str) -> None:
        if self.progress is not None:
            self.progress(message)

    def fit(
        self,
        data: Dataset,
        workload: Workload | None = None,
        rng: np.random.Generator | int | None = None,
    ) -> MarkovRandomField:
        """Spend the budget on ``data`` and return the estimated model."""
        raise NotImplementedError
