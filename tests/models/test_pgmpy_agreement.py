"""dpgm's answers against pgmpy's VariableElimination on Asia, Sachs, Child and Alarm.

pgmpy is not a test dependency: its answers to fixed queries are recorded in
``data/pgmpy_answers.json`` by ``benchmarks/bn_record_pgmpy.py`` and checked on every
run; where pgmpy is installed (the ``bench`` extra), dpgm's BIF is also read by pgmpy and
its CPDs compared.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from bn_helpers import NETWORKS, load

from dpgm.io import to_bif

RECORDED = json.loads((Path(__file__).parent / "data" / "pgmpy_answers.json").read_text())


@pytest.mark.parametrize("name", NETWORKS)
def test_query_answers_equal_pgmpy_within_1e_9(name):
    network = load(name)
    for query in RECORDED["networks"][name]["queries"]:
        ours = network.probabilities(query["variables"], query["evidence"])
        np.testing.assert_allclose(ours.ravel(), query["probabilities"], rtol=0, atol=1e-9)


@pytest.mark.parametrize("name", NETWORKS)
def test_map_answers_identical_to_pgmpy(name):
    network = load(name)
    for query in RECORDED["networks"][name]["map"]:
        assert network.map_query(query["variables"], query["evidence"]) == query["assignment"]


@pytest.mark.parametrize("name", NETWORKS)
def test_pgmpy_reads_dpgms_bif_with_identical_cpds(name):
    readwrite = pytest.importorskip("pgmpy.readwrite")
    network = load(name)
    model = readwrite.BIFReader(string=to_bif(network)).get_model()
    for cpd in model.get_cpds():
        v = cpd.variable
        assert list(cpd.state_names[v]) == list(network.states[v])
        parents = list(cpd.variables[1:])
        assert sorted(parents) == sorted(network.parents[v])
        ours = network.cpds[v]
        order = [network.parents[v].index(p) for p in parents] + [ours.ndim - 1]
        for p in parents:
            assert list(cpd.state_names[p]) == list(network.states[p])
        expected = np.transpose(ours, order).reshape(-1, ours.shape[-1]).T
        assert np.array_equal(cpd.get_values(), expected)  # bit for bit
