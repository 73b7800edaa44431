"""Residual queries and ResidualPlanner's plan, against brute force on small domains: the
full-domain matrices, generalised least squares, a numerical optimiser, and the closed
form written out by hand."""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import pytest
from scipy.optimize import minimize

from dpgm import Domain
from dpgm.errors import DomainError, ParameterError
from dpgm.measurement import KroneckerQuery, Measurement
from dpgm.residuals import (
    BASIS_ARRAYS_AT_PEAK,
    bases_bytes,
    check_residual_basis,
    frequency_bands,
    marginal_variance,
    ordered_basis,
    plan_residuals,
    prefix_strategy,
    prefix_strategy_cached,
    reconstruct,
    residual_basis,
    residual_query,
    residual_subset,
    residual_variances,
)

DOMAIN = Domain(["a", "b", "c"], [2, 3, 4])
WORKLOAD = [("a", "b"), ("b", "c"), ("c", "a")]
RHO = 0.5


def full_query(domain: Domain, subset, ranged=()) -> np.ndarray:
    """The residual of ``subset`` as a matrix over the full domain's cells (measured with
    the prefix strategy on the ``ranged`` attributes)."""
    matrix = np.ones((1, 1))
    for a in domain.attrs:
        if a not in subset:
            factor = np.ones((1, domain[a]))
        else:
            factor = prefix_strategy(domain[a]) if a in ranged else residual_basis(domain[a])
        matrix = np.kron(matrix, factor)
    return matrix


def full_marginal(domain: Domain, attrs, ranged=()) -> np.ndarray:
    """The marginal on ``attrs`` (domain order) as a matrix over the full domain: its
    cells, or its prefix ranges along the ``ranged`` attributes."""
    matrix = np.ones((1, 1))
    for a in domain.attrs:
        if a not in attrs:
            factor = np.ones((1, domain[a]))
        else:
            factor = np.tril(np.ones((domain[a],) * 2)) if a in ranged else np.eye(domain[a])
        matrix = np.kron(matrix, factor)
    return matrix


def test_the_basis_is_orthonormal_and_orthogonal_to_the_ones():
    for n in (1, 2, 5, 40):
        basis = residual_basis(n)
        assert basis.shape == (n - 1, n)
        np.testing.assert_allclose(basis @ basis.T, np.eye(n - 1), atol=1e-12)
        np.testing.assert_allclose(basis.sum(axis=1), 0.0, atol=1e-12)
        # I = 11ᵀ/n + LᵀL: the split every reconstruction rests on
        np.testing.assert_allclose(np.ones((n, n)) / n + basis.T @ basis, np.eye(n), atol=1e-12)
    with pytest.raises(ParameterError):
        residual_basis(0)


@pytest.mark.parametrize("missing", [False, True])
def test_the_ordered_basis_is_a_residual_basis_with_the_same_sensitivity(missing):
    for n in (1, 2, 3, 5, 16, 17, 700):  # 700: made in several blocks of columns
        basis = ordered_basis(n, missing)
        assert basis.shape == (max(n - 1, 0), n)
        np.testing.assert_allclose(np.ones((n, n)) / n + basis.T @ basis, np.eye(n), atol=1e-12)
        # every record's column has the squared norm (n-1)/n of Helmert's: the same p_B
        np.testing.assert_allclose((basis**2).sum(axis=0), (n - 1) / n, atol=1e-12)
        check_residual_basis("x", basis, n)
        assert frequency_bands(n, missing).shape == (max(n - 1, 0),)


def test_the_ordered_basis_made_in_blocks_is_the_cosine_transform_of_the_identity():
    from scipy.fft import dct

    n = 700  # several blocks of columns
    whole = dct(np.eye(n), norm="ortho", axis=0)[1:]
    np.testing.assert_array_equal(ordered_basis(n), whole)
    np.testing.assert_array_equal(ordered_basis(n + 1, missing=True)[:-1, :-1], whole)


def test_the_ordered_basis_puts_a_smooth_table_in_its_first_rows():
    n = 16
    smooth = np.exp(-0.5 * ((np.arange(n) - 6.0) / 3.0) ** 2)
    weight = ordered_basis(n) @ smooth
    low = frequency_bands(n) <= 1  # frequencies 1 to 3
    assert (weight[low] ** 2).sum() > 0.99 * (weight**2).sum()
    # Helmert's rows spread the same table over all of them
    helmert = residual_basis(n) @ smooth
    assert (helmert[:3] ** 2).sum() < 0.9 * (helmert**2).sum()


def test_the_missing_value_has_a_row_and_a_band_of_its_own():
    basis = ordered_basis(5, missing=True)
    # the cosine rows ignore the missing value; the last row contrasts it with the rest
    np.testing.assert_allclose(basis[:-1, -1], 0.0, atol=1e-12)
    np.testing.assert_allclose(basis[-1], np.array([-0.25, -0.25, -0.25, -0.25, 1.0])
                               / math.sqrt(1.25), atol=1e-12)
    bands = frequency_bands(5, missing=True)
    np.testing.assert_array_equal(bands[:-1], [0, 1, 1])
    assert bands[-1] not in bands[:-1]
    np.testing.assert_array_equal(frequency_bands(9), [0, 1, 1, 2, 2, 2, 2, 3])


def test_a_basis_that_would_change_the_sensitivity_is_refused():
    with pytest.raises(ParameterError, match="orthonormal"):
        check_residual_basis("x", 2.0 * residual_basis(4), 4)
    with pytest.raises(ParameterError, match="orthonormal"):
        check_residual_basis("x", np.eye(4)[:3], 4)  # not orthogonal to the ones
    with pytest.raises(ParameterError, match="orthonormal"):
        check_residual_basis("x", residual_basis(5), 4)


def test_the_plan_spends_exactly_rho_by_brute_force_sensitivity():
    plan = plan_residuals(DOMAIN, WORKLOAD, RHO)
    assert math.isclose(plan.rhos.sum(), RHO, rel_tol=1e-12)
    # ρ = ½ max over the records' cells of Σ_B ‖Q_B e_x‖² / u_B (Gaussian, add/remove)
    columns = sum((full_query(DOMAIN, s) ** 2).sum(axis=0) / u
                  for s, u in zip(plan.subsets, plan.variances))
    assert math.isclose(0.5 * columns.max(), RHO, rel_tol=1e-12)
    assert np.ptp(columns) < 1e-9  # every cell costs the same: the bound is tight
    # the closure of the workload under subsets, the record count among them
    assert set(plan.subsets) == {(), ("a",), ("b",), ("c",), ("a", "b"), ("b", "c"),
                                 ("a", "c")}


@pytest.mark.parametrize("loss", ["sum", "max"])
def test_variances_equal_generalised_least_squares_over_the_full_domain(loss):
    plan = plan_residuals(DOMAIN, WORKLOAD, RHO, loss)
    stacked = np.vstack([full_query(DOMAIN, s) for s in plan.subsets])
    precision = np.concatenate([np.full(full_query(DOMAIN, s).shape[0], 1.0 / u)
                                for s, u in zip(plan.subsets, plan.variances)])
    information = stacked.T @ (precision[:, None] * stacked)
    covariance = np.linalg.pinv(information)
    for attrs in [*WORKLOAD, ("a",), ("c",)]:
        ordered = tuple(a for a in DOMAIN.attrs if a in attrs)
        marginal = full_marginal(DOMAIN, ordered)
        cells = np.diag(marginal @ covariance @ marginal.T)
        np.testing.assert_allclose(cells, plan.variance(attrs), rtol=1e-9)
        assert math.isclose(plan.standard_error(attrs), math.sqrt(plan.variance(attrs)))
    assert plan.variance(("a", "b", "c")) is None  # its 3-way residual was not measured


def test_the_sum_plan_equals_the_closed_form_written_out():
    # one marginal on a (2 values) and b (3): subsets ∅, a, b, ab with
    # p = 1, 1/2, 2/3, 1/3 and c_B = |A| a_{A,B} = 6 (1/4·1/9, 1/2·1/9, 1/4·2/3, 1/2·2/3)
    domain = Domain(["a", "b"], [2, 3])
    plan = plan_residuals(domain, [("a", "b")], RHO)
    p = {(): 1.0, ("a",): 0.5, ("b",): 2 / 3, ("a", "b"): 1 / 3}
    c = {(): 1 / 6, ("a",): 1 / 3, ("b",): 1.0, ("a", "b"): 2.0}
    scale = sum(math.sqrt(p[s] * c[s]) for s in p) / (2 * RHO)
    expected = {s: math.sqrt(p[s] / c[s]) * scale for s in p}
    assert dict(zip(plan.subsets, plan.variances.tolist())) == pytest.approx(expected,
                                                                              rel=1e-12)
    assert plan.value == pytest.approx(scale**2 * 2 * RHO, rel=1e-12)  # (Σ√(pc))² / 2ρ


def _optimise(loss: str, plan) -> float:
    """The loss's minimum found by SLSQP over log-variances, from a point off the plan."""
    names = [frozenset(s) for s in plan.subsets]
    p = np.array([math.prod((DOMAIN[a] - 1) / DOMAIN[a] for a in s) for s in plan.subsets])

    def variances(log_u):
        return [marginal_variance(DOMAIN, w, dict(zip(names, np.exp(log_u))))
                for w in WORKLOAD]

    budget = {"type": "eq", "fun": lambda z: np.sum(p / (2 * np.exp(z[: len(p)]))) - RHO}
    start = np.log(plan.variances) + np.linspace(-0.3, 0.3, len(p))
    if loss == "sum":
        cells = [DOMAIN.size(w) for w in WORKLOAD]
        found = minimize(lambda z: float(np.dot(cells, variances(z))), start,
                         constraints=[budget], method="SLSQP",
                         options={"ftol": 1e-14, "maxiter": 1000})
        return float(found.fun)
    bounds = [{"type": "ineq", "fun": lambda z, k=k: z[-1] - variances(z[:-1])[k]}
              for k in range(len(WORKLOAD))]
    found = minimize(lambda z: z[-1], np.append(start, 2 * plan.value),
                     constraints=[budget, *bounds], method="SLSQP",
                     options={"ftol": 1e-14, "maxiter": 2000})
    return float(found.fun)


@pytest.mark.parametrize("loss", ["sum", "max"])
def test_the_plan_is_as_good_as_a_numerical_optimiser(loss):
    plan = plan_residuals(DOMAIN, WORKLOAD, RHO, loss)
    variances = [plan.variance(w) for w in WORKLOAD]
    if loss == "sum":
        reached = float(np.dot([DOMAIN.size(w) for w in WORKLOAD], variances))
    else:
        reached = max(variances)
    assert reached == pytest.approx(plan.value, rel=1e-12)
    assert plan.value <= _optimise(loss, plan) * (1 + 1e-5)
    assert plan.value >= _optimise(loss, plan) * (1 - 1e-3)


def test_the_max_plan_lowers_the_largest_variance_and_the_sum_plan_the_total():
    by_sum = plan_residuals(DOMAIN, WORKLOAD, RHO, "sum")
    by_max = plan_residuals(DOMAIN, WORKLOAD, RHO, "max")
    assert max(by_max.variance(w) for w in WORKLOAD) < max(by_sum.variance(w)
                                                            for w in WORKLOAD)
    cells = [DOMAIN.size(w) for w in WORKLOAD]
    assert np.dot(cells, [by_sum.variance(w) for w in WORKLOAD]) < np.dot(
        cells, [by_max.variance(w) for w in WORKLOAD])


def test_reconstruction_from_noiseless_residuals_is_exact():
    counts = np.random.default_rng(0).integers(0, 20, DOMAIN.shape).astype(float)
    answers = {}
    for k in range(4):
        for subset in combinations(DOMAIN.attrs, k):
            drop = tuple(i for i, a in enumerate(DOMAIN.attrs) if a not in subset)
            marginal = counts.sum(axis=drop)
            answers[frozenset(subset)] = (
                residual_query([DOMAIN[a] for a in subset]) @ marginal.ravel() if subset
                else np.array([counts.sum()]))
    for attrs in [("c", "a"), ("b",), ("b", "c", "a"), ()]:
        order = [a for a in DOMAIN.attrs if a in attrs]
        drop = tuple(i for i, a in enumerate(DOMAIN.attrs) if a not in attrs)
        truth = counts.sum(axis=drop).transpose([order.index(a) for a in attrs])
        np.testing.assert_allclose(reconstruct(DOMAIN, attrs, answers), truth, atol=1e-9)
    del answers[frozenset({"a", "c"})]
    with pytest.raises(ParameterError, match="no residual"):
        reconstruct(DOMAIN, ("a", "c"), answers)


def test_reconstruction_in_a_given_basis_is_exact_and_builds_no_helmert_for_it(monkeypatch):
    import dpgm.residuals as residuals
    domain = Domain(["a", "b"], [3, 7])
    counts = np.random.default_rng(1).integers(0, 20, domain.shape).astype(float)
    bases = {"b": ordered_basis(7)}
    helmert = residual_basis(3)
    answers = {frozenset(): np.array([counts.sum()]),
               frozenset("a"): helmert @ counts.sum(axis=1),
               frozenset("b"): bases["b"] @ counts.sum(axis=0),
               frozenset("ab"): np.kron(helmert, bases["b"]) @ counts.ravel()}
    built = []
    real = residuals.residual_basis
    monkeypatch.setattr(residuals, "residual_basis", lambda n: built.append(n) or real(n))
    np.testing.assert_allclose(reconstruct(domain, ("b", "a"), answers, bases), counts.T,
                               atol=1e-9)
    assert built and set(built) == {3}


def test_one_valued_attributes_have_no_residual():
    domain = Domain(["a", "b"], [1, 3])
    plan = plan_residuals(domain, [("a", "b")], RHO)
    assert set(plan.subsets) == {(), ("b",)}
    assert plan.variance(("a", "b")) == pytest.approx(plan.variance(("b",)))


def test_residual_measurements_are_recognised_and_others_are_not():
    query = KroneckerQuery([residual_basis(2), np.ones((1, 3)), residual_basis(4)])
    m = Measurement(("a", "b", "c"), np.zeros(3), 2.0, query)
    assert residual_subset(m) == ("a", "c")
    total = Measurement(("b",), [10.0], 1.0, np.ones((1, 3)))
    assert residual_subset(total) == ()
    assert residual_subset(Measurement(("b",), np.zeros(3), 1.0)) is None  # identity
    assert residual_subset(Measurement(("b",), np.zeros(3), [1.0, 2.0, 3.0],
                                       KroneckerQuery([np.eye(3)]))) is None
    twice = residual_variances([m, Measurement(("a", "c"), np.zeros(3), 2.0,
                                               residual_query([2, 4])), total])
    assert twice == {frozenset({"a", "c"}): 2.0, frozenset(): 1.0}  # 4 and 4 combined
    assert residual_variances([m, Measurement(("b",), np.zeros(3), 1.0)]) is None


def test_plan_inputs_are_checked():
    with pytest.raises(ParameterError):
        plan_residuals(DOMAIN, WORKLOAD, 0.0)
    with pytest.raises(ParameterError):
        plan_residuals(DOMAIN, WORKLOAD, RHO, "mean")
    with pytest.raises(ParameterError):
        plan_residuals(DOMAIN, [], RHO)


# -- prefix ranges ------------------------------------------------------------------------

RANGED = ("c",)


@pytest.mark.parametrize("size", [2, 3, 5, 12])
def test_the_prefix_strategy_measures_the_residual_with_column_norms_at_most_one(size):
    strategy = prefix_strategy(size)
    assert strategy.shape == (size - 1, size)
    np.testing.assert_allclose(strategy.sum(axis=1), 0.0, atol=1e-12)  # no record count
    assert np.linalg.matrix_rank(strategy) == size - 1  # the whole residual space
    assert (strategy**2).sum(axis=0).max() == pytest.approx(1.0, rel=1e-12)


def test_the_prefix_strategy_cache_keeps_the_most_recently_used_sizes(monkeypatch):
    import dpgm.residuals as residuals

    monkeypatch.setattr(residuals, "PREFIX_CACHE_SIZES", 2)
    monkeypatch.setattr(residuals, "_PREFIX_STRATEGIES", {})
    first = prefix_strategy(3)
    prefix_strategy(4)
    assert prefix_strategy(3) is first  # served from the cache, now the most recent
    prefix_strategy(5)  # drops 4, the least recently used
    assert [prefix_strategy_cached(n) for n in (3, 4, 5)] == [True, False, True]
    assert not first.flags.writeable  # shared by every caller


def test_an_empty_marginal_is_refused_with_a_reason():
    domain = Domain(["a", "b"], [3, 4])
    for workload in ([()], [("a",), ()]):
        with pytest.raises(ParameterError, match="at least one attribute"):
            plan_residuals(domain, workload, 1.0)


def test_the_bases_memory_counts_each_basis_once_and_the_largest_with_its_temporaries():
    from dpgm.residuals import BASIS_KINDS, PREFIX_ARRAYS_AT_PEAK

    # two attributes of one size may be in two bases (Helmert's, the cosine one); no
    # more than BASIS_KINDS bases of one size exist, however many attributes have it
    assert bases_bytes([1000, 3, 3, 1]) == 8 * (BASIS_ARRAYS_AT_PEAK * 1000**2 + 2 * 3**2)
    assert bases_bytes([1000] + [3] * 5) == 8 * (BASIS_ARRAYS_AT_PEAK * 1000**2
                                                 + BASIS_KINDS * 3**2)
    assert bases_bytes([1000, 1000]) == 8 * (BASIS_ARRAYS_AT_PEAK + 1) * 1000**2
    # the largest ranged attribute's prefix strategy while it is computed
    assert bases_bytes([1000, 300], ranged=[300, 200]) == bases_bytes([1000, 300]) + (
        8 * PREFIX_ARRAYS_AT_PEAK * 300**2)
    assert bases_bytes([1, 1]) == bases_bytes([]) == 0.0


def test_this_modules_bases_are_known_without_checking_them_again(monkeypatch):
    """Measurements carry the cached bases themselves: residual_subset reads them as
    residuals without the rows² · size check; any other array is checked in full."""
    import dpgm.residuals as residuals

    helmert, cosine = residual_basis(40), ordered_basis(40)
    copy = helmert.copy()

    def no_check(*args, **kwargs):
        raise AssertionError("checked again")

    monkeypatch.setattr(residuals.np, "allclose", no_check)
    query = KroneckerQuery([helmert, cosine])
    measured = Measurement(("a", "b"), np.zeros(39 * 39), 1.0, query=query)
    assert residual_subset(measured) == ("a", "b")
    with pytest.raises(AssertionError, match="checked again"):
        residual_subset(Measurement(("a",), np.zeros(39), 1.0, query=KroneckerQuery([copy])))
    monkeypatch.undo()
    assert residual_subset(Measurement(("a",), np.zeros(39), 1.0,
                                       query=KroneckerQuery([copy]))) == ("a",)
    copy[0, 0] += 0.1
    assert residual_subset(Measurement(("a",), np.zeros(39), 1.0,
                                       query=KroneckerQuery([copy]))) is None


def _prefix_error(strategy: np.ndarray) -> float:
    """The prefix ranges' total variance through ``strategy`` per unit of ρ: the noise
    variance its sensitivity needs times ``tr(Wᵀ W Q⁺ Q⁺ᵀ)`` on the residual."""
    size = strategy.shape[1]
    basis = residual_basis(size)
    back = basis.T @ np.linalg.pinv(strategy @ basis.T)  # residual answers -> cells
    queries = np.tril(np.ones((size, size)))
    return float((strategy**2).sum(axis=0).max() * ((queries @ back) ** 2).sum())


def test_the_prefix_strategy_is_as_good_as_a_numerical_optimiser():
    size = 5
    basis = residual_basis(size)
    reached = _prefix_error(prefix_strategy(size))
    assert reached < 0.9 * _prefix_error(basis)  # below the plain residual basis

    def error(flat):
        return _prefix_error(flat.reshape(size - 1, size - 1) @ basis)

    rng = np.random.default_rng(0)
    found = min(minimize(error, (np.eye(size - 1) + 0.3 * rng.standard_normal(
        (size - 1, size - 1))).ravel(), method="Nelder-Mead",
        options={"maxiter": 40000, "xatol": 1e-10, "fatol": 1e-12}).fun for _ in range(3))
    assert reached <= found * (1 + 1e-6)
    assert reached >= found * (1 - 1e-2)


@pytest.mark.parametrize("loss", ["sum", "max", "error"])
def test_a_plan_with_prefix_ranges_spends_rho_and_has_the_variances_of_least_squares(loss):
    plan = plan_residuals(DOMAIN, WORKLOAD, RHO, loss, ranged=RANGED)
    assert plan.ranged == frozenset(RANGED)
    queries = [full_query(DOMAIN, s, RANGED) for s in plan.subsets]
    columns = sum((q**2).sum(axis=0) / u for q, u in zip(queries, plan.variances))
    assert math.isclose(0.5 * columns.max(), RHO, rel_tol=1e-9)  # brute-force sensitivity
    assert math.isclose(plan.rhos.sum(), RHO, rel_tol=1e-12)
    stacked = np.vstack(queries)
    precision = np.concatenate([np.full(q.shape[0], 1.0 / u)
                                for q, u in zip(queries, plan.variances)])
    covariance = np.linalg.pinv(stacked.T @ (precision[:, None] * stacked))
    for attrs in [*WORKLOAD, ("c",), ("a",)]:
        ordered = tuple(a for a in DOMAIN.attrs if a in attrs)
        ranges = full_marginal(DOMAIN, ordered, RANGED)
        answers = np.einsum("ij,jk,ik->i", ranges, covariance, ranges)
        assert plan.variance(attrs) == pytest.approx(answers.mean(), rel=1e-9)


def test_the_error_loss_is_as_low_as_a_numerical_optimiser_and_lower_than_the_others():
    plan = plan_residuals(DOMAIN, WORKLOAD, RHO, "error", ranged=RANGED)
    names = [frozenset(s) for s in plan.subsets]
    p = np.array([(full_query(DOMAIN, s, RANGED) ** 2).sum(axis=0).max()
                  for s in plan.subsets])
    share = np.array([DOMAIN.size(w) / math.prod((DOMAIN[a] + 1) / 2 for a in w
                                                 if a in RANGED) for w in WORKLOAD])

    def loss(variances):
        by = dict(zip(names, variances))
        return float(np.dot(share, np.sqrt([marginal_variance(DOMAIN, w, by, RANGED)
                                            for w in WORKLOAD])))

    assert plan.value == pytest.approx(loss(plan.variances), rel=1e-12)
    budget = {"type": "eq", "fun": lambda z: np.sum(p * np.exp(z)) / 2 - RHO}
    start = -np.log(plan.variances) + np.linspace(-0.3, 0.3, len(p))
    found = minimize(lambda z: loss(np.exp(-z)), start, constraints=[budget],
                     method="SLSQP", options={"ftol": 1e-14, "maxiter": 2000})
    assert plan.value <= found.fun * (1 + 1e-5)
    assert plan.value >= found.fun * (1 - 1e-3)
    for other in ("sum", "max"):
        assert plan.value < loss(plan_residuals(DOMAIN, WORKLOAD, RHO, other,
                                                ranged=RANGED).variances)


def test_without_prefix_ranges_the_plan_is_the_marginals_plan():
    plain = plan_residuals(DOMAIN, WORKLOAD, RHO)
    unused = plan_residuals(DOMAIN, [("a", "b")], RHO, ranged=("c",))  # c not in it
    assert unused.ranged == frozenset()
    np.testing.assert_array_equal(plan_residuals(DOMAIN, WORKLOAD, RHO, ranged=()).variances,
                                  plain.variances)
    with pytest.raises(DomainError, match="unknown attribute"):
        plan_residuals(DOMAIN, WORKLOAD, RHO, ranged=("z",))
