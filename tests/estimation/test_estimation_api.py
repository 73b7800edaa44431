"""estimate()'s options and refusals: warm starts, extra cliques, callbacks, size limits,
and clear errors for bad input."""

from __future__ import annotations

import numpy as np
import pytest
from brute_force import marginal
from estimation_helpers import cycle_problem, model_l2_loss, tv

from dpgm import Domain, DomainError, DpgmError, Measurement, ModelTooLargeError, estimate

TOTAL = 800.0


def noisy(seed: int = 0, std: float = 8.0):
    domain, cliques, p = cycle_problem(seed)
    rng = np.random.default_rng(seed)
    measurements = [
        Measurement(
            c, TOTAL * marginal(domain, p, c).ravel() + rng.normal(0, std, domain.size(c)), std
        )
        for c in cliques
    ]
    return domain, measurements


@pytest.mark.parametrize("method", ["mirror_descent", "accelerated"])
def test_warm_start_continues_without_the_loss_going_up(method):
    domain, measurements = noisy(1)
    kw = dict(total=TOTAL, method=method, init="uniform")
    first = estimate(domain, measurements, iters=15, **kw)
    loss_first = model_l2_loss(first, measurements)
    seen: list[float] = []
    second = estimate(
        domain, measurements, iters=15, warm_start=first, callback=lambda t, v: seen.append(v), **kw
    )
    loss_second = model_l2_loss(second, measurements)
    assert seen[0] <= loss_first * (1 + 1e-9)  # starts where the first run stopped
    assert all(v <= loss_first * (1 + 1e-9) for v in seen)
    # 15 iterations from the uniform model are far from the optimum: continuing helps
    assert loss_second < 0.9 * loss_first


def test_warm_start_from_a_model_with_other_cliques():
    domain, measurements = noisy(2)
    first = estimate(domain, measurements[:2], total=TOTAL, iters=50, cliques=[("t", "r")])
    model = estimate(domain, measurements, total=TOTAL, iters=200, warm_start=first)
    assert model.tree.find(("t", "r")) is not None  # the warm start's cliques are kept
    reference = estimate(domain, measurements, total=TOTAL, iters=400)
    assert model_l2_loss(model, measurements) == pytest.approx(
        model_l2_loss(reference, measurements), rel=1e-3
    )


def test_warm_start_at_the_optimum_stays_there():
    domain, measurements = noisy(3)
    best = estimate(domain, measurements, total=TOTAL, iters=600)
    again = estimate(domain, measurements, total=TOTAL, iters=20, warm_start=best)
    for m in measurements:
        np.testing.assert_allclose(again.marginal(m.clique), best.marginal(m.clique), atol=1e-3)


def test_extra_cliques_are_part_of_the_model():
    domain, measurements = noisy(0)
    model = estimate(domain, measurements, total=TOTAL, iters=30, cliques=[("t", "w", "q")])
    assert model.tree.find(("t", "w", "q")) is not None
    assert estimate(domain, measurements, total=TOTAL, iters=1).tree.find(("t", "w", "q")) is None
    # adding a clique does not change the fit to the measurements
    plain = estimate(domain, measurements, total=TOTAL, iters=300)
    wider = estimate(domain, measurements, total=TOTAL, iters=300, cliques=[("t", "w", "q")])
    assert model_l2_loss(wider, measurements) == pytest.approx(
        model_l2_loss(plain, measurements), rel=1e-3
    )
    with pytest.raises(DomainError, match="unknown attribute"):
        estimate(domain, measurements, total=TOTAL, iters=1, cliques=[("t", "zz")])


@pytest.mark.parametrize(
    ("method", "loss"), [("mirror_descent", "l2"), ("accelerated", "l2"), ("mirror_descent", "l1")]
)
def test_callback_once_per_iteration_with_a_float_loss(method, loss):
    domain, measurements = noisy(4)
    calls: list[tuple[int, float]] = []
    estimate(
        domain,
        measurements,
        total=TOTAL,
        method=method,
        loss=loss,
        init="uniform",
        iters=37,
        callback=lambda t, v: calls.append((t, v)),
    )
    assert [t for t, _ in calls] == list(range(1, 38))
    assert all(type(v) is float and np.isfinite(v) for _, v in calls)
    assert calls[-1][1] < calls[0][1]


@pytest.mark.parametrize("method", ["mirror_descent", "accelerated"])
def test_callback_reports_the_loss_of_the_returned_model(method):
    domain, measurements = noisy(5)
    seen: list[float] = []
    model = estimate(
        domain,
        measurements,
        total=TOTAL,
        method=method,
        iters=25,
        callback=lambda t, v: seen.append(v),
    )
    assert seen[-1] == pytest.approx(model_l2_loss(model, measurements), rel=1e-8)


def test_zero_iterations_returns_the_starting_model():
    domain = Domain(["a", "b"], [2, 3])
    y = np.array([[300.0, 100, 50], [250, 200, 100]])
    measurements = [Measurement(("a", "b"), y, 1.0)]
    fitted = estimate(domain, measurements, iters=0)
    np.testing.assert_allclose(fitted.marginal(("a", "b")), y, rtol=1e-9)
    uniform = estimate(domain, measurements, iters=0, init="uniform")
    np.testing.assert_allclose(uniform.marginal(("a", "b")), np.full((2, 3), 1000 / 6))


def test_fixed_step_size_mirror_descent_converges():
    domain, cliques, p = cycle_problem(6)
    measurements = [Measurement(c, TOTAL * marginal(domain, p, c), 1.0) for c in cliques]
    model = estimate(domain, measurements, total=TOTAL, step_size=1e-3, iters=1000, init="uniform")
    assert tv(model.marginal(domain.attrs), p) < 1e-3


def test_max_cells_refuses_a_large_model_clearly():
    domain, measurements = noisy(0)
    with pytest.raises(ModelTooLargeError) as info:
        estimate(domain, measurements, total=TOTAL, iters=1, max_cells=10)
    message = str(info.value)
    assert "max_cells=10" in message and "cells" in message and "largest clique" in message
    assert isinstance(info.value, DpgmError)
    big = Domain([f"x{i}" for i in range(8)], [10] * 8)
    names = big.attrs
    ring = [
        Measurement(
            names[i : i + 3] if i < 6 else (names[i], names[(i + 1) % 8], names[(i + 2) % 8]),
            np.zeros(1000),
            1.0,
        )
        for i in range(8)
    ]
    # the measured cliques hold 8,000 cells, but triangulating the ring needs 400,000
    with pytest.raises(ModelTooLargeError, match="measure smaller or fewer cliques") as info:
        estimate(big, ring, total=1.0, iters=1, max_cells=100_000)
    assert "400,000 cells" in str(info.value)


# -- refusals -----------------------------------------------------------------------------

DOMAIN = Domain(["a", "b"], [2, 3])
GOOD = [Measurement(("a", "b"), np.arange(6.0) + 1, 1.0)]


@pytest.mark.parametrize(
    ("call", "error", "pattern"),
    [
        (
            lambda: estimate(DOMAIN, [Measurement(("a", "z"), np.ones(6), 1.0)]),
            DomainError,
            r"unknown attribute\(s\) \['z'\]",
        ),
        (
            lambda: estimate(DOMAIN, [Measurement(("a", "b"), np.ones(5), 1.0)]),
            DomainError,
            r"5 values for 6 cells",
        ),
        (
            lambda: estimate(DOMAIN, [Measurement(("a", "a"), np.ones(4), 1.0)]),
            DomainError,
            "listed twice",
        ),
        (
            lambda: Measurement(("a", "b"), [1, 2, np.nan, 4, 5, 6], 1.0),
            ValueError,
            "non-finite values",
        ),
        (
            lambda: Measurement(("a", "b"), [1, 2, np.inf, 4, 5, 6], 1.0),
            ValueError,
            "non-finite values",
        ),
        (lambda: Measurement(("a", "b"), np.ones(6), 0.0), ValueError, "std must be positive"),
        (lambda: Measurement(("a", "b"), np.ones(6), -1.0), ValueError, "std must be positive"),
        (
            lambda: Measurement(("a", "b"), np.ones(6), [1, 1, 1, 0, 1, 1]),
            ValueError,
            "std must be positive",
        ),
        (lambda: Measurement(("a", "b"), np.ones(6), np.nan), ValueError, "finite"),
        (lambda: Measurement(("a", "b"), np.ones(6), [1.0, 2.0]), ValueError, "std has shape"),
        (lambda: estimate(DOMAIN, GOOD, method="newton"), ValueError, r"method .*'newton'"),
        (lambda: estimate(DOMAIN, GOOD, loss="l3"), ValueError, "unknown loss 'l3'"),
        (lambda: estimate(DOMAIN, GOOD, init="random"), ValueError, r"init .*'random'"),
        (lambda: estimate(DOMAIN, GOOD, iters=-1), ValueError, "iters must be an integer >= 0"),
        (lambda: estimate(DOMAIN, GOOD, total=0.0), ValueError, "total must be"),
        (lambda: estimate(DOMAIN, GOOD, total=-5.0), ValueError, "total must be"),
        (lambda: estimate(DOMAIN, GOOD, total=np.nan), ValueError, "total must be"),
        (lambda: estimate(DOMAIN, GOOD, total=np.inf), ValueError, "total must be"),
        (lambda: estimate(DOMAIN, GOOD, weights=[0.0]), ValueError, "weights must be"),
        (lambda: estimate(DOMAIN, GOOD, weights=[np.nan]), ValueError, "weights must be"),
        (lambda: estimate(DOMAIN, GOOD, weights=[1.0, 2.0]), ValueError,
         "weights has 2 entries for 1 measurements"),
    ],
)
def test_bad_input_is_refused_clearly(call, error, pattern):
    with pytest.raises(error, match=pattern):
        call()


def test_the_error_names_choices():
    with pytest.raises(ValueError) as info:
        estimate(DOMAIN, GOOD, method="newton")
    assert "mirror_descent" in str(info.value) and "accelerated" in str(info.value)
    with pytest.raises(ValueError) as info:
        estimate(DOMAIN, GOOD, init="random")
    assert "'fit'" in str(info.value) and "'uniform'" in str(info.value)


def test_no_measurements_with_a_total_is_handled():
    try:
        model = estimate(DOMAIN, [], total=10.0, iters=5)
    except DpgmError:
        return  # a clear refusal is fine too
    np.testing.assert_allclose(model.marginal(("a", "b")), np.full((2, 3), 10 / 6))


# -- weights ------------------------------------------------------------------------------

def test_weights_give_the_weighted_mean_of_two_answers_in_closed_form():
    # two answers to one marginal, std 1 each, weights 3 and 1: the least-squares fit is
    # (9·y1 + y2) / 10 where that is a distribution of the given total
    domain = Domain(["a"], [3])
    y1, y2 = np.array([50.0, 30.0, 20.0]), np.array([20.0, 40.0, 40.0])
    two = [Measurement(("a",), y1, 1.0), Measurement(("a",), y2, 1.0)]
    model = estimate(domain, two, total=100.0, iters=500, weights=[3.0, 1.0])
    np.testing.assert_allclose(model.marginal(("a",)), (9 * y1 + y2) / 10, atol=1e-3)
    plain = estimate(domain, two, total=100.0, iters=500)
    np.testing.assert_allclose(plain.marginal(("a",)), (y1 + y2) / 2, atol=1e-3)


def test_weights_of_one_change_nothing_and_the_model_keeps_the_released_stds():
    domain, measurements = noisy(4)
    ones = estimate(domain, measurements, total=TOTAL, iters=100,
                    weights=[1.0] * len(measurements))
    none = estimate(domain, measurements, total=TOTAL, iters=100)
    for m in measurements:
        np.testing.assert_allclose(ones.marginal(m.clique), none.marginal(m.clique))
    weighted = estimate(domain, measurements, iters=100,
                        weights=[5.0] + [1.0] * (len(measurements) - 1))
    assert [m.std for m in weighted.measured.measurements] == [m.std for m in measurements]
    assert weighted.measured.options["weights"] == [5.0] + [1.0] * (len(measurements) - 1)
    assert "weights" not in none.measured.options
    # the total comes from the released stds, whatever the weights
    assert weighted.total == pytest.approx(estimate(domain, measurements, iters=1).total)
