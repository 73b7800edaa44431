"""Issue 24: nothing computed on records reaches stderr unpaid.

A warning raised while computing on records is an event of probability 1 under one
neighbour and 0 under the other ("overflow encountered in exp" with one record, never
without). Every learner runs on an empty table and on a one-record table, with warnings
turned into errors and stderr captured at the file-descriptor level: the outcome and
the stderr must be the same.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from mechanism_helpers import FAST, LEARNERS

from dpgm import Dataset, Domain
from dpgm.errors import DpgmWarning
from dpgm.privacy.quiet import on_records

DOMAIN = Domain(["a", "b", "c", "d"], [2, 2, 2, 2])


def outcome(run, capfd) -> tuple[str, str]:
    """What a run shows: its error's type (or "ok") and its stderr."""
    capfd.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", DpgmWarning)  # dpgm's own: public facts only
        try:
            run()
            result = "ok"
        except Exception as exc:  # noqa: BLE001 - the type is what is compared
            result = type(exc).__name__
    return result, capfd.readouterr().err


def tables() -> list[Dataset]:
    one = Dataset(np.array([[1, 0, 1, 1]]), DOMAIN)
    return [Dataset(np.zeros((0, 4), dtype=np.int64), DOMAIN), one]


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_every_learner_says_the_same_on_an_empty_and_a_one_record_table(name, capfd):
    seen = {outcome(lambda d=data: LEARNERS[name](1.0, **FAST[name]).fit(d, rng=0), capfd)
            for data in tables()}
    assert len(seen) == 1, seen


@pytest.mark.parametrize("learn", ["ising", "pairwise", "twise", "structure"])
def test_every_mrf_learner_says_the_same_on_an_empty_and_a_one_record_table(learn, capfd):
    from dpgm import mrf

    runs = {
        "ising": lambda d: mrf.learn_ising(d, 1.0, 100.0, rng=0, steps=20),
        "pairwise": lambda d: mrf.learn_pairwise(d, 1.0, 100.0, rng=0, steps=20),
        "twise": lambda d: mrf.learn_twise(d, 1.0, 100.0, order=2, rng=0, steps=20),
        "structure": lambda d: mrf.learn_structure(d, 1.0, 1e-6, 100.0, 0.3, method="zcdp",
                                                   rng=0),
    }
    seen = {outcome(lambda d=data: runs[learn](d), capfd) for data in tables()}
    assert len(seen) == 1, seen


def test_the_guard_has_power(capfd):
    """Without :func:`on_records`, the overflow of one record is seen; with it, not."""
    def margins(data: Dataset) -> None:
        np.exp(1000.0 * data.records.sum(axis=0))

    bare = {outcome(lambda d=data: margins(d), capfd) for data in tables()}
    assert len(bare) == 2

    def guarded(data: Dataset) -> None:
        with on_records():
            margins(data)

    assert len({outcome(lambda d=data: guarded(d), capfd) for data in tables()}) == 1
