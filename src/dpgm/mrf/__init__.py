"""Privately learning Markov random fields (Zhang, Kamath, Kulkarni & Wu 2020).

Nodewise private Frank–Wolfe on the logistic loss: :func:`learn_ising` (Alg. 2);
:func:`learn_pairwise` (Alg. 3); :func:`learn_twise` (Algs. 4–5); :func:`learn_structure`
(Sec. 6: the edge set under (ε, δ)-DP, by a stability release over blocks or the zCDP
route).

Not all of this package is post-processing. The regressions' data access and its
accounting are in :mod:`dpgm.privacy.frank_wolfe`, and what a learner makes of their
selections is post-processing; but three modules read the records themselves:
:mod:`.moments` computes the exact parity sums that score its selections, released only
through the privacy layer's exponential mechanism and Gaussian measurements (each charged
to the budget); :mod:`.twise` splits the records into two random parts (and, without a
budget, computes the non-private reference moments); :mod:`.baseline` is the non-private
L1-logistic baseline (for checks only).
"""

from dpgm.mrf.ising import IsingEstimate, learn_ising
from dpgm.mrf.pairwise import PairwiseEstimate, learn_pairwise
from dpgm.mrf.regressions import frank_wolfe
from dpgm.mrf.structure import StructureEstimate, ising_edges, learn_structure, threshold_edges
from dpgm.mrf.twise import TwiseEstimate, learn_twise

__all__ = [
    "IsingEstimate",
    "PairwiseEstimate",
    "StructureEstimate",
    "TwiseEstimate",
    "frank_wolfe",
    "ising_edges",
    "learn_ising",
    "learn_pairwise",
    "learn_structure",
    "learn_twise",
    "threshold_edges",
]
