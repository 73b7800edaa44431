"""A model that is a set of synthetic records: their empirical distribution.

:func:`dpgm.estimation.records.fit_records` estimates records, not a graphical model:
records moved until their pair counts follow noisy (denoised) pair tables, where a model
of every pair would need a junction tree too large to estimate. :class:`RecordsModel`
answers marginals and conditional queries from those records, scaled to the noisy record
count, and samples by dealing them out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from dpgm.dataset import Dataset
from dpgm.domain import Domain
from dpgm.errors import DataError
from dpgm.models.base import ModelBase, conditioned
from dpgm.validation import number


class RecordsModel(ModelBase):
    """The empirical distribution of ``records`` (codes over ``domain``, one column per
    attribute in its order), standing for ``total`` records (default: as many as given)."""

    def __init__(self, domain: Domain, records, total: float | None = None):
        self._data = Dataset(records, domain)  # checks every code once; counts marginals
        self.domain = domain
        self.total = number("total", len(self.records) if total is None else total)

    @property
    def records(self) -> np.ndarray:
        """The fitted records (codes, one column per attribute in the domain's order)."""
        return self._data.records

    def marginal(self, attrs: Iterable[str], given: Mapping[str, object] | None = None,
                 *, with_error: bool = False) -> np.ndarray:
        """Counts of the marginal on ``attrs`` (axes in the order given) among the records,
        scaled to :attr:`total`; conditioned on ``given`` (labels or raw values)."""
        if with_error:
            return self.with_error(attrs, given)
        attrs = self.domain.check(attrs)
        evidence = self.domain.evidence(self._given(given)) if given else {}
        extra = tuple(a for a in evidence if a not in attrs)
        counts = self._data.marginal(attrs + extra)
        if not evidence:
            return counts * self._scale()
        return conditioned(counts, attrs + extra, evidence, len(attrs), self.total)

    def _scale(self) -> float:
        return self.total / len(self.records) if len(self.records) else 0.0

    def _matching(self, given: Mapping[str, object] | None) -> np.ndarray:
        """The records that agree with ``given`` (labels or codes)."""
        keep = np.ones(len(self.records), dtype=bool)
        for attr, codes in (self.domain.evidence(given) if given else {}).items():
            keep &= np.isin(self.records[:, self.domain.axes([attr])[0]], codes)
        if not keep.any():
            raise DataError(f"the evidence {dict(given or {})} has probability zero under "
                            "the model")
        return self.records[keep]

    def _records(self, n: int, gen: np.random.Generator,
                 given: Mapping[str, object] | None) -> Dataset:
        """``n`` of the records that agree with ``given``, dealt out: each as nearly ``n/m``
        times as whole copies and a draw without replacement allow, in random order."""
        pool = self._matching(given) if n else self.records[:0]
        m = len(pool)
        if m == 0:
            return Dataset(np.zeros((0, len(self.domain)), dtype=np.int64), self.domain)
        whole, rest = divmod(n, m)
        rows = np.concatenate([np.tile(np.arange(m), whole),
                               gen.choice(m, rest, replace=False)])
        return Dataset(pool[gen.permutation(rows)], self.domain)

    def _most_probable(self, given: Mapping[str, object] | None) -> dict[str, int]:
        """The most frequent record among those that agree with ``given``."""
        rows, counts = np.unique(self._matching(given), axis=0, return_counts=True)
        best = rows[int(np.argmax(counts))]
        return {a: int(c) for a, c in zip(self.domain.attrs, best)}

    def _structure(self) -> dict:
        return {"fitted records": len(self.records)}

    def __repr__(self) -> str:
        return f"RecordsModel({len(self.records)} records, total={self.total:g})"
