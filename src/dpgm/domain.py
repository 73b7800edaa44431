"""The public description of a table: ordered attributes and their sizes."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from functools import reduce
from os import PathLike

import numpy as np

from dpgm.errors import DomainError
from dpgm.files import atomic_write


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """A JSON object's pairs as a dict, refusing a key given twice (json keeps the last)."""
    keys = [k for k, _ in pairs]
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    if repeated:
        raise DomainError(f"attribute(s) {repeated} are listed more than once")
    return dict(pairs)


Label = str | int | float | bool | None


def _check_labels(attr: str, size: int, given: Iterable[Label]) -> tuple[Label, ...]:
    """An attribute's labels as a tuple: one per code, all distinct."""
    if isinstance(given, (str, bytes)) or not isinstance(given, Iterable):
        raise DomainError(f"the labels of {attr!r} must be a list, got {given!r}")
    labels = tuple(given)
    if len(labels) != size:
        raise DomainError(f"attribute {attr!r} has size {size} but {len(labels)} labels")
    seen: dict[tuple[str, object], int] = {}
    for code, label in enumerate(labels):
        if not isinstance(label, (str, int, float, bool)) and label is not None:
            raise DomainError(
                f"label {label!r} of {attr!r} must be a string, number, boolean or null"
            )
        key = (type(label).__name__, label)
        if key in seen:
            raise DomainError(f"attribute {attr!r} has the label {label!r} twice")
        seen[key] = code
    return labels


class Domain:
    """Ordered attributes, each with a finite number of integer-coded values ``0..size-1``.

    The domain is public input: it is given by the data steward, never read off the data.
    ``labels`` optionally names the values of some attributes (``{attr: [label of code 0,
    ...]}``), so that models, queries and samples can speak in labels; two domains with
    the same attributes and sizes are equal whatever their labels (the integer view).
    """

    __slots__ = ("attrs", "shape", "labels", "_index")

    def __init__(
        self,
        attrs: Iterable[str],
        shape: Iterable[int],
        labels: Mapping[str, Iterable[Label]] | None = None,
    ):
        attrs = tuple(attrs)
        shape = tuple(shape)
        if len(attrs) != len(shape):
            raise DomainError(f"{len(attrs)} attributes but {len(shape)} sizes")
        if len(set(attrs)) != len(attrs):
            dup = sorted({a for a in attrs if attrs.count(a) > 1})
            raise DomainError(f"duplicate attribute names: {dup}")
        for attr, size in zip(attrs, shape):
            if not isinstance(attr, str) or not attr:
                raise DomainError(f"attribute names must be non-empty strings, got {attr!r}")
            try:
                valid = not isinstance(size, bool) and int(size) == size and size >= 1
            except (TypeError, ValueError, OverflowError):  # None, NaN, "x", inf
                valid = False
            if not valid:
                raise DomainError(
                    f"attribute {attr!r} has size {size!r}; sizes must be integers >= 1"
                )
        self.attrs: tuple[str, ...] = attrs
        self.shape: tuple[int, ...] = tuple(int(s) for s in shape)
        self._index = {a: i for i, a in enumerate(attrs)}
        self.labels: dict[str, tuple[Label, ...]] = {}
        for attr, given in (labels or {}).items():
            if attr not in self._index:
                raise DomainError(f"labels given for {attr!r}, which is not an attribute")
            self.labels[attr] = _check_labels(attr, self.shape[self._index[attr]], given)

    # -- construction -----------------------------------------------------------------
    @classmethod
    def from_dict(cls, sizes: Mapping[str, int | Iterable[Label]]) -> Domain:
        """Domain from ``{attribute: size or list of labels}`` (insertion order is the order)."""
        labels = {
            a: v for a, v in sizes.items() if isinstance(v, Iterable) and not isinstance(v, str)
        }
        shape = [len(list(labels[a])) if a in labels else v for a, v in sizes.items()]
        return cls(sizes.keys(), shape, labels)

    @classmethod
    def load(cls, path: str | PathLike[str]) -> Domain:
        """Domain from a JSON file mapping each attribute to its size or its list of labels."""
        try:
            with open(path) as fh:
                sizes = json.load(fh, object_pairs_hook=_unique_keys)
        except json.JSONDecodeError as exc:
            raise DomainError(f"{path}: not valid JSON ({exc})") from None
        except DomainError as exc:
            raise DomainError(f"{path}: {exc}") from None
        if not isinstance(sizes, dict):
            raise DomainError(f"{path}: expected a JSON object {{attribute: size}}")
        return cls.from_dict(sizes)

    def to_dict(self) -> dict[str, int]:
        """``{attribute: size}`` in attribute order."""
        return dict(zip(self.attrs, self.shape))

    def to_json(self) -> dict[str, int | list[Label]]:
        """``{attribute: size, or its labels where it has them}``: what :meth:`save` writes."""
        return {a: list(self.labels[a]) if a in self.labels else self[a] for a in self.attrs}

    def save(self, path: str | PathLike[str]) -> None:
        """Write the domain as JSON (the format :meth:`load` reads), whole or not at all."""
        with atomic_write(path) as fh:
            json.dump(self.to_json(), fh, indent=2)

    # -- queries ----------------------------------------------------------------------
    def check(self, attrs: Iterable[str]) -> tuple[str, ...]:
        """Return ``attrs`` as a tuple, raising a clear error for unknown or repeated names."""
        if isinstance(attrs, str):
            attrs = (attrs,)
        attrs = tuple(attrs)
        unknown = [a for a in attrs if a not in self._index]
        if unknown:
            raise DomainError(f"unknown attribute(s) {unknown}; the domain has {list(self.attrs)}")
        if len(set(attrs)) != len(attrs):
            raise DomainError(f"attribute listed twice in {list(attrs)}")
        return attrs

    def project(self, attrs: Iterable[str]) -> Domain:
        """The sub-domain on ``attrs``, in the order given (with their labels)."""
        attrs = self.check(attrs)
        # this domain's sizes and labels were checked when it was made: copy them as they
        # are (projection is on every inference path, where re-checking labels would cost)
        sub = object.__new__(Domain)
        sub.attrs = attrs
        sub.shape = tuple(self.shape[self._index[a]] for a in attrs)
        sub._index = {a: i for i, a in enumerate(attrs)}
        sub.labels = {a: self.labels[a] for a in attrs if a in self.labels}
        return sub

    def marginalize(self, attrs: Iterable[str]) -> Domain:
        """The sub-domain without ``attrs``."""
        drop = set(self.check(attrs))
        return self.project(a for a in self.attrs if a not in drop)

    def canonical(self, attrs: Iterable[str]) -> tuple[str, ...]:
        """``attrs`` sorted into this domain's attribute order."""
        return tuple(sorted(self.check(attrs), key=self._index.__getitem__))

    def axes(self, attrs: Iterable[str]) -> tuple[int, ...]:
        """Positions of ``attrs`` in this domain."""
        return tuple(self._index[a] for a in self.check(attrs))

    def size(self, attrs: Iterable[str] | None = None) -> int:
        """Number of cells of the (sub-)domain."""
        if attrs is None:
            return int(reduce(lambda x, y: x * y, self.shape, 1))
        return int(reduce(lambda x, y: x * y, (self.shape[self._index[a]] for a in
                                               self.check(attrs)), 1))

    def merge(self, other: Domain) -> Domain:
        """Union of two domains: this one's attributes, then the new ones of ``other``."""
        extra = [a for a in other.attrs if a not in self._index]
        for a in other.attrs:
            if a in self._index and self[a] != other[a]:
                raise DomainError(f"attribute {a!r} has size {self[a]} here and {other[a]} there")
            if a in self.labels and a in other.labels and self.labels[a] != other.labels[a]:
                raise DomainError(f"attribute {a!r} has different labels here and there")
        labels = {**other.labels, **self.labels}
        return Domain(
            self.attrs + tuple(extra), self.shape + tuple(other[a] for a in extra), labels
        )

    def intersects(self, other: Domain) -> bool:
        return any(a in self._index for a in other.attrs)

    def contains(self, other: Domain | Iterable[str]) -> bool:
        """Whether every attribute of ``other`` is in this domain."""
        names = other.attrs if isinstance(other, Domain) else other
        return all(a in self._index for a in names)

    # -- labels ---------------------------------------------------------------------------
    def label(self, attr: str, code: int) -> Label:
        """The label of ``code`` (the code itself where the attribute has no labels)."""
        size = self[attr]
        if not 0 <= int(code) < size:
            raise DomainError(f"code {code} of {attr!r} is outside 0..{size - 1}")
        return self.labels[attr][int(code)] if attr in self.labels else int(code)

    def code(self, attr: str, value: Label) -> int:
        """The code of ``value``: one of the attribute's labels, or a code where it has none."""
        size = self[attr]
        if attr in self.labels:
            for code, label in enumerate(self.labels[attr]):
                # 1 and True are equal in Python, but not as labels
                same = label == value and isinstance(label, bool) == isinstance(value, bool)
                if same or (isinstance(value, str) and str(label) == value):
                    return code
            shown = list(self.labels[attr])
            raise DomainError(
                f"{value!r} is not a label of {attr!r}; its labels are "
                f"{shown if len(shown) <= 20 else shown[:20] + ['...']}"
            )
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            try:
                value = int(str(value))
            except ValueError:
                raise DomainError(
                    f"{value!r} is not a code of {attr!r} (it has no labels; codes are "
                    f"0..{size - 1})"
                ) from None
        if not 0 <= int(value) < size:
            raise DomainError(f"code {value} of {attr!r} is outside 0..{size - 1}")
        return int(value)

    def evidence(self, given: Mapping[str, object]) -> dict[str, list[int]]:
        """Codes of ``given`` (``{attribute: label, or a list of labels}``; codes where the
        attribute has no labels), sorted per attribute."""
        if not isinstance(given, Mapping):
            raise DomainError(f"given must be a mapping {{attribute: value}}, got {given!r}")
        self.check(list(given))
        codes = {}
        for attr, value in given.items():
            values = value if isinstance(value, (list, tuple, set, frozenset)) else [value]
            if not values:
                raise DomainError(f"given {attr!r}: an empty list of values")
            codes[attr] = sorted({self.code(attr, v) for v in values})
        return codes

    # -- container protocol -----------------------------------------------------------
    def __getitem__(self, attr: str) -> int:
        try:
            return self.shape[self._index[attr]]
        except KeyError:
            raise DomainError(
                f"unknown attribute {attr!r}; the domain has {list(self.attrs)}"
            ) from None

    def __contains__(self, attr: object) -> bool:
        return attr in self._index

    def __iter__(self) -> Iterator[str]:
        return iter(self.attrs)

    def __len__(self) -> int:
        return len(self.attrs)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Domain) and self.attrs == other.attrs and self.shape == other.shape

    def __hash__(self) -> int:
        return hash((self.attrs, self.shape))

    def __repr__(self) -> str:
        inner = ", ".join(f"{a}: {s}" for a, s in zip(self.attrs, self.shape))
        return f"Domain({inner})"
