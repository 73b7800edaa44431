"""How long the evaluation report takes on a million real and a million synthetic records.

Two figures for dpgm, on the same files:

* **the command**, end to end: ``dpgm evaluate REAL.csv SYNTH.csv --schema S --ways 1 2
  --report DIR`` (read both CSVs, encode, every score, the page and its JSON, written);
* **the page**: :func:`dpgm.report.evaluate` and the HTML, from the two tables already
  read and encoded (what the issue's "built in < 10 s" measures).

With ``--sdmetrics-python PY`` (a venv with sdmetrics, which needs pandas < 3), the same
CSVs also go through SDMetrics' own Quality and Diagnostic reports in that interpreter,
timed the same way (read and report), side by side. SDMetrics subsamples its pair
tables to 50,000 rows above that size; dpgm counts every row.

The tables: Diamonds (bundled) resampled to ``--rows`` records with a seed; the
"synthetic" table resampled again with half its columns shuffled (a table with some
relationships lost). The schema gives every numeric column 20 equal bins.

Run: ``.venv/bin/python benchmarks/report_build.py [--rows 1000000]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
DATASETS = ROOT / "src" / "dpgm" / "datasets"

SDMETRICS_CHILD = """
import json, sys, time
t = time.perf_counter()
import pandas as pd
from sdmetrics.reports.single_table import DiagnosticReport, QualityReport
real, synthetic = pd.read_csv(sys.argv[1]), pd.read_csv(sys.argv[2])
metadata = json.load(open(sys.argv[3]))
read = time.perf_counter() - t
quality = QualityReport(); quality.generate(real, synthetic, metadata, verbose=False)
diagnostic = DiagnosticReport(); diagnostic.generate(real, synthetic, metadata, verbose=False)
print(json.dumps({"seconds": time.perf_counter() - t, "read": read,
                  "quality": quality.get_score(), "diagnostic": diagnostic.get_score()}))
"""


def make_tables(folder: Path, rows: int, seed: int) -> tuple[Path, Path, Path]:
    rng = np.random.default_rng(seed)
    diamonds = pd.read_csv(DATASETS / "diamonds.csv.gz")
    real = diamonds.sample(rows, replace=True, random_state=int(rng.integers(2**31)))
    synthetic = diamonds.sample(rows, replace=True, random_state=int(rng.integers(2**31)))
    for name in synthetic.columns[::2]:
        synthetic[name] = rng.permutation(synthetic[name].to_numpy())
    paths = folder / "real.csv", folder / "synthetic.csv", folder / "schema.json"
    real.to_csv(paths[0], index=False)
    synthetic.to_csv(paths[1], index=False)
    schema = json.loads((DATASETS / "diamonds-schema.json").read_text())
    for column in schema["columns"].values():
        if column.get("kind") == "numeric" and column.get("bins") is None:
            column["bins"] = 20
    paths[2].write_text(json.dumps(schema))
    return paths


def time_command(real: Path, synthetic: Path, schema: Path, folder: Path) -> float:
    dpgm = Path(sys.executable).parent / "dpgm"
    start = time.perf_counter()
    subprocess.run([str(dpgm), "evaluate", str(real), str(synthetic), "--schema", str(schema),
                    "--ways", "1", "2", "--report", str(folder / "report"), "--force"],
                   check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def time_page(real: Path, synthetic: Path, schema_path: Path) -> tuple[float, dict]:
    from dpgm.dataset import read_raw_table
    from dpgm.privacy.quiet import on_records
    from dpgm.report import evaluate
    from dpgm.schema import Schema

    schema = Schema.load(schema_path)
    frames = (read_raw_table(real), read_raw_table(synthetic))
    with on_records():
        encoded = [schema.encode(frame) for frame in frames]
    start = time.perf_counter()
    evaluation = evaluate(*encoded, schema=schema, frames=frames)
    evaluation.to_html()
    seconds = time.perf_counter() - start
    return seconds, {"quality": evaluation.quality.overall,
                     "diagnostic": evaluation.diagnostic.overall,
                     "k_marginal": evaluation.k_marginal}


def time_sdmetrics(python: str, real: Path, synthetic: Path, schema_path: Path,
                   folder: Path) -> dict:
    from dpgm.evaluation.scores import metadata_for
    from dpgm.schema import Schema

    schema = Schema.load(schema_path)
    metadata = metadata_for(schema, schema.columns)
    (folder / "metadata.json").write_text(json.dumps(metadata))
    found = subprocess.run([python, "-c", SDMETRICS_CHILD, str(real), str(synthetic),
                            str(folder / "metadata.json")], check=True, capture_output=True,
                           text=True)
    return json.loads(found.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sdmetrics-python", default=None,
                        help="python of a venv with sdmetrics: time its reports too")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        real, synthetic, schema = make_tables(folder, args.rows, args.seed)
        print(f"{args.rows:,} real and {args.rows:,} synthetic records, 10 columns (Diamonds)")
        command = time_command(real, synthetic, schema, folder)
        print(f"dpgm evaluate --report, end to end (read, encode, scores, page, JSON): "
              f"{command:.1f} s")
        page, scores = time_page(real, synthetic, schema)
        print(f"dpgm page alone (evaluate() and HTML, tables in memory): {page:.1f} s "
              f"(quality {scores['quality']:.4f}, diagnostic {scores['diagnostic']:.4f}, "
              f"k-marginal {scores['k_marginal']:.1f})")
        if args.sdmetrics_python:
            theirs = time_sdmetrics(args.sdmetrics_python, real, synthetic, schema, folder)
            print(f"SDMetrics Quality + Diagnostic reports (read and report): "
                  f"{theirs['seconds']:.1f} s, of which reading {theirs['read']:.1f} s "
                  f"(quality {theirs['quality']:.4f}, diagnostic {theirs['diagnostic']:.4f}; "
                  "pairs subsampled to 50,000 rows)")


if __name__ == "__main__":
    main()
