"""Error bars from the model: the standard error of a marginal from the noise of the
measurements it was estimated from, analytic where measured directly, bootstrapped
otherwise. Checked against a brute-force least-squares on the full joint table, against
each other, and by the coverage of 95% intervals over repeated noise."""

from __future__ import annotations

import numpy as np
import pytest

from dpgm import Dataset, Domain, Measurement, estimate
from dpgm.errors import ParameterError
from dpgm.models.uncertainty import standard_error

DOMAIN = Domain(["a", "b", "c"], [3, 4, 3])
MEASURED = [("a",), ("a", "b"), ("b", "c")]
SIGMA = 20.0


def _data(rng: np.random.Generator, n: int = 30_000) -> Dataset:
    """A chain a → b → c with every cell well populated (no estimate is clipped at 0)."""
    a = rng.choice(3, n, p=[0.3, 0.3, 0.4])
    b = np.where(rng.random(n) < 0.5, a, rng.integers(0, 4, n))
    c = np.where(rng.random(n) < 0.4, b % 3, rng.integers(0, 3, n))
    return Dataset(np.column_stack([a, b, c]), DOMAIN)


def _measure(data: Dataset, rng: np.random.Generator, sigma: float = SIGMA):
    return [Measurement(c, data.marginal(c).ravel() + rng.normal(0, sigma, DOMAIN.size(c)),
                        sigma) for c in MEASURED]


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(0)
    data = _data(rng)
    return data, estimate(DOMAIN, _measure(data, rng), iters=500)


def _brute_force_variance(attrs) -> np.ndarray:
    """The least-squares estimate's variance on the full joint table: the marginal is an
    estimable function L x of the joint x, measured as M_i x + noise, so its variance is
    L (Σ M_i' M_i / σ²)⁺ L'."""
    cells = DOMAIN.size(DOMAIN.attrs)
    index = np.indices(DOMAIN.shape).reshape(3, -1)

    def summing(clique):
        target = np.ravel_multi_index([index[DOMAIN.attrs.index(a)] for a in clique],
                                      DOMAIN.project(clique).shape)
        matrix = np.zeros((DOMAIN.size(clique), cells))
        matrix[target, np.arange(cells)] = 1.0
        return matrix

    information = sum(summing(c).T @ summing(c) for c in MEASURED) / SIGMA**2
    answer = summing(attrs)
    covariance = answer @ np.linalg.pinv(information) @ answer.T
    return np.diag(covariance).reshape(DOMAIN.project(attrs).shape)


@pytest.mark.parametrize("attrs", [("a",), ("b",), ("a", "b"), ("c", "b"), ("c",)])
def test_the_analytic_error_is_the_least_squares_one_on_the_joint(fitted, attrs):
    _, model = fitted
    counts, error = model.marginal(attrs, with_error=True)
    assert counts.shape == error.shape == DOMAIN.project(attrs).shape
    np.testing.assert_allclose(error**2, _brute_force_variance(attrs), rtol=1e-8)
    # overlapping measurements make it smaller than the direct measurements' combined noise
    from dpgm.models.uncertainty import _direct_variance_bound

    bound = _direct_variance_bound(model.measured.measurements, DOMAIN, attrs)
    assert np.all(error**2 <= bound + 1e-9) and np.any(error**2 < 0.99 * bound)


def test_the_bootstrap_matches_the_analytic_error_of_a_measured_marginal(fitted):
    _, model = fitted
    for attrs in (("a", "b"), ("b",)):
        analytic = standard_error(model, attrs, method="analytic")
        bootstrap = standard_error(model, attrs, method="bootstrap", replicates=120, rng=3)
        ratio = float(np.mean(bootstrap) / np.mean(analytic))
        assert abs(ratio - 1) < 0.10, (attrs, ratio)


def test_an_unmeasured_marginal_is_bootstrapped(fitted):
    _, model = fitted
    with pytest.raises(ParameterError, match="not measured directly"):
        standard_error(model, ("a", "c"), method="analytic")
    first = standard_error(model, ("a", "c"), replicates=20, rng=5)
    again = standard_error(model, ("a", "c"), replicates=20, rng=5)
    np.testing.assert_array_equal(first, again)  # seeded: reproducible
    assert np.all(first > 0) and np.all(first < 4 * SIGMA)
    given = model.marginal(["a"], given={"c": 1}, with_error=True)
    assert given[1].shape == (3,) and np.all(given[1] > 0)


def test_95_percent_intervals_cover_the_true_counts(fitted):
    """Over repeated noise on the same records, the model's 95% intervals on the measured
    marginals hold the records' counts 90–99% of the time."""
    data, _ = fitted
    rng = np.random.default_rng(11)
    covered = []
    for _ in range(60):
        model = estimate(DOMAIN, _measure(data, rng), iters=300)
        for attrs in (("a",), ("a", "b"), ("b", "c"), ("b",)):
            counts, error = model.marginal(attrs, with_error=True)
            covered.append(np.abs(counts - data.marginal(attrs)) <= 1.96 * error)
    coverage = float(np.mean(np.concatenate([c.ravel() for c in covered])))
    assert 0.90 <= coverage <= 0.99, coverage


def test_a_model_without_measurements_says_so():
    from dpgm import MarkovRandomField

    model = MarkovRandomField(DOMAIN, {("a", "b"): np.zeros((3, 4))}, 100.0)
    with pytest.raises(ParameterError, match="keeps no measurements"):
        model.marginal(["a"], with_error=True)


def test_mst_models_keep_their_error_bars_through_a_file(tmp_path):
    import dpgm
    from dpgm.mechanisms import MST

    rng = np.random.default_rng(2)
    data = _data(rng, 5_000)
    model = MST(epsilon=1.0).fit(data, rng=4)
    counts, error = model.marginal(["b"], with_error=True)
    assert np.all(error > 0)
    model.save(tmp_path / "model.dpgm")
    again = dpgm.load(tmp_path / "model.dpgm")
    loaded_counts, loaded_error = again.marginal(["b"], with_error=True)
    np.testing.assert_array_equal(loaded_counts, counts)
    np.testing.assert_allclose(loaded_error, error, rtol=1e-12)


def test_every_kind_of_query_and_the_zeros_survive_a_model_file(tmp_path):
    from scipy import sparse

    import dpgm
    from dpgm.constraints import Forbidden
    from dpgm.measurement import KroneckerQuery
    from dpgm.models.files import ModelFileError

    rng = np.random.default_rng(6)
    data = _data(rng, 4_000)
    mask = np.zeros((3, 3), dtype=bool)
    mask[2, 0] = True
    zero = Forbidden(("a", "c"), mask)
    ab, bc = data.marginal(("a", "b")).ravel(), data.marginal(("b", "c")).ravel()
    kron = KroneckerQuery([np.ones((1, 3)), np.eye(4)])  # b's counts, through a's axis
    dense = np.vstack([np.eye(12), np.ones((1, 12))])
    measurements = [
        Measurement(("a",), data.marginal(("a",)) + rng.normal(0, 5, 3), [5.0, 6.0, 7.0]),
        Measurement(("a", "b"), dense @ ab + rng.normal(0, 5, 13), 5.0, dense),
        Measurement(("a", "b"), kron @ ab + rng.normal(0, 5, 4), 5.0, kron),
        Measurement(("b", "c"), bc + rng.normal(0, 5, 12), 5.0, sparse.eye(12, format="csr")),
    ]
    model = estimate(DOMAIN, measurements, iters=50, zeros=[zero])
    model.save(tmp_path / "m.dpgm")
    again = dpgm.load(tmp_path / "m.dpgm")
    for attrs in (("a",), ("a", "b"), ("c",)):
        np.testing.assert_allclose(again.marginal(attrs, with_error=True)[1],
                                   model.marginal(attrs, with_error=True)[1], rtol=1e-12)
    kept = again.measured
    assert [type(m.query).__name__ for m in kept.measurements] == [
        "NoneType", "ndarray", "KroneckerQuery", "csr_matrix"]
    assert kept.zeros[0].attrs == ("a", "c") and kept.zeros[0].mask[2, 0]
    assert kept.options["iters"] == 50 and kept.options["total"] is None
    # a file whose measurement disagrees with its domain is refused in one line
    import json
    import zipfile

    with zipfile.ZipFile(tmp_path / "m.dpgm") as archive:
        members = {n: archive.read(n) for n in archive.namelist()}
    header = json.loads(members["model.json"])
    header["model"]["measured"]["measurements"][0]["rows"] = 4
    members["model.json"] = json.dumps(header).encode()
    with zipfile.ZipFile(tmp_path / "bad.dpgm", "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    with pytest.raises(ModelFileError, match="4 values for 3 cells"):
        dpgm.load(tmp_path / "bad.dpgm")


def test_an_l1_fit_is_bootstrapped_and_settings_survive_a_file(tmp_path):
    """The analytic error is least squares': an L1 fit goes to the bootstrap. A float
    max_cells is kept as a whole number, so the file reads back."""
    import dpgm
    from dpgm.models.uncertainty import analytic_errors

    rng = np.random.default_rng(3)
    data = _data(rng, 3_000)
    model = estimate(DOMAIN, _measure(data, rng), iters=50, loss="l1", max_cells=1e6)
    assert analytic_errors(model, [("a",)]) == [None]
    with pytest.raises(ParameterError, match="not generalised least squares: an L1 loss"):
        standard_error(model, ("a",), method="analytic")
    assert standard_error(model, ("a",), replicates=3, rng=1).shape == (3,)
    model.save(tmp_path / "m.dpgm")
    assert dpgm.load(tmp_path / "m.dpgm").measured.options["max_cells"] == 1_000_000


def test_a_weighted_fit_is_bootstrapped_with_its_weights_which_survive_a_file(tmp_path):
    """A weighted fit is not generalised least squares: its error comes from the bootstrap,
    which estimates again with the same weights; a file keeps them, and refuses a list
    that does not give one positive number per measurement."""
    import json
    import zipfile

    import dpgm
    from dpgm.models.files import ModelFileError
    from dpgm.models.uncertainty import analytic_errors

    rng = np.random.default_rng(7)
    data = _data(rng, 3_000)
    model = estimate(DOMAIN, _measure(data, rng), iters=50, weights=[4.0, 1.0, 1.0])
    assert analytic_errors(model, [("a",)]) == [None]
    with pytest.raises(ParameterError, match="or weights"):
        standard_error(model, ("a",), method="analytic")
    assert standard_error(model, ("a",), replicates=3, rng=1).shape == (3,)
    model.save(tmp_path / "m.dpgm")
    assert dpgm.load(tmp_path / "m.dpgm").measured.options["weights"] == [4.0, 1.0, 1.0]
    with zipfile.ZipFile(tmp_path / "m.dpgm") as archive:
        members = {n: archive.read(n) for n in archive.namelist()}
    for bad in ([4.0, 1.0], [4.0, 1.0, 0.0], [4.0, 1.0, "1"]):
        header = json.loads(members["model.json"])
        header["model"]["measured"]["options"]["weights"] = bad
        with zipfile.ZipFile(tmp_path / "bad.dpgm", "w") as archive:
            for name, content in {**members, "model.json": json.dumps(header).encode()}.items():
                archive.writestr(name, content)
        with pytest.raises(ModelFileError, match="one positive number per measurement"):
            dpgm.load(tmp_path / "bad.dpgm")


def test_a_model_without_measurements_is_written_as_format_1(tmp_path):
    import json
    import zipfile

    from dpgm import MarkovRandomField

    MarkovRandomField(DOMAIN, {("a", "b"): np.zeros((3, 4))}, 100.0).save(tmp_path / "m.dpgm")
    with zipfile.ZipFile(tmp_path / "m.dpgm") as archive:
        assert json.loads(archive.read("model.json"))["version"] == 1


def test_many_overlapping_cliques_decompose_in_bounded_memory():
    """A chain of 150 binary columns (150 measured pairs): the constraints are gathered as
    CᵀC, never as one row per overlap of every pair."""
    domain = Domain([f"x{i}" for i in range(150)], [2] * 150)
    rng = np.random.default_rng(0)
    pairs = [(f"x{i}", f"x{i + 1}") for i in range(149)]
    measurements = [Measurement(p, 250 + rng.normal(0, 5, 4), 5.0) for p in pairs]
    model = estimate(domain, measurements, iters=5)
    error = standard_error(model, ("x7",), method="analytic")
    assert error.shape == (2,) and np.all(error > 0)
