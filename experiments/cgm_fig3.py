"""Bernstein et al. (paper 000), Fig. 3: edge marginals (a) and the wifi stand-in (b).

The reduced protocol R4–R5 of the implementation note (``specs/cgm-000.md`` §5.2):

* (a) one connected Erdős–Rényi graph G(10, 0.3) with K = 20 values (Fig. 1(b)'s model),
  N = 10⁴, ε = 0.1, 2 noise draws: every cell of every edge marginal, true against
  learned, for CGM, naive MLE (λ = 1, dpgm's a-priori default, and the best λ of
  {1, 10, 100, 1000} in hindsight — NOT private) and the non-private MLE; mean absolute
  error per cell, and the scatter plot.
* (b) the wifi stand-in (:mod:`dpgm.datasets.wifi`): 20 access points and "not
  connected", one individual per simulated day (24 hourly records of 6 ten-minute slots),
  75 % of the individuals for training, 25 % held out. The 5 edge tables are released
  per individual (weights 1/κ per table, null–null transitions left out; Laplace 5/ε:
  :func:`dpgm.privacy.measure_per_individual`); the model is the paper's time-homogeneous
  chain (one ψ(x_t, x_{t+1}) and φ(x_1): :func:`dpgm.cgm.tables.shared_table_tying`),
  fitted by CGM-EM (tied M-step), naive MLE (projected; λ = 1 and the best of {1, 10, 100}
  on a validation set of other simulated days) and PSGD (per-individual lots and
  clipping, δ = 1/(training individuals), a 2 × 2 × 2 grid chosen on the validation
  set), with the non-private MLE (all training records) and the random estimator.
  N here is the number of training individuals' tables' mass, N̂ = mean table sum
  (free post-processing). Holdout log-likelihood per record against ε ∈ {0.01, 0.1, 0.5,
  1}, for 5,000 and 20,000 simulated individuals, 2 noise draws; on all held-out
  records and on those not entirely "not connected" (the note's two variants).
  Beyond the paper: the same learners on a release that keeps the null–null
  transitions (every record of a day weighs 1/24 in every table: the same sensitivity,
  1 per table per individual), since the paper's normalisation leaves the most
  frequent transition out of every table and so out of the model.

Everything to ``experiments/output/cgm_fig3.json``, the plot to ``cgm_fig3.png``.

    python -m experiments.cgm_fig3 [--jobs 2] [--quick]
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
import warnings
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from experiments._common import OUTPUT, call, finish, print_table, pyplot
from experiments.cgm_fig1 import er_truth, noisy_tables
from experiments.cgm_fig2 import timed

# -- (a) ------------------------------------------------------------------------------
N_A, EPSILON_A, NOISES_A = 10_000, 0.1, 2
LAMBDAS_A = (1.0, 10.0, 100.0, 1000.0)

# -- (b) ------------------------------------------------------------------------------
EPSILONS_B = (0.01, 0.1, 0.5, 1.0)
INDIVIDUALS_B = (5_000, 20_000)
NOISES_B = 2
NORMALISATIONS = ("paper", "every-record")  # null-null left out (1/kappa), or kept (1/24)
LAMBDAS_B = (1.0, 10.0, 100.0)
PSGD_GRID = list(itertools.product((0.01, 0.05), (1.0, 5.0), (1.0, 10.0)))
PSGD_CLIP = 5.0
VALIDATION_DAYS = 2_000
EM_CAP = 500


def edge_marginal_trial(noise: int) -> dict:
    """(a): one noise draw, every method's edge marginals (probabilities, flat)."""
    from dpgm.cgm import cgm_em, naive_mle, projected_targets
    from dpgm.evaluation.baselines import nonprivate_mle

    edges, truth = er_truth()
    data = truth.sample(N_A, rng=np.random.default_rng([3, N_A]))
    noisy = noisy_tables(data, edges, EPSILON_A, np.random.default_rng([noise, 5]))

    def flat(model) -> np.ndarray:
        return np.concatenate([(model.marginal(e) / model.total).ravel() for e in edges])

    out = {"noise": noise, "truth": flat(truth).tolist()}
    (model, trace), out["seconds_cgm"] = timed(cgm_em, truth.domain, noisy, float(N_A),
                                               len(edges) / EPSILON_A, max_iters=EM_CAP)
    out["cgm"], out["cgm_iterations"] = flat(model).tolist(), len(trace.residuals)
    targets = projected_targets(noisy, float(N_A))
    for lam in LAMBDAS_A:
        out[f"naive_{lam:g}"] = flat(naive_mle(truth.domain, targets, float(N_A),
                                               penalty=lam)).tolist()
    if noise == 0:
        out["nonprivate"] = flat(nonprivate_mle(data, edges)).tolist()
    return out


# -- (b) ------------------------------------------------------------------------------
def wifi_world(individuals: int):
    """Training records and owners, held-out and validation records, the tying, edges."""
    from dpgm.cgm.tables import shared_table_tying
    from dpgm.dataset import Dataset
    from dpgm.datasets.wifi import WifiChain, chain_edges, hourly_records

    chain = WifiChain.draw(rng=0)
    days = chain.simulate_days(individuals + VALIDATION_DAYS, rng=np.random.default_rng(
        [1, individuals]))
    records, owners = hourly_records(days)
    domain = records.domain
    order = np.random.default_rng([2, individuals]).permutation(individuals)
    train_days = np.zeros(individuals + VALIDATION_DAYS, dtype=bool)
    train_days[order[: 3 * individuals // 4]] = True
    test_days = np.zeros_like(train_days)
    test_days[order[3 * individuals // 4:]] = True
    pick = lambda chosen: Dataset(records.records[chosen[owners]], domain)  # noqa: E731
    validation = np.zeros_like(train_days)
    validation[individuals:] = True
    edges = [domain.canonical(e) for e in chain_edges()]
    return {
        "domain": domain, "edges": edges,
        "train": pick(train_days), "owners": owners[train_days[owners]],
        "test": pick(test_days), "validation": pick(validation),
        "tying": shared_table_tying(domain, edges, node="slot0"),
    }


def holdout(model, data) -> dict:
    """Mean log-likelihood per record: all records, and those not entirely null."""
    from dpgm.dataset import Dataset
    from dpgm.datasets.wifi import NULL

    active = (data.records != NULL).any(axis=1)
    some = Dataset(data.records[active], data.domain)
    return {"all": model.log_likelihood(data) / len(data),
            "active": model.log_likelihood(some) / len(some)}


def wifi_release(world: dict, epsilon: float, noise: int, normalisation: str = "paper"):
    from dpgm.datasets.wifi import NULL
    from dpgm.privacy import PrivacyBudget, measure_per_individual

    measured = measure_per_individual(
        world["train"], world["owners"], world["edges"], epsilon=epsilon,
        budget=PrivacyBudget(epsilon=epsilon), rng=np.random.default_rng([noise, 17]),
        ignore={a: NULL for a in world["domain"].attrs} if normalisation == "paper" else None)
    domain = world["domain"]
    noisy = {m.clique: m.values.reshape(domain.project(m.clique).shape) for m in measured}
    total = max(float(np.mean([t.sum() for t in noisy.values()])), 1.0)  # N̂: free
    return noisy, total


def wifi_trial(task: tuple[int, float, int, str]) -> dict:
    """(b): the ε-DP learners on one release, scored on held-out and validation records."""
    from dpgm.cgm import cgm_em, naive_mle, projected_targets

    individuals, epsilon, noise, normalisation = task
    world = wifi_world(individuals)
    noisy, total = wifi_release(world, epsilon, noise, normalisation)
    tying, domain = world["tying"], world["domain"]
    out = {"individuals": individuals, "epsilon": epsilon, "noise": noise, "total": total,
           "normalisation": normalisation}
    (model, trace), seconds = timed(cgm_em, domain, noisy, total, len(noisy) / epsilon,
                                    max_iters=EM_CAP, tying=tying)
    out["cgm"] = {**holdout(model, world["test"]), "seconds": seconds,
                  "iterations": len(trace.residuals)}
    targets = projected_targets(noisy, total)
    out["naive"] = {}
    for lam in LAMBDAS_B:
        model, seconds = timed(naive_mle, domain, targets, total, penalty=lam, tying=tying)
        out["naive"][f"{lam:g}"] = {**holdout(model, world["test"]), "seconds": seconds,
                                    "validation": holdout(model, world["validation"])["all"]}
    return out


def wifi_psgd(world: dict, epsilon: float, config, seed: int):
    from dpgm.cgm.psgd import dp_sgd
    from dpgm.privacy import PrivacyBudget
    from dpgm.privacy.sgd import NoisyGradientSums

    q, epochs, rate = config
    people = len(np.unique(world["owners"]))
    delta = 1.0 / people
    steps = max(1, int(np.ceil(epochs / q)))
    start = time.perf_counter()
    gradients = NoisyGradientSums(
        world["train"], world["edges"], epsilon=epsilon, delta=delta, sampling_rate=q,
        steps=steps, clip=PSGD_CLIP, budget=PrivacyBudget.approximate(epsilon, delta),
        rng=np.random.default_rng([seed, 23]), individuals=world["owners"])
    model = dp_sgd(world["domain"], gradients, world["edges"], float(len(world["train"])),
                   learning_rate=rate, tying=world["tying"])
    return model, time.perf_counter() - start


def wifi_baselines(task: tuple[int, float]) -> dict:
    """(b): PSGD (grid on the validation days, then two seeds), non-private and random."""
    from dpgm.errors import PrivacyParameterError
    from dpgm.evaluation.baselines import dirichlet_baseline, nonprivate_mle

    individuals, epsilon = task
    world = wifi_world(individuals)
    out = {"individuals": individuals, "epsilon": epsilon, "grid": []}
    for config in PSGD_GRID:
        try:
            model, seconds = wifi_psgd(world, epsilon, config, 99)
        except PrivacyParameterError as error:
            out["grid"].append({"config": list(config), "error": str(error)})
            continue
        out["grid"].append({"config": list(config), "seconds": seconds,
                            "validation": holdout(model, world["validation"])["all"]})
    usable = [g for g in out["grid"] if "validation" in g]
    if usable:
        best = max(usable, key=lambda g: g["validation"])
        out["chosen"] = best["config"]
        out["psgd"] = []
        for noise in range(NOISES_B):
            model, seconds = wifi_psgd(world, epsilon, best["config"], noise)
            out["psgd"].append({**holdout(model, world["test"]), "seconds": seconds})
    if epsilon == EPSILONS_B[0]:  # the baselines do not depend on ε
        train = world["train"]
        model = nonprivate_mle(train, world["edges"], tying=world["tying"])
        out["nonprivate"] = holdout(model, world["test"])
        model = dirichlet_baseline(world["domain"], world["edges"], float(len(train)),
                                   rng=np.random.default_rng([individuals, 29]),
                                   tying=world["tying"])
        out["random"] = holdout(model, world["test"])
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--quick", action="store_true",
                        help="(b) only, 2,000 individuals, one ε, one draw: a smoke run")
    parser.add_argument("--replot", action="store_true",
                        help="redraw the plot from the saved results, run nothing")
    args = parser.parse_args(argv)
    if args.replot:
        plot(json.loads((OUTPUT / "cgm_fig3.json").read_text()))
        return
    warnings.simplefilter("ignore")  # seeded noise: research runs, said once here
    global EPSILONS_B, INDIVIDUALS_B, NOISES_B, PSGD_GRID
    if args.quick:
        EPSILONS_B, INDIVIDUALS_B, NOISES_B, PSGD_GRID = (1.0,), (2_000,), 1, PSGD_GRID[:1]
    started = time.perf_counter()
    jobs = [] if args.quick else [(edge_marginal_trial, z) for z in range(NOISES_A)]
    jobs += [(wifi_trial, (m, e, z, how)) for m in INDIVIDUALS_B for e in EPSILONS_B
             for z in range(NOISES_B) for how in NORMALISATIONS]
    jobs += [(wifi_baselines, (m, e)) for m in INDIVIDUALS_B for e in EPSILONS_B]
    with ProcessPoolExecutor(args.jobs) as pool:
        done = list(pool.map(call, jobs))
    results = {
        "protocol": "the note's R4-R5 (reduced); lambda in count units; naive's best "
                    "lambda and PSGD's grid chosen on simulated validation days",
        "a": [d for d in done if "truth" in d],
        "b": [d for d in done if "cgm" in d and "individuals" in d],
        "b_baselines": [d for d in done if "grid" in d],
    }
    results["summary_a"] = summarise_a(results["a"]) if results["a"] else None
    results["summary_b"] = summarise_b(results)
    finish("cgm_fig3_quick" if args.quick else "cgm_fig3", results, started,
           (lambda _: None) if args.quick else plot)


def summarise_a(trials: list[dict]) -> dict:
    truth = np.array(trials[0]["truth"])
    rows, summary = [], {}
    methods = ["cgm", *[f"naive_{lam:g}" for lam in LAMBDAS_A], "nonprivate"]
    for method in methods:
        errors = [float(np.mean(np.abs(np.array(t[method]) - truth)))
                  for t in trials if method in t]
        summary[method] = float(np.mean(errors))
        rows.append([method, f"{summary[method]:.3g}"])
    best = min((m for m in methods if m.startswith("naive")), key=summary.get)
    summary["naive_best"] = best
    summary["cgm_below_naive_a_priori"] = summary["cgm"] < summary["naive_1"]
    summary["cgm_below_naive_best"] = summary["cgm"] < summary[best]
    summary["cgm_iterations"] = [t["cgm_iterations"] for t in trials]
    print("(a) ER graph, K = 20, N = 1e4, eps = 0.1: mean absolute error per edge-marginal cell")
    print_table(["method", "MAE"], rows)
    print({k: v for k, v in summary.items() if not isinstance(v, float)})
    return summary


def summarise_b(results: dict) -> list[dict]:
    rows, table = [], []
    base = {b["individuals"]: b for b in results["b_baselines"] if "nonprivate" in b}
    cells = itertools.product(NORMALISATIONS, INDIVIDUALS_B, EPSILONS_B)
    for normalisation, individuals, epsilon in cells:
        trials = [t for t in results["b"]
                  if (t["individuals"], t["epsilon"], t["normalisation"])
                  == (individuals, epsilon, normalisation)]
        extra = next(b for b in results["b_baselines"]
                     if (b["individuals"], b["epsilon"]) == (individuals, epsilon))
        best = max(LAMBDAS_B, key=lambda lam: np.mean(
            [t["naive"][f"{lam:g}"]["validation"] for t in trials]))
        row = {"normalisation": normalisation, "individuals": individuals,
               "epsilon": epsilon, "naive_best_lambda": best}
        for variant in ("all", "active"):
            row[f"cgm_{variant}"] = float(np.mean([t["cgm"][variant] for t in trials]))
            row[f"naive_{variant}"] = float(np.mean([t["naive"]["1"][variant]
                                                     for t in trials]))
            row[f"naive_best_{variant}"] = float(np.mean(
                [t["naive"][f"{best:g}"][variant] for t in trials]))
            row[f"psgd_{variant}"] = (float(np.mean([p[variant] for p in extra["psgd"]]))
                                      if "psgd" in extra else None)
            if individuals in base:
                row[f"nonprivate_{variant}"] = base[individuals]["nonprivate"][variant]
                row[f"random_{variant}"] = base[individuals]["random"][variant]
        row["psgd_config"] = extra.get("chosen")
        row["seconds_cgm"] = float(np.mean([t["cgm"]["seconds"] for t in trials]))
        row["seconds_naive"] = float(np.mean([t["naive"]["1"]["seconds"] for t in trials]))
        row["seconds_psgd"] = (float(np.mean([p["seconds"] for p in extra["psgd"]]))
                               if "psgd" in extra else None)
        row["cgm_iterations"] = float(np.mean([t["cgm"]["iterations"] for t in trials]))
        rows.append(row)
        table.append([normalisation, str(individuals), f"{epsilon:g}"] + [
            "n/a" if row.get(k) is None else f"{row[k]:.3f}"
            for k in ("cgm_all", "naive_all", "naive_best_all", "psgd_all",
                      "nonprivate_all", "random_all", "cgm_active", "naive_active")])
    print("\n(b) wifi stand-in: holdout log-likelihood per record (all / not-all-null records)")
    print_table(["release", "individuals", "eps", "CGM", "naive l=1", "naive best", "PSGD",
                 "non-private", "random", "CGM (active)", "naive (active)"], table)
    return rows


def plot(results: dict) -> None:
    plt = pyplot()
    if plt is None:
        return
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.5))
    if results["a"]:
        trial = results["a"][0]
        truth = np.array(trial["truth"])
        for method, label in (("naive_1", "naive MLE (λ=1)"), ("cgm", "CGM"),
                              ("nonprivate", "non-private MLE")):
            axes[0].scatter(truth, trial[method], s=3, alpha=0.5, label=label)
        axes[0].plot([0, truth.max()], [0, truth.max()], color="grey", lw=0.8)
        axes[0].set(xlabel="true edge marginal", ylabel="learned",
                    title="(a) ER, K=20, N=1e4, ε=0.1")
        axes[0].legend(fontsize=7, markerscale=3)
    styles = (("cgm", "paper", "CGM", "-"), ("naive", "paper", "naive (λ=1)", "-"),
              ("cgm", "every-record", "CGM, null–null kept", "--"),
              ("naive", "every-record", "naive (λ=1), null–null kept", "--"),
              ("psgd", "paper", "PSGD (per-individual)", ":"))
    for ax, individuals in zip(axes[1:], INDIVIDUALS_B):
        rows = [r for r in results["summary_b"] if r["individuals"] == individuals]
        for key, release, label, line in styles:
            points = [(r["epsilon"], r[f"{key}_all"]) for r in rows
                      if r["normalisation"] == release and r.get(f"{key}_all") is not None]
            if points:
                ax.semilogx(*zip(*points), "o" + line, label=label)
        if rows and rows[0].get("nonprivate_all") is not None:
            ax.axhline(rows[0]["nonprivate_all"], ls=":", color="grey", label="non-private")
            ax.axhline(rows[0]["random_all"], ls="-.", color="grey", label="random")
        ax.set_ylim(-30, -3)
        ax.set(xlabel="ε", ylabel="holdout log-likelihood per record",
               title=f"(b) wifi stand-in, {individuals} days (below −30 cut)")
        ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(OUTPUT / "cgm_fig3.png", dpi=120)


if __name__ == "__main__":
    main()
