"""Merge rare attribute values into one, as decided from noisy one-way marginals (MST).

Values whose noisy count falls below a threshold carry little signal but cost model
size; merging them is post-processing of the released one-way measurements. A model
fitted on the compressed domain is expanded back by spreading each merged value's
probability uniformly over the values it stands for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dpgm.dataset import Dataset
from dpgm.domain import Domain
from dpgm.estimation.measurement import Measurement
from dpgm.model import MarkovRandomField


@dataclass
class DomainCompression:
    """Maps every attribute's values to codes of a smaller domain."""

    original: Domain
    compressed: Domain
    #: per attribute, the compressed code of each original value
    mappings: dict[str, np.ndarray]

    @classmethod
    def from_one_way(
        cls, domain: Domain, one_way: Sequence[Measurement], sigmas: float = 3.0
    ) -> tuple[DomainCompression, list[Measurement]]:
        """Merge, per attribute, the values whose noisy count is below ``sigmas`` noise stds.

        Returns the compression and the one-way measurements restated on the compressed
        domain (a merged value's answer is the sum of its parts, with the summed variance).
        """
        mappings: dict[str, np.ndarray] = {}
        sizes: dict[str, int] = {}
        restated = []
        for m in one_way:
            (attr,) = m.clique
            std = np.broadcast_to(np.asarray(m.std, dtype=np.float64), m.values.shape)
            kept = m.values >= sigmas * std
            if kept.all():
                mappings[attr] = np.arange(domain[attr])
                sizes[attr] = domain[attr]
                restated.append(m)
                continue
            codes = np.full(domain[attr], int(kept.sum()))  # rare values share the last code
            codes[kept] = np.arange(int(kept.sum()))
            mappings[attr] = codes
            sizes[attr] = int(kept.sum()) + 1
            values = np.append(m.values[kept], m.values[~kept].sum())
            stds = np.append(std[kept], np.sqrt(np.sum(std[~kept] ** 2)))
            restated.append(Measurement((attr,), values, stds))
        for attr in domain.attrs:
            if attr not in mappings:
                mappings[attr] = np.arange(domain[attr])
                sizes[attr] = domain[attr]
        compressed = Domain(domain.attrs, [sizes[a] for a in domain.attrs])
        return cls(domain, compressed, mappings), restated

    def apply(self, data: Dataset) -> Dataset:
        """The records recoded onto the compressed domain."""
        records = np.column_stack(
            [self.mappings[a][data.records[:, k]] for k, a in enumerate(self.original.attrs)]
        )
        return Dataset(records, self.compressed, data.weights)

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
                # log of 1/(number of original values sharing the code)
                counts = np.bincount(self.mappings[attr], minlength=self.compressed[attr])
                shape = [1] * len(clique)
                shape[k] = self.original[attr]
                table = table - np.log(counts[self.mappings[attr]]).reshape(shape)
            potentials[clique] = table
        for attr in self.original.attrs:
            if attr not in spread:  # in no potential: uniform over codes, then within them
                counts = np.bincount(self.mappings[attr], minlength=self.compressed[attr])
                potentials[(attr,)] = -np.log(counts[self.mappings[attr]])
        return MarkovRandomField(self.original, potentials, model.total)
