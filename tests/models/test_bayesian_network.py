"""Bayesian networks: structure, and queries in state names against brute-force enumeration."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from brute_force import chi_square_pvalue

from dpgm.errors import DataError, DomainError
from dpgm.models import BayesianNetwork


def random_network(seed: int) -> BayesianNetwork:
    """Five variables, each with up to two earlier parents, named states, random CPDs."""
    rng = np.random.default_rng(seed)
    variables = [f"v{i}" for i in range(5)]
    states = {v: [f"{v}_s{k}" for k in range(int(rng.integers(2, 4)))] for v in variables}
    parents, cpds = {}, {}
    for i, v in enumerate(variables):
        count = int(rng.integers(0, min(i, 2) + 1))
        parents[v] = tuple(str(p) for p in rng.choice(variables[:i], count, replace=False))
        shape = tuple(len(states[p]) for p in parents[v]) + (len(states[v]),)
        cpds[v] = rng.dirichlet(np.ones(shape[-1]), size=shape[:-1])
    return BayesianNetwork(variables, states, parents, cpds, "random").check()


def joint(network: BayesianNetwork) -> np.ndarray:
    shape = network.domain.shape
    cells = np.array(list(itertools.product(*(range(s) for s in shape))))
    return network.probability(cells).reshape(shape)


def conditional(network, p, variables, evidence):
    """Brute-force P(variables | evidence) with axes in ``variables`` order; an evidence
    value is a state or a list of states (one of them)."""
    names = network.variables
    p = p.copy()
    for v, states in evidence.items():
        keep = np.isin(np.array(network.states[v]), states)
        shape = [1] * p.ndim
        shape[names.index(v)] = keep.size
        p = np.where(keep.reshape(shape), p, 0.0)
    drop = tuple(k for k, v in enumerate(names) if v not in variables)
    table = p.sum(axis=drop)
    order = [v for v in names if v in variables]
    table = np.transpose(table, [order.index(v) for v in variables])
    return table / table.sum()


@pytest.mark.parametrize("seed", range(6))
def test_queries_equal_brute_force(seed):
    network = random_network(seed)
    p = joint(network)
    rng = np.random.default_rng(seed)
    for _ in range(4):
        chosen = [str(v) for v in rng.permutation(network.variables)]
        variables, given = chosen[:2], chosen[2:4]
        evidence = {v: network.states[v][int(rng.integers(len(network.states[v])))] for v in given}
        answer = network.query(variables, evidence)
        expected = conditional(network, p, variables, evidence)
        assert list(answer.index.names) == variables
        assert answer.index[0] == (network.states[variables[0]][0], network.states[variables[1]][0])
        np.testing.assert_allclose(answer.to_numpy(), expected.ravel(), atol=1e-12)
        single = network.query(variables, evidence, joint=False)
        first = single[variables[0]].to_numpy()
        np.testing.assert_allclose(first, expected.sum(axis=1), atol=1e-12)
        # MPE given the evidence, and the marginal MAP of the two variables
        mpe = network.map_query(evidence=evidence)
        rest = [v for v in network.variables if v not in evidence]
        full = conditional(network, p, rest, evidence)
        best = np.unravel_index(int(np.argmax(full)), full.shape)
        assert mpe == {v: network.states[v][k] for v, k in zip(rest, best)}
        top = np.unravel_index(int(np.argmax(expected)), expected.shape)
        assert network.map_query(variables, evidence) == {
            v: network.states[v][k] for v, k in zip(variables, top)
        }


def test_simulate_with_evidence_draws_from_the_posterior():
    network = random_network(3)
    p = joint(network)
    evidence = {"v4": network.states["v4"][0]}
    frame = network.simulate(40_000, evidence=evidence, rng=1)
    assert (frame["v4"] == evidence["v4"]).all()
    expected = conditional(network, p, ["v0"], evidence)
    observed = frame["v0"].value_counts(normalize=True).reindex(network.states["v0"], fill_value=0)
    np.testing.assert_allclose(observed.to_numpy(), expected, atol=0.015)
    plain = network.simulate(10, rng=0)
    assert isinstance(plain, pd.DataFrame) and set(plain["v1"]) <= set(network.states["v1"])


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("reverse", [False, True])
def test_ancestral_draws_follow_the_joint_by_chi_square(seed, reverse):
    """sample (the shared row sampler) against the brute-force joint on every cell: parents
    listed out of domain order (seeds 1, 3, 4), variables listed children first
    (``reverse``). The same test has power: it rejects a network with one CPD changed."""
    network = random_network(seed)
    if reverse:
        network = BayesianNetwork(network.variables[::-1], network.states, network.parents,
                                  network.cpds).check()
    p = joint(network)
    observed = network.sample(30_000, rng=seed).marginal(network.variables)
    assert chi_square_pvalue(observed, p) > 1e-3
    root = next(v for v in network.variables if not network.parents[v])
    cpd = network.cpds[root]
    moved = BayesianNetwork(network.variables, network.states, network.parents,
                            {**network.cpds, root: 0.5 * cpd + 0.5 * np.roll(cpd, 1)})
    q = joint(moved)
    assert 30_000 * ((q - p) ** 2 / p).sum() > 200  # a large shift for 30,000 records
    assert chi_square_pvalue(observed, q) < 1e-3


def test_structure_collider_and_blanket():
    states = {v: ["no", "yes"] for v in "ABCD"}
    parents = {"A": (), "B": (), "C": ("A", "B"), "D": ("C",)}
    cpds = {
        "A": np.array([0.3, 0.7]),
        "B": np.array([0.6, 0.4]),
        "C": np.full((2, 2, 2), 0.5),
        "D": np.array([[0.9, 0.1], [0.2, 0.8]]),
    }
    network = BayesianNetwork(list("ABCD"), states, parents, cpds).check()
    assert network.children("C") == ["D"] and network.children("A") == ["C"]
    assert network.markov_blanket("A") == ["B", "C"]
    assert not network.is_dconnected("A", "B")
    assert network.is_dconnected("A", "B", ["C"]) and network.is_dconnected("A", "B", ["D"])
    assert not network.is_dconnected("A", "D", ["C"])
    assert network.domain.labels["C"] == ("no", "yes")


def test_check_and_query_errors():
    network = random_network(0)
    with pytest.raises(DomainError, match="both queried and given"):
        network.query(["v0"], {"v0": network.states["v0"][0]})
    with pytest.raises(DomainError, match="both queried and given"):
        network.probabilities(["v0"], {"v0": network.states["v0"][0]})
    with pytest.raises(DomainError, match="not a label"):
        network.query(["v0"], {"v1": "nonsense"})
    bad = BayesianNetwork(
        ["a", "b"], {"a": ["x", "y"], "b": ["x", "y"]}, {"a": ("b",), "b": ("a",)},
        {"a": np.full((2, 2), 0.5), "b": np.full((2, 2), 0.5)},
    )
    with pytest.raises(DataError, match="cycle"):
        bad.check()
    rows = BayesianNetwork(["a"], {"a": ["x", "y"]}, {"a": ()}, {"a": np.array([0.5, 0.6])})
    with pytest.raises(DataError, match="not a distribution"):
        rows.check()


def test_fit_mle_recovers_the_cpds_and_fills_unseen_rows_uniformly():
    network = random_network(2)
    frame = network.simulate(200_000, rng=5)
    fitted = BayesianNetwork.fit_mle(network, frame)
    for v in network.variables:
        np.testing.assert_allclose(fitted.cpds[v], network.cpds[v], atol=0.02)
    # one record: the seen parent configuration is its one-hot row, the others uniform
    one = BayesianNetwork.fit_mle(network, frame.iloc[:1])
    child = next(v for v in network.variables if network.parents[v])
    rows = one.cpds[child].reshape(-1, one.cpds[child].shape[-1])
    assert sum(np.allclose(r, 1 / r.size) for r in rows) == len(rows) - 1
    smoothed = BayesianNetwork.fit_mle(network, frame.iloc[:1], pseudo_count=1.0)
    assert (smoothed.cpds[child] > 0).all()
    with pytest.raises(DataError, match="not one of its labels"):
        BayesianNetwork.fit_mle(network, frame.assign(v0="nonsense"))


@pytest.mark.parametrize("seed", range(8))
def test_pruned_queries_equal_brute_force_with_sets_of_states(seed):
    """Barren nodes, evidence by slicing, and cut-off tables: the answers do not move."""
    network = random_network(seed + 10)
    p = joint(network)
    rng = np.random.default_rng(seed)
    for _ in range(6):
        chosen = [str(v) for v in rng.permutation(network.variables)]
        size = int(rng.integers(1, 4))
        variables, given = chosen[:size], chosen[size: size + int(rng.integers(0, 3))]
        evidence = {}
        for v in given:
            states = network.states[v]
            picked = rng.choice(states, int(rng.integers(1, len(states) + 1)), replace=False)
            evidence[v] = [str(s) for s in picked] if len(picked) > 1 else str(picked[0])
        expected = conditional(network, p, variables, evidence)
        np.testing.assert_allclose(network.probabilities(variables, evidence), expected,
                                   atol=1e-12)


@pytest.mark.parametrize("seed", range(8))
def test_posteriors_equal_brute_force(seed):
    """Every variable's posterior from one calibration, and those of a few with the
    irrelevant CPDs pruned, equal the brute-force joint's (1e-12)."""
    network = random_network(seed + 20)
    p = joint(network)
    rng = np.random.default_rng(seed)
    for _ in range(4):
        chosen = [str(v) for v in rng.permutation(network.variables)]
        evidence = {}
        for v in chosen[: int(rng.integers(0, 3))]:
            states = network.states[v]
            picked = rng.choice(states, int(rng.integers(1, len(states) + 1)), replace=False)
            evidence[v] = [str(s) for s in picked] if len(picked) > 1 else str(picked[0])
        found = network.posteriors(evidence)
        assert list(found) == [v for v in network.variables if v not in evidence]
        for v, series in found.items():
            assert list(series.index) == network.states[v] and series.index.name == v
            np.testing.assert_allclose(series.to_numpy(),
                                       conditional(network, p, [v], evidence), atol=1e-12)
        asked = [v for v in chosen[len(evidence):]][:2]
        pruned = network.posteriors(evidence, variables=asked)
        assert list(pruned) == asked
        for v in asked:
            np.testing.assert_allclose(pruned[v].to_numpy(),
                                       conditional(network, p, [v], evidence), atol=1e-12)


def test_posteriors_compile_the_tree_once_and_refuse_bad_questions():
    network = random_network(3)
    network.posteriors({"v0": network.states["v0"][0]})
    compiled = network._compiled
    network.posteriors({"v1": network.states["v1"][1]}, variables=["v4"])
    assert network._compiled is compiled
    with pytest.raises(DomainError, match="both queried and given"):
        network.posteriors({"v1": network.states["v1"][0]}, variables=["v1"])
    with pytest.raises(DomainError, match="unknown attribute"):
        network.posteriors({"nope": "x"})


def test_evidence_of_probability_zero_is_an_error():
    states = {v: ["no", "yes"] for v in "AB"}
    network = BayesianNetwork(["A", "B"], states, {"A": (), "B": ("A",)},
                              {"A": np.array([1.0, 0.0]), "B": np.array([[0.5, 0.5],
                                                                         [0.5, 0.5]])})
    with pytest.raises(DataError, match="probability zero"):
        network.query(["B"], {"A": "yes"})
    with pytest.raises(DataError, match="probability zero"):
        network.posteriors({"A": "yes"})
    with pytest.raises(DataError, match="probability zero"):
        network.posteriors({"A": "yes"}, variables=["B"])
    np.testing.assert_allclose(network.probabilities(["B"], {"A": "no"}), [0.5, 0.5])


def test_product_marginal_equals_a_dense_einsum():
    from dpgm.inference.elimination import product_marginal

    rng = np.random.default_rng(0)
    sizes = {"a": 2, "b": 3, "c": 4, "d": 2, "e": 3}
    scopes = [("a", "b"), ("b", "c", "d"), ("d", "e"), ("e",), ("c", "a")]
    tables = [rng.random([sizes[x] for x in s]) for s in scopes]
    dense = np.einsum("ab,bcd,de,e,ca->ec", *tables)
    np.testing.assert_allclose(product_marginal(tables, scopes, ("e", "c")), dense, rtol=1e-12)
    with pytest.raises(DomainError, match="no table mentions"):
        product_marginal(tables, scopes, ("z",))


def test_product_marginal_follows_a_hint_and_gives_up_a_bad_one():
    from dpgm.inference import elimination

    rng = np.random.default_rng(1)
    # a star: eliminating the hub first would make a table over all the leaves
    leaves = [f"x{i}" for i in range(10)]
    scopes = [("hub", leaf) for leaf in leaves]
    tables = [rng.random((2, 4)) for _ in leaves]
    keep = ("x0",)
    expected = elimination.product_marginal(tables, scopes, keep)
    for order in (["hub", *leaves], [*leaves[::-1], "hub"]):
        np.testing.assert_allclose(
            elimination.product_marginal(tables, scopes, keep, order), expected, rtol=1e-12)
    dense = np.einsum("ha,hb->a", tables[0], np.prod(
        [t.sum(axis=1) for t in tables[1:]], axis=0)[:, None])
    np.testing.assert_allclose(expected, dense, rtol=1e-12)


def test_product_marginal_beyond_einsums_52_labels():
    from dpgm.inference.elimination import product_marginal

    rng = np.random.default_rng(2)
    names = [f"v{i}" for i in range(60)]  # a chain of 60 variables
    scopes = [(a, b) for a, b in zip(names, names[1:])]
    tables = [rng.random((2, 2)) for _ in scopes]
    expected = tables[0]
    for t in tables[1:]:
        expected = expected @ t
    got = product_marginal(tables, scopes, (names[0], names[-1]), order=names[1:-1])
    np.testing.assert_allclose(got, expected, rtol=1e-10)
