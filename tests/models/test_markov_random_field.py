"""MarkovRandomField against brute-force enumeration of the joint on small random models.

Random models have 3-6 attributes of sizes 2-4, a cycle through all attributes plus a few
random cliques, Gaussian log-potentials and, where ``zeros`` is set, some -inf cells.

Sampling tests use Pearson's chi-square goodness-of-fit test at ``ALPHA = 1e-3``: for a
correct sampler each check fails with probability at most 1e-3 (up to the chi-square
approximation; cells of expected count < 5 are pooled). There are 61 such
checks below (12 seeds x 2 zero settings x 2 marginals, 12 fits of perturbed samples to
their own model, one on a disconnected model), so a correct sampler trips one of them with
probability below 6.1% for an arbitrary choice of seeds; the seeds are fixed, so the
outcome is reproducible.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from brute_force import chi_square_pvalue, joint, marginal, random_model

from dpgm import DataError, Dataset, Domain, DomainError, Factor, MarkovRandomField
from dpgm.errors import ParameterError
from dpgm.inference import LoopyPlan, MessagePlan

SEEDS = range(12)
ALPHA = 1e-3
N_SAMPLES = 20_000


def subsets(domain, rng, count=10):
    """Random attribute subsets of every size, in random order."""
    out = [()]
    for _ in range(count):
        k = int(rng.integers(1, len(domain) + 1))
        out.append(tuple(str(a) for a in rng.permutation(domain.attrs)[:k]))
    return out


# -- marginals ----------------------------------------------------------------------------
@pytest.mark.parametrize("zeros", [0.0, 0.3])
@pytest.mark.parametrize("seed", SEEDS)
def test_marginals_in_and_out_of_cliques(seed, zeros):
    domain, _, model, p, _ = random_model(seed, zeros, total=500.0)
    rng = np.random.default_rng(seed)
    attr_sets = subsets(domain, rng) + [tuple(reversed(c)) for c in model.tree.cliques]
    attr_sets += list(itertools.combinations(domain.attrs, 2))  # some pairs share no clique
    attr_sets.append(tuple(reversed(domain.attrs)))
    in_clique = out_of_clique = 0
    for attrs in attr_sets:
        got = model.marginal(attrs)
        np.testing.assert_allclose(got, 500.0 * marginal(domain, p, attrs), atol=1e-9)
        factor = model.project(attrs)
        assert factor.attrs == attrs
        np.testing.assert_allclose(factor.values, got)
        if model.tree.find(attrs) is None:
            out_of_clique += 1
        else:
            in_clique += 1
    assert in_clique  # both code paths were exercised (unless one clique holds everything)
    assert out_of_clique or len(model.tree.cliques) == 1


@pytest.mark.parametrize("seed", SEEDS[:4])
def test_marginals_across_parts_the_tree_keeps_independent(seed):
    """Two random models side by side, joined by nothing: a marginal reaching into both
    is the product of the parts' own (and equals brute force), with evidence too."""
    left, right = random_model(seed), random_model(seed + 100)
    names = {a: f"r_{a}" for a in right[0].attrs}
    domain = Domain(left[0].attrs + tuple(names.values()), left[0].shape + right[0].shape)
    potentials = {**left[1], **{tuple(names[a] for a in c): v for c, v in right[1].items()}}
    model = MarkovRandomField(domain, potentials, total=300.0)
    p, _ = joint(domain, potentials)
    assert len(model.tree.independent_groups(domain.attrs)) >= 2
    rng = np.random.default_rng(seed)
    for attrs in subsets(domain, rng, 15) + [tuple(reversed(domain.attrs))]:
        np.testing.assert_allclose(model.marginal(attrs), 300.0 * marginal(domain, p, attrs),
                                   atol=1e-9)
    first, other = domain.attrs[0], domain.attrs[-1]
    given = p.copy()
    given[np.arange(domain[first]) != 1] = 0.0  # the first attribute is the first axis
    expected = marginal(domain, given / given.sum(), (other, first))
    np.testing.assert_allclose(model.marginal((other, first), given={first: 1}),
                               300.0 * expected, atol=1e-9)


@pytest.mark.parametrize("seed", SEEDS[:6])
def test_many_marginals_in_one_calibration_equal_the_one_by_one_marginals(seed):
    domain, _, model, p, _ = random_model(seed, 0.3, total=500.0)
    rng = np.random.default_rng(seed)
    attr_sets = subsets(domain, rng) + list(itertools.combinations(domain.attrs, 2))
    attr_sets += [tuple(reversed(c)) for c in model.tree.cliques]
    for attrs, got in zip(attr_sets, model.marginals(attr_sets), strict=True):
        np.testing.assert_allclose(got, model.marginal(attrs), rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(got, 500.0 * marginal(domain, p, attrs), atol=1e-9)
    assert model.marginals([]) == []


def test_many_marginals_across_subtrees_and_in_any_axis_order():
    domain = Domain(["a", "b", "c", "e", "f"], [2, 3, 4, 3, 2])
    rng = np.random.default_rng(5)
    potentials = {
        p: rng.normal(size=domain.project(p).shape)
        for p in [("a", "b"), ("b", "c"), ("c", "e"), ("e", "f"), ("a", "c")]
    }
    model = MarkovRandomField(domain, potentials, total=1000.0)
    cliques = [c for k in (1, 2, 3) for c in itertools.combinations(domain.attrs, k)]
    cliques += [c[::-1] for c in cliques]
    for clique, got in zip(cliques, model.marginals(cliques), strict=True):
        np.testing.assert_allclose(got, model.marginal(clique), rtol=1e-9)


def test_many_marginals_across_a_subtree_of_many_cliques():
    """A chain of 70 attributes: (x0, x69) spans 69 cliques, more than one einsum takes."""
    domain = Domain([f"x{i}" for i in range(70)], [2] * 70)
    rng = np.random.default_rng(5)
    potentials = {(f"x{i}", f"x{i + 1}"): rng.normal(size=(2, 2)) for i in range(69)}
    model = MarkovRandomField(domain, potentials, total=100.0)
    cliques = [("x0", "x69"), ("x3", "x40", "x66"), ("x10", "x11")]
    for clique, got in zip(cliques, model.marginals(cliques), strict=True):
        np.testing.assert_allclose(got, model.marginal(clique), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("counting", ["bethe", "convex"])
def test_many_marginals_of_an_approximate_model_equal_its_one_by_one_marginals(counting):
    domain = Domain(list("abcd"), [2, 3, 2, 2])
    cycle = [("a", "b"), ("b", "c"), ("c", "d"), ("a", "d")]
    rng = np.random.default_rng(2)
    potentials = {c: rng.normal(size=domain.project(c).shape) for c in cycle}
    model = MarkovRandomField(domain, potentials, 50.0,
                              loopy=LoopyPlan(domain, cycle, counting=counting))
    cliques = [("b", "a"), ("c",), ("a", "c"), ("d", "b", "a")]  # inside, and completed/exact
    answers = model.marginals(cliques)
    # a plan keeps its messages between calls: a fresh one starts from the same point
    again = MarkovRandomField(domain, potentials, 50.0,
                              loopy=LoopyPlan(domain, cycle, counting=counting))
    for clique, got in zip(cliques, answers, strict=True):
        np.testing.assert_array_equal(got, again.marginal(clique))


def test_the_engine_answers_exact_and_approximate_models():
    domain = Domain(list("abc"), [2, 3, 2])
    potentials = {("a", "b"): np.ones((2, 3)), ("b", "c"): np.zeros((3, 2))}
    exact = MarkovRandomField(domain, potentials, 10.0)
    assert not exact.approximate and exact.loopy is None
    assert exact.engine is exact.plan and exact.engine.tree is exact.tree
    assert exact.engine.description == "exact" and exact.describe()["inference"] == "exact"
    # an exact engine given: the model answers on its junction tree
    given = MarkovRandomField(domain, potentials, 10.0, engine=MessagePlan(exact.tree))
    assert given.tree is exact.tree and not given.approximate
    np.testing.assert_array_equal(given.marginal(("a", "c")), exact.marginal(("a", "c")))
    loopy = LoopyPlan(domain, list(potentials))
    approximate = MarkovRandomField(domain, potentials, 10.0, engine=loopy)
    assert approximate.approximate and approximate.engine is loopy is approximate.loopy
    assert approximate.engine.tree is None
    assert "loopy belief propagation, bethe" in approximate.describe()["inference"]
    with pytest.raises(ParameterError, match="engine once"):
        MarkovRandomField(domain, potentials, loopy=loopy, engine=loopy)


@pytest.mark.parametrize("seed", SEEDS)
def test_factor_potentials_in_permuted_order(seed):
    """Potentials given as Factors whose attribute order differs from the clique key."""
    domain, potentials, model, p, log_z = random_model(seed)
    rng = np.random.default_rng(seed)
    as_factors = {}
    for clique, table in potentials.items():
        factor = Factor(domain.project(clique), table)
        perm = [str(a) for a in rng.permutation(clique)]
        key = tuple(str(a) for a in rng.permutation(clique))
        as_factors[key] = factor.transpose(perm)
    other = MarkovRandomField(domain, as_factors)
    assert other.log_partition == pytest.approx(log_z)
    for clique in model.tree.cliques:
        np.testing.assert_allclose(other.marginal(clique), model.marginal(clique), atol=1e-12)
    for attrs in itertools.combinations(domain.attrs, 2):
        np.testing.assert_allclose(other.marginal(attrs), marginal(domain, p, attrs), atol=1e-12)


def test_potentials_on_overlapping_cliques_add_up():
    domain = Domain(["a", "b"], [2, 3])
    rng = np.random.default_rng(0)
    t1, t2, t3 = rng.normal(size=(2, 3)), rng.normal(size=(3, 2)), rng.normal(size=2)
    model = MarkovRandomField(domain, {("a", "b"): t1, ("b", "a"): t2, ("a",): t3})
    lj = t1 + t2.T + t3[:, None]
    p = np.exp(lj) / np.exp(lj).sum()
    np.testing.assert_allclose(model.marginal(["b", "a"]), p.T)


def test_total_scales_counts_but_not_probabilities():
    domain, potentials, model, p, log_z = random_model(1)
    big = MarkovRandomField(domain, potentials, total=1234.5)
    assert big.log_partition == pytest.approx(log_z)
    a = domain.attrs[0]
    np.testing.assert_allclose(big.marginal([a]), 1234.5 * model.marginal([a]))
    assert big.marginal([]) == pytest.approx(1234.5)
    assert big.clique_marginals()[0].sum() == pytest.approx(1234.5)


@pytest.mark.parametrize("seed", SEEDS[:4])
def test_from_tree(seed):
    domain, _, model, p, _ = random_model(seed, total=7.0)
    tables = model.clique_log_potentials()
    other = MarkovRandomField.from_tree(model.tree, tables, total=7.0)
    assert other.tree is model.tree
    assert other.cliques == model.tree.cliques
    for attrs in itertools.combinations(domain.attrs, 2):
        np.testing.assert_allclose(other.marginal(attrs), 7.0 * marginal(domain, p, attrs))


# -- MAP ----------------------------------------------------------------------------------
def brute_map(domain, p, evidence=None):
    p = p.copy()
    for a, v in (evidence or {}).items():
        index = [slice(None)] * len(domain)
        keep = np.zeros(domain[a], dtype=bool)
        keep[v] = True
        index[domain.attrs.index(a)] = ~keep
        p[tuple(index)] = 0.0
    best = np.unravel_index(int(np.argmax(p)), p.shape)
    return dict(zip(domain.attrs, (int(v) for v in best), strict=True)), p.max()


@pytest.mark.parametrize("zeros", [0.0, 0.3])
@pytest.mark.parametrize("seed", SEEDS)
def test_map_with_and_without_evidence(seed, zeros):
    domain, _, model, p, _ = random_model(seed, zeros)
    expected, _ = brute_map(domain, p)
    assert model.map() == expected
    rng = np.random.default_rng(seed)
    for _ in range(6):
        k = int(rng.integers(1, len(domain)))
        attrs = [str(a) for a in rng.choice(domain.attrs, size=k, replace=False)]
        evidence = {a: int(rng.integers(domain[a])) for a in attrs}
        expected, best = brute_map(domain, p, evidence)
        if best == 0:
            with pytest.raises(DataError, match="probability zero"):
                model.map(evidence)
            continue
        got = model.map(evidence)
        assert {a: got[a] for a in evidence} == evidence
        assert got == expected


def test_map_errors():
    domain, _, model, _, _ = random_model(0)
    a = domain.attrs[0]
    with pytest.raises(DomainError, match=r"unknown attribute.*nope"):
        model.map({"nope": 0})
    with pytest.raises(DomainError, match=rf"code {domain[a]} of {a!r} is outside"):
        model.map({a: domain[a]})


def test_map_on_a_model_with_forbidden_cells():
    """A large weight on a cell that another potential forbids must not be chosen."""
    domain = Domain(["a", "b", "c"], [2, 2, 2])
    ab = np.array([[0.0, 10.0], [0.0, 0.0]])  # (a=0, b=1) is very likely ...
    bc = np.array([[0.0, 0.0], [-np.inf, -np.inf]])  # ... but b=1 is impossible
    model = MarkovRandomField(domain, {("a", "b"): ab, ("b", "c"): bc})
    assert model.map()["b"] == 0


# -- sampling -----------------------------------------------------------------------------
@pytest.mark.parametrize("zeros", [0.0, 0.3])
@pytest.mark.parametrize("seed", SEEDS)
def test_sampling_frequencies(seed, zeros):
    """Chi-square goodness of fit of two 2-way marginals of the samples (see module doc)."""
    domain, _, model, p, _ = random_model(seed, zeros)
    data = model.sample(N_SAMPLES, rng=seed)
    assert isinstance(data, Dataset) and data.domain == domain and len(data) == N_SAMPLES
    rng = np.random.default_rng(seed)
    clique_pair = tuple(model.tree.cliques[0][:2])
    random_pair = tuple(str(a) for a in rng.choice(domain.attrs, size=2, replace=False))
    for pair in (clique_pair, random_pair):
        pvalue = chi_square_pvalue(data.marginal(pair), marginal(domain, p, pair))
        assert pvalue > ALPHA, (pair, pvalue)
    # impossible cells are never drawn
    full = data.marginal(domain.attrs)
    assert not full[p == 0].any()


@pytest.mark.parametrize("seed", SEEDS)
def test_chi_square_check_rejects_a_perturbed_model(seed):
    """The same check has power: samples of a perturbed model are rejected."""
    domain, potentials, model, p, _ = random_model(seed)
    rng = np.random.default_rng(10_000 + seed)
    clique = next(iter(potentials))
    perturbed = dict(potentials)
    perturbed[clique] = potentials[clique] + 1.5 * rng.normal(size=potentials[clique].shape)
    q, _ = joint(domain, perturbed)
    pair = tuple(clique[:2])
    p2, q2 = marginal(domain, p, pair), marginal(domain, q, pair)
    # precondition: the shift is large for n samples (noncentrality of the chi-square test)
    assert N_SAMPLES * ((q2 - p2) ** 2 / p2).sum() > 200
    data = MarkovRandomField(domain, perturbed).sample(N_SAMPLES, rng=seed)
    assert chi_square_pvalue(data.marginal(pair), p2) < ALPHA
    assert chi_square_pvalue(data.marginal(pair), q2) > ALPHA


def test_sampling_is_reproducible():
    _, _, model, _, _ = random_model(3, total=40.4)
    a = model.sample(rng=5).records
    assert a.shape[0] == 40  # default n: the model's total, rounded
    np.testing.assert_array_equal(a, model.sample(rng=5).records)
    np.testing.assert_array_equal(a, model.sample(rng=np.random.default_rng(5)).records)
    assert model.sample(0, rng=1).records.shape == (0, len(model.domain))
    with pytest.raises(ValueError, match="n must be an integer >= 0, got -1"):
        model.sample(-1)


# -- likelihood ---------------------------------------------------------------------------
@pytest.mark.parametrize("zeros", [0.0, 0.3])
@pytest.mark.parametrize("seed", SEEDS)
def test_log_likelihood(seed, zeros):
    domain, _, model, p, _ = random_model(seed, zeros)
    data = model.sample(300, rng=seed)
    rng = np.random.default_rng(seed)
    weights = rng.random(300)
    with np.errstate(divide="ignore"):
        logp = np.log(p)[tuple(data.records.T)]
    assert model.log_likelihood(data) == pytest.approx(logp.sum())
    weighted = Dataset(data.records, domain, weights)
    assert model.log_likelihood(weighted) == pytest.approx((weights * logp).sum())
    if zeros:
        impossible = np.argwhere(p == 0)
        if len(impossible):
            record = Dataset(impossible[:1], domain)
            assert model.log_likelihood(record) == -np.inf


def test_log_likelihood_domain_mismatch():
    domain, _, model, _, _ = random_model(0)
    other = Domain(list(domain.attrs)[::-1], list(domain.shape)[::-1])
    with pytest.raises(DomainError, match="domain differs"):
        model.log_likelihood(Dataset(np.zeros((1, len(other)), dtype=int), other))


# -- construction errors ------------------------------------------------------------------
def test_constructor_errors():
    domain = Domain(["a", "b"], [2, 3])
    with pytest.raises(DomainError, match=r"shape \(3, 2\), expected \(2, 3\)"):
        MarkovRandomField(domain, {("a", "b"): np.zeros((3, 2))})
    with pytest.raises(DomainError, match="potential on"):
        MarkovRandomField(domain, {("a", "b"): Factor(domain.project(["a"]), np.zeros(2))})
    with pytest.raises(DomainError, match=r"Domain\(a: 1\) does not fit Domain\(a: 2\)"):
        MarkovRandomField(domain, {("a",): Factor(Domain(["a"], [1]), np.zeros(1))})
    with pytest.raises(DomainError, match="'c'"):
        MarkovRandomField(domain, {("a", "c"): np.zeros((2, 2))})
    for total in (0.0, -1.0, np.nan, np.inf):
        with pytest.raises(ValueError, match="total must be"):
            MarkovRandomField(domain, {}, total=total)


def test_disconnected_components_and_unused_attributes():
    """Independent blocks (joined by empty separators) and an attribute in no potential."""
    rng = np.random.default_rng(0)
    domain = Domain(["e", "a", "b", "c", "d"], [2, 3, 2, 2, 3])
    potentials = {
        ("a", "b"): rng.normal(size=(3, 2)),
        ("d", "c"): rng.normal(size=(3, 2)),
        ("b",): rng.normal(size=2),
    }
    model = MarkovRandomField(domain, potentials, total=10.0)
    p, log_z = joint(domain, potentials)
    assert model.log_partition == pytest.approx(log_z)
    for k in (1, 2, 3):
        for attrs in itertools.permutations(domain.attrs, k):
            np.testing.assert_allclose(model.marginal(attrs), 10 * marginal(domain, p, attrs))
    data = model.sample(N_SAMPLES, rng=1)
    pvalue = chi_square_pvalue(data.marginal(["e", "a", "d"]), marginal(domain, p, ["e", "a", "d"]))
    assert pvalue > ALPHA
    assert model.map() == brute_map(domain, p)[0]


def test_model_without_potentials_is_uniform():
    domain = Domain(["a", "b"], [2, 3])
    model = MarkovRandomField(domain, {}, total=6.0)
    np.testing.assert_allclose(model.marginal(["b", "a"]), np.ones((3, 2)))
    assert model.log_partition == pytest.approx(np.log(6))
    assert "MarkovRandomField" in repr(model)


@pytest.mark.parametrize("seed", SEEDS)
def test_marginal_given_evidence_is_the_brute_force_conditional(seed):
    domain, _, model, p, _ = random_model(seed, 0.0)
    rng = np.random.default_rng(seed + 100)
    for _ in range(5):
        given = [str(a) for a in rng.choice(domain.attrs, size=2, replace=False)]
        rest = [a for a in domain.attrs if a not in given]
        asked = [str(a) for a in rng.choice(rest, size=min(2, len(rest)), replace=False)]
        evidence = {given[0]: int(rng.integers(domain[given[0]])),
                    given[1]: [0, domain[given[1]] - 1]}  # a value, and a set of values
        mask = np.ones(p.shape, dtype=bool)
        for a, v in evidence.items():
            keep = np.zeros(domain[a], dtype=bool)
            keep[v] = True
            shape = [1] * len(domain)
            shape[domain.attrs.index(a)] = domain[a]
            mask &= keep.reshape(shape)
        conditioned = np.where(mask, p, 0.0)
        conditioned /= conditioned.sum()
        drop = tuple(k for k, a in enumerate(domain.attrs) if a not in asked)
        expected = conditioned.sum(axis=drop)
        order = [a for a in domain.attrs if a in asked]
        expected = np.transpose(expected, [order.index(a) for a in asked])
        got = model.marginal(asked, given=evidence) / model.total
        np.testing.assert_allclose(got, expected, atol=1e-12)


def test_evidence_is_a_deprecated_name_of_given():
    domain, _, model, _, _ = random_model(0)
    first, second = domain.attrs[:2]
    with pytest.warns(DeprecationWarning, match="given="):
        old = model.marginal([second], evidence={first: 1})
    np.testing.assert_array_equal(old, model.marginal([second], given={first: 1}))
