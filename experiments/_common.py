"""What the experiments share: data sets, workloads, runs of mechanisms, tables and plots.

Data: Adult (the table bundled with dpgm, identical to ``../shared/data/adult``) and two
higher-dimensional tables drawn with a fixed seed from the Alarm (37 attributes) and
Child (20 attributes) Bayesian networks in ``../shared/data/bn``. Workloads are the
paper's (Sec. 5.1): 15 random attribute triples, prefix ranges over numeric attributes.
A workload is public, so the first workload seed whose junction tree fits in
``MAX_MODEL_CELLS`` is used (reported), as the paper's models had to fit in 16 GB.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

# one BLAS thread per worker: the experiments run workers side by side on 2 cores
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")


from dpgm import Dataset  # noqa: E402
from dpgm.datasets import ADULT_NUMERIC, load_adult  # noqa: E402
from dpgm.inference.junction_tree import JunctionTree  # noqa: E402
from dpgm.io import read_bif  # noqa: E402
from dpgm.workload import Workload  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BN_FOLDER = ROOT.parent / "shared" / "data" / "bn"
OUTPUT = ROOT / "experiments" / "output"
NETWORK_RECORDS = 20_000  # records drawn from each Bayesian network
NETWORK_SEED = 0
MAX_MODEL_CELLS = 10_000_000


def find_network(name: str) -> Path:
    """The BIF file of the network ``name`` (``.bif`` or ``.bif.gz``): in ``$DPGM_BN_DIR``,
    ``tests/data/bn``, ``../shared/data/bn``, or the example models that ship with pgmpy
    (Insurance and Munin, among others; pgmpy is in the ``bench`` extra)."""
    import importlib.util

    folders = [Path(os.environ["DPGM_BN_DIR"])] if os.environ.get("DPGM_BN_DIR") else []
    folders += [ROOT / "tests" / "data" / "bn", BN_FOLDER]
    spec = importlib.util.find_spec("pgmpy")  # found without importing it
    if spec is not None and spec.submodule_search_locations:
        folders.append(Path(list(spec.submodule_search_locations)[0]) / "utils"
                       / "example_models")
    for folder in folders:
        for suffix in (".bif", ".bif.gz"):
            if (folder / f"{name}{suffix}").exists():
                return folder / f"{name}{suffix}"
    raise FileNotFoundError(f"no {name}.bif(.gz) in {[str(f) for f in folders]}")
DATASETS = ("adult", "child", "alarm")


def load_dataset(name: str) -> tuple[Dataset, tuple[str, ...]]:
    """A data set of the experiments and its numeric attributes."""
    if name == "adult":
        return load_adult(), ADULT_NUMERIC
    path = BN_FOLDER / f"{name}.bif"
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing (the Bayesian networks are in ../shared)")
    return read_bif(path).sample(NETWORK_RECORDS, rng=NETWORK_SEED), ()


def paper_workload(data: Dataset, numeric: Sequence[str]) -> tuple[Workload, int]:
    """The Fig. 1 workload (15 random triples) with the first seed whose model fits."""
    for seed in range(1000):
        workload = Workload.random(data.domain, 15, 3, numeric, rng=seed)
        if JunctionTree.build(data.domain, workload.cliques).size() <= MAX_MODEL_CELLS:
            return workload, seed
    raise RuntimeError("no workload seed below 1000 gives a model that fits")


#: δ of the mechanisms that are (ε, δ)-DP in the experiments (the others are pure ε-DP)
DELTAS = {"aim": 1e-9, "mst": 1e-9, "dualquery": 1e-3}
#: PGM iterations where a mechanism's default (1000) would not fit the 30-minute budget of
#: an experiment on 2 cores: on the Adult workload, HDMM's model (8.4e6 cells) takes about
#: 0.5 s per iteration, and DualQuery's loss (161 rounds over 407,228 queries) about 2 s
#: per iteration (its Adult error: 0.109 after 100 iterations, 0.088 after 250)
ITERS = {"hdmm": 200, "dualquery": 200}
#: runs per configuration (the paper takes the median of 5; 3 fit in 30 minutes)
RUNS = 3


def mechanism_options(mechanism: str, estimator: str, iters: int | None = None) -> dict:
    """The keyword arguments of a mechanism in the experiments (δ, PGM iterations)."""
    options: dict = {"delta": DELTAS[mechanism]} if mechanism in DELTAS else {}
    iters = ITERS.get(mechanism) if iters is None else iters
    if iters is not None and estimator == "pgm":
        options["iters"] = iters
    return options


@dataclass
class Run:
    """One fit of one mechanism: its workload error, or why it failed."""

    dataset: str
    mechanism: str
    estimator: str
    epsilon: float
    seed: int
    error: float | None = None
    seconds: float = 0.0
    failure: str = ""
    extra: dict = field(default_factory=dict)


def fit_and_score(
    dataset: str,
    mechanism: str,
    estimator: str,
    epsilon: float,
    seed: int,
    options: dict | None = None,
    workload_json: dict | None = None,
) -> Run:
    """Fit a mechanism (by its registry name) and score it on the paper's workload."""
    from dpgm.errors import DpgmError
    from dpgm.mechanisms import REGISTRY

    data, numeric = load_dataset(dataset)
    workload = (
        paper_workload(data, numeric)[0]
        if workload_json is None
        else Workload.from_json(workload_json)
    )
    run = Run(dataset, mechanism, estimator, epsilon, seed, extra={"options": options or {}})
    start = time.perf_counter()
    try:
        fitted = REGISTRY[mechanism](epsilon, estimator=estimator, **(options or {}))
        result = fitted.fit(data, workload=workload, rng=seed)
        run.error = workload.error(data, result)
    except (DpgmError, MemoryError) as failure:
        run.failure = f"{type(failure).__name__}: {failure}"
    except Exception:  # noqa: BLE001 - an experiment reports a crash and goes on
        run.failure = "crash: " + traceback.format_exc(limit=3).strip().splitlines()[-1]
    run.seconds = time.perf_counter() - start
    return run


def run_all(tasks: list[tuple], jobs: int, say: Callable[[str], None] = print) -> list[Run]:
    """``fit_and_score(*task)`` for every task, on ``jobs`` processes."""
    results: list[Run] = []
    if jobs <= 1:
        for task in tasks:
            results.append(fit_and_score(*task))
            say(describe(results[-1]))
        return results
    with ProcessPoolExecutor(jobs) as pool:
        for run in pool.map(fit_and_score, *zip(*tasks)):
            results.append(run)
            say(describe(run))
    return results


def describe(run: Run) -> str:
    what = (
        f"{run.dataset:6s} {run.mechanism:9s} {run.estimator:8s} "
        f"eps={run.epsilon:<5g} seed={run.seed}"
    )
    if run.failure:
        return f"{what}: FAILED after {run.seconds:.1f}s ({run.failure[:160]})"
    return f"{what}: error {run.error:.4f} in {run.seconds:.1f}s"


def median_error(runs: Sequence[Run]) -> float | None:
    """Median workload error over runs, None when any run failed."""
    if not runs or any(r.failure for r in runs):
        return None
    return statistics.median(r.error for r in runs)


def format_error(value: float | None) -> str:
    return "fails" if value is None else f"{value:.4f}"


def print_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A Markdown table (printed and returned)."""
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    lines = [
        "| " + " | ".join(str(x).ljust(w) for x, w in zip(line, widths)) + " |"
        for line in (header, ["-" * w for w in widths], *rows)
    ]
    text = "\n".join(lines)
    print(text)
    return text


def save_results(name: str, runs: Sequence[Run], table: str) -> Path:
    """Write the runs (JSON) and the table (Markdown) under experiments/output."""
    OUTPUT.mkdir(parents=True, exist_ok=True)
    (OUTPUT / f"{name}.json").write_text(json.dumps([asdict(r) for r in runs], indent=1))
    (OUTPUT / f"{name}.md").write_text(table + "\n")
    return OUTPUT / f"{name}.json"


def finish(name: str, results: dict, started: float, plot: Callable[[dict], None]) -> Path:
    """Time the run, write ``results`` to experiments/output/NAME.json, plot, and say so."""
    results["seconds"] = time.perf_counter() - started
    OUTPUT.mkdir(parents=True, exist_ok=True)
    path = OUTPUT / f"{name}.json"
    path.write_text(json.dumps(results, indent=1))
    plot(results)
    print(f"\n{results['seconds']:.0f} s; results in {path}")
    return path


def call(job: tuple[Callable, object]):
    """``function(argument)`` for a job (function, argument) of a process pool."""
    function, argument = job
    return function(argument)


def load_runs(name: str) -> list[Run]:
    """The runs an experiment saved under experiments/output (none if it has not run)."""
    path = OUTPUT / f"{name}.json"
    if not path.exists():
        return []
    return [Run(**fields) for fields in json.loads(path.read_text())]


def pyplot():
    """matplotlib's pyplot with a file-only backend, or None when it is not installed."""
    try:
        import matplotlib
    except ImportError:
        print(
            "matplotlib is not installed: no plot (pip install -e '.[experiments]')",
            file=sys.stderr,
        )
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
