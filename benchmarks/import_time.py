"""Benchmark: how long ``import dpgm`` and ``dpgm --help`` take (issue 25: under 0.3 s).

Each is run in a fresh interpreter, ten times; the best is reported (the least disturbed
by the machine), with the median beside it, and ``python -X importtime``'s five slowest
imports of ``dpgm --help``. Run: ``.venv/bin/python benchmarks/import_time.py``. The last
line printed is one line of JSON with every figure.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

from _common import print_json_last

RUNS = 10
COMMANDS = {
    "import dpgm": [sys.executable, "-c", "import dpgm"],
    "dpgm --help": [sys.executable, "-m", "dpgm", "--help"],
    # no target: what the first use of a model costs (numpy, scipy, networkx load then)
    "import dpgm; dpgm.MarkovRandomField": [sys.executable, "-c",
                                            "import dpgm; dpgm.MarkovRandomField"],
}
TARGETS = {"import dpgm": 0.3, "dpgm --help": 0.3}


def timed(command: list[str]) -> list[float]:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return times


def slowest_imports(command: list[str], count: int = 5) -> list[tuple[str, float]]:
    """The modules with the largest cumulative import time (s) under -X importtime."""
    done = subprocess.run([command[0], "-X", "importtime", *command[1:]], check=True,
                          capture_output=True, text=True)
    rows = []
    for line in done.stderr.splitlines():
        parts = [p.strip() for p in line.removeprefix("import time:").split("|")]
        if len(parts) == 3 and parts[1].isdigit():
            rows.append((parts[2], int(parts[1]) / 1e6))
    return sorted(rows, key=lambda r: -r[1])[:count]


def main() -> None:
    figures = {}
    for name, command in COMMANDS.items():
        times = timed(command)
        figures[name] = {"best_s": min(times), "median_s": statistics.median(times)}
        target = TARGETS.get(name)
        verdict = ("no target" if target is None else
                   f"target {target} s: {'met' if min(times) < target else 'NOT met'}")
        print(f"{name:40s} best {min(times):.3f} s, median {statistics.median(times):.3f} s "
              f"({verdict})")
    print("slowest imports of dpgm --help (cumulative):")
    for module, seconds in slowest_imports(COMMANDS["dpgm --help"]):
        print(f"  {module:40s} {seconds:.3f} s")
    print_json_last(figures)


if __name__ == "__main__":
    main()
