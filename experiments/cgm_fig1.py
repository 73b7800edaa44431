"""Bernstein et al. (paper 000), Fig. 1: naive MLE on noisy sufficient statistics.

The reduced protocol R1–R2 of the implementation note (``specs/cgm-000.md`` §5.2):

* (a) third-order chain, T = 10 attributes of K = 10 values, Dirichlet(1) edge potentials;
  ε ∈ {0.1, 1}. The mean squared error per cell of the noisy marginals μ̄ = y/N against
  the true ones, over ``--draws`` draws of the tables (each table multinomial(N, μ_C),
  which is all the per-cell error depends on, so N runs to 10⁸) plus Laplace(|𝒞|/ε)
  noise; compared with Eq. 4, μ(1 − μ)/N + 2b²/N², and its local log–log slope with the
  note's thresholds around N* = 2|𝒞|²/(ε² · mean μ(1 − μ)). Also the MSE of the naive-MLE
  model's marginals (projected targets, λ = 1) from sampled records, N ≤ 10⁵ (A11).
* (b) connected Erdős–Rényi graph G(10, 0.3), K = 20, ε = 0.5, N ∈ {10³, 10⁴, 10⁵}: KL of
  naive MLE (λ = 1) with and without the per-clique simplex projection, 2 populations ×
  2 noise draws.
* (c) the chain, ε = 0.1, N = 10⁴: KL against λ ∈ {10⁻³, …, 10³} (count units) for naive
  MLE on the projected noisy tables and on the true tables (non-private), 2 trials.

λ is in count units throughout (A2). Everything to ``experiments/output/cgm_fig1.json``,
the plot to ``experiments/output/cgm_fig1.png``.

    python -m experiments.cgm_fig1 [--draws 400]
"""

from __future__ import annotations

import argparse
import time
import warnings
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from experiments._common import OUTPUT, finish, print_table, pyplot

CHAIN_SEED, ER_SEED = 0, 1
K_CHAIN, K_ER = 10, 20
EPSILONS_A = (0.1, 1.0)
N_GRID_A = tuple(int(round(10 ** e)) for e in np.arange(2.0, 8.01, 0.5))
N_MODEL_A = (1_000, 10_000, 100_000)
N_GRID_B = (1_000, 10_000, 100_000)
LAMBDAS = tuple(10.0 ** k for k in range(-3, 4))
PENALTY = 1.0


def chain_truth():
    from dpgm.datasets.synthetic import dirichlet_model, third_order_chain

    edges = third_order_chain(10)
    return edges, dirichlet_model(edges, K_CHAIN, rng=CHAIN_SEED)


def er_truth():
    from dpgm.datasets.synthetic import connected_erdos_renyi, dirichlet_model

    edges = connected_erdos_renyi(10, 0.3, rng=ER_SEED)
    return edges, dirichlet_model(edges, K_ER, rng=ER_SEED)


def noisy_tables(data, edges, epsilon: float, rng) -> dict:
    """y = n + Laplace(|𝒞|/ε) on every cell of every edge table (Eq. 3; seeded, research)."""
    from dpgm.privacy import PrivacyBudget, measure_marginals

    measured = measure_marginals(data, edges, epsilon=epsilon, rng=rng,
                                 budget=PrivacyBudget(epsilon=epsilon))
    return {m.clique: m.values.reshape(data.domain.project(m.clique).shape) for m in measured}


# -- (a) ------------------------------------------------------------------------------
def panel_a_noisy(draws: int) -> dict:
    edges, truth = chain_truth()
    mu = [truth.marginal(e).ravel() / truth.total for e in edges]
    flat = np.concatenate(mu)
    variance = float(np.mean(flat * (1 - flat)))
    rng = np.random.default_rng(10)
    out = {}
    for epsilon in EPSILONS_A:
        b = len(edges) / epsilon
        n_star = 2 * len(edges) ** 2 / (epsilon**2 * variance)
        rows = []
        for n in N_GRID_A:
            errors = np.zeros(draws)
            for k in range(draws):
                total = 0.0
                for table in mu:
                    counts = rng.multinomial(n, table)
                    noisy = (counts + rng.laplace(0, b, size=table.size)) / n
                    total += float(np.sum((noisy - table) ** 2))
                errors[k] = total / flat.size
            theory = float(np.mean(flat * (1 - flat) / n + 2 * b**2 / n**2))
            rows.append({"N": n, "mse": float(errors.mean()),
                         "se": float(errors.std(ddof=1) / np.sqrt(draws)), "eq4": theory})
        for left, right in zip(rows, rows[1:]):
            right["slope"] = float(np.log(right["mse"] / left["mse"])
                                   / np.log(right["N"] / left["N"]))
        out[str(epsilon)] = {"n_star": n_star, "rows": rows}
    return out


def model_mse(task: tuple[float, int]) -> dict:
    from dpgm.cgm import naive_mle, projected_targets

    epsilon, n = task
    edges, truth = chain_truth()
    data = truth.sample(n, rng=100 + n)
    noisy = noisy_tables(data, edges, epsilon, np.random.default_rng(200 + n))
    start = time.perf_counter()
    model = naive_mle(truth.domain, projected_targets(noisy, float(n)), float(n),
                      penalty=PENALTY)
    seconds = time.perf_counter() - start
    errors = [np.mean((model.marginal(e) / n - truth.marginal(e) / truth.total) ** 2)
              for e in edges]
    return {"epsilon": epsilon, "N": n, "model_mse": float(np.mean(errors)),
            "seconds": seconds}


# -- (b) ------------------------------------------------------------------------------
def projection_trial(task: tuple[int, int, int]) -> dict:
    from dpgm.cgm import naive_mle, projected_targets
    from dpgm.evaluation import kl_divergence

    n, population, noise = task
    edges, truth = er_truth()
    data = truth.sample(n, rng=1000 * population + n)
    noisy = noisy_tables(data, edges, 0.5, np.random.default_rng(7919 * noise + population + n))
    raw = naive_mle(truth.domain, noisy, float(n), penalty=PENALTY)
    projected = naive_mle(truth.domain, projected_targets(noisy, float(n)), float(n),
                          penalty=PENALTY)
    return {"N": n, "population": population, "noise": noise,
            "kl_raw": kl_divergence(truth, raw), "kl_projected": kl_divergence(truth, projected)}


# -- (c) ------------------------------------------------------------------------------
def penalty_trial(task: tuple[float, int]) -> dict:
    from dpgm.cgm import naive_mle, projected_targets
    from dpgm.evaluation import kl_divergence

    penalty, trial = task
    n = 10_000
    edges, truth = chain_truth()
    data = truth.sample(n, rng=300 + trial)
    noisy = noisy_tables(data, edges, 0.1, np.random.default_rng(400 + trial))
    exact = {e: data.marginal(e) for e in edges}
    private = naive_mle(truth.domain, projected_targets(noisy, float(n)), float(n),
                        penalty=penalty)
    public = naive_mle(truth.domain, exact, float(n), penalty=penalty)
    return {"lambda": penalty, "trial": trial, "kl_noisy": kl_divergence(truth, private),
            "kl_true": kl_divergence(truth, public)}


def run(tasks, function, jobs: int) -> list[dict]:
    with ProcessPoolExecutor(jobs) as pool:
        return list(pool.map(function, tasks))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--draws", type=int, default=400)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # seeded noise: research runs, said once here
    started = time.perf_counter()
    results = {"protocol": "the note's R1-R2 (reduced); lambda in count units",
               "draws": args.draws}

    print("(a) noisy marginals of the third-order chain against Eq. 4")
    results["a"] = panel_a_noisy(args.draws)
    results["a_model"] = run([(e, n) for e in EPSILONS_A for n in N_MODEL_A], model_mse,
                             args.jobs)
    for epsilon, panel in results["a"].items():
        n_star = panel["n_star"]
        rows = [[f"{r['N']:.0e}", f"{r['mse']:.4g}", f"{r['eq4']:.4g}",
                 f"{r['mse'] / r['eq4'] - 1:+.1%}", f"{r.get('slope', float('nan')):.2f}"]
                for r in panel["rows"]]
        print(f"epsilon = {epsilon}, N* = {n_star:.3g}")
        print_table(["N", "MSE", "Eq. 4", "diff", "slope"], rows)
        within = all(abs(r["mse"] / r["eq4"] - 1) <= 0.05 for r in panel["rows"])
        steep = [r["slope"] for r in panel["rows"] if "slope" in r and r["N"] <= n_star / 10]
        flat = [r["slope"] for r in panel["rows"] if "slope" in r and r["N"] >= 10 * n_star]
        panel["checks"] = {
            "eq4_within_5pct": within,
            "slope_le_-1.8_below_nstar/10": all(s <= -1.8 for s in steep) if steep else None,
            "slope_ge_-1.2_above_10nstar": all(s >= -1.2 for s in flat) if flat else None,
        }
        print(panel["checks"])
    print_table(["epsilon", "N", "model MSE", "fit s"],
                [[str(r["epsilon"]), str(r["N"]), f"{r['model_mse']:.4g}",
                  f"{r['seconds']:.1f}"] for r in results["a_model"]])

    print("\n(b) ER graph, K = 20, epsilon = 0.5: naive MLE with and without projection")
    tasks = [(n, p, z) for n in N_GRID_B for p in range(2) for z in range(2)]
    results["b"] = run(tasks, projection_trial, args.jobs)
    rows = []
    for n in N_GRID_B:
        trials = [r for r in results["b"] if r["N"] == n]
        raw = float(np.mean([r["kl_raw"] for r in trials]))
        projected = float(np.mean([r["kl_projected"] for r in trials]))
        rows.append([f"{n:.0e}", f"{raw:.4g}", f"{projected:.4g}",
                     "yes" if projected < raw else "NO"])
    print_table(["N", "KL raw", "KL projected", "projection helps"], rows)

    print("\n(c) chain, epsilon = 0.1, N = 1e4: KL against lambda")
    tasks = [(lam, t) for lam in LAMBDAS for t in range(2)]
    results["c"] = run(tasks, penalty_trial, args.jobs)
    rows, noisy_means, true_means = [], [], []
    for lam in LAMBDAS:
        trials = [r for r in results["c"] if r["lambda"] == lam]
        noisy_means.append(float(np.mean([r["kl_noisy"] for r in trials])))
        true_means.append(float(np.mean([r["kl_true"] for r in trials])))
        rows.append([f"{lam:g}", f"{noisy_means[-1]:.4g}", f"{true_means[-1]:.4g}"])
    print_table(["lambda", "KL noisy (projected)", "KL true statistics"], rows)
    best = int(np.argmin(noisy_means))
    results["c_checks"] = {
        "true_within_2x_of_min_for_lambda_le_1": all(
            t <= 2 * min(true_means) for lam, t in zip(LAMBDAS, true_means) if lam <= 1),
        "noisy_at_1e-3_ge_10x_min": noisy_means[0] >= 10 * min(noisy_means),
        "noisy_minimum_interior": 0 < best < len(LAMBDAS) - 1,
        "noisy_best_lambda": LAMBDAS[best],
    }
    print(results["c_checks"])
    finish("cgm_fig1", results, started, plot)


def plot(results: dict) -> None:
    plt = pyplot()
    if plt is None:
        return
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    for epsilon, panel in results["a"].items():
        ns = [r["N"] for r in panel["rows"]]
        axes[0].loglog(ns, [r["mse"] for r in panel["rows"]], "o", label=f"μ̄, ε={epsilon}")
        axes[0].loglog(ns, [r["eq4"] for r in panel["rows"]], "-", color="grey")
        model = [r for r in results["a_model"] if str(r["epsilon"]) == epsilon]
        axes[0].loglog([r["N"] for r in model], [r["model_mse"] for r in model], "s--",
                       label=f"naive MLE, ε={epsilon}")
    axes[0].set(xlabel="N", ylabel="MSE per cell", title="(a) chain, Eq. 4 in grey")
    axes[0].legend(fontsize=7)
    for key, label in (("kl_raw", "without projection"), ("kl_projected", "with projection")):
        means = [np.mean([r[key] for r in results["b"] if r["N"] == n]) for n in N_GRID_B]
        axes[1].loglog(N_GRID_B, means, "o-", label=label)
    axes[1].set(xlabel="N", ylabel="KL", title="(b) ER, K=20, ε=0.5")
    axes[1].legend(fontsize=7)
    for key, label in (("kl_noisy", "noisy (projected)"), ("kl_true", "true statistics")):
        means = [np.mean([r[key] for r in results["c"] if r["lambda"] == lam])
                 for lam in LAMBDAS]
        axes[2].loglog(LAMBDAS, means, "o-", label=label)
    axes[2].set(xlabel="λ (count units)", ylabel="KL", title="(c) chain, ε=0.1, N=1e4")
    axes[2].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(OUTPUT / "cgm_fig1.png", dpi=120)


if __name__ == "__main__":
    main()
