"""A public, simulated stand-in for the private wifi data of Bernstein et al. (2017, §4.2).

The paper's data (connections to 20-odd access points of one building, every 10 minutes,
per user and day) are private. The stand-in follows the implementation note (§3.4): a
time-homogeneous Markov chain over K = 21 states (0 = not connected, 1..20 = access
points) and the 144 ten-minute slots of a day — stay disconnected with probability 0.95,
connect to an access point drawn from a Dirichlet(1) preference, stay at an access point
with probability 0.8, disconnect with 0.05, move to one of its 3 neighbours with 0.05
each; a day starts disconnected with probability 0.9. Each simulated day is one
individual (the paper's unit of privacy: a user-day), cut into 24 hourly records of 6
slots (``slot0`` … ``slot5``) for a first-order chain model with 5 edges.

The implementation note is ``docs/notes/cgm.md`` (its §3.4).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpgm.dataset import Dataset
from dpgm.domain import Domain
from dpgm.random import RngLike, as_generator
from dpgm.validation import integer

NULL = 0  # the "not connected" state
SLOTS_PER_RECORD = 6
SLOTS_PER_DAY = 144


@dataclass(frozen=True)
class WifiChain:
    """The ground truth: initial distribution and transition matrix over the states."""

    initial: np.ndarray  # (K,)
    transition: np.ndarray  # (K, K), rows sum to 1

    @classmethod
    def draw(cls, rng: RngLike = None, *, access_points: int = 20,
             neighbours: int = 3) -> WifiChain:
        """A random stand-in chain (the note's recipe, above)."""
        gen = as_generator(rng)
        access_points = integer("access_points", access_points, least=neighbours + 1)
        k = access_points + 1
        preference = gen.dirichlet(np.ones(access_points))
        transition = np.zeros((k, k))
        transition[NULL, NULL] = 0.95
        transition[NULL, 1:] = 0.05 * preference
        for ap in range(1, k):
            transition[ap, ap] = 0.8
            transition[ap, NULL] = 0.05
            others = [a for a in range(1, k) if a != ap]
            for near in gen.choice(others, size=neighbours, replace=False):
                transition[ap, near] += 0.15 / neighbours
        initial = np.concatenate([[0.9], 0.1 * preference])
        return cls(initial, transition)

    @property
    def states(self) -> int:
        return len(self.initial)

    def simulate_days(self, days: int, rng: RngLike = None) -> np.ndarray:
        """``days`` simulated days as an array (days, 144) of states."""
        gen = as_generator(rng)
        days = integer("days", days, least=0)
        out = np.empty((days, SLOTS_PER_DAY), dtype=np.int64)
        cumulative = np.cumsum(self.transition, axis=1)
        out[:, 0] = (gen.random(days)[:, None] > np.cumsum(self.initial)).sum(axis=1)
        for t in range(1, SLOTS_PER_DAY):
            rows = cumulative[out[:, t - 1]]
            out[:, t] = (gen.random(days)[:, None] > rows).sum(axis=1)
        return np.minimum(out, self.states - 1)  # guards rounding at the cumulative end


def hourly_records(days: np.ndarray) -> tuple[Dataset, np.ndarray]:
    """The days cut into hourly records of 6 slots, and each record's individual (day)."""
    days = np.asarray(days)
    states = int(days.max(initial=0)) + 1
    hours = SLOTS_PER_DAY // SLOTS_PER_RECORD
    records = days.reshape(len(days) * hours, SLOTS_PER_RECORD)
    domain = Domain([f"slot{i}" for i in range(SLOTS_PER_RECORD)],
                    [max(states, 2)] * SLOTS_PER_RECORD)
    return Dataset(records, domain), np.repeat(np.arange(len(days)), hours)


def chain_edges() -> list[tuple[str, str]]:
    """The 5 edges (slot_s, slot_{s+1}) of the hourly first-order chain."""
    return [(f"slot{s}", f"slot{s + 1}") for s in range(SLOTS_PER_RECORD - 1)]
