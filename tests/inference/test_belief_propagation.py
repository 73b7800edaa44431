"""Sum- and max-product message passing against the brute-force joint."""

from __future__ import annotations

import numpy as np
import pytest
from brute_force import marginal, random_model

from dpgm.inference import MessagePlan

SEEDS = range(12)


@pytest.mark.parametrize("zeros", [0.0, 0.3])
@pytest.mark.parametrize("seed", SEEDS)
def test_clique_marginals_and_log_partition(seed, zeros):
    domain, _, model, p, log_z = random_model(seed, zeros)
    cal = model.calibrate()
    assert cal.log_partition == pytest.approx(log_z, abs=1e-9)
    assert model.log_partition == pytest.approx(log_z, abs=1e-9)
    for clique, belief, counts in zip(
        model.tree.cliques, cal.log_marginals(), model.clique_marginals(), strict=True
    ):
        expected = marginal(domain, p, clique)
        np.testing.assert_allclose(np.exp(belief), expected, atol=1e-12)
        np.testing.assert_allclose(counts, expected * model.total, atol=1e-12)
        # every belief is unnormalised by the same Z
        np.testing.assert_allclose(np.exp(belief + cal.log_partition).sum(), np.exp(log_z))


@pytest.mark.parametrize("zeros", [0.0, 0.3])
@pytest.mark.parametrize("seed", SEEDS)
def test_max_product_gives_max_marginals(seed, zeros):
    domain, potentials, model, p, log_z = random_model(seed, zeros)
    cal = model.plan.calibrate(model.clique_log_potentials(), "max")
    with np.errstate(divide="ignore"):
        log_joint = np.log(p) + log_z
    assert cal.log_partition == pytest.approx(log_joint.max(), abs=1e-9)
    for clique, belief in zip(model.tree.cliques, cal.log_beliefs, strict=True):
        axes = tuple(i for i, a in enumerate(domain.attrs) if a not in clique)
        expected = log_joint.max(axis=axes)
        np.testing.assert_allclose(belief, expected, atol=1e-9)


def test_message_plan_shapes():
    domain, _, model, _, _ = random_model(0)
    plan = MessagePlan(model.tree)
    for i, p in enumerate(model.tree.parent):
        if p < 0:
            assert plan.up_axes[i] == () and plan.down_axes[i] == ()
            continue
        sep = set(model.tree.separator(i))
        assert len(plan.up_shape[i]) == len(model.tree.cliques[p])
        assert int(np.prod(plan.up_shape[i])) == domain.size(sep)
        assert int(np.prod(plan.down_shape[i])) == domain.size(sep)


@pytest.mark.parametrize("zero_in", ["ab", "bc"])
def test_minus_inf_message_branch(zero_in):
    """A separator value of probability 0 in one subtree makes a message -inf there; the
    downward pass must then rebuild the parent's other inputs instead of subtracting."""
    from dpgm import Domain, MarkovRandomField

    domain = Domain(["a", "b", "c"], [2, 2, 2])
    ab = np.log(np.array([[1.0, 5.0], [2.0, 7.0]]))
    bc = np.log(np.array([[1.0, 2.0], [3.0, 4.0]]))
    with np.errstate(divide="ignore"):
        if zero_in == "ab":
            ab[:, 1] = -np.inf  # b is never 1
        else:
            bc[1, :] = -np.inf
    model = MarkovRandomField(domain, {("a", "b"): ab, ("b", "c"): bc})
    cal = model.calibrate()
    if zero_in == "bc":  # (a, b) is the root here: the child's upward message has a -inf
        assert model.tree.cliques[model.tree.order[0]] == ("a", "b")
        assert any(m is not None and np.isneginf(m).any() for m in cal.upward)
    # only b = 0 is possible: p(a, c) = p(a | b=0) p(c | b=0) = [1/3, 2/3] x [1/3, 2/3]
    np.testing.assert_allclose(model.marginal(["b"]), [1.0, 0.0])
    np.testing.assert_allclose(model.marginal(["c"]), [1 / 3, 2 / 3])
    np.testing.assert_allclose(model.marginal(["a", "c"]), np.outer([1, 2], [1, 2]) / 9)
    np.testing.assert_allclose(model.marginal(["a", "b"]), [[1 / 3, 0], [2 / 3, 0]])
    assert model.log_partition == pytest.approx(np.log(3 * 3))


def _assert_linear_matches_log_space(plan: MessagePlan, spread: float, total: float) -> None:
    """Linear-space marginals and log Z at random potentials equal log-space calibration's."""
    rng = np.random.default_rng(int(spread))
    theta = [rng.normal(scale=spread, size=shape) for shape in plan.shapes]
    cal = plan.calibrate(theta, "sum")
    flat, log_z = plan.marginals(plan.pack(theta), total)
    expected = plan.pack([total * np.exp(b) for b in cal.log_marginals()])
    np.testing.assert_allclose(flat, expected, rtol=1e-9, atol=1e-300)
    assert log_z == pytest.approx(cal.log_partition, rel=1e-12)


@pytest.mark.parametrize("spread", [1.0, 5.0, 400.0, 2000.0])
def test_linear_space_marginals_match_log_space(spread):
    """The estimation fast path agrees with log-space calibration, in and past its range."""
    from dpgm import Domain
    from dpgm.inference import JunctionTree

    domain = Domain(["a", "b", "c", "d", "e"], [2, 3, 4, 2, 3])
    cliques = [("a", "b"), ("b", "c"), ("c", "d"), ("b", "e"), ("a", "c")]
    plan = MessagePlan(JunctionTree.build(domain, cliques))
    _assert_linear_matches_log_space(plan, spread, 7.0)


@pytest.mark.parametrize("spread", [1.0, 30.0, 2000.0])
def test_linear_space_marginals_on_a_star(spread):
    """A clique with many children (AIM's trees): the downward pass that divides the
    parent's belief by one child's message agrees with log-space calibration."""
    from dpgm import Domain
    from dpgm.inference import JunctionTree

    domain = Domain(["x", "y", "z", "a", "b", "c", "d", "e"], [3, 2, 4, 2, 3, 2, 5, 2])
    cliques = [("x", "y", "z"), ("x", "a"), ("y", "b"), ("z", "c"), ("x", "d"), ("y", "e")]
    tree = JunctionTree.build(domain, cliques)
    assert max(len(children) for children in tree.children) > 2
    _assert_linear_matches_log_space(MessagePlan(tree), spread, 3.0)


def test_linear_space_marginals_fall_back_when_messages_underflow_together():
    """Each clique's range is inside LINEAR_RANGE, but the two children's messages peak on
    different values of x, so their product underflows on every cell of the root (found
    by naive MLE on a noisy Erdős–Rényi model: log of zero)."""
    from dpgm import Domain
    from dpgm.inference import JunctionTree

    domain = Domain(["x", "a", "b", "c"], [3, 2, 2, 2])
    tree = JunctionTree.build(domain, [("x", "a"), ("x", "b"), ("x", "c")])
    assert max(len(children) for children in tree.children) >= 2
    plan = MessagePlan(tree)
    theta = []
    for k, shape in enumerate(plan.shapes):
        table = np.full(shape, -590.0)
        table[k] = 0.0  # clique k peaks at x = k
        theta.append(table)
    cal = plan.calibrate(theta, "sum")
    flat, log_z = plan.marginals(plan.pack(theta), 2.0)
    np.testing.assert_allclose(flat, plan.pack([2.0 * np.exp(b) for b in cal.log_marginals()]),
                               rtol=1e-9, atol=1e-300)
    assert log_z == pytest.approx(cal.log_partition, rel=1e-12)
