"""How much memory a step will take, from public facts, and the one guard that refuses it.

Every table dpgm allocates has a size that follows from public facts (the domain, the
workload, the options) or, at worst, from a noisy value already released. Each step
computes its size first and calls :func:`check_memory`, which refuses with a
:class:`~dpgm.errors.ModelTooLargeError` naming the size, the limit and the option that
changes it — before any budget is spent when the size is public. Sizes are Python
integers, so a domain of 2**70 cells is refused rather than overflowed.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable

from dpgm.errors import ModelTooLargeError, option

#: bytes of one float64 (or int64) cell
CELL_BYTES = 8
#: bytes per cell while a marginal is measured: the counts, the noisy answers, the copy kept
MEASURED_CELL_BYTES = 3 * CELL_BYTES
#: the limit when a machine does not say how much memory it has
FALLBACK_MEMORY = 4 * 2**30


def physical_memory() -> int | None:
    """Bytes of RAM on this machine, if the system says."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None


def _default_limit() -> int:
    found = physical_memory()
    return FALLBACK_MEMORY if not found or found <= 0 else found // 2


#: the default memory limit of a run: half of this machine's RAM
DEFAULT_MAX_MEMORY: int = _default_limit()


def format_bytes(nbytes: float) -> str:
    """``nbytes`` for people: ``"45.7 GB"`` (decimal units)."""
    for unit, scale in (("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes:.0f} B"


def table_bytes(cells: float, copies: int = 1) -> float:
    """Bytes that ``copies`` float64 tables of ``cells`` cells take."""
    return float(cells) * CELL_BYTES * copies


def cells(shape: Iterable[int]) -> int:
    """Cells of a table of the given shape, as an exact Python integer."""
    return math.prod(int(s) for s in shape)


def check_memory(
    what: str,
    nbytes: float,
    limit: float,
    *,
    knob: str = "max_memory",
    alternative: str = "",
) -> None:
    """Refuse a step that would allocate more than ``limit`` bytes.

    ``what`` names the step ("the marginal on ('a', 'b')"), ``knob`` the option that sets
    ``limit``, and ``alternative`` another way out ("measure smaller cliques").
    """
    if nbytes <= limit:
        return
    message = (
        f"{what} would need {format_bytes(nbytes)}, over the memory limit of "
        f"{format_bytes(limit)} (set by {option(knob)})"
    )
    if alternative:
        message += f"; {alternative}"
    raise ModelTooLargeError(message)


#: the codes one chunk of streamed synthetic records holds at most (64 MiB at 8 bytes each)
CHUNK_CELLS = 2**23
#: the most and fewest records of a chunk by default (``chunk_rows``)
MOST_CHUNK_ROWS, FEWEST_CHUNK_ROWS = 1_000_000, 10_000


def default_chunk_rows(width: int) -> int:
    """Records per chunk of streamed synthesis: a million, fewer for wide tables, so that
    a chunk's codes take at most 64 MiB (``CHUNK_CELLS``), and never under 10,000."""
    return int(min(MOST_CHUNK_ROWS, max(FEWEST_CHUNK_ROWS, CHUNK_CELLS // max(width, 1))))


def check_rows(rows: int, width: int, limit: float, *, copies: int = 1) -> None:
    """Refuse ``rows`` synthetic records of ``width`` attributes (``copies`` alive at once)."""
    check_memory(
        f"{rows:,} synthetic records",
        float(rows) * width * CELL_BYTES * copies,
        limit,
        alternative=f"ask for fewer with {option('rows')}",
    )


def check_cells(
    what: str, count: int, limit: float, *, knob: str = "max_cells", alternative: str = ""
) -> None:
    """Refuse a model or table of more than ``limit`` cells (a size cap, not bytes)."""
    if count <= limit:
        return
    message = f"{what} needs {count:,} cells, over {option(knob, _plain(limit))}"
    if alternative:
        message += f"; {alternative}"
    raise ModelTooLargeError(message)


def _plain(number: float) -> int | float:
    return int(number) if float(number).is_integer() else number
