"""The one row sampler: records drawn step by step from conditional tables.

:func:`draw_records` fills the records' columns one step at a time, each step drawing some
attributes given those drawn before: the junction tree's cliques (:func:`sample_records`,
for every Markov random field) and a Bayesian network's CPDs in topological order
(:meth:`dpgm.models.BayesianNetwork.sample`, PrivBayes) both go through it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from dpgm.domain import Domain
from dpgm.errors import ParameterError
from dpgm.inference.junction_tree import JunctionTree

#: one step of :func:`draw_records`: (given attributes, drawn attributes, table whose axes
#: are the given ones, then the drawn ones)
Step = tuple[tuple[str, ...], tuple[str, ...], np.ndarray]
METHODS = ("exact", "rounded")


def _draw_rows(conditionals: np.ndarray, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """For each record, a column index drawn from ``conditionals[row]`` (rows sum to 1).

    Row ``s``'s cumulative sums are shifted by ``s`` so that all rows form one increasing
    array: a single ``searchsorted`` then samples every record at once.
    """
    n_rows, n_cols = conditionals.shape
    # capped at 1 and ending exactly at 1 whatever the rounding, so that the shifted rows
    # below stay one increasing array
    cdf = np.minimum(np.cumsum(conditionals, axis=1), 1.0)
    cdf[:, -1] = 1.0
    cdf += np.arange(n_rows)[:, None]
    u = rng.random(rows.size)
    flat = np.searchsorted(cdf.ravel(), rows + u, side="right")
    return np.minimum(flat - rows * n_cols, n_cols - 1)


#: the bound on the sort keys of :func:`_rounded_rows` (int64, with room)
_KEY_LIMIT = 2**62
#: random low bits of those keys, which put the records of equal keys in random order
_TIE_BITS = 20
#: the most earlier columns a step's records are sorted by: further keys barely split the
#: runs of records further (measured: the suite's 3-way TV the same within 1%), and each
#: costs a pass over the records
_KEY_COLUMNS = 4
#: the fraction of a row's length its low-discrepancy stride takes
_GOLDEN = (5**0.5 - 1) / 2


def _order_room(n_rows: int) -> int:
    """How many order values :func:`_rounded_rows` can sort under each of ``n_rows`` rows:
    row, order and the random low bits then fit one int64 key."""
    return (_KEY_LIMIT // max(n_rows, 1)) >> _TIE_BITS


def _earlier_key(records: np.ndarray, axes: Sequence[int], sizes: Sequence[int],
                 rng: np.random.Generator, limit: int) -> np.ndarray:
    """One integer per record, below ``limit``, ordering the records by up to
    :data:`_KEY_COLUMNS` of the columns ``axes`` of ``records``, taken at random, in a
    random priority (as many as fit)."""
    key = np.zeros(records.shape[0], dtype=np.int64)
    room = 1
    for j in rng.permutation(len(axes))[:_KEY_COLUMNS]:
        if room * sizes[j] > limit:
            break
        key *= sizes[j]
        key += records[:, axes[j]]
        room *= sizes[j]
    return key


def _golden_strides(sizes: np.ndarray) -> np.ndarray:
    """For each length ``m``, the integer nearest ``0.618·m`` (or above) prime to ``m``: a
    stride whose multiples modulo ``m`` spread evenly (the golden ratio's)."""
    sizes = np.maximum(sizes, 1)
    strides = np.maximum(np.rint(_GOLDEN * sizes).astype(np.int64), 1)
    while np.any(shared := np.gcd(strides, sizes) != 1):
        strides[shared] += 1
    return strides


def _rounded_rows(
    conditionals: np.ndarray, rows: np.ndarray, rng: np.random.Generator,
    order: np.ndarray | None = None,
) -> np.ndarray:
    """For each record, a column such that each row's column counts are its expected counts
    rounded, dealt evenly along ``order``.

    Row ``s`` holds ``n_s`` records; their column counts are ``floor(n_s · q_s)`` plus one
    more for a systematic sample of the row's cells with probability equal to the
    fractional parts, so every cell's count is unbiased and within one of its expectation;
    the rows' samples start at spread points (a golden-ratio sequence), so a column's total
    over many sparse rows stays close to its expectation too.

    The counts are then dealt to the row's records sorted by ``order`` (one integer per
    record, below ``_order_room(len(conditionals))``; ties, and every record where it is
    None, in random order) in a low-discrepancy sequence: the ``p``-th
    record of a row of ``m`` gets the column whose share of the row's counts covers
    ``(p·g + t) mod m``, with ``g ≈ 0.618·m`` prime to ``m`` and ``t`` uniform. Every run of
    consecutive records then receives each column nearly in proportion, so whatever
    ``order`` sorts on (the columns drawn before) meets the new columns as independently as
    the model says, with far less sampling error than a random dealing; and each position
    gets column ``x`` with probability ``q_s(x)`` exactly (``t`` makes every position
    alike), so every cross count stays unbiased.
    """
    n_rows, n_cols = conditionals.shape
    sizes = np.bincount(rows, minlength=n_rows)
    expected = conditionals * sizes[:, None]
    counts = np.floor(expected)
    fraction = expected - counts
    # each row's fractions sum to an integer (its remainder), which a systematic sample
    # within the row hands out: a cell gets one more record with probability equal to its
    # fraction. Each row's sample starts at its own point of a golden-ratio sequence (its
    # start uniform, so every cell stays unbiased): one start shared by every row would
    # give all rows' extra records to the same columns at once, so that on many sparse
    # rows a column's total could miss its expectation by up to the number of rows.
    shuffle = rng.permutation(n_cols)
    cumulative = np.cumsum(fraction[:, shuffle], axis=1)
    remainder = np.rint(cumulative[:, -1:])
    np.minimum(cumulative, remainder, out=cumulative)  # float drift: end on the remainder
    cumulative[:, -1:] = remainder
    start = (rng.random() + _GOLDEN * np.arange(n_rows)) % 1.0
    # how many of the row's points start, start + 1, … lie below each cumulative sum
    below = np.maximum(np.ceil(cumulative - start[:, None]), 0.0)
    extra = np.diff(below, axis=1, prepend=0.0)
    counts[:, shuffle] += extra
    counts = counts.astype(np.int64)
    # fix any rounding drift so every row deals exactly its number of records
    drift = sizes - counts.sum(axis=1)
    if drift.any():
        top = np.where(drift > 0, np.argmax(conditionals, axis=1), np.argmax(counts, axis=1))
        counts[np.arange(n_rows), top] += drift
    # the columns in a low-discrepancy sequence, rows one after another
    row_start = np.cumsum(sizes) - sizes
    turn = np.floor(rng.random(n_rows) * sizes).astype(np.int64)
    row_of = np.repeat(np.arange(n_rows), sizes)
    slot = np.arange(rows.size) - row_start[row_of]
    point = (slot * _golden_strides(sizes)[row_of] + turn[row_of]) % sizes[row_of]
    values = np.searchsorted(np.cumsum(counts.ravel()), row_start[row_of] + point,
                             side="right") % n_cols
    # records grouped by row, by ``order`` within it, ties in random order: random low
    # bits under one key, then a single (unstable) sort
    key = rows * _order_room(n_rows)
    if order is not None:
        key += order
    key <<= _TIE_BITS
    key += rng.integers(0, 1 << _TIE_BITS, rows.size)
    dealing = np.argsort(key)
    out = np.empty(rows.size, dtype=np.int64)
    out[dealing] = values
    return out


def draw_records(
    domain: Domain,
    steps: Iterable[Step],
    n: int,
    rng: np.random.Generator,
    method: str = "exact",
) -> np.ndarray:
    """``n`` records (columns in ``domain`` order) drawn one step at a time.

    A step ``(given, drawn, table)`` draws the attributes ``drawn`` jointly, for each record,
    from ``table``'s row at the values earlier steps drew for ``given``; each row is
    normalised here, and a row with no mass is uniform. ``method="exact"`` draws
    independent records; ``"rounded"`` rounds every row's counts from their expectation
    and deals them evenly along the columns drawn before (unbiased, with far less
    sampling error, within a step and across steps: what synthetic data releases want).
    """
    if method not in METHODS:
        raise ParameterError(f"unknown sampling method {method!r}; use 'exact' or 'rounded'")
    # column by column: each step reads whole earlier columns and writes its own, which
    # a column-major array keeps contiguous
    records = np.zeros((n, len(domain)), dtype=np.int64, order="F")
    done: list[str] = []
    for given, drawn, table in steps:
        given_shape = tuple(domain[a] for a in given)
        table = np.reshape(table, (int(np.prod(given_shape, dtype=np.int64)), -1))
        with np.errstate(invalid="ignore", divide="ignore"):
            table = table / table.sum(axis=1, keepdims=True)
        # rows of probability 0 are never drawn from; keep them well defined
        table[~np.isfinite(table).all(axis=1)] = 1.0 / table.shape[1]
        if given:
            rows = np.ravel_multi_index(tuple(records[:, list(domain.axes(given))].T), given_shape)
        else:
            rows = np.zeros(n, dtype=np.int64)
        if method == "exact":
            drawn_cells = _draw_rows(table, rows, rng)
        else:  # dealt along the columns drawn before that the step is not given
            earlier = [a for a in done if a not in given]
            order = (_earlier_key(records, domain.axes(earlier), [domain[a] for a in earlier],
                                  rng, _order_room(len(table)))
                     if earlier else None)
            drawn_cells = _rounded_rows(table, rows, rng, order)
        values = np.unravel_index(drawn_cells, tuple(domain[a] for a in drawn))
        records[:, list(domain.axes(drawn))] = np.stack(values, axis=1)
        done.extend(drawn)
    return records


def sample_records(
    tree: JunctionTree,
    marginals: list[np.ndarray],
    n: int,
    rng: np.random.Generator,
    method: str = "exact",
) -> np.ndarray:
    """``n`` records (columns in domain order) from the model with these clique marginals,
    drawn clique by clique along the tree (:func:`draw_records`)."""

    def steps():
        done: set[str] = set()
        for i in tree.order:
            clique = tree.cliques[i]
            sep = tuple(a for a in clique if a in done)
            rest = tuple(a for a in clique if a not in done)
            if rest:
                done.update(rest)
                yield sep, rest, np.transpose(marginals[i], [clique.index(a) for a in sep + rest])

    return draw_records(tree.domain, steps(), n, rng, method)
