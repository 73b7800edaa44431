"""Synthetic tables written chunk by chunk: CSV, gzip CSV (``.csv.gz``) and Parquet
(``.parquet``, through pyarrow), whole or not at all.

Chunks arrive one at a time (:meth:`dpgm.models.base.ModelBase.synthetic_chunks`) and are
written as they come, so memory holds one chunk whatever the number of rows. The file is
written to a temporary file beside the target and renamed over it at the end
(:func:`dpgm.files.atomic_write`): an error, a full disk, Ctrl-C or SIGTERM leaves neither
a partial output nor the temporary file. Parquet's column types come from the domain and
the schema (a decoded probe with every code of every attribute), never from a chunk's
values, so every chunk, even one whose column is all missing, takes the same types.
"""

from __future__ import annotations

import gzip
import io
import os
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

from dpgm.cli.signals import stop_if_terminated
from dpgm.dataset import Dataset, every_code
from dpgm.domain import Domain
from dpgm.errors import OutputError, ParameterError
from dpgm.files import atomic_write, writes_to_stdout

#: gzip's level: the command-line tool's default (9, Python's, is several times slower for
#: a few per cent)
GZIP_LEVEL = 6
#: the fewest bytes a CSV field takes: one character and its separator
CSV_FIELD_BYTES = 2


def table_format(out: str | os.PathLike[str]) -> str:
    """``parquet``, ``csv.gz`` or ``csv``: what the output's name asks for (standard
    output is CSV)."""
    name = str(out).lower()
    if writes_to_stdout(out):
        return "csv"
    if name.endswith(".parquet"):
        return "parquet"
    return "csv.gz" if name.endswith(".gz") else "csv"


def check_format(out: str | os.PathLike[str]) -> None:
    """Refuse, before any work, a Parquet output where pyarrow is missing."""
    if table_format(out) == "parquet":
        try:
            import pyarrow  # noqa: F401
            import pyarrow.parquet  # noqa: F401
        except ImportError:
            raise ParameterError(
                "writing Parquet needs pyarrow (pip install 'dpgm[parquet]'); or write a .csv"
            ) from None


def check_disk_space(out: str | os.PathLike[str], rows: int, width: int) -> None:
    """Refuse, before reading the data, ``rows`` records of ``width`` columns as CSV where
    even their smallest possible size (two bytes a field) exceeds the free space of the
    output's file system (a public fact). Compressed outputs have no useful least size:
    a full disk there stops the run with nothing written."""
    if table_format(out) != "csv" or writes_to_stdout(out) or rows <= 0:
        return
    folder = Path(os.path.realpath(out)).parent
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return  # check_output already said whether the folder can be written
    least = rows * max(width, 1) * CSV_FIELD_BYTES
    if least > free:
        raise OutputError(
            f"{rows:,} records of {width} columns need at least {least / 2**30:.3g} GiB as "
            f"CSV, and {folder} has {free / 2**30:.3g} GiB free: ask for fewer --rows, "
            "write .csv.gz or .parquet, or free some space")


def check_spark_output(out: str, *, force: bool = False, inputs=()) -> str:
    """Where ``--engine spark`` may write its folder of part files: any URI Spark writes
    (not checked here: a cluster's storage), or a local path whose folder exists, that is
    none of the inputs, and that exists only with ``force``. Standard output is refused:
    the records never pass through the driver."""
    text = str(out)
    if text == "-" or writes_to_stdout(text):
        raise OutputError("--engine spark writes the synthetic records from the cluster "
                          "into a folder of part files: give --out a path, not standard "
                          "output")
    if "://" in text and not text.startswith("file:"):
        return text
    local = Path(text.removeprefix("file://") if text.startswith("file://") else text)
    if any(source is not None and os.path.abspath(source) == os.path.abspath(local)
           for source in inputs):
        raise OutputError(f"{text} is one of the inputs; write it somewhere else")
    if not local.parent.is_dir():
        raise OutputError(f"the folder of {local} does not exist")
    if local.exists() and not force:
        raise OutputError(f"{local} exists; pass --force to overwrite it")
    return text


def probe(domain: Domain, decode: Callable[[Dataset], object]) -> object:
    """Every code of every attribute, decoded as the chunks are (a table of public facts
    only, from which a writer takes the columns' types)."""
    return decode(every_code(domain))


def write_chunks(chunks: Iterable, out: str | os.PathLike[str], *,
                 text: Callable | None = None, types: object = None,
                 progress: Callable[[int], None] | None = None) -> int:
    """Write DataFrames ``chunks`` as one table at ``out`` (the format by its name:
    :func:`table_format`), whole or not at all; returns the rows written. ``text`` turns
    a chunk into what a CSV file holds (times in their format); ``types`` is a DataFrame
    whose columns' types a Parquet file takes (:func:`probe`); ``progress`` is called
    with the number of chunks written."""
    kind = table_format(out)
    if kind == "parquet":
        return _write_parquet(chunks, out, types, progress)
    written = 0
    with atomic_write(out, "wb" if kind == "csv.gz" else "w") as handle:
        stream = handle
        if kind == "csv.gz":  # no name or time in the header: the same bytes for a seed
            packed = gzip.GzipFile(filename="", fileobj=handle, mode="wb",
                                   compresslevel=GZIP_LEVEL, mtime=0)
            stream = io.TextIOWrapper(packed, encoding="utf-8", newline="")
        for count, frame in enumerate(chunks, start=1):
            frame = frame if text is None else text(frame)
            frame.to_csv(stream, index=False, header=count == 1)
            stop_if_terminated()
            written += len(frame)
            if progress is not None:
                progress(count)
        if kind == "csv.gz":
            stream.flush()
            stream.detach()
            packed.close()  # the gzip trailer, before atomic_write syncs and renames
    return written


def _write_parquet(chunks: Iterable, out, types, progress) -> int:
    """Each chunk a row group of one Parquet file, with the columns' types of ``types``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    written = 0
    with atomic_write(out, "wb") as handle:
        schema = None if types is None else pa.Schema.from_pandas(types, preserve_index=False)
        writer = None
        try:
            for count, frame in enumerate(chunks, start=1):
                table = pa.Table.from_pandas(frame, schema=schema, preserve_index=False)
                if writer is None:
                    schema = table.schema
                    writer = pq.ParquetWriter(handle, schema)
                writer.write_table(table)
                stop_if_terminated()
                written += len(frame)
                if progress is not None:
                    progress(count)
        finally:
            if writer is not None:
                writer.close()
    return written


def chunk_count(rows: int, chunk_rows: int | None, width: int) -> int:
    """How many chunks ``rows`` records make (public: from the rows asked for)."""
    from dpgm.memory import default_chunk_rows

    size = chunk_rows or default_chunk_rows(width)
    return max(-(-rows // size), 1)


def write_synthetic(chunks: Iterable, out: str | os.PathLike[str], domain: Domain,
                    schema=None, *, labels: bool = False, count: int | None = None) -> int:
    """Write synthetic records, chunk by chunk, as :func:`write_chunks` does: DataFrames
    decoded by ``schema``, or Datasets of ``domain`` (as codes, or as ``labels``).
    ``count``, the number of chunks (public: from the rows asked for), shows progress."""
    from dpgm.cli.common import mechanism_progress
    from dpgm.progress import Reporter

    def frame(chunk):
        return chunk.to_pandas(labels=labels) if isinstance(chunk, Dataset) else chunk

    types = None
    if table_format(out) == "parquet":
        types = probe(domain, (lambda d: schema.decode(d, np.random.default_rng(0)))
                      if schema is not None else frame)
    progress = None
    if count is not None and count > 1:
        progress = Reporter(mechanism_progress()).steps(count, "chunks of records written")
    return write_chunks((frame(c) for c in chunks), out, types=types, progress=progress,
                        text=None if schema is None else schema.as_text)
