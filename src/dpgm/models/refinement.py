"""Numbers at two resolutions: a fine numeric attribute held as its coarse bin and its
place inside the bin.

A numeric column whose schema says ``"refine": F`` has K public bins, each cut into F
equal sub-bins: K·F fine cells, code c = k·F + f. A :class:`Refinement` holds such an
attribute X as two attributes of a *split* domain: ``X`` (the coarse code k, K values)
and ``X (fine)`` (the place f inside the bin, F values); every other attribute is kept
as it is. Mechanisms then measure marginals of the split domain: the pairs and triples
that involve X at its coarse level (K cells per attribute), and its one-way distribution
at the fine level (the pair ``(X, X (fine))``, K·F cells). Each is an ordinary marginal
of the split records: one record changes one cell by one, L2 sensitivity 1, the same as
any marginal, so the accounting of the mechanism is unchanged. The model is estimated on
the split domain; a :class:`RefinedModel` answers on the fine domain (a fine cell is the
pair of its digits), and the schema decodes a value inside its fine cell.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from dpgm.constraints import Forbidden
from dpgm.dataset import CountingSource, Dataset, RecodedCounts
from dpgm.domain import Domain
from dpgm.errors import DomainError, DpgmError
from dpgm.models.base import ModelBase, conditioned

#: the name of an attribute's fine digit in the split domain
FINE = "{} (fine)"


@dataclass(frozen=True)
class Refinement:
    """The fine ``domain``, and for each refined attribute its number F of sub-bins per
    bin. A refined attribute of K·F + e values has K bins of F fine cells, then e codes of
    their own (a nullable column's missing code): in the split domain its coarse digit
    takes K + e values, and the fine digit of an own code is 0."""

    domain: Domain
    factors: Mapping[str, int]

    def __post_init__(self) -> None:
        for attr, factor in self.factors.items():
            self.domain.check([attr])
            if factor < 2 or self.domain[attr] // factor < 1:
                raise DomainError(f"{attr!r} has {self.domain[attr]} values: it cannot be "
                                  f"refined {factor} times")
            if FINE.format(attr) in self.domain:
                raise DomainError(f"the domain already has an attribute {FINE.format(attr)!r}")

    def sizes(self, attr: str) -> tuple[int, int, int]:
        """(K, F, e) of a refined attribute: bins, sub-bins per bin, codes of their own."""
        factor = self.factors[attr]
        bins, extra = divmod(self.domain[attr], factor)
        return bins, factor, extra

    @property
    def split(self) -> Domain:
        """The split domain: each refined attribute followed by its fine digit."""
        attrs, sizes = [], []
        for attr in self.domain.attrs:
            if attr not in self.factors:
                attrs.append(attr)
                sizes.append(self.domain[attr])
                continue
            bins, factor, extra = self.sizes(attr)
            attrs += [attr, FINE.format(attr)]
            sizes += [bins + extra, factor]
        return Domain(attrs, sizes)

    @property
    def coarse(self) -> Domain:
        """The split domain without the fine digits: every attribute at its coarse level."""
        split = self.split
        return split.project([a for a in split.attrs if not _is_fine(a)])

    def forbidden(self, zeros: Sequence[Forbidden]) -> list[Forbidden]:
        """Structural zeros of the fine domain restated on the split domain."""
        return [Forbidden(self.digits(z.attrs), self.divided(z.attrs, z.mask) > 0)
                for z in zeros]

    def digits(self, attrs: Iterable[str]) -> tuple[str, ...]:
        """The split attributes that hold ``attrs`` (a refined one: both its digits)."""
        out: list[str] = []
        for attr in attrs:
            out.append(attr)
            if attr in self.factors:
                out.append(FINE.format(attr))
        return tuple(out)

    def default_workload(self, cliques: Iterable[Sequence[str]]) -> list[tuple[str, ...]]:
        """A fine-domain workload restated on the split domain: each clique at its
        coarse level, and each refined attribute's one-way at its fine level."""
        out: dict[tuple[str, ...], None] = {tuple(c): None for c in cliques}
        for attr in self.domain.attrs:
            if attr in self.factors:
                out[(attr, FINE.format(attr))] = None
        return list(out)

    def workload(self, cliques: Iterable[Sequence[str]]) -> list[tuple[str, ...]]:
        """A given fine-domain workload on the split domain: each clique with every digit
        of its refined attributes (a mechanism chooses among its subsets)."""
        return list(dict.fromkeys(self.digits(c) for c in cliques))

    def split_codes(self, records: np.ndarray) -> np.ndarray:
        """Records of fine codes as records of the split domain."""
        columns = []
        for k, attr in enumerate(self.domain.attrs):
            codes = records[:, k]
            if attr not in self.factors:
                columns.append(codes)
                continue
            bins, factor, _ = self.sizes(attr)
            binned = codes < bins * factor
            columns.append(np.where(binned, codes // factor, codes - bins * (factor - 1)))
            columns.append(np.where(binned, codes % factor, 0))
        return np.column_stack(columns) if columns else np.zeros((len(records), 0), np.int64)

    def join_codes(self, records: np.ndarray) -> np.ndarray:
        """Records of the split domain as records of fine codes (an own code's fine digit
        is ignored)."""
        columns, k = [], 0
        for attr in self.domain.attrs:
            if attr not in self.factors:
                columns.append(records[:, k])
                k += 1
                continue
            bins, factor, _ = self.sizes(attr)
            coarse, fine = records[:, k], records[:, k + 1]
            columns.append(np.where(coarse < bins, coarse * factor + fine,
                                    coarse + bins * (factor - 1)))
            k += 2
        return np.column_stack(columns)

    def joined(self, attrs: Sequence[str], table: np.ndarray) -> np.ndarray:
        """A table on ``digits(attrs)`` as a table on the fine ``attrs``: a refined
        attribute's two axes (coarse, fine) become its fine axis, in code order."""
        table = np.asarray(table, dtype=np.float64)
        axis = 0
        for attr in attrs:
            if attr in self.factors:
                bins, factor, extra = self.sizes(attr)
                table = np.moveaxis(table, (axis, axis + 1), (0, 1))
                binned = table[:bins].reshape((bins * factor, *table.shape[2:]))
                table = np.moveaxis(np.concatenate([binned, table[bins:].sum(axis=1)]), 0, axis)
            axis += 1
        return table

    def divided(self, attrs: Sequence[str], table: np.ndarray) -> np.ndarray:
        """A table on the fine ``attrs`` as a table on ``digits(attrs)`` (own codes at
        fine digit 0)."""
        table = np.asarray(table, dtype=np.float64)
        axis = 0
        for attr in attrs:
            if attr in self.factors:
                bins, factor, extra = self.sizes(attr)
                table = np.moveaxis(table, axis, 0)
                rest = table.shape[1:]
                split = np.zeros((bins + extra, factor, *rest))
                split[:bins] = table[: bins * factor].reshape((bins, factor, *rest))
                split[bins:, 0] = table[bins * factor:]
                table = np.moveaxis(split, (0, 1), (axis, axis + 1))
                axis += 1
            axis += 1
        return table

    def apply(self, data: CountingSource) -> CountingSource:
        """The data on the split domain: records in memory split once, or the counts of a
        counting engine split table by table."""
        if isinstance(data, Dataset):
            return Dataset(self.split_codes(data.records), self.split, data.weights)
        return RefinedCounts(data, self)


class RefinedCounts(RecodedCounts):
    """A counting source seen on the split domain: each marginal is the source's on the
    fine attributes it involves, its refined axes split into digits and summed onto the
    clique (the source counts; nothing is loaded)."""

    def __init__(self, source: CountingSource, refinement: Refinement):
        super().__init__(source, refinement.split)
        self.refinement = refinement

    def source_attrs(self, clique: tuple[str, ...]) -> tuple[str, ...]:
        return _fine_attrs(clique)

    def recode(self, clique: tuple[str, ...], attrs: tuple[str, ...], counts: np.ndarray
               ) -> np.ndarray:
        split = self.refinement.digits(attrs)
        table = self.refinement.divided(attrs, counts)
        dropped = tuple(k for k, a in enumerate(split) if a not in clique)
        kept = [a for a in split if a in clique]
        table = table.sum(axis=dropped) if dropped else table
        return np.transpose(table, [kept.index(a) for a in clique])


_SUFFIX = FINE.format("")


def _is_fine(attr: str) -> bool:
    return attr.endswith(_SUFFIX)


def _fine_attrs(clique: Iterable[str]) -> tuple[str, ...]:
    """The fine attributes a split clique involves, in order of first mention."""
    out: dict[str, None] = {}
    for attr in clique:
        out[attr[: -len(_SUFFIX)] if _is_fine(attr) else attr] = None
    return tuple(out)


class RefinedModel(ModelBase):
    """A model fitted on a split domain, answering on the fine one (see the module
    docstring): a marginal on fine attributes is the model's on their digits."""

    def __init__(self, refinement: Refinement, model: ModelBase):
        if model.domain != refinement.split:
            raise DpgmError("the model is not on the refinement's split domain")
        self.refinement = refinement
        self.split = model
        self.domain = refinement.domain
        self.total = model.total

    def marginal(self, attrs: Iterable[str], given: Mapping[str, object] | None = None,
                 *, with_error: bool = False) -> np.ndarray:
        """Estimated counts of the marginal on the fine ``attrs``, given ``given`` (labels
        of the fine domain, or raw values where the model carries a schema): exact, from
        the joint of the attributes asked and given on their digits."""
        if with_error:
            return self.with_error(attrs, given)
        attrs = self.domain.check(attrs)
        evidence = self._evidence(given)
        if not evidence:
            return self.refinement.joined(attrs, self.split.marginal(
                self.refinement.digits(attrs)))
        involved = (*attrs, *(a for a in evidence if a not in attrs))
        joint = self.refinement.joined(involved, self.split.marginal(
            self.refinement.digits(involved)))
        return conditioned(joint, involved, evidence, len(attrs), self.total)

    def _evidence(self, given: Mapping[str, object] | None) -> dict[str, list[int]]:
        """``given`` as codes of the fine domain."""
        labels = self._given(given)
        return {} if not labels else self.domain.evidence(labels)

    def _split_evidence(self, evidence: Mapping[str, list[int]]) -> dict[str, list[int]]:
        """Fine codes as codes of the digits; a refined attribute's codes must be every
        pairing of some bins and some places (one code always is)."""
        out: dict[str, list[int]] = {}
        for attr, codes in evidence.items():
            if attr not in self.refinement.factors:
                out[attr] = list(codes)
                continue
            split = self.refinement.split_codes(self._column(attr, codes))
            column = self.refinement.split.attrs.index(attr)
            bins = sorted(set(split[:, column].tolist()))
            places = sorted(set(split[:, column + 1].tolist()))
            if len(bins) * len(places) != len(set(codes)):
                raise DpgmError(f"cannot sample given these values of {attr!r}: give one value, "
                                "or values that pair every bin given with every place")
            out[attr], out[FINE.format(attr)] = bins, places
        return out

    def _column(self, attr: str, codes: Sequence[int]) -> np.ndarray:
        """Records (all codes 0) with ``codes`` in ``attr``'s column."""
        records = np.zeros((len(codes), len(self.domain)), dtype=np.int64)
        records[:, self.domain.attrs.index(attr)] = codes
        return records

    def _records(self, n: int, rng: np.random.Generator,
                 given: Mapping[str, object] | None) -> Dataset:
        """The split model's records, their digits joined into fine codes."""
        evidence = self._split_evidence(self._evidence(given))
        records = self.split._records(n, rng, evidence or None)
        return Dataset(self.refinement.join_codes(records.records), self.domain)

    def _most_probable(self, given: Mapping[str, object] | None) -> dict[str, int]:
        evidence = self._split_evidence(self.domain.evidence(given) if given else {})
        codes = self.split._most_probable(evidence or None)
        joined = self.refinement.join_codes(np.array(
            [[codes.get(a, 0) for a in self.refinement.split.attrs]]))[0]
        return {a: int(c) for a, c in zip(self.domain.attrs, joined)}

    def _structure(self) -> dict:
        return {"refined (sub-bins per bin)": dict(self.refinement.factors),
                **self.split._structure()}

    def __repr__(self) -> str:
        return f"RefinedModel({self.refinement.split!r} -> {self.domain!r})"
