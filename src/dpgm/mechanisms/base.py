"""The interface every mechanism shares: data and a budget in, a private model out."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from dpgm.dataset import Dataset
from dpgm.domain import Domain
from dpgm.errors import DpgmError
from dpgm.estimation.measurement import Measurement
from dpgm.model import MarkovRandomField
from dpgm.privacy.budget import PrivacyBudget
from dpgm.privacy.measure import measure_linear
from dpgm.random import as_generator
from dpgm.workload import Workload, as_workload

Progress = Callable[[str], object]
WorkloadLike = Workload | Sequence[Iterable[str]]


class Mechanism:
    """A differentially private mechanism that fits a :class:`MarkovRandomField`.

    ``fit`` spends exactly the budget given at construction through :mod:`dpgm.privacy`
    and keeps its ledger in ``budget``; everything after the measurements is
    post-processing. ``progress`` receives one line per stage of the work.

    ``estimator="pgm"`` returns a :class:`MarkovRandomField` estimated by Private-PGM; a
    mechanism's ``"original"`` estimator returns what the mechanism's authors released
    (synthetic records as a :class:`Dataset`, or a :class:`~dpgm.mechanisms.tables.TableModel`).
    Either answers ``marginal(attrs)``; ``self.result`` holds it after ``fit``.
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
        self.result: MarkovRandomField | Dataset | object | None = None

    def _say(self, message: str) -> None:
        if self.progress is not None:
            self.progress(message)

    @staticmethod
    def _generators(
        rng: np.random.Generator | int | None,
    ) -> tuple[np.random.Generator | None, np.random.Generator]:
        """(noise generator, generator for everything else) from the user's ``rng``.

        ``rng=None`` keeps exact OpenDP noise for measurements (a release); a seed or a
        generator makes the whole run reproducible (research only).
        """
        noise_rng = None if rng is None else as_generator(rng)
        return noise_rng, as_generator(noise_rng)

    @staticmethod
    def _workload(workload: WorkloadLike | None, domain, default_ways: int = 2) -> Workload:
        """The workload checked against the domain; None: all ``default_ways``-way marginals."""
        return as_workload(workload, domain, default_ways)

    def fit(
        self,
        data: Dataset,
        workload: WorkloadLike | None = None,
        rng: np.random.Generator | int | None = None,
    ) -> MarkovRandomField | Dataset | object:
        """Spend the budget on ``data`` and return the estimate (see the class docstring)."""
        raise NotImplementedError

    def check_synthesizable(self, domain: Domain, workload: WorkloadLike | None = None) -> None:
        """Raise :class:`DpgmError` if ``fit`` on this domain could not yield synthetic data.

        Decided from public facts only, so a caller that needs records can refuse before
        any budget is spent.
        """


def positive_int(name: str, value, least: int = 1) -> int:
    """``value`` as an int, or a :class:`DpgmError` unless it is an integer >= ``least``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
        raise DpgmError(f"{name} must be an integer >= {least}, got {value!r}")
    return int(value)


def _is_number(value) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float, np.integer, np.floating))


def positive_number(name: str, value, at_least: float | None = None) -> float:
    """``value`` as a float, or a :class:`DpgmError` unless it is finite and > 0
    (``>= at_least`` where given)."""
    if at_least is None:
        valid, bound = _is_number(value) and value > 0, "> 0"
    else:
        valid, bound = _is_number(value) and value >= at_least, f">= {at_least:g}"
    if not valid or not math.isfinite(value):
        raise DpgmError(f"{name} must be a finite number {bound}, got {value!r}")
    return float(value)


def fraction(name: str, value) -> float:
    """``value`` as a float, or a :class:`DpgmError` unless it lies in (0, 1)."""
    if not _is_number(value) or not 0 < value < 1:
        raise DpgmError(f"{name} must be a number in (0, 1), got {value!r}")
    return float(value)


def measure_record_count(
    data: Dataset,
    budget: PrivacyBudget,
    rng: np.random.Generator | None,
    *,
    epsilon: float | None = None,
    rho: float | None = None,
) -> Measurement:
    """The record count with noise, charged to ``budget`` (``epsilon`` or ``rho`` of it).

    Under add/remove DP the count is private. It is one linear query, the all-ones row on
    the first attribute's marginal (sensitivity 1): one scalar has the least noise.
    """
    first = data.domain.attrs[0]
    return measure_linear(
        data,
        (first,),
        np.ones((1, data.domain[first])),
        epsilon=epsilon,
        rho=rho,
        budget=budget,
        rng=rng,
        label="record count",
    )
