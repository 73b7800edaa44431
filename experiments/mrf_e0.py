"""E0 of the paper-001 note (§5.3): validation before the experiments — the samplers, the
energy convention, the non-private limit and the trend in n. Each check prints its figure
and whether it passes; the run fails (exit status 1) if any does not.

Run: ``python -m experiments.mrf_e0``.
"""

from __future__ import annotations

import itertools
import sys
import time
import warnings

import numpy as np

from dpgm import Dataset
from dpgm.models import IsingModel, PairwiseModel
from dpgm.mrf import learn_ising
from experiments._common import finish
from experiments._mrf import (
    WIDTH,
    fit_rows,
    matching_family,
    private_steps,
    row_error,
    sample_tree,
    sampled_rows,
    tree_family,
)

N = 100_000


def spins(data: Dataset) -> np.ndarray:
    return 2.0 * data.records - 1.0


def edge_correlations(a: np.ndarray, data: Dataset) -> float:
    """max over edges of |mean z_u z_v − tanh(A_uv)| (zero fields, trees and matchings)."""
    z = spins(data)
    rows, cols = np.nonzero(np.triu(a, 1))
    return float(np.max(np.abs((z[:, rows] * z[:, cols]).mean(axis=0) - np.tanh(a[rows, cols]))))


def pair_marginal_error(model, data: Dataset) -> float:
    """max over pairs and cells of |empirical − model| pair probabilities."""
    mrf = model.to_markov_random_field()
    names = list(data.domain.attrs)
    worst = 0.0
    for i, j in itertools.combinations(range(len(names)), 2):
        exact = mrf.marginal([names[i], names[j]]) / mrf.total
        empirical = data.marginal([names[i], names[j]]) / len(data)
        worst = max(worst, float(np.abs(exact - empirical).max()))
    return worst


def torus(side: int, seed: int) -> IsingModel:
    rng = np.random.default_rng(seed)
    p = side * side
    a = np.zeros((p, p))
    for r, c in itertools.product(range(side), repeat=2):
        v = r * side + c
        for u in (((r + 1) % side) * side + c, r * side + (c + 1) % side):
            a[u, v] = a[v, u] = rng.uniform(0.1, 0.2) * rng.choice([-1.0, 1.0])
    return IsingModel(a, rng.uniform(-0.1, 0.1, p))


def conditional_convention(model: IsingModel) -> float:
    """max over i, z of |P(Z_i = 1 | z_−i) − σ(2Σ_j A_ij z_j + 2θ_i)| by enumeration of the
    model's joint (through its Markov random field: the code under test)."""
    p = model.A.shape[0]
    mrf = model.to_markov_random_field()
    joint = mrf.marginal(list(mrf.domain.attrs)) / mrf.total  # values 0/1 ↔ spins −1/+1
    worst = 0.0
    for values in itertools.product((0, 1), repeat=p):
        z = 2 * np.array(values) - 1
        for i in range(p):
            up, down = list(values), list(values)
            up[i], down[i] = 1, 0
            conditional = joint[tuple(up)] / (joint[tuple(up)] + joint[tuple(down)])
            formula = 1 / (1 + np.exp(-(2 * (model.A[i] @ z) + 2 * model.theta[i])))
            worst = max(worst, abs(conditional - formula))
    return worst


def main() -> None:
    warnings.simplefilter("ignore")  # seeded research runs
    started = time.perf_counter()
    bound = 4 / np.sqrt(N)
    checks = []

    def check(name: str, value: float, limit: float) -> None:
        passed = bool(value <= limit)
        checks.append({"check": name, "value": value, "limit": limit, "pass": passed})
        print(f"{'pass' if passed else 'FAIL'}  {name}: {value:.4g} (limit {limit:.4g})")

    a, parent = tree_family(32, 0)
    check("F1 sampler, edge correlations vs tanh(A)", edge_correlations(a, sample_tree(
        a, parent, N, 0)), bound)
    a2 = matching_family(32, 0)
    pairs = IsingModel(a2).sample(N, rng=1)
    check("F2 (matching) junction-tree sampler vs tanh(A)", edge_correlations(a2, pairs), bound)
    rng = np.random.default_rng(2)
    fields = IsingModel(a, rng.uniform(-0.2, 0.2, 32))
    check("F3 (tree with fields), pair marginals", pair_marginal_error(
        fields, fields.sample(N, rng=3)), bound)
    w = np.zeros((12, 12, 3, 3))
    for v in range(1, 12):
        table = rng.uniform(-0.5, 0.5, (3, 3))
        w[parent[v], v], w[v, parent[v]] = table, table.T
    pairwise = PairwiseModel(w, rng.uniform(-0.2, 0.2, (12, 3))).centred()
    check("F4 (pairwise k = 3 tree), pair marginals", pair_marginal_error(
        pairwise, pairwise.sample(N, rng=4)), bound)
    grid = torus(4, 5)
    gibbs = grid.sample(200_000, rng=6, method="gibbs", burn_in=50)
    check("F5 (4x4 torus) Gibbs, pair marginals vs exact", pair_marginal_error(grid, gibbs),
          4 / np.sqrt(200_000))
    small = IsingModel(np.array([[0, 0.4, -0.3, 0], [0.4, 0, 0.2, 0.5],
                                 [-0.3, 0.2, 0, 0.1], [0, 0.5, 0.1, 0]]),
                       np.array([0.1, -0.2, 0.0, 0.3]))
    check("AC8 convention: P(Z_i = 1 | rest) = σ(2Σ A_ij z_j + 2θ_i)",
          conditional_convention(small), 1e-12)
    learned = learn_ising(small.sample(200_000, rng=7), None, 1.5, steps=400)
    check("AC8 read-out: non-private Â on p = 4 (not 2A or A/2)",
          float(np.abs(learned.model.A - small.A).max()), 0.05)

    a16, parent16 = tree_family(16, 1)
    data16 = sample_tree(a16, parent16, N, 1)
    exact = learn_ising(data16, None, WIDTH, steps=300)
    huge = learn_ising(data16, 1e12, WIDTH, steps=300, rng=8)
    check("AC3 rho = 1e12 equals the non-private learner",
          float(np.abs(huge.couplings - exact.couplings).max()), 1e-12)
    check("AC3 non-private, F1 p = 16, n = 1e5: max |Â_sym − A|",
          float(np.abs(exact.model.A - a16).max()), 0.03)
    private = learn_ising(data16, 10.0, WIDTH, steps=private_steps(N, 10.0, 16), rng=9)
    check("AC3 private rho = 10 vs non-private: max difference",
          float(np.abs(private.model.A - exact.model.A).max()), 0.02)
    ledger = sum(e.rho for e in private.budget.ledger)
    check("AC1 the ledger holds exactly rho = 10", abs(ledger - 10.0), 1e-9)

    a32, parent32 = tree_family(32, 2)
    data32 = sample_tree(a32, parent32, 64_000, 2)
    rows = sampled_rows(32, 8, 2)
    errors = {}
    for n in (8_000, 64_000):
        part = Dataset(data32.records[:n], data32.domain)
        errors[n] = row_error(fit_rows(part, rows, rho=0.1, steps=private_steps(n, 0.1, 32),
                                       seed=10), a32, rows)
    check("AC10 error at 64k over error at 8k (p = 32, rho = 0.1)",
          errors[64_000] / errors[8_000], 0.6)
    results = {"checks": checks}
    finish("mrf_e0", results, started, lambda _: None)
    if not all(c["pass"] for c in checks):
        sys.exit(1)


if __name__ == "__main__":
    main()
