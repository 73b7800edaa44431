"""Records fitted to pair tables (dpgm.estimation.records)."""

from __future__ import annotations

from itertools import combinations, product

import numpy as np
import pytest

from dpgm.dataset import Dataset
from dpgm.domain import Domain
from dpgm.errors import DataError, ParameterError
from dpgm.estimation.records import (
    _residuals,
    fit_records,
    move_deltas,
    squared_error,
    tree_records,
)

DOMAIN = Domain(["a", "b", "c", "d"], [3, 2, 4, 2])


def pair_tables(records: np.ndarray) -> dict[tuple[str, str], np.ndarray]:
    attrs = list(DOMAIN.attrs)
    tables = {}
    for j, k in combinations(range(len(attrs)), 2):
        table = np.zeros((DOMAIN[attrs[j]], DOMAIN[attrs[k]]))
        np.add.at(table, (records[:, j], records[:, k]), 1.0)
        tables[(attrs[j], attrs[k])] = table
    return tables


def correlated(n: int, rng: np.random.Generator) -> np.ndarray:
    """Records whose attributes depend on one another (a chain a -> b -> c -> d)."""
    a = rng.integers(0, 3, n)
    b = (a + (rng.random(n) < 0.2)) % 2
    c = (2 * b + a + rng.integers(0, 2, n)) % 4
    d = (c >= 2).astype(int) ^ (rng.random(n) < 0.1)
    return np.column_stack([a, b, c, d])


@pytest.mark.parametrize("with_triple", [False, True])
def test_each_moves_change_of_the_error_is_the_brute_force_one(with_triple):
    rng = np.random.default_rng(0)
    records = correlated(40, rng)
    other = correlated(40, rng)
    targets = {pair: table + rng.normal(0, 2, table.shape)
               for pair, table in pair_tables(other).items()}
    if with_triple:  # named out of the domain's order, its axes in the order named
        table = Dataset(other, DOMAIN).marginal(("d", "a", "c"))  # axes in the order named
        targets[("d", "a", "c")] = table + rng.normal(0, 2, table.shape)
    residuals = _residuals(Dataset(records, DOMAIN), targets)
    before = squared_error(DOMAIN, records, targets)
    rows = np.arange(40)
    for j, attr in enumerate(DOMAIN.attrs):
        deltas = move_deltas(residuals, records, rows, j, DOMAIN[attr])
        for i, value in product(range(0, 40, 7), range(DOMAIN[attr])):
            moved = records.copy()
            moved[i, j] = value
            assert deltas[i, value] == pytest.approx(
                squared_error(DOMAIN, moved, targets) - before, abs=1e-9)


def test_records_move_to_the_pair_tables_of_other_records():
    rng = np.random.default_rng(1)
    truth = correlated(2_000, rng)
    targets = pair_tables(truth)
    # the same one-way counts, every dependence between attributes shuffled away
    start = np.column_stack([rng.permutation(truth[:, j]) for j in range(4)])
    fitted = fit_records(DOMAIN, targets, start, np.random.default_rng(2))
    assert squared_error(DOMAIN, fitted, targets) < 1e-4 * squared_error(DOMAIN, start, targets)


def test_the_callers_records_stay_as_they_were_and_a_seed_gives_the_same_records():
    rng = np.random.default_rng(3)
    start = correlated(500, rng)
    kept = start.copy()
    targets = pair_tables(correlated(500, rng))
    first = fit_records(DOMAIN, targets, start, np.random.default_rng(4), sweeps=3)
    again = fit_records(DOMAIN, targets, start, np.random.default_rng(4), sweeps=3)
    assert np.array_equal(start, kept)
    assert np.array_equal(first, again)
    assert not np.array_equal(first, start)


def test_a_target_keyed_the_other_way_round_is_read_transposed():
    rng = np.random.default_rng(5)
    start = correlated(300, rng)
    targets = pair_tables(correlated(300, rng))
    flipped = {(k, j) if (j, k) == ("a", "c") else (j, k): (t.T if (j, k) == ("a", "c") else t)
               for (j, k), t in targets.items()}
    assert squared_error(DOMAIN, start, flipped) == squared_error(DOMAIN, start, targets)


@pytest.mark.parametrize("records, targets, match", [
    (np.zeros((5, 3), int), None, "4 columns"),
    (np.zeros((5, 4), int), {("a", "a"): np.zeros((3, 3))}, "distinct attributes"),
    (np.zeros((5, 4), int), {("a",): np.zeros(3)}, "distinct attributes"),
    (np.zeros((5, 4), int), {("a", "b", "c"): np.zeros((3, 4, 2))}, "shape"),
    (np.zeros((5, 4), int), {("a", "b"): np.zeros((2, 3))}, "shape"),
])
def test_bad_records_and_targets_are_refused_by_name(records, targets, match):
    if targets is None:
        targets = pair_tables(np.zeros((1, 4), int))
    with pytest.raises(ParameterError, match=match):
        fit_records(DOMAIN, targets, records, np.random.default_rng(0))


@pytest.mark.parametrize("records", [np.full((5, 4), 3), np.full((5, 4), 0.5)])
def test_records_with_codes_outside_the_domain_are_refused(records):
    with pytest.raises(DataError):
        fit_records(DOMAIN, pair_tables(np.zeros((1, 4), int)), records,
                    np.random.default_rng(0))


@pytest.mark.parametrize("option", [dict(sweeps=0), dict(batch=0.0), dict(batch=1.5),
                                    dict(noise=-1.0), dict(noise=float("nan"))])
def test_bad_options_are_refused(option):
    targets = pair_tables(np.zeros((1, 4), int))
    with pytest.raises(ParameterError):
        fit_records(DOMAIN, targets, np.zeros((5, 4), int), np.random.default_rng(0), **option)


def _noisy_fit(noise_sd: float):
    """A fit's targets (another sample's pair tables with Gaussian noise of ``noise_sd``),
    their expected squared noise and a start with every dependence shuffled away."""
    rng = np.random.default_rng(11)
    truth = correlated(3_000, rng)
    targets = {pair: table + rng.normal(0, noise_sd, table.shape)
               for pair, table in pair_tables(correlated(3_000, rng)).items()}
    noise = noise_sd ** 2 * sum(t.size for t in targets.values())
    start = np.column_stack([rng.permutation(truth[:, j]) for j in range(4)])
    return targets, noise, start


def test_given_the_noise_the_fit_goes_on_until_it_is_within_it_and_stops():
    from dpgm.estimation.records import FIT_WITHIN

    rng = np.random.default_rng(12)
    truth = correlated(3_000, rng)
    targets = pair_tables(truth)  # reachable: the records can fit them to nothing
    start = np.column_stack([rng.permutation(truth[:, j]) for j in range(4)])
    short = fit_records(DOMAIN, targets, start, np.random.default_rng(0), sweeps=1, batch=0.2)
    noise = 2.0 * squared_error(DOMAIN, short, targets)  # its fit is not within this noise
    on = fit_records(DOMAIN, targets, start, np.random.default_rng(0), sweeps=1, batch=0.2,
                     noise=noise)
    assert squared_error(DOMAIN, on, targets) <= FIT_WITHIN * noise
    closest = fit_records(DOMAIN, targets, start, np.random.default_rng(0), sweeps=1,
                          batch=0.2, noise=0.0)
    assert squared_error(DOMAIN, closest, targets) < 0.2 * squared_error(DOMAIN, on, targets)


def test_a_fit_within_the_noise_after_its_sweeps_stops_there():
    from dpgm.estimation.records import FIT_WITHIN

    targets, _, start = _noisy_fit(noise_sd=3.0)
    plain = fit_records(DOMAIN, targets, start, np.random.default_rng(1), sweeps=4)
    # just within this noise (a hair over, so that rounding cannot put it outside)
    within = squared_error(DOMAIN, plain, targets) / FIT_WITHIN * (1 + 1e-9)
    given = fit_records(DOMAIN, targets, start, np.random.default_rng(1), sweeps=4,
                        noise=within)
    assert np.array_equal(plain, given)
    further = fit_records(DOMAIN, targets, start, np.random.default_rng(1), sweeps=4,
                          noise=0.5 * within)
    assert squared_error(DOMAIN, further, targets) < squared_error(DOMAIN, plain, targets)


def test_a_fit_that_cannot_reach_the_noise_halves_its_batch_and_stops(monkeypatch):
    import dpgm.estimation.records as records

    monkeypatch.setattr(records, "MIN_BATCH", 0.005)  # 15 of the 3,000 records
    monkeypatch.setattr(records, "MAX_SWEEPS", 40)
    targets, _, start = _noisy_fit(noise_sd=3.0)
    sizes = []
    step = records._step

    def counted(on_j, records_, rows, j, size):
        sizes.append(rows.size)
        step(on_j, records_, rows, j, size)

    monkeypatch.setattr(records, "_step", counted)
    fitted = fit_records(DOMAIN, targets, start, np.random.default_rng(2), sweeps=2,
                         batch=0.01, noise=0.0)  # never within: no noise at all
    n = len(start)
    assert sizes[:2 * (n // 30)] == [30] * (2 * (n // 30))  # its own sweeps first
    assert set(sizes) <= {30, 15} and 15 in sizes  # halved once, then no smaller
    assert sum(1 / (n // size) for size in sizes) <= 40 + 1e-9  # sweeps in all
    plain = fit_records(DOMAIN, targets, start, np.random.default_rng(2), sweeps=2, batch=0.01)
    assert squared_error(DOMAIN, fitted, targets) < squared_error(DOMAIN, plain, targets)


def _information(table: np.ndarray) -> float:
    joint = table / table.sum()
    product = np.outer(joint.sum(axis=1), joint.sum(axis=0))
    inside = joint > 0
    return float((joint[inside] * np.log(joint[inside] / product[inside])).sum())


def test_tree_records_hold_the_pairs_of_the_chow_liu_tree():
    rng = np.random.default_rng(6)
    truth = correlated(4_000, rng)
    targets = pair_tables(truth)
    # brute force: of the 16 spanning trees on four attributes, the one of most mutual
    # information (three edges that connect all four)
    pairs = list(targets)
    trees = [edges for edges in combinations(pairs, 3)
             if len({a for e in edges for a in e}) == 4 and _connected(edges)]
    assert len(trees) == 16
    best = max(trees, key=lambda edges: sum(_information(targets[e]) for e in edges))
    fitted = pair_tables(tree_records(DOMAIN, targets, 4_000, np.random.default_rng(7)))
    # its pairs are drawn from their tables (rounded: within a few records of them); the
    # others only through them, so at least one is off
    for pair in best:
        assert np.abs(fitted[pair] - targets[pair]).max() <= 3, pair
    assert max(np.abs(fitted[p] - targets[p]).max() for p in pairs if p not in best) > 3


def _connected(edges) -> bool:
    reached = {edges[0][0]}
    for _ in edges:
        reached |= {b for a, b in edges if a in reached} | {a for a, b in edges if b in reached}
    return len(reached) == 4


def test_a_pair_without_a_target_is_left_free():
    rng = np.random.default_rng(8)
    truth = correlated(2_000, rng)
    start = np.column_stack([rng.permutation(truth[:, j]) for j in range(4)])
    only = {("b", "a"): pair_tables(truth)[("a", "b")].T}  # keyed the other way round
    fitted = fit_records(DOMAIN, only, start, np.random.default_rng(9))
    assert squared_error(DOMAIN, fitted, only) < 1e-3 * squared_error(DOMAIN, start, only)
    # c and d were never moved: nothing asked them to
    assert np.array_equal(fitted[:, 2:], start[:, 2:])
    assert np.array_equal(fit_records(DOMAIN, {}, start, np.random.default_rng(9)), start)


def test_tree_records_draw_an_attribute_in_no_pair_from_its_one_way_table():
    targets = {("a", "b"): np.array([[10.0, 0.0], [0.0, 30.0], [60.0, 0.0]])}
    drawn = tree_records(DOMAIN, targets, 100, np.random.default_rng(0),
                         singles={"c": np.array([0.0, 0.0, 100.0, 0.0])})
    assert np.array_equal(np.bincount(drawn[:, 2], minlength=4), [0, 0, 100, 0])
    np.testing.assert_array_equal(pair_tables(drawn)[("a", "b")], targets[("a", "b")])
    assert set(np.unique(drawn[:, 3])) <= {0, 1}  # d: uniform, in no pair and no single
    with pytest.raises(ParameterError, match="shape"):
        tree_records(DOMAIN, {("a", "b"): np.ones((2, 3))}, 10, np.random.default_rng(0))


def test_the_forest_implies_each_pair_along_its_path():
    """On exact tables of a Markov chain a -> b -> c (d independent) the forest is the chain,
    and the pair it implies for a and c is the chain's own (a, c) table: brute force."""
    from dpgm.estimation.records import forest_pairs

    p_a = np.array([0.5, 0.3, 0.2])
    b_given_a = np.array([[0.9, 0.1], [0.2, 0.8], [0.5, 0.5]])
    c_given_b = np.array([[0.7, 0.1, 0.1, 0.1], [0.05, 0.05, 0.1, 0.8]])
    p_d = np.array([0.4, 0.6])
    joint = np.einsum("a,ab,bc,d->abcd", p_a, b_given_a, c_given_b, p_d) * 1000.0
    axes = {"a": 0, "b": 1, "c": 2, "d": 3}
    targets = {(x, y): joint.sum(axis=tuple(i for i in range(4) if i not in (axes[x], axes[y])))
               for x, y in combinations(DOMAIN.attrs, 2)}
    # d depends on nothing: its edge has no information, so the forest's edge for it is
    # arbitrary; the chain's two edges are there
    edges, implied = forest_pairs(DOMAIN, targets)
    assert {frozenset("ab"), frozenset("bc")} <= edges and len(edges) == 3
    for pair, table in targets.items():
        np.testing.assert_allclose(implied[pair], table, atol=1e-9, err_msg=str(pair))
    # (a, c) measured as independent: off the forest, it is implied through the path,
    # and only the pairs asked about are kept (d is joined to nothing)
    some = {("a", "b"): targets[("a", "b")], ("b", "c"): targets[("b", "c")],
            ("a", "c"): np.full((3, 4), 1000.0 / 12)}
    singles = {"a": 1000.0 * p_a}
    edges, implied = forest_pairs(DOMAIN, some, singles)
    assert frozenset("ac") not in edges and set(implied) == set(some)
    np.testing.assert_allclose(implied[("a", "c")], targets[("a", "c")], atol=1e-9)
    # a negative (noisy) target cell is clipped before it is used
    some[("b", "c")] = some[("b", "c")] - np.array([[0, 0, 0, 0], [0, 0, 120, 0]])
    _, implied = forest_pairs(DOMAIN, some, singles)
    # (b=1, c=2) is clipped to 0: c=2 comes from b=0 alone, at its own rate of 0.1
    np.testing.assert_allclose(implied[("a", "c")][:, 2], targets[("a", "b")][:, 0] * 0.1)


def test_the_forest_makes_no_table_for_a_leaf_that_no_pair_asks_about():
    """A star of four 400-value attributes around a 3-value one, only the pairs with the
    centre asked: the tables the forest implies are small, and so is what it makes on the
    way (each leaf's 400 x 400 conditional on another leaf was made and kept before)."""
    import tracemalloc

    from dpgm.estimation.records import forest_pairs

    # once on a small domain first: the modules it imports are not the walk's memory
    forest_pairs(Domain(["p", "q"], [2, 2]), {("p", "q"): np.ones((2, 2))})
    n = 400
    domain = Domain(["x0", "x1", "x2", "x3", "b"], [n] * 4 + [3])
    rng = np.random.default_rng(0)
    targets = {(f"x{i}", "b"): rng.random((n, 3)) * 10 for i in range(4)}
    tracemalloc.start()
    edges, implied = forest_pairs(domain, targets)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert set(implied) == set(targets) and len(edges) == 4
    assert peak < 0.5 * 8 * n * n  # less than one n x n array (the old walk held four)
    for pair, table in targets.items():  # an edge's table is its own
        np.testing.assert_allclose(implied[pair], table, rtol=1e-12)


def test_records_move_to_a_triple_that_no_pair_holds():
    # c is the parity of a and b: every pair of the three is independent, the triple is not
    rng = np.random.default_rng(11)
    a, b = rng.integers(0, 2, 400), rng.integers(0, 2, 400)
    truth = np.column_stack([a, b, a ^ b, rng.integers(0, 2, 400)])
    start = np.column_stack([a, b, rng.integers(0, 2, 400), truth[:, 3]])
    domain = Domain(["a", "b", "c", "d"], [2, 2, 2, 2])
    names = ("c", "a", "b")
    target = Dataset(truth, domain).marginal(names)
    before = squared_error(domain, start, {names: target})
    fitted = fit_records(domain, {names: target}, start, np.random.default_rng(12))
    assert squared_error(domain, fitted, {names: target}) < 1e-2 * before
    assert np.mean(fitted[:, 2] == fitted[:, 0] ^ fitted[:, 1]) > 0.99


def test_the_callback_hears_each_sweep_and_its_error():
    targets, noise, start = _noisy_fit(noise_sd=3.0)
    heard = []
    fitted = fit_records(DOMAIN, targets, start, np.random.default_rng(3), sweeps=3,
                         callback=lambda sweep, error: heard.append((sweep, error)))
    assert [sweep for sweep, _ in heard] == [1, 2, 3]
    assert heard[-1][1] == pytest.approx(squared_error(DOMAIN, fitted, targets))
    assert np.array_equal(fitted, fit_records(DOMAIN, targets, start,
                                              np.random.default_rng(3), sweeps=3))
