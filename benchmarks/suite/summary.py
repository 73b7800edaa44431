"""The suite's runs, summed up over seeds: mean and standard error, and the latest run of
each cell read back from the suite's logs (``--out``)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np


def mean_and_error(values) -> tuple[float, float]:
    """The mean over seeds and its standard error (0 for a single seed)."""
    values = np.asarray(values, dtype=float)
    if len(values) < 2:
        return float(values.mean()), 0.0
    return float(values.mean()), float(values.std(ddof=1) / math.sqrt(len(values)))


def cell(run: dict) -> tuple[str, int, float, str]:
    """The cell a run of the suite fills: (table, seed, ε, system)."""
    return run["table"], run["seed"], float(run["epsilon"]), run["system"]


def out_of_budget(seconds: float) -> str:
    """The status of a run stopped at its time budget of ``seconds``."""
    return f"out of its {seconds / 60:g}-minute budget"


def ran_out_of_budget(status: str) -> bool:
    """Whether ``status`` is that of a run stopped at its time budget (a failure's
    message that mentions a budget is not)."""
    return status.startswith("out of its ") and status.endswith("-minute budget")


def read_runs(logs: list[Path]) -> list[dict]:
    """Every run in the suite's logs: where a cell (table, seed, ε, system) comes more
    than once, the last one, reading the logs in the order given and each from its first
    line (the suite appends); the cells in the order they first appear."""
    runs: dict[tuple, dict] = {}
    for log in logs:
        for number, line in enumerate(Path(log).read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                run = json.loads(line)
                key = cell(run)
            except (json.JSONDecodeError, KeyError, TypeError) as error:
                raise ValueError(
                    f"{log}, line {number}: not a run of the suite ({error})") from error
            runs[key] = run
    return list(runs.values())
