"""Multiplicative weights on a full count table (MWEM's estimator; Private-PGM Sec. 4, App. E.2).

The table ``p`` covers every cell of a (sub)domain and sums to the number of records
``m``. For measurements ``y ≈ Q p`` the update of Hardt, Ligett & McSherry (2012), Private-PGM
eq. (2), is

    p ← p ⊙ exp(−Qᵀ(Q p − y) / 2m) / Z,

with ``Z`` restoring the total ``m``. It is entropic mirror descent on the L2 loss
``½‖Q p − y‖²`` with step ``1/2m`` (App. E.2). Two schedules:

* ``sequential=False`` (App. E.2's last equation): ``Q`` stacks all measurements and one
  iteration is one update with all of them at once;
* ``sequential=True`` (Hardt et al.): one iteration is a pass over the measurements in
  turn, each applying its own update (all rows of one measurement together).

The noise scale of a measurement plays no part, as in the original.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpgm.domain import Domain
from dpgm.errors import DpgmError
from dpgm.measurement import Measurement
from dpgm.validation import integer, positive


class _Projector:
    """Moves between the full table and one measurement's answers, without copying the query.

    ``answer(table)`` is ``Q vec(μ_C)`` with ``μ_C`` the table's marginal on the clique (in
    the clique's order); ``back(r)`` is ``Qᵀ r`` laid out to broadcast against the table.
    """

    def __init__(self, domain: Domain, m: Measurement):
        axes = [domain.attrs.index(a) for a in m.clique]
        self.kept = tuple(sorted(axes))
        self.summed = tuple(i for i in range(len(domain)) if i not in axes)
        # the marginal comes out in domain order; this puts it in the clique's order
        self.to_clique = [self.kept.index(i) for i in axes]
        self.to_domain = list(np.argsort(self.to_clique))
        self.clique_shape = tuple(domain.shape[i] for i in axes)
        self.broadcast = tuple(domain.shape[i] if i in axes else 1 for i in range(len(domain)))
        self.query = m.query
        self.values = m.values

    def answer(self, table: np.ndarray) -> np.ndarray:
        marginal = table.sum(axis=self.summed) if self.summed else table
        flat = np.transpose(marginal, self.to_clique).ravel()
        return flat if self.query is None else np.asarray(self.query @ flat).ravel()

    def back(self, residual: np.ndarray) -> np.ndarray:
        cells = residual if self.query is None else np.asarray(self.query.T @ residual).ravel()
        return np.transpose(cells.reshape(self.clique_shape), self.to_domain).reshape(
            self.broadcast
        )


def _apply(table: np.ndarray, log_update: np.ndarray, total: float) -> None:
    """``table ← table ⊙ exp(log_update)``, renormalised to ``total``; both in place."""
    # the shift cancels in the normalisation and keeps exp from overflowing; in place so
    # that a full-size update costs no third copy of the table
    log_update -= log_update.max()
    table *= np.exp(log_update, out=log_update)
    mass = table.sum()
    if not np.isfinite(mass) or mass <= 0:
        raise DpgmError("multiplicative weights lost all mass (every cell underflowed to 0)")
    table *= total / mass


def multiplicative_weights(
    domain: Domain,
    measurements: Sequence[Measurement],
    total: float,
    iters: int = 1,
    *,
    table: np.ndarray | None = None,
    sequential: bool = False,
) -> np.ndarray:
    """The full table on ``domain`` after ``iters`` multiplicative-weights iterations.

    Starts from ``table`` (updated in place when it is a float64 array of the right
    shape) or the uniform table summing to ``total``. Each measurement's clique must lie in
    ``domain``; its query may be the identity, a dense or sparse matrix or a
    :class:`~dpgm.measurement.KroneckerQuery`. See the module docstring for
    ``sequential``.
    """
    iters = integer("iters", iters, least=0)
    total = positive("total", total)
    for m in measurements:
        m.validate(domain)
    if table is None:
        cells = float(np.prod([float(s) for s in domain.shape]))
        table = np.full(domain.shape, total / cells)
    else:
        if np.shape(table) != domain.shape:
            raise DpgmError(f"table has shape {np.shape(table)}, the domain {domain.shape}")
        if not (isinstance(table, np.ndarray) and table.dtype == np.float64):
            table = np.array(table, dtype=np.float64)
    projectors = [_Projector(domain, m) for m in measurements]
    if not projectors:
        return table
    step = 1.0 / (2.0 * total)
    for _ in range(int(iters)):
        if sequential or len(projectors) == 1:
            for p in projectors:
                residual = p.answer(table) - p.values
                _apply(table, -step * p.back(residual), total)
        else:
            # every gradient is taken at the same table, then one update (App. E.2)
            gradient = np.zeros(domain.shape)
            for p in projectors:
                gradient += p.back(p.answer(table) - p.values)
            gradient *= -step
            _apply(table, gradient, total)
    return table
