"""Benchmark of the fit alone: counting out of core with DuckDB against in memory with
NumPy (issue 15). It times reading and fitting, not sampling or writing: the command a
user runs, end to end, is timed by ``scale_out.py``.

A generated table of ``--rows`` records and 15 integer-coded columns (a chain of noisy
copies, so that MST and AIM have structure to find), written once as Parquet and CSV under
``--folder``. For each engine and mechanism (MST and AIM at ε = 1, seeded; AIM with
``max_model_size=2`` MB, because with 20 million records its default 80 MB lets the model
grow for most of an hour, in estimation, not counting), one child process fits the
mechanism and reports its wall time and peak resident memory (the child's ``ru_maxrss``);
the in-memory engine has to load the table first. MST also runs on the same files read
as a raw table with a schema (labels on even columns, numeric bins on odd ones): encoded
by ``schema.encode`` in memory, and inside DuckDB's SQL. Last, both engines run under an
address-space limit (``--limit``, default 3 GiB) too small for the table in memory:
DuckDB (``memory_limit`` 1 GB, spilling to disk) should complete and NumPy fail. Where
PySpark is installed, MST also runs on Spark ``local[2]``, from codes and from the raw
table with its schema (the driver's peak memory is reported; the JVM's is not).

Run by hand: ``.venv/bin/python benchmarks/counting.py [--rows 20000000]``; the last line
printed is one line of JSON with every figure.
"""

from __future__ import annotations

import argparse
import importlib.util
import multiprocessing
import resource
import tempfile
import time
from pathlib import Path

from _common import print_json_last, print_table
from scale_out import SIZES, domain
from scale_out import generate as generate_parquet


def schema():
    """The generated codes read as a raw table: labels 0..k-1 on even columns, k numeric
    bins of width 1 on odd ones."""
    from dpgm.schema import Schema

    return Schema.from_json({"columns": {
        f"c{i}": {"kind": "categorical", "labels": list(range(k))} if i % 2 == 0 else
        {"kind": "numeric", "lower": 0, "upper": k, "bins": k}
        for i, k in enumerate(SIZES)}})


#: the mechanisms and their settings
MECHANISMS = {"mst": {}, "aim": {"max_model_size": 2.0}}


def generate(folder: Path, rows: int) -> dict[str, Path]:
    """The table of ``scale_out.py`` as Parquet, and as CSV copied from it by DuckDB."""
    import duckdb

    paths = {"parquet": generate_parquet(folder, rows), "csv": folder / f"table-{rows}.csv"}
    if not paths["csv"].exists():
        duckdb.connect().execute(f"COPY (SELECT * FROM read_parquet('{paths['parquet']}')) "
                                 f"TO '{paths['csv']}' (HEADER)")
    return paths


def fit(task: tuple[str, str, str, int | None, bool], queue) -> None:
    """In a child process: fit, then report seconds and peak memory (or the failure);
    ``raw``: read the file as a raw table with :func:`schema`."""
    mechanism, engine, path, limit, raw = task
    if limit:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    import warnings

    warnings.simplefilter("ignore")
    try:
        from dpgm.mechanisms import REGISTRY

        start = time.perf_counter()
        if engine == "duckdb":
            from dpgm.engines.duckdb import DuckDBTable

            spill = str(Path(path).parent / "spill")
            data = (DuckDBTable.encode(path, schema(), memory_limit="1GB", temp_directory=spill)
                    if raw else
                    DuckDBTable(path, domain(), memory_limit="1GB", temp_directory=spill))
        elif engine == "spark":
            from pyspark.sql import SparkSession

            from dpgm.engines.spark import SparkTable

            session = (SparkSession.builder.master("local[2]").appName("dpgm-scale-out")
                       .config("spark.ui.enabled", "false").getOrCreate())
            session.sparkContext.setLogLevel("ERROR")
            data = (SparkTable.encode(path, schema(), session=session) if raw
                    else SparkTable(path, domain(), session=session))
        else:
            from dpgm import Dataset
            from dpgm.dataset import read_table

            data = (schema().encode(read_table(path)) if raw
                    else Dataset.from_pandas(read_table(path), domain()))
        model = REGISTRY[mechanism](1.0, **MECHANISMS[mechanism]).fit(data, rng=0)
        seconds = time.perf_counter() - start
        error = float(abs(model.marginal(["c0", "c1"]).sum() - data.total) / data.total)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        queue.put({"seconds": seconds, "peak_bytes": peak, "total_check": error})
    except BaseException as failure:  # noqa: BLE001 - a benchmark reports a failure
        queue.put({"failed": f"{type(failure).__name__}: {str(failure)[:160]}"})


def run(task) -> dict:
    queue = multiprocessing.get_context("fork").Queue()
    child = multiprocessing.get_context("fork").Process(target=fit, args=(task, queue))
    child.start()
    child.join()
    return queue.get() if not queue.empty() else {"failed": f"exit code {child.exitcode}"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--folder", default=str(Path(tempfile.gettempdir()) / "dpgm-scale-out"),
                        help="where the generated files go (default: the system's temp folder)")
    parser.add_argument("--limit", type=float, default=3 * 2**30,
                        help="address-space limit (bytes) of the last two runs")
    args = parser.parse_args()
    start = time.perf_counter()
    paths = generate(Path(args.folder), args.rows)
    print(f"generated {args.rows:,} rows in {time.perf_counter() - start:.0f} s: "
          + ", ".join(f"{k} {p.stat().st_size / 2**20:.0f} MiB" for k, p in paths.items()),
          flush=True)
    figures = {"rows": args.rows, "runs": []}
    rows = []
    runs = [(mechanism, engine, source, False)
            for mechanism in MECHANISMS
            for engine, source in (("numpy", "csv"), ("duckdb", "parquet"), ("duckdb", "csv"))]
    runs += [("mst", engine, source, True)
             for engine, source in (("numpy", "csv"), ("duckdb", "parquet"), ("duckdb", "csv"))]
    if importlib.util.find_spec("pyspark") is not None:  # the driver's memory only
        runs += [("mst", "spark", "parquet", False), ("mst", "spark", "parquet", True)]
    for mechanism, engine, source, raw in runs:
        result = run((mechanism, engine, str(paths[source]), None, raw))
        figures["runs"].append({"mechanism": mechanism, "engine": engine, "file": source,
                                "raw_with_schema": raw, **result})
        rows.append([mechanism + (", raw + schema" if raw else ""),
                     "spark local[2]" if engine == "spark" else engine, source,
                     *_describe(result)])
        print(rows[-1], flush=True)
    for engine, source in (("numpy", "parquet"), ("duckdb", "parquet")):
        result = run(("mst", engine, str(paths[source]), int(args.limit), False))
        figures["runs"].append({"mechanism": "mst", "engine": engine, "file": source,
                                "address_limit": args.limit, **result})
        rows.append([f"mst, {args.limit / 2**30:.0f} GiB limit", engine, source,
                     *_describe(result)])
        print(rows[-1], flush=True)
    print_table(["mechanism", "engine", "file", "seconds", "peak memory"], rows)
    print_json_last(figures)


def _describe(result: dict) -> list[str]:
    if "failed" in result:
        return ["failed", result["failed"][:60]]
    return [f"{result['seconds']:.1f}", f"{result['peak_bytes'] / 2**20:,.0f} MiB"]


if __name__ == "__main__":
    main()
