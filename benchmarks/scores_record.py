"""Record SDMetrics' and SDNist's scores on three real/synthetic table pairs, for dpgm's tests.

dpgm computes SDMetrics' QualityReport and DiagnosticReport and SDNist's k-marginal score
itself; its tests compare those numbers with the ones recorded here (neither library is a
test dependency). Three pairs, built deterministically from files in the repository:
penguins (all 344 rows), diamonds and adult (2,000-row seeded samples), each with a seeded,
imperfect "synthetic" copy (rows resampled, values redrawn and perturbed, a few values out
of range, unseen categories and missing values). Writes to ``tests/evaluation/data/scores``:
``<name>-real.csv``, ``<name>-synthetic.csv``, ``<name>-metadata.json`` (SDMetrics'
metadata dict), ``<name>-{real,synthetic}-kmarginal.csv`` (SDNist's discrete inputs, for
penguins and diamonds; adult's are its CSVs as they are) and ``reference.json``.

Run with the interpreter of a venv that has sdmetrics (0.32.0 recorded; it needs
pandas < 3), e.g. ``SDM/bin/python benchmarks/scores_record.py --sdnist-python
SDNIST/bin/python``; the second venv has sdnist (2.4) and runs ``_scores_sdnist_child.py``.
How the libraries compute: ``docs/standard-scores.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import warnings
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
DATASETS = ROOT / "src" / "dpgm" / "datasets"
OUT = ROOT / "tests" / "evaluation" / "data" / "scores"
CHILD = Path(__file__).with_name("_scores_sdnist_child.py")
DATE_FORMAT = "%Y-%m-%d"
SDTYPES = {"categorical": "categorical", "numeric": "numerical", "datetime": "datetime"}
ADULT_DOMAIN = json.loads((DATASETS / "adult-domain.json").read_text())
NOTES = {
    "quality, diagnostic": "sdmetrics.reports.single_table.QualityReport / DiagnosticReport "
    "().generate(real, synthetic, metadata, verbose=False): get_score(), get_properties(), "
    "get_details(property); NaN recorded as null",
    "unified_reports": "sdmetrics.reports.QualityReport / DiagnosticReport on "
    "{name: table} and {'tables': {name: metadata}}: same numbers (asserted to 1e-12)",
    "column_pair_trends_no_threshold": "ColumnPairTrends property alone with both thresholds 0: "
    "every pair scored and averaged (the report only averages pairs over its thresholds)",
    "sdnist_kmarginal": "sdnist.metrics.kmarginal.KMarginal(real, synthetic, group)"
    ".compute_score() "
    "on <name>-{real,synthetic}-kmarginal.csv (penguins, diamonds: SDNist's percentile bins of "
    "numeric and datetime columns, -1 for missing, categorical codes) or on adult's CSVs; "
    "plain_missing_as_nan: the same with -1 read as NaN; grouped_sex: group_features=['sex']",
}
QUALITY = ("Column Shapes", "Column Pair Trends")
DIAGNOSTIC = ("Data Validity", "Data Structure")


def metadata_from_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """SDMetrics' single-table metadata: categorical -> categorical, numeric -> numerical,
    datetime -> datetime with datetime_format "%Y-%m-%d"."""
    columns: dict[str, Any] = {}
    for name, spec in schema["columns"].items():
        entry: dict[str, Any] = {"sdtype": SDTYPES[spec["kind"]]}
        if spec["kind"] == "datetime":
            entry["datetime_format"] = DATE_FORMAT
        columns[name] = entry
    return {"columns": columns}


def adult_schema() -> dict[str, Any]:
    """All of adult's integer-coded columns as categorical, labels 0 .. size - 1."""
    return {
        "columns": {
            name: {"kind": "categorical", "labels": list(range(size))}
            for name, size in ADULT_DOMAIN.items()
        }
    }


def _numeric(
    column: np.ndarray, spec: dict[str, Any], rng: np.random.Generator, scale: float
) -> np.ndarray:
    """Gaussian noise (sd = scale * std), a few values past the real range, rounded."""
    values = column.astype(float).copy()
    finite = ~np.isnan(values)
    low, high = np.nanmin(values), np.nanmax(values)
    values[finite] += rng.normal(0.0, scale * np.nanstd(values), int(finite.sum()))
    spots = rng.choice(np.flatnonzero(finite), size=4, replace=False)
    span = high - low
    values[spots[:2]] = high + span * rng.uniform(0.05, 0.2, 2)
    values[spots[2:]] = low - span * rng.uniform(0.05, 0.2, 2)
    decimals = 0 if spec.get("integer") else int(spec.get("decimals", 2))
    return np.round(values, decimals)


def _categorical(
    column: np.ndarray, spec: dict[str, Any], rng: np.random.Generator, unseen: list[Any]
) -> np.ndarray:
    """10 % redrawn uniformly over the labels, then the unseen values at random rows."""
    values = column.astype(object).copy()
    labels = spec["labels"]
    redraw = rng.random(len(values)) < 0.10
    values[redraw] = [labels[i] for i in rng.integers(0, len(labels), int(redraw.sum()))]
    if unseen:
        values[rng.choice(len(values), size=len(unseen), replace=False)] = unseen
    return values


def _datetime(column: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Half the dates moved by -3 .. 3 days; two dates before and one after the real range."""
    dates = pd.to_datetime(pd.Series(column), format=DATE_FORMAT)
    low, high = dates.min(), dates.max()
    shift = np.where(rng.random(len(dates)) < 0.5, rng.integers(-3, 4, len(dates)), 0)
    dates = dates + pd.to_timedelta(shift, unit="D")
    spots = rng.choice(len(dates), size=3, replace=False)
    dates.iloc[spots] = [
        low - pd.Timedelta(days=40),
        low - pd.Timedelta(days=3),
        high + pd.Timedelta(days=25),
    ]
    return dates.dt.strftime(DATE_FORMAT).to_numpy(dtype=object)


def synthesize(
    real: pd.DataFrame,
    schema: dict[str, Any],
    rows: int,
    seed: int,
    unseen: dict[str, list[Any]],
    missing: dict[str, int],
) -> pd.DataFrame:
    """An imperfect copy: rows resampled, 25 % of each column redrawn from the column alone
    (weakens the pairs' trends), then perturbed per kind; missing[c] values set to NaN."""
    rng = np.random.default_rng(seed)
    picked = real.iloc[rng.integers(0, len(real), rows)].reset_index(drop=True)
    out: dict[str, Any] = {}
    for name, spec in schema["columns"].items():
        values = picked[name].to_numpy(dtype=object).copy()
        redraw = rng.random(rows) < 0.25
        values[redraw] = real[name].to_numpy(dtype=object)[
            rng.integers(0, len(real), int(redraw.sum()))
        ]
        if spec["kind"] == "numeric":
            scale = 0.05 if spec.get("integer") or spec.get("decimals", 2) <= 2 else 0.1
            values = _numeric(values, spec, rng, scale)
            if spec.get("integer") and not real[name].isna().any() and not missing.get(name):
                values = values.astype("int64")
        elif spec["kind"] == "categorical":
            values = _categorical(values, spec, rng, unseen.get(name, []))
        else:
            values = _datetime(values, rng)
        series = pd.Series(values)
        if missing.get(name):
            series = series.astype(object)
            series.iloc[rng.choice(rows, size=missing[name], replace=False)] = np.nan
        out[name] = series.infer_objects()
    return pd.DataFrame(out)


def build_tables() -> dict[str, dict[str, Any]]:
    """The three pairs, with their dpgm schemas."""
    penguins_schema = json.loads((DATASETS / "penguins-schema.json").read_text())
    diamonds_schema = json.loads((DATASETS / "diamonds-schema.json").read_text())
    penguins = pd.read_csv(DATASETS / "penguins.csv")
    diamonds_all = pd.read_csv(DATASETS / "diamonds.csv.gz")
    diamonds = diamonds_all.iloc[
        np.sort(np.random.default_rng(20240601).choice(len(diamonds_all), 2000, replace=False))
    ].reset_index(drop=True)
    adult_all = pd.read_csv(DATASETS / "adult.csv.gz")
    adult = adult_all.iloc[
        np.sort(np.random.default_rng(20240602).choice(len(adult_all), 2000, replace=False))
    ].reset_index(drop=True)
    nullable = [c for c, s in penguins_schema["columns"].items() if s.get("nullable")]
    tables = {
        "penguins": {
            "schema": penguins_schema,
            "real": penguins,
            "synthetic": synthesize(
                penguins,
                penguins_schema,
                300,
                11,
                unseen={"species": ["Emperor"], "island": ["Anvers", "Anvers"]},
                missing={**{c: 18 for c in nullable}, "clutch_completion": 3},
            ),
        },
        "diamonds": {
            "schema": diamonds_schema,
            "real": diamonds,
            "synthetic": synthesize(
                diamonds,
                diamonds_schema,
                1800,
                12,
                unseen={"cut": ["Excellent"] * 3, "color": ["K", "L"]},
                missing={"depth": 4, "color": 3},
            ),
        },
        "adult": {
            "schema": adult_schema(),
            "real": adult,
            "synthetic": synthesize(
                adult,
                adult_schema(),
                1900,
                13,
                unseen={
                    "workclass": [ADULT_DOMAIN["workclass"]] * 4,
                    "race": [ADULT_DOMAIN["race"]] * 2,
                },
                missing={},
            ),
        },
    }
    return tables


def _plain(value: Any) -> Any:
    """JSON-ready: numpy scalars as Python ones, NaN / NA as None."""
    if value is None or value is pd.NA:
        return None
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        return None if math.isnan(value) else float(value)
    return value


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [
        {key: _plain(value) for key, value in row.items()}
        for row in frame.astype(object).to_dict(orient="records")
    ]


def _report(report: Any, names: tuple[str, ...], generate: tuple) -> dict[str, Any]:
    report.generate(*generate, verbose=False)
    properties = report.get_properties()
    return {
        "overall": _plain(report.get_score()),
        "properties": {row["Property"]: _plain(row["Score"]) for _, row in properties.iterrows()},
        "details": {name: _records(report.get_details(name)) for name in names},
    }


def sdmetrics_scores(
    real: pd.DataFrame, synthetic: pd.DataFrame, metadata: dict[str, Any], name: str
) -> dict[str, Any]:
    """Both reports (the single-table classes), the unified reports' overall and property
    scores (must agree), and Column Pair Trends without the report's thresholds."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from sdmetrics.reports import DiagnosticReport as UnifiedDiagnostic
        from sdmetrics.reports import QualityReport as UnifiedQuality
        from sdmetrics.reports.single_table import DiagnosticReport, QualityReport
        from sdmetrics.reports.single_table._properties import ColumnPairTrends

        args = (real, synthetic, metadata)
        quality = _report(QualityReport(), QUALITY, args)
        diagnostic = _report(DiagnosticReport(), DIAGNOSTIC, args)
        unified_args = ({name: real}, {name: synthetic}, {"tables": {name: metadata}})
        unified = {}
        for key, report in (("quality", UnifiedQuality()), ("diagnostic", UnifiedDiagnostic())):
            report.generate(*unified_args, verbose=False)
            props = report.get_properties()
            unified[key] = {
                "overall": _plain(report.get_score()),
                "properties": {r["Property"]: _plain(r["Score"]) for _, r in props.iterrows()},
            }
        trends = ColumnPairTrends()  # thresholds 0: every pair scored and averaged
        converted_real, converted_synth = real.copy(), synthetic.copy()
        for column, meta in metadata["columns"].items():
            if meta["sdtype"] == "datetime":
                converted_real[column] = pd.to_datetime(real[column], format=DATE_FORMAT)
                converted_synth[column] = pd.to_datetime(synthetic[column], format=DATE_FORMAT)
        no_threshold_score = trends.get_score(converted_real, converted_synth, metadata)
    for key, ours in (("quality", quality), ("diagnostic", diagnostic)):
        theirs = unified[key]
        assert abs(ours["overall"] - theirs["overall"]) < 1e-12, (name, key)
        for prop, value in ours["properties"].items():
            assert value is None or abs(value - theirs["properties"][prop]) < 1e-12, (name, prop)
    return {
        "quality": quality,
        "diagnostic": diagnostic,
        "unified_reports": unified,
        "column_pair_trends_no_threshold": {
            "score": _plain(no_threshold_score),
            "details": _records(trends.details),
        },
    }


def sdnist_scores(tables: dict[str, dict[str, Any]], python: str) -> dict[str, Any]:
    """Run _scores_sdnist_child.py with SDNist's interpreter on the written CSVs."""
    job = {"tables": []}
    for name, table in tables.items():
        columns = table["schema"]["columns"]
        spec: dict[str, Any] = {
            "name": name,
            "real_csv": str(OUT / f"{name}-real.csv"),
            "synthetic_csv": str(OUT / f"{name}-synthetic.csv"),
            "numeric": [c for c, s in columns.items() if s["kind"] == "numeric"],
            "datetime": [c for c, s in columns.items() if s["kind"] == "datetime"],
            "datetime_format": DATE_FORMAT,
            "categorical": {
                c: (None if name == "adult" else s["labels"])
                for c, s in columns.items()
                if s["kind"] == "categorical"
            },
            "groups": [["sex"]] if name == "adult" else [],
            "nan_variant": name == "penguins",
        }
        if name != "adult":
            spec["discrete_real_csv"] = str(OUT / f"{name}-real-kmarginal.csv")
            spec["discrete_synthetic_csv"] = str(OUT / f"{name}-synthetic-kmarginal.csv")
        job["tables"].append(spec)
    done = subprocess.run(
        [python, str(CHILD)], input=json.dumps(job), capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sdnist-python", required=True,
                        help="the python of a venv with sdnist 2.4 installed")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    tables = build_tables()
    reference: dict[str, Any] = {
        "versions": {
            "sdmetrics": version("sdmetrics"),
            "pandas": pd.__version__,
            "numpy": np.__version__,
            "scipy": version("scipy"),
            "python": sys.version.split()[0],
        },
        "reading": "pandas.read_csv(path) with no options; datetime columns stay strings "
        "(format %Y-%m-%d) and are converted by the reports from the metadata",
        "notes": NOTES,
        "tables": {},
    }
    for name, table in tables.items():
        metadata = metadata_from_schema(table["schema"])
        (OUT / f"{name}-metadata.json").write_text(json.dumps(metadata, indent=1) + "\n")
        table["real"].to_csv(OUT / f"{name}-real.csv", index=False)
        table["synthetic"].to_csv(OUT / f"{name}-synthetic.csv", index=False)
        real = pd.read_csv(OUT / f"{name}-real.csv")
        synthetic = pd.read_csv(OUT / f"{name}-synthetic.csv")
        entry = {
            "rows": {"real": len(real), "synthetic": len(synthetic)},
            "dtypes": {
                "real": {c: str(t) for c, t in real.dtypes.items()},
                "synthetic": {c: str(t) for c, t in synthetic.dtypes.items()},
            },
        }
        entry.update(sdmetrics_scores(real, synthetic, metadata, name))
        reference["tables"][name] = entry
        print(name, entry["quality"]["overall"], entry["diagnostic"]["overall"], flush=True)
    sdnist = sdnist_scores(tables, args.sdnist_python)
    reference["versions"]["sdnist"] = sdnist["versions"]
    for name, result in sdnist["tables"].items():
        reference["tables"][name]["sdnist_kmarginal"] = result
        print(name, "k-marginal", result["plain"]["score"], flush=True)
    (OUT / "reference.json").write_text(json.dumps(reference, indent=1) + "\n")


if __name__ == "__main__":
    main()
