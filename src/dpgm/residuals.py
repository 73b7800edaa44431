"""Residual queries: the orthogonal decomposition of marginals that ResidualPlanner
(Xiao, He, Zhang & Kifer, NeurIPS 2023) measures, and the closed forms of its plan and its
variances (public facts only: the domain and the workload; no data).

For one attribute with ``n`` values, ``L`` (``(n-1) × n``, :func:`residual_basis`) has
orthonormal rows orthogonal to the all-ones vector, so ``I = 11ᵀ/n + LᵀL``. Taking that
split on every attribute of a clique ``A`` writes its marginal as a sum over the subsets
``B ⊆ A``::

    μ_A = Σ_{B⊆A} (⊗_{i∈B} Lᵢᵀ ⊗_{i∈A∖B} 1/nᵢ) z_B,      z_B = (⊗_{i∈B} Lᵢ) μ_B,

where ``z_B``, the *residual* of ``B``, is a linear function of the marginal on ``B``
(``z_∅`` is the record count). Residuals of different subsets lie in mutually orthogonal
subspaces of the full table, so every marginal of a workload is reconstructed from the
residuals of its subsets, each measured once, and each measurement informs nothing else.

**Privacy.** ``z_B`` answered with independent Gaussian noise of variance ``u_B`` on each
entry: one record adds one column of ``⊗ Lᵢ``, whose squared L2 norm is
``p_B = Π_{i∈B} (nᵢ-1)/nᵢ`` for every column, so the measurement is
``p_B / (2 u_B)``-zCDP (add/remove neighbours); the measurements compose by summing.

**Variance.** With ``LᵢᵀLᵢ = I - 11ᵀ/nᵢ`` (diagonal ``(nᵢ-1)/nᵢ``), every cell of the
reconstructed marginal on ``A`` has the same variance ``Σ_{B⊆A} a_{A,B} u_B`` with
``a_{A,B} = Π_{i∈B} (nᵢ-1)/nᵢ · Π_{i∈A∖B} 1/nᵢ²`` (:func:`marginal_variance`).

**The plan** (:func:`plan_residuals`): the variances ``u_B`` of least loss for a budget ρ.
``"sum"`` (the total variance over every cell of every workload marginal,
``Σ_B c_B u_B``, ``c_B = Σ_{A⊇B} |A| a_{A,B}``) has the closed form
``u_B = sqrt(p_B / c_B) · Σ_C sqrt(p_C c_C) / (2ρ)``, from the Lagrange conditions. For
``"max"`` (the largest cell variance of any workload marginal) the optimum maximises the
concave dual over mixtures ``λ`` of the marginals, whose inner problem is the weighted
sum; exponentiated-gradient ascent on ``λ`` (the gradient is each marginal's variance)
stops when the primal and dual values agree to :data:`MAX_LOSS_TOLERANCE`. ``"error"``
is the expected workload error of the raw answers (Private-PGM's measure, Sec. 5.1: each
marginal's L1 error over twice its answers' L1 norm): ``Σ_A q_A sqrt(v_A) / s_A``, with
``q_A`` the marginal's queries, ``v_A`` their mean variance (Jensen: the L1 error of
Gaussian answers is at most ``sqrt(2/π) q_A sqrt(v_A)``) and ``s_A`` a public stand-in
for the size of its answers over the record count (1 for cells, ``(n+1)/2`` for each
attribute asked prefix ranges). It is convex in the precisions ``1/u_B`` (a norm of
convex functions), and majorisation-minimisation reaches its minimum: each step solves
the weighted sum at the tangent of the square roots in closed form.

**Prefix ranges** (``ranged`` attributes; HDMM's numeric attributes, whose workload
factor is ``P``, the prefix matrix). Measuring an attribute's residual space in
Helmert's rows suits its cells, not its ranges: a prefix range sums up to ``n`` cells and
their noise. Any ``Q = B L`` with ``B`` invertible measures the same space;
:func:`prefix_strategy` takes the ``B`` of least ``tr(P Lᵀ (BᵀB)⁻¹ L Pᵀ)`` among those of
largest column norm 1 (the sensitivity), a convex problem in ``M = BᵀB`` solved
through its dual (a mixture ``λ`` over the columns, whose inner problem has the closed
form ``M = H^{-1/2} (H^{1/2} G H^{1/2})^{1/2} H^{-1/2}``, ``H = L diag(λ) Lᵀ``,
``G = L PᵀP Lᵀ``, computed through a Cholesky factor of ``H`` with one eigendecomposition
a step) until the primal value and the dual bound agree to :data:`PREFIX_TOLERANCE`. On
100 values the ranges' total variance is 0.19 of Helmert's. The plan keeps its form: an
attribute's factor in a query's variance is ``‖P Q⁺‖²_F / n`` where the residual holds
it and ``‖P1‖² / n³`` where it is summed out, and in the sensitivity 1
(:func:`_attribute_terms`). Answers of such residuals are
not orthonormal coordinates, so :func:`residual_subset` does not read them as residuals;
a model's error bars then come from the general least-squares route.
"""

from __future__ import annotations

import functools
import math
import weakref
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from dpgm.domain import Domain
from dpgm.errors import ParameterError
from dpgm.measurement import BLOCK_ENTRIES, KroneckerQuery, Measurement, is_sparse
from dpgm.validation import integer, one_of
from dpgm.workload import prefix_matrix

LOSSES = ("sum", "max", "error")
#: the max-variance plan stops when its value is within this share of the dual bound
MAX_LOSS_TOLERANCE = 1e-6
#: the most steps of the max-variance plan's ascent
MAX_LOSS_STEPS = 5000
#: the prefix-range strategy stops when its value is within this share of the dual bound
PREFIX_TOLERANCE = 1e-6
#: the most steps of the prefix-range strategy's ascent
PREFIX_STEPS = 2000
#: the step of that ascent (exponentiated gradient; 2 converged fastest on 3-200 values)
PREFIX_STEP = 2.0
#: how many sizes' prefix-range strategies are kept (the least recently used dropped)
PREFIX_CACHE_SIZES = 256
_PREFIX_STRATEGIES: dict[int, np.ndarray] = {}
#: the read-only bases this module made, by id (held weakly, so that an id reused after
#: its array is gone is not taken for it): known to be residual bases
_OWN_BASES: weakref.WeakValueDictionary[int, np.ndarray] = weakref.WeakValueDictionary()


def _own(basis: np.ndarray) -> np.ndarray:
    """``basis``, made read-only and remembered as a residual basis of this module's."""
    basis.setflags(write=False)  # shared by every caller of the caches
    _OWN_BASES[id(basis)] = basis
    return basis


@functools.lru_cache(maxsize=256)
def _basis(size: int) -> np.ndarray:
    from scipy.linalg import helmert

    return _own(helmert(size) if size > 1 else np.zeros((0, 1)))


#: dense arrays of size² floats alive at once when an attribute of ``size`` values is
#: measured through its residual basis and estimated (measured: a fit of AIM+RP or
#: ResidualPlanner with one attribute of 1,000 or 2,000 values, ordered or not, peaks at
#: 2.1 to 2.2 size² floats: the basis, and the basis squared for the fit's step size;
#: the estimation holds the basis's Gram matrix as two numbers,
#: :class:`dpgm.measurement.IdentityPlusOnes`; the rest is room to spare)
BASIS_ARRAYS_AT_PEAK = 4
#: the residual bases one size can have at once: Helmert's and the cosine basis with and
#: without a missing value's row (attributes of one size in one basis share it)
BASIS_KINDS = 3
#: size² floats alive at once while the prefix-range strategy of an attribute of
#: ``size`` values is computed and its terms planned (measured: 11 traced, 14 in the
#: process at 300 to 700 values; ``eigh``'s workspace is not traced)
PREFIX_ARRAYS_AT_PEAK = 16


def bases_bytes(sizes: Iterable[int], ranged: Iterable[int] = ()) -> float:
    """The memory the dense residual bases of attributes of ``sizes`` values take when
    they are measured and estimated: each size's bases kept once (up to
    ``BASIS_KINDS`` of them where several attributes have that size), the largest with
    its temporaries; and the prefix-range strategy of the largest of the ``ranged``
    attributes' sizes while it is computed."""
    counts = Counter(int(n) for n in sizes if n > 1)
    if not counts:
        return 0.0
    floats = sum(min(k, BASIS_KINDS) * float(n) ** 2 for n, k in counts.items())
    floats += (BASIS_ARRAYS_AT_PEAK - 1) * float(max(counts)) ** 2
    ranged = [int(n) for n in ranged if n > 1]
    if ranged:
        floats += PREFIX_ARRAYS_AT_PEAK * float(max(ranged)) ** 2
    return 8.0 * floats


def residual_basis(size: int) -> np.ndarray:
    """``L``: ``size - 1`` orthonormal rows orthogonal to the all-ones vector (Helmert's;
    read-only, cached)."""
    return _basis(integer("size", size, least=1))


def _missing_row(size: int, missing: bool) -> bool:
    """Whether an ordered attribute's basis gives its missing value a row of its own (with
    one other value, Helmert's single row is that contrast already)."""
    return bool(missing) and size > 2


@functools.lru_cache(maxsize=256)
def _cosine(size: int, missing: bool) -> np.ndarray:
    from scipy.fft import dct

    values = size - 1 if missing else size
    rows = np.zeros((size - 1, size))
    # DCT-II rows 1…values-1: orthonormal, orthogonal to the all-ones vector, ordered
    # from the slowest variation across the values to the fastest. The transform of the
    # identity, a block of its columns at a time: a whole one holds several n x n arrays
    step = max(1, BLOCK_ENTRIES // values)
    for start in range(0, values, step):
        stop = min(start + step, values)
        unit = np.zeros((values, stop - start))
        unit[np.arange(start, stop), np.arange(stop - start)] = 1.0
        rows[: values - 1, start:stop] = dct(unit, norm="ortho", axis=0)[1:]
    if missing:  # the missing value against the rest, orthogonal to every cosine row
        contrast = np.full(size, -1.0 / values)
        contrast[-1] = 1.0
        rows[-1] = contrast / np.linalg.norm(contrast)
    return _own(rows)


def ordered_basis(size: int, missing: bool = False) -> np.ndarray:
    """A residual basis for an attribute whose values are ordered (numeric bins): the
    cosine rows of increasing frequency, so that a residual that varies smoothly over the
    values has its weight in its first rows; ``missing``: the last value is a missing
    value outside the order, with a row of its own, the last (read-only, cached).

    Any basis of orthonormal rows orthogonal to the all-ones vector has the same
    sensitivity and the same variances as :func:`residual_basis`; only the coordinates of
    the residual change."""
    size = integer("size", size, least=1)
    if size == 1 or (missing and not _missing_row(size, missing)):
        return residual_basis(size)
    return _cosine(size, _missing_row(size, missing))


def check_residual_basis(attr: str, basis: np.ndarray, size: int) -> None:
    """Refuse ``basis`` for an attribute of ``size`` values unless it has ``size - 1``
    orthonormal rows orthogonal to the all-ones vector (what the sensitivity assumes)."""
    basis = np.asarray(basis, dtype=np.float64)
    if basis.shape != (size - 1, size) or (size > 1 and not _is_basis(basis)):
        raise ParameterError(f"the residual basis of {attr!r} must have {size - 1} "
                             f"orthonormal rows of {size} entries orthogonal to the "
                             "all-ones vector")


def frequency_bands(size: int, missing: bool = False) -> np.ndarray:
    """For each row of :func:`ordered_basis`, its band: rows of frequency ``k`` in
    ``[2^b, 2^(b+1))`` share band ``b``; the missing value's row has a band of its own."""
    rows = integer("size", size, least=1) - 1
    if _missing_row(size, missing):
        return np.append(np.log2(np.arange(1, rows)).astype(np.int64), rows.bit_length() + 1)
    return np.log2(np.arange(1, rows + 1)).astype(np.int64)


def prefix_strategy(size: int) -> np.ndarray:
    """How the residual of an attribute whose workload asks prefix ranges is measured:
    ``size - 1`` rows spanning the residual space (orthogonal to the all-ones vector), of
    largest column norm 1, whose answers give the prefix ranges the least total variance
    for their sensitivity (see the module docstring; read-only, cached)."""
    size = integer("size", size, least=1)
    # An explicit cache rather than lru_cache so that prefix_strategy_cached can say
    # whether a call will return at once (a planner announces only real work).
    strategy = _PREFIX_STRATEGIES.pop(size, None)
    if strategy is None:
        strategy = _prefix_strategy(size)
    _PREFIX_STRATEGIES[size] = strategy  # the most recently used last
    while len(_PREFIX_STRATEGIES) > PREFIX_CACHE_SIZES:
        del _PREFIX_STRATEGIES[next(iter(_PREFIX_STRATEGIES))]
    return strategy


def prefix_strategy_cached(size: int) -> bool:
    """Whether :func:`prefix_strategy` holds the strategy for ``size`` values already
    (it then returns at once)."""
    return integer("size", size, least=1) in _PREFIX_STRATEGIES


def _sqrt_psd(matrix: np.ndarray) -> np.ndarray:
    values, vectors = np.linalg.eigh((matrix + matrix.T) / 2.0)
    return (vectors * np.sqrt(np.clip(values, 0.0, None))) @ vectors.T


def _prefix_strategy(size: int) -> np.ndarray:
    from scipy.linalg import cholesky, solve_triangular

    basis = residual_basis(size)
    if size < 3:  # at most one residual row: nothing to choose but its scale
        strategy = basis * math.sqrt(size / (size - 1)) if size == 2 else basis
        strategy.setflags(write=False)
        return strategy
    queries = prefix_matrix(size) @ basis.T
    gram = queries.T @ queries  # the prefix ranges' Gram matrix in the residual's rows
    weights = np.full(size, 1.0 / size)  # the dual's mixture over the columns
    best, best_value, bound = None, math.inf, 0.0
    for _ in range(PREFIX_STEPS):
        # the inner optimum M = H⁻¹ # G (the matrix geometric mean) through any factor
        # H = CCᵀ: M = C⁻ᵀ (CᵀGC)^½ C⁻¹, one eigendecomposition a step; then
        # tr(H M) = tr(G M⁻¹) = Σ √eig(CᵀGC) =: s, the dual bound is s² and M scaled to
        # column norm 1 (by c_max) has value c_max·s
        factor = cholesky((basis * weights) @ basis.T, lower=True)
        values, vectors = np.linalg.eigh(factor.T @ gram @ factor)
        roots = np.sqrt(np.clip(values, 0.0, None))
        scaled = solve_triangular(factor, vectors, trans="T", lower=True)
        second = (scaled * roots) @ scaled.T
        columns = (basis * (second @ basis)).sum(axis=0)
        largest = float(columns.max())
        trace = float(roots.sum())
        bound = max(bound, trace**2)
        value = largest * trace
        if value < best_value:
            best, best_value = second / largest, value  # largest column norm 1
        if best_value - bound <= PREFIX_TOLERANCE * best_value:
            break
        weights = weights * np.exp(PREFIX_STEP * (columns / largest - 1.0))
        weights /= weights.sum()
    strategy = _sqrt_psd(best) @ basis
    strategy.setflags(write=False)
    return strategy


@functools.lru_cache(maxsize=1024)
def _attribute_terms(size: int, ranged: bool) -> tuple[float, float, float]:
    """An attribute's factors in the mean variance of a workload query reconstructed from
    a residual whose subset holds it (``kept``) or sums it out (``dropped``), and in the
    residual's sensitivity (``weight``): prefix ranges where ``ranged``, else cells."""
    if not ranged or size == 1:
        return (size - 1) / size, 1.0 / size**2, (size - 1) / size
    strategy, queries = prefix_strategy(size), prefix_matrix(size)
    kept = float(((queries @ np.linalg.pinv(strategy)) ** 2).sum()) / size
    dropped = float((queries.sum(axis=1) ** 2).sum()) / size**3
    return kept, dropped, float((strategy**2).sum(axis=0).max())


def residual_query(sizes: Sequence[int]) -> KroneckerQuery:
    """``⊗ Lᵢ``: the residual of a clique whose attributes have ``sizes`` values."""
    return KroneckerQuery([residual_basis(n) for n in sizes])


def _is_basis(factor: np.ndarray) -> bool:
    rows, size = factor.shape
    if rows != size - 1 or rows == 0:
        return False
    if _OWN_BASES.get(id(factor)) is factor:
        # one of this module's bases, as measurements carry them: the check below costs
        # rows² · size operations and several rows² arrays (32 MB each at 2,000 values)
        return True
    return (np.allclose(factor @ factor.T, np.eye(rows), atol=1e-9)
            and np.allclose(factor.sum(axis=1), 0.0, atol=1e-9))


def _is_sum(factor: np.ndarray) -> bool:
    return factor.shape[0] == 1 and bool(np.all(factor == 1.0))


def query_factors(measurement: Measurement) -> list | None:
    """The per-attribute factors of ``measurement``'s query, in its clique's order: a
    Kronecker query's factors, or a one-attribute dense query itself; None for any other
    query (or none)."""
    query = measurement.query
    if isinstance(query, KroneckerQuery):
        return list(query.factors)
    if query is not None and not is_sparse(query) and len(measurement.clique) == 1:
        return [np.asarray(query)]
    return None


def residual_subset(measurement: Measurement) -> tuple[str, ...] | None:
    """The subset ``B`` whose residual ``measurement`` answers with independent noise of one
    variance, or None where it is not such a measurement.

    Each factor of its (Kronecker, or one-attribute dense) query is either a residual
    basis (the attribute is in ``B``) or the all-ones row (it is summed out), and its
    noise has one standard deviation.
    """
    factors = query_factors(measurement)
    if factors is None or np.ndim(measurement.std) != 0:
        return None
    subset = []
    for attr, factor in zip(measurement.clique, factors, strict=True):
        if _is_basis(factor):
            subset.append(attr)
        elif not _is_sum(factor):
            return None
    return tuple(subset)


def residual_variances(measurements: Iterable[Measurement]
                       ) -> dict[frozenset[str], float] | None:
    """The variance of each measured residual's entries, the measurements of one residual
    combined by inverse variance; None unless every measurement answers a residual."""
    precision: dict[frozenset[str], float] = {}
    for m in measurements:
        subset = residual_subset(m)
        if subset is None:
            return None
        key = frozenset(subset)
        precision[key] = precision.get(key, 0.0) + 1.0 / float(m.std) ** 2
    return {key: 1.0 / p for key, p in precision.items()}


def marginal_variance(domain: Domain, attrs: Sequence[str],
                      variances: Mapping[frozenset[str], float],
                      ranged: Iterable[str] = ()) -> float | None:
    """The variance of every cell of the marginal on ``attrs`` reconstructed from residuals
    of the given entry variances (by subset): ``Σ_{B⊆A} a_{A,B} u_B``. None where a
    subset's residual (one with cells) was not measured. With ``ranged`` attributes
    (measured with :func:`prefix_strategy`): the mean variance of the marginal's prefix
    ranges along them (its cells along the others)."""
    ranged = frozenset(ranged)
    attrs = domain.check(attrs)
    total = 0.0
    for k in range(len(attrs) + 1):
        for subset in combinations(attrs, k):
            if any(domain[a] == 1 for a in subset):
                continue  # a one-valued attribute has no residual: nothing to add
            u = variances.get(frozenset(subset))
            if u is None:
                return None
            total += u * math.prod(
                _attribute_terms(domain[a], a in ranged)[0 if a in subset else 1]
                for a in attrs)
    return total


def reconstruct(domain: Domain, attrs: Sequence[str],
                answers: Mapping[frozenset[str], np.ndarray],
                bases: Mapping[str, np.ndarray] | None = None) -> np.ndarray:
    """The marginal table on ``attrs`` (axes in that order) from residual answers by subset
    (each flattened with its attributes in ``domain`` order): the sum above. ``bases``:
    the residual basis each attribute was measured in where not Helmert's (such as
    :func:`ordered_basis`; orthonormal rows, so that its transpose maps back)."""
    attrs = domain.check(attrs)
    bases = {} if bases is None else bases
    table = np.zeros(domain.project(attrs).shape)
    for k in range(len(attrs) + 1):
        for subset in combinations(attrs, k):
            if any(domain[a] == 1 for a in subset):
                continue
            key = frozenset(subset)
            if key not in answers:
                raise ParameterError(f"no residual of {sorted(subset)} to reconstruct "
                                     f"the marginal on {list(attrs)} from")
            ordered = [a for a in domain.attrs if a in key]
            # z_B as a table over B (domain order), then moved into A's order
            z = np.asarray(answers[key], dtype=np.float64).reshape(
                [domain[a] - 1 for a in ordered])
            z = z.transpose([ordered.index(a) for a in attrs if a in key])
            if not attrs:  # the record count itself
                table += z.reshape(())
                continue
            # Helmert's basis only for the attributes measured in it (an ordered one's
            # would be an unused n x n array in the cache)
            up = KroneckerQuery([(bases[a] if a in bases else residual_basis(domain[a])).T
                                 if a in key else np.full((domain[a], 1), 1.0 / domain[a])
                                 for a in attrs])
            table += (up @ z.ravel()).reshape(table.shape)
    return table


@dataclass
class ResidualPlan:
    """The residuals to measure and their noise: ``subsets[k]`` (attribute names in domain
    order; ``()`` is the record count) answered with entry variance ``variances[k]``,
    spending ``rhos[k]`` each (``rho`` in all), for the ``workload`` marginals under
    ``loss``; ``value`` is the loss reached. The ``ranged`` attributes are asked prefix
    ranges: their residuals are measured with :func:`prefix_strategy` (:meth:`factor`),
    and a marginal's variance is that of its prefix ranges along them."""

    domain: Domain
    workload: list[tuple[str, ...]]
    loss: str
    rho: float
    subsets: list[tuple[str, ...]]
    variances: np.ndarray
    value: float
    ranged: frozenset[str] = frozenset()

    @property
    def rhos(self) -> np.ndarray:
        """What each residual's measurement costs (ρ-zCDP), summing to ``rho``."""
        return np.array([_privacy_weight(self.domain, s, self.ranged)
                         for s in self.subsets]) / (2.0 * self.variances)

    def factor(self, attr: str) -> np.ndarray:
        """The matrix that measures ``attr``'s part of a residual holding it."""
        size = self.domain[attr]
        return prefix_strategy(size) if attr in self.ranged else residual_basis(size)

    def by_subset(self) -> dict[frozenset[str], float]:
        return {frozenset(s): float(u) for s, u in zip(self.subsets, self.variances)}

    def variance(self, attrs: Sequence[str]) -> float | None:
        """The variance of each cell of the marginal on ``attrs`` reconstructed from the
        plan's residuals (None where they do not hold it); along :attr:`ranged`
        attributes, the mean variance of its prefix ranges."""
        return marginal_variance(self.domain, attrs, self.by_subset(), self.ranged)

    def standard_error(self, attrs: Sequence[str]) -> float | None:
        """The standard error of each cell of the marginal on ``attrs`` (in counts; the
        root of :meth:`variance`)."""
        variance = self.variance(attrs)
        return None if variance is None else math.sqrt(variance)


def _privacy_weight(domain: Domain, subset: Sequence[str],
                    ranged: frozenset[str] = frozenset()) -> float:
    """``p_B``: the squared L2 sensitivity of the residual of ``subset`` (measured with
    :func:`prefix_strategy` on the ``ranged`` attributes)."""
    return math.prod(_attribute_terms(domain[a], a in ranged)[2] for a in subset)


def _closure(domain: Domain, cliques: Sequence[tuple[str, ...]],
             ranged: frozenset[str] = frozenset()):
    """Every subset with cells of every clique, and the coefficient ``a_{A,B}`` of each
    (clique, subset) pair: vectorised per clique size (a workload of all 3-way marginals
    of 100 attributes has 1.3 million pairs)."""
    index = {a: i for i, a in enumerate(domain.attrs)}
    terms = np.array([_attribute_terms(domain[a], a in ranged) for a in domain.attrs])
    width = max(len(c) for c in cliques)
    rows, owners, coefficients = [], [], []
    by_length: dict[int, list[int]] = {}
    for k, clique in enumerate(cliques):
        by_length.setdefault(len(clique), []).append(k)
    for length, members in by_length.items():
        attrs = np.sort(np.array([[index[a] for a in cliques[k]] for k in members]), axis=1)
        kept, dropped = terms[attrs, 0], terms[attrs, 1]
        for mask in range(1 << length):
            inside = np.array([(mask >> j) & 1 for j in range(length)], dtype=bool)
            coefficient = np.prod(np.where(inside, kept, dropped), axis=1)
            live = coefficient > 0  # a subset with a one-valued attribute has no cells
            padded = np.full((int(live.sum()), width), -1, dtype=np.int64)
            padded[:, : int(inside.sum())] = attrs[live][:, inside]
            rows.append(padded)
            owners.append(np.asarray(members)[live])
            coefficients.append(coefficient[live])
    subsets, pair_subset = np.unique(np.concatenate(rows), axis=0, return_inverse=True)
    names = [tuple(domain.attrs[i] for i in row if i >= 0) for row in subsets]
    return names, np.concatenate(owners), pair_subset.ravel(), np.concatenate(coefficients)


def plan_residuals(domain: Domain, workload: Iterable[Sequence[str]], rho: float,
                   loss: str = "sum", ranged: Iterable[str] = ()) -> ResidualPlan:
    """The optimal Gaussian plan for the marginals on ``workload`` under ρ-zCDP (see the
    module docstring): which residuals to measure, with which variance. ``ranged``: the
    attributes whose workload asks prefix ranges instead of cells."""
    one_of("loss", loss, LOSSES)
    ranged = frozenset(domain.check(ranged))
    if not rho > 0 or not math.isfinite(rho):
        raise ParameterError(f"rho must be positive and finite, got {rho}")
    cliques = list(dict.fromkeys(domain.check(c) for c in workload))
    if not cliques:
        raise ParameterError("the workload has no marginals")
    if () in cliques:
        raise ParameterError("a workload marginal names at least one attribute (every plan "
                             "measures the record count, the empty marginal, already)")
    ranged = frozenset(a for a in ranged if any(a in c for c in cliques))
    names, owner, subset, coefficient = _closure(domain, cliques, ranged)
    p = np.array([_privacy_weight(domain, s, ranged) for s in names])
    cells = np.array([domain.size(c) for c in cliques], dtype=np.float64)  # queries each

    def solve(weights: np.ndarray) -> np.ndarray:
        """The variances of least ``Σ_A weights_A Var_A`` for the budget (closed form)."""
        c = np.bincount(subset, weights=weights[owner] * coefficient, minlength=len(names))
        root = np.sqrt(p * c)
        return np.sqrt(p / c) * root.sum() / (2.0 * rho)

    def cell_variances(u: np.ndarray) -> np.ndarray:
        return np.bincount(owner, weights=coefficient * u[subset], minlength=len(cliques))

    if loss == "sum":
        u = solve(cells)
        value = float(np.dot(cells, cell_variances(u)))
    elif loss == "error":
        # each marginal's answers sum to the record count times this public stand-in
        # (a prefix range holds half the values on average)
        scale = np.array([math.prod((domain[a] + 1) / 2.0 for a in c if a in ranged)
                          for c in cliques])
        u, value = _least_error(solve, cell_variances, cells / scale)
    else:
        u, value = _minimax(solve, cell_variances, len(cliques))
    return ResidualPlan(domain, cliques, loss, float(rho), names, u, value, ranged)


def _least_error(solve, cell_variances, share: np.ndarray) -> tuple[np.ndarray, float]:
    """The variances of least ``Σ_A share_A sqrt(Var_A)`` (convex in the precisions):
    majorisation-minimisation, each step the weighted sum of variances at the tangent
    of the square roots (closed form), until a step gains less than
    :data:`MAX_LOSS_TOLERANCE` of the value."""
    u = solve(share)
    value = float(np.dot(share, np.sqrt(cell_variances(u))))
    for _ in range(MAX_LOSS_STEPS):
        step = solve(share / np.sqrt(cell_variances(u)))
        reached = float(np.dot(share, np.sqrt(cell_variances(step))))
        if reached >= value:
            break
        gain = value - reached
        u, value = step, reached
        if gain <= MAX_LOSS_TOLERANCE * value:
            break
    return u, value


def _minimax(solve, cell_variances, count: int) -> tuple[np.ndarray, float]:
    """The variances of least largest cell variance: exponentiated-gradient ascent on the
    dual's mixture ``λ`` (see the module docstring), the best primal point kept."""
    weights = np.full(count, 1.0 / count)
    best_u, best = None, math.inf
    step = 1.0
    previous = -math.inf
    for _ in range(MAX_LOSS_STEPS):
        u = solve(weights)
        variances = cell_variances(u)
        dual = float(np.dot(weights, variances))  # the weighted optimum: a lower bound
        largest = float(variances.max())
        if largest < best:
            best_u, best = u, largest
        if best - dual <= MAX_LOSS_TOLERANCE * best:
            break
        if dual < previous:  # overshot: a smaller step
            step /= 2.0
        previous = dual
        weights = weights * np.exp(step * (variances / largest - 1.0))
        weights /= weights.sum()
    return best_u, best
