"""Private-PGM estimation: fit a graphical model to noisy measurements (Algorithms 1 and 2).

Both algorithms are proximal methods over the marginal polytope whose proximal step is
marginal inference: parameters ``θ`` live on the cliques of an inference engine
(:class:`~dpgm.inference.engine.Engine`: exact belief propagation on a junction tree, or
loopy belief propagation), which turns them into the clique marginals the loss is
measured on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from dpgm.constraints import Forbidden, allowed_cells, check_forbidden
from dpgm.domain import Domain
from dpgm.errors import ModelTooLargeError, ParameterError
from dpgm.estimation.losses import Loss, make_loss
from dpgm.estimation.total import estimate_total
from dpgm.inference.belief_propagation import MessagePlan
from dpgm.inference.engine import Engine
from dpgm.inference.junction_tree import JunctionTree
from dpgm.inference.loopy import LoopyPlan
from dpgm.measurement import MeasuredFit, Measurement
from dpgm.models.markov_random_field import MarkovRandomField
from dpgm.validation import integer, one_of, positive

Callback = Callable[[int, float], object]
METHODS = ("auto", "mirror_descent", "accelerated")
INFERENCE = ("exact", "loopy", "convex")
DEFAULT_MAX_CELLS = 50_000_000  # 400 MB per copy of the parameters
LINE_SEARCH_GROWTH = 1.5  # step growth per iteration: 2 wastes an oracle call on most iterations
IPF_BUDGET_CELLS = 10_000_000  # cliques x tree cells below which fit_targets runs global sweeps


class MarginalOracle:
    """``θ`` on the engine's cliques → the loss's count tables as one flat vector.

    ``engine`` is an inference engine (:class:`~dpgm.inference.engine.Engine`): exact
    message passing on a junction tree (``MessagePlan(tree)``) or a loopy plan.
    Parameters are one flat vector too (the engine's clique tables concatenated, see
    :meth:`~dpgm.inference.engine.Engine.pack`), so that moving between the two layouts
    is a couple of indexing calls whatever the number of cliques: loss cliques that equal
    their holder clique map cell to cell, smaller ones are summed out with ``bincount``.
    """

    def __init__(self, engine: Engine, loss: Loss, total: float):
        self.engine = engine
        self.total = total
        self.loss = loss
        engine = self.engine
        domain = engine.domain
        offsets = engine.offsets
        direct_theta, direct_loss, sub_theta, sub_loss = [], [], [], []
        for k, clique in enumerate(loss.cliques):  # each in domain order, as the engine's
            i = engine.find(clique)
            big = engine.cliques[i]
            cells = np.arange(loss.offsets[k], loss.offsets[k + 1])
            holder = np.arange(offsets[i], offsets[i + 1])
            if clique == big:
                direct_theta.append(holder)
                direct_loss.append(cells)
            else:
                shape = tuple(domain[a] if a in clique else 1 for a in big)
                cells = np.broadcast_to(cells.reshape(shape), engine.shapes[i]).ravel()
                sub_theta.append(holder)
                sub_loss.append(cells)

        def join(parts: list[np.ndarray]) -> np.ndarray:
            return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

        self.direct_theta, self.direct_loss = join(direct_theta), join(direct_loss)
        self.sub_theta, self.sub_loss = join(sub_theta), join(sub_loss)
        self.identity = self.direct_theta.size == offsets[-1] == loss.size and np.array_equal(
            self.direct_theta, self.direct_loss
        )

    @property
    def plan(self) -> Engine:
        """The engine (its earlier name)."""
        return self.engine

    @property
    def tree(self) -> JunctionTree | None:
        """The exact engine's junction tree; None for an approximate engine."""
        return self.engine.tree

    def zeros(self) -> np.ndarray:
        """Parameters of the uniform model (one flat vector)."""
        return np.zeros(int(self.engine.offsets[-1]))

    def __call__(self, theta: np.ndarray) -> np.ndarray:
        return self.evaluate(theta)[0]

    def evaluate(self, theta: np.ndarray) -> tuple[np.ndarray, float]:
        """The loss cliques' count tables (flat) and log Z at ``θ``."""
        tables, log_z = self.engine.marginals(theta, self.total)
        return self._to_loss(tables), log_z

    def _to_loss(self, tables: np.ndarray) -> np.ndarray:
        """The engine's clique tables summed onto the loss cliques (one flat vector)."""
        if self.identity:
            return tables
        flat = np.zeros(self.loss.size)
        if self.direct_theta.size:
            flat[self.direct_loss] = tables[self.direct_theta]
        if self.sub_theta.size:
            flat += np.bincount(
                self.sub_loss, weights=tables[self.sub_theta], minlength=self.loss.size
            )
        return flat

    def lift(self, values: np.ndarray) -> np.ndarray:
        """Parameters given on the loss cliques, summed into their holder cliques."""
        return self.add(self.zeros(), values, 1.0)

    def add(self, theta: np.ndarray, grad: np.ndarray, scale: float) -> np.ndarray:
        """``θ + scale · grad`` with each clique's gradient broadcast into its holder clique."""
        if self.identity:
            return theta + scale * grad
        out = theta.copy()
        if self.direct_theta.size:
            out[self.direct_theta] += scale * grad[self.direct_loss]
        if self.sub_theta.size:
            out += scale * np.bincount(
                self.sub_theta, weights=grad[self.sub_loss], minlength=theta.size
            )
        return out


def fit_targets(oracle: MarginalOracle, sweeps: int = 3) -> list[np.ndarray]:
    """Parameters of a model close to the loss's direct targets, without belief propagation.

    A cheap starting point for both algorithms (free post-processing of the
    measurements). Every junction-tree clique gets a table fitted by iterative
    proportional fitting to the targets (clipped to be positive) of the loss cliques it
    contains; the model is then the product of the root's table and every other
    clique's conditional given its separator (where that keeps θ in the span of the
    measured cliques), which reproduces consistent targets exactly. On small trees two
    sweeps of global proportional fitting (one belief propagation per clique) follow.
    It needs an exact engine: the separators are the junction tree's.
    """
    loss, tree = oracle.loss, oracle.tree
    if tree is None:
        raise ParameterError("fit_targets needs an exact engine (a junction tree)")
    domain = tree.domain
    # targets clipped to be positive, indexed by attribute to find those inside a clique
    targets = [None if t is None else np.maximum(t, 1e-6) for t in loss.targets()]
    by_attr: dict[str, list[int]] = {}
    for k, t in enumerate(targets):
        if t is not None:
            for a in loss.cliques[k]:
                by_attr.setdefault(a, []).append(k)
    tables = [np.zeros(shape) for shape in oracle.engine.shapes]
    for i, clique in enumerate(tree.cliques):
        members = set(clique)
        candidates = sorted({k for a in clique for k in by_attr.get(a, ())})
        inside = [
            (loss.cliques[k], targets[k]) for k in candidates if members.issuperset(loss.cliques[k])
        ]
        if not inside:
            continue
        table = np.ones(domain.project(clique).shape)
        for _ in range(sweeps if len(inside) > 1 else 1):
            for sub, target in inside:
                axes = tuple(k for k, a in enumerate(clique) if a not in sub)
                shape = tuple(domain[a] if a in sub else 1 for a in clique)
                current = table.sum(axis=axes, keepdims=True) if axes else table
                table *= target.reshape(shape) / np.maximum(current, 1e-300)
        log_table = np.log(np.maximum(table, 1e-300))
        # The algorithms only move θ within the span of the measured cliques, so the start
        # must lie in it too, or the estimate is not the maximum-entropy model (Theorem 1).
        # Dividing by the separator's marginal stays in the span only where the separator
        # lies inside a measured clique of this table.
        separator = set(tree.separator(i))
        if tree.parent[i] >= 0 and any(separator <= set(sub) for sub, _ in inside):
            up = tuple(k for k, a in enumerate(clique) if a not in separator)
            log_table -= np.log(np.maximum(table.sum(axis=up, keepdims=True), 1e-300))
        tables[i] = log_table
    theta = oracle.engine.pack(tables)
    # where belief propagation is cheap, global sweeps reconcile overlapping cliques
    if len(targets) * tree.size() <= IPF_BUDGET_CELLS:
        for _ in range(2):
            for k, target in enumerate(targets):
                if target is None:
                    continue
                mu = oracle(theta)[loss.slices[k]]
                update = np.zeros(loss.size)
                update[loss.slices[k]] = np.log(target.ravel() / np.maximum(mu, 1e-300))
                theta = oracle.add(theta, update, 1.0)
    return theta


def _mix(a: np.ndarray, b: np.ndarray, c: float) -> np.ndarray:
    """``(1 − c)·a + c·b`` with one temporary."""
    out = b * c
    out += (1 - c) * a
    return out


def mirror_descent(
    oracle: MarginalOracle,
    loss: Loss,
    theta: list[np.ndarray],
    iters: int,
    step_size: float | None = None,
    callback: Callback | None = None,
) -> tuple[list[np.ndarray], float]:
    """Algorithm 1: ``θ ← θ − η_t ∇L(μ(θ))``.

    Step sizes: ``step_size`` if given; for a smooth loss an Armijo line search (the step
    grows 1.5x each iteration and halves until the loss falls by half the linear model's
    prediction); for a non-smooth loss (L1), where a line search stalls at kinks, a step
    that first moves any parameter by at most 1 and halves whenever 10 iterations pass
    without a new best loss. The best iterate is returned.
    """
    mu = oracle(theta)
    value, grad = loss(mu)
    best, best_value = theta, value
    improved, patience = 0, 10  # last iteration that improved; halving after this many more
    smooth = loss.lipschitz is not None
    if step_size is not None:
        alpha = step_size
    elif smooth:
        alpha = 1.0 / (loss.lipschitz * oracle.total)
    else:
        alpha = 1.0 / max(float(np.abs(grad).max()), 1e-300)
    for t in range(1, iters + 1):
        if step_size is None and smooth:
            alpha *= LINE_SEARCH_GROWTH  # try a longer step; the search below backs off as needed
            for _ in range(60):
                new_theta = oracle.add(theta, grad, -alpha)
                new_mu = oracle(new_theta)
                new_value, new_grad = loss(new_mu)
                if value - new_value >= 0.5 * float(np.dot(grad, mu - new_mu)):
                    break
                alpha *= 0.5
        else:
            if step_size is None and t - improved > patience:
                alpha *= 0.5  # no progress for a while: the step is too long for the kinks
                improved = t
            step = alpha
            new_theta = oracle.add(theta, grad, -step)
            new_mu = oracle(new_theta)
            new_value, new_grad = loss(new_mu)
        theta, mu, value, grad = new_theta, new_mu, new_value, new_grad
        if value < best_value:
            best, best_value, improved = theta, value, t
        if callback is not None:
            callback(t, best_value)
    return best, best_value


def accelerated(
    oracle: MarginalOracle,
    loss: Loss,
    theta: list[np.ndarray],
    iters: int,
    callback: Callback | None = None,
    adaptive: bool = True,
) -> tuple[list[np.ndarray], float]:
    """Algorithm 2: accelerated dual averaging with prox centre ``theta``.

    The paper's step uses ``K``, the Lipschitz constant of ∇L w.r.t. the ℓ1 norm. The
    worst-case ``K`` is often 10-30x larger than the curvature met in practice, which
    slows the method by that factor. With ``adaptive=True`` the method starts from
    ``K/256`` and checks at every step the inequality the convergence proof rests on: the
    loss's Bregman divergence between the new and the extrapolated marginals is at most
    ``K/2 · ‖Δμ‖₁²`` (the largest clique's ‖Δμ‖₁ standing in, from below, for the
    joint's). Where it fails, ``K`` doubles past the curvature observed and the averaging
    restarts from the current parameters. ``K`` never exceeds the worst-case bound. The
    averaging also restarts whenever the loss goes up, which removes the oscillation
    that otherwise stalls the method near the optimum.
    The returned parameters are those of the oracle call with the lowest loss.
    """
    if loss.lipschitz is None:
        raise ParameterError(
            "the accelerated method needs a smooth loss with a Lipschitz constant; "
            "use method='mirror_descent' for the L1 loss"
        )
    total = oracle.total
    bound = loss.lipschitz
    lipschitz = bound / 256 if adaptive else bound
    centre = current = theta
    nu = mu = oracle(centre)
    gbar = np.zeros_like(mu)
    step = 0  # iterations since the last restart
    value = loss.value(nu)
    best, best_value = current, value  # ν is not monotone: keep the best model seen
    for t in range(1, iters + 1):
        step += 1
        c = 2.0 / (step + 1)
        omega = _mix(mu, nu, c)
        _, grad = loss(omega)
        gbar *= 1 - c
        gbar += c * grad
        proposal = oracle.add(centre, gbar, -step * (step + 1) / (4 * lipschitz * total))
        new_nu = oracle(proposal)
        new_mu = _mix(mu, new_nu, c)
        if adaptive and lipschitz < bound:
            divergence = loss.divergence(new_mu, omega, grad)
            diff = np.abs(new_mu - omega)
            spread = float(np.add.reduceat(diff, loss.offsets[:-1]).max())
            if spread > 0 and divergence > 0.5 * lipschitz * spread**2 * (1 + 1e-9):
                lipschitz = min(bound, 2.0 * max(lipschitz, divergence / (0.5 * spread**2)))
                centre, step = current, 0
                nu = mu = oracle(centre)
                gbar = np.zeros_like(mu)
                if callback is not None:
                    callback(t, best_value)
                continue
        current, nu, mu = proposal, new_nu, new_mu
        previous, value = value, loss.value(nu)
        if value < best_value:
            best, best_value = current, value
        if adaptive and value > previous and step > 1:
            # function-value restart (O'Donoghue & Candès 2015): momentum overshot
            centre, step = current, 0
            mu = nu
            gbar = np.zeros_like(mu)
        if callback is not None:
            callback(t, best_value)
    return best, best_value


def _forbid(oracle: MarginalOracle, theta: np.ndarray, zeros: Sequence[Forbidden]) -> np.ndarray:
    """``θ`` with the forbidden cells at −∞: mirror descent and the accelerated method
    only add finite steps to θ, so those cells keep probability zero throughout."""
    if not zeros:
        return theta
    engine = oracle.engine
    tables = engine.unpack(theta)
    for pattern in zeros:
        i = engine.find(pattern.attrs)
        allowed = allowed_cells(engine.domain, engine.cliques[i], [pattern])
        tables[i] = np.where(allowed, tables[i], -np.inf)
    return engine.pack(tables)


def estimate(
    domain: Domain,
    measurements: Sequence[Measurement],
    *,
    total: float | None = None,
    method: str = "auto",
    loss: str | Loss = "l2",
    iters: int = 1000,
    step_size: float | None = None,
    callback: Callback | None = None,
    warm_start: MarkovRandomField | None = None,
    init: str = "fit",
    cliques: Sequence[Sequence[str]] = (),
    max_cells: int = DEFAULT_MAX_CELLS,
    zeros: Sequence[Forbidden] = (),
    inference: str = "exact",
    weights: Sequence[float] | None = None,
) -> MarkovRandomField:
    """A graphical model whose marginals fit the noisy ``measurements`` (Private-PGM).

    ``method`` is ``"mirror_descent"`` (Algorithm 1, line search unless ``step_size``),
    ``"accelerated"`` (Algorithm 2), or ``"auto"``: accelerated for smooth losses.
    ``loss`` is ``"l2"``, ``"l1"`` or a :class:`~dpgm.estimation.losses.Loss`. With
    ``total=None`` the number of records is estimated from the measurements by
    inverse-variance weighting (App. E.1). Extra ``cliques`` are added to the model;
    ``warm_start`` continues from an earlier model's parameters. Otherwise
    ``init="fit"`` starts from a proportional fit to the measured marginals (clipped at
    zero; free post-processing) and ``init="uniform"`` from the uniform model, as in the
    paper. ``callback(iteration, loss)`` follows every iteration. ``zeros`` are
    structural zeros (:class:`~dpgm.constraints.Forbidden`, public): their cells keep
    probability exactly zero, so the estimate is the best fit supported on the allowed
    cells (the maximum-entropy one among them). ``inference="loopy"`` replaces the
    junction tree by loopy belief propagation (Private-PGM §5.2): for models whose tree
    would exceed ``max_cells``; it starts from the uniform model, and the estimate is
    approximate (:attr:`MarkovRandomField.approximate`): its marginals inside a clique
    come from loopy BP, and exact answers are refused where the tree is too large.
    ``inference="convex"`` does the same with convex counting numbers on the region graph
    closed under intersection (one unique fixed point) and one warm-started message
    sweep per iteration, with mirror descent's step 2/(L·N), L the largest curvature of
    one clique's loss: much faster than Bethe's converged BP on dense graphs, and stable
    where Bethe's steps oscillate (McKenna et al. 2021). An approximate model answers a
    marginal that no clique holds by the maximum-entropy completion of its beliefs
    (:meth:`MarkovRandomField.marginal`); query cliques added with ``cliques`` become
    regions of their own, held to agree with the others on every overlap. ``weights``
    (one positive factor per measurement) scales each measurement's standardised
    residuals in the loss, as if its noise were ``std / weight``; the estimated total and
    the error bars keep the measurements' own stds.
    """
    one_of("method", method, METHODS)
    one_of("init", init, ("fit", "uniform"))
    one_of("inference", inference, INFERENCE)
    iters = integer("iters", iters, least=0)
    measurements = list(measurements)
    weights = _weights(weights, len(measurements))
    objective = make_loss(loss, domain, measurements if weights is None else [
        m if w == 1.0 else Measurement(m.clique, m.values, m.std / w, m.query)
        for m, w in zip(measurements, weights)])
    if total is None:
        given_total = None
        total = estimate_total(measurements)
    else:
        total = given_total = positive("total", total)
    zeros = check_forbidden(domain, zeros)
    model_cliques = list(objective.cliques) + [domain.check(c) for c in cliques]
    model_cliques += [f.attrs for f in zeros]
    if warm_start is not None:
        model_cliques += list(warm_start.tree.cliques)
    if inference != "exact":
        if warm_start is not None:
            raise ParameterError("warm_start needs exact inference (inference='exact')")
        # convex: one warm-started sweep per call, as in McKenna et al. (2021); the messages
        # follow the parameters, and the final model converges them before it answers
        loopy = (LoopyPlan(domain, model_cliques) if inference == "loopy" else
                 LoopyPlan(domain, model_cliques, counting="convex", max_iters=1))
        engine: Engine = loopy
        init = "uniform"  # fit_targets builds on the junction tree's separators
    else:
        tree = JunctionTree.build(domain, model_cliques)
        if tree.size() > max_cells:
            raise ModelTooLargeError(
                f"the junction tree needs {tree.size():,} cells (largest clique "
                f"{tree.max_clique()}), over max_cells={max_cells:,}; measure smaller or "
                "fewer cliques, or estimate approximately with inference='loopy'"
            )
        engine = MessagePlan(tree)
    oracle = MarginalOracle(engine, objective, float(total))
    if warm_start is not None:
        previous = MarkovRandomField(domain, warm_start.potentials, 1.0, engine=engine)
        theta = engine.pack(previous.clique_log_potentials())
    elif init == "fit":
        theta = fit_targets(oracle)
    else:
        theta = oracle.zeros()
    theta = _forbid(oracle, theta, zeros)
    if objective.size == 0 or objective.lipschitz == 0:
        iters = 0  # no measurement constrains the model: the start is the estimate
    block = objective.block_lipschitz
    if inference == "convex" and step_size is None and block:
        # the convex free energy is strongly convex clique by clique, so the step follows
        # the largest curvature of one clique's loss (McKenna et al.'s rule), not the sum
        step_size = 2.0 / (block * float(total))
    if method == "auto":
        method = (
            "mirror_descent"
            if objective.lipschitz is None or step_size is not None
            else "accelerated"
        )
    if iters == 0:
        pass  # the start is the estimate
    elif method == "mirror_descent":
        theta, _ = mirror_descent(oracle, objective, theta, iters, step_size, callback)
    else:
        theta, _ = accelerated(oracle, objective, theta, iters, callback)
    if inference != "exact":
        loopy.max_iters = max(loopy.max_iters, 1000)  # queries get converged messages
    potentials = dict(zip(engine.cliques, engine.unpack(theta)))
    model = MarkovRandomField(domain, potentials, float(total), engine=engine)
    if isinstance(loss, str):  # the settings that estimate it again (error bars)
        model.measured = MeasuredFit(measurements, {
            "method": method, "loss": loss, "iters": iters, "step_size": step_size,
            "inference": inference, "max_cells": int(max_cells), "total": given_total,
            "cliques": [list(c) for c in cliques],
            **({} if weights is None else {"weights": weights})}, zeros)
    return model


def _weights(weights: Sequence[float] | None, count: int) -> list[float] | None:
    """``estimate``'s weights checked: None, or one positive finite number per
    measurement."""
    if weights is None:
        return None
    found = [positive("weights", w) for w in weights]
    if len(found) != count:
        raise ParameterError(f"weights has {len(found)} entries for {count} measurements")
    return found
