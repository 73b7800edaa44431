"""BIF reader: the four benchmark networks, the two probability syntaxes, errors, sampling.

The sampling test compares forward samples of Asia with the exact marginals obtained by
enumerating all 2^8 cells of its joint. Each marginal is checked with Pearson's chi-square
test at level 1e-3 / (number of marginals checked), so a correct sampler fails the test with
probability at most 1e-3 (Bonferroni; up to the chi-square approximation). The seed is fixed.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from bn_helpers import bn_path
from brute_force import chi_square_pvalue

from dpgm import DataError, Dataset, Domain
from dpgm.io import BayesianNetwork, parse_bif, read_bif

NODES = {"asia": 8, "sachs": 11, "child": 20, "alarm": 37}


@pytest.fixture(scope="module")
def asia() -> BayesianNetwork:
    return read_bif(bn_path("asia"))


def enumerate_joint(network: BayesianNetwork) -> np.ndarray:
    """p(x) of every cell, axes in ``network.variables`` order."""
    shape = network.domain.shape
    cells = np.array(list(itertools.product(*(range(s) for s in shape))))
    return network.probability(cells).reshape(shape)


# -- the benchmark files --------------------------------------------------------------------
@pytest.mark.parametrize("name", list(NODES))
def test_benchmark_networks_parse(name):
    network = read_bif(bn_path(name))
    assert len(network.variables) == NODES[name]
    assert len(set(network.variables)) == NODES[name]
    assert (
        set(network.states) == set(network.parents) == set(network.cpds) == set(network.variables)
    )
    domain = network.domain
    assert isinstance(domain, Domain) and domain.attrs == tuple(network.variables)
    for v in network.variables:
        cpd = network.cpds[v]
        assert domain[v] == len(network.states[v])
        assert cpd.shape == tuple(domain[p] for p in network.parents[v]) + (domain[v],)
        assert (cpd >= 0).all()
        np.testing.assert_allclose(cpd.sum(axis=-1), 1.0, atol=1e-12)
    order = network.topological_order()
    assert sorted(order) == sorted(network.variables)
    position = {v: i for i, v in enumerate(order)}
    for v in network.variables:
        assert all(position[p] < position[v] for p in network.parents[v])
    families = network.moral_cliques()
    assert families == [(*network.parents[v], v) for v in network.variables]


def test_asia_contents(asia):
    assert asia.variables == ["asia", "tub", "smoke", "lung", "bronc", "either", "xray", "dysp"]
    assert asia.states["asia"] == ["yes", "no"]
    assert asia.parents["either"] == ("lung", "tub")
    assert asia.parents["asia"] == ()
    np.testing.assert_allclose(asia.cpds["asia"], [0.01, 0.99])
    np.testing.assert_allclose(asia.cpds["tub"], [[0.05, 0.95], [0.01, 0.99]])
    # row "(no, yes) 1.0, 0.0" is lung = no, tub = yes
    np.testing.assert_allclose(asia.cpds["either"][1, 0], [1.0, 0.0])
    np.testing.assert_allclose(asia.cpds["either"][1, 1], [0.0, 1.0])
    np.testing.assert_allclose(asia.cpds["dysp"][1, 0], [0.7, 0.3])  # bronc=no, either=yes


def test_rows_that_miss_one_by_rounding_are_renormalised():
    network = read_bif(bn_path("sachs"))
    np.testing.assert_allclose(network.cpds["Akt"].sum(axis=-1), 1.0, atol=1e-14)


def test_model_from_network_matches_enumeration(asia):
    p = enumerate_joint(asia)
    assert p.sum() == pytest.approx(1.0)
    model = asia.to_model(total=100.0)
    assert model.log_partition == pytest.approx(0.0, abs=1e-12)
    for pair in [("either", "dysp"), ("asia", "xray"), ("smoke", "either")]:
        axes = tuple(i for i, v in enumerate(asia.variables) if v not in pair)
        expected = p.sum(axis=axes)
        if asia.variables.index(pair[0]) > asia.variables.index(pair[1]):
            expected = expected.T
        np.testing.assert_allclose(model.marginal(pair), 100.0 * expected, atol=1e-12)


# -- sampling -------------------------------------------------------------------------------
def test_asia_sampling_matches_exact_marginals(asia):
    p = enumerate_joint(asia)
    data = asia.sample(50_000, rng=20240607)
    assert isinstance(data, Dataset) and data.domain == asia.domain and len(data) == 50_000
    names = asia.variables
    singles = [(v,) for v in names]
    pairs = [
        ("smoke", "lung"),
        ("lung", "tub"),
        ("either", "xray"),
        ("bronc", "dysp"),
        ("asia", "tub"),
        ("either", "dysp"),
    ]
    checks = singles + pairs
    level = 1e-3 / len(checks)
    for attrs in checks:
        axes = tuple(i for i, v in enumerate(names) if v not in attrs)
        exact = p.sum(axis=axes)
        if list(attrs) != [v for v in names if v in attrs]:
            exact = exact.T
        pvalue = chi_square_pvalue(data.marginal(attrs), exact)
        assert pvalue > level, (attrs, pvalue)
    # structural zeros of the CPTs are respected: either = (lung or tub)
    lung, tub, either = (data.records[:, names.index(v)] for v in ("lung", "tub", "either"))
    yes = 0
    np.testing.assert_array_equal(either == yes, (lung == yes) | (tub == yes))


def test_sampling_is_reproducible_and_vectorised(asia):
    a = asia.sample(1000, rng=3).records
    np.testing.assert_array_equal(a, asia.sample(1000, rng=np.random.default_rng(3)).records)
    assert not np.array_equal(a, asia.sample(1000, rng=4).records)
    assert asia.sample(0, rng=1).records.shape == (0, 8)
    with pytest.raises(ValueError, match="n must be an integer >= 0"):
        asia.sample(-1)


@pytest.mark.parametrize("name", ["child", "alarm"])
def test_larger_networks_sample(name):
    network = read_bif(bn_path(name))
    data = network.sample(2000, rng=0)
    assert data.records.shape == (2000, NODES[name])
    assert (network.probability(data.records) > 0).all()


# -- syntax -------------------------------------------------------------------------------
SYNTAX = """
// a comment
network "dog problem" {
  property "source" "made up";
}
/* a block
   comment */
variable "family-out" {
  type discrete [ 2 ] { true, false };
  property position = (1, 2);
}
variable bowel {
  type discrete [ 2 ] { true, false };
}
variable "dog-out" {
  type discrete [ 3 ] { in, yard, out };
}
probability ( "family-out" ) {
  table 0.15 0.85;
}
probability ( bowel ) {
  table 0.01, 0.99;
}
probability ( "dog-out" | "family-out", bowel ) {
  // table lists (child, parents...) in row-major order: the child varies slowest
  table 0.1 0.2 0.3 0.4   0.5 0.6 0.3 0.5   0.4 0.2 0.4 0.1;
}
"""


def test_table_syntax_with_parents_comments_and_quotes():
    network = parse_bif(SYNTAX)
    assert network.name == "dog problem"
    assert network.variables == ["family-out", "bowel", "dog-out"]
    assert network.parents["dog-out"] == ("family-out", "bowel")
    cpd = network.cpds["dog-out"]
    assert cpd.shape == (2, 2, 3)
    np.testing.assert_allclose(cpd[0, 0], [0.1, 0.5, 0.4])  # family-out=true, bowel=true
    np.testing.assert_allclose(cpd[0, 1], [0.2, 0.6, 0.2])
    np.testing.assert_allclose(cpd[1, 0], [0.3, 0.3, 0.4])
    np.testing.assert_allclose(cpd[1, 1], [0.4, 0.5, 0.1])
    np.testing.assert_allclose(network.cpds["family-out"], [0.15, 0.85])


def test_rows_and_default_row():
    text = """
    variable a { type discrete [ 3 ] { x, y, z }; }
    variable b { type discrete [ 2 ] { t, f }; }
    probability ( a ) { table 0.2, 0.3, 0.5; }
    probability ( b | a ) {
      (y) 0.9, 0.1;
      default 0.5, 0.5;
    }
    """
    network = parse_bif(text)
    np.testing.assert_allclose(network.cpds["b"], [[0.5, 0.5], [0.9, 0.1], [0.5, 0.5]])
    assert network.topological_order() == ["a", "b"]


def test_variables_declared_after_their_children_order():
    text = """
    variable child { type discrete [ 2 ] { a, b }; }
    variable root { type discrete [ 2 ] { a, b }; }
    probability ( child | root ) { (a) 1, 0; (b) 0, 1; }
    probability ( root ) { table 0.5 0.5; }
    """
    network = parse_bif(text)
    assert network.variables == ["child", "root"]
    assert network.topological_order() == ["root", "child"]
    data = network.sample(500, rng=0)
    np.testing.assert_array_equal(data.records[:, 0], data.records[:, 1])


# -- errors -------------------------------------------------------------------------------
GOOD_HEAD = """variable a {
  type discrete [ 2 ] { yes, no };
}
variable b {
  type discrete [ 2 ] { yes, no };
}
probability ( a ) {
  table 0.3, 0.7;
}
"""


@pytest.mark.parametrize(
    ("tail", "line", "pattern"),
    [
        (
            "probability ( b | a ) {\n  (yes) 0.5, 0.5;\n  (maybe) 0.5, 0.5;\n}\n",
            12,
            r"'maybe' is not a state of 'a'",
        ),
        (
            "probability ( b | a ) {\n  (yes) 0.5, 0.5;\n  (no) 0.5, 0.2, 0.3;\n}\n",
            12,
            r"row \(no\) of 'b' has 3 probabilities, expected 2",
        ),
        (
            "probability ( b | a ) {\n  (yes) 0.5, 0.5;\n  (no) 0.5, 0.6;\n}\n",
            12,
            r"'b' given \(no\) sum to 1.1, not 1",
        ),
        ("probability ( b | a ) {\n  (yes) 0.5, 0.5;\n  (no) 0.5, 0.5\n}\n", 12, r"missing ';'"),
        ("probability ( b | a ) {\n  (yes) 0.5, 0.5;\n}\n", 10, r"no row for \(no\)"),
        ("probability ( b | a ) {\n  (yes) 0.5, 0.5;\n  (yes) 0.5, 0.5;\n}\n", 12, r"given twice"),
        (
            "probability ( b | a ) {\n  (yes) 0.5, abc;\n  (no) 0.5, 0.5;\n}\n",
            11,
            r"'abc' is not a number",
        ),
        ("probability ( b | a ) {\n  (yes) -0.5, 1.5;\n  (no) 0.5, 0.5;\n}\n", 11, r"non-negative"),
        ("probability ( b | c ) {\n  table 0.5, 0.5;\n}\n", 10, r"undeclared variable 'c'"),
        (
            "probability ( b | a ) {\n  (yes, no) 0.5, 0.5;\n}\n",
            11,
            r"gives 2 parent values, expected 1",
        ),
        (
            "probability ( b | a ) {\n  table 0.5, 0.5;\n}\n",
            11,
            r"table of 'b' has 2 probabilities, expected 4",
        ),
        ("probability ( b ) {\n  (yes) 0.5, 0.5;\n}\n", 11, r"need the 'table' keyword"),
        ("probability ( b | a ) {\n  tabel 0.5, 0.5;\n}\n", 11, r"cannot read 'tabel 0.5, 0.5'"),
        (
            "probability ( b ) {\n  table 0.5 0.5;\n}\nprobability ( b ) {\n  table 0.5 0.5;\n}\n",
            13,
            r"second probability block for 'b'",
        ),
        (
            "probability ( b ) {\n  table 0.5 0.5;\n}\n"
            "variable a {\n  type discrete [ 2 ] { x, y };\n}\n",
            13,
            r"'a' is declared twice",
        ),
        (
            "probability ( b ) {\n  table 0.5 0.5;\n}\ngarbage here\n",
            13,
            r"expected a 'network', 'variable' or 'probability' block, got 'garbage here'",
        ),
        (
            "variable c {\n  type discrete [ 3 ] { x, y };\n}\n",
            11,
            r"declares \[ 3 \] states but lists 2",
        ),
        ("variable c {\n  type continuous;\n}\n", 11, r"expected 'type discrete"),
        ("variable c {\n  type discrete [ 2 ] { x, x };\n}\n", 11, r"lists a state twice"),
        ("probability ( b | b ) {\n  table 0.5 0.5;\n}\n", 10, r"lists a variable twice"),
    ],
)
def test_malformed_input_names_the_line(tail, line, pattern):
    with pytest.raises(DataError, match=pattern) as info:
        parse_bif(GOOD_HEAD + tail, "net.bif")
    assert f"net.bif, line {line}:" in str(info.value)


def test_whole_file_errors(tmp_path):
    extra = "variable c { type discrete [ 1 ] { only }; }\nprobability ( c ) { table 1; }\n"
    with pytest.raises(DataError, match=r"no probability block for \['b'\]"):
        parse_bif(GOOD_HEAD + extra)
    with pytest.raises(DataError, match="no variables"):
        parse_bif("network x {\n}\n")
    cyclic = """
    variable a { type discrete [ 2 ] { x, y }; }
    variable b { type discrete [ 2 ] { x, y }; }
    probability ( a | b ) { (x) 1, 0; (y) 0, 1; }
    probability ( b | a ) { (x) 1, 0; (y) 0, 1; }
    """
    with pytest.raises(DataError, match="directed cycle"):
        parse_bif(cyclic)
    path = tmp_path / "broken.bif"
    path.write_text(GOOD_HEAD + "oops\n")
    with pytest.raises(DataError, match=r"broken\.bif, line 10: .*'oops'"):
        read_bif(path)


@pytest.mark.parametrize("name", list(NODES))
def test_benchmark_networks_pass_the_model_checks(name):
    network = read_bif(bn_path(name)).check()
    first = network.variables[0]
    assert network.domain.labels[first] == tuple(network.states[first])


def test_asia_queries_in_state_names(asia):
    p = enumerate_joint(asia)
    names = asia.variables
    given = names[-1]
    state = asia.states[given][0]
    answer = asia.query([names[0]], {given: state})
    sliced = np.take(p, 0, axis=names.index(given))
    expected = sliced.sum(axis=tuple(range(1, sliced.ndim)))
    np.testing.assert_allclose(answer.to_numpy(), expected / expected.sum(), atol=1e-12)
    assert list(answer.index) == asia.states[names[0]]


@pytest.mark.parametrize("name", list(NODES))
def test_write_then_read_is_exact(name, tmp_path):
    from dpgm.io import write_bif

    network = read_bif(bn_path(name))
    path = tmp_path / f"{name}.bif"
    write_bif(network, path)
    again = read_bif(path)
    assert again.variables == network.variables and again.states == network.states
    assert again.parents == network.parents and again.name == network.name
    for v in network.variables:
        np.testing.assert_array_equal(again.cpds[v], network.cpds[v])


def test_awkward_state_names_survive_a_round_trip(tmp_path):
    from dpgm.io import to_bif

    states = {"age": ["<5", "12+", "5 to 11"], "lesion": ["Asy/Patch", "none, really"]}
    rng = np.random.default_rng(0)
    network = BayesianNetwork(
        ["age", "lesion"],
        states,
        {"age": (), "lesion": ("age",)},
        {"age": rng.dirichlet(np.ones(3)), "lesion": rng.dirichlet(np.ones(2), size=3)},
        "awkward net",
    )
    again = parse_bif(to_bif(network))
    assert again.states == states and again.name == "awkward net"
    for v in network.variables:
        np.testing.assert_array_equal(again.cpds[v], network.cpds[v])


def test_a_latin1_file_is_read(tmp_path):
    """BIF names no encoding; a file that is not UTF-8 is read as Latin-1 (old files are),
    and UTF-8 (with or without a byte-order mark, any newlines) still reads as before."""
    text = ("network café {\n}\nvariable température {\n"
            "  type discrete [ 2 ] { élevée, basse };\n}\n"
            "probability ( température ) {\n  table 0.25, 0.75;\n}\n")
    latin = tmp_path / "latin1.bif"
    latin.write_bytes(text.encode("latin-1"))
    network = read_bif(latin)
    assert network.name == "café" and network.states == {"température": ["élevée", "basse"]}
    for name, data in (("utf8.bif", text.encode("utf-8")),
                       ("bom.bif", b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode("utf-8"))):
        (tmp_path / name).write_bytes(data)
        assert read_bif(tmp_path / name).states == network.states


def test_a_released_network_round_trips_with_its_ledger_and_total(tmp_path):
    """A BN also round-trips as BIF (issue 25): dpgm keeps the noisy record count and the
    release (ledger, learner, seeded) in properties of the network block."""
    from dpgm.io import read_bif, write_bif
    from dpgm.models import BayesianNetwork, Release

    network = BayesianNetwork(
        ["rain", "wet"], {"rain": ["no", "yes"], "wet": ["dry", "damp"]},
        {"rain": (), "wet": ("rain",)},
        {"rain": np.array([0.7, 0.3]), "wet": np.array([[0.8, 0.2], [0.1, 0.9]])},
        name="lawn", total=50.5)
    network.release = Release({"accounting": "pure", "spent": {"epsilon": 1.0, "delta": 0.0},
                               "entries": [{"label": "node {wet}; \"cpd\"", "epsilon": 1.0,
                                            "rho": None, "delta": 0.0}]},
                              "DataDependentBN", {"epsilon": 1.0}, seeded=True)
    write_bif(network, tmp_path / "lawn.bif")
    loaded = read_bif(tmp_path / "lawn.bif")
    assert loaded.release == network.release and loaded.total == 50.5
    for v in network.variables:
        np.testing.assert_array_equal(loaded.cpds[v], network.cpds[v])
    text = (tmp_path / "lawn.bif").read_text()
    broken = text.replace('dpgm-release "', 'dpgm-release "!!', 1)
    with pytest.raises(DataError, match="dpgm-release is not readable"):
        parse_bif(broken)
    other = text.replace("  property dpgm-total 50.5;\n", "  property author \"someone\";\n")
    assert parse_bif(other).total == 1.0  # properties of other tools are ignored


def test_a_gzip_of_a_bif_file_reads_the_same(tmp_path):
    import gzip

    path = tmp_path / "asia.bif.gz"
    path.write_bytes(gzip.compress(bn_path("asia").read_bytes()))
    plain, packed = read_bif(bn_path("asia")), read_bif(path)
    assert packed.parents == plain.parents and packed.states == plain.states
    for v in plain.variables:
        assert np.array_equal(packed.cpds[v], plain.cpds[v])


@pytest.mark.parametrize("text", [
    # each unusual block goes through the careful reader, which names the problem
    'probability ( A | B ) {\n  (x) 0.5, 0.5;\n  (x) 0.5, 0.5;\n}',
    'probability ( A | B ) {\n  (x) 0.5, 0.5;\n}',
    'probability ( A | B ) {\n  (x) 0.5, 0.5;\n  (z) 0.5, 0.5;\n}',
    'probability ( A | B ) {\n  (x) 0.5, 0.5, 0.1;\n  (y) 0.5, 0.5;\n}',
    'probability ( A | B ) {\n  (x) 0.5, abc;\n  (y) 0.5, 0.5;\n}',
    'probability ( A | B ) {\n  (x) 0.9, 0.5;\n  (y) 0.5, 0.5;\n}',
])
def test_malformed_blocks_fail_with_the_careful_readers_message(text):
    head = ("variable A {\n  type discrete [ 2 ] { a0, a1 };\n}\n"
            "variable B {\n  type discrete [ 2 ] { x, y };\n}\n"
            "probability ( B ) {\n  table 0.5, 0.5;\n}\n")
    with pytest.raises(DataError, match=r"<string>, line \d+"):
        parse_bif(head + text)


def test_the_bulk_reader_and_the_careful_one_agree(monkeypatch):
    """Every bundled network, read in bulk and block by block: the same numbers."""
    import dpgm.io.bif as bif

    for name in ("asia", "sachs", "child", "alarm", "hailfinder", "win95pts", "hepar2"):
        quick = read_bif(bn_path(name))
        with monkeypatch.context() as patch:
            patch.setattr(bif, "_quick_tokens", lambda *args: None)
            patch.setattr(bif, "_QUICK_VARIABLE", __import__("re").compile(r"(?!)"))
            careful = read_bif(bn_path(name))
        assert quick.parents == careful.parents and quick.states == careful.states
        for v in quick.variables:
            assert np.array_equal(quick.cpds[v], careful.cpds[v])
