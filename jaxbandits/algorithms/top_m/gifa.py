"""GIFA: Gap-Index Focused Algorithms for Top-m identification (seed 003, Algorithm 1).

Seed 003 = Reda, Kaufmann, Delahaye-Duriez, "Top-m identification for linear bandits", AISTATS 2021.

:class:`GIFA` is the composition of two rules (:mod:`jaxbandits.rules.gap`: the gap indices with
their stopping test, :class:`~jaxbandits.rules.gap.GapIndices`, and the selection rule,
:class:`~jaxbandits.rules.gap.GapSelection`), whose options are the degrees of freedom of
Algorithm 1; the named algorithms of Table 1 are assemblies, subclasses of :class:`GIFA` (:class:`LUCB`, :class:`UGapE`, :class:`MLinGapE`,
:class:`LinGIFA`; the best-arm :class:`~jaxbandits.algorithms.fixed_confidence.lingape.LinGapE`):

* gap indices B_{i,j}(t) = mu_i(t) - mu_j(t) + C_{t,delta} W_t(i,j) (Sec 2): ``index="paired"``
  (W = ||x_i - x_j||_Sigma), ``"individual"`` (||x_i||_Sigma + ||x_j||_Sigma) with the
  lambda-regularised least squares of Sec 2 (Sigma = sigma^2 V_t^-1, V_t = lambda I + sum x x^T),
  or ``"classical"`` (no features: empirical means and sigma / sqrt(N_a), Remark 1);
* thresholds C_{t,delta}: ``"theoretical"`` (eq. (2)), ``"heuristic"`` (Sec 5:
  sqrt(2 ln((ln t + 1)/delta))), ``"lucb1"`` (Kalyanakrishnan et al. 2012, LUCB1:
  sqrt(2 ln(5 K t^4 / (4 delta)))), ``"determinant"`` (the self-normalised bound of
  Abbasi-Yadkori et al. 2011 used by Xu et al. 2018 for LinGapE:
  sqrt(2 ln(1/delta) + ln det V_t - N ln lambda) + sqrt(lambda) S / sigma; eq. (2) is its
  t-based upper bound when lambda <= 1);
* ``compute_J``: ``"empirical"`` (argmax^[m] of mu(t)) or ``"gap"`` (the m arms with smallest
  max^m_{i != j} B_{i,j}(t), UGapE);
* ``compute_b``: ``"lucb"`` (argmax_{j in J} max_{i notin J} B_{i,j}) or ``"gap"``
  (argmax_{j in J} max^m_{i != j} B_{i,j}, LinGIFA);
* challenger c_t = argmax_{a notin J(t)} B_{a, b_t}(t);
* ``selection``: ``"largest_variance"`` (argmax_{a in {b,c}} W_t(a)), ``"greedy"``
  (argmin_a ||x_b - x_c||_{(V_t + x_a x_a^T)^-1}), ``"optimized"`` (eq. (1)), ``"both"`` (pull
  b_t and c_t, original LUCB);
* ``stopping``: ``"lucb"`` (tau_LUCB: B_{c_t,b_t}(t) <= eps) or ``"ugape"``
  (tau_UGapE: max_{j in J(t)} max^m_{i != j} B_{i,j}(t) <= eps);
* ``initialization``: pull every arm once first; slack ``epsilon >= 0``;
* ``sigma``: the sub-Gaussian scale of the noise (Sec 2), ``None`` = the instance's (through
  :func:`~jaxbandits.algorithms.common.noise_scale`: the Gaussian noise scale, 1/2 for Bernoulli
  rewards).  Where it enters: the widths C_t ||x||_Sigma with Sigma = sigma^2 V_t^-1 (Sec 2), the
  classical widths C_t sigma / sqrt(N_a) (Sec 2, last paragraph), the tail sqrt(lambda) S / sigma
  of eq. (2) and of the determinant threshold, and lambda = sigma / 20 (Sec 5).

Paper vs released code (github.com/clreda/linear-top-m, Code/bandits.py, Code/betas.py), two
switches whose defaults follow the paper:

* ``stopping_pair``: ``"post_pull"`` (Algorithm 1: the loop condition is evaluated on B(t) with
  the pair (b_t, c_t) and set J(t) of the current data) or ``"pre_pull"`` (the released
  ``GIFA.run``: ``sample()`` picks J, b, c, the arm is pulled, then ``stopping_rule()`` evaluates
  tau_LUCB on the *old* pair with the *new* indices, B_{c_{t-1}, b_{t-1}}(t), and tau_UGapE on
  the indices computed before the pull; the answer is the J chosen before the pull).  With
  tau_UGapE, pre-pull is post-pull plus one (or two, selection "both") extra samples and the
  same answer; with tau_LUCB it stops earlier, since the old pair no longer maximises B after
  its most uncertain arm was pulled.
* ``threshold_tail``: ``"sqrt_lambda"`` (eq. (2) and Abbasi-Yadkori et al. 2011, Thm 2:
  + sqrt(lambda) S / sigma) or ``"lambda"`` (the released ``FrequentistBeta``: + lambda S /
  sigma, smaller for lambda < 1).  Only the theoretical and determinant thresholds have a tail.

:meth:`GIFA.released_code` sets both (:data:`jaxbandits.presets.GIFA_RELEASED`).  Other differences of the released
code are not reproduced: its initial design matrix is lambda^2 I (LinGIFA) or I (m-LinGapE)
instead of lambda I, and its threshold is evaluated at t + 1 when there is no initialization.

Tirinzoni & Degenne, "On elimination strategies for bandit fixed-confidence identification",
NeurIPS 2022 (:func:`tirinzoni_degenne`, :data:`jaxbandits.presets.TD_LINGAPE`, :data:`jaxbandits.presets.TD_LINGIFA`) run LinGapE, m-LinGapE and
LinGIFA (their Table 1) with every arm pulled once, the ridge estimate with lambda = 1, the greedy
selection rule and the GLR stopping rule (``stopping="glr"``): stop when
min_{i in J_emp, j notin J_emp} (mu_i - mu_j)_+^2 / (2 sigma^2 ||x_i - x_j||^2_{V_t^-1}) >
log((t + 1) / delta), J_emp = argmax^[m] mu(t) the returned answer (released code ``runit.jl``,
``stopping_rules.jl``, ``thresholds.jl``).  Their indices' thresholds (``sampling_rules.jl``):
``"td_lingape"`` (LinGapE / m-LinGapE: C_t = sqrt(2 (ln(1/delta) + 2 ln(t + 1))), "heuristic
threshold" in the code) and ``"log_t"`` (LinGIFA: C_t = sqrt(2 ln((t + 1) / delta))), with their
t the index of the round being chosen, i.e. samples so far + 1.  Their LinGIFA takes
b_t = argmax_{j in J} max_{i notin J} B_{i,j} (``compute_b="lucb"``).  Neither threshold carries a
dimension term; only the GLR stopping rule decides correctness, and it is calibrated separately.

The optimized rule (eq. (1)): the paper prints argmax_a N_a ||w*||_1 / |w*_a|; Xu et al. (2018)
and the released code take the argmin (pull the arm furthest behind its target proportion
|w*_a| / ||w*||_1), which is what "bring the empirical proportions close to the design" needs; we
take the argmin.  w*(b, c) comes from :func:`~jaxbandits.design.simplex.min_l1_representation`
and is cached in the state until the pair (b_t, c_t) changes (the LP loop runs zero pivots then).

Per-step cost and state.  Every quantity Algorithm 1 reads is a column B[:, j] of the gap indices
for j in J(t) (b_t, the LUCB statistic max_{i notin J} B_{i,j}, the challenger c_t, max^m_{i != j}
B_{i,j} for tau_UGapE or compute_b = "gap"), except compute_J = "gap" with paired indices
(LinGIFA), where J(t) itself needs max^m_{i != j} B_{i,j} for every j.  So:

* column mode (everything but paired LinGIFA): the state carries V_t^-1 [d, d] and the variances
  g_a = ||x_a||^2_{V_t^-1} [K], updated by Sherman-Morrison in float64 (pulling a: p = V^-1 x_a,
  u = X p, V^-1 -= p p^T / (1 + x_a^T p), g -= u^2 / (1 + x_a^T p), mu += u (r - mu_a) /
  (1 + x_a^T p), ln det V += ln(1 + x_a^T p)); the m columns B[:, J] come from
  x_i^T V^-1 x_j = X (V^-1 X_J^T): O(m K d + d^2) per step and O(d^2 + K) state per lane.  For
  LinGapE (m = 1) that is Xu et al.'s i_t = argmax mu and j_t = argmax_j B_{j, i_t}: one column.
* full mode (paired indices with compute_J = "gap"): the K x K matrix G = X V_t^-1 X^T is
  carried and updated by Sherman-Morrison (G -= g g^T / (1 + G_aa), g = G[:, a]), O(K^2) per step
  and per lane; the engine's memory estimate (``engine.layout.lane_bytes``) sees it in the state.

The drift after 10^5 updates is ~1e-12 relative in both modes (``tests/test_gifa.py`` compares
with a direct solve).  max^m / argmax^[m] use m passes of max-and-remove (no sort, no scatter
under vmap); for individual and classical indices, which are separable (B_ij = U_i - L_j),
max^m_{i != j} B_ij for all j is read off the m + 1 largest U_i in O(K).

Stopping happens at the top of Algorithm 1's loop: the stopping rule's carry holds J(t), b_t, c_t
and the stopping statistic of the current data (:meth:`GIFA.view` reads them from a state), so the
composition stops when "statistic <= eps" (``stopping_pair="post_pull"``) and ``outcome`` returns
J(t).
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from jaxbandits.algorithms import common
from jaxbandits.algorithms.base import Algorithm, Outcome, concrete, display_name, hyperparameter
from jaxbandits.algorithms.common import (TOPK_ITERATIVE_MAX, argmax_fast, mth_largest, noise_scale,  # noqa: F401
                                         top_indices, top_values, topm_mask)
from jaxbandits.instances.base import Instance
from jaxbandits import presets
from jaxbandits.rules import sampling as sampling_rules
from jaxbandits.rules import thresholds
from jaxbandits.rules.composition import Composed, ComposedState, Composition
from jaxbandits.rules.gap import (COMPUTE_B, COMPUTE_J, INDICES, SELECTIONS, STOPPING_PAIRS, STOPPINGS,  # noqa: F401
                                  THRESHOLD_TAILS, TIE_RTOL, UNROLL_D_MAX, GapCarry, GapIndices, GapSelection,
                                  GapView, argmax_random_ties, view)

THRESHOLDS = thresholds.names("gifa")  # jaxbandits.rules.thresholds.ALIASES

#: the two behaviours of the released code (module docstring) as GIFA options
RELEASED_CODE = presets.GIFA_RELEASED.settings
#: Tirinzoni & Degenne 2022's Table 1 settings common to LinGapE, m-LinGapE and LinGIFA (module docstring)
TIRINZONI_DEGENNE = {k: v for k, v in presets.TD_LINGAPE.settings.items()
                     if k not in ("index", "threshold", "compute_J", "compute_b")}


@dataclasses.dataclass(frozen=True)
class GIFA(Composed):
    """A GIFA algorithm for (epsilon, m, delta)-PAC Top-m identification (seed 003 Algorithm 1): the
    composition of :meth:`rules`, the gap indices and stopping test
    (:class:`~jaxbandits.rules.gap.GapIndices`) and the selection rule
    (:class:`~jaxbandits.rules.gap.GapSelection`), after each arm once with ``initialization``.

    Args:
      m: number of arms to identify.  delta: risk.  epsilon: slack (>= 0).
      index, threshold, compute_J, compute_b, selection, stopping, initialization: the pieces
        described in the module docstring (defaults: m-LinGapE with the largest-variance rule).
      reg: lambda of V_t = lambda I + sum x x^T; None = sigma / 20 (Sec 5, after Hoffman et al.).
      S: bound on ||theta|| in the theoretical / determinant thresholds; None = ||theta|| of the
        instance (as the released code does).
      tie_break: ``"random"`` (Sec 3.1) or ``"first"`` (lowest index) in the selection rules.
      sigma: sub-Gaussian scale of the noise; None = the instance's
        (:func:`~jaxbandits.algorithms.common.noise_scale`).  Used through ``jnp`` only.
      stopping_pair: ``"post_pull"`` (Algorithm 1) or ``"pre_pull"`` (released code).
      threshold_tail: ``"sqrt_lambda"`` (eq. (2)) or ``"lambda"`` (released code).
      name: label.
    """

    released_settings: ClassVar[dict] = RELEASED_CODE  # the released code's stopping pair and threshold tail
    m: int = 1
    delta: float = hyperparameter(0.05, low=0.0, high=1.0, traced=True)
    epsilon: float = hyperparameter(0.0, low=0.0, low_open=False, traced=True)
    index: str = "paired"
    threshold: str = "theoretical"
    compute_J: str = "empirical"
    compute_b: str = "lucb"
    selection: str = "largest_variance"
    stopping: str = "lucb"
    initialization: bool = True
    reg: float | None = hyperparameter(None, low=0.0, low_open=False, traced=True)
    S: float | None = hyperparameter(None, low=0.0, traced=True)
    tie_break: str = "random"
    sigma: float | None = hyperparameter(None, low=0.0, traced=True)
    stopping_pair: str = "post_pull"
    threshold_tail: str = "sqrt_lambda"
    name: str = display_name("GIFA")

    def __post_init__(self):
        for field, allowed in (("index", INDICES), ("threshold", THRESHOLDS), ("compute_J", COMPUTE_J),
                               ("compute_b", COMPUTE_B), ("selection", SELECTIONS), ("stopping", STOPPINGS),
                               ("tie_break", ("random", "first")), ("stopping_pair", STOPPING_PAIRS),
                               ("threshold_tail", THRESHOLD_TAILS)):
            if getattr(self, field) not in allowed:
                raise ValueError(f"{field} must be one of {allowed}, got {getattr(self, field)!r}")
        if concrete(self.epsilon) and self.epsilon < 0:
            raise ValueError(f"epsilon must be a number >= 0, got {self.epsilon!r}")
        if self.stopping == "glr" and concrete(self.epsilon) and self.epsilon != 0:
            raise ValueError("the GLR stopping rule is for exact identification (epsilon = 0)")
        if self.stopping == "glr" and self.index == "classical":
            raise ValueError("the GLR stopping rule needs linear (paired or individual) indices")
        if self.index == "classical":
            if self.selection in ("greedy", "optimized"):
                raise ValueError("the greedy / optimized rules need arm features (paired or individual indices)")
            if not self.initialization:
                raise ValueError("classical (feature-free) indices need the initialization phase")
            if self.threshold == "determinant":
                raise ValueError("the determinant threshold needs linear indices")

    needs_span: ClassVar[bool] = False  # the regulariser lambda > 0 makes V_t invertible
    # padded arms (= items, Z = X): never initialised, selected or pulled, never in J(t), never a
    # challenger (their rows of B are -inf); K in the LUCB1 threshold is the real count
    supports_padding: ClassVar[bool] = True

    def validate(self, instance: Instance) -> None:
        """Host-side checks: Z = X, m < K, a positive sigma and lambda, and a reward model the
        indices are valid for (seed 003 Sec 2: r = x^T theta + sigma-sub-Gaussian noise)."""
        Algorithm.validate(self, instance)
        if instance.num_items != instance.num_arms:
            raise ValueError("Top-m identification returns arms: the items must be the arms (Z = X)")
        K = int(np.min(np.asarray(instance.true_num_arms())))
        if self.m >= K:
            raise ValueError(f"need m < K, got m = {self.m}, K = {K}")
        if self.sigma is not None and not np.all(np.asarray(self.sigma) > 0):
            raise ValueError(f"sigma must be positive, got {self.sigma}")
        if self._linear() and self.reg is not None and not np.all(np.asarray(self.reg) > 0):
            raise ValueError(f"the regulariser lambda must be positive (V_t = lambda I + sum x x^T), got {self.reg}")
        if self._linear():
            common.require_linear_rewards(instance, self.name, hint="use classical indices (LUCB, UGapE)")
        elif instance.model == "bernoulli":
            common.require_linear_rewards(instance, self.name)

    def _linear(self) -> bool:
        return self.index != "classical"

    def _full_matrix(self) -> bool:
        """Full mode (module docstring): J(t) needs max^m_{i != j} B_{i,j} for every j, paired."""
        return self.index == "paired" and self.compute_J == "gap"

    def rules(self) -> Composition:
        """The gap indices and stopping test of this configuration, and its selection rule (each
        arm once first, all before the first step, with ``initialization``)."""
        stop = GapIndices(m=self.m, index=self.index, threshold=self.threshold, compute_J=self.compute_J,
                          compute_b=self.compute_b, stop=self.stopping, reg=self.reg, S=self.S,
                          stopping_pair=self.stopping_pair, threshold_tail=self.threshold_tail)
        select = GapSelection(selection=self.selection, tie_break=self.tie_break, batched=self.policy.batched)
        if self.initialization:
            select = sampling_rules.Initial(select, first="batch")
        return Composition(select, stop, delta=self.delta, epsilon=self.epsilon, sigma=self.sigma, name=self.name)

    # the gap indices are not a GLR statistic: no elimination protocol (``Eliminate`` refuses GIFA)
    linear_stats = None
    stopping_threshold = None

    def outcome(self, state: ComposedState, inst: Instance) -> Outcome:
        # counts stay floats (exact integers): the engine saturates a lost count as NON_FINITE, where a
        # cast to int32 would clamp a count past 2**31 - 1 (two pulls a step, "both") silently
        b = state.belief
        return Outcome(answer=b.answer, samples=b.t, pulls=b.stats.counts)

    # -- diagnostics: the rule's formulas on a state of this configuration -----------------------
    @staticmethod
    def view(state: ComposedState | GapView) -> GapView:
        """The data and the gap-index statistics of a state (:class:`~jaxbandits.rules.gap.GapView`:
        counts, sums, V_t^-1, variances, G, mu, log det, t, J, b, c, statistic, done); batched
        states (leading axes) are fine; a view is returned as it is."""
        return state if isinstance(state, GapView) else view(state.belief)

    def context(self, inst: Instance):
        return self.composition().context(inst, jnp.ones((inst.num_items,), bool))

    def confidence(self, state: ComposedState | GapView, inst: Instance) -> jax.Array:
        """C_{t,delta} of the state's data (:meth:`jaxbandits.rules.gap.GapIndices.confidence`)."""
        return self.composition().stopping.confidence(self.view(state), self.context(inst))

    def gap_indices(self, state: ComposedState | GapView, inst: Instance) -> jax.Array:
        """The gap indices B[i, j] of the state's data, a K x K array
        (:meth:`jaxbandits.rules.gap.GapIndices.gap_indices`)."""
        return self.composition().stopping.gap_indices(self.view(state), self.context(inst))

    def glr_statistic(self, state: ComposedState | GapView, inst: Instance):
        """(GLR statistic, J_emp) of the state's data (:meth:`jaxbandits.rules.gap.GapIndices.glr_statistic`)."""
        return self.composition().stopping.glr_statistic(self.view(state), self.context(inst))

    @classmethod
    def tirinzoni_degenne(cls, algorithm: str = "LinGapE", m: int = 1, **kw) -> "GIFA":
        """LinGapE (m = 1), m-LinGapE or LinGIFA as in Tirinzoni & Degenne 2022's Table 1
        (:data:`jaxbandits.presets.TD_LINGAPE`, :data:`jaxbandits.presets.TD_LINGIFA`, module docstring): ``algorithm`` is "LinGapE" (also for
        m > 1: m-LinGapE) or "LinGIFA"; delta = 0.01 as there unless given."""
        if algorithm == "LinGapE":
            preset, name = presets.TD_LINGAPE, "LinGapE" if m == 1 else "m-LinGapE"
        elif algorithm == "LinGIFA":
            preset, name = presets.TD_LINGIFA, "LinGIFA"
        else:
            raise ValueError(f"algorithm must be 'LinGapE' or 'LinGIFA', got {algorithm!r}")
        return cls(**preset.apply(m=m, name=f"{name} [Tirinzoni & Degenne]", **kw))

    @property
    def top_m(self) -> int:
        return self.m

    @property
    def slack(self):
        return 0.0 if self.epsilon is None else self.epsilon  # None: the static part of a split


# ------------------------------------------------------------------------------------------------
# Named assemblies (seed 003 Table 1; options of Fig. 1 and Table 3)
# ------------------------------------------------------------------------------------------------
class GIFAAssembly(GIFA):
    """A named GIFA assembly: a subclass (so ``isinstance(x, LUCB)`` holds) whose constructor fixes
    the pieces of seed 003 Table 1 and keeps GIFA's fields, so ``dataclasses.replace`` (which
    passes every field) and the engine's static/dynamic split rebuild the same configuration."""

    #: the pieces this assembly fixes (a field given explicitly, e.g. by ``replace``, wins)
    pieces: ClassVar[dict] = {}

    def _build(self, default_name: str, /, **fields) -> None:
        GIFA.__init__(self, **{**self.pieces, **fields, "name": fields.get("name") or default_name})


@dataclasses.dataclass(frozen=True, init=False)
class LUCB(GIFAAssembly):
    """LUCB (Kalyanakrishnan et al. 2012) as GIFA (seed 003 Table 1): classical individual indices,
    J = argmax^[m] mu, b_t = argmax_{j in J} max_{i notin J} B_ij, tau_LUCB; ``selection`` =
    "largest_variance" (the rule analysed in seed 003) or "both" (original LUCB, Fig. 1c)."""

    pieces: ClassVar[dict] = dict(index="classical", compute_J="empirical", compute_b="lucb", stopping="lucb",
                                  initialization=True)

    def __init__(self, m: int, delta: float = 0.05, epsilon: float = 0.0, *, selection: str = "largest_variance",
                 threshold: str = "lucb1", **kw):
        self._build(f"LUCB ({selection.replace('_', ' ')})", m=m, delta=delta, epsilon=epsilon,
                    selection=selection, threshold=threshold, **kw)


@dataclasses.dataclass(frozen=True, init=False)
class UGapE(GIFAAssembly):
    """UGapE (Gabillon et al. 2012) as GIFA (seed 003 Table 1): classical individual indices, J = the m
    arms with smallest max^m_{i != j} B_ij, b_t as LUCB, largest variance (= least sampled), tau_UGapE."""

    pieces: ClassVar[dict] = dict(index="classical", compute_J="gap", compute_b="lucb", selection="largest_variance",
                                  stopping="ugape", initialization=True)

    def __init__(self, m: int, delta: float = 0.05, epsilon: float = 0.0, *, threshold: str = "lucb1", **kw):
        self._build("UGapE", m=m, delta=delta, epsilon=epsilon, threshold=threshold, **kw)


@dataclasses.dataclass(frozen=True, init=False)
class MLinGapE(GIFAAssembly):
    """m-LinGapE (seed 003 Sec 3.3, Table 1): paired indices, J = argmax^[m] mu,
    b_t = argmax_{j in J} max_{i notin J} B_ij, tau_LUCB; selection "largest_variance", "greedy"
    or "optimized"; initialization as LinGapE (each arm once)."""

    pieces: ClassVar[dict] = dict(compute_J="empirical", compute_b="lucb", stopping="lucb")

    def __init__(self, m: int, delta: float = 0.05, epsilon: float = 0.0, *, selection: str = "greedy",
                 threshold: str = "theoretical", index: str = "paired", initialization: bool = True, **kw):
        self._build(f"m-LinGapE ({selection.replace('_', ' ')})", m=m, delta=delta, epsilon=epsilon,
                    selection=selection, threshold=threshold, index=index, initialization=initialization, **kw)


@dataclasses.dataclass(frozen=True, init=False)
class LinGIFA(GIFAAssembly):
    """LinGIFA (seed 003 Sec 3.3, Table 1): paired indices, J = the m arms with smallest
    max^m_{i != j} B_ij, b_t = argmax_{j in J} max^m_{i != j} B_ij, tau_UGapE (or tau_LUCB, Fig. 1a),
    "largest_variance" or "greedy" selection, no initialization (as in the experiments)."""

    pieces: ClassVar[dict] = dict(compute_J="gap", compute_b="gap")

    def __init__(self, m: int, delta: float = 0.05, epsilon: float = 0.0, *, selection: str = "largest_variance",
                 stopping: str = "ugape", index: str = "paired", threshold: str = "theoretical",
                 initialization: bool = False, **kw):
        tag = [selection.replace("_", " ")]
        if stopping == "lucb":
            tag.insert(0, "tau_LUCB")
        if index == "individual":
            tag.insert(0, "individual indices")
        self._build(f"LinGIFA ({', '.join(tag)})", m=m, delta=delta, epsilon=epsilon, selection=selection,
                    stopping=stopping, index=index, threshold=threshold, initialization=initialization, **kw)
