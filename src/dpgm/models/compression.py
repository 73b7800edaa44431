"""Merge rare attribute values into one, as decided from noisy one-way marginals (MST).

Values whose noisy count falls below a threshold carry little signal but cost model
size; merging them is post-processing of the released one-way measurements. A model
fitted on the compressed domain is read on the original domain by spreading each merged
value's probability uniformly over the values it stands for: :meth:`DomainCompression.expand`
builds that model's tables on the original domain, and :class:`CompressedModel` answers
the same questions without ever building them (for attributes of very many values,
where the expanded tables would not fit in memory).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from dpgm.dataset import CountingSource, Dataset, RecodedCounts
from dpgm.domain import Domain
from dpgm.errors import DpgmError
from dpgm.measurement import KroneckerQuery, MeasuredFit, Measurement, dense_query
from dpgm.memory import cells
from dpgm.models.base import ModelBase
from dpgm.models.markov_random_field import MarkovRandomField
from dpgm.models.records import RecordsModel
from dpgm.random import RngLike, as_generator


class CompressedCounts(RecodedCounts):
    """A counting source seen through a :class:`DomainCompression`: each marginal is the
    source's on the original domain, merged (the source counts; nothing is loaded)."""

    def __init__(self, source: CountingSource, compression: DomainCompression):
        super().__init__(source, compression.compressed)
        self.compression = compression

    def recode(self, clique: tuple[str, ...], attrs: tuple[str, ...], counts: np.ndarray
               ) -> np.ndarray:
        return self.compression.merge(clique, counts)


@dataclass
class DomainCompression:
    """Maps every attribute's values to codes of a smaller domain."""

    original: Domain
    compressed: Domain
    #: per attribute, the compressed code of each original value
    mappings: dict[str, np.ndarray]

    @classmethod
    def from_one_way(
        cls,
        domain: Domain,
        one_way: Sequence[Measurement],
        sigmas: float = 3.0,
        keep: Iterable[str] = (),
        ordered: Mapping[str, bool] | None = None,
        together: bool = False,
    ) -> tuple[DomainCompression, list[Measurement]]:
        """Merge, per attribute, the values whose noisy count is below ``sigmas`` noise stds.

        The rare values of an attribute share one code, its last. An attribute in
        ``ordered`` (``{attribute: whether its last value is the missing one}``: the
        schema's numeric bins, say) keeps its order instead: each run of consecutive rare
        values becomes one value in its place (neighbouring bins joined into a wider one),
        and a missing value keeps a code of its own. Attributes in ``keep`` (those of
        structural zeros, a public fact) are left whole. Returns the compression and the
        one-way measurements restated on the compressed domain (a merged value's answer
        is the sum of its parts, with the summed variance).
        """
        ordered = {} if ordered is None else ordered
        mappings: dict[str, np.ndarray] = {}
        restated = []
        for m in one_way:
            (attr,) = m.clique
            std = np.broadcast_to(np.asarray(m.std, dtype=np.float64), m.values.shape)
            kept = m.values >= sigmas * std
            if attr in keep:
                kept[:] = True
            if attr in ordered:
                codes = _runs_merged(kept, missing_last=ordered[attr])
                if together:
                    codes = _rare_runs_only(codes, m.values, std, sigmas)
            else:
                if together and not kept.all():
                    rare = ~kept
                    if m.values[rare].sum() >= sigmas * np.sqrt(np.sum(std[rare] ** 2)):
                        kept[:] = True
                codes = np.full(domain[attr], int(kept.sum()))  # rare values: the last code
                codes[kept] = np.arange(int(kept.sum()))
            size = int(codes.max()) + 1
            if size == domain[attr]:
                mappings[attr] = np.arange(domain[attr])
                restated.append(m)
                continue
            mappings[attr] = codes
            values = np.bincount(codes, weights=m.values, minlength=size)
            stds = np.sqrt(np.bincount(codes, weights=std**2, minlength=size))
            restated.append(Measurement((attr,), values, stds))
        for attr in domain.attrs:
            mappings.setdefault(attr, np.arange(domain[attr]))
        compressed = Domain(domain.attrs, [int(mappings[a].max()) + 1 for a in domain.attrs])
        return cls(domain, compressed, mappings), restated

    def apply(self, data: CountingSource) -> CountingSource:
        """The data recoded onto the compressed domain: records in memory, or the counts
        of a counting engine merged cell by cell."""
        if not isinstance(data, Dataset):
            return CompressedCounts(data, self)
        records = np.column_stack(
            [self.mappings[a][data.records[:, k]] for k, a in enumerate(self.original.attrs)]
        )
        return Dataset(records, self.compressed, data.weights)

    def merge(self, attrs: Sequence[str], counts: np.ndarray) -> np.ndarray:
        """A marginal on the original domain summed onto the compressed one."""
        shape = self.compressed.project(attrs).shape
        if not attrs:
            return np.asarray(counts, dtype=np.float64)
        merged = np.zeros(shape)
        np.add.at(merged, np.ix_(*[self.mappings[a] for a in attrs]), counts)
        return merged

    def expanded_cells(self, model: MarkovRandomField) -> int:
        """Cells of the tables :meth:`expand` would build (public, given the compression)."""
        return sum(cells(self.original.project(c).shape) for c in model.potentials) + sum(
            self.original[a] for a in self.original.attrs
        )

    def shares(self, attr: str) -> np.ndarray:
        """For each original value of ``attr``, 1 / (values sharing its code)."""
        counts = np.bincount(self.mappings[attr], minlength=self.compressed[attr])
        return 1.0 / counts[self.mappings[attr]]

    def decode(self, attr: str, codes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Original values for compressed ``codes``: uniform among those sharing a code."""
        mapping = self.mappings[attr]
        order = np.argsort(mapping, kind="stable")  # original values grouped by code
        counts = np.bincount(mapping, minlength=self.compressed[attr])
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        picks = starts[codes] + np.floor(rng.random(codes.shape) * counts[codes]).astype(np.int64)
        return order[np.minimum(picks, starts[codes] + counts[codes] - 1)]

    def on_original(self, model: MarkovRandomField | RecordsModel, max_cells: float,
                    rng: RngLike = None) -> ModelBase:
        """A model fitted on the compressed domain, read on the original one: a Markov
        random field expanded (:meth:`expand`) where its tables on the original domain
        have at most ``max_cells`` cells, else a :class:`CompressedModel`; records with
        each code replaced by a value it stands for, drawn with ``rng``."""
        if isinstance(model, RecordsModel):
            gen = as_generator(rng)
            records = np.column_stack(
                [self.decode(a, model.records[:, k], gen) for k, a in enumerate(
                    self.original.attrs)]) if len(model.records) else model.records
            return RecordsModel(self.original, records, model.total)
        if self.expanded_cells(model) <= max_cells:
            return self.expand(model)
        return CompressedModel(self, model)

    def expand(self, model: MarkovRandomField) -> MarkovRandomField:
        """The model on the original domain, uniform within every merged value."""
        potentials = {}
        spread: set[str] = set()
        for clique, factor in model.potentials.items():
            table = factor.values[np.ix_(*[self.mappings[a] for a in clique])]
            for k, attr in enumerate(clique):
                if attr in spread:
                    continue
                spread.add(attr)
                shape = [1] * len(clique)
                shape[k] = self.original[attr]
                table = table + np.log(self.shares(attr)).reshape(shape)
            potentials[clique] = table
        for attr in self.original.attrs:
            if attr not in spread:  # in no potential: uniform over codes, then within them
                potentials[(attr,)] = np.log(self.shares(attr))
        expanded = MarkovRandomField(self.original, potentials, model.total)
        if model.measured is not None:  # the same measurements, of the original codes
            fit = model.measured
            expanded.measured = MeasuredFit([self.measured_on_original(m) for m in
                                             fit.measurements], fit.options, fit.zeros,
                                            fit.estimator)
        return expanded

    def measured_on_original(self, measurement: Measurement) -> Measurement:
        """A measurement of compressed codes as one of the original codes: its query
        times, for each merged attribute, the 0/1 matrix that sums the values sharing a
        code (a Kronecker product, never built)."""
        clique = measurement.clique
        merged = [a for a in clique if self.compressed[a] != self.original[a]]
        if not merged:
            return measurement
        sums = []
        for attr in clique:
            matrix = np.zeros((self.compressed[attr], self.original[attr]))
            matrix[self.mappings[attr], np.arange(self.original[attr])] = 1.0
            sums.append(matrix)
        query = measurement.query
        if query is None:
            query = KroneckerQuery(sums)
        elif isinstance(query, KroneckerQuery):
            query = KroneckerQuery([f @ s for f, s in zip(query.factors, sums)])
        else:
            query = dense_query(query) @ KroneckerQuery(sums).dense()
        return Measurement(clique, measurement.values, measurement.std, query)


def _runs_merged(kept: np.ndarray, missing_last: bool) -> np.ndarray:
    """Codes for an ordered attribute's values: one per kept value and one per run of
    consecutive values not kept, in order; a last (missing) value keeps its own code."""
    ordinary = kept[:-1] if missing_last else kept
    # a value starts a new code unless it and the value before it are both merged
    starts = np.ones(ordinary.size, dtype=bool)
    starts[1:] = ordinary[1:] | ordinary[:-1]
    codes = np.cumsum(starts) - 1
    if missing_last:
        codes = np.append(codes, codes[-1] + 1 if codes.size else 0)
    return codes


def _rare_runs_only(codes: np.ndarray, values: np.ndarray, std: np.ndarray,
                    sigmas: float) -> np.ndarray:
    """``codes`` (in order, as :func:`_runs_merged` gives them) with each merged run split
    back into its values unless the run's summed noisy count is below ``sigmas`` of its
    summed noise std (rare together)."""
    size = int(codes.max()) + 1
    totals = np.bincount(codes, weights=values, minlength=size)
    spread = np.sqrt(np.bincount(codes, weights=std**2, minlength=size))
    split = (np.bincount(codes, minlength=size) > 1) & (totals >= sigmas * spread)
    # a value starts a new code where its run does, or where its run is split
    starts = np.ones(codes.size, dtype=bool)
    starts[1:] = (codes[1:] != codes[:-1]) | split[codes[1:]]
    return np.cumsum(starts) - 1


class CompressedModel(ModelBase):
    """A model fitted on a compressed domain, answering on the original one.

    Each merged value's probability is spread uniformly over the values it stands for,
    as :meth:`DomainCompression.expand` does, but only the tables a question needs are
    built: the model itself stays on the compressed domain.
    """

    def __init__(self, compression: DomainCompression, model: MarkovRandomField):
        self.compression = compression
        self.compressed = model
        self.domain = compression.original
        self.total = model.total

    def marginal(self, attrs: Iterable[str], given: Mapping[str, object] | None = None,
                 *, with_error: bool = False) -> np.ndarray:
        """Estimated counts of the marginal on ``attrs`` of the original domain, given
        ``given`` on attributes none of whose values were merged."""
        if with_error:
            return self.with_error(attrs, given)
        attrs = self.domain.check(attrs)
        return self.spread(attrs, self.compressed.marginal(attrs, given=self._evidence(given)))

    def spread(self, attrs: tuple[str, ...], table: np.ndarray,
               shares: Mapping[str, np.ndarray] | None = None) -> np.ndarray:
        """A table on the compressed codes of ``attrs`` as one on the original codes: each
        entry goes to every value its code stands for, times that value's share (by
        default the compression's; error bars pass the shares squared)."""
        for axis, attr in enumerate(attrs):
            shape = [1] * len(attrs)
            shape[axis] = self.domain[attr]
            share = self.compression.shares(attr) if shares is None else shares[attr]
            table = np.take(table, self.compression.mappings[attr], axis=axis)
            table = table * share.reshape(shape)
        return table

    def sample(
        self,
        n: int | None = None,
        rng: RngLike = None,
        method: str = "exact",
        given: Mapping[str, object] | None = None,
    ) -> Dataset:
        """Records drawn from the compressed model, each code replaced by a value it stands for.

        ``given`` conditions exactly on attributes none of whose values were merged.
        """
        gen = as_generator(rng)
        evidence = self._evidence(given)
        # the compressed domain has no labels: its codes are the original codes here
        small = self.compressed.sample(n, gen, method, given=evidence)
        records = np.column_stack(
            [
                self.compression.decode(a, small.records[:, k], gen)
                for k, a in enumerate(self.domain.attrs)
            ]
        )
        return Dataset(records, self.domain)

    def _evidence(self, given: Mapping[str, object] | None) -> dict[str, list[int]] | None:
        """``given`` as codes of the original domain, which are the compressed model's codes
        on attributes none of whose values were merged (the others are refused)."""
        if not given:
            return None
        evidence = self.domain.evidence(self._given(given))  # labels of the original domain
        merged = [a for a in evidence if self.compressed.domain[a] != self.domain[a]]
        if merged:
            raise DpgmError(
                f"cannot condition on {merged}: their rare values were merged in this "
                "compressed model"
            )
        return evidence

    def _structure(self) -> dict:
        merged = {a: [self.domain[a], self.compressed.domain[a]] for a in self.domain.attrs
                  if self.domain[a] != self.compressed.domain[a]}
        return {"cliques": [list(c) for c in self.compressed.cliques],
                "merged values (original, compressed)": merged}

    def _most_probable(self, given: Mapping[str, object] | None) -> dict[str, int]:
        """On the expanded model (each merged value's share spread over its values)."""
        return self.compression.expand(self.compressed).map(given)

    def _records(self, n: int, rng: np.random.Generator,
                 given: Mapping[str, object] | None) -> Dataset:
        """Rounded sampling on the compressed model, then decoded."""
        return self.sample(n, rng, method="rounded", given=given)

    def __repr__(self) -> str:
        return f"CompressedModel({self.compression.compressed!r} -> {self.domain!r})"
