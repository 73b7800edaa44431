"""Benchmark: counting out of core with DuckDB against in memory with NumPy (issue 15).

A generated table of ``--rows`` records and 15 integer-coded columns (a chain of noisy
copies, so that MST and AIM have structure to find), written once as Parquet and CSV under
``--folder``. For each engine and mechanism (MST and AIM at ε = 1, seeded), one child
process fits the mechanism and reports its wall time and peak resident memory (the
child's ``ru_maxrss``); the in-memory engine has to load the table first. Last, both
engines run under an address-space limit (``--limit``, default 3 GiB) too small for the
table in memory: DuckDB (``memory_limit`` 1 GB, spilling to disk) should complete and
NumPy fail. Where PySpark is installed, MST also runs on Spark ``local[2]`` (the driver's
peak memory is reported; the JVM's is not).

Run by hand: ``.venv/bin/python benchmarks/scale_out.py [--rows 20000000]``; the last line
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

COLUMNS = 15
SIZES = [2, 3, 4, 5, 6, 8, 10, 12, 2, 3, 4, 5, 6, 8, 16]


def domain():
    from dpgm import Domain

    return Domain([f"c{i}" for i in range(COLUMNS)], SIZES)


def generate(folder: Path, rows: int) -> dict[str, Path]:
    """The table as Parquet and CSV, made by DuckDB without holding it in memory."""
    import duckdb

    folder.mkdir(parents=True, exist_ok=True)
    paths = {"parquet": folder / f"table-{rows}.parquet", "csv": folder / f"table-{rows}.csv"}
    if all(p.exists() for p in paths.values()):
        return paths
    columns = ["CAST(floor(random() * 2) AS INTEGER) AS c0"]
    for i in range(1, COLUMNS):
        # a noisy copy of the previous column, folded onto this one's values
        columns.append(f"CAST((CASE WHEN random() < 0.6 THEN c{i - 1} "
                       f"ELSE floor(random() * {SIZES[i]}) END) % {SIZES[i]} AS INTEGER) AS c{i}")
    query = f"SELECT {columns[0]} FROM range({rows})"
    for i in range(1, COLUMNS):
        query = f"SELECT *, {columns[i]} FROM ({query})"
    connection = duckdb.connect()
    connection.execute("SET memory_limit = '2GB'")
    connection.execute(f"COPY ({query}) TO '{paths['parquet']}' (FORMAT parquet)")
    connection.execute(f"COPY (SELECT * FROM read_parquet('{paths['parquet']}')) "
                       f"TO '{paths['csv']}' (HEADER)")
    return paths


def fit(task: tuple[str, str, str, int | None], queue) -> None:
    """In a child process: fit, then report seconds and peak memory (or the failure)."""
    mechanism, engine, path, limit = task
    if limit:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    import warnings

    warnings.simplefilter("ignore")
    try:
        from dpgm.mechanisms import REGISTRY

        start = time.perf_counter()
        if engine == "duckdb":
            from dpgm.engines.duckdb import DuckDBTable

            data = DuckDBTable(path, domain(), memory_limit="1GB",
                               temp_directory=str(Path(path).parent / "spill"))
        elif engine == "spark":
            from pyspark.sql import SparkSession

            from dpgm.engines.spark import SparkTable

            session = (SparkSession.builder.master("local[2]").appName("dpgm-scale-out")
                       .config("spark.ui.enabled", "false").getOrCreate())
            session.sparkContext.setLogLevel("ERROR")
            data = SparkTable(path, domain(), session=session)
        else:
            from dpgm import Dataset
            from dpgm.dataset import read_table

            data = Dataset.from_pandas(read_table(path), domain())
        model = REGISTRY[mechanism](1.0).fit(data, rng=0)
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
    for mechanism in ("mst", "aim"):
        for engine, source in (("numpy", "csv"), ("duckdb", "parquet"), ("duckdb", "csv")):
            result = run((mechanism, engine, str(paths[source]), None))
            figures["runs"].append({"mechanism": mechanism, "engine": engine,
                                    "file": source, **result})
            rows.append([mechanism, engine, source, *_describe(result)])
            print(rows[-1], flush=True)
    if importlib.util.find_spec("pyspark") is not None:  # the driver's memory only
        result = run(("mst", "spark", str(paths["parquet"]), None))
        figures["runs"].append({"mechanism": "mst", "engine": "spark", "file": "parquet",
                                **result})
        rows.append(["mst", "spark local[2]", "parquet", *_describe(result)])
        print(rows[-1], flush=True)
    for engine, source in (("numpy", "parquet"), ("duckdb", "parquet")):
        result = run(("mst", engine, str(paths[source]), int(args.limit)))
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
