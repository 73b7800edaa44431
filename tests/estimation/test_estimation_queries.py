"""Non-identity measurements: dense and sparse queries, per-answer std, any clique order.

Noiseless answers determine the true marginals whenever each query has full column
rank, so the estimate must reproduce the truth; noisy answers are checked against the
brute-force minimum of the loss over all joint distributions.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from brute_force import joint, marginal
from estimation_helpers import (
    brute_force_l2_optimum,
    model_l2_loss,
    random_tree_problem,
    tv,
)

from dpgm import Domain, Measurement, estimate
from dpgm.errors import DomainError
from dpgm.estimation import L2Loss

TOTAL = 600.0


def prefix_sums(n: int) -> np.ndarray:
    """Row i answers the count of cells 0..i (range queries; the last row is the total)."""
    return np.tril(np.ones((n, n)))


def random_01(rng, rows: int, cols: int) -> np.ndarray:
    """A random 0/1 matrix of full column rank."""
    while True:
        q = (rng.random((rows, cols)) < 0.5).astype(float)
        if np.linalg.matrix_rank(q) == cols:
            return q


def make_query(kind: str, rng, cells: int):
    if kind == "prefix":
        return prefix_sums(cells)
    if kind == "prefix_sparse":
        return sp.csr_matrix(prefix_sums(cells))
    if kind == "random01":
        return random_01(rng, 2 * cells, cells)
    if kind == "random01_sparse":
        return sp.csc_matrix(random_01(rng, 2 * cells, cells))
    raise AssertionError(kind)


def query_problem(seed: int, kind: str, reverse: bool, std_vector: bool):
    """A junction-tree problem whose every clique is measured (noiselessly) through a
    query of ``kind``; ``reverse`` writes each clique in the opposite attribute order."""
    domain, cliques, p = random_tree_problem(seed, n_attrs=4)
    rng = np.random.default_rng(seed + 50)
    measurements = []
    for c in cliques:
        clique = tuple(reversed(c)) if reverse else c
        mu = TOTAL * marginal(domain, p, clique).ravel()  # in the measurement's own order
        q = make_query(kind, rng, mu.size)
        std = rng.uniform(0.5, 4.0, q.shape[0]) if std_vector else 2.0
        measurements.append(Measurement(clique, np.asarray(q @ mu).ravel(), std, query=q))
    return domain, cliques, p, measurements


KINDS = ["prefix", "prefix_sparse", "random01", "random01_sparse"]


@pytest.mark.parametrize(("reverse", "std_vector"), [(False, False), (True, True)])
@pytest.mark.parametrize("kind", KINDS)
def test_noiseless_query_answers_recover_the_truth(kind, reverse, std_vector):
    domain, cliques, p, measurements = query_problem(3, kind, reverse, std_vector)
    # prefix sums over a 16-cell clique are ill-conditioned: give it enough iterations
    model = estimate(domain, measurements, method="accelerated", iters=800)
    assert model.total == pytest.approx(TOTAL, rel=1e-6)  # App. E.1 through the queries
    for c in cliques:
        assert tv(model.marginal(c), marginal(domain, p, c)) < 1e-3, c
    assert tv(model.marginal(domain.attrs), p) < 1e-3


@pytest.mark.parametrize("init", ["fit", "uniform"])
def test_mirror_descent_with_mixed_measurements_recovers_the_truth(init):
    """Dense prefix query on (b, a), sparse 0/1 query with an std vector on (c, b), and a
    permuted identity measurement with a scalar std, all in one problem."""
    rng = np.random.default_rng(2)
    domain = Domain(["a", "b", "c", "d"], [3, 2, 4, 3])
    cliques = [("a", "b"), ("b", "c"), ("c", "d")]
    p, _ = joint(domain, {c: rng.normal(size=domain.project(c).shape) for c in cliques})
    mu_ba = TOTAL * marginal(domain, p, ("b", "a")).ravel()
    mu_cb = TOTAL * marginal(domain, p, ("c", "b")).ravel()
    mu_dc = TOTAL * marginal(domain, p, ("d", "c")).ravel()
    q_ba = prefix_sums(6)
    q_cb = random_01(rng, 16, 8)
    measurements = [
        Measurement(("b", "a"), q_ba @ mu_ba, 2.0, query=q_ba),
        Measurement(("c", "b"), q_cb @ mu_cb, rng.uniform(0.5, 3, 16), query=sp.csr_matrix(q_cb)),
        Measurement(("d", "c"), mu_dc, 1.5),
    ]
    model = estimate(domain, measurements, method="mirror_descent", init=init, iters=1200)
    assert tv(model.marginal(domain.attrs), p) < 1e-3
    accelerated = estimate(domain, measurements, method="accelerated", init=init, iters=500)
    assert tv(accelerated.marginal(domain.attrs), p) < 1e-3


@pytest.mark.parametrize("kind", ["prefix", "random01"])
def test_sparse_and_dense_queries_give_the_same_loss_and_model(kind):
    domain, cliques, _, dense = query_problem(4, kind, reverse=True, std_vector=True)
    sparse = [Measurement(m.clique, m.values, m.std, query=sp.csr_matrix(m.query)) for m in dense]
    rng = np.random.default_rng(0)
    loss_d, loss_s = L2Loss(domain, dense), L2Loss(domain, sparse)
    assert loss_s.lipschitz == pytest.approx(loss_d.lipschitz)
    flat = rng.uniform(0, 50, loss_d.size)
    vd, gd = loss_d(flat)
    vs, gs = loss_s(flat)
    assert vs == pytest.approx(vd, rel=1e-12)
    np.testing.assert_allclose(gs, gd, rtol=1e-12, atol=1e-9)
    noise = [rng.normal(0, 3, m.values.size) for m in dense]
    md = [Measurement(m.clique, m.values + e, m.std, query=m.query) for m, e in zip(dense, noise)]
    ms = [Measurement(m.clique, m.values + e, m.std, query=m.query) for m, e in zip(sparse, noise)]
    a = estimate(domain, md, total=TOTAL, iters=200)
    b = estimate(domain, ms, total=TOTAL, iters=200)
    for c in cliques:
        np.testing.assert_allclose(a.marginal(c), b.marginal(c), rtol=1e-6, atol=1e-6)


def test_query_loss_matches_brute_force_on_the_joint():
    """For any joint table, the loss of its clique marginals equals the loss computed by
    answering each query (in the measurement's attribute order) on the joint directly."""
    domain, cliques, p, measurements = query_problem(5, "random01", reverse=True, std_vector=True)
    loss = L2Loss(domain, measurements)
    rng = np.random.default_rng(5)
    for _ in range(3):
        q = rng.dirichlet(np.ones(domain.size())).reshape(domain.shape)
        flat = np.concatenate([TOTAL * marginal(domain, q, c).ravel() for c in loss.cliques])
        direct = 0.0
        for m in measurements:
            answer = m.query @ (TOTAL * marginal(domain, q, m.clique).ravel())
            direct += 0.5 * float(np.sum(((answer - m.values) / m.std) ** 2))
        assert loss.value(flat) == pytest.approx(direct, rel=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
def test_noisy_queries_reach_the_brute_force_optimum(seed):
    rng = np.random.default_rng(seed)
    domain, _, _, exact = query_problem(seed, "random01", reverse=True, std_vector=True)
    measurements = [
        Measurement(m.clique, m.values + rng.normal(0, m.std), m.std, query=sp.csr_matrix(m.query))
        for m in exact
    ]
    measurements.append(  # a second, identity view of one clique
        Measurement(exact[0].clique, rng.normal(TOTAL / 8, 5, exact[0].query.shape[1]), 5.0)
    )
    optimum, _ = brute_force_l2_optimum(domain, measurements, TOTAL)
    model = estimate(domain, measurements, total=TOTAL, method="accelerated", iters=800)
    value = model_l2_loss(model, measurements)
    assert optimum <= value * (1 + 1e-6)
    assert value <= optimum * 1.01 + 1e-6


def test_queries_of_the_wrong_width_are_refused():
    domain = Domain(["a", "b"], [2, 3])
    with pytest.raises(DomainError, match="query has 5 columns, the clique 6 cells"):
        estimate(domain, [Measurement(("a", "b"), np.zeros(4), 1.0, query=np.ones((4, 5)))])
    with pytest.raises(ValueError, match="query has 4 rows but there are 3 values"):
        Measurement(("a", "b"), np.zeros(3), 1.0, query=np.ones((4, 6)))
    with pytest.raises(ValueError, match="2-d"):
        Measurement(("a", "b"), np.zeros(6), 1.0, query=np.ones(6))
    with pytest.raises(ValueError, match="std has shape"):
        Measurement(("a", "b"), np.zeros(4), np.ones(3), query=np.ones((4, 6)))
