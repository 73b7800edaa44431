"""``dpgm split``: the data steward's holdout, set aside before anything is fitted.

Utility (train on synthetic, test on real) and the privacy sanity checks compare the
synthetic records with records the mechanism never saw: the steward splits the table
first, fits on the training part only and keeps the holdout for ``dpgm evaluate``.

Each record goes to the holdout with probability ``--holdout``, independently, so that a
file of any size is split chunk by chunk in constant memory; the records keep their
order and their text (every cell is copied as written). The split is the steward's own
work on their data, released to no one: it spends no budget, and it prints no count.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

import numpy as np

#: records read at a time
CHUNK_ROWS = 500_000


def _default_output(data: str, part: str) -> str:
    """``patients.csv`` → ``patients-train.csv`` (the input's folder and format)."""
    path = Path(data)
    name = path.name
    for suffix in (".csv.gz", ".csv", ".parquet", ".pq"):
        if name.lower().endswith(suffix):
            return str(path.with_name(f"{name[:-len(suffix)]}-{part}{name[-len(suffix):]}"))
    return str(path.with_name(f"{name}-{part}.csv"))


def _chunks(path: str) -> Iterator:
    """The records of ``path`` in chunks, every CSV cell as the text it is."""
    from dpgm.dataset import read_raw_table, read_table

    if str(path).lower().endswith((".parquet", ".pq")):
        frame = read_raw_table(path)
        for start in range(0, max(len(frame), 1), CHUNK_ROWS):
            yield frame.iloc[start:start + CHUNK_ROWS]
        return
    read_table(path, nrows=0)  # a one-line error for a file that is not a table
    import pandas as pd

    yield from pd.read_csv(path, dtype=str, keep_default_na=False, na_filter=False,
                           chunksize=CHUNK_ROWS)


def _part(path: str, share: float, entropy: int, holdout: bool) -> Iterator:
    """The records of one side of the split: the same draws on every pass (``entropy``)."""
    rng = np.random.default_rng(entropy)
    for chunk in _chunks(path):
        chosen = rng.random(len(chunk)) < share
        yield chunk[chosen if holdout else ~chosen]


def _split(args: argparse.Namespace) -> int:
    from dpgm.cli.common import say
    from dpgm.cli.output import check_format, write_chunks
    from dpgm.errors import ParameterError
    from dpgm.files import check_output

    if not 0.0 < args.holdout < 1.0:
        raise ParameterError(f"--holdout is the holdout's share of the records, in (0, 1); "
                             f"got {args.holdout:g}")
    outputs = {}
    for part, given in (("train", args.train), ("holdout", args.holdout_out)):
        path = given or _default_output(args.data, part)
        check_format(path)
        outputs[part] = check_output(path, force=args.force,
                                     inputs=[args.data, *outputs.values()])
    if not Path(args.data).exists():
        raise ParameterError(f"{args.data}: no such file")
    # one draw per record, repeated on the second pass; a fresh entropy without --seed
    entropy = args.seed if args.seed is not None else np.random.SeedSequence().entropy
    for part, path in outputs.items():
        write_chunks(_part(args.data, args.holdout, entropy, part == "holdout"), path)
    say(f"wrote {outputs['train']} and {outputs['holdout']} (each record to the holdout "
        f"with probability {args.holdout:g}); fit on the first, keep the second for "
        "dpgm evaluate")
    return 0


def add_commands(commands, *, real, seed) -> None:
    """Add ``split`` to the ``dpgm`` parser's subcommands."""
    split = commands.add_parser(
        "split", help="set a holdout aside before fitting (for utility and privacy checks)")
    split.add_argument("data", help="CSV (.csv, .csv.gz) or Parquet file of the records")
    split.add_argument("--holdout", type=real, default=0.2,
                       help="each record's chance of going to the holdout (default: 0.2)")
    split.add_argument("--seed", type=seed, default=None,
                       help="makes the split reproducible (default: a fresh one)")
    split.add_argument("--train", default=None,
                       help="where the training part goes (default: DATA-train.csv)")
    split.add_argument("--holdout-out", default=None,
                       help="where the holdout goes (default: DATA-holdout.csv)")
    split.add_argument("--force", action="store_true",
                       help="overwrite the outputs if they exist (default: refuse)")
    split.set_defaults(run=_split)
