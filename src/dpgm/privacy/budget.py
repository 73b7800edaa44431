"""A privacy budget: a ledger that refuses any spend beyond its total.

Neighbouring datasets differ by adding or removing one record (unbounded DP). Two modes:

* ``"pure"`` — ε-DP, spends add up (sequential composition);
* ``"zcdp"`` — ρ-zCDP, spends in ρ add up; an ε-DP spend counts as ρ = ε²/2 (an ε-DP
  mechanism is ε²/2-zCDP, Bun & Steinke 2016, Prop. 1.4). A budget given as (ε, δ) holds
  ρ = :func:`~dpgm.privacy.accounting.cdp_rho` (ε, δ), so spending all of it is (ε, δ)-DP;
* ``"approx"`` — (ε, δ)-DP with basic composition: the ε and the δ of the spends add up
  (:meth:`PrivacyBudget.approximate`); for mechanisms with an inherent δ, such as
  choosing which labels occur (partition selection).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dpgm.errors import BudgetExceededError, PrivacyParameterError
from dpgm.privacy.accounting import cdp_epsilon, cdp_rho
from dpgm.privacy.policy import check_delta, check_epsilon, check_probability

# Relative slack on the total, so that k charges of total/k never fail on rounding.
_RELATIVE_SLACK = 1e-9


@dataclass(frozen=True)
class LedgerEntry:
    """One recorded spend: ``epsilon`` for an ε-DP charge, ``rho`` for what a zCDP budget counted.

    In pure mode ``rho`` is None. In zCDP mode ``rho`` is always set; ``epsilon`` is set
    too when the charge was made in ε (then ``rho == epsilon**2 / 2``). ``accounting``
    says how a composite spend was accounted, e.g. the Rényi-DP composition of DP-SGD's
    steps behind one (ε, δ) entry.
    """

    label: str
    epsilon: float | None
    rho: float | None
    delta: float = 0.0
    accounting: str = ""


class PrivacyBudget:
    """Total privacy loss allowed, and a ledger of what has been spent.

    ``PrivacyBudget(epsilon=1)`` is pure ε-DP; ``PrivacyBudget(rho=0.5)`` is ρ-zCDP;
    ``PrivacyBudget(epsilon=1, delta=1e-9)`` is zCDP with ρ = cdp_rho(1, 1e-9). A ρ budget
    may also be given a ``delta``, used only to report spends as (ε, δ).
    """

    def __init__(
        self,
        epsilon: float | None = None,
        delta: float | None = None,
        rho: float | None = None,
    ):
        if rho is not None and epsilon is not None:
            raise PrivacyParameterError("give epsilon (with optional delta) or rho, not both")
        if rho is None and epsilon is None:
            raise PrivacyParameterError("a privacy budget needs epsilon or rho")
        self._delta = check_delta(delta)
        self._epsilon = None if epsilon is None else check_epsilon(epsilon)
        if rho is not None:
            self._mode = "zcdp"
            self._total = check_epsilon(rho, "rho")
        elif self._delta is None:
            self._mode = "pure"
            self._total = self._epsilon
        else:
            self._mode = "zcdp"
            self._total = cdp_rho(self._epsilon, self._delta)
        self._spent = 0.0
        self._spent_delta = 0.0
        self._ledger: list[LedgerEntry] = []

    @classmethod
    def approximate(cls, epsilon: float, delta: float) -> PrivacyBudget:
        """An (ε, δ)-DP budget under basic composition: spent ε's and δ's each add up."""
        budget = cls(epsilon=epsilon)
        budget._mode = "approx"
        budget._delta = check_delta(delta)
        return budget

    # -- spending ---------------------------------------------------------------------
    def charge(
        self,
        *,
        epsilon: float | None = None,
        rho: float | None = None,
        delta: float = 0.0,
        label: str = "",
        accounting: str = "",
    ) -> LedgerEntry:
        """Record a spend of ``epsilon`` (ε-DP) or ``rho`` (ρ-zCDP) and return its entry.

        Raises :class:`BudgetExceededError`, recording nothing, if the spend exceeds what is
        left; raises :class:`PrivacyParameterError` for a ρ charge on a pure-ε budget. A
        ``delta`` (an (ε, δ)-DP spend) is accepted by an ``"approx"`` budget only;
        ``accounting`` records how the spend was computed (kept in the entry).
        """
        if (epsilon is None) == (rho is None):
            raise PrivacyParameterError("charge exactly one of epsilon or rho")
        if delta:
            delta = check_probability("delta", delta)
            if self._mode != "approx" or rho is not None:
                raise PrivacyParameterError(
                    "an (epsilon, delta) spend needs a budget made with PrivacyBudget.approximate"
                )
            if self._spent_delta + delta > self._delta * (1.0 + _RELATIVE_SLACK):
                where = f" for {label!r}" if label else ""
                raise BudgetExceededError(
                    f"privacy budget exceeded{where}: asked for delta={delta:g}, only "
                    f"delta={max(self._delta - self._spent_delta, 0.0):g} left of {self._delta:g}"
                )
        if rho is not None:
            rho = check_epsilon(rho, "rho")
            if self._mode in ("pure", "approx"):
                raise PrivacyParameterError(
                    f"cannot charge rho={rho:g} to a pure epsilon-DP budget; "
                    "zCDP spends need a budget made with rho or with (epsilon, delta)"
                )
            entry = LedgerEntry(label, None, rho, accounting=accounting)
            amount, asked = rho, f"rho={rho:g}"
        else:
            epsilon = check_epsilon(epsilon)
            if self._mode in ("pure", "approx"):
                entry = LedgerEntry(label, epsilon, None, float(delta), accounting)
                amount = epsilon
                asked = f"epsilon={epsilon:g}"
            else:
                amount = epsilon**2 / 2.0
                entry = LedgerEntry(label, epsilon, amount, accounting=accounting)
                asked = f"epsilon={epsilon:g} (rho={amount:g})"
        if self._spent + amount > self._total * (1.0 + _RELATIVE_SLACK):
            where = f" for {label!r}" if label else ""
            raise BudgetExceededError(
                f"privacy budget exceeded{where}: asked for {asked}, "
                f"only {self._unit}={self.remaining:g} left of {self._total:g}"
            )
        self._spent += amount
        self._spent_delta += float(delta)
        self._ledger.append(entry)
        return entry

    def include(self, other: PrivacyBudget) -> None:
        """Charge, entry by entry, what ``other`` spent (a part of this run that kept its
        own budget); refused like any charge that would overspend."""
        for entry in other.ledger:
            if self._mode == "zcdp" and entry.epsilon is None:
                self.charge(rho=entry.rho, label=entry.label, accounting=entry.accounting)
            else:
                self.charge(epsilon=entry.epsilon, delta=entry.delta, label=entry.label,
                            accounting=entry.accounting)

    # -- state ------------------------------------------------------------------------
    @property
    def mode(self) -> str:
        """``"pure"`` (ε-DP), ``"zcdp"`` (ρ-zCDP) or ``"approx"`` ((ε, δ)-DP) accounting."""
        return self._mode

    @property
    def _unit(self) -> str:
        return "rho" if self._mode == "zcdp" else "epsilon"

    @property
    def total(self) -> float:
        """The whole budget, in ε (pure mode) or ρ (zCDP mode)."""
        return self._total

    @property
    def delta(self) -> float | None:
        """The δ used to report zCDP spends as (ε, δ), if one was given."""
        return self._delta

    @property
    def remaining(self) -> float:
        """What is left, in the budget's unit (never negative)."""
        return max(self._total - self._spent, 0.0)

    @property
    def spent_rho(self) -> float:
        """ρ spent. In pure mode, the zCDP guarantee implied: Σ ε_i²/2."""
        if self._mode == "zcdp":
            return self._spent
        if self._mode == "approx" and self._spent_delta > 0:
            raise PrivacyParameterError("spends with a delta have no zCDP guarantee")
        return math.fsum(e.epsilon**2 / 2.0 for e in self._ledger)

    @property
    def spent_epsilon(self) -> float:
        """ε spent: the sum in pure mode; in zCDP mode the ε of :meth:`spent_epsilon_delta`."""
        if self._mode != "zcdp":
            return self._spent
        return self.spent_epsilon_delta()[0]

    def spent_epsilon_delta(self, delta: float | None = None) -> tuple[float, float]:
        """The (ε, δ)-DP guarantee of what was spent; δ is 0 in pure mode.

        In zCDP mode ε = cdp_epsilon(spent_rho, δ), with the budget's δ unless ``delta`` is
        given (a budget made from ρ alone needs one).
        """
        if self._mode == "pure":
            return self._spent, 0.0
        if self._mode == "approx":
            return self._spent, self._spent_delta
        delta = self._delta if delta is None else check_probability("delta", delta)
        if delta is None:
            raise PrivacyParameterError(
                "this zCDP budget was given no delta; pass delta= to convert to (epsilon, delta)"
            )
        return cdp_epsilon(self._spent, delta), delta

    def require(self, amount: float, what: str, note: str = "") -> None:
        """Refuse work that will charge ``amount`` (in the budget's unit) where less is left,
        with the slack :meth:`charge` allows: called before the data are read, so that a
        run bound to overspend reads and spends nothing."""
        if self._spent + amount > self._total * (1.0 + _RELATIVE_SLACK):
            raise BudgetExceededError(f"{what} needs {self._unit}={amount:g}{note}, only "
                                      f"{self._unit}={self.remaining:g} left")

    def to_json(self) -> dict:
        """The ledger as JSON: the accounting, what was spent as (ε, δ) (and ρ in zCDP
        mode) and every entry, oldest first (what ``--ledger`` files and model files hold)."""
        epsilon, delta = (self.spent_epsilon_delta() if self._mode != "zcdp" or
                          self._delta is not None else (None, None))
        spent: dict = {"epsilon": epsilon, "delta": delta}
        if self._mode == "zcdp":
            spent["rho"] = self.spent_rho
        entries = [
            {"label": e.label, "epsilon": e.epsilon, "rho": e.rho, "delta": e.delta,
             **({"accounting": e.accounting} if e.accounting else {})}
            for e in self._ledger
        ]
        return {"accounting": self._mode, "spent": spent, "entries": entries}

    @property
    def ledger(self) -> list[LedgerEntry]:
        """The recorded spends, oldest first (a copy)."""
        return list(self._ledger)

    def __repr__(self) -> str:
        if self._mode == "pure":
            given = f"epsilon={self._total:g}"
        elif self._mode == "approx":
            given = f"epsilon={self._total:g}, delta={self._delta:g} (basic composition)"
        elif self._epsilon is not None:
            given = f"epsilon={self._epsilon:g}, delta={self._delta:g} -> rho={self._total:g}"
        else:
            given = f"rho={self._total:g}" + (
                "" if self._delta is None else f", delta={self._delta:g}"
            )
        return (
            f"PrivacyBudget({given}; spent {self._unit}={self._spent:g}, "
            f"remaining {self.remaining:g}, {len(self._ledger)} charges)"
        )
