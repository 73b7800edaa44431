"""The suite's figure: one metric against ε, a panel per table, a line per system (mean ±
standard error over seeds), drawn from the suite's logs (run by hand)::

    python -m benchmarks.suite.plot RUNS/*.jsonl --out docs/figures/suite-tv3.png

A point is hollow where fewer seeds finished than the most any system finished on that
table. Prints the figure's numbers as a markdown table (mean ± standard error, and how
many seeds finished of those run) and every run that made no table with its reason, so
that what is missing from a panel is said, not hidden; then how many runs each system has
on each table. Reads the logs only (no data, no system run).

``--metric coef_kept``: the share of seeds whose synthetic table keeps every key
coefficient of the table's standard regression with its sign and at least half its size
(the issue's point 4); its table counts them ("3 of 5").
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

from benchmarks.suite.metrics import KEPT_RATIO
from benchmarks.suite.summary import mean_and_error, ran_out_of_budget, read_runs

#: what a person reads for each system's name (another name is shown as it is)
SYSTEM_LABELS = {
    "dpgm-aim-rp": "dpgm default (AIM+RP)",
    "dpgm-aim": "dpgm AIM",
    "dpgm-mst": "dpgm MST",
    "dpgm-residual-planner": "dpgm ResidualPlanner",
    "dpgm-aim-rp-records": "dpgm records",
    "mbi-aim": "reference AIM (mbi)",
    "mbi-mst": "reference MST (mbi)",
    "dpmm-aim": "dpmm AIM",
    "dpmm-mst": "dpmm MST",
    "dpmm-privbayes": "dpmm PrivBayes",
    "smartnoise-aim": "smartnoise AIM",
    "smartnoise-mst": "smartnoise MST",
    "privsyn-privsyn": "PrivSyn",
}
METRIC_LABELS = {"tv1": "mean 1-way TV", "tv2": "mean 2-way TV", "tv3": "mean 3-way TV",
                 "workload": "workload error (64 3-way marginals)",
                 "gb_accuracy": "gradient-boosting accuracy on the holdout",
                 "lr_accuracy": "logistic-regression accuracy on the holdout",
                 "coef_ratio_min": "smallest key-coefficient ratio",
                 "coef_kept": "coefficients kept (share of seeds)",
                 "total_s": "seconds (fit and sample)", "peak_rss_mib": "peak memory (MiB)"}


def _order(system: str) -> tuple:
    """dpgm's systems first, then the peers, as SYSTEM_LABELS lists them; others last."""
    known = list(SYSTEM_LABELS)
    return (known.index(system) if system in known else len(known), system)


#: each known system's colour, the same in every figure: a tab10 colour, then tab20's
#: lighter ones (the default blue, the reference AIM red)
COLOURS = {"dpgm-aim-rp": ("tab10", 0), "dpgm-aim": ("tab10", 9), "dpgm-mst": ("tab10", 8),
           "dpgm-residual-planner": ("tab10", 7), "dpgm-aim-rp-records": ("tab10", 6),
           "mbi-aim": ("tab10", 3), "mbi-mst": ("tab10", 5), "dpmm-aim": ("tab10", 1),
           "dpmm-mst": ("tab10", 2), "dpmm-privbayes": ("tab10", 4),
           "smartnoise-aim": ("tab20", 3), "smartnoise-mst": ("tab20", 5),
           "privsyn-privsyn": ("tab20", 9)}


def _colour(system: str, plt):
    """A known system's own colour; another's from the lighter ones by its name."""
    palette, index = COLOURS.get(system, ("tab20", 11 + 2 * (sum(map(ord, system)) % 4)))
    return plt.get_cmap(palette)(index)


def curves(runs: list[dict], metric: str) -> dict[str, dict[str, list[tuple]]]:
    """Per table and system: (ε, mean, standard error, seeds finished) at each ε where at
    least one seed finished with the metric, in increasing ε."""
    values: dict[tuple, list[float]] = defaultdict(list)
    for run in runs:
        if run.get("status") == "ok" and metric in run:
            values[(run["table"], run["system"], float(run["epsilon"]))].append(run[metric])
    found: dict[str, dict[str, list[tuple]]] = defaultdict(lambda: defaultdict(list))
    for (table, system, epsilon), seen in sorted(values.items()):
        found[table][system].append((epsilon, *mean_and_error(seen), len(seen)))
    return found


def with_coefficients_kept(runs: list[dict]) -> list[dict]:
    """The runs, each scored run with ``coef_kept``: 1 where every key coefficient keeps
    its sign and at least half its size (the issue's point 4: a smallest ratio synthetic
    / real of 0.5 or more), else 0 (a failed fit, NaN, counts as lost)."""
    return [run | {"coef_kept": float(run["coef_ratio_min"] >= KEPT_RATIO)}
            if "coef_ratio_min" in run else run for run in runs]


def unfinished(runs: list[dict]) -> list[str]:
    """A line for each run that made no synthetic table: where, and why."""
    return [f"{r['table']} seed {r['seed']} ε={float(r['epsilon']):g} {r['system']}: "
            f"{r.get('status', 'no status')}" for r in runs if r.get("status") != "ok"]


def markdown(runs: list[dict], metric: str, found: dict[str, dict[str, list[tuple]]]) -> str:
    """The figure's numbers as a table: a row per table and ε, a column per system, each
    cell the mean ± standard error over the seeds that finished, with how many finished
    where some did not, or why none did."""
    systems = sorted({r["system"] for r in runs}, key=_order)
    tried: dict[tuple, list[dict]] = defaultdict(list)
    for run in runs:
        tried[(run["table"], float(run["epsilon"]), run["system"])].append(run)
    lines = ["| table | ε | " + " | ".join(SYSTEM_LABELS.get(s, s) for s in systems) + " |",
             "|---|---|" + "---|" * len(systems)]
    for table in found:
        points = {(system, p[0]): p for system, ps in found[table].items() for p in ps}
        for epsilon in sorted({e for (t, e, _) in tried if t == table}):
            cells = []
            for system in systems:
                runs_here = tried.get((table, epsilon, system), [])
                if (system, epsilon) in points and metric == "coef_kept":
                    _, share, _, n = points[(system, epsilon)]
                    cells.append(f"{round(share * n)} of {n}")
                elif (system, epsilon) in points:
                    _, mean, error, n = points[(system, epsilon)]
                    cell = (f"{_number(mean, metric)} ± {_number(error, metric, like=mean)}"
                            if n > 1 else _number(mean, metric))
                    cells.append(cell + (f" ({n} of {len(runs_here)})"
                                         if n < len(runs_here) else f" ({n})"))
                elif runs_here:
                    cells.append(runs_here[0].get("status", "no status"))
                else:
                    cells.append("—")
            lines.append(f"| {table} | {epsilon:g} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def coverage(runs: list[dict]) -> str:
    """What the logs hold, as a table: a row per system, a column per table, each cell the
    runs that finished (one a seed and ε), with those out of their budget and those that
    failed counted apart; "—" where none was run."""
    systems = sorted({r["system"] for r in runs}, key=_order)
    tables = list(dict.fromkeys(r["table"] for r in runs))
    counts: dict[tuple, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for run in runs:
        status = run.get("status", "no status")
        kind = ("finished" if status == "ok" else
                "out of budget" if ran_out_of_budget(status) else "failed")
        counts[(run["system"], run["table"])][kind] += 1
    lines = ["| system | " + " | ".join(tables) + " |", "|---|" + "---|" * len(tables)]
    for system in systems:
        cells = []
        for table in tables:
            seen = counts.get((system, table))
            if not seen:
                cells.append("—")
                continue
            others = [f"{seen[k]} {k}" for k in ("out of budget", "failed") if seen[k]]
            cells.append(f"{seen['finished']}" + (f" (+{', '.join(others)})" if others else ""))
        lines.append(f"| {SYSTEM_LABELS.get(system, system)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _number(value: float, metric: str, like: float | None = None) -> str:
    """A figure as the table shows it: a score with four decimals; seconds and MiB
    whole and grouped (one decimal under 10); ``like``: the figure whose format it takes
    (a mean's, for its standard error)."""
    if not metric.endswith(("_s", "_mib")):
        return f"{value:.4f}"
    return f"{value:,.1f}" if abs(value if like is None else like) < 10.0 else f"{value:,.0f}"


def draw(found: dict[str, dict[str, list[tuple]]], metric: str, out: Path) -> None:
    """The figure: a panel per table, ε on a log axis."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tables = list(found)
    columns = min(4, len(tables))
    rows = -(-len(tables) // columns)
    figure, axes = plt.subplots(rows, columns, figsize=(4 * columns, 3.2 * rows),
                                squeeze=False)
    systems = sorted({s for per_system in found.values() for s in per_system}, key=_order)
    colours = {s: _colour(s, plt) for s in systems}
    handles = {}  # each system's first line, for the one legend
    for axis, table in zip(axes.flat, tables, strict=False):
        most = max(n for points in found[table].values() for *_, n in points)
        for system, points in found[table].items():
            epsilons, means, errors, seeds = zip(*points, strict=True)
            colour = colours[system]
            handles.setdefault(system, axis.errorbar(epsilons, means, yerr=errors,
                                                     color=colour, capsize=2, linewidth=1))
            for epsilon, mean, n in zip(epsilons, means, seeds, strict=True):
                axis.plot(epsilon, mean, "o", markersize=4, color=colour,
                          markerfacecolor=colour if n == most else "white")
        axis.set_xscale("log")
        epsilons = sorted({p[0] for points in found[table].values() for p in points})
        axis.set_xticks(epsilons, [f"{e:g}" for e in epsilons])
        axis.minorticks_off()
        axis.set_title(table)
        axis.set_xlabel("ε")
        axis.set_ylabel(METRIC_LABELS.get(metric, metric))
    for axis in list(axes.flat)[len(tables):]:
        axis.axis("off")
    figure.legend([handles[s] for s in systems], [SYSTEM_LABELS.get(s, s) for s in systems],
                  loc="lower center", ncol=min(4, len(handles)), frameon=False)
    figure.tight_layout(rect=(0, 0.04 * (1 + (len(handles) - 1) // 4), 1, 1))
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=110)
    plt.close(figure)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logs", nargs="+", type=Path,
                        help="the suite's --out files (a cell in several: the last given)")
    parser.add_argument("--out", type=Path, required=True, help="the figure (.png, .svg)")
    parser.add_argument("--metric", default="tv3", choices=sorted(METRIC_LABELS))
    parser.add_argument("--systems", nargs="+", default=None, help="default: every one")
    parser.add_argument("--tables", nargs="+", default=None, help="default: every one")
    args = parser.parse_args(argv)
    missing = [str(log) for log in args.logs if not log.is_file()]
    if missing:
        parser.error(f"no such log: {', '.join(missing)}")
    try:
        runs = read_runs(args.logs)
    except ValueError as error:
        parser.error(str(error))
    runs = [r for r in runs if (args.systems is None or r["system"] in args.systems)
            and (args.tables is None or r["table"] in args.tables)]
    if args.metric == "coef_kept":
        runs = with_coefficients_kept(runs)
    found = curves(runs, args.metric)
    if not found:
        parser.error(f"no finished run with {args.metric} among the chosen ones")
    if args.tables:  # the panels in the order asked for
        found = {t: found[t] for t in args.tables if t in found}
    draw(found, args.metric, args.out)
    print(markdown(runs, args.metric, found))
    for line in unfinished(runs):
        print(line)
    print("\nRuns per system and table (finished; out of budget and failed apart):\n")
    print(coverage(runs))
    print(f"{args.out}: {len(found)} tables, {sum(len(s) for s in found.values())} curves, "
          f"{sum(r.get('status') == 'ok' for r in runs)} runs")


if __name__ == "__main__":
    main()
