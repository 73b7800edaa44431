"""Empirical privacy audits of every mechanism (both estimators), end to end.

For each (mechanism, estimator): two neighbouring data sets D and D + x on a tiny domain;
the mechanism fitted many times on each without a seed (OpenDP's exact samplers); one
event fixed before the runs, on what the mechanism releases (its measurements); and
Clopper–Pearson bounds on the event's probabilities, judged against the mechanism's own
claim (pure ε, or the ρ of its zCDP budget). Then the power check: the same event and
number of runs with every noise scale and selection temperature halved (charges
unchanged) must prove the claim false. Power checks use one seed per run, so their
outcome is reproducible; the claim checks run unseeded, and a sound mechanism fails one
only if a Clopper–Pearson bound fails (probability below 2e-5).

The events: with Gaussian noise, the likelihood-ratio statistic of the measurements x
moves, above a threshold (``linear_statistic``); with Laplace noise, every such answer at
or past D's answer plus the move (``tail_statistic``), whose likelihood ratio is exactly
e^{Σ ε_i}. Options are chosen so that the measurements carry most of the budget (a
selection's loss is not seen by these events): AIM as it is (alpha = 0.9); DualQuery with
count_share = 0.9; PrivBayes with beta = 0.05; MWEM with total_share = 0.95; HDMM and
ResidualPlanner with one clique; CGM on its one clique table; the CPD learners on a → b,
Algorithm 2 with stage_share = 0.05 (its Stage-II tables are the measurements). Their four
tables make the tail event too rare for a power check in CI, so theirs is made on one
attribute (two tables, the same measuring code). MST's measurements carry two thirds of
its budget, so it needs more runs.

On these domains every estimator of a mechanism releases the same measurements, seed for
seed (a CI test checks it): the estimators differ in post-processing only, so their audits
sample one distribution. CI therefore audits each release once, through its power-checked
estimator; the other estimators' claim checks run with ``--run-slow``.

Scale up for a release check: ``pytest tests/audit --audit-runs 10`` (or
``DPGM_AUDIT_RUNS=10``) makes ten times the runs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pytest
from audit_helpers import Claim, collect, judge, linear_statistic, run_scale, tail_statistic

from dpgm import Dataset, Domain
from dpgm.mechanisms import BN_LEARNERS, REGISTRY
from dpgm.workload import Workload

BASE = np.array([[0, 0, 0], [0, 1, 1], [1, 1, 0], [1, 0, 1], [0, 0, 1], [1, 1, 1], [0, 1, 0],
                 [1, 0, 0]] * 8)  # 64 records
RECORD = np.array([1, 1, 1])


@dataclass(frozen=True)
class Spec:
    """One audit: a mechanism, its options, the event, and the runs (in CI)."""

    name: str
    estimator: str
    epsilon: float
    options: tuple
    statistic: str
    threshold: float
    runs: int
    width: int = 2
    workload: tuple | None = None
    numeric: tuple = ()  # the workload's attributes asked prefix ranges
    power: bool = True
    slow: bool = False  # run with --run-slow: a composition of parts audited on their own

    @property
    def domain(self) -> Domain:
        return Domain(["a", "b", "c"][: self.width], [2] * self.width)

    def data(self, with_record: bool) -> Dataset:
        records = BASE[:, : self.width]
        if with_record:
            records = np.vstack([records, RECORD[: self.width]])
        return Dataset(records, self.domain)

    def mechanism(self):
        options = dict(self.options)
        if "structure" in options:  # kept as pairs so that the spec stays hashable
            options["structure"] = dict(options["structure"])
        learner = {**REGISTRY, **BN_LEARNERS}[self.name]
        return learner(self.epsilon, estimator=self.estimator, **options)

    def claim(self) -> Claim:
        budget = self.mechanism().new_budget()
        return Claim(epsilon=budget.total) if budget.mode == "pure" else Claim(rho=budget.total)

    def statistic_of_run(self, with_record: bool, seed: int | None) -> float:
        mechanism = self.mechanism()
        workload = Workload(self.workload, self.numeric) if self.numeric else self.workload
        mechanism.fit(self.data(with_record), workload=workload, rng=seed)
        base, domain = self.data(False), self.domain

        def truth(clique):
            return base.marginal(clique).ravel()

        def cell(clique):
            table = np.zeros(domain.project(clique).shape)
            table[tuple(RECORD[list(domain.axes(clique))])] = 1.0
            return table.ravel()

        compute = linear_statistic if self.statistic == "linear" else tail_statistic
        return compute(mechanism.measurements, truth, cell)


# ε = 15 with the default δ = 1e-9 is ρ ≈ 2.2, where the Rényi test is sharpest. The
# thresholds are in the statistic's units under the claimed noise (halved noise halves its
# spread); with them and these runs, a Normal (Laplace) approximation puts even the 1%
# quantile of the halved audit's outcome past the claim, and ε = 1.75 does the same for
# the Laplace tail event, whose probability with the record is about 1/2
FAST_PGM = (("iters", 5),)
SPECS = [
    # the original is the same code as Private-PGM: its claim check is a shorter one
    Spec("mst", est, 15.0, (("compress", False), *FAST_PGM), "linear", 1.125, runs,
         power=est == "pgm")
    for est, runs in (("pgm", 2000), ("original", 400))
] + [
    Spec("aim", est, 15.0, (("rounds", 2), ("round_iters", 3), *FAST_PGM), "linear", 1.25, 800,
         power=est == "pgm")
    for est in ("pgm", "original")
] + [
    # the AIM path (a share on AIM, the rest on the plan), with --run-slow: AIM and the
    # plan's measuring code (ResidualPlanner's, the default's one-shot path) are audited
    # on their own in CI
    Spec("aim-rp", "pgm", 15.0, (("selection_share", 0.5), ("rounds", 2), ("round_iters", 3),
                                 *FAST_PGM), "linear", 1.25, 800, slow=True)
] + [
    # the records estimator: the one-shot plan (ResidualPlanner's measuring code, audited
    # in CI), then records fitted to its tables; with --run-slow
    Spec("aim-rp", "records", 15.0, (), "linear", 1.125, 400, workload=(("a", "b"),),
         slow=True),
    # and on a workload's triple (the plan's residuals of the triple and of its parts)
    Spec("aim-rp", "records", 15.0, (), "linear", 1.125, 400, width=3,
         workload=(("a", "b", "c"),), slow=True)
] + [
    # the default's route: the record count, then the records (or AIM and the plan) on the
    # rest; one_shot_cells=1 makes the pair's tree too large for the one-shot model, so
    # that the count is measured; with --run-slow (the count's measuring code is
    # measure_linear's, audited in CI)
    Spec("aim-rp", "auto", 15.0, (("one_shot_cells", 1), ("rounds", 2), ("round_iters", 3),
                                  *FAST_PGM), "linear", 1.25, 400, workload=(("a", "b"),),
         slow=True)
] + [
    Spec("swift", est, 15.0, FAST_PGM, "linear", 1.125, 2000, power=est == "pgm")
    for est in ("pgm", "original")
] + [
    Spec("dualquery", est, 15.0, (("count_share", 0.9), ("rounds", 3), ("samples", 3),
                                  *FAST_PGM), "linear", 1.25, 800)
    for est in ("pgm", "original")
] + [
    Spec("privbayes", est, 1.75, (("beta", 0.05), ("theta", 0.01), *FAST_PGM), "tail", 0.0,
         1000)
    for est in ("pgm", "original")
] + [
    Spec("mwem", est, 1.75, (("total_share", 0.95), ("rounds", 1), ("round_iters", 3),
                             *FAST_PGM), "tail", 0.0, 1000)
    for est in ("pgm", "original")
] + [
    Spec("hdmm", est, 1.75, FAST_PGM, "tail", 0.0, 1000, workload=(("a", "b"),))
    for est in ("pgm", "original")
] + [
    # the two estimators share the release: the original (no estimation, quick) carries
    # the full check and the power check, Private-PGM's claim check is a shorter one
    Spec("residual-planner", est, 15.0, FAST_PGM, "linear", 1.125, runs,
         power=est == "original", workload=(("a", "b"),))
    for est, runs in (("pgm", 400), ("original", 2000))
] + [
    # prefix ranges of b: its residuals measured with the prefix-range strategy (column
    # norm 1, not Helmert's 1/√2) under the "error" loss's allocation
    Spec("residual-planner", "original", 15.0, (("loss", "error"),), "linear", 1.125, 2000,
         workload=(("a", "b"),), numeric=("b",))
] + [
    Spec("cgm", est, 1.75, (("em_iters", 3), *FAST_PGM), "tail", 0.0, 1000, power=est == "em")
    for est in ("em", "pgm", "naive", "naive-projected")
] + [
    Spec(name, est, 1.75, (("structure", structure), *extra, *FAST_PGM), "tail", 0.0, 1000,
         width=width, power=power)
    for name, extra in (("dind", ()), ("data-dependent", (("stage_share", 0.05),)))
    for est, structure, width, power in (("pgm", (("b", ("a",)),), 2, False),
                                         ("original", (("b", ("a",)),), 2, False),
                                         ("original", (), 1, True))
]


def _release_group(spec: Spec) -> tuple:
    """The specs that audit one release: one mechanism with one set of options on one
    domain, any estimator."""
    return spec.name, spec.width, spec.workload, spec.options


def _others_with_run_slow(specs: list[Spec]) -> list[Spec]:
    """Each release's audit in CI once: its power-checked spec (else its first); its other
    estimators' claim checks with --run-slow. Sound because every estimator of a
    mechanism releases the same measurements here (``test_every_estimator_of_a_mechanism_
    releases_the_same_measurements``, in CI), so their audits sample one distribution."""
    main: dict[tuple, Spec] = {}
    for spec in specs:
        key = _release_group(spec)
        if key not in main or (spec.power and not main[key].power):
            main[key] = spec
    return [spec if spec is main[_release_group(spec)] or spec.slow
            else replace(spec, slow=True) for spec in specs]


SPECS = _others_with_run_slow(SPECS)
IDS = [f"{s.name}-{s.estimator}" + ("-one-attribute" if s.width == 1 else "")
       + ("-triple" if s.workload and any(len(c) > 2 for c in s.workload) else "")
       + ("-ranges" if s.numeric else "")
       for s in SPECS]


@pytest.fixture(scope="module")
def scale(pytestconfig) -> float:
    return run_scale(pytestconfig)


def test_every_mechanism_and_estimator_is_audited():
    # DP-SGD releases noisy gradients, not measurements: test_sgd_audit.py audits its step
    audited = {(s.name, s.estimator) for s in SPECS} | {("psgd", "sgd")}
    learners = {**REGISTRY, **BN_LEARNERS}
    assert audited == {(n, e) for n, cls in learners.items() for e in cls.estimators}


def _params(specs, ids):
    return [pytest.param(s, id=i, marks=[pytest.mark.slow] if s.slow else [])
            for s, i in zip(specs, ids)]


@pytest.mark.parametrize("spec", _params(SPECS, IDS))
def test_the_claim_survives_its_audit(spec, scale):
    runs = int(spec.runs * scale)
    with_record, without = collect(spec, runs)
    outcome = judge(with_record, without, spec.threshold, spec.claim())
    assert not outcome.violated, f"{spec.claim()}: {outcome}"
    assert outcome.hits > outcome.hits_without  # the event does tell the neighbours apart


GROUPS = sorted({_release_group(s) for s in SPECS}, key=str)


@pytest.mark.parametrize("group", [g for g in GROUPS
                                   if sum(_release_group(s) == g for s in SPECS) > 1],
                         ids=lambda g: f"{g[0]}-{g[1]}")
def test_every_estimator_of_a_mechanism_releases_the_same_measurements(group):
    # what the audits observe; the estimators differ only in post-processing here
    specs = [s for s in SPECS if _release_group(s) == group]
    for seed in range(3):
        for with_record in (True, False):
            releases = set()
            for spec in specs:
                mechanism = spec.mechanism()
                mechanism.fit(spec.data(with_record), workload=spec.workload, rng=seed)
                releases.add(tuple((tuple(m.clique), np.asarray(m.values).tobytes())
                                   for m in mechanism.measurements))
            assert len(releases) == 1, [s.estimator for s in specs]
    assert len({s.claim() for s in specs}) == 1


@pytest.mark.parametrize("spec", _params([s for s in SPECS if s.power],
                                         [i for i, s in zip(IDS, SPECS) if s.power]))
def test_halved_noise_is_caught(spec, scale):
    runs = int(spec.runs * scale)
    with_record, without = collect(spec, runs, halved=True, seeded=True)
    outcome = judge(with_record, without, spec.threshold, spec.claim())
    assert outcome.violated, f"{spec.claim()}: {outcome}"
