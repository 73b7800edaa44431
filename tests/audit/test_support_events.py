"""Support events: what the released values *are* (whole numbers or not) must not depend
on the data.

dpgm once chose OpenDP's integer sampler when every count happened to be a whole number
and the float sampler otherwise, so that "all released values are integers" had
probability 1 under one neighbour and 0 under the other: an infinite privacy loss. These
audits run the release path (no seed) on neighbours built to tell the two samplers
apart — weighted records, and queries with fractional entries — and judge the event
"every released value is a whole number" against the mechanism's claim, both ways round.
"""

from __future__ import annotations

import numpy as np
import pytest
from audit_helpers import Claim, judge

from dpgm import Dataset, Domain
from dpgm.mechanisms import HDMM, MST
from dpgm.privacy import cdp_rho, measure_marginals
from dpgm.workload import Workload

RUNS = 200
DOMAIN = Domain(["a", "b"], [2, 3])
TEN = np.array([[0, 0], [1, 2], [0, 1], [1, 1], [0, 2], [1, 0], [0, 0], [1, 1], [0, 2], [1, 2]])


def all_whole(values) -> float:
    values = np.concatenate([np.ravel(v) for v in values])
    return float(np.all(values == np.round(values)))


def weighted_neighbours() -> tuple[Dataset, Dataset]:
    """Ten records of weight 1, and the same plus one record of weight 1/2."""
    d = Dataset(TEN, DOMAIN, np.ones(10))
    d_plus = Dataset(np.vstack([TEN, [[1, 0]]]), DOMAIN, np.append(np.ones(10), 0.5))
    return d, d_plus


def judge_both_ways(event_with, event_without, claim):
    """The event, and its complement, likelier under either neighbour: none may break."""
    outcomes = [
        judge(event_with, event_without, 0.5, claim),
        judge(event_without, event_with, 0.5, claim),
        judge([1 - v for v in event_with], [1 - v for v in event_without], 0.5, claim),
        judge([1 - v for v in event_without], [1 - v for v in event_with], 0.5, claim),
    ]
    for outcome in outcomes:
        assert not outcome.violated, f"{claim}: {outcome}"
    return outcomes


def test_weighted_marginals_release_whole_numbers_equally_often():
    d, d_plus = weighted_neighbours()

    def event(data):
        return all_whole(m.values for m in measure_marginals(data, [("a", "b")], epsilon=1.0))

    judge_both_ways([event(d_plus) for _ in range(RUNS)], [event(d) for _ in range(RUNS)],
                    Claim(epsilon=1.0))


def test_mst_measurements_on_weighted_data():
    d, d_plus = weighted_neighbours()
    claim = Claim(rho=cdp_rho(1.0, 1e-9))  # MST's budget at epsilon = 1, delta = 1e-9

    def event(data):
        mechanism = MST(1.0, iters=5)
        mechanism.fit(data)
        return all_whole(m.values for m in mechanism.measurements)

    judge_both_ways([event(d_plus) for _ in range(RUNS)], [event(d) for _ in range(RUNS)], claim)


@pytest.mark.parametrize("estimator", ["pgm", "original"])
def test_hdmm_with_a_numeric_attribute_on_empty_data_and_one_record(estimator):
    """p-Identity strategies have fractional entries: no records give whole answers, one
    record does not; the sampler must not notice."""
    domain = Domain(["x", "y"], [40, 2])
    workload = Workload([("x", "y")], numeric=["x"])
    empty = Dataset(np.zeros((0, 2), dtype=np.int64), domain)
    one = Dataset(np.array([[17, 1]]), domain)

    def event(data):
        mechanism = HDMM(1.0, estimator=estimator, iters=5)
        mechanism.fit(data, workload)
        return all_whole(m.values for m in mechanism.measurements)

    judge_both_ways([event(one) for _ in range(RUNS)], [event(empty) for _ in range(RUNS)],
                    Claim(epsilon=1.0))


def test_the_audit_would_have_caught_the_data_dependent_sampler():
    """Power: if the event were certain under one neighbour and impossible under the other
    (the old behaviour), these runs prove the claim false."""
    with_record, without = [1.0] * RUNS, [0.0] * RUNS
    assert judge(with_record, without, 0.5, Claim(epsilon=1.0)).violated
    assert judge(with_record, without, 0.5, Claim(rho=cdp_rho(1.0, 1e-9))).violated
