"""The contract every registered learner keeps, checked on each (learner, estimator).

A new learner gets all of this by being added to ``dpgm.mechanisms.LEARNERS`` (and a line
of fast settings in ``mechanism_helpers.FAST``): seeding,
exact budget, the δ policy, refusal before reading data or spending anything, parameter
checks, progress lines that leak nothing, and a fresh state on every fit.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from mechanism_helpers import (
    FAST,
    LEARNERS,
    PublicOnly,
    Untouchable,
    prespent,
    sample_data,
    spent,
)

from dpgm import Dataset, Domain
from dpgm.errors import (
    BudgetExceededError,
    DataError,
    DpgmError,
    ModelTooLargeError,
    ParameterError,
    PrivacyParameterError,
    PrivacyWarning,
    SeedWarning,
)
from dpgm.mechanisms import Mechanism
from dpgm.mechanisms.base import PRIVACY_KINDS
from dpgm.mrf import StructureEstimate
from dpgm.privacy import DEFAULT_DELTA, cdp_rho

DOMAIN = Domain(["a", "b", "c", "d"], [2, 3, 4, 2])
#: the MRF learners' models are binary (Ising, t-wise) or k-ary with one k (pairwise)
BINARY = Domain(["a", "b", "c", "d"], [2, 2, 2, 2])
N = 4817  # a distinctive record count, to look for in the progress lines
CASES = [(name, est) for name, cls in LEARNERS.items() for est in cls.estimators]
IDS = [f"{name}-{est}" for name, est in CASES]


@pytest.fixture(scope="module")
def samples():
    return {domain: sample_data(domain, N, seed=3) for domain in (DOMAIN, BINARY)}


def domain_of(name: str) -> Domain:
    """The domain a learner's conformance runs on."""
    return BINARY if LEARNERS[name].kind == "mrf" else DOMAIN


@pytest.fixture
def data(samples, name):
    return samples[domain_of(name)]


def make(name: str, estimator: str | None = None, epsilon: float = 1.0, **options) -> Mechanism:
    """``name`` with its fast settings; ``estimator=None``: the mechanism's default."""
    chosen = {} if estimator is None else {"estimator": estimator}
    return LEARNERS[name](epsilon, **chosen, **{**FAST[name], **options})


def answers(result) -> np.ndarray:
    """Every one-way and two-way marginal of a result, flattened (for comparing fits); the
    edges of an edge set."""
    if isinstance(result, StructureEstimate):
        return np.array(sorted(result.edges or ()), dtype=object).ravel()
    tables = [result.marginal((a,)) for a in DOMAIN] + [result.marginal(("a", "b"))]
    return np.concatenate([np.ravel(t) for t in tables])


def test_every_mechanism_has_fast_settings_and_a_known_accounting():
    assert set(FAST) == set(LEARNERS)
    for cls in LEARNERS.values():
        assert issubclass(cls, Mechanism)
        assert cls.privacy in PRIVACY_KINDS
        # Private-PGM serves every mechanism that releases measurements; DP-SGD releases
        # noisy gradients only, the MRF learners Frank-Wolfe's selections
        assert "pgm" in cls.estimators or cls.estimators in (("sgd",), ("original",))
        assert cls.kind in ("synthesizer", "bn", "mrf")


@pytest.mark.parametrize(("name", "estimator"), CASES, ids=IDS)
def test_same_seed_identical_different_seed_differs(data, name, estimator):
    one = make(name, estimator)
    first = answers(one.fit(data, rng=11))
    second = answers(make(name, estimator).fit(data, rng=11))
    other = answers(make(name, estimator).fit(data, rng=12))
    np.testing.assert_array_equal(first, second)
    if one.releases_model:  # an edge set is coarse: two seeds often give the same one
        assert not np.array_equal(first, other)
    assert one.result is not None and one.budget is not None


@pytest.mark.parametrize(("name", "estimator"), CASES, ids=IDS)
def test_returns_a_model_carrying_its_release_or_the_records_it_declares(data, name,
                                                                        estimator):
    """``fit`` returns what ``releases_model`` says, known before the data are read: a
    model of the one protocol, carrying its ledger, mechanism and seed flag; or records."""
    from dpgm.models import Model

    mechanism = make(name, estimator)
    result = mechanism.fit(data, rng=0)
    if not mechanism.releases_model:
        assert isinstance(result, (Dataset, StructureEstimate))
        return
    assert isinstance(result, Model)
    release = result.release
    assert release.mechanism == type(mechanism).__name__ and release.seeded
    assert release.ledger == mechanism.budget.to_json()
    assert release.options["epsilon"] == 1.0
    assert result.schema is None
    # every constructor option is recorded, as JSON that reads back to the same values
    import inspect
    import json

    for parameter in inspect.signature(type(mechanism).__init__).parameters.values():
        if parameter.name not in ("self", "progress") and parameter.kind not in (
                parameter.VAR_KEYWORD, parameter.VAR_POSITIONAL):
            assert parameter.name in release.options
    assert json.loads(json.dumps(release.options, allow_nan=False)) == release.options
    assert release.options["estimator"] == estimator


@pytest.mark.parametrize(("name", "estimator"), CASES, ids=IDS)
def test_spends_exactly_its_budget_and_reports_it(data, name, estimator):
    mechanism = make(name, estimator, epsilon=0.7)
    mechanism.fit(data, rng=0)
    budget = mechanism.budget
    assert spent(budget) == pytest.approx(budget.total, rel=1e-9)
    epsilon, delta = budget.spent_epsilon_delta()
    assert epsilon == pytest.approx(0.7, rel=1e-6)
    if mechanism.accounting == "pure":
        assert (budget.total, delta) == (0.7, 0.0)
    elif mechanism.accounting == "approx":
        assert (budget.total, delta) == (0.7, DEFAULT_DELTA)
    else:
        assert delta == DEFAULT_DELTA
        assert budget.total == pytest.approx(cdp_rho(0.7, DEFAULT_DELTA))


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_one_delta_policy(data, name):
    cls = LEARNERS[name]
    default = make(name)
    # zCDP mechanisms default to the one documented delta; pure ones need none
    assert default.delta == (DEFAULT_DELTA if cls.privacy in ("zcdp", "approx") else None)
    # every mechanism accepts a delta (scripts loop over mechanisms with the same flags)
    given = make(name, delta=1e-8)
    given.fit(data, rng=1)
    epsilon, delta = given.budget.spent_epsilon_delta()
    if cls.privacy == "pure":
        assert delta == 0.0 and epsilon == pytest.approx(1.0)  # epsilon-DP: no delta spent
    else:
        assert delta == 1e-8 and epsilon == pytest.approx(1.0, rel=1e-6)
    with pytest.warns(PrivacyWarning, match="far below 1/n"):
        make(name, delta=1e-4)
    with pytest.raises(PrivacyParameterError, match="at least 0.1"):
        make(name, delta=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)
        make(name, delta=9e-6)


BAD_PARAMETERS = [
    ({"epsilon": 0}, PrivacyParameterError, "epsilon must be > 0"),
    ({"epsilon": -1.0}, PrivacyParameterError, "epsilon must be > 0"),
    ({"epsilon": math.nan}, PrivacyParameterError, "epsilon must be a finite number"),
    ({"epsilon": math.inf}, PrivacyParameterError, "epsilon must be a finite number"),
    ({"epsilon": True}, PrivacyParameterError, "epsilon must be a number"),
    ({"epsilon": "1"}, PrivacyParameterError, "epsilon must be a number"),
    ({"delta": 0.0}, PrivacyParameterError, r"delta must be in \(0, 1\)"),
    ({"delta": 1.0}, PrivacyParameterError, r"delta must be in \(0, 1\)"),
    ({"delta": 0.2}, PrivacyParameterError, "at least 0.1"),
    ({"estimator": "mw"}, ParameterError, "estimator must be one of"),
    ({"max_memory": 0}, ParameterError, "max_memory must be > 0"),
    ({"progress": 3}, ParameterError, "progress must be a function"),
]


@pytest.mark.parametrize("name", sorted(LEARNERS))
@pytest.mark.parametrize(("options", "error", "message"), BAD_PARAMETERS)
def test_bad_parameters_fail_at_construction(name, options, error, message):
    options = {"epsilon": 1.0, **options}
    with pytest.raises(error, match=message):
        make(name, **options).fit(Untouchable(), rng=0)


@pytest.mark.parametrize("name", sorted(LEARNERS))
@pytest.mark.parametrize("rng", [1.5, True, -1, "0"])
def test_bad_seeds_fail_before_reading_data(name, rng):
    with pytest.raises(ParameterError, match="seed|rng"):
        make(name).fit(PublicOnly(domain_of(name)), rng=rng)


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_a_dataframe_is_refused_with_the_recipe(name):
    frame = pd.DataFrame({"a": [0, 1], "b": [0, 2], "c": [1, 3], "d": [0, 1]})
    with pytest.raises(DataError, match=r"dpgm.Dataset\(frame, domain\)"):
        make(name).fit(frame, rng=0)


@pytest.mark.parametrize(("name", "estimator"), CASES, ids=IDS)
def test_public_failures_come_before_reading_data_or_spending(name, estimator):
    """A memory limit too small for the one-way marginals is known from the domain alone."""
    mechanism = make(name, estimator, max_memory=10)
    limit = r"over the memory limit of 10 B \(set by max_memory="
    with pytest.raises(ModelTooLargeError, match=limit):
        mechanism.fit(PublicOnly(domain_of(name)), rng=0)
    assert mechanism.budget is None and mechanism.result is None
    # a workload naming an unknown attribute fails the same way (or, for a learner that
    # measures no workload, the workload itself is refused)
    refused = "unknown attribute" if LEARNERS[name].uses_workload else "measures no workload"
    with pytest.raises(DpgmError, match=refused):
        make(name, estimator).fit(PublicOnly(domain_of(name)), workload=[("a", "zz")], rng=0)


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_a_workload_is_used_or_refused_never_ignored(name, data):
    """A learner that measures no workload refuses one (before reading anything); the
    others fit with it."""
    workload = [("a", "b")]
    if LEARNERS[name].uses_workload:
        make(name).fit(data, workload=workload, rng=0)
        return
    with pytest.raises(ParameterError, match="measures no workload"):
        make(name).fit(PublicOnly(domain_of(name)), workload=workload, rng=0)


@pytest.mark.parametrize("name", sorted(n for n, cls in LEARNERS.items() if cls.uses_workload))
def test_prefix_ranges_are_planned_for_or_the_run_says_they_are_not(name):
    """A workload's numeric attributes ask prefix ranges: a mechanism plans for them, or
    says before reading anything that it answers them from the marginals it measures."""
    from dpgm.workload import Workload

    lines: list[str] = []
    mechanism = make(name, progress=lines.append)
    workload = Workload([("a", "b")], numeric=["a", "c"])  # c: in no marginal
    for _ in range(2):  # said once, though the command line checks and then fit again
        mechanism.check(domain_of(name), workload)
    said = [line for line in lines if "prefix ranges over" in line]
    if LEARNERS[name].plans_ranges:
        assert not said, said
    else:
        assert len(said) == 1 and "over 'a' are answered from them" in said[0], lines


@pytest.mark.parametrize(("name", "estimator"), CASES, ids=IDS)
def test_refuses_to_overspend_and_records_nothing_more(data, name, estimator):
    mechanism = prespent(make(name, estimator), 0.999)
    with pytest.raises(BudgetExceededError):
        mechanism.fit(data, rng=0)
    assert [e.label for e in mechanism.budget.ledger] == ["another release"]
    assert mechanism.result is None


@pytest.mark.parametrize(("name", "estimator"), CASES, ids=IDS)
def test_progress_lines_carry_no_exact_count_or_timing(data, name, estimator):
    lines: list[str] = []
    make(name, estimator, progress=lines.append).fit(data, rng=5)
    assert len(lines) >= 2
    for line in lines:
        assert str(N) not in line.replace(",", ""), line
        assert " s)" not in line and "s so far" not in line, line


@pytest.mark.parametrize(("name", "estimator"), CASES, ids=IDS)
def test_refit_starts_from_a_fresh_state(data, name, estimator):
    mechanism = make(name, estimator)
    mechanism.fit(data, rng=0)
    first_budget = mechanism.budget
    mechanism.fit(data, rng=1)
    assert mechanism.budget is not first_budget
    assert spent(mechanism.budget) == pytest.approx(mechanism.budget.total, rel=1e-9)


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_release_path_runs_unseeded_and_only_seeds_warn(data, name):
    small = Dataset(data.records[:300], domain_of(name))
    with warnings.catch_warnings():
        warnings.simplefilter("error", SeedWarning)
        mechanism = make(name)
        mechanism.fit(small)  # OpenDP's exact noise and selection
    assert spent(mechanism.budget) == pytest.approx(mechanism.budget.total, rel=1e-9)
    with pytest.warns(SeedWarning, match="not for a release"):
        make(name).fit(small, rng=0)


RAW_SCHEMA = {
    "columns": {
        "a": {"kind": "categorical", "labels": ["no", "yes"]},
        "b": {"kind": "categorical", "labels": ["x", "y", "z"], "nullable": True},
        "c": {"kind": "numeric", "lower": 0, "upper": 40, "bins": 4, "integer": True},
        "d": {"kind": "categorical", "labels": [False, True]},
    }
}


#: the raw table of the MRF learners: every column of two values
BINARY_SCHEMA = {
    "columns": {
        "a": {"kind": "categorical", "labels": ["no", "yes"]},
        "b": {"kind": "categorical", "labels": ["x", "y"]},
        "c": {"kind": "numeric", "lower": 0, "upper": 40, "bins": 2, "integer": True},
        "d": {"kind": "categorical", "labels": [False, True]},
    }
}


def raw_schema(name: str) -> dict:
    return BINARY_SCHEMA if LEARNERS[name].kind == "mrf" else RAW_SCHEMA


def raw_frame(data: Dataset, spec: dict = RAW_SCHEMA) -> pd.DataFrame:
    """The sample data as a raw table: labels, numbers, missing values."""
    from dpgm.schema import Schema

    schema = Schema.from_json(spec)
    return schema.decode(Dataset(data.records, schema.domain), rng=0)


@pytest.mark.parametrize(("name", "estimator"), CASES, ids=IDS)
def test_a_raw_table_with_its_schema_comes_back_decoded(data, name, estimator):
    from dpgm.schema import Schema

    schema = Schema.from_json(raw_schema(name))
    frame = raw_frame(data, raw_schema(name))
    mechanism = make(name, estimator)
    try:
        mechanism.check_synthesizable(schema.domain)
    except DpgmError:
        pytest.skip("this estimator releases no synthetic data on this domain")
    result = mechanism.fit(frame, schema=schema, rng=0)
    if not mechanism.releases_model and not isinstance(result, Dataset):
        assert isinstance(result, StructureEstimate)  # an edge set: nothing to sample
        return
    synthetic = mechanism.synthetic_data(300, rng=1)
    assert list(synthetic.columns) == list(frame.columns)
    assert dict(synthetic.dtypes) == dict(frame.dtypes)
    assert set(synthetic["a"]) <= {"no", "yes"} and synthetic["c"].between(0, 40).all()


@pytest.mark.parametrize("name", sorted(n for n, c in LEARNERS.items()
                                         if "pgm" in c.estimators and c.holds_constraints))
def test_constraints_hold_and_given_is_exact(data, name):
    from dpgm.schema import Schema

    schema = Schema.from_json({**RAW_SCHEMA, "constraints": [{"a": ["yes"], "d": [True]}]})
    mechanism = make(name, "pgm")  # structural zeros need Private-PGM
    mechanism.fit(raw_frame(data), schema=schema, rng=0)
    synthetic = mechanism.synthetic_data(500, rng=1)
    assert not ((synthetic["a"] == "yes") & synthetic["d"]).any()
    given = mechanism.synthetic_data(200, rng=2, given={"b": "z", "c": 35})
    assert (given["b"] == "z").all() and (given["c"] >= 30).all()


@pytest.mark.parametrize("name", sorted(n for n, c in LEARNERS.items()
                                         if not c.holds_constraints))
def test_constraints_it_cannot_hold_are_refused_before_reading(name):
    from dpgm.schema import Schema

    schema = Schema.from_json({**RAW_SCHEMA, "constraints": [{"a": ["yes"], "d": [True]}]})
    with pytest.raises(ParameterError, match="cannot hold constraints"):
        make(name).fit(Untouchable(), schema=schema, rng=0)
