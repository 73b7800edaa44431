"""Synthetic records fitted to noisy pair (and larger) tables directly (post-processing).

Private-PGM turns measurements into a graphical model, then draws records from it; a model
that holds every pair of a wide table needs a junction tree far too large to estimate
(docs/benchmarks.md, ideas 10 and 19). :func:`fit_records` skips the model: starting from
n records (drawn, for example, from a smaller model), it moves them until their pair
counts follow the target tables, minimising the squared error

    L(X) = Σ over pairs (j, k) and cells (v, w) of (count of X on (v, w) − target(v, w))²

(and the same sum over any larger marginal given a target: a workload's triples)

by local search. Each step takes one attribute ``j`` and a random batch of records; each
record proposes the value of ``j`` that lowers L most given its other values, and the
improving proposals are applied together. The change of L for record ``i`` moving from
``u`` to ``v`` is ``2 Σ_k (R_jk[v, x_ik] − R_jk[u, x_ik]) + 2(d − 1)``, where ``R = counts −
targets`` (a triple's term gathers at the record's two other values): one gather per
table on ``j``, for the whole batch at once. Small batches
converge to a lower error; proposals of one batch that pile into one cell overshoot it.

A fixed number of sweeps stops short where the targets are precise (a large table, a
large budget), and a fit pushed further follows the noise where they are not
(docs/benchmarks.md, ideas 31 and 32). Told the targets' expected squared noise, the fit
therefore goes on past its sweeps, with ever smaller batches, until its error is within
a share of that noise.

The targets are any tables: noisy marginals, denoised ones, a model's. Nothing here reads
data, so the records' privacy is that of the targets.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from dpgm.dataset import Dataset
from dpgm.domain import Domain
from dpgm.errors import ParameterError
from dpgm.inference.sampling import draw_records
from dpgm.validation import integer, number

#: each sweep proposes one move per record; these many sweeps converge on the suite's tables
SWEEPS = 30
#: the share of the records that propose moves together in one step
BATCH = 0.005
#: given the targets' expected noise, the fit goes on past its sweeps while its squared
#: error is above this share of it (idea 32: below it, a closer fit follows the noise)
FIT_WITHIN = 0.25
#: past its sweeps, the batch is halved whenever a sweep lowers the error by less than
#: this share of it ...
STALL = 0.002
#: ... down to this share of the records (at least one record) ...
MIN_BATCH = 0.0001
#: ... in at most these many sweeps in all
MAX_SWEEPS = 100


def _residuals(data: Dataset, targets: Mapping[tuple[str, ...], np.ndarray]
               ) -> list[tuple[tuple[int, ...], np.ndarray]]:
    """``counts − target`` of each target's marginal: the attributes' positions (in domain
    order) and the table, its axes in that order. A set of attributes without a target is
    free: the error does not see it."""
    domain = data.domain
    attrs = list(domain.attrs)
    named = {}
    for clique in targets:
        if len(clique) < 2 or len(set(clique)) != len(clique):
            raise ParameterError(
                f"a target must be on two or more distinct attributes, got {clique!r}")
        domain.check(clique)
        named[tuple(sorted(clique, key=attrs.index))] = clique
    residuals = []
    for (clique, key), counts in zip(named.items(), data.marginals(list(named))):
        target = np.asarray(targets[key], dtype=np.float64)
        target = np.transpose(target, [key.index(a) for a in clique])
        if target.shape != counts.shape:
            raise ParameterError(f"the target of {' × '.join(key)} has shape "
                                 f"{np.shape(targets[key])}, not "
                                 f"{tuple(domain[a] for a in key)}")
        residuals.append((tuple(attrs.index(a) for a in clique), counts - target))
    return residuals


def _cells(positions: tuple[int, ...], records: np.ndarray, rows: np.ndarray, j: int,
           values: np.ndarray) -> tuple[np.ndarray, ...]:
    """The cell of a table on ``positions`` of each of ``rows`` were attribute ``j`` to
    take ``values``."""
    return tuple(values if p == j else records[rows, p] for p in positions)


def _on_attribute(residuals: list[tuple[tuple[int, ...], np.ndarray]], j: int
                  ) -> list[tuple[np.ndarray, tuple[int, ...], tuple[int, ...], np.ndarray]]:
    """The tables on attribute ``j``: each as a view with ``j``'s axis first (it follows
    the table's updates), the positions of its other axes, its positions and the table."""
    return [(np.moveaxis(table, positions.index(j), 0),
             tuple(p for p in positions if p != j), positions, table)
            for positions, table in residuals if j in positions]


def _deltas(on_j: list[tuple[np.ndarray, tuple[int, ...], tuple[int, ...], np.ndarray]],
            records: np.ndarray, rows: np.ndarray, j: int, size: int) -> np.ndarray:
    """:func:`move_deltas` over the tables on ``j`` (:func:`_on_attribute`)."""
    gains = np.zeros((rows.size, size))
    for view, others, _, _ in on_j:
        gains += view[(slice(None), *(records[rows, p] for p in others))].T
    own = records[rows, j]
    # a move adds 1 to one cell of each table on j and takes 1 from another
    deltas = 2.0 * (gains - gains[np.arange(rows.size), own][:, None]) + 2.0 * len(on_j)
    deltas[np.arange(rows.size), own] = 0.0
    return deltas


def move_deltas(residuals: list[tuple[tuple[int, ...], np.ndarray]], records: np.ndarray,
                rows: np.ndarray, j: int, size: int) -> np.ndarray:
    """The change of the squared error were each of ``rows`` alone to take each value of
    attribute ``j`` (``(len(rows), size)``; zero at its own value)."""
    return _deltas(_on_attribute(residuals, j), records, rows, j, size)


def most_sweeps(sweeps: int = SWEEPS, noise: float | None = None) -> int:
    """The most sweeps :func:`fit_records` runs with these ``sweeps`` and ``noise``."""
    return sweeps if noise is None else max(sweeps, MAX_SWEEPS)


def fit_records(domain: Domain, targets: Mapping[tuple[str, ...], np.ndarray],
                records: np.ndarray, rng: np.random.Generator, sweeps: int = SWEEPS,
                batch: float = BATCH, noise: float | None = None,
                callback: Callable[[int, float], None] | None = None) -> np.ndarray:
    """``records`` (codes, one column per attribute of ``domain``, in its order) moved
    until their counts follow ``targets`` (a table per pair, or larger set, of attributes,
    keyed by the names in any order, the table's axes in that order; sets without one are
    left free); a new array, the caller's is left as it was.

    ``sweeps`` sweeps of batches of ``batch`` of the records. Given ``noise``, the
    targets' expected squared noise (the sum over their cells of the noise variance), the
    fit then goes on while its squared error is above :data:`FIT_WITHIN` times it,
    halving the batch whenever a sweep stalls (see :data:`STALL`, :data:`MIN_BATCH` and
    :data:`MAX_SWEEPS`). ``callback``, if given, is called after each sweep with its
    number and the squared error."""
    sweeps = integer("sweeps", sweeps, least=1)
    batch = number("batch", batch, low=0.0, high=1.0, low_open=True)
    if noise is not None:
        noise = number("noise", noise, low=0.0)
    given = np.asarray(records)
    if given.ndim != 2 or given.shape[1] != len(domain.attrs):
        raise ParameterError(f"records must be a table of {len(domain.attrs)} columns, one "
                             f"per attribute; got shape {given.shape}")
    data = Dataset(given, domain)  # checks every code, names a bad one
    records = np.array(data.records, dtype=np.int64, order="F")  # the caller's stays
    sizes = [domain[a] for a in domain.attrs]
    residuals = _residuals(data, targets)  # checks every target, even with no records
    n, d = records.shape
    if n == 0 or not residuals:
        return records
    size, least = max(1, int(batch * n)), max(1, int(MIN_BATCH * n))
    tables_on = [_on_attribute(residuals, j) for j in range(d)]  # views: made once
    step, error = 0, _error(residuals)
    for sweep in range(1, most_sweeps(sweeps, noise) + 1):
        for _ in range(n // size):
            j = step % d
            _step(tables_on[j], records, rng.choice(n, size, replace=False), j, sizes[j])
            step += 1
        if noise is None and callback is None:
            continue
        before, error = error, _error(residuals)
        if callback is not None:
            callback(sweep, error)
        if noise is None or sweep < sweeps:
            continue
        if error <= FIT_WITHIN * noise:
            break
        if before - error < STALL * before:  # stalled: smaller batches overshoot less
            if size // 2 < least:
                break
            size //= 2
    return records


def _error(residuals: list[tuple[tuple[int, ...], np.ndarray]]) -> float:
    """The squared error of the records whose residual tables these are."""
    return float(sum((table ** 2).sum() for _, table in residuals))


def _step(on_j: list[tuple[np.ndarray, tuple[int, ...], tuple[int, ...], np.ndarray]],
          records: np.ndarray, rows: np.ndarray, j: int, size: int) -> None:
    """One step of the fit: each of ``rows`` proposes its best value of attribute ``j``
    (of ``size``); the improving proposals are applied together, to ``records`` and to
    the tables on ``j`` (:func:`_on_attribute`), in place."""
    deltas = _deltas(on_j, records, rows, j, size)
    best = np.argmin(deltas, axis=1)
    moving = deltas[np.arange(rows.size), best] < 0
    rows, old, new = rows[moving], records[rows[moving], j], best[moving]
    signs = np.repeat([1.0, -1.0], rows.size)  # into the new cells, out of the old
    twice, both = np.concatenate([rows, rows]), np.concatenate([new, old])
    for _, _, positions, table in on_j:
        np.add.at(table, _cells(positions, records, twice, j, both), signs)
    records[rows, j] = new


def squared_error(domain: Domain, records: np.ndarray,
                  targets: Mapping[tuple[str, ...], np.ndarray]) -> float:
    """The error :func:`fit_records` lowers: Σ over targets and cells of (count − target)²."""
    return _error(_residuals(Dataset(records, domain), targets))


def chow_liu_forest(domain: Domain, targets: Mapping[tuple[str, str], np.ndarray]):
    """The Chow–Liu forest of the target pair tables (the pairs of most mutual information
    that form a forest; a ``networkx`` graph over every attribute) and the tables, their
    negative cells clipped, keyed by their two attributes in ``domain`` order."""
    import networkx as nx
    from scipy.special import rel_entr

    attrs = list(domain.attrs)
    tables: dict[tuple[str, str], np.ndarray] = {}
    graph = nx.Graph()
    graph.add_nodes_from(attrs)
    for pair, table in targets.items():
        a, b = sorted(domain.check(pair), key=attrs.index)
        table = np.clip(np.asarray(table, dtype=np.float64), 0.0, None)
        table = table if (a, b) == tuple(pair) else table.T
        if table.shape != (domain[a], domain[b]):
            raise ParameterError(f"the target of {a} × {b} has shape {table.shape}, not "
                                 f"{(domain[a], domain[b])}")
        tables[(a, b)] = table
        mass = table.sum()
        information = 0.0
        if mass > 0:  # the mutual information: KL(joint ‖ product of its margins)
            joint = table / mass
            product = np.outer(joint.sum(axis=1), joint.sum(axis=0))
            information = float(rel_entr(joint, product).sum())
        graph.add_edge(a, b, weight=information)
    return nx.maximum_spanning_tree(graph), tables


def _edge_table(tables: Mapping[tuple[str, str], np.ndarray], parent: str, child: str
                ) -> np.ndarray:
    """The forest's table of an edge with axes (parent, child)."""
    return tables[(parent, child)] if (parent, child) in tables else tables[(child, parent)].T


def tree_records(domain: Domain, targets: Mapping[tuple[str, str], np.ndarray], n: int,
                 rng: np.random.Generator,
                 singles: Mapping[str, np.ndarray] | None = None) -> np.ndarray:
    """``n`` records drawn (rounded, by the one row sampler) from the Chow–Liu forest of the
    target pair tables (:func:`chow_liu_forest`), a starting point that already holds the
    strongest dependences. The root of each tree is drawn from its one-way table in
    ``singles`` (default: read off one of its pairs; uniform for an attribute in none)."""
    import networkx as nx

    attrs = list(domain.attrs)
    forest, tables = chow_liu_forest(domain, targets)
    steps = []
    for component in nx.connected_components(forest):
        root = min(component, key=attrs.index)
        steps.append(((), (root,), _one_way(root, tables, singles, domain)))
        steps += [((parent,), (child,), _edge_table(tables, parent, child))
                  for parent, child in nx.bfs_edges(forest, root)]
    return draw_records(domain, steps, n, rng, method="rounded")


def forest_pairs(domain: Domain, targets: Mapping[tuple[str, str], np.ndarray],
                 singles: Mapping[str, np.ndarray] | None = None
                 ) -> tuple[set[frozenset[str]], dict[tuple[str, str], np.ndarray]]:
    """The Chow–Liu forest's edges (:func:`chow_liu_forest`) and the table it implies for
    each pair of ``targets`` that it joins, edge or not (keyed in ``domain`` order, axes in
    that order; the one-way tables of ``singles`` as in :func:`tree_records`): the one-way
    table of one attribute times the conditional tables along the path to the other. A
    pair off the forest is the forest's prediction of it from the pairs on the path."""
    import networkx as nx

    attrs = list(domain.attrs)
    forest, tables = chow_liu_forest(domain, targets)
    wanted = set(tables)  # the targets' pairs, in domain order: only those are kept

    def conditional(parent: str, child: str) -> np.ndarray:  # [child value, parent value]
        table = _edge_table(tables, parent, child)
        mass = table.sum(axis=1, keepdims=True)
        uniform = np.full_like(table, 1.0 / table.shape[1])
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(mass > 0, table / mass, uniform).T

    implied: dict[tuple[str, str], np.ndarray] = {}
    for source in attrs:
        one_way = _one_way(source, tables, singles, domain)
        given: dict[str, np.ndarray] = {}  # [value of v, value of source]
        done = None
        for parent, child in nx.bfs_edges(forest, source):
            if parent != done:  # a parent's children come together: the last one's are done
                given.pop(done, None)
                done = parent
            leaf = forest.degree(child) == 1
            if leaf and (source, child) not in wanted:
                continue  # nothing asked of it, and nothing below it
            step = conditional(parent, child)
            matrix = step if parent == source else step @ given[parent]
            if (source, child) in wanted:
                implied[(source, child)] = matrix.T * one_way[:, None]
            if not leaf:  # kept for its children only (a large pair's is n x n)
                given[child] = matrix
    return {frozenset(edge) for edge in forest.edges}, implied


def _one_way(attr: str, tables: Mapping[tuple[str, str], np.ndarray],
             singles: Mapping[str, np.ndarray] | None, domain: Domain) -> np.ndarray:
    if singles is not None and attr in singles:
        return np.clip(np.asarray(singles[attr], dtype=np.float64), 0.0, None)
    for (a, b), table in tables.items():
        if attr in (a, b):
            return table.sum(axis=1 if attr == a else 0)
    return np.ones(domain[attr])
