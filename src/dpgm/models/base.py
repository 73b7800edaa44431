"""The one protocol every dpgm model implements, and what the models share.

A fitted model is the release: it answers marginals and gives synthetic records for as
long as its owner keeps it, with no further access to the data and no further budget.
Every model class (:class:`~dpgm.models.MarkovRandomField`, :class:`~dpgm.models.TableModel`,
:class:`~dpgm.models.CompressedModel`, :class:`~dpgm.models.BayesianNetwork`, and the Ising,
pairwise and t-wise models) has the members of :class:`Model`:

* ``domain``: the public domain, with its labels;
* ``total``: the number of records the model stands for (a noisy estimate, never the
  exact count);
* ``marginal(attrs, given=None)``: the counts of every cell of the marginal on ``attrs``
  (an array whose axes follow ``attrs`` and whose cells follow ``domain.labels``; the
  same, indexed by labels, from ``marginal_table``), conditioned on ``given`` (labels, or
  raw values where the model carries a schema); with ``with_error=True`` the counts and
  the standard error of each cell, where the model keeps the measurements it was
  estimated from (:mod:`dpgm.models.uncertainty`);
* ``synthetic_data(n=None, rng=None, given=None)``: ``n`` records (default: ``total``
  rounded), a :class:`~dpgm.dataset.Dataset` of codes, or a DataFrame in original units
  where the model carries a schema; ``synthetic_chunks`` gives the same records in
  chunks, in bounded memory whatever ``n``;
* ``save(path)``: the model file that :func:`dpgm.load` reads back
  (:mod:`dpgm.models.files`).

A model fitted by a mechanism also carries ``schema`` (the public schema of the raw table,
or None) and ``release`` (:class:`Release`: the ledger, the mechanism and its options, and
whether the run was seeded).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from os import PathLike
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from dpgm.dataset import Dataset
from dpgm.domain import Domain
from dpgm.errors import DataError, DomainError, DpgmError
from dpgm.memory import DEFAULT_MAX_MEMORY, check_rows, default_chunk_rows
from dpgm.random import RngLike, as_generator
from dpgm.validation import integer

if TYPE_CHECKING:
    import pandas as pd

    from dpgm.schema import Schema


@runtime_checkable
class Model(Protocol):
    """What every dpgm model answers (see the module docstring)."""

    domain: Domain
    total: float

    def marginal(self, attrs: Iterable[str], given: Mapping[str, object] | None = None,
                 *, with_error: bool = False) -> np.ndarray: ...

    def synthetic_data(self, n: int | None = None, rng: RngLike = None,
                       given: Mapping[str, object] | None = None) -> Dataset | pd.DataFrame: ...

    def save(self, path: str | PathLike[str]) -> None: ...


@dataclass
class Release:
    """How a model was released: the privacy ledger (``PrivacyBudget.to_json()``), the
    mechanism with its options, and whether the run was seeded (a seeded model is
    reproducible research output, not for release)."""

    ledger: dict[str, Any] | None = None
    mechanism: str = ""
    options: dict[str, Any] = field(default_factory=dict)
    seeded: bool = False

    @classmethod
    def of(cls, budget: Any, mechanism: str, options: Mapping[str, Any] | None = None,
           seeded: bool = False) -> Release:
        """The release of a fit that spent ``budget`` (a PrivacyBudget)."""
        return cls(budget.to_json(), mechanism, dict(options or {}), seeded)

    def to_json(self) -> dict[str, Any]:
        return {"ledger": self.ledger, "mechanism": self.mechanism, "options": self.options,
                "seeded": self.seeded}

    @classmethod
    def from_json(cls, spec: Mapping[str, Any]) -> Release:
        """A release as ``to_json`` wrote it; ValueError for any other shape."""
        ledger, options = spec.get("ledger"), spec.get("options") or {}
        entries = ledger.get("entries") if isinstance(ledger, Mapping) else None
        number = (int, float, type(None))
        if ledger is not None and not (
                isinstance(entries, list) and isinstance(ledger.get("spent"), Mapping)
                and all(isinstance(e, Mapping) and isinstance(e.get("label"), str)
                        and all(isinstance(e.get(k), number) for k in ("epsilon", "rho", "delta"))
                        for e in entries)
                and all(isinstance(v, number) for v in ledger["spent"].values())):
            raise ValueError("the release's ledger is not a ledger")
        if not isinstance(options, Mapping) or not isinstance(spec.get("seeded", False), bool):
            raise ValueError("the release's options or seed flag are malformed")
        return cls(ledger, str(spec.get("mechanism", "")), dict(options),
                   spec.get("seeded", False))


class ModelBase:
    """What the model classes share: the schema and release they carry, labelled
    marginals, decoded synthetic data and saving. A subclass gives ``domain``, ``total``,
    ``marginal`` and ``_records(n, rng, given)`` (codes; ``given`` as labels or codes)."""

    #: the public schema of the raw table the model was fitted on (decodes its records)
    schema: Schema | None = None
    #: the ledger and mechanism of the fit that released the model
    release: Release | None = None

    def _records(self, n: int, rng: np.random.Generator,
                 given: Mapping[str, object] | None) -> Dataset:
        raise NotImplementedError

    def synthetic_data(self, n: int | None = None, rng: RngLike = None,
                       given: Mapping[str, object] | None = None, *,
                       max_memory: float | None = None) -> Dataset | pd.DataFrame:
        """``n`` synthetic records (default: :attr:`total` rounded) whose marginals follow
        the model, conditioned exactly on ``given``; decoded to original units where the
        model carries a schema (``given`` then takes raw values too). Post-processing of
        the released model: free."""
        rows = self.default_rows() if n is None else integer("n", n, least=0)
        limit = DEFAULT_MAX_MEMORY if max_memory is None else max_memory
        check_rows(rows, len(self.domain), limit, copies=2)
        generator = as_generator(rng)
        records = self._records(rows, generator, self._given(given))
        return records if self.schema is None else self.schema.decode(records, generator)

    def synthetic_chunks(self, n: int | None = None, rng: RngLike = None,
                         given: Mapping[str, object] | None = None, *,
                         chunk_rows: int | None = None, max_memory: float | None = None
                         ) -> Iterator[Dataset | pd.DataFrame]:
        """:meth:`synthetic_data`'s records in chunks of at most ``chunk_rows`` (default:
        :func:`dpgm.memory.default_chunk_rows`, a million or fewer for wide tables), so
        that memory is bounded by the chunk whatever ``n``. Each chunk is drawn on its own
        (rounded sampling per chunk: every cell's count stays unbiased); one chunk of
        ``n`` records is what :meth:`synthetic_data` gives for the same ``rng``. No
        records (``n`` 0): one empty chunk, with the columns. Free post-processing."""
        rows = self.default_rows() if n is None else integer("n", n, least=0)
        width = len(self.domain)
        size = default_chunk_rows(width) if chunk_rows is None else integer(
            "chunk_rows", chunk_rows, least=1)
        limit = DEFAULT_MAX_MEMORY if max_memory is None else max_memory
        check_rows(min(rows, size), width, limit, copies=2)  # one chunk at a time
        return self._chunks(rows, size, as_generator(rng), self._given(given))

    def _chunks(self, rows: int, size: int, generator: np.random.Generator,
                labels: dict[str, list] | None) -> Iterator[Dataset | pd.DataFrame]:
        for start in range(0, max(rows, 1), size):
            records = self._records(min(size, rows - start), generator, labels)
            yield records if self.schema is None else self.schema.decode(records, generator)

    def default_rows(self) -> int:
        """The records a sample has by default: :attr:`total` rounded (never negative)."""
        return max(int(round(self.total)), 0)

    def _given(self, given: Mapping[str, object] | None) -> dict[str, list] | None:
        """``given`` as labels of the domain: raw values are read by the schema (a number
        goes to its bin), labels and codes pass as they are."""
        if not given:
            return None
        if not isinstance(given, Mapping):
            raise DomainError(f"given must be a mapping {{attribute: value}}, got {given!r}")
        if self.schema is None:
            return dict(given)
        self.domain.check(list(given))
        labels = {}
        for attr, value in given.items():
            values = value if isinstance(value, (list, tuple, set, frozenset)) else [value]
            labels[attr] = [v if _is_label(self.domain, attr, v) else
                            self.domain.label(attr, self.schema.code(attr, v)) for v in values]
        return labels

    def with_error(self, attrs: Iterable[str], given: Mapping[str, object] | None = None,
                   **options: Any) -> tuple[np.ndarray, np.ndarray]:
        """``marginal(attrs, given)`` and the standard error of each of its cells, from
        the noise of the measurements the model was estimated from (what
        ``marginal(..., with_error=True)`` gives; ``options`` as
        :func:`dpgm.models.uncertainty.standard_error` takes them: ``method``,
        ``replicates``, ``rng``, ``progress``). Post-processing: free."""
        from dpgm.models.uncertainty import standard_error

        attrs = self.domain.check(attrs)  # a generator is read once
        error = standard_error(self, attrs, given, **options)
        return self.marginal(attrs, given=given), error

    def marginal_table(self, attrs: Iterable[str], given: Mapping[str, object] | None = None
                       ) -> pd.Series:
        """The marginal on ``attrs`` as counts indexed by the attributes' labels."""
        import pandas as pd

        attrs = self.domain.check(attrs)
        return pd.Series(np.ravel(self.marginal(attrs, given=given)),
                         index=self._label_index(attrs), name="count")

    def describe(self) -> dict[str, Any]:
        """Public facts of the model, for ``dpgm model info``: its kind, the noisy record
        count, the attributes' sizes and its structure (cliques, parents or edges)."""
        return {"kind": type(self).__name__, "total": self.total,
                "attributes": {a: self.domain[a] for a in self.domain.attrs},
                **self._structure()}

    def _structure(self) -> dict[str, Any]:
        return {}

    def probabilities(self, variables: Iterable[str], given: Mapping[str, object] | None = None
                      ) -> np.ndarray:
        """``P(variables | given)``: one axis per variable, in order, summing to 1."""
        table = np.clip(np.asarray(self.marginal(variables, given=given), dtype=np.float64),
                        0.0, None)  # least squares may estimate negative counts
        mass = table.sum()
        if not mass > 0:
            raise DataError(f"the evidence {dict(given or {})} has probability zero under "
                            "the model")
        return table / mass

    def conditional_table(self, variables: Iterable[str],
                          given: Mapping[str, object] | None = None) -> pd.Series:
        """``P(variables | given)`` indexed by the variables' labels (a MultiIndex for
        several), named "probability": what ``dpgm model query`` prints."""
        import pandas as pd

        variables = self.domain.check(variables)
        overlap = [v for v in variables if v in (given or {})]
        if overlap:
            raise DomainError(f"{overlap} are both queried and given")
        table = self.probabilities(variables, given)
        index = self._label_index(variables)
        if len(variables) == 1:
            index = index.get_level_values(0)
        return pd.Series(table.ravel(), index=index, name="probability")

    def map_query(self, variables: Iterable[str] | None = None,
                  given: Mapping[str, object] | None = None) -> dict[str, object]:
        """The most probable labels: of every attribute not given (``variables`` None: the
        most probable record), else of ``variables`` jointly (marginal MAP)."""
        if variables is not None:
            table = self.conditional_table(variables, given)
            best = table.idxmax()
            best = best if isinstance(best, tuple) else (best,)
            return dict(zip(table.index.names, best))
        codes = self._most_probable(self._given(given))
        return {a: self.domain.label(a, codes[a]) for a in self.domain.attrs
                if a not in (given or {})}

    def _most_probable(self, given: Mapping[str, object] | None) -> dict[str, int]:
        """The codes of the most probable record given ``given`` (labels or codes)."""
        raise DpgmError(f"a {type(self).__name__} has no most probable record; ask for the "
                        "most probable values of some variables")

    def _label_index(self, attrs: tuple[str, ...]) -> pd.MultiIndex:
        """The cells of a table on ``attrs`` (C order) as labels: codes where none."""
        import pandas as pd

        return pd.MultiIndex.from_product(
            [list(self.domain.labels.get(a, range(self.domain[a]))) for a in attrs],
            names=list(attrs))

    def save(self, path: str | PathLike[str]) -> None:
        """Write the model file that :func:`dpgm.load` reads (:mod:`dpgm.models.files`):
        no pickle, nothing that runs code when it loads."""
        from dpgm.models.files import save_model

        save_model(self, path)


def conditioned(joint: np.ndarray, attrs: tuple[str, ...], evidence: Mapping[str, list[int]],
                kept: int, total: float) -> np.ndarray:
    """The counts on the first ``kept`` of ``attrs`` given ``evidence`` (codes per
    attribute), from the counts ``joint`` on all of ``attrs``: the other codes of each
    observed attribute zeroed, the rest summed out, scaled to ``total``."""
    table = np.array(joint, dtype=np.float64)
    for attr, codes in evidence.items():
        axis = attrs.index(attr)
        mask = np.zeros(table.shape[axis], dtype=bool)
        mask[list(codes)] = True
        shape = [1] * table.ndim
        shape[axis] = -1
        table = table * mask.reshape(shape)
    table = table.sum(axis=tuple(range(kept, table.ndim))) if table.ndim > kept else table
    mass = table.sum()
    if not mass > 0:
        raise DataError(f"the evidence {dict(evidence)} has probability zero under the model")
    return table * (total / mass)


def _is_label(domain: Domain, attr: str, value: object) -> bool:
    """Whether ``value`` is one of ``attr``'s labels as it is (not a raw value to bin)."""
    try:
        domain.code(attr, value)
    except DomainError:
        return False
    return attr in domain.labels
