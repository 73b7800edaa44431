"""The public description of a table: ordered attributes and their sizes."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from functools import reduce
from os import PathLike

from dpgm.errors import DomainError
from dpgm.files import atomic_write


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """A JSON object's pairs as a dict, refusing a key given twice (json keeps the last)."""
    keys = [k for k, _ in pairs]
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    if repeated:
        raise DomainError(f"attribute(s) {repeated} are listed more than once")
    return dict(pairs)


class Domain:
    """Ordered attributes, each with a finite number of integer-coded values ``0..size-1``.

    The domain is public input: it is given by the data steward, never read off the data.
    """

    __slots__ = ("attrs", "shape", "_index")

    def __init__(self, attrs: Iterable[str], shape: Iterable[int]):
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

    # -- construction -----------------------------------------------------------------
    @classmethod
    def from_dict(cls, sizes: Mapping[str, int]) -> Domain:
        """Domain from ``{attribute: size}`` (insertion order is the attribute order)."""
        return cls(sizes.keys(), sizes.values())

    @classmethod
    def load(cls, path: str | PathLike[str]) -> Domain:
        """Domain from a JSON file mapping each attribute to its number of values."""
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

    def save(self, path: str | PathLike[str]) -> None:
        """Write the domain as JSON (the format :meth:`load` reads), whole or not at all."""
        with atomic_write(path) as fh:
            json.dump(self.to_dict(), fh, indent=2)

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
        """The sub-domain on ``attrs``, in the order given."""
        attrs = self.check(attrs)
        return Domain(attrs, (self.shape[self._index[a]] for a in attrs))

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
        shape = self.shape if attrs is None else self.project(attrs).shape
        return int(reduce(lambda x, y: x * y, shape, 1))

    def merge(self, other: Domain) -> Domain:
        """Union of two domains: this one's attributes, then the new ones of ``other``."""
        extra = [a for a in other.attrs if a not in self._index]
        for a in other.attrs:
            if a in self._index and self[a] != other[a]:
                raise DomainError(f"attribute {a!r} has size {self[a]} here and {other[a]} there")
        return Domain(self.attrs + tuple(extra), self.shape + tuple(other[a] for a in extra))

    def intersects(self, other: Domain) -> bool:
        return any(a in self._index for a in other.attrs)

    def contains(self, other: Domain | Iterable[str]) -> bool:
        """Whether every attribute of ``other`` is in this domain."""
        names = other.attrs if isinstance(other, Domain) else other
        return all(a in self._index for a in names)

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
