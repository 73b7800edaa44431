"""Dataset: validation of records against the public domain, loading, marginals."""

from __future__ import annotations

import gzip
import itertools

import numpy as np
import pandas as pd
import pytest

from dpgm import DataError, Dataset, Domain, DomainError
from dpgm.errors import DataWarning


@pytest.fixture
def domain() -> Domain:
    return Domain(["a", "b", "c"], [3, 2, 4])


def brute_marginal(records, domain, attrs, weights=None):
    """Count every cell by looping over the records."""
    shape = domain.project(attrs).shape
    out = np.zeros(shape)
    cols = [domain.attrs.index(a) for a in attrs]
    for i, row in enumerate(records):
        out[tuple(row[cols])] += 1.0 if weights is None else weights[i]
    return out


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("weighted", [False, True])
def test_marginal_matches_brute_force(domain, seed, weighted):
    rng = np.random.default_rng(seed)
    n = 200
    records = np.column_stack([rng.integers(0, s, size=n) for s in domain.shape])
    weights = rng.random(n) if weighted else None
    data = Dataset(records, domain, weights)
    for k in range(len(domain) + 1):
        for attrs in itertools.permutations(domain.attrs, k):
            expected = brute_marginal(records, domain, attrs, weights)
            got = data.marginal(attrs)
            assert got.shape == expected.shape
            np.testing.assert_allclose(got, expected)
    assert data.total == pytest.approx(n if weights is None else weights.sum())
    assert data.marginal([]) == pytest.approx(data.total)


def test_records_and_project(domain):
    data = Dataset([[0, 1, 3], [2, 0, 0]], domain)
    assert data.records.dtype == np.int64 and data.records.shape == (2, 3)
    assert len(data) == 2
    sub = data.project(["c", "a"])
    assert sub.domain == Domain(["c", "a"], [4, 3])
    np.testing.assert_array_equal(sub.records, [[3, 0], [0, 2]])
    assert repr(data) == f"Dataset({domain!r})"  # the exact count is private


def test_bool_and_float_integer_columns_are_accepted():
    d = Domain(["x", "y"], [2, 3])
    data = Dataset(np.array([[True, 2.0], [False, 0.0]], dtype=object), d)
    np.testing.assert_array_equal(data.records, [[1, 2], [0, 0]])


def test_dataframe_columns_selected_by_name(domain):
    frame = pd.DataFrame({"c": [3, 1], "extra": ["x", "y"], "a": [2, 0], "b": [1, 1]})
    with pytest.warns(DataWarning, match=r"\['extra'\] are not in the domain"):
        data = Dataset.from_pandas(frame, domain)
    np.testing.assert_array_equal(data.records, [[2, 1, 3], [0, 1, 1]])
    pd.testing.assert_frame_equal(
        data.to_pandas(), pd.DataFrame({"a": [2, 0], "b": [1, 1], "c": [3, 1]})
    )


def test_weight_column_by_name(domain):
    frame = pd.DataFrame({"a": [0, 1], "b": [0, 1], "c": [0, 1], "w": [0.5, 0.25]})
    data = Dataset.from_pandas(frame, domain, weights="w")
    assert data.total == pytest.approx(0.75)
    with pytest.raises(DataError, match="'nope'"):
        Dataset.from_pandas(frame, domain, weights="nope")


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8])
def test_integer_arrays_of_any_layout_give_the_same_records(domain, order, dtype):
    records = np.array([[0, 1, 3], [2, 0, 1], [1, 1, 0]], dtype=dtype, order=order)
    data = Dataset(records, domain)
    assert data.records.dtype == np.int64 and data.records.flags.c_contiguous
    np.testing.assert_array_equal(data.records, records.astype(np.int64))
    records[0, 0] = 2  # the caller's array, changed afterwards, is not the Dataset's
    assert data.records[0, 0] == 0


@pytest.mark.parametrize(("column", "bad", "pattern"), [
    (1, 2, r"column 'b' has value 2 at row 1, outside its domain 0..1"),
    (2, -1, r"column 'c' has value -1 at row 1, outside its domain 0..3"),
])
@pytest.mark.parametrize("order", ["C", "F"])
def test_a_bad_code_in_an_integer_array_is_named(domain, column, bad, pattern, order):
    records = np.zeros((3, 3), dtype=np.int64, order=order)
    records[1, column] = bad
    with pytest.raises(DataError, match=pattern):
        Dataset(records, domain)


def test_an_unsigned_code_beyond_int64_is_named_as_written(domain):
    records = np.zeros((2, 3), dtype=np.uint64)
    records[1, 0] = 2**63 + 5
    with pytest.raises(DataError, match=r"value 9223372036854775813 at row 1"):
        Dataset(records, domain)


# -- errors -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("column", "bad", "pattern"),
    [
        ("b", 2, r"column 'b' has value 2 at row 1, outside its domain 0..1"),
        ("c", -1, r"column 'c' has value -1 at row 1, outside its domain 0..3"),
        ("a", np.nan, r"column 'a' has a missing or non-finite value \(nan\) at row 1"),
        ("a", np.inf, r"column 'a' has a missing or non-finite value \(inf\) at row 1"),
        ("c", 1.5, r"column 'c' has a non-integer value 1\.5 at row 1"),
        ("b", "yes", r"column 'b' has a non-numeric value 'yes' at row 1"),
    ],
)
@pytest.mark.parametrize("as_frame", [False, True])
def test_bad_value_names_column_value_and_row(domain, column, bad, pattern, as_frame):
    frame = pd.DataFrame({"a": [0, 1, 2], "b": [0, 1, 0], "c": [0, 1, 2]}, dtype=object)
    frame.loc[1, column] = bad
    records = frame if as_frame else frame.to_numpy()
    with pytest.raises(DataError, match=pattern):
        Dataset(records, domain)


def test_nan_in_numeric_dataframe_column(domain):
    frame = pd.DataFrame({"a": [0.0, np.nan], "b": [0, 1], "c": [0, 1]})
    with pytest.raises(DataError, match=r"column 'a'.*\(nan\) at row 1"):
        Dataset(frame, domain)


def test_missing_column_is_named(domain):
    frame = pd.DataFrame({"a": [0], "c": [0]})
    with pytest.raises(DataError, match=r"no column\(s\) \['b'\]"):
        Dataset(frame, domain)


def test_wrong_array_shape(domain):
    with pytest.raises(DataError, match="3 columns"):
        Dataset(np.zeros((4, 2), dtype=int), domain)
    with pytest.raises(DataError, match="2-d"):
        Dataset(np.zeros(3, dtype=int), domain)


def test_domain_must_be_a_domain():
    with pytest.raises(DataError, match="dpgm.Domain"):
        Dataset([[0]], {"a": 2})


@pytest.mark.parametrize(("bad", "shown"), [(-0.5, "-0.5"), (np.nan, "nan"), (np.inf, "inf")])
def test_bad_weights_name_value_and_row(domain, bad, shown):
    records = np.zeros((3, 3), dtype=int)
    with pytest.raises(DataError, match=rf"non-negative, got {shown} at row 2"):
        Dataset(records, domain, [1.0, 0.5, bad])


def test_weights_of_wrong_length(domain):
    with pytest.raises(DataError, match=r"one entry per record \(2\)"):
        Dataset(np.zeros((2, 3), dtype=int), domain, [1.0])


def test_unknown_attribute_in_marginal(domain):
    data = Dataset(np.zeros((2, 3), dtype=int), domain)
    with pytest.raises(DomainError, match="'zip'"):
        data.marginal(["a", "zip"])


# -- files ------------------------------------------------------------------------------
def test_load_csv_and_domain_json(tmp_path, domain):
    csv = tmp_path / "data.csv"
    csv.write_text("c,b,a,w\n3,1,2,0.5\n0,0,0,1.0\n3,1,2,0.25\n")
    domain_path = tmp_path / "domain.json"
    domain.save(domain_path)
    with pytest.warns(DataWarning, match=r"\['w'\]"):
        data = Dataset.load(csv, domain_path)
    assert data.domain == domain
    np.testing.assert_array_equal(data.records, [[2, 1, 3], [0, 0, 0], [2, 1, 3]])
    assert data.marginal(["a", "c"])[2, 3] == 2
    weighted = Dataset.load(csv, domain, weights="w")
    assert weighted.marginal(["a", "c"])[2, 3] == pytest.approx(0.75)


def test_save_load_round_trip(tmp_path, domain):
    rng = np.random.default_rng(0)
    records = np.column_stack([rng.integers(0, s, size=50) for s in domain.shape])
    Dataset(records, domain).save(tmp_path / "out.csv")
    again = Dataset.load(tmp_path / "out.csv", domain)
    np.testing.assert_array_equal(again.records, records)


def test_load_errors(tmp_path, domain):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(DataError, match="empty"):
        Dataset.load(empty, domain)
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b,c\n0,1,2\n1,,0\n")
    with pytest.raises(DataError, match=r"column 'b'.*\(nan\) at row 1"):
        Dataset.load(bad, domain)
    out = tmp_path / "out.csv"
    out.write_text("a,b,c\n0,1,9\n")
    with pytest.raises(DataError, match=r"column 'c' has value 9 at row 0"):
        Dataset.load(out, domain)


def test_load_refuses_repeated_column_names(tmp_path, domain):
    csv = tmp_path / "twice.csv"
    csv.write_text("a,b,c,a\n0,0,0,1\n")  # pandas would rename the second to a.1
    with pytest.raises(DataError, match=r"\['a'\] appear more than once"):
        Dataset.load(csv, domain)
    frame = pd.DataFrame([[0, 0, 0, 1]], columns=["a", "b", "c", "a"])
    with pytest.raises(DataError, match="repeated column name"):
        Dataset(frame, domain)


@pytest.mark.parametrize("content", [b"not gzip at all", b"truncated"], ids=["bad", "truncated"])
def test_load_refuses_corrupt_compressed_files(tmp_path, domain, content):
    path = tmp_path / "data.csv.gz"
    if content == b"truncated":
        content = gzip.compress(b"a,b,c\n" + b"0,1,2\n" * 1000)[:40]
    path.write_bytes(content)
    with pytest.raises(DataError, match="corrupt or truncated compressed file"):
        Dataset.load(path, domain)


@pytest.mark.parametrize(
    "value",
    ["9223372036854775808", "99999999999999999999", "1e300"],
    ids=["uint64", "big", "float"],
)
def test_values_beyond_int64_are_reported_as_written(tmp_path, value):
    csv = tmp_path / "big.csv"
    csv.write_text(f"a\n1\n{value}\n")
    with pytest.raises(DataError, match=r"value .* at row 1, outside its domain 0..2") as info:
        Dataset.load(csv, Domain(["a"], [3]))
    assert "-9223372036854775808" not in str(info.value)
    assert float(str(info.value).split("value ")[1].split(" ")[0]) == float(value)


def test_huge_attribute_sizes_do_not_overflow():
    data = Dataset([[5], [2**62]], Domain(["a"], [2**70]))
    assert data.records[:, 0].tolist() == [5, 2**62]


def test_domain_json_refuses_repeated_keys(tmp_path):
    path = tmp_path / "domain.json"
    path.write_text('{"a": 2, "b": 3, "a": 4}')
    with pytest.raises(DomainError, match=r"\['a'\] are listed more than once"):
        Domain.load(path)


def test_save_is_all_or_nothing(tmp_path, domain, monkeypatch):
    out = tmp_path / "out.csv"
    out.write_text("precious\n")
    data = Dataset([[0, 1, 3]], domain)

    def fail(self, handle, **kwargs):
        handle.write("a,b,c\n0,1,")  # part of the file, then the disk fills up
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_csv", fail)
    with pytest.raises(OSError, match="No space"):
        data.save(out)
    assert out.read_text() == "precious\n"  # untouched
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]  # no temporary left


def test_many_marginals_at_once_equal_the_one_by_one_marginals():
    """From 16 cliques on, the columns are copied once (the fast path): the counts, and
    the weighted sums, are those of marginal() for cliques of every size and order."""
    import itertools

    rng = np.random.default_rng(5)
    domain = Domain([f"c{i}" for i in range(8)], [2, 3, 300, 5, 2, 4, 3, 2])
    records = np.column_stack([rng.integers(k, size=3000) for k in domain.shape])
    cliques = [(), ("c2",), ("c5", "c1"), ("c2", "c7", "c0")]
    cliques += list(itertools.combinations(domain.attrs, 2))
    for data in (Dataset(records, domain), Dataset(records, domain, rng.uniform(size=3000))):
        together = data.marginals(cliques)
        for clique, table in zip(cliques, together):
            np.testing.assert_allclose(table, data.marginal(clique), rtol=1e-12)
