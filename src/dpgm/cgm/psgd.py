"""Private SGD ("PSGD", Abadi et al. 2016): the general-purpose baseline of Bernstein et al.

Stochastic gradient descent on the mean negative log-likelihood of a log-linear model on
the given cliques, θ_{t+1} = θ_t − η·g̃_t, where g̃_t is the noisy sum of clipped
per-record gradients of one Poisson lot (:class:`dpgm.privacy.sgd.NoisyGradientSums`,
which holds the data and the privacy accounting) divided by the expected lot size qN.
The model marginals each step needs come from exact belief propagation. Everything here
but the gradient sums is post-processing; the last iterate is returned (the note's
recommendation; the paper does not say).

"The note" is the implementation note ``docs/notes/cgm.md``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dpgm.cgm.naive import Tying, check_tying, clique_oracle, model_of
from dpgm.domain import Domain
from dpgm.models.markov_random_field import MarkovRandomField
from dpgm.privacy.sgd import NoisyGradientSums
from dpgm.validation import positive


def dp_sgd(
    domain: Domain,
    gradients: NoisyGradientSums,
    cliques: list[tuple[str, ...]],
    total: float,
    *,
    learning_rate: float = 1.0,
    callback: Callable[[int], object] | None = None,
    tying: Tying | None = None,
) -> MarkovRandomField:
    """The model after spending every step of ``gradients`` on SGD from θ = 0.

    ``cliques`` (each in domain order) are the model's and the gradients' layout;
    ``total`` is N (public, or a noisy estimate), which with the sampling rate q sets the
    expected lot size qN that each noisy sum is divided by. ``callback(t)`` after step t.
    ``tying`` M (θ = M·w, as in :func:`~dpgm.cgm.naive.naive_mle`) makes the steps on w:
    the noisy sum g̃ of the per-clique gradients becomes Mᵀg̃ (post-processing of g̃).
    """
    total = positive("total", total)
    learning_rate = positive("learning_rate", learning_rate)
    oracle = clique_oracle(domain, cliques, 1.0)  # probabilities: μ(θ)
    lot = gradients.sampling_rate * total
    size = oracle.loss.size
    weights = np.zeros(size if tying is None else check_tying(tying, size).shape[1])
    for step in range(gradients.remaining):
        theta = weights if tying is None else tying @ weights
        mu, _ = oracle.evaluate(oracle.lift(theta))
        noisy = gradients.step(mu)
        weights -= learning_rate * (noisy if tying is None else tying.T @ noisy) / lot
        if callback is not None:
            callback(step + 1)
    return model_of(oracle, weights if tying is None else tying @ weights, total)
