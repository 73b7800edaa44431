"""Random graphical models of the CGM paper's experiments (Bernstein et al. 2017, §4.1).

Pairwise models over T attributes with K values each: every edge's potential table is a
Dirichlet(1) draw over its K² cells, θ_e = log ψ_e, no node potentials; graphs are
third-order chains (an edge between i and j when 1 ≤ |i − j| ≤ 3) or connected
Erdős–Rényi graphs. Public, made-up models: no privacy involved.
"""

from __future__ import annotations

import networkx as nx
import numpy as np

from dpgm.domain import Domain
from dpgm.errors import ParameterError
from dpgm.models.markov_random_field import MarkovRandomField
from dpgm.random import RngLike, as_generator
from dpgm.validation import fraction, integer, positive

Edge = tuple[str, str]


def variable_names(count: int) -> list[str]:
    """``x0``, ``x1``, ...: the attributes of a generated model."""
    return [f"x{i}" for i in range(integer("count", count, least=1))]


def third_order_chain(count: int) -> list[Edge]:
    """The edges (x_i, x_j), 1 ≤ j − i ≤ 3: 24 of them for 10 attributes."""
    names = variable_names(count)
    return [(names[i], names[j]) for i in range(count) for j in range(i + 1, min(i + 4, count))]


def connected_erdos_renyi(count: int, p: float, rng: RngLike = None,
                          attempts: int = 10_000) -> list[Edge]:
    """A connected G(count, p) graph's edges, drawn again until connected."""
    names = variable_names(count)
    p = fraction("p", p)
    gen = as_generator(rng)
    for _ in range(integer("attempts", attempts, least=1)):
        graph = nx.gnp_random_graph(count, p, seed=int(gen.integers(2**31)))
        if count == 1 or nx.is_connected(graph):
            return sorted((names[min(u, v)], names[max(u, v)]) for u, v in graph.edges)
    raise ParameterError(
        f"no connected graph in {attempts} draws of G({count}, {p:g}): raise p"
    )


def dirichlet_model(
    edges: list[Edge], values: int, rng: RngLike = None, *, alpha: float = 1.0,
    total: float = 1.0,
) -> MarkovRandomField:
    """A pairwise model on ``edges`` whose attributes have ``values`` values each and whose
    edge potentials are Dirichlet(``alpha``) draws over the values² cells (log-potentials)."""
    if not edges:
        raise ParameterError("give at least one edge")
    values = integer("values", values, least=2)
    alpha = positive("alpha", alpha)
    gen = as_generator(rng)
    names = sorted({a for edge in edges for a in edge}, key=lambda a: (len(a), a))
    domain = Domain(names, [values] * len(names))
    potentials = {
        tuple(edge): np.log(gen.dirichlet(np.full(values * values, alpha))).reshape(
            values, values)
        for edge in edges
    }
    return MarkovRandomField(domain, potentials, total=total)
