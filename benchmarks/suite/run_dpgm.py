"""Fit one of dpgm's synthesizers (``MECHANISMS``: AIM, MST, AIM+RP, ResidualPlanner on
all 2-way marginals, AIM+RP with its records estimator; each with its defaults) to a CSV
of raw values with its schema and write a synthetic table of the same size: the dpgm side
of the suite, with the peers' command line
(``benchmarks/peers/_runner.py``) so that every system runs the same way, each in a
fresh process. Prints one JSON line."""

from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "peers"))

from _runner import parser, report  # noqa: E402

MECHANISMS = ("aim", "mst", "aim-rp", "residual-planner", "aim-rp-records")
#: a system that is a registered mechanism with another estimator than its default
ESTIMATORS = {"aim-rp-records": ("aim-rp", "records")}


def main() -> None:
    import pandas as pd

    from dpgm.errors import SeedWarning
    from dpgm.mechanisms import REGISTRY
    from dpgm.schema import Schema

    args = parser(__doc__.splitlines()[0], MECHANISMS).parse_args()
    warnings.simplefilter("ignore", SeedWarning)  # seeded: a benchmark, not a release
    schema = Schema.from_json(json.loads(Path(args.spec).read_text()))
    frame = pd.read_csv(args.data, dtype=str, keep_default_na=False, na_filter=False)
    name, estimator = ESTIMATORS.get(args.mechanism, (args.mechanism, None))
    options = {} if estimator is None else {"estimator": estimator}
    mechanism = REGISTRY[name](args.epsilon, args.delta, **options)
    mechanism.check_synthesizable(schema.domain)  # as dpgm synth: refused before reading
    start = time.perf_counter()
    model = mechanism.fit(frame, schema=schema, rng=args.seed)
    fitted = time.perf_counter()
    synthetic = model.synthetic_data(len(frame), rng=args.seed)
    sampled = time.perf_counter()
    synthetic.to_csv(args.out, index=False)
    from dpgm import __version__

    # the estimator this run took: AIM+RP's "auto" picks one (its route)
    taken = getattr(mechanism, "route", None) or estimator or mechanism.estimator
    report(start, fitted, sampled, f"dpgm {__version__} {type(mechanism).__name__} "
           f"({'Private-PGM' if taken == 'pgm' else taken} estimation, zCDP, "
           f"delta={args.delta:g})")


if __name__ == "__main__":
    main()
