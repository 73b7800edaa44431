"""Clique tables as one flat vector in domain order: the layout the CGM learners work in."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from dpgm.domain import Domain
from dpgm.errors import ParameterError


def flatten_tables(
    domain: Domain, tables: Mapping[Sequence[str], np.ndarray]
) -> tuple[list[tuple[str, ...]], np.ndarray]:
    """The cliques (each in domain order) and their tables as one flat vector.

    ``tables`` maps each clique to its table, axes in the clique's order as given.
    """
    cliques, flat = [], []
    for clique, table in tables.items():
        clique = domain.check(clique)
        table = np.asarray(table, dtype=np.float64)
        if table.shape != domain.project(clique).shape:
            raise ParameterError(f"the table of {clique} has shape {table.shape}, expected "
                                 f"{domain.project(clique).shape}")
        order = domain.canonical(clique)
        cliques.append(order)
        flat.append(np.transpose(table, [clique.index(a) for a in order]).ravel())
    if not cliques:
        raise ParameterError("give at least one clique table")
    values = np.concatenate(flat)
    if not np.all(np.isfinite(values)):
        raise ParameterError("the tables must be finite")
    return cliques, values


def shared_table_tying(
    domain: Domain, cliques: Sequence[tuple[str, ...]], node: str | None = None
):
    """The linear map θ = M·w of a time-homogeneous model on ``cliques``: one table w_ψ
    shared by every clique (all of one shape), plus, with ``node``, a table w_φ over that
    attribute added to the first clique that holds it (the paper's wifi chain: ψ(x_t,
    x_{t+1}) and φ(x_1)). Returns M as a sparse matrix, rows in the flat layout of
    ``cliques`` (each in domain order, as :func:`flatten_tables` gives them)."""
    from scipy import sparse

    shapes = {domain.project(c).shape for c in cliques}
    if len(shapes) != 1:
        raise ParameterError("a shared table needs cliques of one shape")
    size = math.prod(shapes.pop())
    rows = np.arange(size * len(cliques))
    columns = np.tile(np.arange(size), len(cliques))
    width = size
    if node is not None:
        holder = next((k for k, c in enumerate(cliques) if node in c), None)
        if holder is None:
            raise ParameterError(f"no clique holds {node!r}")
        clique = cliques[holder]
        shape = domain.project(clique).shape
        axis = clique.index(node)
        values = np.indices(shape)[axis].ravel()  # each cell's value of the node
        rows = np.concatenate([rows, holder * size + np.arange(size)])
        columns = np.concatenate([columns, size + values])
        width += domain[node]
    return sparse.csr_matrix((np.ones(rows.size), (rows, columns)),
                             shape=(size * len(cliques), width))
