"""Brute-force reference computations for small models: enumerate the full joint with NumPy.

Everything here is deliberately naive (dense joint over the whole domain, ``einsum``) so
that it can serve as ground truth for the junction-tree engine on domains of at most a few
thousand cells.
"""

from __future__ import annotations

import string

import numpy as np
from scipy import stats
from scipy.special import logsumexp

from dpgm import Domain

NAMES = tuple("QWERTYUIOP")  # deliberately not in alphabetical order


def random_domain(rng: np.random.Generator, n_min: int = 3, n_max: int = 6) -> Domain:
    """3-6 attributes of sizes 2-4, named in a shuffled (non-alphabetical) order."""
    n = int(rng.integers(n_min, n_max + 1))
    names = [str(a) for a in rng.permutation(NAMES)[:n]]
    return Domain(names, rng.integers(2, 5, size=n).tolist())


def random_cliques(rng: np.random.Generator, domain: Domain) -> list[tuple[str, ...]]:
    """A cycle through every attribute (so the interaction graph is not chordal) plus a
    few random cliques of 1-3 attributes; attributes inside a clique are shuffled."""
    attrs = list(domain.attrs)
    order = [attrs[i] for i in rng.permutation(len(attrs))]
    cliques = [(order[i], order[(i + 1) % len(order)]) for i in range(len(order))]
    for _ in range(int(rng.integers(1, 4))):
        k = int(rng.integers(1, min(3, len(attrs)) + 1))
        cliques.append(tuple(str(a) for a in rng.choice(attrs, size=k, replace=False)))
    out, seen = [], set()
    for c in cliques:  # drop exact duplicates (as sets) so the potentials dict is well defined
        if frozenset(c) not in seen:
            seen.add(frozenset(c))
            out.append(tuple(c))
    return out


def random_potentials(
    rng: np.random.Generator, domain: Domain, cliques, zero_fraction: float = 0.0
) -> dict[tuple[str, ...], np.ndarray]:
    """Gaussian log-potentials; with ``zero_fraction`` some cells are -inf (probability 0)."""
    pots = {}
    for c in cliques:
        table = rng.normal(size=domain.project(c).shape)
        if zero_fraction:
            table[rng.random(table.shape) < zero_fraction] = -np.inf
        pots[c] = table
    return pots


def log_joint(domain: Domain, potentials) -> np.ndarray:
    """Unnormalised log-probability of every cell of ``domain`` (axes in domain order)."""
    out = np.zeros(domain.shape)
    for clique, table in potentials.items():
        values = getattr(table, "values", table)
        attrs = getattr(table, "attrs", tuple(clique))
        perm = [attrs.index(a) for a in domain.attrs if a in attrs]
        shape = [domain[a] if a in attrs else 1 for a in domain.attrs]
        out = out + np.transpose(values, perm).reshape(shape)
    return out


def joint(domain: Domain, potentials) -> tuple[np.ndarray, float]:
    """Normalised joint probability table and log Z."""
    lj = log_joint(domain, potentials)
    log_z = float(logsumexp(lj))
    with np.errstate(invalid="ignore"):  # all cells -inf: log Z = -inf, p = nan
        return np.exp(lj - log_z), log_z


def marginal(domain: Domain, p: np.ndarray, attrs) -> np.ndarray:
    """Marginal of the joint ``p`` on ``attrs`` (in that order)."""
    letters = string.ascii_letters[: len(domain)]
    sub = "".join(letters[domain.attrs.index(a)] for a in attrs)
    return np.einsum(f"{letters}->{sub}", p)


def chi_square_pvalue(observed: np.ndarray, probs: np.ndarray, min_expected: float = 5.0) -> float:
    """Pearson goodness-of-fit p-value of counts ``observed`` against cell ``probs``.

    Cells of probability 0 must be empty (else the p-value is 0); cells whose expected count
    is below ``min_expected`` are pooled into one so that the chi-square approximation holds.
    """
    observed = np.asarray(observed, dtype=float).ravel()
    probs = np.asarray(probs, dtype=float).ravel()
    n = observed.sum()
    if (observed[probs <= 0] > 0).any():
        return 0.0
    keep = probs > 0
    observed, expected = observed[keep], probs[keep] * n
    small = expected < min_expected
    if small.any():
        observed = np.append(observed[~small], observed[small].sum())
        expected = np.append(expected[~small], expected[small].sum())
    if observed.size < 2:
        return 1.0
    stat = float(((observed - expected) ** 2 / expected).sum())
    return float(stats.chi2.sf(stat, df=observed.size - 1))


def random_model(seed: int, zero_fraction: float = 0.0, total: float = 1.0):
    """``(domain, potentials, model, p, log_z)`` of a random model and its brute-force joint.

    With zeros, potentials are redrawn until the joint keeps some mass (log Z finite).
    """
    from dpgm import MarkovRandomField

    rng = np.random.default_rng(seed)
    domain = random_domain(rng)
    cliques = random_cliques(rng, domain)
    while True:
        potentials = random_potentials(rng, domain, cliques, zero_fraction)
        p, log_z = joint(domain, potentials)
        if np.isfinite(log_z):
            break
    model = MarkovRandomField(domain, potentials, total=total)
    return domain, potentials, model, p, log_z
