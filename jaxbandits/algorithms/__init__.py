"""Algorithm kernels, one module per algorithm or tight family, named as the papers name them
(the contract is in :mod:`jaxbandits.algorithms.base`; the pieces several algorithms share are in
:mod:`.common`, :mod:`.glr`, :mod:`.glm`, :mod:`.elimination` and :mod:`.stages`).

Fixed confidence (seeds 000, 001): :class:`LazyTrackAndStop`, :class:`Oracle`, :class:`RAGE`,
:class:`XYStatic`, :class:`XYOracle`, :class:`XYAdaptive`, :class:`ALBA`, :class:`SphereBAI`
(continuous arms), :class:`UniformGLR` (reference), :class:`LinGapE`, :class:`FWS`
(Frank-Wolfe Sampling), :class:`FixedConfidencePeace` (Katz-Samuels et al. 2020), :class:`TopTwo` (Top Two with GLR stopping, epsilon-best-answer),
:class:`LinGame` (Degenne et al. 2020; also Top-m); the wrapper :class:`Eliminate` (elimination at
stopping / at sampling, Tirinzoni & Degenne 2022).
Top-m (seed 003): the :class:`GIFA` framework and its assemblies :class:`LUCB`, :class:`UGapE`,
:class:`MLinGapE`, :class:`LinGIFA` (and the best-arm :class:`LinGapE`); complexity constants in
:mod:`.top_m.complexity`.
Fixed budget (seed 002): :class:`GSE`, :class:`ODLinBAI`, :class:`BayesGap`, :class:`Peace` (Katz-Samuels et al.'s), :class:`HalvingPeace` (seed 002's approximation of it),
:class:`LinUCB`, :class:`UCBGLM`, and the wrapper :class:`BudgetCapped`.
"""
from jaxbandits.algorithms.fixed_confidence.alba import ALBA  # noqa: F401
from jaxbandits.algorithms.base import Algorithm, Outcome, is_correct  # noqa: F401
from jaxbandits.algorithms.fixed_budget.bayesgap import BayesGap  # noqa: F401
from jaxbandits.algorithms.top_m.gifa import GIFA, LUCB, LinGIFA, MLinGapE, UGapE  # noqa: F401
from jaxbandits.algorithms.fixed_confidence.lingape import LinGapE  # noqa: F401
from jaxbandits.algorithms.fixed_budget.gse import GSE  # noqa: F401
from jaxbandits.algorithms.fixed_confidence.fws import FWS  # noqa: F401
from jaxbandits.algorithms.fixed_budget.od_linbai import ODLinBAI  # noqa: F401
from jaxbandits.algorithms.fixed_confidence.elimination_rules import Eliminate  # noqa: F401
from jaxbandits.algorithms.fixed_confidence.lingame import LinGame  # noqa: F401
from jaxbandits.algorithms.fixed_confidence.oracle import Oracle  # noqa: F401
from jaxbandits.algorithms.fixed_budget.peace import HalvingPeace, Peace  # noqa: F401
from jaxbandits.algorithms.fixed_confidence.peace import FixedConfidencePeace  # noqa: F401
from jaxbandits.algorithms.fixed_confidence.rage import RAGE  # noqa: F401
from jaxbandits.algorithms.fixed_budget.budget_capped import BudgetCapped  # noqa: F401
from jaxbandits.algorithms.fixed_budget.linucb import LinUCB  # noqa: F401
from jaxbandits.algorithms.fixed_budget.ucb_glm import UCBGLM  # noqa: F401
from jaxbandits.algorithms.fixed_confidence.sphere import SphereBAI  # noqa: F401
from jaxbandits.algorithms.fixed_confidence.top_two import TopTwo  # noqa: F401
from jaxbandits.algorithms.fixed_confidence.track_and_stop import LazyTrackAndStop  # noqa: F401
from jaxbandits.algorithms.fixed_confidence.uniform import UniformGLR  # noqa: F401
from jaxbandits.algorithms.fixed_confidence.xy import XYAdaptive, XYOracle, XYStatic  # noqa: F401
from jaxbandits.algorithms.fixed_confidence.karmed import (KArmedEBTCEpsilon, KArmedKLLUCB, KArmedLilUCB,  # noqa: F401,E402
                                                          KArmedLUCB1, KArmedTopTwo, KArmedTrackAndStop,
                                                          SuccessiveElimination)
from jaxbandits.algorithms.fixed_budget.karmed import SequentialHalving, SuccessiveRejects  # noqa: F401,E402
