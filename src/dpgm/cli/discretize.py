"""``synth``/``fit --discretize-share S``: learn the schema's missing numeric bounds, bins
and precision inside the run, paid for from its own budget.

The schema names what to learn with nulls (``"bins": null`` and the rest, as
``dpgm schema discover`` reads them). A share S of the run's budget goes to those
questions, split equally (each ε-DP, :func:`dpgm.discover.discretize`); the mechanism gets
the rest. Under zCDP the share is of ρ, and a question at ε costs ε²/2. Everything is
checked before the data are read: the share, the questions, a schema as large as learning
could make it (its sizes bound the learnt one's), and ``--given`` only on columns whose
bounds are public. One ledger holds both parts.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from typing import Any

from dpgm.cli.common import say


@dataclass
class Discretization:
    """What a run learns of its schema, checked before reading: the schema's text, its
    questions, the share of the budget, and the largest schema learning could give."""

    spec: dict[str, Any]
    asked: list[tuple[str, str]]
    share: float
    largest: Any  # a Schema

    @classmethod
    def plan(cls, args: argparse.Namespace) -> Discretization | None:
        """None without ``--discretize-share``; else the checked plan (pre-read)."""
        share = getattr(args, "discretize_share", None)
        if share is None:
            return None
        from dpgm.discover import numeric_questions, stand_in
        from dpgm.errors import ParameterError
        from dpgm.schema.schema import read_spec

        if not 0 < share < 1:
            raise ParameterError(f"--discretize-share must be strictly between 0 and 1 (a "
                                 f"share of the budget), got {share:g}")
        if args.schema is None:
            raise ParameterError("--discretize-share learns numeric bins of a raw table: "
                                 "give --schema")
        if getattr(args, "engine", "numpy") in ("duckdb", "spark"):
            raise ParameterError("--discretize-share reads the table in memory: use --engine "
                                 "numpy, or learn the bins first with dpgm schema discover")
        spec = read_spec(args.schema)  # nulls kept: they name what to learn
        asked = numeric_questions(spec)
        if not asked:
            raise ParameterError(
                "--discretize-share: the schema leaves nothing numeric to learn; write "
                '"bins": null (or null bounds, integer and decimals) where bins are to be '
                "learnt from the data")
        learnt = {name for name, what in asked if what == "range"}
        for pair in getattr(args, "given", None) or ():
            column = pair.partition("=")[0].strip()
            if column in learnt:
                raise ParameterError(f"--given {pair}: {column!r} has no public bounds; give "
                                     "them in the schema to condition on it")
        return cls(spec, asked, share, stand_in(spec, asked))

    def split(self, mechanism) -> tuple[dict[str, float], Any, float]:
        """The mechanism's budget options, the run's budget, and each question's ε."""
        from dpgm.privacy import PrivacyBudget
        from dpgm.privacy.accounting import cdp_epsilon, cdp_rho

        questions = len(self.asked)
        if mechanism.accounting == "zcdp":
            rho = mechanism.rho if mechanism.rho is not None else cdp_rho(
                mechanism.epsilon, mechanism.delta)
            run = PrivacyBudget(rho=rho, delta=mechanism.delta)
            each = math.sqrt(2.0 * self.share * rho / questions)  # ρ = ε²/2 per question
            left = (1.0 - self.share) * rho
            if mechanism.privacy == "zcdp":
                return {"rho": left}, run, each
            # a mechanism zCDP only through (ε, δ): the ε whose ρ is what is left
            return {"epsilon": cdp_epsilon(left, mechanism.delta)}, run, each
        run = (PrivacyBudget.approximate(mechanism.epsilon, mechanism.delta)
               if mechanism.accounting == "approx" else PrivacyBudget(epsilon=mechanism.epsilon))
        return ({"epsilon": (1.0 - self.share) * mechanism.epsilon}, run,
                self.share * mechanism.epsilon / questions)

    def learn(self, frame, budget, epsilon: float, seed):
        """The schema, learnt from the raw ``frame`` (spends); a seed is offset so that
        the mechanism's noise does not repeat the discretisation's."""
        from dpgm.discover import discretize

        rng = None if seed is None else seed + 1_000_003
        schema = discretize(frame, self.spec, budget, epsilon, rng=rng)
        for name in dict.fromkeys(name for name, what in self.asked if what == "edges"):
            say_bins(name, schema.columns[name])
        return schema


def say_bins(name: str, column) -> None:
    """Say how many bins were learnt for ``column`` (a count: paid for)."""
    say(f"{name}: {len(column.coarse_edges) - 1} bin(s) learnt from the data (PrivTree)"
        f"{f', each cut in {column.refine}' if column.refine > 1 else ''}")
