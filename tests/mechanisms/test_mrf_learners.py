"""The MRF learners as mechanisms (issue 25, item 2): the same fit as the functions they
wrap, a native rho, and models that carry their ledger whichever way they were fitted."""

from __future__ import annotations

import numpy as np
import pytest

import dpgm
from dpgm import Domain
from dpgm.errors import DomainError, PrivacyParameterError
from dpgm.mechanisms import LEARNERS, MRF_LEARNERS, IsingLearner, PairwiseLearner
from dpgm.models import IsingModel
from dpgm.mrf import learn_ising, learn_pairwise

pytestmark = pytest.mark.filterwarnings("ignore::dpgm.errors.SeedWarning")

BINARY = Domain(["a", "b", "c"], [2, 2, 2])


@pytest.fixture(scope="module")
def spins():
    model = IsingModel(np.array([[0, 0.6, 0], [0.6, 0, -0.4], [0, -0.4, 0]]),
                       names=list(BINARY.attrs))
    return model.sample(3000, rng=0)


def test_one_registry_holds_every_learner_with_its_kind():
    assert set(MRF_LEARNERS) == {"ising", "pairwise", "twise", "structure"}
    assert {cls.kind for cls in LEARNERS.values()} == {"synthesizer", "bn", "mrf"}
    from dpgm.mechanisms import BN_LEARNERS, REGISTRY

    assert all(cls.kind == "bn" for cls in BN_LEARNERS.values())
    assert all(cls.kind == "synthesizer" for cls in REGISTRY.values())
    assert all(LEARNERS[name] is cls for name, cls in MRF_LEARNERS.items())


def test_the_mechanism_fits_what_the_function_fits(spins):
    learner = IsingLearner(rho=0.5, width=1.5, steps=25)
    model = learner.fit(spins, rng=7)
    estimate = learn_ising(spins, 0.5, 1.5, steps=25, rng=7)
    np.testing.assert_array_equal(model.A, estimate.model.A)
    assert learner.budget.to_json()["entries"] == estimate.budget.to_json()["entries"]
    pairwise = PairwiseLearner(rho=0.5, width=1.5, steps=25).fit(spins, rng=7)
    np.testing.assert_array_equal(pairwise.couplings,
                                  learn_pairwise(spins, 0.5, 1.5, steps=25, rng=7).model.couplings)


def test_epsilon_and_delta_are_converted_to_rho(spins):
    from dpgm.privacy import cdp_rho

    learner = IsingLearner(1.0, 1e-9, width=1.5, steps=10)
    learner.fit(spins, rng=0)
    assert learner.budget.total == pytest.approx(cdp_rho(1.0, 1e-9))
    assert learner.budget.spent_epsilon_delta()[0] == pytest.approx(1.0)


def test_rho_and_epsilon_together_are_refused():
    with pytest.raises(PrivacyParameterError, match="epsilon .* or rho"):
        IsingLearner(1.0, rho=0.5, width=1.5)
    with pytest.raises(PrivacyParameterError, match="epsilon"):
        IsingLearner(width=1.5)


def test_a_domain_the_model_cannot_hold_is_refused_before_reading():
    from mechanism_helpers import PublicOnly

    with pytest.raises(DomainError, match="binary"):
        IsingLearner(rho=1.0, width=1.5).fit(PublicOnly(Domain(["a", "b"], [2, 3])), rng=0)
    with pytest.raises(DomainError, match="same number of values"):
        PairwiseLearner(rho=1.0, width=1.5).fit(PublicOnly(Domain(["a", "b"], [2, 3])), rng=0)


def test_the_functions_models_carry_their_ledger_into_a_file(spins, tmp_path):
    estimate = learn_ising(spins, 0.5, 1.5, steps=10, rng=1)
    release = estimate.model.release
    assert release.mechanism == "learn_ising" and release.seeded
    assert release.ledger == estimate.budget.to_json()
    estimate.model.save(tmp_path / "ising.dpgm")
    loaded = dpgm.load(tmp_path / "ising.dpgm")
    assert loaded.release == release
    np.testing.assert_array_equal(loaded.A, estimate.model.A)
    assert learn_ising(spins, None, 1.5, steps=10).model.release is None  # not private


def test_fit_cgm_keeps_the_ledger_on_its_model():
    from mechanism_helpers import sample_data

    data = sample_data(Domain(["a", "b", "c"], [2, 3, 2]), 2000, seed=1)
    model = dpgm.fit_cgm(data, [("a", "b"), ("b", "c")], epsilon=1.0, method="naive", rng=0)
    assert model.release.mechanism == "CGM"
    assert model.release.ledger["spent"]["epsilon"] == pytest.approx(1.0)


@pytest.mark.parametrize("learn", [learn_ising, learn_pairwise])
def test_a_model_stands_for_the_noisy_count_it_measured(spins, learn):
    """T set from a noisy count: the count is released, so the model's total is it (the
    default number of synthetic records); with T given nothing was counted: total 1."""
    counted = learn(spins, 50.0, 1.5, rng=3).model
    assert counted.total == pytest.approx(len(spins), abs=60)  # rho 0.5 on the count
    assert len(counted.synthetic_data(rng=0)) == round(counted.total)
    assert learn(spins, 0.5, 1.5, steps=10, rng=3).model.total == 1.0


def test_the_t_wise_model_scales_the_count_of_its_part_to_the_whole(spins):
    from dpgm.mrf import learn_twise

    for goal in ("l1", "linf"):
        model = learn_twise(spins, 50.0, 1.5, 2, goal=goal, rng=3).model
        assert model.total == pytest.approx(len(spins), rel=0.1)
