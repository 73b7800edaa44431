"""Multiplicative weights on a full table: one update by hand, schedules, convergence."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse

from dpgm import Domain, DpgmError
from dpgm.estimation.multiplicative_weights import multiplicative_weights
from dpgm.measurement import KroneckerQuery, Measurement

DOMAIN = Domain(["a", "b", "c"], [2, 3, 2])
TOTAL = 120.0


def full_query(domain: Domain, m: Measurement) -> np.ndarray:
    """The measurement as an explicit matrix over every cell of ``domain`` (brute force)."""
    cells = int(np.prod(domain.shape))
    grid = np.indices(domain.shape).reshape(len(domain), cells)
    clique_shape = tuple(domain[a] for a in m.clique)
    column = np.ravel_multi_index(
        tuple(grid[domain.attrs.index(a)] for a in m.clique), clique_shape
    )
    query = np.eye(int(np.prod(clique_shape))) if m.query is None else m.query
    if isinstance(query, KroneckerQuery):
        dense = np.ones((1, 1))
        for f in query.factors:
            dense = np.kron(dense, f)
        query = dense
    elif sparse.issparse(query):
        query = query.toarray()
    return np.asarray(query)[:, column]


def brute_update(domain, measurements, table, total):
    """Private-PGM App. E.2: p ⊙ exp(−Qᵀ(Qp − y)/2m) / Z with Q all measurements stacked."""
    p = table.ravel()
    q = np.vstack([full_query(domain, m) for m in measurements])
    y = np.concatenate([m.values for m in measurements])
    new = p * np.exp(-q.T @ (q @ p - y) / (2 * total))
    return (new * total / new.sum()).reshape(domain.shape)


def random_table(seed=0, domain=DOMAIN, total=TOTAL):
    table = np.random.default_rng(seed).random(domain.shape) + 0.1
    return table * total / table.sum()


def mixed_measurements(seed=1) -> list[Measurement]:
    """One measurement of each query kind, cliques out of domain order."""
    rng = np.random.default_rng(seed)
    return [
        Measurement(("b",), rng.uniform(0, 60, 3), 1.0),  # identity
        Measurement(("c", "a"), rng.uniform(0, 60, 2), 1.0, rng.integers(0, 2, (2, 4))),
        Measurement(
            ("b", "c"), rng.uniform(0, 60, 3), 1.0, sparse.csr_matrix(rng.integers(0, 2, (3, 6)))
        ),
        Measurement(
            ("c", "b", "a"),
            rng.uniform(0, 60, 2),
            1.0,
            KroneckerQuery([[[1, 1]], np.tril(np.ones((3, 3)))[1:], [[0, 1]]]),
        ),
    ]


def test_one_update_by_hand():
    domain = Domain(["a", "b"], [2, 2])
    table = np.array([[10.0, 20.0], [30.0, 40.0]])  # total 100
    # one row: the count of b = 1, measured as 50 (the table says 60)
    m = Measurement(("b",), [50.0], 1.0, [[0.0, 1.0]])
    got = multiplicative_weights(domain, [m], 100.0, 1, table=table.copy())
    factor = np.exp(-(60.0 - 50.0) / 200.0)  # cells with b = 1 shrink by exp(-q(qp - y)/2m)
    raw = np.array([[10.0, 20.0 * factor], [30.0, 40.0 * factor]])
    np.testing.assert_allclose(got, raw * 100.0 / raw.sum(), rtol=1e-12)
    assert got.sum() == pytest.approx(100.0)


@pytest.mark.parametrize("which", range(4))
def test_one_update_matches_brute_force_per_query_kind(which):
    m = mixed_measurements()[which]
    table = random_table()
    got = multiplicative_weights(DOMAIN, [m], TOTAL, 1, table=table.copy())
    np.testing.assert_allclose(got, brute_update(DOMAIN, [m], table, TOTAL), rtol=1e-12)


def test_joint_update_uses_all_measurements_at_once():
    ms = mixed_measurements()
    table = random_table()
    got = multiplicative_weights(DOMAIN, ms, TOTAL, 1, table=table.copy())
    np.testing.assert_allclose(got, brute_update(DOMAIN, ms, table, TOTAL), rtol=1e-12)
    # two iterations are two joint updates
    twice = brute_update(DOMAIN, ms, brute_update(DOMAIN, ms, table, TOTAL), TOTAL)
    got2 = multiplicative_weights(DOMAIN, ms, TOTAL, 2, table=table.copy())
    np.testing.assert_allclose(got2, twice, rtol=1e-12)


def test_sequential_pass_updates_one_measurement_after_another():
    ms = mixed_measurements()
    table = random_table()
    expected = table.copy()
    for _ in range(2):
        for m in ms:
            expected = brute_update(DOMAIN, [m], expected, TOTAL)
    got = multiplicative_weights(DOMAIN, ms, TOTAL, 2, table=table.copy(), sequential=True)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    joint = multiplicative_weights(DOMAIN, ms, TOTAL, 2, table=table.copy())
    assert not np.allclose(got, joint)


def test_updates_in_place_and_starts_uniform():
    m = Measurement(("a",), [30.0, 90.0], 1.0)
    table = np.full(DOMAIN.shape, TOTAL / 12)
    out = multiplicative_weights(DOMAIN, [m], TOTAL, 3, table=table)
    assert out is table
    fresh = multiplicative_weights(DOMAIN, [m], TOTAL, 3)
    np.testing.assert_allclose(fresh, table)
    untouched = multiplicative_weights(DOMAIN, [m], TOTAL, 0)
    np.testing.assert_allclose(untouched, TOTAL / 12)
    # a list is copied, not modified
    start = np.full(DOMAIN.shape, 10.0).tolist()
    multiplicative_weights(DOMAIN, [m], TOTAL, 1, table=start)
    assert start[0][0][0] == 10.0


@pytest.mark.parametrize("sequential", [False, True])
def test_converges_to_noiseless_measurements(sequential):
    truth = random_table(5)
    cliques = [("a", "b"), ("c", "b")]
    ms = []
    for clique in cliques:
        axes = tuple(i for i, a in enumerate(DOMAIN.attrs) if a not in clique)
        marginal = truth.sum(axis=axes)
        order = [sorted(clique, key=DOMAIN.attrs.index).index(a) for a in clique]
        ms.append(Measurement(clique, np.transpose(marginal, order).ravel(), 1.0))
    # and a prefix (CDF) query on b, dense
    prefix = np.tril(np.ones((3, 3)))
    ms.append(Measurement(("b",), prefix @ truth.sum(axis=(0, 2)), 1.0, prefix))
    table = multiplicative_weights(DOMAIN, ms, TOTAL, 3000, sequential=sequential)
    for m in ms:
        kept = tuple(i for i, a in enumerate(DOMAIN.attrs) if a not in m.clique)
        marginal = table.sum(axis=kept)
        order = [sorted(m.clique, key=DOMAIN.attrs.index).index(a) for a in m.clique]
        np.testing.assert_allclose(
            m.answer(np.transpose(marginal, order)), m.values, rtol=1e-4, atol=1e-4
        )
    assert table.sum() == pytest.approx(TOTAL)


def test_no_measurements_keeps_the_table():
    table = random_table()
    np.testing.assert_array_equal(
        multiplicative_weights(DOMAIN, [], TOTAL, 5, table=table.copy()), table
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"iters": -1}, "iters must be an integer >= 0"),
        ({"iters": 1.5}, "iters must be an integer >= 0"),
        ({"total": 0.0}, "total must be > 0"),
        ({"total": float("nan")}, "total must be a finite number"),
        ({"table": np.ones((2, 3))}, "table has shape"),
    ],
)
def test_bad_input(kwargs, message):
    args = {"iters": 1, "total": TOTAL, **kwargs}
    m = Measurement(("a",), [60.0, 60.0], 1.0)
    with pytest.raises(DpgmError, match=message):
        multiplicative_weights(DOMAIN, [m], args.pop("total"), args.pop("iters"), **args)


def test_measurement_outside_the_domain_is_refused():
    m = Measurement(("z",), [60.0, 60.0], 1.0)
    with pytest.raises(DpgmError, match="unknown attribute"):
        multiplicative_weights(DOMAIN, [m], TOTAL, 1)
