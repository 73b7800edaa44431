"""Exact forward sampling from calibrated junction-tree marginals."""

from __future__ import annotations

import numpy as np

from dpgm.inference.junction_tree import JunctionTree


def _draw_rows(conditionals: np.ndarray, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """For each record, a column index drawn from ``conditionals[row]`` (rows sum to 1).

    Row ``s``'s cumulative sums are shifted by ``s`` so that all rows form one increasing
    array: a single ``searchsorted`` then samples every record at once.
    """
    n_rows, n_cols = conditionals.shape
    cdf = np.cumsum(conditionals, axis=1)
    cdf[:, -1] = 1.0  # guard against rounding: every row ends exactly at 1
    cdf += np.arange(n_rows)[:, None]
    u = rng.random(rows.size)
    flat = np.searchsorted(cdf.ravel(), rows + u, side="right")
    return np.minimum(flat - rows * n_cols, n_cols - 1)


def sample_records(tree: JunctionTree, marginals: list[np.ndarray], n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` records (columns in domain order) drawn from the model with these clique marginals."""
    domain = tree.domain
    records = np.zeros((n, len(domain)), dtype=np.int64)
    done: set[str] = set()
    for i in tree.order:
        clique = tree.cliques[i]
        sep = tuple(a for a in clique if a in done)
        rest = tuple(a for a in clique if a not in done)
        if not rest:
            continue
        axes = [clique.index(a) for a in sep + rest]
        table = np.transpose(marginals[i], axes)
        sep_cells = domain.size(sep)
        table = table.reshape(sep_cells, -1)
        with np.errstate(invalid="ignore", divide="ignore"):
            table = table / table.sum(axis=1, keepdims=True)
        # separator values of probability 0 are never sampled; keep their rows well defined
        table[~np.isfinite(table).all(axis=1)] = 1.0 / table.shape[1]
        if sep:
            cols = [domain.axes([a])[0] for a in sep]
            rows = np.ravel_multi_index(tuple(records[:, cols].T), domain.project(sep).shape)
        else:
            rows = np.zeros(n, dtype=np.int64)
        drawn = _draw_rows(table, rows, rng)
        values = np.unravel_index(drawn, domain.project(rest).shape)
        for a, v in zip(rest, values):
            records[:, domain.axes([a])[0]] = v
        done.update(rest)
    return records
