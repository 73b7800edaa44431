"""The inference-engine protocol: what estimation and models ask of marginal inference.

Two engines implement it: :class:`~dpgm.inference.belief_propagation.MessagePlan`, exact
belief propagation on a junction tree, and :class:`~dpgm.inference.loopy.LoopyPlan`,
loopy belief propagation for models whose junction tree is too large. Estimation
(:class:`~dpgm.estimation.algorithms.MarginalOracle`) and models
(:class:`~dpgm.models.markov_random_field.MarkovRandomField`) work on either through it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

if TYPE_CHECKING:
    from dpgm.domain import Domain
    from dpgm.inference.cliques import Clique
    from dpgm.inference.junction_tree import JunctionTree


class Engine(Protocol):
    """Marginal inference on a fixed list of cliques, whose tables are laid out as one flat
    vector (the clique tables concatenated: ``offsets``, ``shapes``, ``sizes``)."""

    domain: Domain
    #: the cliques the engine holds tables on, each in domain order
    cliques: list[Clique]
    shapes: list[tuple[int, ...]]
    sizes: np.ndarray
    offsets: np.ndarray

    @property
    def tree(self) -> JunctionTree | None:
        """The junction tree an exact engine passes messages on; None for an approximate
        one."""
        ...

    @property
    def description(self) -> str:
        """How the engine infers, in words: ``"exact"`` or ``"approximate (…)"``."""
        ...

    def find(self, attrs: Iterable[str]) -> int | None:
        """Index of the smallest clique containing ``attrs``, or None."""
        ...

    def pack(self, tables: Sequence[np.ndarray]) -> np.ndarray:
        """Clique tables concatenated into one flat vector."""
        ...

    def unpack(self, flat: np.ndarray) -> list[np.ndarray]:
        """Views of a flat vector as one table per clique."""
        ...

    def marginals(self, log_potentials: np.ndarray, total: float) -> tuple[np.ndarray, float]:
        """Calibrated clique count tables (each summing to ``total``) as one flat vector,
        and log Z (approximate for an approximate engine), for flat ``log_potentials``."""
        ...
