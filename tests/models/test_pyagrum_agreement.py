"""dpgm's posteriors against pyAgrum's LazyPropagation on Alarm, Hailfinder, Win95pts and
Hepar2 (1e-9).

pyAgrum is not a test dependency: its answers (5 evidence sets per network, the
posterior of every unobserved variable) are recorded in ``data/pyagrum_answers.json`` by
``benchmarks/bn_record_pyagrum.py`` and checked on every run.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from bn_helpers import load

RECORDED = json.loads((Path(__file__).parent / "data" / "pyagrum_answers.json").read_text())


@pytest.mark.parametrize("name", sorted(RECORDED["networks"]))
def test_posteriors_equal_pyagrums_within_1e_9(name):
    network = replace(load(name))  # a copy: the shared network's tree stays uncompiled
    for case in RECORDED["networks"][name]:
        found = network.posteriors(case["evidence"])
        assert set(found) == set(case["posteriors"])
        for variable, expected in case["posteriors"].items():
            np.testing.assert_allclose(found[variable].to_numpy(), expected, rtol=0,
                                       atol=1e-9, err_msg=f"{name}: {variable}")
        asked = sorted(case["posteriors"])[:3]  # pruned to a few: the same answers
        for variable, series in network.posteriors(case["evidence"], asked).items():
            np.testing.assert_allclose(series.to_numpy(), case["posteriors"][variable],
                                       rtol=0, atol=1e-9)
