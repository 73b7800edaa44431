"""Writing files safely: checked before any work, written whole or not at all.

:func:`check_output` says, before a run reads its data, whether a path can be written (a
folder that exists and accepts files, not a directory, not one of the run's inputs).
:func:`atomic_write` writes to a temporary file beside the target and renames it over
the target only once everything is written, so a full disk or a killed run never leaves
a truncated file behind (nor a stray temporary one). A symbolic link is written through
(the link stays); ``-`` is standard output, and a stream such as ``/dev/stdout`` or a
named pipe is written as it is (a stream cannot be replaced whole).
"""

from __future__ import annotations

import os
import sys
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


#: the output path that means standard output
STDOUT = "-"


def is_stream(path: PathType) -> bool:
    """Whether ``path`` is this process's standard output (``-``, ``/dev/stdout``, even
    where it was redirected to a file), or names something that exists and is neither a
    regular file nor a folder: a terminal, a named pipe, a device."""
    if writes_to_stdout(path):
        return True
    return os.path.exists(path) and not os.path.isfile(path) and not os.path.isdir(path)


def writes_to_stdout(path: PathType) -> bool:
    """Whether writing ``path`` writes this process's standard output."""
    if str(path) == STDOUT:
        return True
    try:
        target, stdout = os.stat(path), os.fstat(sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no such path, or no real stdout
        return False
    return (target.st_dev, target.st_ino) == (stdout.st_dev, stdout.st_ino)


def check_output(path: PathType, *, force: bool = False, inputs: Iterable[PathType] = ()) -> Path:
    """``path`` as a Path if a run may write it; an :class:`OutputError` saying why not.

    It must not be a directory or one of ``inputs``, its folder must exist and accept new
    files, and an existing file is replaced only with ``force``. Standard output (``-``)
    and streams are written as they are (see :func:`is_stream`).
    """
    target = Path(os.path.realpath(path)) if os.path.islink(path) else Path(path)
    for source in inputs:
        if source is not None and (_same_file(target, Path(source))
                                   or writes_to_stdout(path) and writes_to_stdout(source)):
            raise OutputError(f"{path} is one of the inputs or outputs; write it somewhere "
                              "else")
    if is_stream(path):
        return Path(path)
    if target.is_dir():
        raise OutputError(f"{target} is a directory; give a file name for the output")
    folder = target.parent
    if not folder.is_dir():
        raise OutputError(f"the folder of {target} does not exist")
    try:  # the only reliable test of "can a file be created here"
        fd, probe = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".check", dir=folder)
    except OSError as exc:
        raise OutputError(f"cannot write to {folder} ({exc.strerror})") from None
    try:
        os.close(fd)
    finally:  # also when SIGTERM or Ctrl-C lands between: no probe is left behind
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
    if writes_to_stdout(path):
        stream = sys.stdout.buffer if "b" in mode else sys.stdout
        yield stream
        stream.flush()
        return
    if is_stream(path):  # a pipe or a device: written as it is
        with open(path, mode, **({} if "b" in mode else {"newline": ""})) as handle:
            yield handle
        return
    # through a symbolic link, to the file it names: the link stays a link
    target = Path(os.path.realpath(path))
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
