"""One library answering one network's queries in a fresh process, for ``bn_queries.py``.

Called as ``python _bn_child.py SPEC`` with SPEC a JSON object: ``library`` ("dpgm" or
"pyagrum"), ``path`` (the BIF file), ``repeat``, and the queries in state names:
``posteriors`` (evidence sets), ``conditional`` ([variables, evidence] pairs) and
``mpe`` (evidence sets). Prints one result line (``_common.child_report``): the best of
``repeat`` wall-clock seconds for each part, and the answers of the last run.

What is timed, for both libraries alike:
- ``load``: reading the BIF file into the library's network object;
- ``posteriors``: making an inference object from the loaded network (dpgm: a copy with
  nothing cached, so that its junction tree is compiled inside the timing; pyAgrum: one
  ``LazyPropagation``), then for each evidence set the posterior of every unobserved
  variable as a NumPy array (pyAgrum: ``setEvidence``, ``makeInference``, ``posterior``);
- ``conditional``: the same from a fresh object, for each query ``P(X | e)`` of one or two
  variables (pyAgrum: the evidence set and X made its only target, so that it prunes);
- ``mpe``: the most probable state of every unobserved variable, per evidence set
  (pyAgrum: ``LazyPropagation.mpe``; where it raises, the answer is None).
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace

import numpy as np
from _common import best_of, child_report


def run_dpgm(spec: dict) -> dict:
    from dpgm.io import read_bif

    load, network = best_of(spec["repeat"], lambda: read_bif(spec["path"]))

    def posteriors():
        fresh = replace(network)  # a copy with nothing compiled or cached
        return [{v: s.to_numpy() for v, s in fresh.posteriors(e).items()}
                for e in spec["posteriors"]]

    def conditional():
        fresh = replace(network)
        return [fresh.query(v, e).to_numpy() for v, e in spec["conditional"]]

    def mpe():
        fresh = replace(network)
        return [fresh.map_query(evidence=e) for e in spec["mpe"]]

    return _timed(spec, load, posteriors, conditional, mpe)


def run_pyagrum(spec: dict) -> dict:
    import pyagrum as gum
    from bn_queries import load_exact

    from dpgm.io import read_bif

    load, _ = best_of(spec["repeat"], lambda: gum.loadBN(spec["agrum_path"]))
    # the answers come from dpgm's CPDs: pyAgrum's reader keeps single precision, and
    # the files round some CPD rows (Alarm's sum to 1 ± 1e-7), which dpgm normalises
    network = answering = load_exact(spec["agrum_path"], read_bif(spec["path"]))
    names = list(network.names())

    def posteriors():
        engine = gum.LazyPropagation(network)
        out = []
        for evidence in spec["posteriors"]:
            engine.setEvidence(evidence)
            engine.makeInference()
            out.append({v: engine.posterior(v).toarray() for v in names if v not in evidence})
        return out

    def conditional():
        engine = gum.LazyPropagation(network)
        out = []
        for variables, evidence in spec["conditional"]:
            engine.eraseAllTargets()
            engine.setEvidence(evidence)
            if len(variables) == 1:
                engine.addTarget(variables[0])
                engine.makeInference()
                out.append(engine.posterior(variables[0]).toarray())
                continue
            engine.addJointTarget(set(variables))
            engine.makeInference()
            table = engine.jointPosterior(set(variables))
            # toarray's axes run over the tensor's variables in reverse
            axes = list(reversed(table.names))
            out.append(np.transpose(table.toarray(), [axes.index(v) for v in variables]))
        return out

    def mpe():
        engine = gum.LazyPropagation(network)
        out = []
        for evidence in spec["mpe"]:
            engine.setEvidence(evidence)
            try:
                best = engine.mpe()
            except gum.GumException:  # pyAgrum 3.3.1: "Empty tensor" where a root is observed
                out.append(None)
                engine = gum.LazyPropagation(answering)  # the failed one stays broken
                continue
            out.append({best.variable(i).name(): best.variable(i).label(best.val(i))
                        for i in range(best.nbrDim())})
        return out

    result = _timed(spec, load, posteriors, conditional, mpe)
    result["threads"] = gum.LazyPropagation(network).getNumberOfThreads()
    result["version"] = gum.__version__
    return result


def _timed(spec, load, posteriors, conditional, mpe) -> dict:
    result = {"load": load}
    for name, work in [("posteriors", posteriors), ("conditional", conditional), ("mpe", mpe)]:
        try:
            seconds, answers = best_of(spec["repeat"], work)
        except Exception as error:  # noqa: BLE001 (pyAgrum raises its bad_alloc as Exception)
            result[name] = None
            result[f"{name}_error"] = f"{type(error).__name__}: {error}"[:200]
            continue
        result[name] = seconds
        if name == "posteriors":
            answers = [{v: a.tolist() for v, a in found.items()} for found in answers]
        elif name == "conditional":
            answers = [a.ravel().tolist() for a in answers]
        result[f"{name}_answers"] = answers
    return result


def main() -> None:
    spec = json.loads(sys.argv[1])
    run = run_dpgm if spec["library"] == "dpgm" else run_pyagrum
    child_report(run(spec))


if __name__ == "__main__":
    main()
