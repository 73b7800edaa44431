"""Model files (issue 25): every model family round-trips exactly, and a bad file is refused
in one line before anything large is allocated."""

from __future__ import annotations

import io
import json
import tracemalloc
import zipfile

import numpy as np
import pandas as pd
import pytest
from schema_helpers import SPEC, raw_table

import dpgm
from dpgm import Domain, MarkovRandomField, Schema
from dpgm.errors import ModelTooLargeError
from dpgm.inference import queries
from dpgm.mechanisms import MST, MWEM
from dpgm.models import (
    BayesianNetwork,
    CompressedModel,
    DomainCompression,
    IsingModel,
    Model,
    PairwiseModel,
    RecordsModel,
    TableModel,
    TwiseModel,
)
from dpgm.models.files import FORMAT_VERSION, ModelFileError

DOMAIN = Domain(["a", "b", "c"], [2, 3, 4])


def field(seed: int = 0, total: float = 120.0) -> MarkovRandomField:
    rng = np.random.default_rng(seed)
    return MarkovRandomField(DOMAIN, {("a", "b"): rng.normal(size=(2, 3)),
                                      ("b", "c"): rng.normal(size=(3, 4))}, total)


def network() -> BayesianNetwork:
    return BayesianNetwork(
        ["rain", "wet"], {"rain": ["no", "yes"], "wet": ["dry", "damp", "soaked"]},
        {"rain": (), "wet": ("rain",)},
        {"rain": np.array([0.7, 0.3]),
         "wet": np.array([[0.8, 0.15, 0.05], [0.1, 0.3, 0.6]])}, name="lawn", total=50.0)


def compressed() -> CompressedModel:
    small = Domain(DOMAIN.attrs, [2, 2, 3])
    mappings = {"a": np.arange(2), "b": np.array([0, 1, 1]), "c": np.array([0, 1, 2, 2])}
    inner = MarkovRandomField(small, {("a", "b"): np.log([[1.0, 2.0], [3.0, 1.0]]),
                                      ("c",): np.log([1.0, 2.0, 3.0])}, 80.0)
    return CompressedModel(DomainCompression(DOMAIN, small, mappings), inner)


def loopy(counting: str) -> MarkovRandomField:
    """An approximate model (loopy belief propagation) on a cycle of three pairs."""
    from dpgm.estimation import Measurement, estimate

    rng = np.random.default_rng(1)
    measured = [Measurement(c, rng.uniform(5, 20, DOMAIN.size(c)), 1.0)
                for c in [("a", "b"), ("b", "c"), ("a", "c")]]
    return estimate(DOMAIN, measured, inference=counting, iters=30)


FAMILIES = {
    "field": field,
    "loopy": lambda: loopy("loopy"),
    "convex": lambda: loopy("convex"),
    "tables": lambda: TableModel(DOMAIN, {("a", "b"): np.arange(6.0).reshape(2, 3),
                                          ("c",): np.array([1.0, 2.0, 0.0, 3.0]) * 2.5},
                                 15.0, independent=True),
    "compressed": compressed,
    "records": lambda: RecordsModel(DOMAIN, np.array([[0, 0, 1], [1, 2, 3], [1, 2, 0],
                                                      [0, 1, 3], [1, 0, 2]]), 12.5),
    "network": network,
    "ising": lambda: IsingModel(np.array([[0, 0.5, 0], [0.5, 0, -0.3], [0, -0.3, 0]]),
                                np.array([0.1, 0.0, -0.2]), names=["x", "y", "z"]),
    "pairwise": lambda: PairwiseModel(_couplings(), names=["p", "q"]),
    "twise": lambda: TwiseModel(3, {(0, 1, 2): 0.4, (0,): -0.2}),
}


def _couplings() -> np.ndarray:
    w = np.zeros((2, 2, 3, 3))
    w[0, 1] = np.arange(9.0).reshape(3, 3) / 10
    w[1, 0] = w[0, 1].T
    return w


def test_a_fitted_model_implements_the_protocol():
    for make in FAMILIES.values():
        assert isinstance(make(), Model)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_family_round_trips_exactly(family, tmp_path):
    model = FAMILIES[family]()
    path = tmp_path / "model.dpgm"
    model.save(path)
    loaded = dpgm.load(path)
    assert type(loaded) is type(model)
    assert loaded.domain == model.domain and loaded.domain.labels == model.domain.labels
    assert loaded.total == model.total
    attrs = list(model.domain.attrs)
    for k in (1, 2):
        for start in range(len(attrs) - k + 1):
            clique = attrs[start:start + k]
            np.testing.assert_array_equal(loaded.marginal(clique), model.marginal(clique))
    first = attrs[0]
    label = model.domain.label(first, 1)
    np.testing.assert_array_equal(loaded.marginal(attrs[-1:], given={first: label}),
                                  model.marginal(attrs[-1:], given={first: label}))
    np.testing.assert_array_equal(loaded.synthetic_data(40, rng=3).records,
                                  model.synthetic_data(40, rng=3).records)


def test_a_field_answers_linear_queries_and_map_as_before(tmp_path):
    model = field()
    model.save(tmp_path / "m.dpgm")
    loaded = dpgm.load(tmp_path / "m.dpgm")
    matrices = {"a": queries.identity(2), "c": queries.prefix(4)}
    np.testing.assert_array_equal(loaded.answer_linear(matrices), model.answer_linear(matrices))
    assert loaded.map({"b": 1}) == model.map({"b": 1})


def test_a_network_answers_its_queries_as_before(tmp_path):
    model = network()
    model.save(tmp_path / "bn.dpgm")
    loaded = dpgm.load(tmp_path / "bn.dpgm")
    pd.testing.assert_series_equal(loaded.query(["rain"], {"wet": "soaked"}),
                                   model.query(["rain"], {"wet": "soaked"}))
    assert loaded.map_query(["rain", "wet"]) == model.map_query(["rain", "wet"])
    assert loaded.name == "lawn"


def test_a_mechanisms_model_keeps_its_schema_and_ledger(tmp_path):
    schema = Schema.from_json(SPEC)
    mechanism = MST(1.0, iters=30)
    model = mechanism.fit(raw_table(200), rng=0, schema=schema)
    assert model.schema is schema and model.release.seeded
    assert model.release.mechanism == "MST" and model.release.options["epsilon"] == 1.0
    assert [e["label"] for e in model.release.ledger["entries"]] == \
        [e.label for e in mechanism.budget.ledger]
    model.save(tmp_path / "mst.dpgm")
    loaded = dpgm.load(tmp_path / "mst.dpgm")
    assert loaded.schema.to_json() == schema.to_json()
    assert loaded.release == model.release
    # decoded rows, the same for a seed; given as a raw value (an age goes to its bin)
    pd.testing.assert_frame_equal(loaded.synthetic_data(30, rng=5, given={"age": 42}),
                                  model.synthetic_data(30, rng=5, given={"age": 42}))
    pd.testing.assert_frame_equal(loaded.synthetic_data(30, rng=5),
                                  mechanism.synthetic_data(30, rng=5))
    rows = loaded.synthetic_data(30, rng=5, given={"age": 42})
    assert rows["age"].between(40, 50).all()


def test_a_table_model_from_an_original_estimator_round_trips(tmp_path):
    data = Schema.from_json(SPEC).encode(raw_table(200))
    model = MWEM(1.0, estimator="original", rounds=3).fit(data, rng=0)
    assert isinstance(model, TableModel)
    model.save(tmp_path / "mwem.dpgm")
    loaded = dpgm.load(tmp_path / "mwem.dpgm")
    for clique in model.cliques:
        np.testing.assert_array_equal(loaded.marginal(clique), model.marginal(clique))


# -- the file battery --------------------------------------------------------------------------
def saved(tmp_path, model=None) -> tuple:
    path = tmp_path / "model.dpgm"
    (model or field()).save(path)
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    return path, members


def rewrite(path, members: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)


def header_of(members) -> dict:
    return json.loads(members["model.json"])


def refused(path, match: str | None, kind=ModelFileError) -> str:
    with pytest.raises(kind, match=match) as caught:
        dpgm.load(path)
    message = str(caught.value)
    assert "\n" not in message and str(path) in message
    return message


def npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array, allow_pickle=True)
    return buffer.getvalue()


def test_a_truncated_file_is_refused(tmp_path):
    path, _ = saved(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    refused(path, "truncated or corrupt")


def test_a_corrupt_array_is_refused(tmp_path):
    path, members = saved(tmp_path)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    data = bytearray(path.read_bytes())
    at = data.index(b"arrays/potential.1.npy") + 200  # inside the stored array's bytes
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))
    refused(path, "truncated or corrupt|not a .npy")


def test_not_a_model_file_is_refused(tmp_path):
    path = tmp_path / "model.dpgm"
    path.write_text("a,b\n1,2\n")
    refused(path, "not a dpgm model file")
    refused(tmp_path / "missing.dpgm", "no such file")


def test_a_newer_format_is_refused(tmp_path):
    path, members = saved(tmp_path)
    header = header_of(members)
    header["version"] = FORMAT_VERSION + 1
    rewrite(path, {**members, "model.json": json.dumps(header).encode()})
    refused(path, "newer dpgm.*upgrade")


def test_declared_shapes_that_disagree_with_the_domain_are_refused(tmp_path):
    path, members = saved(tmp_path)
    header = header_of(members)
    header["arrays"]["potential.0"]["shape"] = [3, 2]
    rewrite(path, {**members, "model.json": json.dumps(header).encode()})
    refused(path, "potential.0.*declared")


def test_an_array_whose_header_disagrees_is_refused(tmp_path):
    path, members = saved(tmp_path)
    rewrite(path, {**members, "arrays/potential.0.npy": npy(np.zeros((3, 2)))})
    refused(path, r"holds shape \[3, 2\]")


def test_a_pickle_member_is_refused(tmp_path):
    path, members = saved(tmp_path)
    rewrite(path, {**members, "arrays/evil.pkl": b"\x80\x04K\x01."})
    refused(path, "unknown member 'arrays/evil.pkl'")


def test_an_object_array_is_refused_without_unpickling(tmp_path):
    path, members = saved(tmp_path)
    rewrite(path, {**members, "arrays/potential.0.npy": npy(np.array([[object()] * 3] * 2))})
    refused(path, r"\|O")


def test_oversized_declared_arrays_are_refused_before_any_is_read(tmp_path):
    path, members = saved(tmp_path)
    header = header_of(members)
    header["domain"] = {"a": 100_000, "b": 100_000, "c": 4}
    header["arrays"]["potential.0"]["shape"] = [100_000, 100_000]
    header["arrays"]["potential.1"]["shape"] = [100_000, 4]
    rewrite(path, {**members, "model.json": json.dumps(header).encode()})
    tracemalloc.start()
    try:
        refused(path, "over the", kind=ModelTooLargeError)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 10 * 2**20  # nothing of the 80 GB declared was allocated


def test_a_model_that_does_not_hold_together_is_refused(tmp_path):
    path, members = saved(tmp_path, network())
    cpd = np.array([0.5, 0.6])  # a CPD whose row does not sum to 1
    rewrite(path, {**members, "arrays/cpd.0.npy": npy(cpd)})
    refused(path, "does not hold together")


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_family_answers_conditional_and_map_queries_in_labels(family):
    """The protocol's query verbs, checked against the marginal they come from."""
    model = FAMILIES[family]()
    first, *rest = model.domain.attrs
    label = model.domain.label(first, 0)
    table = model.conditional_table(rest[:1], given={first: label})
    expected = model.marginal(rest[:1], given={first: label})
    np.testing.assert_allclose(table.to_numpy(), expected / expected.sum(), rtol=1e-12)
    assert list(table.index) == list(model.domain.labels.get(rest[0], range(model.domain[rest[0]])))
    best = model.map_query(rest[:1], {first: label})  # BN: pgmpy names it evidence
    assert best == {rest[0]: table.idxmax()}
    if family != "tables" or model.independent:
        record = model.map_query(None, {first: label})
        assert set(record) == set(rest)


def test_a_tree_without_the_running_intersection_property_is_refused(tmp_path):
    """A crafted tree that passes the shape checks but would calibrate wrongly."""
    model = MarkovRandomField(Domain(["a", "b", "c"], [2, 2, 2]),
                              {("a", "b"): np.zeros((2, 2)), ("b", "c"): np.zeros((2, 2))}, 5.0)
    path, members = saved(tmp_path, model)
    header = header_of(members)
    header["model"]["tree"] = {"cliques": [["a", "b"], ["c"], ["b", "c"]], "parent": [-1, 0, 1],
                               "order": [0, 1, 2], "heuristic": ""}
    rewrite(path, {**members, "model.json": json.dumps(header).encode()})
    refused(path, "not a junction tree")


@pytest.mark.parametrize("change", [
    {"kind": ["MarkovRandomField"]},
    {"release": {"ledger": {"entries": [{"label": 3}]}, "seeded": "no"}},
    {"model": {"total": 5.0, "cliques": [["a", "b"], [{"x": 1}]]}},
    {"model": {"total": 5.0, "cliques": [["a", "b"], ["a", "b"]]}},
    {"model": {"total": 5.0, "cliques": [["a", "b"], ["b", "c"]],
               "tree": {"cliques": [["a", "b"], ["b", "c"]], "parent": [-1, "0"],
                        "order": [0, 1.0]}}},
    {"domain": {"a": [[[[[[[[]]]]]]]]}},
])
def test_malformed_metadata_is_refused_in_one_line(tmp_path, change):
    path, members = saved(tmp_path)
    header = header_of(members)
    header.update(change)
    rewrite(path, {**members, "model.json": json.dumps(header).encode()})
    refused(path, None)  # the kind, one line and the path: the message varies


def test_deeply_nested_metadata_is_refused_in_one_line(tmp_path):
    path, members = saved(tmp_path)
    text = members["model.json"].decode().replace('"schema": null',
                                                  '"schema": ' + "[" * 100_000 + "]" * 100_000)
    rewrite(path, {**members, "model.json": text.encode()})
    refused(path, "malformed metadata|not JSON|schema")


def test_a_junction_tree_too_large_to_calibrate_is_refused_at_load(tmp_path):
    """The arrays of a saved field may be small while its saved tree is huge: what answering
    it allocates counts too, before any array is read."""
    path, members = saved(tmp_path)
    for size, limit in [(5000, 100 * 2**20), (10**6, None)]:  # 600 MB; 24 PB
        header = header_of(members)
        header["domain"] = {"a": 2, "b": 3, "c": 4, "d": size, "e": size}
        header["model"]["tree"]["cliques"][0] += ["d", "e"]
        rewrite(path, {**members, "model.json": json.dumps(header).encode()})
        with pytest.raises(ModelTooLargeError, match="arrays and inference take"):
            dpgm.load(path, max_memory=limit)
    assert dpgm.load(path, max_memory=2**60).domain["d"] == 10**6  # within a limit: loads


def test_a_field_without_its_tree_or_loopy_plan_is_refused(tmp_path):
    path, members = saved(tmp_path)
    header = header_of(members)
    del header["model"]["tree"]
    rewrite(path, {**members, "model.json": json.dumps(header).encode()})
    refused(path, "junction tree .*or its loopy plan")


def test_a_loopy_plan_that_would_iterate_without_bound_is_refused(tmp_path):
    path, members = saved(tmp_path, loopy("loopy"))
    header = header_of(members)
    header["model"]["loopy"]["max_iters"] = 10**12
    rewrite(path, {**members, "model.json": json.dumps(header).encode()})
    refused(path, "max_iters from 1")


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_an_array_that_is_not_finite_is_refused(tmp_path, value):
    path, members = saved(tmp_path, TableModel(DOMAIN, {("a", "b"): np.ones((2, 3))}, 6.0))
    table = np.ones((2, 3))
    table[1, 2] = value
    rewrite(path, {**members, "arrays/table.0.npy": npy(table)})
    refused(path, "'table.0' holds a value that is not finite")


def test_a_log_potential_of_minus_infinity_is_a_zero_cell_and_loads(tmp_path):
    model = MarkovRandomField(DOMAIN, {("a", "b"): np.log([[1.0, 0.0, 2.0], [1.0, 1.0, 1.0]])},
                              10.0)
    model.save(tmp_path / "zero.dpgm")
    np.testing.assert_array_equal(dpgm.load(tmp_path / "zero.dpgm").marginal(["a", "b"]),
                                  model.marginal(["a", "b"]))


@pytest.mark.parametrize("total", ["NaN", None, 1e400])
def test_a_total_that_is_not_a_finite_number_is_refused(tmp_path, total):
    path, members = saved(tmp_path, TableModel(DOMAIN, {("a", "b"): np.ones((2, 3))}, 6.0))
    header = header_of(members)
    header["model"]["total"] = total
    rewrite(path, {**members, "model.json": json.dumps(header).encode()})
    refused(path, "'model.total' must be a finite number")


def test_a_field_with_a_total_of_zero_does_not_hold_together(tmp_path):
    path, members = saved(tmp_path)
    header = header_of(members)
    header["model"]["total"] = 0
    rewrite(path, {**members, "model.json": json.dumps(header).encode()})
    refused(path, "does not hold together: total")


def test_exact_inference_refuses_a_junction_tree_over_the_memory_limit():
    """A model whose tree is built on first use (a pairwise model, a network, a field given
    without a tree) checks the tree's memory before calibrating it."""
    domain = Domain(list("abcd"), [300] * 4)
    cycle = [("a", "b"), ("b", "c"), ("c", "d"), ("d", "a")]
    model = MarkovRandomField(domain, {c: np.zeros((300, 300)) for c in cycle}, 5.0)
    model.max_memory = 2**20
    with pytest.raises(ModelTooLargeError, match="exact inference on this model"):
        model.marginal(["a"])


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_family_streams_its_records_in_chunks(family):
    """synthetic_chunks: chunks of at most chunk_rows, reproducible from a seed; one chunk
    of n is synthetic_data's sample; given holds in every chunk; n = 0 is one empty chunk."""
    model = FAMILIES[family]()
    whole = model.synthetic_data(90, rng=5)
    (one,) = model.synthetic_chunks(90, rng=5, chunk_rows=90)
    np.testing.assert_array_equal(one.records, whole.records)
    chunks = list(model.synthetic_chunks(90, rng=5, chunk_rows=25))
    assert [len(c) for c in chunks] == [25, 25, 25, 15]
    assert all(c.domain == model.domain for c in chunks)
    again = model.synthetic_chunks(90, rng=5, chunk_rows=25)
    assert all(np.array_equal(a.records, b.records) for a, b in zip(chunks, again))
    assert not all(np.array_equal(chunks[0].records, c.records[:25]) for c in chunks[1:3])
    first = model.domain.attrs[0]
    given = {first: model.domain.label(first, 1)}
    if family == "tables":  # independent tables cannot condition
        with pytest.raises(dpgm.DpgmError, match="given needs a graphical model"):
            next(model.synthetic_chunks(60, rng=6, given=given, chunk_rows=16))
    else:
        for chunk in model.synthetic_chunks(60, rng=6, given=given, chunk_rows=16):
            assert (chunk.records[:, 0] == 1).all()
    assert [len(c) for c in model.synthetic_chunks(0)] == [0]
    with pytest.raises(dpgm.DpgmError, match="chunk_rows"):
        model.synthetic_chunks(10, chunk_rows=0)


def test_decoded_chunks_keep_the_schema_dtypes():
    """A schema's model streams DataFrames in original units, every chunk with the same
    dtypes, and one chunk of n is synthetic_data's."""
    schema = Schema.from_json(SPEC)
    mechanism = MST(1.0)
    model = mechanism.fit(raw_table(300, seed=2), rng=0, schema=schema)
    whole = model.synthetic_data(120, rng=4)
    (one,) = model.synthetic_chunks(120, rng=4, chunk_rows=500)
    pd.testing.assert_frame_equal(one, whole)
    chunks = list(model.synthetic_chunks(120, rng=4, chunk_rows=7))
    assert sum(len(c) for c in chunks) == 120 and len(chunks) == 18
    assert all(c.dtypes.equals(whole.dtypes) for c in chunks)
    streamed = list(mechanism.synthetic_chunks(50, rng=4, chunk_rows=20))
    assert [len(c) for c in streamed] == [20, 20, 10]
