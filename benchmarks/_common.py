"""Helpers shared by the benchmark scripts: fresh child processes, timing, memory, output.

Every figure a benchmark reports about time or memory comes from a child process
started with the interpreter that runs the script (``sys.executable``), so that Python
start-up, imports and (for the JAX reference) compilation are paid as a user would pay
them. The parent stamps the wall-clock time just before it starts the child in the
environment variable ``DPGM_BENCH_T0``; the child measures every moment as seconds since
that stamp (:func:`since_start`) and reports its peak resident memory from
``resource.getrusage`` (:func:`peak_rss_mb`). A child ends by printing one line
``RESULT_PREFIX + json`` (:func:`child_report`), which :func:`run_child` picks up.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import resource
import subprocess
import sys
import time
from collections.abc import Sequence

import numpy as np

T0_ENV = "DPGM_BENCH_T0"
RESULT_PREFIX = "@@bench-result@@ "
_IMPORTED_AT = time.time()  # fallback origin for a child started by hand


def have_mbi() -> bool:
    """Whether the reference implementation (``mbi``, the ``bench`` extra) is installed."""
    return importlib.util.find_spec("mbi") is not None


# -- inside a child ---------------------------------------------------------------------
def since_start() -> float:
    """Seconds since the parent started this process (or since this module was imported)."""
    return time.time() - float(os.environ.get(T0_ENV, _IMPORTED_AT))


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def child_report(result: dict) -> None:
    """Print the child's result (with its peak memory and run time) for :func:`run_child`."""
    result = dict(result, peak_rss_mb=peak_rss_mb(), child_exit_s=since_start())
    print(RESULT_PREFIX + json.dumps(result), flush=True)


def import_mbi(x64: bool = False):
    """Import the reference ``mbi`` quietly, with JAX in float32 (its default) or float64."""
    import warnings

    import jax

    if x64:
        jax.config.update("jax_enable_x64", True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the float32 and compilation-cache notices
        import mbi
    return mbi


# -- in the parent ----------------------------------------------------------------------
def run_child(script: str, spec: dict, timeout: float, memory_limit: int | None = None
              ) -> dict:
    """Run ``script`` with ``spec`` (JSON) in a fresh interpreter; its result, or an error.

    The result gains ``parent_wall_s``: the parent's view of the child's whole life.
    ``memory_limit`` caps the child's address space (bytes): past it, allocations fail.
    """
    env = dict(os.environ)
    t0 = time.time()
    env[T0_ENV] = repr(t0)
    try:
        proc = subprocess.run(
            [sys.executable, script, json.dumps(spec)],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            preexec_fn=None if memory_limit is None else (
                lambda: resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
            ),
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    wall = time.time() - t0
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            result = json.loads(line[len(RESULT_PREFIX) :])
            result["parent_wall_s"] = wall
            return result
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
    return {"error": f"exit code {proc.returncode}: " + " | ".join(tail)}


def best_of(repeat: int, work):
    """The least wall-clock seconds of ``repeat`` runs of ``work()``, and its last result."""
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = work()
        times.append(time.perf_counter() - start)
    return min(times), result


def median(values: Sequence[float]) -> float | None:
    """The median of ``values`` (None if there are none)."""
    values = sorted(v for v in values if v is not None)
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else 0.5 * (values[mid - 1] + values[mid])


def ratio(a: float | None, b: float | None) -> float | None:
    """``a / b``, or None where either is missing or ``b`` is zero."""
    if a is None or b is None or b == 0:
        return None
    return a / b


def fmt(value, spec: str = ".3g", unit: str = "") -> str:
    """``value`` formatted with ``spec`` and ``unit``; ``n/a`` for None or NaN."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:{spec}}{unit}"


def verdict(value: float | None, limit: float) -> str:
    """``PASS`` or ``FAIL`` against an upper ``limit`` (``n/a`` without a value)."""
    if value is None:
        return "n/a"
    return "PASS" if value < limit else "FAIL"


def print_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """Print rows as a plain left-aligned table under ``headers``."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[k]) for r in cells) for k in range(len(headers))]
    for n, row in enumerate(cells):
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
        if n == 0:
            print("  ".join("-" * w for w in widths))


def print_json_last(figures: dict) -> None:
    """Print every figure as one line of JSON: the last line the script prints."""
    sys.stdout.flush()
    print(json.dumps(figures, separators=(",", ":")), flush=True)


# -- loss and error, in NumPy, the same for dpgm and the reference -----------------------
def project_table(attrs: Sequence[str], values, clique: Sequence[str]):
    """The table ``values`` on ``attrs`` summed down to ``clique`` (axes in clique order)."""
    drop = tuple(k for k, a in enumerate(attrs) if a not in clique)
    kept = [a for a in attrs if a in clique]
    table = np.asarray(values, dtype=np.float64)
    if drop:
        table = table.sum(axis=drop)
    return np.transpose(table, [kept.index(a) for a in clique])


def l2_loss(marginal, measured, sigma: float) -> float:
    """``½ Σ ‖(μ_c − y_c)/σ‖²`` with ``marginal(c)`` the model's count table on clique c."""
    total = 0.0
    for clique, y in measured:
        residual = (np.asarray(marginal(clique), dtype=np.float64).ravel() - y) / sigma
        total += 0.5 * float(residual @ residual)
    return total


def tv_distance(p, q) -> float:
    """Total variation ``½‖p/Σp − q/Σq‖₁`` between two tables of counts."""
    p = np.asarray(p, dtype=np.float64).ravel()
    q = np.asarray(q, dtype=np.float64).ravel()
    return 0.5 * float(np.abs(p / p.sum() - q / q.sum()).sum())
