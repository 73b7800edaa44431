"""The privacy ledger: modes, refusals, conversions, parameter checks."""

import math
import warnings

import pytest

from dpgm.errors import BudgetExceededError, PrivacyParameterError, PrivacyWarning
from dpgm.privacy import DEFAULT_DELTA, PrivacyBudget, cdp_epsilon, cdp_rho


def test_modes_and_totals():
    pure = PrivacyBudget(epsilon=1.0)
    assert (pure.mode, pure.total, pure.remaining) == ("pure", 1.0, 1.0)
    zcdp = PrivacyBudget(rho=0.5)
    assert (zcdp.mode, zcdp.total) == ("zcdp", 0.5)
    approx = PrivacyBudget(epsilon=1.0, delta=1e-9)
    assert approx.mode == "zcdp"
    assert approx.total == cdp_rho(1.0, 1e-9)
    assert approx.delta == 1e-9


def test_overspend_is_refused_and_records_nothing():
    budget = PrivacyBudget(epsilon=1.0)
    budget.charge(epsilon=0.7, label="first")
    with pytest.raises(BudgetExceededError) as info:
        budget.charge(epsilon=0.5, label="second")
    message = str(info.value)
    assert "epsilon=0.5" in message and "0.3" in message and "second" in message
    assert budget.spent_epsilon == pytest.approx(0.7)
    assert [e.label for e in budget.ledger] == ["first"]
    budget.charge(epsilon=0.3)  # what is left can still be spent
    assert budget.remaining == pytest.approx(0.0)
    with pytest.raises(BudgetExceededError):
        budget.charge(epsilon=1e-6)


def test_zcdp_overspend_is_refused():
    budget = PrivacyBudget(rho=0.1)
    with pytest.raises(BudgetExceededError, match="rho=0.2"):
        budget.charge(rho=0.2)
    assert budget.ledger == [] and budget.spent_rho == 0.0
    # an epsilon charge counts as rho = eps^2 / 2 = 0.125 > 0.1
    with pytest.raises(BudgetExceededError, match="rho=0.125"):
        budget.charge(epsilon=0.5)
    assert budget.ledger == []


@pytest.mark.parametrize("k", [2, 3, 7, 10, 49, 100, 1000])
@pytest.mark.parametrize("total", [0.1, 0.3, 1.0, 2.7, 1 / 3])
def test_equal_split_never_fails(k, total):
    for budget in (PrivacyBudget(epsilon=total), PrivacyBudget(rho=total)):
        unit = "epsilon" if budget.mode == "pure" else "rho"
        for _ in range(k):
            budget.charge(**{unit: total / k})
        assert len(budget.ledger) == k
        assert budget.remaining == pytest.approx(0.0, abs=1e-9 * total)
    budget = PrivacyBudget(epsilon=total, delta=1e-6)
    for _ in range(k):
        budget.charge(rho=budget.total / k)
    assert budget.spent_epsilon == pytest.approx(total, rel=1e-6)


def test_epsilon_charge_in_zcdp_mode_counts_half_its_square():
    budget = PrivacyBudget(rho=1.0)
    entry = budget.charge(epsilon=0.4, label="laplace")
    assert entry.epsilon == 0.4 and entry.rho == pytest.approx(0.08)
    assert budget.spent_rho == pytest.approx(0.08)
    assert budget.remaining == pytest.approx(0.92)


def test_rho_charge_on_pure_budget_is_refused():
    budget = PrivacyBudget(epsilon=1.0)
    with pytest.raises(PrivacyParameterError, match="pure"):
        budget.charge(rho=0.01)
    assert budget.ledger == []


def test_spent_epsilon_delta():
    pure = PrivacyBudget(epsilon=2.0)
    pure.charge(epsilon=0.5)
    pure.charge(epsilon=0.25)
    assert pure.spent_epsilon_delta() == (0.75, 0.0)
    assert pure.spent_rho == pytest.approx(0.5**2 / 2 + 0.25**2 / 2)

    approx = PrivacyBudget(epsilon=1.0, delta=1e-9)
    approx.charge(rho=approx.total / 2)
    eps, delta = approx.spent_epsilon_delta()
    assert delta == 1e-9
    assert eps == pytest.approx(cdp_epsilon(approx.total / 2, 1e-9))
    assert 0.0 < eps < 1.0
    approx.charge(rho=approx.remaining)
    assert approx.spent_epsilon == pytest.approx(1.0, rel=1e-9)

    rho_only = PrivacyBudget(rho=0.1)
    rho_only.charge(rho=0.05)
    with pytest.raises(PrivacyParameterError, match="delta"):
        rho_only.spent_epsilon_delta()
    assert rho_only.spent_epsilon_delta(1e-6) == (cdp_epsilon(0.05, 1e-6), 1e-6)
    with pytest.warns(PrivacyWarning, match="delta=1e-05 is large"):
        assert PrivacyBudget(rho=0.1, delta=1e-5).spent_epsilon_delta() == (0.0, 1e-5)


def test_ledger_is_a_copy_and_repr_is_readable():
    budget = PrivacyBudget(epsilon=1.0, delta=1e-6)
    budget.charge(rho=0.01, label="marginals")
    budget.ledger.clear()
    assert [(e.label, e.rho) for e in budget.ledger] == [("marginals", 0.01)]
    text = repr(budget)
    assert "epsilon=1" in text and "delta=1e-06" in text and "rho=" in text and "1 charges" in text
    assert "epsilon=1" in repr(PrivacyBudget(epsilon=1))


NAN, INF = math.nan, math.inf


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"epsilon": -1}, "epsilon must be > 0, got -1"),
        ({"epsilon": 0}, "epsilon must be > 0, got 0"),
        ({"epsilon": NAN}, "epsilon must be a finite number > 0, got nan"),
        ({"epsilon": INF}, "epsilon must be a finite number"),
        ({"epsilon": True}, "epsilon must be a number"),
        ({"epsilon": "1"}, "epsilon must be a number"),
        ({"epsilon": 1, "delta": 0}, "delta must be in (0, 1)"),
        ({"epsilon": 1, "delta": 1}, "delta must be in (0, 1)"),
        ({"epsilon": 1, "delta": -0.5}, "delta must be in (0, 1)"),
        ({"epsilon": 1, "delta": NAN}, "delta must be a finite number in (0, 1)"),
        ({"epsilon": 1, "delta": 0.5}, "at least 0.1"),
        ({"rho": 0}, "rho must be > 0, got 0"),
        ({"rho": -0.1}, "rho must be > 0"),
        ({"rho": NAN}, "rho must be a finite number > 0, got nan"),
        ({}, "needs epsilon or rho"),
        ({"delta": 1e-6}, "needs epsilon or rho"),
        ({"epsilon": 1, "rho": 1}, "not both"),
    ],
)
def test_bad_parameters(kwargs, fragment):
    with pytest.raises(PrivacyParameterError) as info:
        PrivacyBudget(**kwargs)
    assert fragment in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "kwargs", [{"epsilon": 0}, {"epsilon": NAN}, {"rho": -1}, {}, {"epsilon": 0.1, "rho": 0.1}]
)
def test_bad_charges(kwargs):
    budget = PrivacyBudget(rho=1.0)
    with pytest.raises(PrivacyParameterError):
        budget.charge(**kwargs)
    assert budget.ledger == []


def test_delta_policy_one_default_a_warning_and_a_limit():
    assert DEFAULT_DELTA == 1e-9
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning below 1e-5
        PrivacyBudget(epsilon=1, delta=9.9e-6)
    with pytest.warns(PrivacyWarning, match="far below 1/n"):
        PrivacyBudget(epsilon=1, delta=1e-3)
    with pytest.raises(PrivacyParameterError, match="delta=0.1 is at least 0.1"):
        PrivacyBudget(epsilon=1, delta=0.1)


def test_require_refuses_what_charge_would_refuse_and_nothing_else():
    budget = PrivacyBudget(rho=1.0)
    budget.charge(rho=0.25, label="first")
    budget.require(0.75, "the rest")  # exactly what is left: allowed, as charge allows it
    budget.require(0.75 * (1 + 1e-12), "the rest, within the slack")
    with pytest.raises(BudgetExceededError, match="learning needs rho=0.8, only rho=0.75 left"):
        budget.require(0.8, "learning")
    assert [e.label for e in budget.ledger] == ["first"]  # require charges nothing
