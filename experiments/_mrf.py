"""What the paper-001 experiments share (the implementation note's §5): the model families,
their exact samplers, and private / non-private Frank–Wolfe on some or all nodes.

Row subsampling (the note's §5.2): Alg. 2's nodes are fitted independently, each with its
own noise, so fitting 8 nodes chosen at random, each with the per-node budget ρ/p of the
full algorithm, draws exactly those rows of the full algorithm's output. The mean over the
fitted rows of e_i = max_j |Â_ij − A_ij| (unsymmetrised) is the error reported. T uses the
public n (no count), as the note's protocol does.
"""

from __future__ import annotations

import argparse
import json
import math
import warnings
from collections.abc import Callable

import numpy as np

import experiments._common as common  # noqa: E402 (its OUTPUT is read at run time)
from dpgm import Dataset, Domain
from dpgm.models import IsingModel
from dpgm.mrf.regressions import frank_wolfe, steps_for
from dpgm.privacy import PrivacyBudget
from dpgm.privacy.frank_wolfe import FrankWolfeSelections

WIDTH = 1.5  # the public bound λ of F1 (radius 2λ = 3)
STEP_CONSTANT = 0.5  # c_T
NONPRIVATE_STEPS = 300
BLOCK_STEPS = 150


def tree_family(p: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """F1: a random recursive tree of degree at most 3, couplings ±U[0.3, 0.5], no field.
    Returns (A, parent), parent[v] < v the node v hangs from (parent[0] = −1)."""
    rng = np.random.default_rng([p, seed])
    a = np.zeros((p, p))
    parent = np.full(p, -1)
    degree = np.zeros(p, dtype=int)
    for v in range(1, p):
        u = int(rng.choice(np.flatnonzero(degree[:v] < 3)))
        parent[v] = u
        degree[[u, v]] += 1
        a[u, v] = a[v, u] = rng.uniform(0.3, 0.5) * rng.choice([-1.0, 1.0])
    return a, parent


def sample_tree(a: np.ndarray, parent: np.ndarray, n: int, seed: int) -> Dataset:
    """Exact records of a zero-field tree model: the root uniform, then each node equal to
    its parent with probability σ(2A) (energy Σ_{i<j} A_ij z_i z_j), O(n·p)."""
    rng = np.random.default_rng([len(parent), n, seed, 7])
    p = len(parent)
    spins = np.empty((n, p), dtype=np.int8)
    spins[:, 0] = rng.choice(np.array([-1, 1], dtype=np.int8), size=n)
    for v in range(1, p):
        same = rng.random(n) < 1.0 / (1.0 + math.exp(-2.0 * a[v, parent[v]]))
        spins[:, v] = np.where(same, spins[:, parent[v]], -spins[:, parent[v]])
    return Dataset((spins + 1) // 2, Domain([f"x{i}" for i in range(p)], [2] * p))


def matching_family(p: int, seed: int) -> np.ndarray:
    """F2: pairs (2i, 2i + 1) with coupling ±0.5 (the paper's lower-bound instance)."""
    rng = np.random.default_rng([p, seed, 2])
    a = np.zeros((p, p))
    for i in range(0, p - 1, 2):
        a[i, i + 1] = a[i + 1, i] = 0.5 * rng.choice([-1.0, 1.0])
    return a


def fit_rows(data: Dataset, rows: list[int], *, rho: float | None, steps: int, seed: int,
             selection: str = "em") -> np.ndarray:
    """Â's rows ``rows`` (row i: node i's regression, Â_ij = w_ij/2), each node with the
    per-node budget ``rho``/p of the full Alg. 2 (``rho=None``: non-private)."""
    p = len(data.domain)
    regressions = [(i, 1, 0) for i in rows]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded research runs
        selections = FrankWolfeSelections(
            data, regressions, radius=2 * WIDTH, steps=steps,
            rho=None if rho is None else rho * len(rows) / p,
            # the paper's printed noise at ρ is charged up to 2ρ, its provable cost
            budget=None if rho is None else PrivacyBudget(
                rho=rho * len(rows) / p * (2.0 if selection == "paper" else 1.0)),
            rng=seed, selection=selection)
        weights = frank_wolfe(selections)
    estimate = np.zeros((len(rows), p))
    estimate[:, :] = weights[:-1].T / 2.0
    return estimate


def private_steps(n: int, rho: float, p: int, constant: float = STEP_CONSTANT) -> int:
    """T of Alg. 2 at a public n (the note's D5)."""
    return steps_for(2 * WIDTH, n, rho / p, constant)


def row_error(estimate: np.ndarray, a: np.ndarray, rows: list[int]) -> float:
    """Mean over the fitted rows of max_j |Â_ij − A_ij|."""
    return float(np.mean(np.abs(estimate - a[rows]).max(axis=1)))


def sampled_rows(p: int, count: int, seed: int) -> list[int]:
    rng = np.random.default_rng([p, seed, 3])
    return sorted(rng.choice(p, size=min(count, p), replace=False).tolist())


def crossing(ns: list[float], errors: list[float], target: float) -> float | None:
    """The n at which the error falls to ``target``, by log–log interpolation between
    grid points (None if it never does on the grid; the first n if it starts below)."""
    pairs = [(n, e) for n, e in zip(ns, errors, strict=True) if e is not None]
    for (n0, e0), (n1, e1) in zip(pairs, pairs[1:], strict=False):
        if e0 > target >= e1:
            t = (math.log(e0) - math.log(target)) / (math.log(e0) - math.log(e1))
            return math.exp(math.log(n0) + t * (math.log(n1) - math.log(n0)))
    if pairs and pairs[0][1] <= target:
        return pairs[0][0]
    return None


def slope(xs: list[float], ys: list[float]) -> float | None:
    """Least-squares slope of log y on log x (None with fewer than two points)."""
    points = [(math.log(x), math.log(y)) for x, y in zip(xs, ys, strict=True) if y]
    if len(points) < 2:
        return None
    x, y = np.array(points).T
    return float(np.polyfit(x, y, 1)[0])


def ising(a: np.ndarray) -> IsingModel:
    return IsingModel(a, names=[f"x{i}" for i in range(len(a))])


def error_curve(task: dict) -> dict:
    """Mean row error of F1 at every n of ``task["ns"]`` (prefixes of one exact sample):
    private (``rho``, ``selection``, ``constant``) or non-private (``rho`` None)."""
    import time

    p, seed, ns = task["p"], task["seed"], task["ns"]
    a, parent = tree_family(p, seed)
    data = sample_tree(a, parent, max(ns), seed)
    rows = sampled_rows(p, task.get("rows", 8), seed)
    errors, steps, seconds = [], [], []
    for n in ns:
        part = Dataset(data.records[:n], data.domain)
        rho = task.get("rho")
        t = NONPRIVATE_STEPS if rho is None else private_steps(
            n, rho, p, task.get("constant", STEP_CONSTANT))
        start = time.perf_counter()
        estimate = fit_rows(part, rows, rho=rho, steps=t, seed=seed * 1000 + n,
                            selection=task.get("selection", "em"))
        seconds.append(time.perf_counter() - start)
        errors.append(row_error(estimate, a, rows))
        steps.append(t)
    return {**task, "errors": errors, "steps": steps, "seconds": seconds}


def start(argv: list[str] | None, doc: str, name: str, quick: str,
          report: Callable[[dict], None]) -> tuple[argparse.Namespace, str] | None:
    """The options every experiment takes (--jobs, --quick, --replot) and the name of its
    results; with --replot, redraw from the saved results and return None."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help=quick)
    parser.add_argument("--replot", action="store_true", help="redraw from saved results")
    args = parser.parse_args(argv)
    name = f"{name}_quick" if args.quick else name
    if args.replot:
        report(json.loads((common.OUTPUT / f"{name}.json").read_text()))
        return None
    return args, name
