"""Helpers shared by the mechanisms' tests: stand-ins for data, fast settings, budgets."""

from __future__ import annotations

from dpgm import Dataset, Domain, MarkovRandomField
from dpgm.mechanisms import LEARNERS
from dpgm.privacy import PrivacyBudget

__all__ = ["LEARNERS"]  # every learner keeps the mechanism contract (the one registry)

#: a public structure over the conformance tests' attributes a, b, c, d (the CPD
#: learners' structure); {a, d} is a family, so a constraint on a and d can hold
STRUCTURE = {"a": (), "d": ("a",), "b": ("a",), "c": ("b", "d")}


class Untouchable:
    """Stands in for data: any use of it fails the test."""

    def __getattr__(self, name):
        raise AssertionError(f"data was read ({name}) before the parameters were checked")


def _read(self):
    raise AssertionError("the records were read before a public-facts check")


class PublicOnly(Dataset):
    """A Dataset whose public domain may be read, and nothing else."""

    records = property(_read)
    weights = property(_read)

    def __init__(self, domain: Domain):  # noqa: D107 (no records to keep)
        self.domain = domain

    def marginal(self, attrs):
        _read(self)

    def __len__(self):
        _read(self)


def spent(budget: PrivacyBudget) -> float:
    """What a ledger spent in the budget's own unit (ε, or ρ in zCDP mode)."""
    return sum(e.rho if budget.mode == "zcdp" else e.epsilon for e in budget.ledger)


#: per mechanism, options that keep a fit on a small domain fast (and within its limits)
FAST = {
    "mst": {"iters": 30},
    "aim": {"rounds": 6, "round_iters": 10, "iters": 30},
    "aim-rp": {"rounds": 6, "round_iters": 10, "iters": 30},
    "swift": {"iters": 30},
    "privbayes": {"iters": 30},
    "mwem": {"rounds": 3, "round_iters": 10, "iters": 30, "mw_passes": 2},
    "dualquery": {"samples": 5, "rounds": 4, "iters": 20},
    "hdmm": {"iters": 30},
    "residual-planner": {"iters": 30},
    "cgm": {"iters": 30, "em_iters": 20},
    "psgd": {"sampling_rate": 0.1, "epochs": 1},
    "dind": {"iters": 30, "structure": STRUCTURE},
    "data-dependent": {"iters": 30, "structure": STRUCTURE},
    "bn-learn": {"iters": 30},
    "ising": {"width": 1.5, "steps": 20},
    "pairwise": {"width": 1.5, "steps": 20},
    "twise": {"width": 1.5, "steps": 20, "order": 2},
    "structure": {"width": 1.5, "min_edge_weight": 0.3, "method": "zcdp"},
}


def sample_data(domain: Domain, n: int, seed: int = 0) -> Dataset:
    """``n`` records from a random chain model over ``domain``."""
    import numpy as np

    rng = np.random.default_rng(seed)
    pairs = list(zip(domain.attrs, domain.attrs[1:]))
    potentials = {p: rng.normal(size=domain.project(p).shape) for p in pairs}
    return MarkovRandomField(domain, potentials, total=n).sample(n, rng=seed)


def prespent(mechanism, share: float):
    """Make ``mechanism`` fit against a ledger another release already spent ``share`` of."""
    make = mechanism.new_budget

    def new_budget() -> PrivacyBudget:
        budget = make()
        if budget.mode != "zcdp":  # pure or (epsilon, delta): the total is an epsilon
            budget.charge(epsilon=share * budget.total, label="another release")
        else:
            budget.charge(rho=share * budget.total, label="another release")
        return budget

    mechanism.new_budget = new_budget
    return mechanism
