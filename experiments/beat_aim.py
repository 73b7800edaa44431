"""AIM+RP's variants on the benchmark suite's tables: the ideas of docs/benchmarks.md
("Beating AIM: what was tried") that are options of the mechanism.

Each run fits one variant to a table's training split (the suite's split and schema),
samples as many records, and prints one JSON line: the mean 1-, 2- and 3-way TV against
the training records and the seconds taken (fit and sample). The variants:

* ``default``: AIM+RP as ``dpgm synth`` runs it;
* ``no-denoise``: Helmert's basis and no shrinkage (``denoise=False``);
* ``one-band``: shrinkage with no column ordered, each residual one group (idea 7);
* ``share=X``: AIM's share of the budget fixed at X (idea 9; 0 is no selection);
* ``one-shot``: no selection whatever the model's size (idea 10);
* ``three-way``: no selection, the plan over every 3-way marginal (idea 12);
* ``OPTION=VALUE``: any other numeric option of AIM+RP set to VALUE, the rest as the
  default (``round_iters=1000``, ``max_model_size=80``).

    python -m experiments.beat_aim --tables slid cps1988 --seeds 0 1 2 \\
        --variants default no-denoise one-band
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

from benchmarks.suite import tables
from benchmarks.suite.__main__ import split
from dpgm.evaluation import mean_tv
from dpgm.mechanisms import AIMResidual
from dpgm.privacy.quiet import on_records
from dpgm.schema import Schema
from dpgm.workload import Workload

DELTA = 1e-9
VARIANTS = ("default", "no-denoise", "one-band", "share=X", "one-shot", "three-way",
            "OPTION=VALUE")
#: AIM+RP's numeric options a variant may set (``OPTION=VALUE``)
OPTIONS = {"round_iters": int, "iters": int, "rounds": int, "max_model_size": float,
           "max_cells": int, "alpha": float, "one_shot_cells": int}


def variant_name(name: str) -> str:
    """``name`` if it is a variant (argparse's check, before any run)."""
    if name in VARIANTS or (name.startswith("share=") and _is_share(name[6:])):
        return name
    try:
        if _option(name) is not None:
            return name
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    raise argparse.ArgumentTypeError(f"unknown variant {name!r}: use one of {VARIANTS}")


def _option(name: str) -> dict | None:
    """The AIM+RP option an ``OPTION=VALUE`` variant sets, as keyword arguments; None
    where ``name`` names no option, ValueError where its value is not a number."""
    key, _, value = name.partition("=")
    if key not in OPTIONS:
        return None
    try:
        return {key: OPTIONS[key](value)}
    except ValueError:
        raise ValueError(f"{key} takes a number, got {value!r}") from None


def _is_share(text: str) -> bool:
    try:
        return 0.0 <= float(text) < 1.0
    except ValueError:
        return False


class _OneBand(AIMResidual):
    """AIM+RP's shrinkage with no column ordered: Helmert's basis, each residual one group."""

    def ordered_attributes(self, domain):
        return {}


def variant(name: str, epsilon: float, schema: Schema):
    """The mechanism and the workload (None: its default) of a variant."""
    if name == "default":
        return AIMResidual(epsilon, DELTA), None
    if name == "no-denoise":
        return AIMResidual(epsilon, DELTA, denoise=False), None
    if name == "one-band":
        return _OneBand(epsilon, DELTA), None
    if name.startswith("share="):
        return AIMResidual(epsilon, DELTA, selection_share=float(name[6:])), None
    if name == "one-shot":
        return AIMResidual(epsilon, DELTA, selection_share=0.0), None
    if name == "three-way":
        return (AIMResidual(epsilon, DELTA, selection_share=0.0),
                Workload.all_marginals(schema.domain, 3).cliques)
    option = _option(name)
    if option is not None:
        return AIMResidual(epsilon, DELTA, **option), None
    raise ValueError(f"unknown variant {name!r}")


def run(table_name: str, table, seed: int, name: str, epsilon: float) -> dict:
    """One variant on one (loaded) table and seed: its scores and time."""
    schema = Schema.from_json(table.schema)
    train, _ = split(table.frame, seed)
    frame = train.astype(str)  # every value as text, as the suite's runners read it
    mechanism, workload = variant(name, epsilon, schema)
    started = time.perf_counter()
    model = mechanism.fit(frame, schema=schema, workload=workload, rng=seed)
    synthetic = model.synthetic_data(len(frame), rng=seed)
    seconds = time.perf_counter() - started
    with on_records():  # a benchmark on the real records: not a release
        real, fake = schema.encode(frame), schema.encode(synthetic.astype(str))
        scores = {f"tv{k}": round(mean_tv(real, fake, k), 4) for k in (1, 2, 3)}
    return {"table": table_name, "seed": seed, "epsilon": epsilon, "variant": name,
            **scores, "s": round(seconds, 1)}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", nargs="+", default=["slid", "cps1988"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--variants", nargs="+", type=variant_name,
                        default=["default", "no-denoise"])
    parser.add_argument("--epsilon", type=float, default=1.0)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")  # the runs' own notes: this is a benchmark, not a release
    for table_name in args.tables:
        table = tables.load(table_name)  # read once for all its seeds and variants
        for seed in args.seeds:
            for name in args.variants:
                print(json.dumps(run(table_name, table, seed, name, args.epsilon)),
                      flush=True)


if __name__ == "__main__":
    main()
