"""``dpgm schema draft|discover``: a public schema from the header alone, or its missing
labels and bounds learnt privately."""

from __future__ import annotations

import argparse

from dpgm.cli.common import prepare_outputs, real, say, seed

DRAFT_NOTE = (
    "wrote a draft schema to {out} from the column names only (no value was read): fill in "
    "every null from public knowledge (kind, labels, bounds), or learn the missing labels "
    "and bounds privately with: dpgm schema discover {data} --schema {out} --epsilon E --out ..."
)


def _schema_draft(args: argparse.Namespace) -> int:
    import json

    from dpgm.files import atomic_write, check_output
    from dpgm.schema.draft import draft

    out = check_output(args.out, force=args.force, inputs=[args.data])
    spec = draft(args.data)
    with atomic_write(out) as handle:
        json.dump(spec, handle, indent=2)
        handle.write("\n")
    say(DRAFT_NOTE.format(out=out, data=args.data))
    return 0


def _schema_discover(args: argparse.Namespace) -> int:
    from dpgm.cli.discretize import say_bins
    from dpgm.dataset import read_raw_table
    from dpgm.discover import discover, questions
    from dpgm.privacy.discovery import MOST_DECIMALS
    from dpgm.privacy.policy import check_delta, check_epsilon
    from dpgm.schema.schema import read_spec

    check_epsilon(args.epsilon)
    check_delta(args.delta)
    # --out may be the draft itself (with --force): the draft is read whole first, and the
    # schema replaces it only once written completely (atomically)
    out = prepare_outputs(args, (args.data,), ("out",))["out"]
    spec = read_spec(args.schema)  # the draft, read whole before anything is written
    asked = questions(spec)  # a draft that cannot be completed fails here, unread
    if not asked:
        say(f"{args.schema} needs nothing learnt: no data read, nothing spent")
    frame = read_raw_table(args.data) if asked else None
    schema, budget = discover(frame, spec, args.epsilon, args.delta, rng=args.seed)
    schema.save(out)
    say(f"wrote the schema to {out}")
    for name, what in asked:
        column = schema.columns[name]
        if what == "labels" and getattr(column, "other", False):
            say(f"{name}: {len(column.given)} label(s) released; values too rare to be "
                f"released are coded {column.other!r}")
        elif what == "edges":
            say_bins(name, column)
        elif what == "precision":
            written = ("whole numbers" if column.integer else
                       f"{column.decimals} decimal(s)" if column.decimals is not None else
                       f"more than {MOST_DECIMALS} decimals: not rounded")
            say(f"{name}: values written as {written}")
    for entry in budget.ledger:
        print(f"spent on {entry.label}: epsilon={entry.epsilon:.6g} delta={entry.delta:.6g}")
    epsilon, delta = budget.spent_epsilon_delta()
    print(f"privacy spent: epsilon={epsilon:.6g} delta={delta:.6g} (basic composition)")
    return 0




def add_commands(commands, *, delta_default: float) -> None:
    """Add ``schema draft|discover`` to the ``dpgm`` parser's subcommands."""
    schema = commands.add_parser("schema", help="write a public schema: a draft, or discover")
    schema_commands = schema.add_subparsers(dest="schema_command", required=True)
    draft = schema_commands.add_parser(
        "draft", help="a schema skeleton from the column names alone (reads no value)"
    )
    draft.add_argument("data", help="CSV of the raw table (only its header is read)")
    draft.add_argument("--out", required=True, help="where to write the draft JSON")
    draft.add_argument(
        "--force", action="store_true", help="overwrite --out if it exists (default: refuse)"
    )
    draft.set_defaults(run=_schema_draft)
    discover = schema_commands.add_parser(
        "discover", help="learn a draft's missing labels and bounds privately (spends budget)"
    )
    discover.add_argument("data", help="CSV of the raw table")
    discover.add_argument("--schema", required=True, help="the draft, kinds filled in")
    discover.add_argument("--epsilon", type=real, required=True, help="epsilon to spend")
    discover.add_argument(
        "--delta", type=real, default=None, help=f"delta to spend (default {delta_default:g})"
    )
    discover.add_argument(
        "--seed", type=seed, default=None, help="for research only (default: none)"
    )
    discover.add_argument("--out", required=True, help="where to write the schema JSON")
    discover.add_argument(
        "--force", action="store_true", help="overwrite --out if it exists (default: refuse)"
    )
    discover.set_defaults(run=_schema_discover)

