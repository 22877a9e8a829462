"""Optimal-design solvers: G-optimal, XY / transductive, oracle (T*, psi*), rounding.

All solvers are pure, jit- and vmap-safe bounded ``lax.while_loop``s with a tolerance, a warm start
(``init``) and a certified gap, returning a :class:`DesignSolution`.  Values are differentiable
with respect to arms, items and theta through the envelope theorem (no differentiation through
the iterations).
"""
from jaxbandits.design.core import DesignSolution, design_matrix
from jaxbandits.design.gopt import fwg, g_optimal, greedy_allocation, wynn
from jaxbandits.design.minimax import (characteristic_time, kl_bernoulli, lower_bound, minimax_design,
                                       oracle_allocation, xy_allocation)
from jaxbandits.design.rounding import round_design, rounding_efficiency, rounding_min_samples

__all__ = [
    "DesignSolution", "design_matrix", "g_optimal", "wynn", "fwg", "greedy_allocation", "minimax_design",
    "xy_allocation", "oracle_allocation", "characteristic_time", "lower_bound", "kl_bernoulli",
    "round_design", "rounding_min_samples", "rounding_efficiency",
]

# float64 inside every public function, whatever the caller's x64 setting (jaxbandits.precision)
from jaxbandits.precision import wrap_module as _wrap  # noqa: E402

_wrap(globals(), __all__)

from jaxbandits.design import karmed  # noqa: E402,F401  (K-armed exponential families: w*, T*)
