"""Private parameter learning of pairwise models over k values (Zhang et al. 2020, Alg. 3;
the note's §2.3 and D6).

For every attribute i and pair of its values u ≠ v, the records with z_i ∈ {u, v} give a
logistic regression of [z_i = u] on the one-hot codes of the other attributes and a bias,
over the L1 ball of radius 2λk (the target w*(j, ·) = W_ij(u, ·) − W_ij(v, ·) lies in it).
Its weights, centred per attribute (Eq. 1), estimate W_ij(u, ·) − W_ij(v, ·) of the
double-centred model; averaging over v (Σ_v W_ij(v, b) = 0) gives Ŵ_ij(u, ·). Ŵ is then
symmetrised, (Ŵ_ij + Ŵ_jiᵀ)/2, and θ̂_i(u) is the average of the bias differences.

Budget modes (ρ-zCDP, add/remove neighbours; ``count_share`` as in the Ising learner):

* ``"tight"`` (default, the note's D6): only u < v is fitted, w_{v,u} = −w_{u,v} (the loss is
  the same under (y, w) → (−y, −w)); a record with z_i = a takes part in the k − 1 pairs
  holding a, so each regression gets ρ_fit/((k − 1)·p) and the fit costs ρ_fit (parallel
  composition).
* ``"paper"``: every ordered pair, ρ' = ρ_fit/(k²·p) each, as Alg. 3 prints. A record takes
  part in 2(k − 1) regressions per attribute, so the fit costs 2(k − 1)·ρ_fit/k², and that
  is what is charged (the rest of ρ_fit is not spent: the paper's split is conservative).

Labels such as D6, and the note's § numbers, refer to the implementation note
``docs/notes/mrf.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import permutations

import numpy as np

from dpgm.dataset import Dataset, require_records
from dpgm.errors import DataError
from dpgm.models.pairwise import PairwiseModel
from dpgm.mrf.regressions import fit_regressions, with_release
from dpgm.privacy.budget import PrivacyBudget
from dpgm.random import RngLike
from dpgm.validation import one_of, positive

MODES = ("tight", "paper")


@dataclass
class PairwiseEstimate:
    """What :func:`learn_pairwise` learned: the symmetrised model, the estimates
    Ŵ_ij of each attribute i's regressions ((p, p, k, k), not symmetric), the ledger and
    the steps T."""

    model: PairwiseModel
    couplings: np.ndarray
    budget: PrivacyBudget | None
    steps: int


def value_pairs(values: int, mode: str) -> list[tuple[int, int]]:
    """The (u, v) fitted at each attribute: u < v (``"tight"``) or every u ≠ v."""
    if mode == "tight":
        return [(u, v) for u in range(values) for v in range(u + 1, values)]
    return list(permutations(range(values), 2))


def learn_pairwise(
    data: Dataset,
    rho: float | None,
    width: float,
    *,
    mode: str = "tight",
    rng: RngLike = None,
    steps: int | None = None,
    count_share: float = 0.01,
    step_constant: float = 0.5,
    selection: str = "em",
    budget: PrivacyBudget | None = None,
) -> PairwiseEstimate:
    """A pairwise model of ``data`` (every attribute with the same k ≥ 2 values), ρ-zCDP.

    ``width`` is a public upper bound λ on the double-centred model's width; ``mode`` the
    budget split (see the module); the other arguments as in
    :func:`dpgm.mrf.learn_ising` (``rho=None``: non-private, ``steps`` required).
    """
    data = require_records(data)
    sizes = set(data.domain.shape)
    if len(sizes) != 1:
        raise DataError("the pairwise learner needs attributes with one number of values")
    (k,) = sizes
    p = len(data.domain)
    mode = one_of("mode", mode, MODES)
    pairs = value_pairs(k, mode)
    regressions = [(i, u, v) for i in range(p) for u, v in pairs]
    weights, budget, steps, records = fit_regressions(
        data, regressions, radius=2.0 * k * positive("width", width), rho=rho, steps=steps,
        rng=rng, budget=budget, count_share=count_share, step_constant=step_constant,
        selection=selection, features="onehot", label="pairwise",
        spent_share=1.0 if mode == "tight" else 2.0 * (k - 1) / k**2)
    couplings, fields = read_out(weights, p, k, pairs)
    symmetric = (couplings + couplings.transpose(1, 0, 3, 2)) / 2.0
    model = PairwiseModel(symmetric, fields, names=list(data.domain.attrs))
    return with_release(PairwiseEstimate(model, couplings, budget, steps), "learn_pairwise",
                        rng, records)


def centre(weights: np.ndarray, p: int, k: int) -> np.ndarray:
    """Eq. (1): each attribute's k one-hot weights minus their mean, the means added to
    the bias; ⟨U, x⟩ = ⟨w, x⟩ for every one-hot x. ``weights``: (p·k + 1) × regressions."""
    blocks = weights[:-1].reshape(p, k, -1)
    means = blocks.mean(axis=1, keepdims=True)
    bias = weights[-1] + means.sum(axis=(0, 1))
    return np.concatenate([(blocks - means).reshape(p * k, -1), bias[None]], axis=0)


def read_out(weights: np.ndarray, p: int, k: int, pairs: list[tuple[int, int]]
             ) -> tuple[np.ndarray, np.ndarray]:
    """Ŵ_ij(u, ·) = (1/k)·Σ_v U_{u,v}(j, ·) per attribute i (Alg. 3, steps 6–8; U_{u,u} = 0,
    U_{v,u} = −U_{u,v} for pairs fitted one way only), and θ̂_i(u), the same average of the
    bias; ``weights`` as fitted, the regressions attribute by attribute, ``pairs`` each."""
    centred = centre(weights, p, k).reshape(p * k + 1, p, len(pairs))
    differences = np.zeros((p, k, k, p * k + 1))  # [i, u, v]: U_{u,v} of attribute i
    for c, (u, v) in enumerate(pairs):
        differences[:, u, v] = centred[:, :, c].T
        if (v, u) not in pairs:
            differences[:, v, u] = -centred[:, :, c].T
    averaged = differences.sum(axis=2) / k  # [i, u, column]
    couplings = averaged[:, :, :-1].reshape(p, k, p, k).transpose(0, 2, 1, 3)  # [i, j, u, b]
    couplings[np.arange(p), np.arange(p)] = 0.0
    return couplings, averaged[:, :, -1]
