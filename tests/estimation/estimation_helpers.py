"""Small estimation problems and brute-force references over the full joint table.

Everything here enumerates the whole domain (at most a few thousand cells), so it is an
independent reference for the junction-tree machinery that :func:`dpgm.estimate` uses.
"""

from __future__ import annotations

import numpy as np
from brute_force import joint, marginal

from dpgm import Domain, MarkovRandomField, Measurement

NAMES = ("q", "w", "e", "r", "t", "y")  # not alphabetical: clique order != sorted order


def tv(a, b) -> float:
    """Total variation distance between two count (or probability) tables, normalised."""
    a = np.asarray(a, dtype=float).ravel()
    b = np.asarray(b, dtype=float).ravel()
    return 0.5 * float(np.abs(a / a.sum() - b / b.sum()).sum())


def random_tree_problem(seed: int, n_attrs: int | None = None):
    """``(domain, cliques, p)``: a random model whose cliques (pairs and triples, attributes
    shuffled inside each clique) form a junction tree, and its normalised joint ``p``."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 7)) if n_attrs is None else n_attrs
    names = [NAMES[i] for i in rng.permutation(len(NAMES))[:n]]
    domain = Domain(names, rng.integers(2, 5, size=n).tolist())
    cliques: list[tuple[str, ...]] = [(names[0], names[1])]
    for new in names[2:]:
        # attach to one or two attributes of an existing clique: running intersection holds
        host = cliques[int(rng.integers(len(cliques)))]
        k = int(rng.integers(1, min(2, len(host)) + 1))
        picked = [str(a) for a in rng.choice(host, size=k, replace=False)]
        clique = picked + [new]
        cliques.append(tuple(clique[i] for i in rng.permutation(len(clique))))
    potentials = {c: rng.normal(size=domain.project(c).shape) for c in cliques}
    p, _ = joint(domain, potentials)
    return domain, cliques, p


def cycle_problem(seed: int):
    """``(domain, cliques, p)``: pairwise model on a 4-cycle plus a pendant attribute (the
    cliques are not a junction tree: the model's tree adds the chord q-e, so estimation
    has real work even from a good start)."""
    rng = np.random.default_rng(seed)
    domain = Domain(["r", "e", "w", "q", "t"], rng.integers(2, 4, size=5).tolist())
    cliques = [("q", "w"), ("e", "w"), ("e", "r"), ("r", "q"), ("t", "e")]
    potentials = {c: rng.normal(size=domain.project(c).shape) for c in cliques}
    p, _ = joint(domain, potentials)
    return domain, cliques, p


def cycle_model(seed: int):
    """The model of :func:`cycle_problem` as a :class:`MarkovRandomField` (for sampling)."""
    rng = np.random.default_rng(seed)
    domain = Domain(["r", "e", "w", "q", "t"], rng.integers(2, 4, size=5).tolist())
    cliques = [("q", "w"), ("e", "w"), ("e", "r"), ("r", "q"), ("t", "e")]
    potentials = {c: rng.normal(size=domain.project(c).shape) for c in cliques}
    return MarkovRandomField(domain, potentials), cliques


def exact_measurements(domain: Domain, p: np.ndarray, cliques, total: float, std=1.0):
    """Identity measurements whose values are the exact counts (no noise at all)."""
    return [Measurement(c, total * marginal(domain, p, c), std) for c in cliques]


def marginal_matrix(domain: Domain, attrs) -> np.ndarray:
    """``A`` with ``A @ p.ravel() == marginal(domain, p, attrs).ravel()`` for any joint ``p``."""
    n = domain.size()
    eye = np.eye(n).reshape((n, *domain.shape))
    return np.stack([marginal(domain, e, attrs).ravel() for e in eye], axis=1)


def dense_query(m: Measurement, cells: int) -> np.ndarray:
    """The measurement's query as a dense array (the identity when it has none)."""
    if m.query is None:
        return np.eye(cells)
    return m.query.toarray() if hasattr(m.query, "toarray") else np.asarray(m.query)


def l2_loss(marginals, measurements) -> float:
    """½ Σ ‖(Q μ − y)/σ‖², with ``marginals(clique)`` giving μ in the clique's own order."""
    value = 0.0
    for m in measurements:
        mu = np.asarray(marginals(m.clique), dtype=float).ravel()
        answer = mu if m.query is None else np.asarray(m.query @ mu).ravel()
        value += 0.5 * float(np.sum(((answer - m.values) / m.std) ** 2))
    return value


def l1_loss(marginals, measurements) -> float:
    """Σ ‖(Q μ − y)/σ‖₁, with ``marginals(clique)`` giving μ in the clique's own order."""
    value = 0.0
    for m in measurements:
        mu = np.asarray(marginals(m.clique), dtype=float).ravel()
        answer = mu if m.query is None else np.asarray(m.query @ mu).ravel()
        value += float(np.sum(np.abs(answer - m.values) / m.std))
    return value


def model_l2_loss(model, measurements) -> float:
    return l2_loss(model.marginal, measurements)


def brute_force_maxent(domain: Domain, targets: dict, tol: float = 1e-12, sweeps: int = 5000):
    """The maximum-entropy joint (normalised) whose marginals on the keys of ``targets``
    are the given count tables, by iterative proportional fitting over the full joint."""
    total = float(np.sum(next(iter(targets.values()))))
    p = np.full(domain.shape, 1.0 / domain.size())
    for _ in range(sweeps):
        worst = 0.0
        for attrs, table in targets.items():
            current = marginal(domain, p, attrs)
            ratio = np.where(current > 0, table / total / np.maximum(current, 1e-300), 0.0)
            worst = max(worst, float(np.abs(current * total - table).max()) / total)
            shape = [domain[a] if a in attrs else 1 for a in domain.attrs]
            perm = [list(attrs).index(a) for a in domain.attrs if a in attrs]
            p = p * np.transpose(ratio, perm).reshape(shape)
        if worst < tol:
            break
    return p / p.sum()


def brute_force_l2_optimum(domain: Domain, measurements, total: float, iters: int = 5000):
    """The minimum of the L2 loss over all joint distributions (scaled to ``total``), i.e.
    over the marginal polytope, by accelerated projected gradient (FISTA) on the simplex."""
    blocks, ys, ws = [], [], []
    for m in measurements:
        a = marginal_matrix(domain, m.clique)
        blocks.append(dense_query(m, a.shape[0]) @ a * total)
        ys.append(m.values)
        ws.append(np.broadcast_to(1.0 / np.asarray(m.std, dtype=float) ** 2, m.values.shape))
    big, y, w = np.vstack(blocks), np.concatenate(ys), np.concatenate(ws)
    hessian = big.T @ (w[:, None] * big)
    step = 1.0 / float(np.linalg.eigvalsh(hessian)[-1])
    p = np.full(big.shape[1], 1.0 / big.shape[1])
    z, t = p.copy(), 1.0
    for _ in range(iters):
        grad = big.T @ (w * (big @ z - y))
        new = project_simplex(z - step * grad)
        t_new = (1 + np.sqrt(1 + 4 * t * t)) / 2
        z = new + (t - 1) / t_new * (new - p)
        p, t = new, t_new
    residual = big @ p - y
    return 0.5 * float(np.sum(w * residual**2)), p.reshape(domain.shape)


def project_simplex(v: np.ndarray) -> np.ndarray:
    """Euclidean projection onto the probability simplex."""
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - 1.0
    k = np.arange(1, v.size + 1)
    rho = np.nonzero(u - css / k > 0)[0][-1]
    return np.maximum(v - css[rho] / (rho + 1), 0.0)
