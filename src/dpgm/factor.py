"""Dense tables over named attributes whose arithmetic broadcasts by attribute name."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from dpgm.domain import Domain
from dpgm.errors import DomainError


class Factor:
    """A dense table ``values`` over ``domain`` (one axis per attribute, in domain order).

    Binary operations align operands by attribute name: the result lives on the union of
    the two domains, this factor's attributes first.
    """

    __slots__ = ("domain", "values")

    def __init__(self, domain: Domain, values: np.ndarray | float):
        values = np.asarray(values, dtype=np.float64)
        if values.shape != domain.shape:
            # a flat vector is accepted in C order; any other shape is ambiguous
            if values.ndim <= 1 and values.size == domain.size():
                values = values.reshape(domain.shape)
            else:
                raise DomainError(f"values of shape {values.shape} do not fit domain {domain}")
        self.domain = domain
        self.values = values

    # -- constructors -----------------------------------------------------------------
    @classmethod
    def zeros(cls, domain: Domain) -> Factor:
        return cls(domain, np.zeros(domain.shape))

    @classmethod
    def ones(cls, domain: Domain) -> Factor:
        return cls(domain, np.ones(domain.shape))

    @classmethod
    def uniform(cls, domain: Domain) -> Factor:
        return cls(domain, np.full(domain.shape, 1.0 / domain.size()))

    @classmethod
    def random(cls, domain: Domain, rng: np.random.Generator | int | None = None) -> Factor:
        return cls(domain, np.random.default_rng(rng).random(domain.shape))

    # -- reshaping --------------------------------------------------------------------
    @property
    def attrs(self) -> tuple[str, ...]:
        return self.domain.attrs

    def transpose(self, attrs: Iterable[str]) -> Factor:
        """The same table with its axes in the order of ``attrs`` (a permutation)."""
        attrs = tuple(attrs)
        if set(attrs) != set(self.attrs) or len(attrs) != len(self.attrs):
            raise DomainError(f"{list(attrs)} is not a permutation of {list(self.attrs)}")
        return Factor(
            self.domain.project(attrs), np.transpose(self.values, self.domain.axes(attrs))
        )

    def broadcast_shape(self, domain: Domain) -> np.ndarray:
        """The values reshaped (not copied) to broadcast against a table on ``domain``."""
        if not domain.contains(self.domain):
            raise DomainError(f"{self.domain} is not contained in {domain}")
        own = [a for a in domain.attrs if a in self.domain]
        values = self.values
        if tuple(own) != self.attrs:
            values = np.transpose(values, self.domain.axes(own))
        shape = tuple(domain[a] if a in self.domain else 1 for a in domain.attrs)
        return values.reshape(shape)

    def expand(self, domain: Domain) -> Factor:
        """This factor as a table on the larger ``domain`` (constant along the new axes)."""
        return Factor(domain, np.broadcast_to(self.broadcast_shape(domain), domain.shape).copy())

    # -- arithmetic -------------------------------------------------------------------
    def _binary(self, other: Factor | float, op) -> Factor:
        if isinstance(other, Factor):
            domain = self.domain.merge(other.domain)
            return Factor(domain, op(self.broadcast_shape(domain), other.broadcast_shape(domain)))
        return Factor(self.domain, op(self.values, float(other)))

    def __mul__(self, other: Factor | float) -> Factor:
        return self._binary(other, np.multiply)

    def __add__(self, other: Factor | float) -> Factor:
        return self._binary(other, np.add)

    def __sub__(self, other: Factor | float) -> Factor:
        return self._binary(other, np.subtract)

    def __truediv__(self, other: Factor | float) -> Factor:
        # 0/0 is taken as 0: conditional tables of impossible parent values
        with np.errstate(divide="ignore", invalid="ignore"):
            out = self._binary(other, np.divide)
        out.values[np.isnan(out.values)] = 0.0
        return out

    __rmul__ = __mul__
    __radd__ = __add__

    def __neg__(self) -> Factor:
        return Factor(self.domain, -self.values)

    def __rsub__(self, other: float) -> Factor:
        return Factor(self.domain, float(other) - self.values)

    def exp(self) -> Factor:
        return Factor(self.domain, np.exp(self.values))

    def log(self) -> Factor:
        with np.errstate(divide="ignore"):
            return Factor(self.domain, np.log(self.values))

    # -- reductions -------------------------------------------------------------------
    def _reduce(self, attrs: Iterable[str] | None, reducer) -> Factor:
        """Reduce away ``attrs`` (all attributes when None)."""
        attrs = self.attrs if attrs is None else self.domain.check(attrs)
        axes = self.domain.axes(attrs)
        return Factor(self.domain.marginalize(attrs), reducer(self.values, axis=axes))

    def sum(self, attrs: Iterable[str] | None = None) -> Factor:
        """Sum out ``attrs`` (all by default)."""
        return self._reduce(attrs, np.sum)

    def max(self, attrs: Iterable[str] | None = None) -> Factor:
        """Maximise out ``attrs`` (all by default)."""
        return self._reduce(attrs, np.max)

    def logsumexp(self, attrs: Iterable[str] | None = None) -> Factor:
        """``log(sum(exp(values)))`` over ``attrs`` (all by default), computed stably."""
        return self._reduce(attrs, logsumexp)

    def project(self, attrs: Iterable[str], log: bool = False) -> Factor:
        """The marginal on ``attrs`` (in that order), summing (or log-sum-exp-ing) the rest out."""
        attrs = self.domain.check(attrs)
        drop = [a for a in self.attrs if a not in attrs]
        reduced = self.logsumexp(drop) if log else self.sum(drop)
        return reduced.transpose(attrs)

    def normalize(self, total: float = 1.0, log: bool = False) -> Factor:
        """Scale to sum to ``total`` (in log space: shift so that logsumexp equals log(total))."""
        if log:
            return Factor(self.domain, self.values - logsumexp(self.values) + np.log(total))
        return Factor(self.domain, self.values * (total / self.values.sum()))

    # -- misc ---------------------------------------------------------------------------
    def datavector(self, flatten: bool = True) -> np.ndarray:
        return self.values.ravel() if flatten else self.values

    def copy(self) -> Factor:
        return Factor(self.domain, self.values.copy())

    def allclose(self, other: Factor, **kwargs) -> bool:
        """Equal up to rounding, after aligning attribute order."""
        if set(other.attrs) != set(self.attrs):
            return False
        return bool(np.allclose(self.values, other.transpose(self.attrs).values, **kwargs))

    def __repr__(self) -> str:
        return f"Factor({self.domain!r})"


def logsumexp(
    values: np.ndarray, axis: int | tuple[int, ...] | None = None, keepdims: bool = False
) -> np.ndarray:
    """Stable ``log(sum(exp(values)))``; all ``-inf`` slices give ``-inf`` without warnings."""
    if axis == ():
        return values.copy()
    peak = np.max(values, axis=axis, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(values - peak), axis=axis, keepdims=True)) + peak
    return out if keepdims else np.squeeze(out, axis=axis) if axis is not None else out.reshape(())
