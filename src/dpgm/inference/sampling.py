"""Exact forward sampling from calibrated junction-tree marginals."""

from __future__ import annotations

import numpy as np

from dpgm.errors import ParameterError
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


def _rounded_rows(
    conditionals: np.ndarray, rows: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """For each record, a column such that each row's column counts are its expected counts rounded.

    Row ``s`` holds ``n_s`` records; their column counts are ``floor(n_s · q_s)`` plus one
    more for a systematic sample of cells with probability equal to the fractional parts,
    so every cell's count is unbiased and within one of its expectation. The counts are
    then dealt to the row's records in random order.
    """
    n_rows, n_cols = conditionals.shape
    sizes = np.bincount(rows, minlength=n_rows)
    expected = conditionals * sizes[:, None]
    counts = np.floor(expected)
    fraction = expected - counts
    # each row's fractions sum to an integer (its remainder), so a single systematic
    # sample over the concatenated rows gives every row exactly its remainder
    order = rng.permutation(n_cols)
    cumulative = np.cumsum(fraction[:, order].ravel())
    remainder = int(round(cumulative[-1])) if cumulative.size else 0
    points = rng.random() + np.arange(remainder)
    hits = np.searchsorted(cumulative, points, side="right")
    hits = np.minimum(hits, cumulative.size - 1)
    extra = np.bincount(hits, minlength=cumulative.size).reshape(n_rows, n_cols)
    counts[:, order] += extra
    counts = counts.astype(np.int64)
    # fix rounding drift so every row deals exactly its number of records
    drift = sizes - counts.sum(axis=1)
    if drift.any():
        top = np.argmax(conditionals, axis=1)
        counts[np.arange(n_rows), top] += drift
        counts = np.maximum(counts, 0)
    values = np.repeat(np.tile(np.arange(n_cols), n_rows), counts.ravel())
    dealing = np.lexsort((rng.random(rows.size), rows))  # records grouped by row, shuffled
    out = np.empty(rows.size, dtype=np.int64)
    out[dealing] = values
    return out


def sample_records(
    tree: JunctionTree,
    marginals: list[np.ndarray],
    n: int,
    rng: np.random.Generator,
    method: str = "exact",
) -> np.ndarray:
    """``n`` records (columns in domain order) from the model with these clique marginals.

    ``method="exact"`` draws independent records; ``"rounded"`` draws them clique by
    clique with every conditional count rounded from its expectation (unbiased, with far
    less sampling error: what synthetic data releases want).
    """
    if method not in ("exact", "rounded"):
        raise ParameterError(f"unknown sampling method {method!r}; use 'exact' or 'rounded'")
    draw = _draw_rows if method == "exact" else _rounded_rows
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
        drawn = draw(table, rows, rng)
        values = np.unravel_index(drawn, domain.project(rest).shape)
        for a, v in zip(rest, values):
            records[:, domain.axes([a])[0]] = v
        done.update(rest)
    return records
