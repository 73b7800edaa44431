"""Deprecated: the CPD learners live in :mod:`dpgm.mechanisms.bn` and their
post-processing (structure, CPDs, allocation) in :mod:`dpgm.bn`. This alias module
re-exports the old names for one release. ``sensitivity_by_derivative``,
``allocate_product_form`` and ``expected_column_error`` were checks, not library code:
they now live with the experiment (``experiments/_bn.py``) and the tests."""

import warnings

from dpgm.bn import *  # noqa: F403
from dpgm.mechanisms.bn import (  # noqa: F401
    BNParameterLearner,
    DataDependentBN,
    DInd,
    check_node_budget,
    measure_node_tables,
    stage_one_parameters,
)

warnings.warn("dpgm.mechanisms.bn_parameters is deprecated: import the learners from "
              "dpgm.mechanisms and the rest from dpgm.bn", DeprecationWarning, stacklevel=2)
