"""Progress a person can see: lines, or bars where tqdm is installed (``pip install
'dpgm[progress]'``), in a terminal and in a notebook.

What progress shows is public only: stages and released (noisy) values, and counts of
steps out of a public number — iteration i of N, round k of a public maximum. It never
shows a time: how long work on records takes follows from the number of records, which is
private, so a bar carries no elapsed time, rate or time estimate.

``progress`` (as mechanisms take it): None — silent, except in a notebook, where bars are
shown; True — bars where tqdm is installed, else lines on standard error; a function —
called with each line (every tenth step of a long loop); False — silent.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from dpgm.errors import ParameterError

#: what a bar shows: the stage, the share done, the bar, and step i of N — no time
BAR_FORMAT = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt}{postfix}"
PREFIX = "[dpgm] "

ProgressLike = Callable[[str], object] | bool | None


def in_notebook() -> bool:
    """Whether this runs in a Jupyter kernel (where bars are shown by default)."""
    return "ipykernel" in sys.modules


def _tqdm():
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm


class Reporter:
    """Where a piece of work tells its progress (see the module docstring)."""

    def __init__(self, progress: ProgressLike = None):
        if progress is not None and not isinstance(progress, bool) and not callable(progress):
            raise ParameterError(f"progress must be a function, True, False or None, got "
                                 f"{progress!r}")
        if progress is None:
            progress = in_notebook()
        self.lines: Callable[[str], object] | None = None
        self.bars = None
        #: passed on to each tqdm bar (tests draw every update: mininterval=0)
        self.bar_options: dict = {}
        self._said: set[str] = set()  # the lines said with say_once
        if callable(progress) and not isinstance(progress, bool):
            self.lines = progress
        elif progress:
            self.bars = _tqdm()
            self.lines = self._write if self.bars is not None else _print

    def say(self, line: str) -> None:
        """One line: a stage done, with public facts and released values only."""
        if self.lines is not None:
            self.lines(line)

    def say_once(self, line: str) -> None:
        """:meth:`say`, unless this reporter said ``line`` so already (a notice that both
        a check before reading the data and the fit after it reach)."""
        if line not in self._said:
            self._said.add(line)
            self.say(line)

    def steps(self, total: int, what: str) -> Callable[[int, float | None], None]:
        """A callback for step i (1..``total``, a public number) of a loop, with a released
        value to show (or None): a bar that ends at ``total``, or a line every tenth."""
        if self.bars is not None:
            # frames at fixed steps, never on a clock: tqdm's default redraws every 0.1 s,
            # so which steps show would reveal the rate (and so the number of records)
            self.bars.monitor_interval = 0
            options = {"mininterval": 0, "maxinterval": float("inf"),
                       "miniters": max(1, total // 100), **self.bar_options}
            bar = self.bars(total=total, desc=what, bar_format=BAR_FORMAT, leave=False,
                            file=sys.stderr, **options)

            def advance(step: int, value: float | None = None) -> None:
                bar.update(step - bar.n)
                if value is not None:
                    bar.set_postfix_str(f"{value:.6g}", refresh=False)
                if step >= total:
                    bar.close()

            return advance
        period = max(1, total // 10)

        def line(step: int, value: float | None = None) -> None:
            if step % period == 0:
                shown = "" if value is None else f": {value:.6g}"
                self.say(f"{what} {step}/{total}{shown}")

        return line

    def _write(self, line: str) -> None:
        self.bars.write(PREFIX + line, file=sys.stderr)

    @property
    def silent(self) -> bool:
        return self.lines is None


def _print(line: str) -> None:
    print(PREFIX + line, file=sys.stderr, flush=True)
