"""The non-private L1 baseline, and every learner's reproducibility from a seed (the
note's AC7), t-wise's non-private limit (AC3) and refusals of bad bounds (AC9)."""

from __future__ import annotations

import numpy as np
import pytest
from mechanism_helpers import PublicOnly

from dpgm import Domain
from dpgm.errors import ParameterError
from dpgm.models import IsingModel, PairwiseModel, TwiseModel
from dpgm.mrf import learn_ising, learn_pairwise, learn_structure, learn_twise

pytestmark = pytest.mark.filterwarnings("ignore::dpgm.errors.SeedWarning")


@pytest.fixture(scope="module")
def chain():
    a = np.zeros((5, 5))
    for i in range(4):
        a[i, i + 1] = a[i + 1, i] = 0.4
    model = IsingModel(a, names=[f"x{i}" for i in range(5)])
    return model, model.sample(20_000, rng=0)


def test_the_l1_logistic_baseline_recovers_the_chain(chain):
    pytest.importorskip("sklearn")
    from dpgm.mrf.baseline import l1_logistic_ising

    model, data = chain
    assert np.abs(l1_logistic_ising(data).A - model.A).max() < 0.05


def ledger(budget):
    return [(e.label, e.epsilon, e.rho, e.delta) for e in budget.ledger]


def test_the_same_seed_gives_the_same_model_and_ledger(chain):
    _, data = chain
    pairwise = PairwiseModel(np.zeros((3, 3, 3, 3))).sample(3000, rng=1)
    runs = [
        lambda: learn_ising(data, 0.5, 1.0, rng=3),
        lambda: learn_pairwise(pairwise, 0.5, 1.0, rng=3),
        lambda: learn_twise(data, 0.5, 1.0, 3, rng=3),
        lambda: learn_twise(data, 0.5, 1.0, 3, goal="linf", rng=3, rounds=5),
    ]
    for run in runs:
        first, again = run(), run()
        model = first.model
        if hasattr(model, "coefficients"):
            assert model.coefficients == again.model.coefficients
        else:
            assert np.array_equal(getattr(model, "A", getattr(model, "couplings", None)),
                                  getattr(again.model, "A", getattr(again.model,
                                                                    "couplings", None)))
        assert ledger(first.budget) == ledger(again.budget)
    first = learn_structure(data, 1.0, 1e-6, 1.0, 0.4, method="histogram", rng=4)
    again = learn_structure(data, 1.0, 1e-6, 1.0, 0.4, method="histogram", rng=4)
    assert first.edges == again.edges and ledger(first.budget) == ledger(again.budget)


def test_with_a_huge_rho_the_twise_learner_is_the_non_private_one():
    model = TwiseModel(4, {(0, 1, 2): 0.3, (2, 3): -0.2})
    data = model.sample(3000, rng=5)
    private = learn_twise(data, 1e12, 1.0, 3, rng=6, steps=40)
    exact = learn_twise(data, None, 1.0, 3, steps=40)
    for key, value in exact.model.coefficients.items():
        assert private.model.coefficients.get(key, 0.0) == pytest.approx(value, abs=1e-12)


@pytest.mark.parametrize("learn", [
    lambda d: learn_ising(d, 1.0, 0.0),
    lambda d: learn_ising(d, 1.0, 1.0, steps=1),
    lambda d: learn_twise(d, 1.0, -1.0, 3),
    lambda d: learn_structure(d, 1.0, 1e-6, 1.0, 0.0),
    lambda d: learn_structure(d, 1.0, 1.5, 1.0, 0.3),
])
def test_bad_bounds_are_refused_before_the_data_are_read(learn):
    with pytest.raises(ParameterError):
        learn(PublicOnly(Domain([f"x{i}" for i in range(3)], [2, 2, 2])))
