"""The inference engine shared by every dpgm method.

Junction trees, exact sum-/max-product belief propagation, loopy belief propagation (the
Bethe approximation, for models whose junction tree is too large), variable elimination,
factored linear queries and sampling. The two belief-propagation engines implement one
protocol (:class:`Engine`), which estimation and models (:class:`dpgm.MarkovRandomField`)
call into.
"""

from dpgm.inference import queries
from dpgm.inference.belief_propagation import Calibration, MessagePlan
from dpgm.inference.cliques import Clique, maximal
from dpgm.inference.elimination import variable_elimination
from dpgm.inference.engine import Engine
from dpgm.inference.junction_tree import (
    JunctionTree,
    TreeSizes,
    elimination_order,
    interaction_graph,
)
from dpgm.inference.loopy import LoopyPlan, LoopyResult
from dpgm.inference.sampling import sample_records

__all__ = [
    "Calibration",
    "Clique",
    "Engine",
    "JunctionTree",
    "LoopyPlan",
    "LoopyResult",
    "MessagePlan",
    "TreeSizes",
    "elimination_order",
    "interaction_graph",
    "maximal",
    "queries",
    "sample_records",
    "variable_elimination",
]
