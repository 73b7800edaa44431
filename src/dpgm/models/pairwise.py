"""Ising, pairwise k-ary and binary t-wise Markov random fields (Zhang, Kamath, Kulkarni &
Wu 2020, Defs. 2.1–2.4), in the parametrisations their learners estimate.

* :class:`IsingModel`: P(z) ∝ exp(Σ_{i<j} A_ij z_i z_j + Σ_i θ_i z_i) on spins z ∈ {−1, +1}^p
  (each edge counted once: the reading under which the paper's Lem. 3.7 holds).
* :class:`PairwiseModel`: P(x) ∝ exp(Σ_{i<j} W_ij(x_i, x_j) + Σ_i θ_i(x_i)) on values
  0..k−1, with ``centred()`` moving row and column means into θ (the paper's centring
  assumption; the distribution is unchanged).
* :class:`TwiseModel`: P(z) ∝ exp(h(z)), h = Σ_I h̄(I) z^I a multilinear polynomial of
  degree at most t.

Each has its width λ and minimum edge weight η, converts to a
:class:`~dpgm.models.MarkovRandomField` (binary attributes: value v is the spin 2v − 1),
whose junction tree samples exactly and answers queries, and samples by Gibbs
(:class:`~dpgm.inference.gibbs.GibbsSampler`) where that tree would be too large.
Records come back as a :class:`~dpgm.dataset.Dataset` of values; :func:`spins` turns
binary ones into ±1.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from dpgm.dataset import Dataset
from dpgm.domain import Domain
from dpgm.errors import ModelTooLargeError, ParameterError
from dpgm.inference.gibbs import GibbsSampler
from dpgm.inference.junction_tree import JunctionTree
from dpgm.models.base import ModelBase
from dpgm.models.markov_random_field import MarkovRandomField
from dpgm.random import RngLike, as_generator
from dpgm.validation import integer, one_of

#: the largest junction tree (cells) that ``sample(method="auto")`` samples exactly
EXACT_SAMPLING_CELLS = 10_000_000
SAMPLING = ("auto", "exact", "gibbs")


def attribute_names(names: Sequence[str] | None, count: int) -> list[str]:
    """``count`` distinct names: those given, or ``x0``, ``x1``, ..."""
    chosen = list(names) if names is not None else [f"x{i}" for i in range(count)]
    if len(chosen) != count or len(set(chosen)) != count:
        raise ParameterError(f"give {count} distinct names")
    return chosen


def spins(data: Dataset) -> np.ndarray:
    """The records of binary attributes as spins, value v ↦ 2v − 1 (an (n, p) array)."""
    if any(size != 2 for size in data.domain.shape):
        raise ParameterError("spins need binary attributes")
    return 2 * data.records.astype(np.int64) - 1


class ParameterModel(ModelBase):
    """The model protocol for a model given by its parameters: a distribution (``total``
    1 unless a learner set it), answered by its Markov random field (built once)."""

    total: float = 1.0
    _field: MarkovRandomField | None = None

    def to_markov_random_field(self, total: float = 1.0) -> MarkovRandomField:
        raise NotImplementedError

    def marginal(self, attrs: Iterable[str], given: Mapping[str, object] | None = None,
                 *, with_error: bool = False) -> np.ndarray:
        """The marginal on ``attrs`` scaled to ``total``, given ``given``, by exact
        inference on the model's junction tree."""
        if with_error:
            return self.with_error(attrs, given)
        if self._field is None or self._field.total != self.total:
            self._field = self.to_markov_random_field(self.total)
        return self._field.marginal(attrs, given=self._given(given))

    def _structure(self) -> dict:
        return {"edges": [[self.names[i], self.names[j]] for i, j in self.edges]}

    def _most_probable(self, given: Mapping[str, object] | None) -> dict[str, int]:
        return self.to_markov_random_field(self.total).map(given)

    def _records(self, n: int, rng: np.random.Generator,
                 given: Mapping[str, object] | None) -> Dataset:
        """Independent draws (``sample``); given evidence, exact draws from the junction
        tree with the evidence entered."""
        if given:
            return self.to_markov_random_field(self.total).sample(n, rng, given=given)
        return self.sample(n, rng)

    def sample(self, n: int, rng: RngLike = None) -> Dataset:
        raise NotImplementedError


class PairwiseModel(ParameterModel):
    """A pairwise model over ``values`` values per attribute (Def. 2.2).

    ``couplings`` is (p, p, k, k), ``couplings[i, j][a, b]`` = W_ij(a, b), with
    ``couplings[j, i] = couplings[i, j].T`` and zero diagonal blocks; ``fields`` is (p, k).
    """

    def __init__(self, couplings: np.ndarray, fields: np.ndarray | None = None,
                 names: Sequence[str] | None = None):
        w = np.array(couplings, dtype=np.float64)
        if w.ndim != 4 or w.shape[0] != w.shape[1] or w.shape[2] != w.shape[3]:
            raise ParameterError("couplings must have shape (p, p, k, k)")
        p, _, k, _ = w.shape
        if k < 2:
            raise ParameterError("attributes need at least 2 values")
        theta = np.zeros((p, k)) if fields is None else np.array(fields, dtype=np.float64)
        if theta.shape != (p, k):
            raise ParameterError(f"fields must have shape ({p}, {k})")
        if not (np.all(np.isfinite(w)) and np.all(np.isfinite(theta))):
            raise ParameterError("the parameters must be finite")
        if not np.allclose(w, w.transpose(1, 0, 3, 2), rtol=0, atol=1e-12):
            raise ParameterError("couplings[j, i] must be couplings[i, j] transposed")
        if np.any(w[np.arange(p), np.arange(p)] != 0):
            raise ParameterError("an attribute has no coupling with itself: zero the diagonal")
        self.couplings, self.fields = w, theta
        self.names = attribute_names(names, p)

    @property
    def attributes(self) -> int:
        return self.couplings.shape[0]

    @property
    def values(self) -> int:
        return self.couplings.shape[2]

    @property
    def domain(self) -> Domain:
        return Domain(self.names, [self.values] * self.attributes)

    @property
    def edges(self) -> list[tuple[int, int]]:
        """The pairs (i < j) whose table is not zero: the dependency graph."""
        strength = np.abs(self.couplings).max(axis=(2, 3))
        return [(int(i), int(j)) for i, j in zip(*np.nonzero(np.triu(strength, 1)))]

    @property
    def width(self) -> float:
        """λ = max_{i,a} Σ_{j≠i} max_b |W_ij(a, b)| + |θ_i(a)|."""
        rows = np.abs(self.couplings).max(axis=3).sum(axis=1)  # (p, k)
        return float((rows + np.abs(self.fields)).max())

    @property
    def min_edge_weight(self) -> float:
        """η = min over edges of max_{a,b} |W_ij(a, b)| (infinite with no edge)."""
        strength = np.abs(self.couplings).max(axis=(2, 3))
        present = strength[np.triu(strength, 1) > 0]
        return float(present.min()) if present.size else float("inf")

    def centred(self) -> PairwiseModel:
        """The same distribution with every W_ij's rows and columns summing to zero (their
        means moved into θ): the representation the paper's learners estimate."""
        w = self.couplings
        rows = w.mean(axis=3, keepdims=True)
        cols = w.mean(axis=2, keepdims=True)
        centred = w - rows - cols + w.mean(axis=(2, 3), keepdims=True)
        # W_ij(a, b) = W̃_ij(a, b) + r_ij(a) + c_ij(b) − m_ij, and c_ij(b) = r_ji(b): each
        # pair gives each end its row means once (the grand means are a constant)
        theta = self.fields + rows[..., 0].sum(axis=1)
        return PairwiseModel(centred, theta, self.names)

    def potentials(self) -> dict[tuple[str, ...], np.ndarray]:
        """Log-potential tables on the edges and the attributes (for a MarkovRandomField)."""
        out: dict[tuple[str, ...], np.ndarray] = {
            (name,): self.fields[i] for i, name in enumerate(self.names)}
        for i, j in self.edges:
            out[(self.names[i], self.names[j])] = self.couplings[i, j]
        return out

    def to_markov_random_field(self, total: float = 1.0) -> MarkovRandomField:
        return MarkovRandomField(self.domain, self.potentials(), total=total)

    def sample(self, n: int, rng: RngLike = None, *, method: str = "auto", burn_in: int = 100,
               thin: int = 1) -> Dataset:
        """``n`` records: exactly from the junction tree (``"exact"``, or ``"auto"`` where
        it has at most :data:`EXACT_SAMPLING_CELLS` cells), else by Gibbs sampling with
        ``n`` chains, ``burn_in`` sweeps, a record every ``thin`` sweeps after it."""
        one_of("method", method, SAMPLING)
        n = integer("n", n, least=0)
        gen = as_generator(rng)
        if method != "gibbs":
            tree = JunctionTree.build(self.domain, list(self.potentials()))
            if tree.size() <= EXACT_SAMPLING_CELLS:
                return self.to_markov_random_field().sample(n, gen)
            if method == "exact":
                raise ModelTooLargeError(
                    f"the junction tree has {tree.size():,} cells: sample with method='gibbs'")
        states = GibbsSampler(self.couplings, self.fields).sample(n, gen, burn_in=burn_in,
                                                                   thin=thin)
        return Dataset(states, self.domain)


class IsingModel(PairwiseModel):
    """An Ising model on spins (Def. 2.1): ``couplings`` A (p × p, symmetric, zero
    diagonal) and ``fields`` θ (p,). As a pairwise model on values 0/1 (spin 2v − 1):
    W_ij = A_ij·[[1, −1], [−1, 1]], θ_i = θ_i·[−1, 1]."""

    def __init__(self, couplings: np.ndarray, fields: np.ndarray | None = None,
                 names: Sequence[str] | None = None):
        a = np.array(couplings, dtype=np.float64)
        if a.ndim != 2 or a.shape[0] != a.shape[1]:
            raise ParameterError("couplings must be a square matrix")
        p = a.shape[0]
        theta = np.zeros(p) if fields is None else np.array(fields, dtype=np.float64)
        if theta.shape != (p,):
            raise ParameterError(f"fields must have shape ({p},)")
        if not np.allclose(a, a.T, rtol=0, atol=1e-12):
            raise ParameterError("couplings must be symmetric")
        if np.any(np.diag(a) != 0):
            raise ParameterError("the diagonal of the couplings must be zero")
        sign = np.array([-1.0, 1.0])
        super().__init__(a[:, :, None, None] * np.outer(sign, sign), theta[:, None] * sign,
                         names)
        self.A, self.theta = a, theta

    @property
    def width(self) -> float:
        """λ = max_i Σ_j |A_ij| + |θ_i|."""
        return float((np.abs(self.A).sum(axis=1) + np.abs(self.theta)).max())

    @property
    def min_edge_weight(self) -> float:
        """η = min over edges of |A_ij| (infinite with no edge)."""
        present = np.abs(self.A[np.triu(self.A, 1) != 0])
        return float(present.min()) if present.size else float("inf")


class TwiseModel(ParameterModel):
    """A binary t-wise model (Defs. 2.3–2.4): P(z) ∝ exp(h(z)) on spins, h(z) = Σ_I h̄(I)
    z^I, ``coefficients`` {tuple of attribute indices: h̄(I)} over ``attributes`` spins."""

    def __init__(self, attributes: int, coefficients: Mapping[Iterable[int], float],
                 names: Sequence[str] | None = None):
        p = integer("attributes", attributes, least=1)
        terms: dict[tuple[int, ...], float] = {}
        for monomial, value in coefficients.items():
            key = tuple(sorted(int(i) for i in monomial))
            if len(set(key)) != len(key) or any(not 0 <= i < p for i in key):
                raise ParameterError(f"monomial {key} must name distinct attributes 0..{p - 1}")
            if not np.isfinite(value):
                raise ParameterError("the coefficients must be finite")
            if value != 0 and key:
                terms[key] = terms.get(key, 0.0) + float(value)
        self.attributes, self.coefficients = p, terms
        self.names = attribute_names(names, p)

    @property
    def order(self) -> int:
        """t: the largest degree of a monomial."""
        return max((len(k) for k in self.coefficients), default=0)

    @property
    def domain(self) -> Domain:
        return Domain(self.names, [2] * self.attributes)

    @property
    def width(self) -> float:
        """λ = max_i ‖∂_i h‖₁ = max_i Σ_{I ∋ i} |h̄(I)|."""
        load = np.zeros(self.attributes)
        for monomial, value in self.coefficients.items():
            load[list(monomial)] += abs(value)
        return float(load.max())

    def _structure(self) -> dict:
        return {"monomials": [[self.names[i] for i in m] for m in self.coefficients]}

    def maximal_monomials(self) -> list[tuple[int, ...]]:
        """The monomials contained in no other monomial of h."""
        keys = list(self.coefficients)
        return [k for k in keys if not any(set(k) < set(o) for o in keys)]

    def potentials(self) -> dict[tuple[str, ...], np.ndarray]:
        """One table per monomial: h̄(I)·Π_{j∈I} (2v_j − 1) over I's attributes."""
        out: dict[tuple[str, ...], np.ndarray] = {}
        for monomial, value in self.coefficients.items():
            grids = np.indices((2,) * len(monomial))
            out[tuple(self.names[i] for i in monomial)] = value * np.prod(2 * grids - 1, axis=0)
        return out

    def to_markov_random_field(self, total: float = 1.0) -> MarkovRandomField:
        potentials = self.potentials()
        covered = {a for clique in potentials for a in clique}
        for name in self.names:  # every attribute in the model, coupled or not
            if name not in covered:
                potentials[(name,)] = np.zeros(2)
        return MarkovRandomField(self.domain, potentials, total=total)

    def sample(self, n: int, rng: RngLike = None) -> Dataset:
        """``n`` records sampled exactly from the junction tree (refused where too large)."""
        return self.to_markov_random_field().sample(integer("n", n, least=0), as_generator(rng))

