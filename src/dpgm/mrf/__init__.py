"""Privately learning Markov random fields (Zhang, Kamath, Kulkarni & Wu 2020).

Nodewise private Frank–Wolfe on the logistic loss (the data access and its accounting in
:mod:`dpgm.privacy.frank_wolfe`; everything here is post-processing of its selections):
:func:`learn_ising` (Alg. 2).
"""

from dpgm.mrf.ising import IsingEstimate, frank_wolfe, learn_ising

__all__ = ["IsingEstimate", "frank_wolfe", "learn_ising"]
