"""SIGTERM (a job scheduler's kill) ends a command as Ctrl-C does: the work unwinds, a
half-written output's temporary file is removed, and the exit status is 143."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_requested = threading.Event()


class Terminated(KeyboardInterrupt):
    """Raised in the main thread when SIGTERM arrives."""

    # A subclass, not KeyboardInterrupt itself: CPython 3.11 remembers a KeyboardInterrupt
    # that passed through code run by PyRun_String, even one caught later, and then ends
    # the process by SIGINT instead of with the status the command returns.


def _terminate(signum, frame) -> None:
    _requested.set()
    raise Terminated


@contextmanager
def sigterm_unwinds() -> Iterator[None]:
    """While the block runs, SIGTERM raises :class:`Terminated` (on the main thread only:
    elsewhere signals cannot be handled); the previous handler comes back after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _requested.clear()
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def stop_if_terminated() -> None:
    """Raise :class:`Terminated` if SIGTERM came, even where its exception was swallowed
    (by a finaliser the signal interrupted, whose exceptions Python only prints)."""
    if _requested.is_set():
        raise Terminated
