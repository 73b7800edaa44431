"""The architecture's arrows, checked on every import in the package.

data/schema -> privacy (budget spent here) -> estimation (post-processing) -> models ->
queries and synthetic data. A module may import the layers below its own, and modules of
its own package; two packages on one layer (privacy and inference) stay independent.
Function-level imports count too: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "dpgm"

#: layer of each top-level module or package of dpgm, lowest first
LAYERS = {
    "errors": 0,
    "_version": 0,
    "_lazy": 0,
    "_refit": 0,  # estimators by name: the models layer re-estimates without importing them
    "validation": 1,
    "random": 1,
    "files": 1,
    "memory": 1,
    "progress": 1,
    "domain": 2,
    "dataset": 3,
    "engines": 3.5,  # counting (and encoding) the records where they are, below the privacy layer
    "constraints": 3,
    "factor": 3,
    "measurement": 3,
    "workload": 3,
    "residuals": 3.1,  # the residual decomposition of marginals: public linear algebra
    "privacy": 4,
    "inference": 4,
    "schema": 3.2,  # the public description of a raw table: the data layer
    "models": 5,  # every model class, and the protocol they implement
    "model": 5.5,  # deprecated alias of models.markov_random_field
    "estimation": 6,
    "mechanisms": 7,
    "evaluation": 7,
    "discover": 7,
    "cgm": 6.5,  # learners built on estimation, used by the mechanisms
    "mrf": 6.5,  # learners of Ising and pairwise models on the privacy layer
    "bn": 6.5,  # a Bayesian network's structure, CPDs and budget allocation (post-processing)
    "io": 7,
    "datasets": 7,
    "report": 8,
    "cli": 9,
    "__main__": 10,
    "__init__": 10,
}


def _unit(module: str) -> str:
    """``dpgm.privacy.measure`` -> ``privacy``; ``dpgm`` -> ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _modules() -> list[tuple[str, Path]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found.append((".".join(p for p in parts if p != "__init__"), path))
    return found


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("dpgm"):
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names if a.name.startswith("dpgm"))
    return names


@pytest.mark.parametrize(("module", "path"), _modules(), ids=[m for m, _ in _modules()])
def test_imports_point_down_the_layers(module, path):
    unit = _unit(module) if module != "dpgm" else "__init__"
    assert unit in LAYERS, f"{module}: add its layer to LAYERS"
    for imported in _imports(path):
        target = _unit(imported) if imported != "dpgm" else "__init__"
        if target == unit:
            continue
        assert LAYERS[target] < LAYERS[unit], f"{module} imports {imported}, a layer at or above"


def test_the_privacy_layer_does_not_import_estimation_or_inference():
    for module, path in _modules():
        if _unit(module) == "privacy":
            higher = {"estimation", "inference", "model", "models"}
            assert not any(_unit(i) in higher for i in _imports(path))
