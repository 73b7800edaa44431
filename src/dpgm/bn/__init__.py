"""Bayesian networks' CPDs on a public structure (Roy Chowdhury, Rekatsinas & Jha 2019).

Post-processing only: nothing here reads data or spends budget. The learners
(:mod:`dpgm.mechanisms.bn`) measure each node's noisy tables through the privacy layer
and hand them here. :mod:`.structure`: the public DAG and its graph features (Eq. 7, 8);
:mod:`.cpds`: CPDs and the released network from noisy tables (Algorithm 1);
:mod:`.allocation`: how Algorithm 2 splits the budget over the nodes from Stage I's noisy
output and public facts (Eq. 5, 6, 10, and ours). The implementation note is
``docs/notes/bn-data-dependent.md``.
"""

from dpgm.bn.allocation import (
    LOG_SPAN,
    MAX_COUNT,
    allocate,
    allocate_expected_error,
    error_bounds,
    parameter_error,
)
from dpgm.bn.cpds import (
    JOINTS,
    NoisyTables,
    cpds_from_tables,
    network_from_model,
    noisy_joint,
    noisy_total,
    normalised_columns,
    release_network,
)
from dpgm.bn.structure import (
    NodeFeatures,
    Parents,
    StructureLike,
    check_structure_type,
    children,
    families,
    heights,
    node_features,
    sensitivity,
    structure_parents,
)

__all__ = [
    "JOINTS",
    "LOG_SPAN",
    "MAX_COUNT",
    "NodeFeatures",
    "NoisyTables",
    "Parents",
    "StructureLike",
    "allocate",
    "allocate_expected_error",
    "check_structure_type",
    "children",
    "cpds_from_tables",
    "error_bounds",
    "families",
    "heights",
    "network_from_model",
    "node_features",
    "noisy_joint",
    "noisy_total",
    "normalised_columns",
    "parameter_error",
    "release_network",
    "sensitivity",
    "structure_parents",
]
