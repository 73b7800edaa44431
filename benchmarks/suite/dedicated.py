"""A release made for one regression alone, as a yardstick for the suite's coefficient
check (the issue's point 4): how often does it keep each key coefficient's sign and half
its size at a given ε? Run by hand::

    python -m benchmarks.suite.dedicated --tables diamonds slid yrbss --epsilon 1

The release: the moment matrix Z'Z of z = [x, y], the table's standard regression
(``tables.MODELS``, OLS outcomes only) on the suite's training split, with Gaussian noise
on its upper triangle; OLS from the noisy moments. Every column is moved into [-1, 1] by
its public range (the schema's bins or labels, never the data): a ``value``, ``square``
or ``score`` column by its midrange and half-range, an ``is`` column from {0, 1} to
{-1, 1}; a group of dummies stays 0/1 (at most one 1 a record). A record's ||z||² is then
at most 1 a term (the intercept, each predictor or dummy group, the outcome), and that is
the L2 sensitivity of the upper triangle under adding or removing a record (its change
zz' has Frobenius norm ||z||²). All of ρ = cdp_rho(ε, δ) goes to it: σ = bound/√(2ρ).
Centring matters: the same release with every column scaled by its largest value and
not centred is several times noisier for the slopes (``--uncentred``; the intercept's
row then carries noise into every coefficient).

Prints, per table and seed, each key coefficient's share of noise draws that keep less
than half of it (a flipped sign included) and the median ratio noisy / real.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np

from benchmarks.suite import metrics, tables
from benchmarks.suite.__main__ import DELTA, split
from dpgm.privacy.accounting import cdp_rho
from dpgm.privacy.quiet import on_records
from dpgm.schema import Schema


@dataclass(frozen=True)
class Scaling:
    """Where each design column (intercept first) and the outcome are moved by public
    facts: z = (value - centre) / half; ``bound``: the largest ||z||² of a record."""

    centres: np.ndarray
    halves: np.ndarray
    bound: float


def scaling(schema, model, centred: bool = True) -> Scaling:
    """The public scaling of ``model``'s design over ``schema`` (see the module
    docstring); ``centred=False`` divides by each column's largest absolute value."""
    centres, halves, terms = [0.0], [1.0], 1  # the intercept stays 1
    for term in model.terms:
        column, kind = schema.columns[term[0]], term[1]
        if kind == "dummies":
            count = len(metrics.dummy_codes(column))
            centres += [0.0] * count
            halves += [1.0] * count
            terms += 1
            continue
        if kind == "is":
            values = np.array([0.0, 1.0])
        elif kind == "score":
            values = metrics._scores(column)
        else:  # value, square
            values = metrics._values(column) ** (2 if kind == "square" else 1)
        centre, half = _range(values, centred)
        centres.append(centre)
        halves.append(half)
        terms += 1
    outcome = model.outcome if isinstance(model.outcome, tuple) else ("value", model.outcome)
    if outcome[0] not in ("value", "log"):
        raise ValueError(f"the dedicated release is OLS; {outcome} is not a numeric outcome")
    values = metrics._values(schema.columns[outcome[1]])
    if outcome[0] == "log":
        values = np.log(values[values > 0])
    centre, half = _range(values, centred)
    return Scaling(np.array([*centres, centre]), np.array([*halves, half]), float(terms + 1))


def _range(values: np.ndarray, centred: bool) -> tuple[float, float]:
    values = values[np.isfinite(values)]
    low, high = float(values.min()), float(values.max())
    if centred:
        return (low + high) / 2, max((high - low) / 2, 1e-12)
    return 0.0, max(abs(low), abs(high), 1e-12)


def noisy_coefficients(z: np.ndarray, sigma: float, draws: int,
                       rng: np.random.Generator) -> np.ndarray:
    """OLS coefficients (on z's scale) from ``draws`` noisy copies of Z'Z, one row each:
    the last column of z is the outcome, the others the design."""
    moments = z.T @ z
    size = len(moments)
    found = np.full((draws, size - 1), np.nan)
    for draw in range(draws):
        noise = np.triu(rng.normal(0.0, sigma, (size, size)))
        noisy = moments + noise + np.triu(noise, 1).T
        try:
            found[draw] = np.linalg.solve(noisy[:-1, :-1], noisy[:-1, -1])
        except np.linalg.LinAlgError:
            pass  # a singular draw keeps NaN: it keeps no coefficient
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ols = [name for name, model in tables.MODELS.items()
           if not isinstance(model.outcome, tuple) or model.outcome[0] == "log"]
    parser.add_argument("--tables", nargs="+", default=["diamonds", "slid", "yrbss"],
                        choices=ols, metavar="TABLE", help=f"one of {', '.join(ols)}")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--draws", type=int, default=400)
    parser.add_argument("--uncentred", action="store_true",
                        help="scale each column by its largest value, not centred")
    args = parser.parse_args(argv)
    if args.epsilon <= 0 or args.draws < 1:
        parser.error("--epsilon must be positive and --draws at least 1")
    rho = cdp_rho(args.epsilon, DELTA)
    print(f"ε = {args.epsilon:g}, δ = {DELTA:g}: ρ = {rho:.4g}; {args.draws} draws a seed"
          + (" (uncentred)" if args.uncentred else ""))
    for name in args.tables:
        table = tables.load(name)
        if table is None:
            print(f"{name}: its source is absent (../shared): skipped")
            continue
        schema, model = Schema.from_json(table.schema), table.model
        scale = scaling(schema, model, centred=not args.uncentred)
        sigma = scale.bound / np.sqrt(2 * rho)
        for seed in args.seeds:
            train, _ = split(table.frame, seed)
            with on_records():  # the real records: nothing of them is printed but ratios
                x, y, names = metrics.design(schema.encode(train.astype(str)), schema, model)
                z = (np.column_stack([x, y]) - scale.centres) / scale.halves
                real = metrics.fit(x, y, logistic=False)
                noisy = noisy_coefficients(z, sigma, args.draws,
                                           np.random.default_rng(1000 + seed))
            noisy = noisy * scale.halves[-1] / scale.halves[:-1]  # slopes back to x's scale
            parts = []
            for key in model.key:
                ratio = noisy[:, names.index(key)] / real[names.index(key)]
                missed = np.mean(~(ratio >= metrics.KEPT_RATIO))
                parts.append(f"{key}: misses half in {missed:.0%} "
                             f"(median ratio {np.nanmedian(ratio):.2f})")
            print(f"{name} seed {seed} (||z||² ≤ {scale.bound:g}, σ = {sigma:.3g}): "
                  + "; ".join(parts), flush=True)


if __name__ == "__main__":
    main()
