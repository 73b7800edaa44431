"""The ``dpgm`` command line. Each command lives in its own module and adds its own
sub-commands: ``synth`` and ``fit`` (:mod:`dpgm.cli.synth`), ``split``
(:mod:`dpgm.cli.split`), ``model``
(:mod:`dpgm.cli.model`), ``evaluate`` (:mod:`dpgm.cli.evaluate`), ``schema``
(:mod:`dpgm.cli.schema`), ``bn`` (:mod:`dpgm.cli.bn`) and ``mrf`` (:mod:`dpgm.cli.mrf`);
what they share is in :mod:`dpgm.cli.common`.

Every run checks what it can before it reads the data (options, output path, domain,
workload, memory), so a run that fails for a reason knowable in advance spends nothing.
Errors are one line (``dpgm: error: ...``), warnings too; progress lines carry only
public facts and released values, never the exact number of records or timings.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Sequence

from dpgm.cli.common import (  # noqa: F401 (SEEDED_WARNING, sampling_seed: the package's API)
    FLAGS,
    SEEDED_WARNING,
    Parser,
    count,
    memory_size,
    positive_count,
    real,
    sampling_seed,
    seed,
    show_warning,
)
from dpgm.cli.signals import Terminated, sigterm_unwinds

#: what ``dpgm --help`` says first
DESCRIPTION = ("Differentially private synthetic data and graphical models: fit a model of a "
               "table under a privacy budget, then sample it, query it and evaluate it.")


def build_parser() -> argparse.ArgumentParser:
    """The ``dpgm`` parser: every command's module adds its sub-commands."""
    from dpgm._version import __version__
    from dpgm.cli import bn, evaluate, model, mrf, schema, split, synth
    from dpgm.privacy.policy import DEFAULT_DELTA

    parser = Parser(prog="dpgm", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"dpgm {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    synth.add_commands(commands)
    split.add_commands(commands, real=real, seed=seed)
    evaluate.add_commands(commands)
    schema.add_commands(commands, delta_default=DEFAULT_DELTA)
    bn.add_commands(commands, real=real, seed=seed, count=count, positive_count=positive_count,
                    memory_size=memory_size)
    mrf.add_commands(commands, real=real, seed=seed, positive_count=positive_count,
                     delta_default=DEFAULT_DELTA)
    model.add_commands(commands, seed=seed, positive_count=positive_count,
                       memory_size=memory_size)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dpgm`` command; returns the exit status."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as done:  # --help, --version, or a usage error (already printed)
        return int(done.code or 0)
    with sigterm_unwinds():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    from dpgm.errors import DpgmError, SeedWarning, command_line_spelling

    with warnings.catch_warnings(), command_line_spelling(FLAGS):
        warnings.simplefilter("ignore", SeedWarning)  # the command prints its own note
        warnings.showwarning = show_warning
        try:
            return args.run(args)
        except BrokenPipeError:
            # the reader of our output stopped early (| head): not an error to report;
            # stdout goes to devnull so that flushing it at exit does not fail again
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            return 141  # as a process the pipe's signal ended
        except (DpgmError, OSError) as error:
            print(f"dpgm: error: {_one_line(error)}", file=sys.stderr)
            return 2
        except MemoryError:
            print(
                "dpgm: error: ran out of memory; lower --max-memory to have dpgm refuse "
                "such work before it starts, or use a machine with more memory",
                file=sys.stderr,
            )
            return 2
        except KeyboardInterrupt as interrupt:
            print("dpgm: interrupted; no output was written", file=sys.stderr)
            return 143 if isinstance(interrupt, Terminated) else 130  # 128 + the signal
        except Exception as error:  # a bug: say so in one line, keep the traceback on demand
            if os.environ.get("DPGM_DEBUG"):
                raise
            print(
                f"dpgm: internal error: {type(error).__name__}: {_one_line(error)} "
                "(set DPGM_DEBUG=1 to see the traceback, and please report it)",
                file=sys.stderr,
            )
            return 3


def _one_line(error: BaseException) -> str:
    text = str(error) if not isinstance(error, OSError) or not error.strerror else (
        f"{error.filename}: {error.strerror}" if error.filename else error.strerror
    )
    return " ".join(text.split())


if __name__ == "__main__":
    sys.exit(main())

