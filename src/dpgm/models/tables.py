"""Count tables that the mechanisms' original estimators produce instead of a model.

MWEM's multiplicative weights keep full tables over groups of attributes (one group for
the full table, several independent ones for factored MW); HDMM's least squares keeps a
table per measured clique ("local", not consistent with one another) or one on the whole
domain ("global"). :class:`TableModel` answers marginals from them like a model does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from dpgm.dataset import Dataset
from dpgm.domain import Domain
from dpgm.errors import DpgmError, ParameterError
from dpgm.inference.sampling import draw_records
from dpgm.models.base import ModelBase, conditioned
from dpgm.validation import number


class TableModel(ModelBase):
    """Count tables on cliques of ``domain``, summing to ``total`` each.

    With ``independent=True`` the cliques are disjoint and the distribution is their
    product, uniform on attributes no table covers; otherwise a marginal must lie inside
    one clique and is read from the smallest such table.
    """

    def __init__(
        self,
        domain: Domain,
        tables: Mapping[Iterable[str], np.ndarray],
        total: float,
        independent: bool = False,
    ):
        self.domain = domain
        self.total = number("total", total)  # noisy: may be below 0
        self.independent = independent
        self.tables: dict[tuple[str, ...], np.ndarray] = {}
        for clique, table in tables.items():
            clique = domain.check(clique)
            table = np.asarray(table, dtype=np.float64)
            if table.shape != domain.project(clique).shape:
                raise DpgmError(f"table for {clique} has shape {table.shape}")
            if not np.all(np.isfinite(table)):
                raise DpgmError(f"the table for {clique} holds a value that is not finite")
            self.tables[clique] = table
        if independent:
            covered = [a for c in self.tables for a in c]
            if len(covered) != len(set(covered)):
                raise DpgmError("independent tables must be on disjoint cliques")

    @property
    def cliques(self) -> list[tuple[str, ...]]:
        return list(self.tables)

    def _from_table(self, clique: tuple[str, ...], attrs: tuple[str, ...]) -> np.ndarray:
        table = self.tables[clique]
        summed = tuple(i for i, a in enumerate(clique) if a not in attrs)
        kept = [a for a in clique if a in attrs]
        reduced = table.sum(axis=summed) if summed else table
        return np.transpose(reduced, [kept.index(a) for a in attrs])

    def marginal(self, attrs: Iterable[str], given: Mapping[str, object] | None = None,
                 *, with_error: bool = False) -> np.ndarray:
        """Counts of the marginal on ``attrs`` (axes in the order given), conditioned on
        ``given`` where one table holds the attributes and the evidence together (or the
        tables are independent)."""
        if with_error:
            return self.with_error(attrs, given)
        attrs = self.domain.check(attrs)
        evidence = self.domain.evidence(self._given(given)) if given else None
        if not evidence:
            return self._counts(attrs)
        extra = tuple(a for a in evidence if a not in attrs)
        return conditioned(self._counts(attrs + extra), attrs + extra, evidence, len(attrs),
                           self.total)

    def _counts(self, attrs: tuple[str, ...]) -> np.ndarray:
        holders = [c for c in self.tables if set(attrs) <= set(c)]
        if holders:
            return self._from_table(min(holders, key=self.domain.size), attrs)
        if not self.independent:
            raise DpgmError(
                f"the marginal on {attrs} is not inside one estimated table; tables: {self.cliques}"
            )
        # a product of independent groups: multiply the groups' normalised marginals
        result = np.ones(())
        names: list[str] = []
        for clique in self.tables:
            part = tuple(a for a in attrs if a in clique)
            if part:
                result = np.multiply.outer(result, self._from_table(clique, part) / self.total)
                names.extend(part)
        for a in attrs:
            if a not in names:
                result = np.multiply.outer(result, np.full(self.domain[a], 1.0 / self.domain[a]))
                names.append(a)
        return np.transpose(result, [names.index(a) for a in attrs]) * self.total

    def _structure(self) -> dict:
        return {"cliques": [list(c) for c in self.cliques], "independent": self.independent}

    def _most_probable(self, given: Mapping[str, object] | None) -> dict[str, int]:
        """Independent tables: each table's most probable cell (given the evidence on its
        attributes); the attributes no table covers are uniform (code 0 is as likely)."""
        if not self.independent and len(self.tables) > 1:
            return super()._most_probable(given)
        codes = dict.fromkeys(self.domain.attrs, 0)
        for clique in self.tables:
            table = self.marginal(clique, given={a: v for a, v in (given or {}).items()
                                                 if a in clique} or None)
            codes.update(zip(clique, (int(c) for c in
                                      np.unravel_index(int(np.argmax(table)), table.shape))))
        return codes

    def _records(self, n: int, gen: np.random.Generator,
                 given: Mapping[str, object] | None) -> Dataset:
        """``n`` records drawn from independent tables.

        One table (a full-table estimate) is a distribution by itself; several tables that
        overlap are not, and cannot be sampled. Least squares can estimate a negative
        total from noisy answers; its default sample is then empty.
        """
        if given:
            raise ParameterError(
                "given needs a graphical model; this estimator released tables: "
                "use estimator='pgm'")
        if not self.independent and len(self.tables) > 1:
            raise DpgmError(
                "these local tables are not one distribution and cannot be sampled; "
                "use the Private-PGM estimator for synthetic data"
            )
        # the one row sampler: each table drawn on its own (negative least-squares counts
        # clipped; a table with no mass, and an attribute in no table, uniform)
        covered = {a for clique in self.tables for a in clique}
        steps = [((), clique, np.clip(table, 0.0, None)) for clique, table in self.tables.items()]
        steps += [((), (a,), np.ones(self.domain[a])) for a in self.domain if a not in covered]
        records = draw_records(self.domain, steps, n, gen)
        return Dataset(records, self.domain)

    def __repr__(self) -> str:
        kind = "independent" if self.independent else "local"
        return f"TableModel({len(self.tables)} {kind} tables, total={self.total:g})"
