"""LinGapE (Xu, Honda & Sugiyama, AISTATS 2018): best-arm identification by gap indices.

The best-arm (m = 1) assembly of the GIFA framework (seed 003 Table 1; :mod:`jaxbandits.algorithms.top_m.gifa`).
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar

from jaxbandits.algorithms.top_m.gifa import GIFAAssembly


@dataclasses.dataclass(frozen=True, init=False)
class LinGapE(GIFAAssembly):
    """LinGapE (Xu et al. 2018) = GIFA with m = 1 (seed 003 Table 1), as analysed by Xu et al.:
    each arm pulled once, regulariser lambda = 1, the determinant confidence bound, epsilon = 0 by
    default, "greedy" or "optimized" selection.  i_t = argmax mu, j_t = argmax_j B_{j, i_t}, stop
    when B_{j_t, i_t} <= epsilon."""

    pieces: ClassVar[dict] = dict(m=1, index="paired", compute_J="empirical", compute_b="lucb", stopping="lucb",
                                  initialization=True)

    def __init__(self, delta: float = 0.05, epsilon: float = 0.0, *, selection: str = "greedy",
                 threshold: str = "determinant", reg: float = 1.0, **kw):
        if kw.get("m", 1) != 1:
            raise ValueError(f"LinGapE identifies the best arm (m = 1); for m > 1 use MLinGapE, got m = {kw['m']}")
        self._build(f"LinGapE ({selection})", delta=delta, epsilon=epsilon, selection=selection,
                    threshold=threshold, reg=reg, **kw)
