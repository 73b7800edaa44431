"""Model files: a fitted model saved once and answered for as long as its owner keeps it.

A model file (``.dpgm`` by convention) is a zip archive of

* ``model.json``: ``{"format": "dpgm-model", "version": 2, "dpgm": version, "kind": ...,
  "domain": {attribute: size or labels}, "schema": ..., "release": {"ledger": ...,
  "mechanism": ..., "options": ..., "seeded": ...}, "model": {...}, "arrays": {name:
  {"shape": [...], "dtype": "<f8"}}}``, where ``model`` holds what the kind needs besides
  arrays (cliques, the junction tree, parents, the total);
* ``arrays/NAME.npy``: each array in NumPy's ``.npy`` format, numbers only.

Loading never runs code from the file: no pickle, no object arrays, and every array is
read as raw numbers after its header was checked. The shapes each kind needs follow from
the domain and the metadata, so they are checked, and the memory they take is bounded,
before any array is read; the archive must hold exactly the members the metadata names.
A file that is truncated or corrupt, of a newer format, with a shape that disagrees with
the domain, or with any other member is refused in one line naming the file and the
problem.
"""

from __future__ import annotations

import io
import json
import lzma
import math
import zipfile
import zlib
from collections.abc import Callable, Mapping
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np

from dpgm._version import __version__
from dpgm.constraints import Forbidden
from dpgm.domain import Domain
from dpgm.errors import DataError, DpgmError, ModelTooLargeError
from dpgm.files import atomic_write
from dpgm.inference.junction_tree import JunctionTree
from dpgm.inference.loopy import LoopyPlan
from dpgm.measurement import KroneckerQuery, MeasuredFit, Measurement, is_sparse
from dpgm.memory import CELL_BYTES, DEFAULT_MAX_MEMORY, MEASURED_CELL_BYTES, format_bytes
from dpgm.models.base import ModelBase, Release
from dpgm.models.bayesian_network import BayesianNetwork
from dpgm.models.compression import CompressedModel, DomainCompression
from dpgm.models.markov_random_field import MarkovRandomField
from dpgm.models.pairwise import IsingModel, PairwiseModel, TwiseModel
from dpgm.models.records import RecordsModel
from dpgm.models.refinement import RefinedModel, Refinement
from dpgm.models.tables import TableModel

FORMAT = "dpgm-model"
#: the format this dpgm writes; it reads this one and every earlier one (2: a model
#: estimated from measurements keeps them, for its error bars; a model without them is
#: written as format 1)
FORMAT_VERSION = 2
METADATA = "model.json"
#: the most bytes of metadata read (the cliques of a very large model fit far below it)
MAX_METADATA = 64 * 2**20
#: the number types an array may hold
DTYPES = {"<f8": np.float64, "<i8": np.int64}

Arrays = dict[str, np.ndarray]
Shapes = dict[str, tuple[tuple[int, ...], str]]


class ModelFileError(DataError):
    """A model file that cannot be read: the message names the file and what is wrong."""


# -- the kinds -------------------------------------------------------------------------------
def _cliques(meta: Mapping, key: str, domain: Domain) -> list[tuple[str, ...]]:
    value = meta.get(key)
    if not isinstance(value, list) or not all(
            isinstance(c, list) and all(isinstance(a, str) for a in c) for c in value):
        raise ModelFileError(f"'model.{key}' must be a list of lists of attributes")
    cliques = [domain.check(c) for c in value]
    if len({frozenset(c) for c in cliques}) != len(cliques):
        raise ModelFileError(f"'model.{key}' names a clique twice")
    return cliques


def _shape(domain: Domain, clique: tuple[str, ...]) -> tuple[int, ...]:
    return tuple(domain[a] for a in clique)


def _total(meta: Mapping) -> float:
    total = meta.get("total")
    if isinstance(total, bool) or not isinstance(total, (int, float)) or not math.isfinite(total):
        # a noisy total may be below 0 (HDMM's tables); the kind checks what it needs
        raise ModelFileError("'model.total' must be a finite number")
    return float(total)


class _Field:
    """MarkovRandomField: its potentials, and the junction tree (or loopy plan) that
    answers it, so that a loaded model answers bit for bit as the saved one."""

    kind = MarkovRandomField

    @staticmethod
    def save(model: MarkovRandomField) -> tuple[dict, Arrays]:
        meta: dict[str, Any] = {"total": model.total,
                                "cliques": [list(c) for c in model.potentials]}
        if model.loopy is not None:
            plan = model.loopy
            if not isinstance(plan, LoopyPlan):  # a file records a loopy plan's settings
                raise DpgmError(f"cannot save a model answered by a {type(plan).__name__}")
            meta["loopy"] = {"cliques": [list(c) for c in plan.cliques],
                             "damping": plan.damping, "tol": plan.tol,
                             "max_iters": plan.max_iters, "counting": plan.counting}
        else:
            tree = model.tree
            meta["tree"] = {"cliques": [list(c) for c in tree.cliques],
                            "parent": list(tree.parent), "order": list(tree.order),
                            "heuristic": tree.heuristic}
        arrays = {f"potential.{i}": f.values for i, f in enumerate(model.potentials.values())}
        if model.loopy is not None:  # its answers: the beliefs of its calibration
            arrays.update({f"belief.{i}": b for i, b in enumerate(model.loopy_beliefs())})
        if model.measured is not None:  # released measurements: its error bars
            meta["measured"], more = _Measured.save(model.measured)
            arrays.update(more)
        return meta, arrays

    @staticmethod
    def shapes(domain: Domain, meta: Mapping) -> Shapes:
        shapes = {f"potential.{i}": (_shape(domain, c), "<f8")
                  for i, c in enumerate(_cliques(meta, "cliques", domain))}
        if isinstance(meta.get("loopy"), Mapping):
            shapes.update({f"belief.{i}": (_shape(domain, c), "<f8")
                           for i, c in enumerate(_cliques(meta["loopy"], "cliques", domain))})
        if "measured" in meta:
            shapes.update(_Measured.shapes(domain, meta["measured"]))
        return shapes

    @staticmethod
    def working_cells(domain: Domain, meta: Mapping) -> int:
        """Cells that answering the model allocates besides its arrays: the saved junction
        tree's (calibration); a loopy model answers from its saved beliefs."""
        if isinstance(meta.get("loopy"), Mapping):
            return 0
        if not isinstance(meta.get("tree"), Mapping):
            raise ModelFileError("'model' must hold its junction tree ('tree') or its loopy "
                                 "plan ('loopy')")
        return sum(math.prod(_shape(domain, c))
                   for c in _cliques(meta["tree"], "cliques", domain))

    @staticmethod
    def load(domain: Domain, meta: Mapping, arrays: Arrays) -> MarkovRandomField:
        cliques = _cliques(meta, "cliques", domain)
        potentials = {c: arrays[f"potential.{i}"] for i, c in enumerate(cliques)}
        tree = loopy = None
        if isinstance(meta.get("loopy"), Mapping):
            loopy = _loopy(domain, meta["loopy"])
        else:
            tree = _tree(domain, meta["tree"], cliques)
        model = MarkovRandomField(domain, potentials, _total(meta), tree=tree, loopy=loopy)
        if loopy is not None:
            if loopy.cliques != _cliques(meta["loopy"], "cliques", domain):
                raise ModelFileError("'model.loopy.cliques' are not maximal cliques in order")
            model._beliefs = [arrays[f"belief.{i}"] for i in range(len(loopy.cliques))]
        if "measured" in meta:
            model.measured = _Measured.load(domain, meta["measured"], arrays)
        return model


class _Measured:
    """The measurements a MarkovRandomField was estimated from and its estimator's
    settings (:class:`~dpgm.measurement.MeasuredFit`), for its error bars: each
    measurement's clique, values and standard deviations, and its query (the identity,
    a dense or sparse matrix, or Kronecker factors); the structural zeros as 0/1 masks."""

    OPTIONS = {"method": str, "loss": str, "iters": int, "step_size": (float, int, type(None)),
               "inference": str, "max_cells": int, "total": (float, int, type(None)),
               "cliques": list, "weights": list}

    @staticmethod
    def save(fit: MeasuredFit) -> tuple[dict, Arrays]:
        entries, arrays = [], {}
        for i, m in enumerate(fit.measurements):
            entry: dict[str, Any] = {"clique": list(m.clique), "rows": int(m.values.size),
                                     "std": None if np.ndim(m.std) else float(m.std)}
            arrays[f"measured.{i}.values"] = m.values
            if np.ndim(m.std):
                arrays[f"measured.{i}.std"] = np.asarray(m.std, dtype=np.float64)
            if m.query is None:
                entry["query"] = "identity"
            elif isinstance(m.query, KroneckerQuery):
                entry["query"] = "kronecker"
                entry["factors"] = [list(f.shape) for f in m.query.factors]
                arrays.update({f"measured.{i}.factor.{k}": f
                               for k, f in enumerate(m.query.factors)})
            elif is_sparse(m.query):
                coo = m.query.tocoo()
                entry["query"], entry["nonzeros"] = "sparse", int(coo.nnz)
                arrays[f"measured.{i}.data"] = np.asarray(coo.data, dtype=np.float64)
                arrays[f"measured.{i}.row"] = np.asarray(coo.row, dtype=np.int64)
                arrays[f"measured.{i}.col"] = np.asarray(coo.col, dtype=np.int64)
            else:
                entry["query"] = "dense"
                arrays[f"measured.{i}.query"] = np.asarray(m.query, dtype=np.float64)
            entries.append(entry)
        zeros = []
        for j, zero in enumerate(fit.zeros):
            zeros.append(list(zero.attrs))
            arrays[f"measured.zero.{j}"] = np.asarray(zero.mask, dtype=np.int64)
        meta = {"estimator": fit.estimator, "options": fit.options, "measurements": entries,
                "zeros": zeros}
        return meta, arrays

    @classmethod
    def _entries(cls, meta: Any) -> list[Mapping]:
        if not isinstance(meta, Mapping) or not isinstance(meta.get("measurements"), list):
            raise ModelFileError("'model.measured' must hold a list of 'measurements'")
        options = meta.get("options")
        if not isinstance(options, Mapping) or not isinstance(meta.get("estimator"), str) or any(
                k not in cls.OPTIONS or isinstance(v, bool) or not isinstance(v, cls.OPTIONS[k])
                for k, v in options.items()):
            raise ModelFileError("'model.measured' has a malformed estimator or options")
        weights = options.get("weights")
        if weights is not None and (len(weights) != len(meta["measurements"]) or not all(
                isinstance(w, (int, float)) and not isinstance(w, bool) and math.isfinite(w)
                and w > 0 for w in weights)):
            raise ModelFileError("'model.measured.options.weights' must hold one positive "
                                 "number per measurement")
        if not isinstance(meta.get("zeros"), list):
            raise ModelFileError("'model.measured.zeros' must be a list")
        return meta["measurements"]

    @classmethod
    def shapes(cls, domain: Domain, meta: Any) -> Shapes:
        shapes: Shapes = {}

        def count(value: Any, what: str) -> int:
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ModelFileError(f"'model.measured': {what} must be a whole number")
            return value

        for i, entry in enumerate(cls._entries(meta)):
            if not isinstance(entry, Mapping):
                raise ModelFileError("'model.measured.measurements' must hold objects")
            clique = _cliques({"c": [entry.get("clique")]}, "c", domain)[0]
            cells, rows = math.prod(_shape(domain, clique)), count(entry.get("rows"), "rows")
            shapes[f"measured.{i}.values"] = ((rows,), "<f8")
            std = entry.get("std")
            if std is None:
                shapes[f"measured.{i}.std"] = ((rows,), "<f8")
            elif isinstance(std, bool) or not isinstance(std, (int, float)) or not std > 0:
                raise ModelFileError("'model.measured': a std must be a positive number")
            kind = entry.get("query")
            if kind == "identity":
                if rows != cells:
                    raise ModelFileError(f"'model.measured': {rows} values for {cells} cells")
            elif kind == "dense":
                shapes[f"measured.{i}.query"] = ((rows, cells), "<f8")
            elif kind == "sparse":
                nonzeros = count(entry.get("nonzeros"), "nonzeros")
                shapes.update({f"measured.{i}.data": ((nonzeros,), "<f8"),
                               f"measured.{i}.row": ((nonzeros,), "<i8"),
                               f"measured.{i}.col": ((nonzeros,), "<i8")})
            elif kind == "kronecker":
                factors = entry.get("factors")
                if (not isinstance(factors, list) or len(factors) != len(clique)
                        or not all(isinstance(f, list) and len(f) == 2 for f in factors)):
                    raise ModelFileError("'model.measured': one factor shape per attribute")
                for k, (attr, (r, c)) in enumerate(zip(clique, factors)):
                    if count(c, "a factor's columns") != domain[attr]:
                        raise ModelFileError(f"'model.measured': a factor on {attr} has {c} "
                                             f"columns, not {domain[attr]}")
                    shapes[f"measured.{i}.factor.{k}"] = ((count(r, "a factor's rows"), c),
                                                          "<f8")
                if math.prod(f[0] for f in factors) != rows:
                    raise ModelFileError("'model.measured': the factors' rows are not the values'")
            else:
                raise ModelFileError(f"'model.measured': unknown query kind {kind!r}")
        for j, attrs in enumerate(meta["zeros"]):
            clique = _cliques({"c": [attrs]}, "c", domain)[0]
            shapes[f"measured.zero.{j}"] = (_shape(domain, clique), "<i8")
        if meta["options"].get("cliques"):  # the estimator's extra cliques, of this domain
            _cliques(meta["options"], "cliques", domain)
        return shapes

    @classmethod
    def load(cls, domain: Domain, meta: Mapping, arrays: Arrays) -> MeasuredFit:
        from scipy import sparse

        measurements = []
        for i, entry in enumerate(cls._entries(meta)):
            clique = tuple(entry["clique"])
            kind, query = entry["query"], None
            if kind == "dense":
                query = arrays[f"measured.{i}.query"]
            elif kind == "kronecker":
                query = KroneckerQuery([arrays[f"measured.{i}.factor.{k}"]
                                        for k in range(len(clique))])
            elif kind == "sparse":
                row, col = arrays[f"measured.{i}.row"], arrays[f"measured.{i}.col"]
                cells = math.prod(_shape(domain, clique))
                if row.size and (row.min() < 0 or row.max() >= entry["rows"] or col.min() < 0
                                 or col.max() >= cells):
                    raise ModelFileError("'model.measured': a sparse query's index is out "
                                         "of range")
                query = sparse.csr_matrix((arrays[f"measured.{i}.data"], (row, col)),
                                          shape=(entry["rows"], cells))
            std = entry["std"] if entry["std"] is not None else arrays[f"measured.{i}.std"]
            try:
                measurements.append(Measurement(clique, arrays[f"measured.{i}.values"], std,
                                                query))
            except DpgmError as exc:
                raise ModelFileError(f"'model.measured': {exc}") from None
        zeros = [Forbidden(tuple(attrs), arrays[f"measured.zero.{j}"] != 0)
                 for j, attrs in enumerate(meta["zeros"])]
        return MeasuredFit(measurements, dict(meta["options"]), zeros, meta["estimator"])


#: the most loopy belief-propagation iterations a model file may ask for
MAX_LOOPY_ITERS = 100_000


def _loopy(domain: Domain, spec: Mapping) -> LoopyPlan:
    """The saved loopy plan, its settings within the bounds the estimators use."""
    damping, tol = spec.get("damping", 0.5), spec.get("tol", 1e-8)
    iters = spec.get("max_iters", 1000)
    real = (int, float)
    if (isinstance(damping, bool) or not isinstance(damping, real) or not 0 <= damping < 1
            or isinstance(tol, bool) or not isinstance(tol, real) or not 0 < tol < 1
            or isinstance(iters, bool) or not isinstance(iters, int)
            or not 1 <= iters <= MAX_LOOPY_ITERS):
        raise ModelFileError(f"'model.loopy' needs damping in [0, 1), tol in (0, 1) and "
                             f"max_iters from 1 to {MAX_LOOPY_ITERS:,}")
    return LoopyPlan(domain, _cliques(spec, "cliques", domain), damping=float(damping),
                     tol=float(tol), max_iters=iters, counting=spec.get("counting", "bethe"))


def _tree(domain: Domain, spec: Mapping, cliques: list[tuple[str, ...]]) -> JunctionTree:
    """The saved junction tree, checked: a rooted tree whose cliques cover the potentials'."""
    nodes = _cliques(spec, "cliques", domain)
    parent, order = spec.get("parent"), spec.get("order")
    count = len(nodes)
    integers = (isinstance(parent, list) and isinstance(order, list)
                and all(isinstance(v, int) and not isinstance(v, bool) for v in parent + order))
    position = {i: k for k, i in enumerate(order)} if integers else {}
    if (not integers or len(parent) != count or sorted(order) != list(range(count))
            or any(not -1 <= p < count for p in parent)
            or [i for i, p in enumerate(parent) if p == -1] != [order[0]]
            or any(position[parent[i]] >= k for k, i in enumerate(order) if k)):
        raise ModelFileError("'model.tree' is not a rooted tree over its cliques")
    # the nodes holding each attribute, in one pass over the nodes
    holding: dict[str, list[int]] = {a: [] for a in domain.attrs}
    for i, node in enumerate(nodes):
        for attr in node:
            holding[attr].append(i)
    members = [set(n) for n in nodes]
    # a clique is covered by a node holding its rarest attribute (bounded work per clique)
    if any(not holding[a] for a in domain.attrs) or any(
            not any(set(c) <= members[i] for i in min((holding[a] for a in c), key=len))
            for c in cliques if c):
        raise ModelFileError("'model.tree' does not cover the model's cliques and attributes")
    # running intersection: the nodes holding an attribute form one subtree (all but one
    # of them have a parent that holds it too), else calibration would answer wrongly
    for attr, nodes_of in holding.items():
        linked = sum(parent[i] >= 0 and attr in members[parent[i]] for i in nodes_of)
        if linked != len(nodes_of) - 1:
            raise ModelFileError(f"'model.tree' is not a junction tree: the cliques holding "
                                 f"{attr!r} are not connected")
    return JunctionTree(domain, nodes, list(parent), list(order), str(spec.get("heuristic", "")))


class _Tables:
    kind = TableModel

    @staticmethod
    def save(model: TableModel) -> tuple[dict, Arrays]:
        return ({"total": model.total, "independent": model.independent,
                 "cliques": [list(c) for c in model.tables]},
                {f"table.{i}": t for i, t in enumerate(model.tables.values())})

    @staticmethod
    def shapes(domain: Domain, meta: Mapping) -> Shapes:
        return {f"table.{i}": (_shape(domain, c), "<f8")
                for i, c in enumerate(_cliques(meta, "cliques", domain))}

    @staticmethod
    def load(domain: Domain, meta: Mapping, arrays: Arrays) -> TableModel:
        cliques = _cliques(meta, "cliques", domain)
        return TableModel(domain, {c: arrays[f"table.{i}"] for i, c in enumerate(cliques)},
                          _total(meta), independent=bool(meta.get("independent", False)))


class _Compressed:
    """CompressedModel: the compression's mapping per attribute, and the model on the
    compressed domain (saved as a MarkovRandomField, its arrays prefixed ``inner.``)."""

    kind = CompressedModel

    @staticmethod
    def save(model: CompressedModel) -> tuple[dict, Arrays]:
        inner, inner_arrays = _Field.save(model.compressed)
        arrays = {f"inner.{k}": v for k, v in inner_arrays.items()}
        for i, attr in enumerate(model.domain.attrs):
            arrays[f"mapping.{i}"] = np.asarray(model.compression.mappings[attr], np.int64)
        return {"compressed": list(model.compression.compressed.shape), "inner": inner}, arrays

    @staticmethod
    def _small(domain: Domain, meta: Mapping) -> Domain:
        sizes = meta.get("compressed")
        if (not isinstance(sizes, list) or len(sizes) != len(domain)
                or any(isinstance(s, bool) or not isinstance(s, int) or not 1 <= s <= n
                       for s, n in zip(sizes, domain.shape))):
            raise ModelFileError("'model.compressed' must give each attribute a size from 1 "
                                 "to its own")
        return Domain(domain.attrs, sizes)

    @classmethod
    def shapes(cls, domain: Domain, meta: Mapping) -> Shapes:
        small = cls._small(domain, meta)
        shapes = {f"inner.{k}": v for k, v in _Field.shapes(small, _inner(meta)).items()}
        shapes.update({f"mapping.{i}": ((domain[a],), "<i8") for i, a in enumerate(domain)})
        return shapes

    @classmethod
    def working_cells(cls, domain: Domain, meta: Mapping) -> int:
        return _Field.working_cells(cls._small(domain, meta), _inner(meta))

    @classmethod
    def load(cls, domain: Domain, meta: Mapping, arrays: Arrays) -> CompressedModel:
        small = cls._small(domain, meta)
        mappings = {}
        for i, attr in enumerate(domain.attrs):
            mapping = arrays[f"mapping.{i}"]
            if mapping.size and (mapping.min() < 0 or mapping.max() >= small[attr]
                                 or len(np.unique(mapping)) != small[attr]):
                raise ModelFileError(f"the mapping of {attr!r} does not map onto its "
                                     f"{small[attr]} compressed values")
            mappings[attr] = mapping
        inner = {k[len("inner."):]: v for k, v in arrays.items() if k.startswith("inner.")}
        model = _Field.load(small, _inner(meta), inner)
        return CompressedModel(DomainCompression(domain, small, mappings), model)


class _Refined:
    """RefinedModel: the sub-bins per bin of each refined attribute, and the model on the
    split domain (a field or a compressed model, its arrays prefixed ``inner.``)."""

    kind = RefinedModel

    @staticmethod
    def save(model: RefinedModel) -> tuple[dict, Arrays]:
        kind = _kind_of(model.split)
        if kind not in ("MarkovRandomField", "CompressedModel"):
            raise DpgmError(f"cannot save a refined {kind}")
        inner, inner_arrays = KINDS[kind].save(model.split)
        return ({"factors": dict(model.refinement.factors), "inner_kind": kind,
                 "inner": inner}, {f"inner.{k}": v for k, v in inner_arrays.items()})

    @staticmethod
    def _refinement(domain: Domain, meta: Mapping) -> tuple[Refinement, Any]:
        factors = meta.get("factors")
        if not isinstance(factors, Mapping) or not factors or any(
                isinstance(f, bool) or not isinstance(f, int) for f in factors.values()):
            raise ModelFileError("'model.factors' must give each refined attribute a whole "
                                 "number of sub-bins")
        kind = meta.get("inner_kind")
        if kind not in ("MarkovRandomField", "CompressedModel"):
            raise ModelFileError("'model.inner_kind' must be MarkovRandomField or "
                                 "CompressedModel")
        try:
            refinement = Refinement(domain, dict(factors))
        except DpgmError as exc:
            raise ModelFileError(f"'model.factors': {exc}") from None
        return refinement, KINDS[kind]

    @classmethod
    def shapes(cls, domain: Domain, meta: Mapping) -> Shapes:
        refinement, codec = cls._refinement(domain, meta)
        return {f"inner.{k}": v for k, v in codec.shapes(refinement.split,
                                                        _inner(meta)).items()}

    @classmethod
    def working_cells(cls, domain: Domain, meta: Mapping) -> int:
        refinement, codec = cls._refinement(domain, meta)
        return codec.working_cells(refinement.split, _inner(meta))

    @classmethod
    def load(cls, domain: Domain, meta: Mapping, arrays: Arrays) -> RefinedModel:
        refinement, codec = cls._refinement(domain, meta)
        inner = {k[len("inner."):]: v for k, v in arrays.items() if k.startswith("inner.")}
        return RefinedModel(refinement, codec.load(refinement.split, _inner(meta), inner))


def _inner(meta: Mapping) -> Mapping:
    if not isinstance(meta.get("inner"), Mapping):
        raise ModelFileError("'model.inner' must describe the compressed model")
    return meta["inner"]


class _Network:
    """BayesianNetwork: parents per variable and a CPD each; the states are the
    domain's labels."""

    kind = BayesianNetwork

    @staticmethod
    def save(model: BayesianNetwork) -> tuple[dict, Arrays]:
        return ({"name": model.name, "total": model.total,
                 "parents": {v: list(model.parents[v]) for v in model.variables}},
                {f"cpd.{i}": model.cpds[v] for i, v in enumerate(model.variables)})

    @staticmethod
    def _parents(domain: Domain, meta: Mapping) -> dict[str, tuple[str, ...]]:
        parents = meta.get("parents")
        if not isinstance(parents, Mapping) or list(parents) != list(domain.attrs):
            raise ModelFileError("'model.parents' must name every variable, in the domain's "
                                 "order")
        return {v: domain.check(ps) for v, ps in parents.items()}

    @classmethod
    def shapes(cls, domain: Domain, meta: Mapping) -> Shapes:
        return {f"cpd.{i}": (_shape(domain, (*ps, v)), "<f8")
                for i, (v, ps) in enumerate(cls._parents(domain, meta).items())}

    @classmethod
    def load(cls, domain: Domain, meta: Mapping, arrays: Arrays) -> BayesianNetwork:
        parents = cls._parents(domain, meta)
        if any(a not in domain.labels for a in domain.attrs):
            raise ModelFileError("a Bayesian network's domain names every variable's states")
        network = BayesianNetwork(
            list(domain.attrs), {v: list(domain.labels[v]) for v in domain.attrs}, parents,
            {v: arrays[f"cpd.{i}"] for i, v in enumerate(domain.attrs)},
            name=str(meta.get("name", "")), total=_total(meta))
        return network.check()


class _Pairwise:
    """IsingModel and PairwiseModel: couplings and fields; the attributes' names are the
    domain's."""

    kind = PairwiseModel

    @staticmethod
    def save(model: PairwiseModel) -> tuple[dict, Arrays]:
        ising = isinstance(model, IsingModel)
        arrays = ({"couplings": model.A, "fields": model.theta} if ising else
                  {"couplings": model.couplings, "fields": model.fields})
        return {"ising": ising, "total": model.total}, arrays

    @staticmethod
    def shapes(domain: Domain, meta: Mapping) -> Shapes:
        p, sizes = len(domain), set(domain.shape)
        if len(sizes) != 1 or (meta.get("ising") and sizes != {2}):
            raise ModelFileError("a pairwise model's attributes all have one size (2: Ising)")
        k = sizes.pop()
        if meta.get("ising"):
            return {"couplings": ((p, p), "<f8"), "fields": ((p,), "<f8")}
        return {"couplings": ((p, p, k, k), "<f8"), "fields": ((p, k), "<f8")}

    @staticmethod
    def load(domain: Domain, meta: Mapping, arrays: Arrays) -> PairwiseModel:
        kind = IsingModel if meta.get("ising") else PairwiseModel
        model = kind(arrays["couplings"], arrays["fields"], names=list(domain.attrs))
        model.total = _total(meta)
        return model


class _Twise:
    kind = TwiseModel

    @staticmethod
    def save(model: TwiseModel) -> tuple[dict, Arrays]:
        monomials = list(model.coefficients)
        return ({"total": model.total, "monomials": [list(m) for m in monomials]},
                {"coefficients": np.array([model.coefficients[m] for m in monomials],
                                          dtype=np.float64)})

    @staticmethod
    def _monomials(domain: Domain, meta: Mapping) -> list[tuple[int, ...]]:
        monomials = meta.get("monomials")
        if not isinstance(monomials, list) or not all(
                isinstance(m, list) and all(isinstance(i, int) and not isinstance(i, bool)
                                            for i in m) for m in monomials):
            raise ModelFileError("'model.monomials' must be lists of attribute numbers")
        if set(domain.shape) - {2}:
            raise ModelFileError("a t-wise model's attributes are binary")
        return [tuple(m) for m in monomials]

    @classmethod
    def shapes(cls, domain: Domain, meta: Mapping) -> Shapes:
        return {"coefficients": ((len(cls._monomials(domain, meta)),), "<f8")}

    @classmethod
    def load(cls, domain: Domain, meta: Mapping, arrays: Arrays) -> TwiseModel:
        monomials = cls._monomials(domain, meta)
        model = TwiseModel(len(domain), dict(zip(monomials, arrays["coefficients"].tolist())),
                           names=list(domain.attrs))
        model.total = _total(meta)
        return model


class _Records:
    """RecordsModel: its records (codes), one column per attribute in the domain's order."""

    kind = RecordsModel

    @staticmethod
    def save(model: RecordsModel) -> tuple[dict, Arrays]:
        return {"total": model.total, "rows": len(model.records)}, {"records": model.records}

    @staticmethod
    def shapes(domain: Domain, meta: Mapping) -> Shapes:
        rows = meta.get("rows")
        if isinstance(rows, bool) or not isinstance(rows, int) or rows < 0:
            raise ModelFileError("'model.rows' must be a count of records")
        return {"records": ((rows, len(domain)), "<i8")}

    @staticmethod
    def load(domain: Domain, meta: Mapping, arrays: Arrays) -> RecordsModel:
        try:
            return RecordsModel(domain, arrays["records"], _total(meta))
        except DataError as error:
            raise ModelFileError(f"'records' holds a code outside the domain: {error}") from None


#: the model kinds a file may hold, by the name written in it
KINDS: dict[str, Any] = {"MarkovRandomField": _Field, "TableModel": _Tables,
                         "CompressedModel": _Compressed, "BayesianNetwork": _Network,
                         "IsingModel": _Pairwise, "PairwiseModel": _Pairwise,
                         "TwiseModel": _Twise, "RefinedModel": _Refined,
                         "RecordsModel": _Records}


def _kind_of(model: object) -> str:
    for name in KINDS:  # IsingModel before PairwiseModel: the exact class decides
        if type(model).__name__ == name:
            return name
    raise DpgmError(f"cannot save a {type(model).__name__}: not a dpgm model")


# -- writing ---------------------------------------------------------------------------------
def save_model(model: ModelBase, path: str | PathLike[str]) -> None:
    """Write ``model`` to ``path`` (replaced only once the file is complete)."""
    kind = _kind_of(model)
    meta, arrays = KINDS[kind].save(model)
    arrays = {name: np.ascontiguousarray(a, dtype=np.int64 if a.dtype.kind in "iub"
                                         else np.float64) for name, a in arrays.items()}
    domain = model.domain
    header = {
        # format 1 where the model keeps no measurements: earlier dpgm reads it too
        "format": FORMAT, "version": FORMAT_VERSION if any(
            name.startswith("measured.") or ".measured." in name for name in arrays) else 1,
        "dpgm": __version__, "kind": kind,
        "domain": domain.to_json(),
        "schema": None if model.schema is None else model.schema.to_json(),
        "release": None if model.release is None else model.release.to_json(),
        "model": meta,
        "arrays": {name: {"shape": list(a.shape), "dtype": a.dtype.str}
                   for name, a in arrays.items()},
    }
    with atomic_write(path, "wb") as handle, zipfile.ZipFile(handle, "w",
                                                              zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(METADATA, json.dumps(header, indent=1, default=_json_default))
        for name, array in arrays.items():
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, array, allow_pickle=False)
            archive.writestr(f"arrays/{name}.npy", buffer.getvalue())


def _json_default(value: object) -> object:
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON")


# -- reading ---------------------------------------------------------------------------------
def load(path: str | PathLike[str], *, max_memory: float | None = None) -> ModelBase:
    """The model saved in ``path`` by ``model.save``, with its schema and release. No
    budget is spent and no data are read: a saved model is post-processing. Refuses in one
    line a file that is not a complete dpgm model file of a format this version reads, or
    whose arrays would take more than ``max_memory`` bytes (default: half this machine's
    memory)."""
    where = Path(path)
    limit = float(DEFAULT_MAX_MEMORY if max_memory is None else max_memory)
    try:
        return _load(where, limit)
    except ModelTooLargeError:
        raise
    except (ModelFileError, DpgmError) as exc:
        raise ModelFileError(f"{where}: {exc}") from None
    except FileNotFoundError:
        raise ModelFileError(f"{where}: no such file") from None
    except IsADirectoryError:
        raise ModelFileError(f"{where}: a folder, not a model file") from None
    except RecursionError:  # a RuntimeError, but of the metadata: nested too deeply
        raise ModelFileError(f"{where}: not a dpgm model file (malformed metadata: nested "
                             "too deeply)") from None
    except (zipfile.BadZipFile, EOFError, zipfile.LargeZipFile, NotImplementedError,
            OSError, RuntimeError, zlib.error, lzma.LZMAError) as exc:
        # a damaged member (deflate, bzip2, lzma), an encrypted one
        raise ModelFileError(f"{where}: not a dpgm model file (truncated or corrupt: "
                             f"{exc})") from None
    except (TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:
        # metadata of the wrong types or depth: crafted or damaged
        raise ModelFileError(f"{where}: not a dpgm model file (malformed metadata: "
                             f"{type(exc).__name__})") from None


def _load(path: Path, limit: float) -> ModelBase:
    with zipfile.ZipFile(path) as archive:
        members = {info.filename: info for info in archive.infolist()}
        if METADATA not in members:
            raise ModelFileError(f"not a dpgm model file (no {METADATA})")
        if members[METADATA].file_size > MAX_METADATA:
            raise ModelFileError(f"{METADATA} is over {format_bytes(MAX_METADATA)}")
        header = _metadata(archive.read(METADATA))
        domain = _domain(header.get("domain"))
        codec = KINDS[header["kind"]]
        meta = header.get("model")
        if not isinstance(meta, Mapping):
            raise ModelFileError("'model' must be an object")
        try:
            expected = codec.shapes(domain, meta)
        except DpgmError as exc:
            raise ModelFileError(str(exc)) from None
        _check_declared(header.get("arrays"), expected)
        unknown = sorted(set(members) - {METADATA} - {f"arrays/{n}.npy" for n in expected})
        if unknown:
            raise ModelFileError(f"unknown member {unknown[0]!r} (a model file holds "
                                 f"{METADATA} and its arrays only)")
        missing = sorted(n for n in expected if f"arrays/{n}.npy" not in members)
        if missing:
            raise ModelFileError(f"array {missing[0]!r} is missing (truncated?)")
        working = getattr(codec, "working_cells", lambda *_: 0)(domain, meta)
        needed = (sum(math.prod(shape) * CELL_BYTES for shape, _ in expected.values())
                  + MEASURED_CELL_BYTES * working)
        if needed > limit:
            raise ModelTooLargeError(f"{path}: its arrays and inference take "
                                     f"{format_bytes(needed)}, over the "
                                     f"{format_bytes(limit)} allowed (max_memory)")
        arrays = {name: _array(archive, members[f"arrays/{name}.npy"], shape, dtype)
                  for name, (shape, dtype) in expected.items()}
    for name, array in arrays.items():
        # a log-potential may be -inf (a cell of probability zero)
        logs = name.rpartition(".")[0].endswith("potential")
        if array.dtype.kind == "f" and (np.isnan(array).any() or np.isposinf(array).any() or (
                not logs and np.isneginf(array).any())):
            raise ModelFileError(f"array {name!r} holds a value that is not finite")
    schema = _schema(header.get("schema"), domain)
    try:
        model = codec.load(domain, meta, arrays)
    except ModelFileError:
        raise
    except DpgmError as exc:
        raise ModelFileError(f"the model does not hold together: {exc}") from None
    model.schema = schema
    release = header.get("release")
    if release is not None and not isinstance(release, Mapping):
        raise ModelFileError("'release' must be an object")
    model.release = None if release is None else Release.from_json(release)
    return model


def _metadata(raw: bytes) -> dict:
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelFileError(f"{METADATA} is not JSON ({exc})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ModelFileError(f"not a dpgm model file ({METADATA} has no \"format\": "
                             f"\"{FORMAT}\")")
    version = header.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ModelFileError(f"the format version {version!r} is not a positive integer")
    if version > FORMAT_VERSION:
        raise ModelFileError(
            f"written by a newer dpgm ({header.get('dpgm', '?')}, format {version}); this "
            f"dpgm ({__version__}) reads format {FORMAT_VERSION} and earlier: upgrade dpgm")
    if header.get("kind") not in KINDS:
        raise ModelFileError(f"unknown model kind {header.get('kind')!r}; known: "
                             f"{', '.join(KINDS)}")
    return header


def _domain(spec: object) -> Domain:
    if not isinstance(spec, Mapping) or not spec:
        raise ModelFileError("'domain' must name at least one attribute")
    try:
        return Domain.from_dict(spec)
    except (DpgmError, TypeError, ValueError) as exc:
        raise ModelFileError(f"'domain' is not a domain ({exc})") from None


def _schema(spec: object, domain: Domain):
    if spec is None:
        return None
    from dpgm.schema import Schema

    try:
        schema = Schema.from_json(spec)
    except DpgmError as exc:
        raise ModelFileError(f"'schema' is not a schema ({exc})") from None
    if schema.domain != domain:
        raise ModelFileError("the schema's domain is not the model's")
    return schema


def _check_declared(declared: object, expected: Shapes) -> None:
    """The arrays the metadata declares are those the kind needs, shaped by the domain."""
    if not isinstance(declared, Mapping) or set(declared) != set(expected):
        names = sorted(declared) if isinstance(declared, Mapping) else declared
        raise ModelFileError(f"'arrays' declares {names}; this model needs "
                             f"{sorted(expected)}")
    for name, (shape, dtype) in expected.items():
        spec = declared[name]
        if not isinstance(spec, Mapping) or spec.get("shape") != list(shape) or \
                spec.get("dtype") != dtype:
            raise ModelFileError(f"array {name!r} is declared {spec!r}; the domain gives "
                                 f"shape {list(shape)} of {dtype}")


def _array(archive: zipfile.ZipFile, info: zipfile.ZipInfo, shape: tuple[int, ...],
           dtype: str) -> np.ndarray:
    """One array, read as raw numbers once its .npy header matched ``shape`` and ``dtype``
    (never more bytes than those take)."""
    nbytes = math.prod(shape) * 8
    if info.file_size > nbytes + 4096:  # the header is far below 4 KiB for these shapes
        raise ModelFileError(f"{info.filename} is larger than its shape {list(shape)} needs")
    with archive.open(info) as handle:
        try:
            major, _ = np.lib.format.read_magic(handle)
            read_header: Callable = (np.lib.format.read_array_header_1_0 if major == 1
                                     else np.lib.format.read_array_header_2_0)
            found_shape, fortran, found_dtype = read_header(handle)
        except ValueError as exc:
            raise ModelFileError(f"{info.filename} is not a .npy array ({exc})") from None
        if found_shape != shape or found_dtype.str != dtype or fortran:
            raise ModelFileError(
                f"{info.filename} holds shape {list(found_shape)} of {found_dtype.str}; the "
                f"domain gives {list(shape)} of {dtype}")
        data = handle.read(nbytes + 1)
    if len(data) != nbytes:
        raise ModelFileError(f"{info.filename} holds {len(data)} bytes of data, not {nbytes}")
    return np.frombuffer(data, dtype=DTYPES[dtype]).reshape(shape).copy()
