"""Roy Chowdhury et al. (paper 002): Table 1, Table 2 and the Fig. 1 panels, on four networks.

The protocol of the implementation note (``specs/bn-data-dependent-002.md`` §4): for Asia,
Sachs, Child and Alarm, 10,000 records forward-sampled with a fixed seed ([C10]); the
reference is the MLE network on those records ([C9]); ε ∈ {1, 1.5, 2, 2.5, 3}; 10 paired
runs (run k of every method and ε uses the same seed); per network, one fixed set of 10
marginal, 10 conditional and 20 MAP (MPE) queries ([C12]). Methods:

* ``dind`` — D-Ind (ε/n per node) with consistency; ``ours`` — Algorithm 2 (ε^I = 0.1·ε,
  β = 0.1, τ = 1);
* ``dind-pgm``, ``ours-pgm`` — the same noisy tables, estimated jointly by Private-PGM;
* ``ours-error``, ``ours-error-pgm`` — Algorithm 2 with our allocation (the expected CPD
  error per parent configuration minimised, from Stage I's noisy parent counts);
* sensitivity runs of the note's choices: ``ours-joint`` ([C3]: M̃ ∝ (T̃_i)_+),
  ``ours-tau-std`` ([C5]: τ = the Stage-I Laplace std), ``ours-no-consistency`` and
  ``dind-no-consistency``.

Metrics (§5.1, [C13], [C14]): CPD L1 and KL D(P̃‖P) (per node, paper-literal and per
parent configuration), query L1 and KL, MAP accuracy ρ, and μ of Table 2 at ε = 1. Where
a private network gives a conditional query's evidence probability zero (clipped CPD
cells), the answer is undefined: it is taken as uniform and counted (``undefined``).
Then the note's claims R1–R5 are judged from the means (with one-sided paired Wilcoxon
tests for R2). Everything goes to ``experiments/output/bn_fig1_tables.json``, plots to
``experiments/output/bn_fig1_<network>.png``.

    python -m experiments.bn_fig1_tables [--runs 10] [--networks asia sachs child alarm]
"""

from __future__ import annotations

import argparse
import json
import math
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict

import numpy as np

from experiments._common import BN_FOLDER, OUTPUT, print_table, pyplot

NETWORKS = ("asia", "sachs", "child", "alarm")
EPSILONS = (1.0, 1.5, 2.0, 2.5, 3.0)
RECORDS = 10_000
DATA_SEED = 0
QUERY_SEED = 12
RUNS = 10
PGM_ITERS = 300
MAIN = ("dind", "ours", "dind-pgm", "ours-pgm", "ours-error", "ours-error-pgm")
SENSITIVITY = ("ours-joint", "ours-tau-std", "ours-no-consistency", "dind-no-consistency")
SWITCHES = {
    "C1": "add/remove neighbours", "C2": "Poisson subsample", "C3": "conditional (default)",
    "C4": "clip and renormalise", "C5": "tau = 1 (default)", "C6": "normalised Eq. 10",
    "C7": "sets by size, then names", "C8": "bounds once per run from CPD errors",
    "C9": "reference: MLE on the same records", "C10": f"{RECORDS} records, seed {DATA_SEED}",
    "C11": "paired runs, mean and sd", "C12": f"queries from seed {QUERY_SEED}",
    "C13": "CPD error per node and per parent configuration",
    "C14": "KL on (p + 1e-6)/(1 + k 1e-6)",
}
METRICS = ("param_l1", "param_l1_column", "param_kl", "param_kl_column", "marginal_l1",
           "marginal_kl", "conditional_l1", "conditional_kl", "map")


def learner(method: str, network, epsilon: float):
    """The learner of ``method`` for ``network`` at ``epsilon``."""
    from dpgm.mechanisms import DataDependentBN, DInd
    from dpgm.privacy import subsample_epsilon

    options = {"structure": network, "iters": PGM_ITERS}
    if method.endswith("-pgm"):
        options["estimator"] = "pgm"
    if method.endswith("no-consistency"):
        options["consistency"] = False
    if method.startswith("ours-error"):
        options["allocation"] = "error"
    if method == "ours-joint":
        options["joint"] = "joint"
    if method == "ours-tau-std":  # the Stage-I Laplace std, a public function of ε and n
        n = len(network.variables)
        options["floor"] = math.sqrt(2) * 2 * n / subsample_epsilon(0.1 * epsilon, 0.1)
    cls = DInd if method.startswith("dind") else DataDependentBN
    return cls(epsilon, **options)


def make_queries(network, data, seed: int = QUERY_SEED):
    """10 marginal, 10 conditional (X, y) and 20 MAP evidence sets, in state names ([C12])."""
    rng = np.random.default_rng(seed)
    names = list(network.variables)
    frame = data.to_pandas(labels=True)

    def some(count: int, among=names) -> list[str]:
        return [str(v) for v in rng.choice(among, count, replace=False)]

    def observed(variables) -> dict:
        row = frame.iloc[int(rng.integers(len(frame)))]
        return {v: str(row[v]) for v in variables}

    marginal = [(some(int(rng.integers(1, 4))), {}) for _ in range(10)]
    conditional = []
    for _ in range(10):
        given = some(int(rng.integers(1, 4)))
        rest = [v for v in names if v not in given]
        conditional.append((some(int(rng.integers(1, 3)), rest), observed(given)))
    maps = [observed(some(int(rng.integers(1, 4)))) for _ in range(20)]
    return marginal, conditional, maps


def evaluate(private, reference, queries, answers, constants) -> dict:
    """Every metric of one private network against the reference."""
    from dpgm.errors import DataError
    from dpgm.evaluation import bayesian_network as ev

    marginal, conditional, maps = queries
    cpd = ev.cpd_errors(reference, private)
    result = {"param_l1": cpd.l1, "param_l1_column": cpd.l1_column, "param_kl": cpd.kl,
              "param_kl_column": cpd.kl_column}
    bounds = ev.error_bounds(reference, private, constants)
    mus, undefined = [], 0
    for kind, group in (("marginal", marginal), ("conditional", conditional)):
        errors = []
        for (variables, evidence), truth in zip(group, answers[kind]):
            try:
                answer = private.probabilities(variables, evidence)
            except DataError:  # the private network gives the evidence probability zero:
                undefined += 1  # P(X | y) is undefined there; answer uniformly
                answer = np.full(np.shape(truth), 1.0 / np.size(truth))
            error = ev.query_error(answer, truth)
            errors.append(error)
            mus.append(ev.normalised_error(error["l1"], bounds))
        result[f"{kind}_l1"] = float(np.mean([e["l1"] for e in errors]))
        result[f"{kind}_kl"] = float(np.mean([e["kl"] for e in errors]))
    result["map"] = ev.map_accuracy([private.map_query(None, e) for e in maps], answers["map"])
    result["mu"] = float(np.mean(mus))
    result["undefined"] = undefined
    result["bounds"] = list(bounds)
    return result


def run_network(name: str, runs: int, methods: tuple[str, ...]) -> dict:
    """All runs of every method and ε on one network."""
    from dpgm.bn import node_features
    from dpgm.evaluation import bayesian_network as ev
    from dpgm.io import read_bif
    from dpgm.models import BayesianNetwork
    from experiments._bn import sensitivity_by_derivative

    warnings.simplefilter("ignore")  # seeded runs: research, not a release
    network = read_bif(BN_FOLDER / f"{name}.bif")
    data = network.sample(RECORDS, rng=DATA_SEED)
    reference = BayesianNetwork.fit_mle(network, data)
    queries = make_queries(network, data)
    marginal, conditional, maps = queries
    answers = {
        "marginal": [reference.probabilities(v, e) for v, e in marginal],
        "conditional": [reference.probabilities(v, e) for v, e in conditional],
        "map": [reference.map_query(None, e) for e in maps],
    }
    constants = ev.bound_constants(network)
    parents = {v: tuple(network.parents[v]) for v in network.variables}
    features = node_features(parents, network.domain.to_dict())
    # Eq. 8 computed from its definition on the reference CPDs, against the closed form
    delta_check = max(
        abs(sensitivity_by_derivative(reference, v) - features[v].sensitivity)
        for v in network.variables
    )
    index = NETWORKS.index(name) if name in NETWORKS else 9
    results: dict = {m: {str(e): [] for e in EPSILONS} for m in methods}
    allocations: dict = {str(e): [] for e in EPSILONS}
    started = time.time()
    for e_index, epsilon in enumerate(EPSILONS):
        for run in range(runs):
            seed = 10_000 * index + 100 * e_index + run  # paired: the same for every method
            for method in methods:
                fitted = learner(method, network, epsilon)
                private = fitted.fit(data, rng=seed)
                results[method][str(epsilon)].append(
                    evaluate(private, reference, queries, answers, constants))
                if method == "ours":
                    allocations[str(epsilon)].append(fitted.allocation)
    return {
        "network": name,
        "nodes": len(network.variables),
        "constants": asdict(constants),
        "features": {v: {**asdict(f), "weight": f.weight} for v, f in features.items()},
        "delta_check": delta_check,
        "zero_cells": ev.cpd_errors(reference, reference).zero_cells,
        "queries": {"marginal": marginal, "conditional": conditional, "map": maps},
        "results": results,
        "allocations": allocations,
        "seconds": time.time() - started,
    }


def summary(found: dict) -> dict:
    """Mean and sd over runs of each metric, per method and ε."""
    out = {}
    for method, by_eps in found["results"].items():
        out[method] = {}
        for eps, runs in by_eps.items():
            out[method][eps] = {
                k: (float(np.mean([r[k] for r in runs])), float(np.std([r[k] for r in runs])))
                for k in (*METRICS, "mu", "undefined")
            }
    return out


def allocation_summary(found: dict) -> dict:
    """Algorithm 2's Stage-II budget ε*_i per node: mean and sd over runs, per ε."""
    return {
        eps: {v: (float(np.mean([a[v] for a in runs])), float(np.std([a[v] for a in runs])))
              for v in runs[0]}
        for eps, runs in found["allocations"].items() if runs
    }


def verdicts(found: dict[str, dict]) -> dict:
    """The note's R1–R5 from the means (and paired Wilcoxon tests for R2)."""
    from scipy.stats import wilcoxon

    means = {n: summary(f) for n, f in found.items()}
    l1s = ("param_l1_column", "marginal_l1", "conditional_l1")
    every = (*l1s, "param_kl_column", "marginal_kl", "conditional_kl")
    r1 = {n: {k: m["ours"]["1.0"][k][0] <= m["dind"]["3.0"][k][0] for k in l1s}
          for n, m in means.items()}
    r2, wilcoxon_p = {}, {}
    for n, f in found.items():
        r2[n], wilcoxon_p[n] = {}, {}
        for k in every:
            r2[n][k] = all(means[n]["ours"][e][k][0] < means[n]["dind"][e][k][0]
                           for e in means[n]["ours"])
            wilcoxon_p[n][k] = {}
            for e in f["results"]["ours"]:
                ours = [r[k] for r in f["results"]["ours"][e]]
                dind = [r[k] for r in f["results"]["dind"][e]]
                if len(ours) >= 5 and any(a != b for a, b in zip(ours, dind)):
                    wilcoxon_p[n][k][e] = float(wilcoxon(ours, dind, alternative="less").pvalue)
    r3 = {n: {"ours_at_least_dind": all(m["ours"][e]["map"][0] >= m["dind"][e]["map"][0]
                                        for e in m["ours"]),
              "gap_at_1": m["ours"]["1.0"]["map"][0] - m["dind"]["1.0"]["map"][0]}
          for n, m in means.items()}
    r4 = {n: {"param_l1_column": m["ours"]["1.0"]["param_l1_column"][0],
              "marginal_l1": m["ours"]["1.0"]["marginal_l1"][0],
              "conditional_l1": m["ours"]["1.0"]["conditional_l1"][0]}
          for n, m in means.items()}
    r5 = {n: {"ours": m["ours"]["1.0"]["mu"][0], "dind": m["dind"]["1.0"]["mu"][0]}
          for n, m in means.items()}
    return {"R1": r1, "R2": r2, "R2_wilcoxon_p": wilcoxon_p, "R3": r3, "R4": r4, "R5": r5}


def tables(found: dict[str, dict], methods: tuple[str, ...]) -> str:
    """Table 1, Table 2 and the Fig. 1 numbers as Markdown (printed and returned)."""
    means = {n: summary(f) for n, f in found.items()}
    parts = []
    shown = [m for m in methods if m in MAIN]
    print("\nTable 1: MAP accuracy rho (mean over runs)")
    parts.append(print_table(
        ["eps", *[f"{n} {m}" for n in found for m in shown]],
        [[e, *[f"{means[n][m][e]['map'][0]:.2f}" for n in found for m in shown]]
         for e in map(str, EPSILONS)]))
    print("\nTable 2: mu at eps = 1 (20 queries, mean over runs)")
    parts.append(print_table(
        ["method", *found],
        [[m, *[f"{means[n][m]['1.0']['mu'][0]:.2e}" for n in found]] for m in shown]))
    for n in found:
        print(f"\nFig. 1 numbers, {n}: mean (sd) over runs")
        rows = []
        for m in methods:
            for e in map(str, EPSILONS):
                s = means[n][m][e]
                rows.append([m, e, *[f"{s[k][0]:.4f} ({s[k][1]:.4f})" for k in METRICS[:-1]]])
        parts.append(print_table(["method", "eps", *METRICS[:-1]], rows))
    return "\n\n".join(parts)


def plot(found: dict[str, dict], methods: tuple[str, ...]) -> None:
    plt = pyplot()
    if plt is None:
        return
    panels = [("param_l1_column", "parameters, L1 per column"), ("param_kl_column",
              "parameters, KL per column"), ("marginal_l1", "marginal, L1"),
              ("marginal_kl", "marginal, KL"), ("conditional_l1", "conditional, L1"),
              ("conditional_kl", "conditional, KL")]
    for n, f in found.items():
        means = summary(f)
        figure, axes = plt.subplots(2, 3, figsize=(13, 7))
        for ax, (key, title) in zip(axes.T.ravel(), panels):
            for m in methods:
                if m not in MAIN:
                    continue
                y = [means[m][str(e)][key][0] for e in EPSILONS]
                sd = [means[m][str(e)][key][1] for e in EPSILONS]
                ax.errorbar(EPSILONS, y, yerr=sd, marker="o", capsize=2, label=m)
            ax.set_title(title)
            ax.set_xlabel("epsilon")
            ax.set_yscale("log")
        axes[0, 0].legend()
        figure.suptitle(f"{n}: error against the MLE network (mean and sd over runs)")
        figure.tight_layout()
        figure.savefig(OUTPUT / f"bn_fig1_{n}.png", dpi=110)
        plt.close(figure)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--networks", nargs="+", default=list(NETWORKS), choices=NETWORKS)
    parser.add_argument("--methods", nargs="+", default=[*MAIN, *SENSITIVITY],
                        choices=[*MAIN, *SENSITIVITY])
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    if not BN_FOLDER.exists():
        raise SystemExit(f"{BN_FOLDER} is missing (the networks are in ../shared/data/bn)")
    for required in ("dind", "ours"):
        if required not in args.methods:
            raise SystemExit(f"--methods must include {required} (the paper's comparison)")
    methods = tuple(args.methods)
    started = time.time()
    with ProcessPoolExecutor(args.jobs) as pool:  # larger networks first
        futures = {n: pool.submit(run_network, n, args.runs, methods)
                   for n in sorted(args.networks, key=lambda n: -NETWORKS.index(n))}
        found = {n: futures[n].result() for n in args.networks}
    for n, f in found.items():
        print(f"{n}: {f['seconds']:.0f} s; Eq. 8 by derivative vs closed form: "
              f"{f['delta_check']:.1e}")
    text = tables(found, methods)
    judged = verdicts(found)
    print("\nR1-R5:", json.dumps({k: v for k, v in judged.items() if k != "R2_wilcoxon_p"},
                                 indent=1))
    OUTPUT.mkdir(parents=True, exist_ok=True)
    output = {"protocol": {"epsilons": EPSILONS, "runs": args.runs, "records": RECORDS,
                           "data_seed": DATA_SEED, "query_seed": QUERY_SEED,
                           "pgm_iters": PGM_ITERS, "methods": methods, "switches": SWITCHES},
              "networks": found, "summary": {n: summary(f) for n, f in found.items()},
              "allocation": {n: allocation_summary(f) for n, f in found.items()},
              "verdicts": judged}
    (OUTPUT / "bn_fig1_tables.json").write_text(json.dumps(output, indent=1))
    (OUTPUT / "bn_fig1_tables.md").write_text(text + "\n")
    plot(found, methods)
    print(f"\nwrote {OUTPUT / 'bn_fig1_tables.json'} ({time.time() - started:.0f} s)")


if __name__ == "__main__":
    main()
