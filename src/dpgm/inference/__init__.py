"""The inference engine shared by every dpgm method.

Junction trees, exact sum-/max-product belief propagation, loopy belief propagation (the
Bethe approximation, for models whose junction tree is too large), variable elimination,
factored linear queries and sampling. Models (:class:`dpgm.MarkovRandomField`) call into it.
"""

from dpgm.inference import queries
from dpgm.inference.belief_propagation import Calibration, MessagePlan
from dpgm.inference.elimination import variable_elimination
from dpgm.inference.junction_tree import JunctionTree, elimination_order, interaction_graph
from dpgm.inference.loopy import LoopyPlan, LoopyResult
from dpgm.inference.sampling import sample_records

__all__ = [
    "Calibration",
    "JunctionTree",
    "LoopyPlan",
    "LoopyResult",
    "MessagePlan",
    "elimination_order",
    "interaction_graph",
    "queries",
    "sample_records",
    "variable_elimination",
]
