"""``dpgm bn learn`` (private structure + CPDs) against non-private structure learners.

Protocol. For each network (default asia, sachs, child, alarm, insurance) and each run
r = 0..R−1, ``--records`` records (default 20,000) are forward-sampled from the true
network with seed r; every method of run r sees those same records (paired runs).

Methods:

* ``privbayes`` — :class:`dpgm.mechanisms.NetworkLearner` (method="privbayes", degree 2,
  CPDs by ``--parameters`` — default its own, Private-PGM on data-dependent tables —
  all other options at their defaults), at each ε;
* ``tree`` — the same with method="tree" (one parent each), at each ε;
* non-private baselines (once per run, no ε), each a structure learnt on the records
  without noise and then CPDs by ``BayesianNetwork.fit_mle(..., pseudo_count=1)``:

  - ``chow-liu`` — maximum spanning tree on the empirical mutual information (networkx),
    rooted at the first variable, edges directed away from the root;
  - ``hc-bic`` — pgmpy's HillClimbSearch with its BIC score, max indegree 2, run in a
    subprocess with pgmpy's own Python (``--pgmpy-python``; records passed as a CSV of
    state names, the edges read back as JSON; ``pgmpy_hillclimb.py`` next to this file);
  - ``greedy`` / ``greedy-tree`` (ε=∞) — the learner's own greedy with ε = 1e9 (its
    exponential mechanism is then an argmax of PrivBayes's R score), methods privbayes
    (degree 2) and tree; its released CPDs are discarded and refitted by MLE;
  - ``true-dag`` — the true structure with MLE CPDs (a reference: the query error left
    by 20,000 records when the structure is right).

Metrics: SHD against the true DAG (:func:`dpgm.bn.structure.structural_hamming_distance`;
a reversed edge counts once), the skeleton SHD (edge directions ignored), the number of
edges; the query error: 40 conditional queries P(X | E = e) per network, drawn once from
a fixed seed and the same for every method — X one random variable, E one or two other
random variables whose states come from one record forward-sampled from the true network
(so P_true(e) > 0) — scored by the mean total-variation distance ½·Σ|p_true − p_learnt|;
where a learnt network gives the evidence probability zero (``DataError``) the query
counts TV = 1 and is counted in ``zero_evidence``. For the private methods the query
error is also computed with MLE CPDs (pseudo-count 1) on the privately learnt structure
(``tv_mle_cpds``: a diagnostic that separates the structure's share of the error from
the noisy CPDs'; not a private release). Fit time is wall-clock seconds of structure +
CPDs in this process (for hc-bic: pgmpy's search time as measured in the subprocess,
without interpreter start-up or CSV I/O, plus the MLE fit).

Randomness: records use ``default_rng(r)``; each private fit gets its own generator
``default_rng([1000003, r, method, ε index])`` so that its noise is not the stream the
records were drawn from. Seeded noise is for research only (dpgm warns; silenced here).

    python -m experiments.bn_learn [--networks asia sachs child alarm insurance]
        [--epsilons 0.3 1 3] [--runs 3] [--records 20000] [--parameters pgm]
        [--pgmpy-python PYTHON] [--out experiments/output/bn_learn.json]

Prints one table per network (method × ε: mean ± sd over runs of SHD, skeleton SHD,
edges, query TV, TV with MLE CPDs, fit time; zero-evidence queries summed over runs) and
writes every run's numbers, the queries and the learnt edges to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
import warnings
import zlib
from pathlib import Path

import networkx as nx
import numpy as np

from dpgm.bn.structure import structural_hamming_distance
from dpgm.errors import DataError
from dpgm.io import read_bif
from dpgm.mechanisms import NetworkLearner
from dpgm.models import BayesianNetwork
from experiments._common import OUTPUT, find_network

HERE = Path(__file__).resolve().parent
NETWORKS = ("asia", "sachs", "child", "alarm", "insurance")
EPSILONS = (0.3, 1.0, 3.0)
RUNS = 3
RECORDS = 20_000
QUERIES = 40
QUERY_SEED = 20240
NOISE_TAG = 1_000_003
DEGREE = 2
INFINITE_EPSILON = 1e9
HC_TIMEOUT = 180.0
PRIVATE = ("privbayes", "tree")
#: --parameters: the CPD learner of bn learn (the command line's names)
PARAMETERS = {"pgm": {"parameters": "data-dependent", "estimator": "pgm"},
              "data-dependent": {"parameters": "data-dependent", "estimator": "original"},
              "dind": {"parameters": "dind", "estimator": "original"}}
BASELINES = ("chow-liu", "hc-bic", "greedy", "greedy-tree", "true-dag")
LABELS = {
    "privbayes": "bn learn privbayes (deg 2)",
    "tree": "bn learn tree",
    "chow-liu": "Chow-Liu tree",
    "hc-bic": "hill climbing BIC (indeg 2)",
    "greedy": "greedy (eps=inf)",
    "greedy-tree": "greedy tree (eps=inf)",
    "true-dag": "true DAG + MLE (reference)",
}


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- networks and structures ---------------------------------------------------------------
def load_network(name: str) -> tuple[BayesianNetwork, str]:
    """The network ``name`` (:func:`experiments._common.find_network`)."""
    path = find_network(name)
    return read_bif(path), str(path)


def parents_of(network: BayesianNetwork) -> dict[str, tuple[str, ...]]:
    return {v: tuple(network.parents[v]) for v in network.variables}


def edge_count(parents: dict[str, tuple[str, ...]]) -> int:
    return sum(len(p) for p in parents.values())


def skeleton_shd(learnt: dict, true: dict) -> int:
    """Undirected edges in one skeleton and not the other."""
    ours = {frozenset((p, v)) for v, ps in learnt.items() for p in ps}
    theirs = {frozenset((p, v)) for v, ps in true.items() for p in ps}
    return len(ours ^ theirs)


def mle_network(true: BayesianNetwork, parents: dict, data) -> BayesianNetwork:
    """MLE CPDs (pseudo-count 1) on ``parents`` over the true network's states."""
    cpds = {}
    for v in true.variables:
        shape = (*(len(true.states[p]) for p in parents[v]), len(true.states[v]))
        cpds[v] = np.full(shape, 1.0 / shape[-1])
    structure = BayesianNetwork(list(true.variables), {v: list(true.states[v]) for v in
                                true.variables}, {v: tuple(parents[v]) for v in
                                true.variables}, cpds, true.name)
    return BayesianNetwork.fit_mle(structure, data, pseudo_count=1.0)


# -- the non-private structure learners ----------------------------------------------------
def chow_liu(data) -> dict[str, tuple[str, ...]]:
    """Maximum spanning tree on the empirical mutual information, rooted at the first
    variable, edges directed away from it."""
    attrs = list(data.domain.attrs)
    pairs = [(a, b) for i, a in enumerate(attrs) for b in attrs[i + 1:]]
    graph = nx.Graph()
    graph.add_nodes_from(attrs)
    for (a, b), counts in zip(pairs, data.marginals(pairs), strict=True):
        joint = counts / counts.sum()
        product = np.outer(joint.sum(axis=1), joint.sum(axis=0))
        seen = joint > 0
        graph.add_edge(a, b, weight=float(np.sum(joint[seen] * np.log(joint[seen] /
                                                                          product[seen]))))
    tree = nx.maximum_spanning_tree(graph, weight="weight")
    parents = {a: () for a in attrs}
    for parent, child in nx.bfs_edges(tree, attrs[0]):
        parents[child] = (parent,)
    return parents


def hill_climbing(data, true: BayesianNetwork, python: str, timeout: float
                  ) -> tuple[dict[str, tuple[str, ...]], float, str]:
    """pgmpy's HillClimbSearch + BIC (max indegree 2) in a subprocess: (parents, search
    seconds, pgmpy version)."""
    with tempfile.TemporaryDirectory() as tmp:
        records, states, out = (Path(tmp) / n for n in ("records.csv", "states.json",
                                                         "edges.json"))
        data.to_pandas(labels=True).to_csv(records, index=False)
        states.write_text(json.dumps({v: [str(s) for s in true.states[v]]
                                      for v in true.variables}))
        subprocess.run([python, str(HERE / "_pgmpy_hillclimb.py"), str(records), str(states),
                        str(DEGREE), str(out)], check=True, timeout=timeout,
                       stdout=subprocess.DEVNULL)
        found = json.loads(out.read_text())
    parents = {v: tuple(p for p, c in found["edges"] if c == v) for v in true.variables}
    return parents, float(found["seconds"]), found["pgmpy"]


# -- queries -------------------------------------------------------------------------------
def make_queries(true: BayesianNetwork, name: str, count: int) -> list[dict]:
    """``count`` queries P(X | E = e): X and E (1–2 variables) uniformly at random, e read
    from one record forward-sampled from the true network; with P_true(X | e)."""
    rng = np.random.default_rng([QUERY_SEED, zlib.crc32(name.encode())])
    variables = list(true.variables)
    queries = []
    for _ in range(count):
        picked = rng.choice(len(variables), size=1 + int(rng.integers(1, 3)), replace=False)
        target, given = variables[picked[0]], [variables[i] for i in picked[1:]]
        record = true.sample(1, rng).records[0]
        evidence = {v: str(true.states[v][int(record[variables.index(v)])]) for v in given}
        answer = true.query([target], evidence)
        queries.append({"target": target, "evidence": evidence,
                        "true": [float(answer[str(s)]) for s in true.states[target]]})
    return queries


def query_error(network: BayesianNetwork, queries: list[dict]) -> tuple[float, int]:
    """(mean TV over the queries, number whose evidence has probability zero: TV = 1)."""
    errors, zero = [], 0
    for q in queries:
        try:
            answer = network.query([q["target"]], q["evidence"])
        except DataError:
            errors.append(1.0)
            zero += 1
            continue
        learnt = np.array([float(answer[str(s)]) for s in network.states[q["target"]]])
        errors.append(0.5 * float(np.abs(np.asarray(q["true"]) - learnt).sum()))
    return float(np.mean(errors)), zero


# -- one network ---------------------------------------------------------------------------
def score(method, epsilon, run, parents, network, seconds, true_parents, queries,
          mle=None):
    tv, zero = query_error(network, queries)
    row = {"method": method, "epsilon": epsilon, "run": run,
           "shd": structural_hamming_distance(parents, true_parents),
           "skeleton_shd": skeleton_shd(parents, true_parents),
           "edges": edge_count(parents), "tv": tv, "zero_evidence": zero,
           "seconds": seconds,
           "parents": {v: list(p) for v, p in parents.items() if p}}
    if mle is not None:
        row["tv_mle_cpds"], row["zero_evidence_mle_cpds"] = query_error(mle, queries)
    return row


def run_network(name, args, pgmpy_state) -> dict:
    true, path = load_network(name)
    true_parents = parents_of(true)
    queries = make_queries(true, name, args.queries)
    rows = []
    for run in range(args.runs):
        data = true.sample(args.records, run)
        # the private learner, each method and ε
        for m, method in enumerate(args.methods):
            for k, epsilon in enumerate(args.epsilons):
                rng = np.random.default_rng([NOISE_TAG, run, m, k])
                started = time.perf_counter()
                learner = NetworkLearner(epsilon, method=method, degree=DEGREE,
                                         **PARAMETERS[args.parameters])
                network = learner.fit(data, rng=rng)
                seconds = time.perf_counter() - started
                parents = dict(learner.parents)
                rows.append(score(method, epsilon, run, parents, network, seconds,
                                  true_parents, queries, mle_network(true, parents, data)))
                say(f"{name} run {run} {method} eps={epsilon}: shd {rows[-1]['shd']} "
                    f"tv {rows[-1]['tv']:.3f} ({seconds:.2f}s)")
        # the baselines
        for b, baseline in enumerate(args.baselines):
            started = time.perf_counter()
            if baseline == "chow-liu":
                parents = chow_liu(data)
            elif baseline == "hc-bic":
                if pgmpy_state.get("skip"):
                    continue
                try:
                    parents, search, version = hill_climbing(
                        data, true, args.pgmpy_python, args.hc_timeout)
                except (subprocess.TimeoutExpired, subprocess.CalledProcessError,
                        OSError) as error:
                    pgmpy_state.setdefault("failures", []).append(
                        f"{name} run {run}: {type(error).__name__}: {error}")
                    say(f"{name} run {run} hc-bic failed: {error}")
                    continue
                pgmpy_state["version"] = version
                started = time.perf_counter() - search  # count the search, not the I/O
            elif baseline in ("greedy", "greedy-tree"):
                learner = NetworkLearner(
                    INFINITE_EPSILON, method="privbayes" if baseline == "greedy" else "tree",
                    degree=DEGREE, parameters="dind")
                learner.fit(data, rng=np.random.default_rng([NOISE_TAG, run, 100 + b]))
                parents = dict(learner.parents)
            elif baseline == "true-dag":
                parents = dict(true_parents)
            else:
                raise ValueError(baseline)
            network = mle_network(true, parents, data)
            seconds = time.perf_counter() - started
            rows.append(score(baseline, None, run, parents, network, seconds, true_parents,
                              queries))
            say(f"{name} run {run} {baseline}: shd {rows[-1]['shd']} "
                f"tv {rows[-1]['tv']:.3f} ({seconds:.2f}s)")
    return {"path": path, "variables": len(true.variables),
            "true_edges": edge_count(true_parents),
            "max_indegree": max(len(p) for p in true_parents.values()),
            "queries": queries, "runs": rows}


# -- tables --------------------------------------------------------------------------------
def mean_sd(values, digits):
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return "-"
    sd = values.std(ddof=1) if values.size > 1 else 0.0
    return f"{values.mean():.{digits}f} ± {sd:.{digits}f}"


def table(name: str, result: dict, args) -> str:
    rows = result["runs"]
    header = ["method", "eps", "SHD", "skel. SHD", f"edges (true {result['true_edges']})",
              "query TV", "zero-ev", "TV, MLE CPDs", "fit s"]
    lines = []
    keys = [(m, e) for m in args.methods for e in args.epsilons]
    keys += [(b, None) for b in args.baselines]
    for method, epsilon in keys:
        group = [r for r in rows if r["method"] == method and r["epsilon"] == epsilon]
        if not group:
            continue
        mle = [r["tv_mle_cpds"] for r in group if "tv_mle_cpds" in r]
        lines.append([
            LABELS[method], "inf" if epsilon is None else f"{epsilon:g}",
            mean_sd([r["shd"] for r in group], 1),
            mean_sd([r["skeleton_shd"] for r in group], 1),
            mean_sd([r["edges"] for r in group], 1),
            mean_sd([r["tv"] for r in group], 3),
            f"{sum(r['zero_evidence'] for r in group)}/{len(group) * len(result['queries'])}",
            mean_sd(mle, 3) if mle else "",
            mean_sd([r["seconds"] for r in group], 2)])
    widths = [max(len(str(x)) for x in column) for column in zip(header, *lines)]
    fmt = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths))  # noqa: E731
    title = (f"{name}: {result['variables']} variables, {result['true_edges']} true edges "
             f"(max indegree {result['max_indegree']}), {args.records} records, "
             f"{args.runs} runs, {len(result['queries'])} queries; mean ± sd over runs")
    return "\n".join([title, fmt(header), fmt(["-" * w for w in widths]),
                      *(fmt(line) for line in lines)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--networks", nargs="+", default=list(NETWORKS))
    parser.add_argument("--epsilons", nargs="+", type=float, default=list(EPSILONS))
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--records", type=int, default=RECORDS)
    parser.add_argument("--queries", type=int, default=QUERIES)
    parser.add_argument("--methods", nargs="+", default=list(PRIVATE), choices=PRIVATE)
    parser.add_argument("--parameters", default="pgm", choices=sorted(PARAMETERS),
                        help="the CPD learner of bn learn (default: pgm, its default)")
    parser.add_argument("--baselines", nargs="+", default=list(BASELINES), choices=BASELINES)
    parser.add_argument("--no-hill-climbing", nargs="*", default=[], metavar="NETWORK",
                        help="skip pgmpy's hill climbing on these networks")
    parser.add_argument("--pgmpy-python", default=sys.executable,
                        help="a Python with pgmpy for the hill-climbing baseline (default: "
                        "this one; skipped where it has no pgmpy)")
    parser.add_argument("--hc-timeout", type=float, default=HC_TIMEOUT,
                        help="seconds one hill-climbing subprocess may take")
    parser.add_argument("--out", default=str(OUTPUT / "bn_learn.json"))
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # seeded noise (research runs) is warned about

    started = time.perf_counter()
    import dpgm
    results = {"config": {k: v for k, v in vars(args).items()},
               "protocol": {"degree": DEGREE, "query_seed": QUERY_SEED,
                            "noise_seed": f"default_rng([{NOISE_TAG}, run, method, eps index])",
                            "data_seed": "run index", "infinite_epsilon": INFINITE_EPSILON,
                            "mle_pseudo_count": 1.0, "parameters": args.parameters},
               "environment": {"python": platform.python_version(),
                               "dpgm": getattr(dpgm, "__version__", "?"),
                               "numpy": np.__version__, "networkx": nx.__version__},
               "networks": {}}
    tables = []
    for name in args.networks:
        pgmpy_state = {"skip": name in args.no_hill_climbing}
        if "hc-bic" in args.baselines and subprocess.run(
                [args.pgmpy_python, "-c", "import pgmpy"], capture_output=True).returncode:
            pgmpy_state = {"skip": True, "failures": [f"no pgmpy in {args.pgmpy_python}"]}
        t0 = time.perf_counter()
        result = run_network(name, args, pgmpy_state)
        result["seconds"] = time.perf_counter() - t0
        result["hill_climbing"] = pgmpy_state
        results["networks"][name] = result
        tables.append(table(name, result, args))
        print(tables[-1] + "\n", flush=True)
        results["seconds"] = time.perf_counter() - started
        results["tables"] = tables
        Path(args.out).write_text(json.dumps(results, indent=1))
    say(f"done in {time.perf_counter() - started:.0f}s; results in {args.out}")


if __name__ == "__main__":
    main()
