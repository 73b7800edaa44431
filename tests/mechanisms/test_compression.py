"""DomainCompression: merging rare values (decided from noisy one-way counts) and back."""

from __future__ import annotations

import numpy as np
import pytest
from brute_force import joint, marginal

from dpgm import Dataset, Domain, MarkovRandomField, Measurement
from dpgm.mechanisms import DomainCompression


def _expanded_joint(compression: DomainCompression, compressed_joint: np.ndarray) -> np.ndarray:
    """Brute force: p(x) = p_c(code(x)) / Π_a |{values of a sharing code(x_a)}|."""
    original = compression.original
    grids = np.meshgrid(*[np.arange(s) for s in original.shape], indexing="ij")
    codes = tuple(compression.mappings[a][g] for a, g in zip(original.attrs, grids))
    out = compressed_joint[codes].copy()
    for a, g in zip(original.attrs, grids):
        sharing = np.bincount(compression.mappings[a], minlength=compression.compressed[a])
        out /= sharing[compression.mappings[a][g]]
    return out


# -- from_one_way ------------------------------------------------------------------------
def test_merges_exactly_values_below_three_std():
    domain = Domain(["x", "y"], [6, 3])
    #                 kept  rare  kept  rare  rare  kept (3·std = 30; 30 itself is kept)
    values = np.array([100.0, 5.0, 50.0, -3.0, 29.9, 30.0])
    one_way = [Measurement(("x",), values, 10.0), Measurement(("y",), [500.0, 400.0, 300.0], 10.0)]
    compression, restated = DomainCompression.from_one_way(domain, one_way)

    np.testing.assert_array_equal(compression.mappings["x"], [0, 3, 1, 3, 3, 2])
    np.testing.assert_array_equal(compression.mappings["y"], [0, 1, 2])
    assert compression.original == domain
    assert compression.compressed == Domain(["x", "y"], [4, 3])

    x, y = restated
    assert x.clique == ("x",)
    np.testing.assert_allclose(x.values, [100.0, 50.0, 30.0, 5.0 - 3.0 + 29.9])
    np.testing.assert_allclose(x.std, [10.0, 10.0, 10.0, np.sqrt(3 * 10.0**2)])
    assert y is one_way[1]  # nothing merged: the measurement is kept as it was
    x.validate(compression.compressed)


def test_per_cell_std_and_sigmas():
    domain = Domain(["x"], [5])
    stds = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    values = np.array([10.0, 5.0, 8.0, 100.0, 9.0])
    # sigmas=2: thresholds 2, 4, 6, 8, 10 -> only the last value (9 < 10) is rare
    compression, (m,) = DomainCompression.from_one_way(
        domain, [Measurement("x", values, stds)], 2.0
    )
    np.testing.assert_array_equal(compression.mappings["x"], [0, 1, 2, 3, 4])
    np.testing.assert_allclose(m.values, values)
    # sigmas=3: thresholds 3, 6, 9, 12, 15 -> values 1 (5 < 6), 2 (8 < 9), 4 (9 < 15) merge
    compression, (m,) = DomainCompression.from_one_way(domain, [Measurement("x", values, stds)])
    np.testing.assert_array_equal(compression.mappings["x"], [0, 2, 2, 1, 2])
    np.testing.assert_allclose(m.values, [10.0, 100.0, 5.0 + 8.0 + 9.0])
    np.testing.assert_allclose(m.std, [1.0, 4.0, np.sqrt(4.0 + 9.0 + 25.0)])
    assert compression.compressed["x"] == 3


def test_all_values_rare_collapse_to_one():
    domain = Domain(["x"], [4])
    compression, (m,) = DomainCompression.from_one_way(
        domain, [Measurement("x", [1.0, -2.0, 3.0, 0.5], 2.0)]
    )
    np.testing.assert_array_equal(compression.mappings["x"], [0, 0, 0, 0])
    assert compression.compressed["x"] == 1
    np.testing.assert_allclose(m.values, [2.5])
    np.testing.assert_allclose(m.std, [4.0])


def test_nothing_merged_is_identity():
    rng = np.random.default_rng(0)
    domain = Domain(["a", "b", "c"], [3, 4, 2])
    one_way = [Measurement((a,), 1000 + rng.normal(size=domain[a]), 5.0) for a in domain]
    compression, restated = DomainCompression.from_one_way(domain, one_way)
    assert compression.compressed == domain
    for a in domain:
        np.testing.assert_array_equal(compression.mappings[a], np.arange(domain[a]))
    assert all(r is m for r, m in zip(restated, one_way))

    records = np.column_stack([rng.integers(0, s, size=50) for s in domain.shape])
    data = Dataset(records, domain)
    np.testing.assert_array_equal(compression.apply(data).records, records)

    potentials = {("a", "b"): rng.normal(size=(3, 4)), ("b", "c"): rng.normal(size=(4, 2))}
    model = MarkovRandomField(domain, potentials, total=50.0)
    expanded = compression.expand(model)
    assert expanded.domain == domain
    for clique in [("a",), ("b",), ("c",), ("a", "b"), ("b", "c"), ("a", "c")]:
        np.testing.assert_allclose(expanded.marginal(clique), model.marginal(clique), rtol=1e-10)


def test_attribute_without_measurement_is_kept():
    domain = Domain(["a", "b"], [3, 2])
    compression, restated = DomainCompression.from_one_way(
        domain, [Measurement("a", [0.0, 100.0, 100.0], 1.0)]
    )
    assert len(restated) == 1
    np.testing.assert_array_equal(compression.mappings["b"], [0, 1])
    assert compression.compressed == Domain(["a", "b"], [3, 2])


@pytest.mark.parametrize("missing_last", [False, True])
def test_ordered_values_merge_run_by_run_in_their_place(missing_last):
    domain = Domain(["x", "y"], [9, 4])
    #           rare rare kept  kept rare kept rare rare | rare (a missing value, or a bin)
    values = np.array([1.0, 2.0, 100.0, 50.0, 1.0, 60.0, 2.0, 3.0, 4.0])
    one_way = [Measurement(("x",), values, 10.0), Measurement(("y",), [1.0, 90.0, 2.0, 3.0], 10.0)]
    compression, (x, y) = DomainCompression.from_one_way(
        domain, one_way, ordered={"x": missing_last})

    runs = [0, 0, 1, 2, 3, 4, 5, 5, 6] if missing_last else [0, 0, 1, 2, 3, 4, 5, 5, 5]
    np.testing.assert_array_equal(compression.mappings["x"], runs)
    np.testing.assert_allclose(x.values, np.bincount(runs, weights=values))
    np.testing.assert_allclose(x.std**2, 100.0 * np.bincount(runs))
    # an attribute not ordered: its rare values share its last code, as before
    np.testing.assert_array_equal(compression.mappings["y"], [1, 0, 1, 1])
    np.testing.assert_allclose(y.values, [90.0, 6.0])
    # every merged code stands for neighbouring values, drawn uniformly among them
    codes = np.repeat(np.arange(compression.compressed["x"]), 2000)
    decoded = compression.decode("x", codes, np.random.default_rng(0))
    np.testing.assert_array_equal(compression.mappings["x"][decoded], codes)
    seen = np.bincount(decoded, minlength=9)
    expected = 2000.0 / np.bincount(runs)[runs]
    assert np.all(np.abs(seen - expected) < 5 * np.sqrt(expected))


def test_together_merges_only_values_rare_as_a_group():
    domain = Domain(["x", "y", "z"], [6, 4, 4])
    # x, ordered: a run of three bins each under 3 std (30) but 75 together (over 3·sqrt(3)
    # std = 52) stays apart; the run of two at the end (5 together, under 42) merges
    x = [25.0, 25.0, 25.0, 100.0, 2.0, 3.0]
    # y, not ordered: its rare values sum to 80 (over 3·sqrt(3) std): none merged; z's to
    # 20: merged
    y, z = [100.0, 28.0, 27.0, 25.0], [100.0, 10.0, 5.0, 5.0]
    one_way = [Measurement((a,), v, 10.0) for a, v in zip("xyz", [x, y, z])]
    compression, _ = DomainCompression.from_one_way(
        domain, one_way, ordered={"x": False}, together=True)
    np.testing.assert_array_equal(compression.mappings["x"], [0, 1, 2, 3, 4, 4])
    np.testing.assert_array_equal(compression.mappings["y"], [0, 1, 2, 3])
    np.testing.assert_array_equal(compression.mappings["z"], [0, 1, 1, 1])
    # one by one (the default), each rare value merges
    apart, _ = DomainCompression.from_one_way(domain, one_way, ordered={"x": False})
    np.testing.assert_array_equal(apart.mappings["x"], [0, 0, 0, 1, 2, 2])
    np.testing.assert_array_equal(apart.mappings["y"], [0, 1, 1, 1])


def test_attributes_kept_whole_stay_whole_ordered_or_not():
    domain = Domain(["x", "y"], [3, 3])
    one_way = [Measurement((a,), [0.0, 100.0, 0.0], 10.0) for a in domain.attrs]
    compression, restated = DomainCompression.from_one_way(
        domain, one_way, keep={"x", "y"}, ordered={"x": False})
    assert compression.compressed == domain
    assert all(r is m for r, m in zip(restated, one_way))


def test_records_on_the_compressed_domain_are_read_on_the_original_one():
    from dpgm.models import RecordsModel

    domain = Domain(["x", "y"], [6, 2])
    one_way = [Measurement(("x",), [0.0, 0.0, 100.0, 100.0, 0.0, 0.0], 10.0),
               Measurement(("y",), [100.0, 100.0], 10.0)]
    compression, _ = DomainCompression.from_one_way(domain, one_way, ordered={"x": False})
    small = compression.compressed
    assert small["x"] == 4
    records = np.column_stack([np.tile(np.arange(4), 500), np.repeat([0, 1], 1000)])
    model = compression.on_original(RecordsModel(small, records, total=1234.0), 10**9, rng=0)
    assert isinstance(model, RecordsModel) and model.domain == domain
    assert model.total == 1234.0
    np.testing.assert_array_equal(compression.mappings["x"][model.records[:, 0]], records[:, 0])
    np.testing.assert_array_equal(model.records[:, 1], records[:, 1])
    # the code of values 0-1 (and of 4-5) splits its 500 records between them
    counts = np.bincount(model.records[:, 0], minlength=6)
    assert counts[2] == counts[3] == 500 and counts[0] + counts[1] == 500
    assert 150 < counts[0] < 350 and 150 < counts[4] < 350


def test_a_model_too_large_to_expand_stays_compressed():
    from dpgm.models import CompressedModel

    domain = Domain(["x", "y"], [4, 3])
    compression, _ = DomainCompression.from_one_way(
        domain, [Measurement(("x",), [100.0, 0.0, 0.0, 100.0], 1.0)])
    model = MarkovRandomField(compression.compressed, {("x", "y"): np.zeros((3, 3))}, 10.0)
    assert isinstance(compression.on_original(model, 10**6), MarkovRandomField)
    kept = compression.on_original(model, 5)
    assert isinstance(kept, CompressedModel)
    np.testing.assert_allclose(kept.marginal(("x",)), [10 / 3, 10 / 6, 10 / 6, 10 / 3])


# -- apply -------------------------------------------------------------------------------
def test_apply_recodes_records_and_keeps_weights():
    domain = Domain(["x", "y"], [5, 3])
    compression = DomainCompression(
        domain,
        Domain(["x", "y"], [3, 2]),
        {"x": np.array([0, 2, 1, 2, 2]), "y": np.array([1, 0, 1])},
    )
    records = np.array([[0, 0], [1, 1], [2, 2], [3, 0], [4, 1]])
    weights = np.array([1.0, 0.5, 0.25, 1.0, 0.0])
    small = compression.apply(Dataset(records, domain, weights))
    assert small.domain == compression.compressed
    np.testing.assert_array_equal(small.records, [[0, 1], [2, 0], [1, 1], [2, 1], [2, 0]])
    np.testing.assert_array_equal(small.weights, weights)
    # counts of a merged value are the sums of its parts
    original = Dataset(records, domain, weights).marginal(["x"])
    np.testing.assert_allclose(
        small.marginal(["x"]), [original[0], original[2], original[[1, 3, 4]].sum()]
    )


# -- expand ------------------------------------------------------------------------------
def _tiny_compression(seed: int = 0):
    """Original domain 5 × 4 × 3; x: values 1, 3, 4 merged; y: 0 and 2 merged; z: none."""
    original = Domain(["x", "y", "z"], [5, 4, 3])
    compressed = Domain(["x", "y", "z"], [3, 3, 3])
    mappings = {
        "x": np.array([0, 2, 1, 2, 2]),
        "y": np.array([2, 0, 2, 1]),
        "z": np.arange(3),
    }
    rng = np.random.default_rng(seed)
    potentials = {  # x and y each appear in two cliques: their mass must be spread once
        ("x", "y"): rng.normal(size=(3, 3)),
        ("y", "z"): rng.normal(size=(3, 3)),
        ("x",): rng.normal(size=3),
        ("z", "x"): rng.normal(size=(3, 3)),
    }
    model = MarkovRandomField(compressed, potentials, total=777.0)
    return DomainCompression(original, compressed, mappings), model, potentials


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_expand_spreads_merged_mass_uniformly_brute_force(seed):
    compression, model, potentials = _tiny_compression(seed)
    expanded = compression.expand(model)
    original = compression.original
    assert expanded.domain == original
    assert expanded.total == pytest.approx(model.total)

    p_small, _ = joint(compression.compressed, potentials)
    want = _expanded_joint(compression, p_small)
    assert want.sum() == pytest.approx(1.0)
    got, _ = joint(original, expanded.potentials)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-15)

    for clique in [("x",), ("y",), ("z",), ("x", "y"), ("y", "z"), ("x", "z"), ("x", "y", "z")]:
        np.testing.assert_allclose(
            expanded.marginal(clique), model.total * marginal(original, want, clique), rtol=1e-8
        )


def test_expanded_marginals_sum_back_to_compressed_marginals():
    compression, model, _ = _tiny_compression(3)
    expanded = compression.expand(model)
    for clique in [("x",), ("y",), ("x", "y"), ("x", "z")]:
        big = expanded.marginal(clique)
        small = np.zeros(compression.compressed.project(clique).shape)
        index = np.ix_(*[compression.mappings[a] for a in clique])
        np.add.at(small, index, big)
        np.testing.assert_allclose(small, model.marginal(clique), rtol=1e-9)
    x = expanded.marginal(["x"])
    assert x[1] == pytest.approx(x[3]) and x[3] == pytest.approx(x[4])
    y = expanded.marginal(["y"])
    assert y[0] == pytest.approx(y[2])


def test_expand_attribute_in_no_clique():
    """A merged attribute that no potential mentions: each code is equally likely, and
    each code's mass is spread over the values it stands for."""
    original = Domain(["x", "y"], [4, 2])
    compressed = Domain(["x", "y"], [2, 2])
    compression = DomainCompression(
        original, compressed, {"x": np.array([0, 1, 1, 1]), "y": np.arange(2)}
    )
    model = MarkovRandomField(compressed, {("y",): np.array([0.0, 1.0])}, total=10.0)
    expanded = compression.expand(model)
    np.testing.assert_allclose(model.marginal(["x"]), [5.0, 5.0])
    np.testing.assert_allclose(expanded.marginal(["x"]), [5.0, 5 / 3, 5 / 3, 5 / 3])
