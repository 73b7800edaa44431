"""Writing files safely: checked before any work, written whole or not at all.

:func:`check_output` says, before a run reads its data, whether a path can be written (a
folder that exists and accepts files, not a directory, not one of the run's inputs).
:func:`atomic_write` writes to a temporary file beside the target and renames it over
the target only once everything is written, so a full disk or a killed run never leaves
a truncated file behind (nor a stray temporary one).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from os import PathLike
from pathlib import Path
from typing import IO

from dpgm.errors import OutputError, option

PathType = str | PathLike[str]


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and a.samefile(b))
    except OSError:
        return False


def check_output(path: PathType, *, force: bool = False, inputs: Iterable[PathType] = ()) -> Path:
    """``path`` as a Path if a run may write it; an :class:`OutputError` saying why not.

    It must not be a directory or one of ``inputs``, its folder must exist and accept new
    files, and an existing file is replaced only with ``force``.
    """
    target = Path(path)
    if target.is_dir():
        raise OutputError(f"{target} is a directory; give a file name for the output")
    for source in inputs:
        if source is not None and _same_file(target, Path(source)):
            raise OutputError(f"{target} is one of the inputs; write the output somewhere else")
    folder = target.parent
    if not folder.is_dir():
        raise OutputError(f"the folder of {target} does not exist")
    try:  # the only reliable test of "can a file be created here"
        fd, probe = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".check", dir=folder)
    except OSError as exc:
        raise OutputError(f"cannot write to {folder} ({exc.strerror})") from None
    os.close(fd)
    os.unlink(probe)
    if target.exists():
        if not force:
            raise OutputError(f"{target} exists; pass {option('force', True)} to overwrite it")
        if not os.access(target, os.W_OK):
            raise OutputError(f"{target} exists and is read-only")
    return target


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def atomic_write(path: PathType, mode: str = "w") -> Iterator[IO]:
    """A file object whose content replaces ``path`` only if the block completes."""
    target = Path(path)
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"newline": ""})) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, 0o666 & ~_umask())  # mkstemp makes 0600 files
        os.replace(temporary, target)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
