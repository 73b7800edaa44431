"""Gibbs sampling of pairwise discrete models, many chains at once.

For models whose junction tree is too large to sample exactly. The model is given by its
pairwise tables W_ij(a, b) and node tables θ_i(a) as one sparse matrix over (attribute,
value) pairs; the attributes are coloured so that no two of one colour interact, and a
sweep updates one colour class at a time, every chain and every attribute of the class
together: the conditional logits θ_i(a) + Σ_j W_ij(a, x_j) of the whole class are one
sparse product of the chains' one-hot states with the class's columns of W.
Each chain starts uniform at random, runs ``burn_in`` sweeps, then gives a record every
``thin`` sweeps.
"""

from __future__ import annotations

import numpy as np

from dpgm.errors import ParameterError
from dpgm.validation import integer


class GibbsSampler:
    """Block Gibbs sampling of P(x) ∝ exp(Σ_{i<j} W_ij(x_i, x_j) + Σ_i θ_i(x_i)).

    ``couplings`` has shape (p, p, k, k) with ``couplings[j, i] = couplings[i, j].T`` and
    zero blocks on the diagonal; ``fields`` has shape (p, k).
    """

    def __init__(self, couplings: np.ndarray, fields: np.ndarray):
        couplings = np.asarray(couplings, dtype=np.float64)
        fields = np.asarray(fields, dtype=np.float64)
        if couplings.ndim != 4 or couplings.shape[0] != couplings.shape[1] or \
                couplings.shape[2] != couplings.shape[3] or \
                fields.shape != (couplings.shape[0], couplings.shape[2]):
            raise ParameterError("couplings must be (p, p, k, k) and fields (p, k)")
        p, _, k, _ = couplings.shape
        self.attributes, self.values = p, k
        self.fields = fields
        import networkx as nx  # here: a model that is never Gibbs-sampled needs neither
        from scipy import sparse

        # W as a (p·k) × (p·k) matrix: row (i, a), column (j, b)
        matrix = sparse.csc_matrix(couplings.transpose(0, 2, 1, 3).reshape(p * k, p * k))
        graph = nx.Graph()
        graph.add_nodes_from(range(p))
        rows, cols = np.nonzero(np.abs(couplings).sum(axis=(2, 3)))
        graph.add_edges_from((int(i), int(j)) for i, j in zip(rows, cols) if i < j)
        colour = nx.greedy_color(graph, strategy="largest_first")
        classes: dict[int, list[int]] = {}
        for node, c in colour.items():
            classes.setdefault(c, []).append(node)
        self.classes = [np.array(sorted(members)) for _, members in sorted(classes.items())]
        # each class's columns of W (its attributes' values), for the product with states
        self._columns = [
            matrix[:, (members[:, None] * k + np.arange(k)).ravel()]
            for members in self.classes
        ]

    def sample(self, n: int, rng: np.random.Generator, *, burn_in: int = 100, thin: int = 1,
               chains: int | None = None) -> np.ndarray:
        """``n`` states (an (n, p) array of values) from ``chains`` chains (default n),
        each run ``burn_in`` sweeps and then read every ``thin`` sweeps."""
        n = integer("n", n, least=0)
        burn_in = integer("burn_in", burn_in, least=0)
        thin = integer("thin", thin, least=1)
        chains = n if chains is None else integer("chains", chains, least=1)
        chains = max(1, min(chains, n))  # no more chains than records, at least one
        p, k = self.attributes, self.values
        state = rng.integers(k, size=(chains, p))
        rounds = -(-n // chains)  # the records each chain gives
        out = np.empty((rounds * chains, p), dtype=np.int64)
        for _ in range(burn_in):
            self._sweep(state, rng)
        for r in range(rounds):
            for _ in range(thin if r else 0):
                self._sweep(state, rng)
            out[r * len(state):(r + 1) * len(state)] = state
        return out[:n]

    def _sweep(self, state: np.ndarray, rng: np.random.Generator) -> None:
        from scipy import sparse

        chains, p = state.shape
        k = self.values
        for members, columns in zip(self.classes, self._columns):
            onehot = sparse.csr_matrix(
                (np.ones(chains * p), (np.repeat(np.arange(chains), p),
                                       (np.arange(p) * k + state).ravel())),
                shape=(chains, p * k))
            logits = np.asarray((onehot @ columns).todense()).reshape(chains, len(members), k)
            logits += self.fields[members]
            logits -= logits.max(axis=2, keepdims=True)
            weights = np.exp(logits)
            cumulative = np.cumsum(weights, axis=2)
            draws = rng.random((chains, len(members), 1)) * cumulative[:, :, -1:]
            state[:, members] = np.minimum((draws > cumulative).sum(axis=2), k - 1)
