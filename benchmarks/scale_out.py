"""Benchmark: the command a user runs, end to end, at scale (issues 15 and 27).

A generated table of ``--rows`` records and 15 integer-coded columns (a chain of noisy
copies, so that MST and AIM have structure to find), written once as Parquet by DuckDB
under ``--folder``. Each run is one ``dpgm synth`` command in a fresh process, as a user
types it: read the file, fit (ε = 1, seeded), sample the default number of rows (the
model's noisy estimate of the record count, so about ``--rows``) and write them as
Parquet. Timed by the wall clock around the whole command, with the peak resident memory
of its whole process tree (the command, and Spark's JVM where Spark runs) polled from
/proc every 0.2 s. Mechanisms: MST, AIM and SWIFT with their default settings (``--mechanism``
picks); engines: numpy (the file loaded into memory), duckdb and spark ``local[2]``
(where PySpark and Java are installed; ``--engine`` picks). A run past ``--timeout``
seconds is stopped and reported as such.

Run by hand: ``.venv/bin/python benchmarks/scale_out.py [--rows 20000000]``; the last line
printed is one line of JSON with every figure.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from _common import print_json_last, print_table

COLUMNS = 15
SIZES = [2, 3, 4, 5, 6, 8, 10, 12, 2, 3, 4, 5, 6, 8, 16]
MECHANISMS = ("mst", "aim", "swift")
ENGINES = ("numpy", "duckdb", "spark")


def domain():
    from dpgm import Domain

    return Domain([f"c{i}" for i in range(COLUMNS)], SIZES)


def generate(folder: Path, rows: int) -> Path:
    """The table as Parquet, made by DuckDB without holding it in memory."""
    import duckdb

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"table-{rows}.parquet"
    if path.exists():
        return path
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
    connection.execute(f"COPY ({query}) TO '{path}' (FORMAT parquet)")
    return path


def _tree_rss(root: int) -> int:
    """Resident bytes of process ``root`` and all its descendants, from /proc."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as handle:
                    fields = handle.read().rsplit(b")", 1)[1].split()
                parents[int(entry)] = int(fields[1])
            except (OSError, IndexError, ValueError):
                continue
    tree, changed = {root}, True
    while changed:
        found = {pid for pid, parent in parents.items() if parent in tree} - tree
        changed = bool(found)
        tree |= found
    total = 0
    for pid in tree:
        try:
            with open(f"/proc/{pid}/statm") as handle:
                total += int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            continue
    return total


def run_command(command: list[str], timeout: float) -> dict:
    """Wall time, peak tree memory and exit status of ``command`` (stopped at ``timeout``)."""
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = [0]
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _tree_rss(child.pid))
            done.wait(0.2)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    try:
        out, err = child.communicate(timeout=timeout)
        seconds = time.perf_counter() - start
    except subprocess.TimeoutExpired:
        child.kill()
        out, err = child.communicate()
        seconds = None
    done.set()
    poller.join()
    result = {"seconds": seconds, "peak_bytes": peak[0], "exit": child.returncode}
    if seconds is None:
        result["failed"] = f"stopped after {timeout:.0f} s"
    elif child.returncode != 0:
        lines = [line for line in err.splitlines() if line.startswith("dpgm: ")]
        result["failed"] = (lines[-1] if lines else err.strip()[-160:])[:160]
    else:
        result["ledger"] = out.strip().splitlines()[-1] if out.strip() else ""
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--folder", default=str(Path(tempfile.gettempdir()) / "dpgm-scale-out"),
                        help="where the generated files go (default: the system's temp folder)")
    parser.add_argument("--mechanism", nargs="+", choices=MECHANISMS, default=list(MECHANISMS))
    parser.add_argument("--engine", nargs="+", choices=ENGINES, default=list(ENGINES))
    parser.add_argument("--timeout", type=float, default=1800.0,
                        help="seconds a run may take before it is stopped (default 1800)")
    args = parser.parse_args()
    start = time.perf_counter()
    table = generate(Path(args.folder), args.rows)
    print(f"generated {args.rows:,} rows in {time.perf_counter() - start:.0f} s: "
          f"Parquet {table.stat().st_size / 2**20:.0f} MiB", flush=True)
    domain().save(Path(args.folder) / "domain.json")
    spark = importlib.util.find_spec("pyspark") is not None and shutil.which("java")
    dpgm = [sys.executable, "-m", "dpgm"]
    figures = {"rows": args.rows, "runs": []}
    rows = []
    for mechanism in args.mechanism:
        for engine in args.engine:
            if engine == "spark" and not spark:
                continue
            out = Path(args.folder) / f"synthetic-{mechanism}-{engine}.parquet"
            command = dpgm + ["synth", str(table), "--domain",
                              str(Path(args.folder) / "domain.json"), "--epsilon", "1",
                              "--mechanism", mechanism, "--engine", engine, "--seed", "0",
                              "--out", str(out), "--force"]
            result = run_command(command, args.timeout)
            if out.is_dir():  # Spark's folder of part files
                result["output_bytes"] = sum(f.stat().st_size for f in out.rglob("*")
                                             if f.is_file())
                shutil.rmtree(out)
            elif out.exists():
                result["output_bytes"] = out.stat().st_size
                out.unlink()
            figures["runs"].append({"mechanism": mechanism, "engine": engine, **result})
            rows.append([mechanism, "spark local[2]" if engine == "spark" else engine,
                         *_describe(result)])
            print(rows[-1], flush=True)
    print_table(["mechanism", "engine", "seconds (whole command)", "peak memory (tree)"], rows)
    print_json_last(figures)


def _describe(result: dict) -> list[str]:
    if "failed" in result:
        return ["failed", result["failed"][:70]]
    return [f"{result['seconds']:.1f}", f"{result['peak_bytes'] / 2**20:,.0f} MiB"]


if __name__ == "__main__":
    main()
