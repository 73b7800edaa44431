"""Clique tables as one flat vector in domain order: the layout the CGM learners work in."""

from __future__ import annotations

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
