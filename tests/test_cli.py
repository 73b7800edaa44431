"""The ``dpgm`` command line, called in-process (``dpgm.cli.main``) and once as a program."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from salt_helpers import folders_under_two_salts

from dpgm import Dataset, Domain, MarkovRandomField
from dpgm.cli import SEEDED_WARNING, main, sampling_seed
from dpgm.evaluation import mean_tv, tv_distance
from dpgm.privacy import cdp_epsilon, cdp_rho

DOMAIN = Domain(["a", "b", "c", "d", "e"], [2, 3, 5, 4, 3])
N = 600
ITERS = "30"


def _write_inputs(folder: Path, seed: int = 0) -> tuple[Path, Path]:
    rng = np.random.default_rng(seed)
    pairs = [("a", "b"), ("b", "c"), ("c", "d"), ("d", "e")]
    potentials = {p: rng.normal(size=DOMAIN.project(p).shape) for p in pairs}
    data = MarkovRandomField(DOMAIN, potentials, total=N).sample(N, rng=seed)
    csv, domain = folder / "data.csv", folder / "domain.json"
    data.save(csv)
    DOMAIN.save(domain)
    return csv, domain


@pytest.fixture
def inputs(tmp_path):
    return _write_inputs(tmp_path)


def _synth(csv, domain, out, *extra):
    return main(
        [
            "synth",
            str(csv),
            "--domain",
            str(domain),
            "--epsilon",
            "1",
            "--iters",
            ITERS,
            "--out",
            str(out),
            *extra,
        ]
    )


def _assert_one_line_error(capsys, code, *needles):
    """Exit status 2, one error line (notes may come before it), no traceback."""
    captured = capsys.readouterr()
    assert code == 2
    lines = captured.err.strip().splitlines()
    errors = [line for line in lines if line.startswith("dpgm: error: ")]
    assert len(errors) == 1 and lines[-1] == errors[0], captured.err
    assert all(line.startswith(("note:", "[dpgm]", "dpgm: ")) for line in lines), captured.err
    assert "Traceback" not in captured.err
    for needle in needles:
        assert needle in errors[0]
    assert "privacy spent" not in captured.out
    return errors[0]


# -- synth -------------------------------------------------------------------------------
def test_synth_writes_synthetic_csv(inputs, tmp_path, capsys):
    csv, domain = inputs
    out = tmp_path / "synthetic.csv"
    assert _synth(csv, domain, out, "--seed", "0") == 0
    captured = capsys.readouterr()

    synthetic = Dataset.load(out, domain)  # validates integer codes in range
    assert abs(len(synthetic) - N) < 0.1 * N
    header = out.read_text().splitlines()[0]
    assert header.split(",") == list(DOMAIN.attrs)
    records = np.loadtxt(out, delimiter=",", skiprows=1, dtype=np.int64)
    assert (records >= 0).all() and (records < np.array(DOMAIN.shape)).all()

    last = captured.out.strip().splitlines()[-1]
    match = re.fullmatch(r"privacy spent: epsilon=(\S+) delta=(\S+) rho=(\S+)", last)
    assert match, last
    assert match.group(1) == "1" and match.group(2) == "1e-09"
    rho = float(match.group(3))
    assert rho == pytest.approx(cdp_rho(1.0, 1e-9), rel=1e-5)
    assert cdp_epsilon(cdp_rho(1.0, 1e-9), 1e-9) == pytest.approx(1.0, rel=1e-6)
    assert SEEDED_WARNING in captured.err
    assert "wrote" in captured.err  # progress goes to stderr


def test_synth_seed_reproducible_and_distinct_sampling_seed(inputs, tmp_path, capsys):
    csv, domain = inputs
    one, two = tmp_path / "one.csv", tmp_path / "two.csv"
    assert _synth(csv, domain, one, "--seed", "4") == 0
    assert _synth(csv, domain, two, "--seed", "4") == 0
    assert one.read_bytes() == two.read_bytes()
    assert sampling_seed(4) != 4 and sampling_seed(None) is None


def test_synth_without_seed_has_no_warning(inputs, tmp_path, capsys):
    csv, domain = inputs
    out = tmp_path / "unseeded.csv"
    assert _synth(csv, domain, out) == 0
    captured = capsys.readouterr()
    assert SEEDED_WARNING not in captured.err
    assert captured.out.strip().splitlines()[-1].startswith("privacy spent: epsilon=1 ")
    assert len(Dataset.load(out, domain)) > 0


def test_synth_refuses_to_overwrite_without_force(inputs, tmp_path, capsys):
    csv, domain = inputs
    out = tmp_path / "exists.csv"
    out.write_text("precious\n")
    code = _synth(csv, domain, out, "--seed", "0")
    line = _assert_one_line_error(capsys, code, "--force")
    assert str(out) in line
    assert out.read_text() == "precious\n"

    assert _synth(csv, domain, out, "--seed", "0", "--force") == 0
    capsys.readouterr()
    assert out.read_text() != "precious\n"
    assert len(Dataset.load(out, domain)) > 0


def _edit_csv(csv: Path, column: str, row: int, value: str) -> None:
    lines = csv.read_text().splitlines()
    header = lines[0].split(",")
    cells = lines[row + 1].split(",")
    cells[header.index(column)] = value
    lines[row + 1] = ",".join(cells)
    csv.write_text("\n".join(lines) + "\n")


def test_value_out_of_domain(inputs, tmp_path, capsys):
    csv, domain = inputs
    _edit_csv(csv, "c", 7, "5")
    out = tmp_path / "out.csv"
    line = _assert_one_line_error(capsys, _synth(csv, domain, out), "'c'", "row 7")
    assert "outside its domain" in line
    assert not out.exists()


def test_nan_value(inputs, tmp_path, capsys):
    csv, domain = inputs
    _edit_csv(csv, "b", 3, "")
    out = tmp_path / "out.csv"
    _assert_one_line_error(capsys, _synth(csv, domain, out), "'b'", "row 3")
    assert not out.exists()


def test_missing_column(inputs, tmp_path, capsys):
    csv, domain = inputs
    lines = [",".join(line.split(",")[:-1]) for line in csv.read_text().splitlines()]
    csv.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out.csv"
    _assert_one_line_error(capsys, _synth(csv, domain, out), "no column", "'e'")
    assert not out.exists()


@pytest.mark.parametrize(
    ("option", "value", "needle"),
    [
        ("--epsilon", "0", "epsilon"),
        ("--epsilon", "-2", "epsilon"),
        ("--delta", "2", "delta"),
        ("--delta", "0", "delta"),
        ("--iters", "0", "iters"),
    ],
)
def test_bad_privacy_parameters(inputs, tmp_path, capsys, option, value, needle):
    csv, domain = inputs
    out = tmp_path / "out.csv"
    args = {"--epsilon": "1", "--delta": "1e-9", "--iters": ITERS, option: value}
    argv = ["synth", str(csv), "--domain", str(domain), "--out", str(out)]
    for key, val in args.items():
        argv += [key, val]
    _assert_one_line_error(capsys, main(argv), needle)
    assert not out.exists()


def test_missing_domain_file(inputs, tmp_path, capsys):
    csv, _ = inputs
    out = tmp_path / "out.csv"
    missing = tmp_path / "nowhere.json"
    _assert_one_line_error(capsys, _synth(csv, missing, out), "nowhere.json")
    assert not out.exists()


def test_missing_data_file_and_output_folder(inputs, tmp_path, capsys):
    csv, domain = inputs
    _assert_one_line_error(capsys, _synth(tmp_path / "none.csv", domain, tmp_path / "o.csv"))
    _assert_one_line_error(
        capsys, _synth(csv, domain, tmp_path / "no" / "such" / "o.csv"), "does not exist"
    )


def test_bad_domain_json(inputs, tmp_path, capsys):
    csv, _ = inputs
    domain = tmp_path / "bad.json"
    domain.write_text("[1, 2")
    _assert_one_line_error(capsys, _synth(csv, domain, tmp_path / "o.csv"), "JSON")
    domain.write_text(json.dumps({"a": 0}))
    _assert_one_line_error(capsys, _synth(csv, domain, tmp_path / "o.csv"), "size")


@pytest.mark.parametrize(
    "content", [b"a,b,c,d,e\n0,0,0,0,0\n1,1,1,1,1,1\n", b"\xff\xfe\x00garbage\n"]
)
def test_malformed_csv(inputs, tmp_path, capsys, content):
    _, domain = inputs
    csv = tmp_path / "malformed.csv"
    csv.write_bytes(content)
    _assert_one_line_error(capsys, _synth(csv, domain, tmp_path / "o.csv"))


def test_usage_errors_exit_2_with_one_line(capsys):
    _assert_one_line_error(capsys, main(["synth"]), "required")
    _assert_one_line_error(capsys, main(["frobnicate"]), "invalid choice")


# -- evaluate ----------------------------------------------------------------------------
def test_evaluate_prints_mean_tv(inputs, tmp_path, capsys):
    csv, domain = inputs
    synthetic_path = tmp_path / "syn.csv"
    synthetic = Dataset(
        np.column_stack(
            [np.random.default_rng(k).integers(0, s, size=250) for k, s in enumerate(DOMAIN.shape)]
        ),
        DOMAIN,
    )
    synthetic.save(synthetic_path)
    real = Dataset.load(csv, DOMAIN)

    assert main(["evaluate", str(csv), str(synthetic_path), "--domain", str(domain)]) == 0
    captured = capsys.readouterr()
    assert "not for release" in captured.err  # evaluate's figures are not private
    lines = captured.out.strip().splitlines()
    assert lines[0] == f"real: {N} records; synthetic: 250 records"
    values = {}
    readings = [line for line in lines if line.startswith("reading: ")]
    assert len(readings) == 3  # the figures in words, one line per size
    scores = [line for line in lines if line.startswith(("SDMetrics", "SDNist"))]
    assert [s.split(" score")[0] for s in scores] == ["SDMetrics quality", "SDMetrics diagnostic",
                                                     "SDNist k-marginal"]
    for line in lines[1:]:
        if line.startswith(("reading: ", "SDMetrics", "SDNist")):
            continue
        match = re.fullmatch(r"mean TV error over all (\d)-way marginals: (\S+)", line)
        assert match, line
        values[int(match.group(1))] = match.group(2)
    assert sorted(values) == [1, 2, 3]
    for ways, value in values.items():  # four significant digits
        assert value == f"{mean_tv(real, synthetic, ways):.4g}"

    assert (
        main(["evaluate", str(csv), str(synthetic_path), "--domain", str(domain), "--ways", "3"])
        == 0
    )
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 6 and lines[1].startswith("mean TV error over all 3-way marginals: ")
    assert lines[2].startswith("reading: for 3 columns together")
    assert math.isclose(float(lines[1].split()[-1]), mean_tv(real, synthetic, 3), abs_tol=5e-5)


def test_evaluate_bad_input(inputs, tmp_path, capsys):
    csv, domain = inputs
    _assert_one_line_error(
        capsys, main(["evaluate", str(csv), str(tmp_path / "none.csv"), "--domain", str(domain)])
    )
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b,c,d,e\n0,0,0,0,9\n")
    _assert_one_line_error(
        capsys, main(["evaluate", str(csv), str(bad), "--domain", str(domain)]), "'e'"
    )


# -- as a program ------------------------------------------------------------------------
def test_console_script_help():
    script = Path(sys.executable).parent / "dpgm"
    command = (
        [str(script), "--help"] if script.exists() else [sys.executable, "-m", "dpgm.cli", "--help"]
    )
    result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "synth" in result.stdout and "evaluate" in result.stdout


def test_evaluate_reports_the_workload_error(inputs, tmp_path, capsys):
    from dpgm.workload import Workload

    csv, domain = inputs
    real = Dataset.load(csv, DOMAIN)
    synthetic = real.project(DOMAIN.attrs)
    synthetic.records[:100, 2] = 0  # perturb some records
    synthetic_path, workload_path = tmp_path / "syn.csv", tmp_path / "w.json"
    synthetic.save(synthetic_path)
    workload = Workload([("a", "c"), ("b", "c", "d")], numeric=["c"])
    workload.save(workload_path)
    args = ["evaluate", str(csv), str(synthetic_path), "--domain", str(domain)]
    assert main([*args, "--workload", str(workload_path), "--ways", "1"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    # four significant digits (a tiny error is not printed as 0.0000)
    match = re.fullmatch(r"workload error \(2 sub-workloads, .*\): (\S+)", lines[1])
    assert match, lines[1]
    expected = workload.error(real, synthetic)
    assert expected > 0.01
    assert match.group(1) == f"{expected:.4g}"
    match = re.fullmatch(r"mean TV error over the workload's 2 marginals: (\S+)", lines[2])
    assert match, lines[2]
    tv = np.mean([tv_distance(real.marginal(c), synthetic.marginal(c)) for c in workload])
    assert tv > 0.001 and match.group(1) == f"{tv:.4g}"
    assert main([*args, "--ways", "9"]) == 2
    assert "--ways must be between 1 and 5" in capsys.readouterr().err


def test_synth_passes_workload_and_estimator(inputs, tmp_path, capsys):
    csv, domain = inputs
    workload_path = tmp_path / "w.json"
    workload_path.write_text(json.dumps([["a", "zzz"]]))
    assert _synth(csv, domain, tmp_path / "o.csv", "--workload", str(workload_path)) == 2
    assert "zzz" in capsys.readouterr().err
    assert not (tmp_path / "o.csv").exists()


ZCDP_MECHANISMS = {"mst", "aim", "dualquery"}


@pytest.mark.parametrize("estimator", ["pgm", "original"])
@pytest.mark.parametrize("mechanism", ["mst", "aim", "privbayes", "mwem", "dualquery", "hdmm"])
def test_every_mechanism_and_estimator_writes_records_and_its_spend(
    inputs, tmp_path, capsys, mechanism, estimator
):
    csv, domain = inputs
    out = tmp_path / "synthetic.csv"
    options = ("--mechanism", mechanism, "--estimator", estimator, "--seed", "0")
    assert _synth(csv, domain, out, *options) == 0, capsys.readouterr().err
    assert len(Dataset.load(out, domain)) > 0  # validates codes in range
    last = capsys.readouterr().out.strip().splitlines()[-1]
    match = re.fullmatch(r"privacy spent: epsilon=(\S+) delta=(\S+)( rho=\S+)?", last)
    assert match, last
    assert float(match.group(1)) == pytest.approx(1.0, rel=1e-5)
    assert (match.group(3) is not None) == (mechanism in ZCDP_MECHANISMS)


def test_hdmm_local_least_squares_is_refused_before_the_data_are_read(tmp_path, capsys):
    # 40^5 ≈ 1e8 cells: over HDMM's max_cells, so its original estimator keeps local tables
    big = Domain([f"x{i}" for i in range(5)], [40] * 5)
    big.save(tmp_path / "domain.json")
    missing = tmp_path / "never-read.csv"
    code = _synth(
        missing, tmp_path / "domain.json", tmp_path / "o.csv",
        "--mechanism", "hdmm", "--estimator", "original",
    )  # fmt: skip
    _assert_one_line_error(capsys, code, "HDMM", "Private-PGM")
    assert not (tmp_path / "o.csv").exists()


def test_the_options_named_without_importing_the_mechanisms_match_the_registry():
    """``dpgm --help`` offers --mechanism and --estimator from names in cli.common (so
    that it imports no mechanism); they must be the registry's."""
    from dpgm.cli.common import ESTIMATORS, LOSSES, MECHANISMS
    from dpgm.mechanisms import REGISTRY
    from dpgm.residuals import LOSSES as PLAN_LOSSES

    assert MECHANISMS == tuple(sorted(REGISTRY))
    assert ESTIMATORS == tuple(sorted({e for cls in REGISTRY.values() for e in cls.estimators}))
    assert LOSSES == PLAN_LOSSES


def _built_mechanism(mechanism, *extra):
    from dpgm.cli import build_parser
    from dpgm.cli.synth import _build_mechanism

    args = build_parser().parse_args(
        ["synth", "data.csv", "--epsilon", "1", "--out", "o.csv", "--mechanism", mechanism,
         *extra])
    return _build_mechanism(args)


@pytest.mark.parametrize("mechanism", ["aim-rp", "aim", "swift", "hdmm", "mwem", "dualquery",
                                       "residual-planner"])
def test_max_cells_reaches_every_mechanism_with_a_cell_cap_as_a_whole_number(mechanism):
    """A cell cap is a count: "5000" and "1e6" reach the mechanism as integers (AIM's
    and SWIFT's caps refuse a float); a fraction is refused by the parser."""
    def cap(*extra):
        built = _built_mechanism(mechanism, *extra)
        # AIM+RP hands its cap to the AIM that selects for it
        return (built._selector(1.0) if mechanism == "aim-rp" else built).max_cells

    assert cap("--max-cells", "5000") == 5000
    assert cap("--max-cells", "1e6") == 1_000_000
    with pytest.raises(SystemExit):
        _built_mechanism(mechanism, "--max-cells", "2.5")


@pytest.mark.parametrize("mechanism", ["residual-planner", "aim-rp"])
def test_loss_reaches_the_mechanism(mechanism):
    """--loss is passed on to the mechanisms that plan with ResidualPlanner; without it
    they keep their own default."""
    from dpgm.cli import build_parser
    from dpgm.cli.synth import _build_mechanism

    def built(*extra):
        args = build_parser().parse_args(
            ["synth", "data.csv", "--epsilon", "1", "--out", "o.csv", "--mechanism",
             mechanism, *extra])
        return _build_mechanism(args)

    assert built("--loss", "max").loss == "max"
    assert built("--loss", "error").loss == "error"
    assert built().loss == "sum"


def test_import_dpgm_loads_no_subpackage_until_one_is_used():
    """The package's names load on first use (dpgm._lazy); every name in __all__ resolves."""
    import subprocess
    import sys

    code = ("import sys, dpgm; heavy = [m for m in ('numpy', 'pandas', 'scipy', 'dpgm.models') "
            "if m in sys.modules]; print(heavy); "
            "assert all(getattr(dpgm, name) is not None for name in dpgm.__all__)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"


def test_evaluate_compares_up_to_three_way_as_far_as_the_columns_go(tmp_path, capsys):
    small = Domain(["a", "b"], [2, 3])
    (tmp_path / "domain.json").write_text(json.dumps(small.to_dict()))
    data = Dataset(np.random.default_rng(0).integers(0, 2, size=(50, 2)), small)
    data.save(tmp_path / "data.csv")
    assert main(["evaluate", str(tmp_path / "data.csv"), str(tmp_path / "data.csv"),
                 "--domain", str(tmp_path / "domain.json")]) == 0
    out = capsys.readouterr().out
    assert "2-way marginals: 0" in out and "3-way" not in out


def test_seeded_synth_does_not_depend_on_string_hashing(inputs, tmp_path):
    """--seed alone fixes every mechanism's output: Python salts str hashes per process,
    so no set or dict built from attribute names may order a draw. (The reference AIM's
    scripts do, so the benchmark suite fixes PYTHONHASHSEED for every system; that would
    hide such an order in dpgm, hence this check across two processes. The raw-table path
    is checked in test_cli_raw_path.py.)"""
    from dpgm.cli.common import MECHANISMS

    csv, domain = inputs
    code = (
        "import sys; from dpgm.cli import main\n"
        "folder, csv, domain = sys.argv[1:4]\n"
        "print(hash('salt'))\n"
        "for mechanism in sys.argv[4:]:\n"
        "    assert main(['synth', csv, '--domain', domain, '--epsilon', '1', '--seed', '5',"
        f" '--iters', '{ITERS}', '--mechanism', mechanism,"
        " '--out', f'{folder}/{mechanism}.csv']) == 0\n"
    )
    one, two = folders_under_two_salts(tmp_path, code, str(csv), str(domain), *MECHANISMS)
    for mechanism in MECHANISMS:
        name = f"{mechanism}.csv"
        assert (one / name).read_bytes() == (two / name).read_bytes(), mechanism
