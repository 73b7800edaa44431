"""HDMM: p-Identity strategies, budget, noise scale, data independence, both estimators."""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import pytest
from mechanism_helpers import PublicOnly, Untouchable
from scipy import stats

import dpgm.mechanisms.hdmm as hdmm_module
from dpgm import Dataset, Domain, DpgmError, MarkovRandomField
from dpgm.errors import BudgetExceededError, ModelTooLargeError
from dpgm.estimation import KroneckerQuery
from dpgm.mechanisms.hdmm import (
    HDMM,
    attribute_strategy,
    optimize_p_identity,
    p_identity,
    p_identity_objective,
    strategy_error,
)
from dpgm.models.tables import TableModel
from dpgm.privacy import PrivacyBudget
from dpgm.workload import Workload, prefix_matrix

N = 3000
DOMAIN = Domain(["x", "y", "z"], [24, 4, 3])
WORKLOAD = Workload.all_marginals(DOMAIN, 2, numeric=["x"])


def _data(seed: int = 0, n: int = N, domain: Domain = DOMAIN) -> Dataset:
    """Pairwise-dependent records; ``x`` (numeric) has a smooth bump, as a binned number."""
    rng = np.random.default_rng(seed)
    potentials = {
        p: rng.normal(size=domain.project(p).shape) for p in combinations(domain.attrs, 2)
    }
    size = domain["x"]
    potentials[("x",)] = -0.5 * ((np.arange(size) - size / 2.5) / (size / 6)) ** 2
    return MarkovRandomField(domain, potentials, total=n).sample(n, rng=seed + 100)


@pytest.fixture(scope="module")
def data() -> Dataset:
    return _data()


def _median_error(data, estimator, epsilon, seeds, **options) -> float:
    errors = []
    for seed in seeds:
        result = HDMM(epsilon, estimator=estimator, **options).fit(data, WORKLOAD, rng=seed)
        errors.append(WORKLOAD.error(data, result))
    return float(np.median(errors))


# -- the p-Identity strategy -------------------------------------------------------------
@pytest.mark.parametrize(("n", "p", "seed"), [(6, 1, 0), (12, 2, 1), (20, 3, 2)])
def test_objective_gradient_matches_finite_differences(n, p, seed):
    rng = np.random.default_rng(seed)
    w = prefix_matrix(n) if seed != 1 else rng.random((n + 3, n))  # prefix and a dense W
    gram = w.T @ w
    theta = rng.uniform(0.1, 2.0, size=(p, n))
    value, grad = p_identity_objective(theta, gram)
    assert value == pytest.approx(strategy_error(p_identity(theta), gram), rel=1e-10)
    h = 1e-6
    numeric = np.zeros_like(theta)
    for i in range(p):
        for j in range(n):
            step = np.zeros_like(theta)
            step[i, j] = h
            up = p_identity_objective(theta + step, gram)[0]
            down = p_identity_objective(theta - step, gram)[0]
            numeric[i, j] = (up - down) / (2 * h)
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-6 * np.abs(numeric).max())


def test_p_identity_columns_have_unit_l1_norm():
    theta = np.random.default_rng(0).random((3, 10))
    strategy = p_identity(theta)
    assert strategy.shape == (13, 10)
    np.testing.assert_allclose(np.abs(strategy).sum(axis=0), 1.0, rtol=1e-14)
    np.testing.assert_allclose(
        p_identity(np.zeros((2, 5))), np.vstack([np.eye(5), np.zeros((2, 5))])
    )


@pytest.mark.parametrize("n", [10, 16, 32, 64])
def test_optimised_prefix_strategy_beats_identity_and_random(n):
    gram = prefix_matrix(n).T @ prefix_matrix(n)
    strategy = attribute_strategy(n, "prefix")
    p = max(1, n // 16)
    assert strategy.shape == (n + p, n)
    np.testing.assert_allclose(strategy.sum(axis=0), 1.0, rtol=1e-12)
    assert np.all(strategy >= 0)
    error = strategy_error(strategy, gram)
    assert error < 0.95 * np.trace(gram)  # the identity's error is tr(WᵀW)
    for seed in range(3):
        random = p_identity(np.random.default_rng(seed + 10).random((p, n)))
        assert error < strategy_error(random, gram)


def test_small_prefix_falls_back_to_the_identity():
    # for n <= 8 no p-Identity strategy beats the identity on prefix queries (several
    # starts and p = 1..3 agree), so the identity itself is returned: never worse
    for n in (1, 2, 8):
        gram = prefix_matrix(n).T @ prefix_matrix(n)
        np.testing.assert_array_equal(attribute_strategy(n, "prefix"), np.eye(n))
        for p in (1, 2):
            found = strategy_error(optimize_p_identity(prefix_matrix(n), p, seed=3), gram)
            assert found <= np.trace(gram) + 1e-9
    gram = prefix_matrix(8).T @ prefix_matrix(8)
    assert strategy_error(p_identity(np.full((1, 8), 0.3)), gram) > np.trace(gram)


def test_identity_factor_and_cache():
    np.testing.assert_array_equal(attribute_strategy(7, "identity"), np.eye(7))
    a, b = attribute_strategy(20, "prefix"), attribute_strategy(20, "prefix")
    assert a is b  # cached per (n, kind)
    assert not a.flags.writeable
    assert attribute_strategy(20, "prefix", p=3).shape == (23, 20)
    with pytest.raises(DpgmError, match="kind must be"):
        attribute_strategy(5, "range")
    with pytest.raises(DpgmError, match="size must be"):
        attribute_strategy(0)


# -- the strategy is data-independent -------------------------------------------------
class _LoggedData(Dataset):
    """A Dataset that logs every read of a marginal."""

    log: list[str]

    def marginal(self, attrs):
        self.log.append("data")
        return super().marginal(attrs)


def test_strategy_is_chosen_before_the_data_are_read(data, monkeypatch):
    log: list[str] = []
    logged = _LoggedData(data.records, data.domain)
    logged.log = log
    real = hdmm_module.attribute_strategy

    def logged_strategy(*args, **kwargs):
        log.append("strategy")
        return real(*args, **kwargs)

    monkeypatch.setattr(hdmm_module, "attribute_strategy", logged_strategy)
    mechanism = HDMM(1.0, estimator="original")
    mechanism.fit(logged, WORKLOAD, rng=0)
    assert log.count("strategy") == 6 and "data" in log
    assert log.index("data") > max(i for i, e in enumerate(log) if e == "strategy")


def test_strategy_depends_on_domain_and_workload_only(data):
    expected = HDMM(1.0).strategy(DOMAIN, WORKLOAD)
    assert list(expected) == WORKLOAD.cliques
    other = _data(seed=5, n=500)
    for source, epsilon, seed in ((data, 1.0, 0), (other, 0.1, 3)):
        mechanism = HDMM(epsilon, estimator="original")
        mechanism.fit(source, WORKLOAD, rng=seed)
        for clique, query in mechanism.strategies.items():
            for f, g in zip(query.factors, expected[clique].factors):
                np.testing.assert_array_equal(f, g)
    # x is numeric: its factor is the optimised p-Identity; y and z are categorical
    x_factor = expected[("x", "y")].factors[0]
    assert x_factor.shape == (25, 24)
    np.testing.assert_array_equal(expected[("y", "z")].factors[0], np.eye(4))


# -- budget --------------------------------------------------------------------------
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 3.7])
def test_spends_exactly_its_budget(data, epsilon):
    mechanism = HDMM(epsilon, estimator="original")
    mechanism.fit(data, WORKLOAD, rng=0)
    budget = mechanism.budget
    assert budget.mode == "pure"
    assert budget.spent_epsilon == pytest.approx(epsilon, rel=1e-12)
    assert budget.remaining == pytest.approx(0.0, abs=1e-9 * epsilon)
    entries = budget.ledger
    assert len(entries) == len(WORKLOAD)
    for entry in entries:
        assert entry.epsilon == pytest.approx(epsilon / len(WORKLOAD), rel=1e-12)


def test_measurements_have_unit_sensitivity_and_equal_noise(data):
    epsilon = 0.6
    mechanism = HDMM(epsilon, estimator="original")
    mechanism.fit(data, WORKLOAD, rng=0)
    scale = len(WORKLOAD) / epsilon
    for clique, m in zip(WORKLOAD.cliques, mechanism.measurements):
        assert m.clique == clique
        assert m.std == pytest.approx(math.sqrt(2) * scale, rel=1e-12)
        if "x" in clique:
            assert isinstance(m.query, KroneckerQuery)
            assert m.query.norm(1) == pytest.approx(1.0, rel=1e-12)
        else:  # all-identity strategy: recorded as an identity measurement
            assert m.query is None and m.values.size == DOMAIN.size(clique)


def test_refuses_to_overspend_and_reads_nothing_it_cannot_pay_for(data):
    log: list[str] = []
    logged = _LoggedData(data.records, data.domain)
    logged.log = log
    workload = Workload([("x", "y"), ("y", "z"), ("x", "z"), ("y",)], numeric=["x"])
    strategies = HDMM(1.0).strategy(DOMAIN, workload)
    budget = PrivacyBudget(epsilon=1.0)
    budget.charge(epsilon=0.5, label="spent elsewhere")
    # each clique costs 1/4: two fit in what is left, the third is refused
    with pytest.raises(BudgetExceededError, match="privacy budget exceeded"):
        HDMM._measure(logged, strategies, 1.0, budget, np.random.default_rng(0))
    assert [e.label for e in budget.ledger] == [
        "spent elsewhere",
        "A on ('x', 'y')",
        "A on ('y', 'z')",
    ]
    assert budget.spent_epsilon == pytest.approx(1.0, rel=1e-12)
    assert log == ["data", "data"]  # the refused clique's marginal was never read


# -- the noise has the claimed scale -------------------------------------------------------
def test_noise_is_laplace_of_scale_k_over_epsilon():
    """measured − true strategy answers over ~21,000 answers of 12 fits: Laplace(k/ε)."""
    domain = Domain(["x", "y", "z"], [32, 20, 20])
    workload = Workload([("x", "y"), ("y", "z"), ("x", "z")], numeric=["x"])
    data = _data(seed=1, n=2000, domain=domain)
    epsilon = 0.8
    scale = len(workload) / epsilon
    noise = []
    for seed in range(12):
        mechanism = HDMM(epsilon, estimator="original", least_squares="local")
        mechanism.fit(data, workload, rng=seed)
        for m in mechanism.measurements:
            noise.append(m.values - m.answer(data.marginal(m.clique)))
    noise = np.concatenate(noise)
    count = noise.size
    assert count > 20_000
    assert stats.kstest(noise / scale, "laplace").pvalue > 1e-3
    # variance 2b²; the sample variance of Laplace noise has standard deviation b²·sqrt(20/N)
    assert abs(noise.var() - 2 * scale**2) < 4.5 * scale**2 * math.sqrt(20 / count)
    # a wrong law is rejected: epsilon doubled, or halved
    for wrong in (scale / 2, scale * 2):
        assert stats.kstest(noise / wrong, "laplace").pvalue < 1e-3
        assert abs(noise.var() - 2 * wrong**2) > 4.5 * wrong**2 * math.sqrt(20 / count)


# -- estimators ----------------------------------------------------------------------------
def test_both_estimators_are_accurate_at_large_epsilon(data):
    pgm = HDMM(50.0, iters=300)
    model = pgm.fit(data, WORKLOAD, rng=0)
    assert isinstance(model, MarkovRandomField)
    assert pgm.model is model and pgm.result is model
    assert model.total == pytest.approx(N, rel=0.01)
    assert WORKLOAD.error(data, model) < 0.01

    for method in ("global", "local"):
        mechanism = HDMM(50.0, estimator="original", least_squares=method)
        tables = mechanism.fit(data, WORKLOAD, rng=0)
        assert isinstance(tables, TableModel) and mechanism.model is None
        assert mechanism.least_squares_used == method
        assert tables.total == pytest.approx(N, rel=0.01)
        assert WORKLOAD.error(data, tables) < 0.01
        for clique in WORKLOAD.cliques:
            np.testing.assert_allclose(tables.marginal(clique), data.marginal(clique), atol=5.0)


def test_least_squares_tables(data):
    auto = HDMM(1.0, estimator="original")
    result = auto.fit(data, WORKLOAD, rng=0)
    assert auto.least_squares_used == "global"  # 288 cells <= max_cells
    assert result.cliques == [DOMAIN.attrs]
    assert result.total == pytest.approx(result.tables[DOMAIN.attrs].sum())

    small = HDMM(1.0, estimator="original", max_cells=100)
    result = small.fit(data, WORKLOAD, rng=0)
    assert small.least_squares_used == "local"
    assert result.cliques == WORKLOAD.cliques
    sums = [result.tables[c].sum() for c in WORKLOAD.cliques]
    assert result.total == pytest.approx(np.mean(sums))
    assert len(set(np.round(sums, 6))) > 1  # local tables do not agree on the total
    # ordinary least squares is unconstrained: at small epsilon some cells are negative
    low = HDMM(0.05, estimator="original", least_squares="local").fit(data, WORKLOAD, rng=0)
    assert min(t.min() for t in low.tables.values()) < 0


def test_pgm_against_least_squares(data):
    """Large ε: HDMM+PGM ≈ global least squares; small ε: PGM beats local least squares."""
    seeds = range(3)
    pgm = _median_error(data, "pgm", 20.0, seeds, iters=500)
    ls = _median_error(data, "original", 20.0, seeds, least_squares="global")
    assert 0.8 < pgm / ls < 1.25
    pgm = _median_error(data, "pgm", 0.05, seeds, iters=200)
    lls = _median_error(data, "original", 0.05, seeds, least_squares="local")
    assert pgm < 0.85 * lls


def test_default_workload_is_all_two_way_marginals(data):
    mechanism = HDMM(1.0, estimator="original")
    mechanism.fit(data, rng=0)
    assert [m.clique for m in mechanism.measurements] == list(combinations(DOMAIN.attrs, 2))
    assert all(m.query is None for m in mechanism.measurements)  # no numeric attributes


def test_global_too_large_fails_before_reading_data(data):
    log: list[str] = []
    logged = _LoggedData(data.records, data.domain)
    logged.log = log
    mechanism = HDMM(1.0, estimator="original", least_squares="global", max_cells=100)
    with pytest.raises(ModelTooLargeError, match="global least squares needs 288 cells"):
        mechanism.fit(logged, WORKLOAD, rng=0)
    assert log == [] and mechanism.budget is None


@pytest.mark.parametrize(
    ("estimator", "options", "samplable"),
    [
        ("pgm", {}, True),
        ("original", {}, True),  # 288 cells: global least squares, one table
        ("original", {"max_cells": 100}, False),  # auto falls back to local tables
        ("original", {"least_squares": "local"}, False),
    ],
)
def test_check_synthesizable_matches_what_fit_returns(data, estimator, options, samplable):
    mechanism = HDMM(1.0, estimator=estimator, iters=10, **options)
    if samplable:
        mechanism.check_synthesizable(DOMAIN, WORKLOAD)
    else:
        with pytest.raises(DpgmError, match="cannot be sampled"):
            mechanism.check_synthesizable(DOMAIN, WORKLOAD)
    assert mechanism.budget is None  # deciding spends nothing
    result = mechanism.fit(data, WORKLOAD, rng=0)
    if samplable:
        assert len(result.synthetic_data(50, rng=0)) == 50
    else:
        with pytest.raises(DpgmError, match="cannot be sampled"):
            result.synthetic_data(50, rng=0)


def test_progress_lines(data):
    lines: list[str] = []
    HDMM(1.0, iters=20, progress=lines.append).fit(data, WORKLOAD, rng=0)
    assert any("chose the strategy" in line for line in lines)
    assert any("measured 3 cliques" in line for line in lines)
    assert any("iteration 20/20" in line for line in lines)
    assert any("estimated the model" in line for line in lines)


# -- reproducibility -----------------------------------------------------------------------
# -- parameters ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"epsilon": 1.0, "iters": 0}, DpgmError, "iters must be an integer >= 1"),
        ({"epsilon": 1.0, "iters": 2.5}, DpgmError, "iters must be an integer >= 1"),
        ({"epsilon": 1.0, "least_squares": "lsmr"}, DpgmError, "least_squares must be one of"),
        ({"epsilon": 1.0, "max_cells": 0}, DpgmError, "max_cells must be"),
        ({"epsilon": 1.0, "max_cells": float("nan")}, DpgmError, "max_cells must be"),
        ({"epsilon": 1.0, "lsmr_iters": -1}, DpgmError, "lsmr_iters must be"),
        ({"epsilon": 1.0, "p": 0}, DpgmError, "p must be an integer >= 1"),
    ],
)
def test_bad_parameters_fail_at_construction(kwargs, error, message):
    with pytest.raises(error, match=message):
        HDMM(**kwargs).fit(Untouchable(), rng=0)




@pytest.mark.parametrize("seed", range(8))
def test_original_estimator_survives_a_negative_noisy_total(seed):
    """Least squares on a tiny file at small epsilon often estimates fewer than 0 records."""
    data = Dataset(np.array([[0, 1], [1, 0]]), Domain(["a", "b"], [2, 2]))
    result = HDMM(0.1, estimator="original").fit(data, rng=seed)
    synthetic = result.synthetic_data(rng=seed)
    assert len(synthetic) == max(round(result.total), 0)


def test_a_prefix_strategy_too_large_to_optimise_is_refused_before_reading(data):
    """Optimising a p-Identity strategy holds n x n matrices: 200,000 values is 1.28 TB."""
    wide = Domain(["x", "y"], [200_000, 2])
    mechanism = HDMM(1.0)
    with pytest.raises(ModelTooLargeError, match="the prefix strategy of 'x' would need 1.28 TB"):
        mechanism.fit(PublicOnly(wide), Workload([("x", "y")], numeric=["x"]), rng=0)
    assert mechanism.budget is None
