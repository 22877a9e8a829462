"""GIFA: Gap-Index Focused Algorithms for Top-m identification (seed 003, Algorithm 1).

Seed 003 = Reda, Kaufmann, Delahaye-Duriez, "Top-m identification for linear bandits", AISTATS 2021.

One configurable kernel, :class:`GIFA`, whose pluggable pieces are the degrees of freedom of
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

Stopping happens at the top of Algorithm 1's loop: the state holds J(t), b_t, c_t and the stopping
statistic of the current data, so ``done`` is "statistic <= eps" (``stopping_pair="post_pull"``) and
``outcome`` returns J(t).
"""
from __future__ import annotations

import dataclasses
import math
from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxbandits.algorithms import common
from jaxbandits.algorithms.base import Algorithm, Outcome, concrete, display_name, hyperparameter
from jaxbandits.algorithms.common import (TOPK_ITERATIVE_MAX, argmax_fast, mth_largest, noise_scale,  # noqa: F401
                                         top_indices, top_values, topm_mask)
from jaxbandits.design.simplex import min_l1_representation
from jaxbandits.environment import pull, pull_counts
from jaxbandits.instances.base import Instance
from jaxbandits import presets
from jaxbandits.rules import thresholds

INDICES = ("paired", "individual", "classical")
THRESHOLDS = thresholds.names("gifa")  # jaxbandits.rules.thresholds.ALIASES
COMPUTE_J = ("empirical", "gap")
COMPUTE_B = ("lucb", "gap")
SELECTIONS = ("largest_variance", "greedy", "optimized", "both")
STOPPINGS = ("lucb", "ugape", "glr")
STOPPING_PAIRS = ("post_pull", "pre_pull")
THRESHOLD_TAILS = ("sqrt_lambda", "lambda")

#: the two behaviours of the released code (module docstring) as GIFA options
RELEASED_CODE = presets.GIFA_RELEASED.settings
#: Tirinzoni & Degenne 2022's Table 1 settings common to LinGapE, m-LinGapE and LinGIFA (module docstring)
TIRINZONI_DEGENNE = {k: v for k, v in presets.TD_LINGAPE.settings.items()
                     if k not in ("index", "threshold", "compute_J", "compute_b")}


class GIFAState(NamedTuple):
    """State of a GIFA run.

    Attributes:
      counts: [K] pulls per arm.  sums: [K] reward sums per arm.
      Vinv: [d, d] V_t^-1 (column mode, module docstring; [1, 1] zeros otherwise).
      g: [K] ||x_a||^2_{V_t^-1} (column mode; [1] zeros otherwise).
      G: [K, K] X V_t^-1 X^T (full mode: paired indices with compute_J = "gap"; [1, 1] zeros
        otherwise).
      mu: [K] empirical means mu_a(t) (least squares, or averages for classical indices).
      logdet: ln det V_t - N ln lambda (for the determinant threshold).
      t: samples so far.
      J: [K] bool, the estimated m best arms J(t).  b, c: b_t and c_t.
      stat: the stopping statistic of the current data.  done: the stopping rule fired (stat <=
        epsilon, or the released code's pre-pull check).
      w_pair: [2] pair (b, c) whose w* is cached in ``w`` ([K] with the optimized rule, else [1] zeros).
    """

    counts: jax.Array
    sums: jax.Array
    Vinv: jax.Array
    g: jax.Array
    G: jax.Array
    mu: jax.Array
    logdet: jax.Array
    t: jax.Array
    J: jax.Array
    b: jax.Array
    c: jax.Array
    stat: jax.Array
    done: jax.Array
    w_pair: jax.Array
    w: jax.Array


#: up to this d, the column mode's products with X and V^-1 are unrolled over d (see :func:`_mv`)
UNROLL_D_MAX = 5


def _mv(A: jax.Array, x: jax.Array) -> jax.Array:
    """A @ x for A [n, d], x [d] (or [d, k]: then A @ x [n, k]).

    For d <= ``UNROLL_D_MAX``: sum_l A[:, l] x[l], unrolled, so that XLA fuses the products with
    the elementwise ops around them; under vmap on CPU a dot is a separate batched kernel, and a
    reduction over a short minor axis does not vectorise.  Measured per lane-step of LinGapE, 32
    lanes, 2 shared cores: many arms K = 1000, d = 2: 14-19 us unrolled, 21 us with dots, 53 us
    with broadcast-and-reduce; Soare d = 5 (K = 6): 0.39 us unrolled, 0.48-0.51 us with dots;
    K = d = 8: 0.81 us unrolled, 0.44 us with dots; K = d = 16: 2.8 us unrolled, 0.83 us with dots.
    """
    d = A.shape[-1]
    if d > UNROLL_D_MAX:
        return A @ x
    if x.ndim == 1:
        return sum(A[:, l] * x[l] for l in range(d))
    return sum(A[:, l, None] * x[None, l, :] for l in range(d))


TIE_RTOL = 1e-9


def argmax_random_ties(key: jax.Array | None, v: jax.Array, valid: jax.Array) -> jax.Array:
    """argmax of ``v`` over ``valid`` entries, ties broken uniformly at random (seed 003 Sec 3.1).

    Values within a relative ``TIE_RTOL`` of the maximum are ties: the selection rules produce
    exact ties (equal counts, w* = e_b - e_c) that rounding would otherwise break arbitrarily.
    One uniform draw per call: the k-th tied index, k = floor(u * #ties); ``key=None``: the first.
    """
    v = jnp.where(valid, v, -jnp.inf)
    mx = jnp.max(v)
    ties = valid & (v >= mx - TIE_RTOL * jnp.abs(mx))
    if key is None:
        return argmax_fast(ties)
    n = jnp.sum(ties)
    k = jnp.floor(jax.random.uniform(key, (), v.dtype) * n).astype(jnp.int32)
    k = jnp.minimum(k, n - 1)
    rank = jnp.cumsum(ties) - 1
    return argmax_fast(ties & (rank == k))


@dataclasses.dataclass(frozen=True)
class GIFA(Algorithm):
    """A GIFA algorithm for (epsilon, m, delta)-PAC Top-m identification (seed 003 Algorithm 1).

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
        super().validate(instance)
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

    # -- pieces --------------------------------------------------------------------------------
    def _sigma(self, inst) -> jax.Array:
        """sigma of seed 003 Sec 2 (sub-Gaussian noise scale)."""
        return noise_scale(self.sigma, inst)

    def _reg(self, inst):
        if self.reg is None:
            return self._sigma(inst) / 20.0  # lambda = sigma / 20 (seed 003 Sec 5)
        return jnp.asarray(self.reg, inst.arms.dtype)

    def _linear(self) -> bool:
        return self.index != "classical"

    def confidence(self, state: GIFAState, inst: Instance) -> jax.Array:
        """The threshold C_{t,delta} (seed 003 eq. (2), Sec 5, Kalyanakrishnan et al. 2012, Xu et al. 2018).

        Dimensionless: the widths are C_{t,delta} ||x||_Sigma = C_{t,delta} sigma ||x||_{V_t^-1}.
        """
        N = inst.arms.shape[1]
        K = inst.true_num_arms()
        t = jnp.maximum(state.t, 1.0)
        delta = self.delta
        rule = thresholds.resolve("gifa", self.threshold)
        if rule == "log_log_t":  # Sec 5
            return thresholds.width(thresholds.log_log_t(t, delta))
        if rule == "log_t2":  # Tirinzoni & Degenne's code: log(1 / delta) + 2 log(t + 2)
            return thresholds.width(thresholds.log_t2(state.t + 2.0, delta))
        if rule == "log_t":  # sqrt(2 log((t' + 1) / delta)), round index t' = t + 1
            return thresholds.width(thresholds.log_t(state.t + 1.0, delta))
        if rule == "lucb1":
            # LUCB1: width sqrt(2 sigma^2 beta(t) / N_a), beta = ln(5 K t^4 / (4 delta)) (released LUCB1Beta)
            return thresholds.width(thresholds.lucb1(t, delta, K))
        lam = self._reg(inst)
        S = jnp.linalg.norm(inst.theta) if self.S is None else self.S
        sigma = self._sigma(inst)
        if self.threshold_tail == "sqrt_lambda":
            tail = jnp.sqrt(lam) * S / sigma  # eq. (2): + sqrt(lambda) S / sigma
        else:
            tail = lam * S / sigma  # released code (betas.FrequentistBeta): + lambda S / sigma
        if rule == "reda_eq2":
            L2 = jnp.max(jnp.sum(inst.arms**2, axis=-1))
            return thresholds.reda_eq2_width(state.t, delta, N, L2, lam, tail)
        # determinant (Abbasi-Yadkori et al. 2011, Thm 2, divided by sigma; Xu et al. 2018)
        return thresholds.abbasi_yadkori_width(state.logdet, delta, tail)

    def _full_matrix(self) -> bool:
        """Full mode (module docstring): J(t) needs max^m_{i != j} B_{i,j} for every j, paired."""
        return self.index == "paired" and self.compute_J == "gap"

    def _variances(self, state: GIFAState) -> jax.Array:
        """[K] ||x_a||^2_{V_t^-1} (linear indices)."""
        return jnp.diagonal(state.G) if self._full_matrix() else state.g

    def _cross(self, state: GIFAState, inst: Instance, idx: jax.Array | None) -> jax.Array:
        """[K, n] x_i^T V_t^-1 x_j for j in ``idx`` (None: all K): a slice of G in full mode,
        X (V^-1 X_idx^T) in column mode (O(n K d + n d^2))."""
        if self._full_matrix():
            return state.G if idx is None else state.G[:, idx]
        X = inst.arms
        Xj = X if idx is None else X[idx]
        return _mv(X, _mv(state.Vinv, Xj.T))

    def gap_columns(self, state: GIFAState, inst: Instance, idx: jax.Array | None = None) -> jax.Array:
        """B[:, idx] = mu_i(t) - mu_j(t) + C_{t,delta} W_t(i, j) for j in ``idx`` [K, n] (seed 003
        Sec 2); ``idx=None``: the whole [K, K] matrix."""
        mu = state.mu
        take = (lambda v: v) if idx is None else (lambda v: v[idx])
        if self.index == "paired":
            # ||x_i - x_j||_Sigma = sigma ||x_i - x_j||_{V_t^-1}, Sigma = sigma^2 V_t^-1 (Sec 2)
            C = self.confidence(state, inst) * self._sigma(inst)
            g = self._variances(state)
            D = jnp.maximum(g[:, None] + take(g)[None, :] - 2.0 * self._cross(state, inst, idx), 0.0)
            W = C * jnp.sqrt(D)
            B = mu[:, None] - take(mu)[None, :] + W
            # a padded arm is never a challenger i (row -inf)
            return B if inst.arm_mask is None else jnp.where(inst.arm_mask[:, None], B, -jnp.inf)
        up, low = self._individual_bounds(state, inst)
        return up[:, None] - take(low)[None, :]

    def gap_indices(self, state: GIFAState, inst: Instance) -> jax.Array:
        """B[i, j] = mu_i(t) - mu_j(t) + C_{t,delta} W_t(i, j) [K, K] (seed 003 Sec 2).  Read by
        the algorithm in full mode only; in column mode O(K^2 d), for diagnostics and tests."""
        return self.gap_columns(state, inst, None)

    def _individual_bounds(self, state: GIFAState, inst: Instance):
        """Individual indices: B[i, j] = U_i - L_j with U = mu + W, L = mu - W (Sec 2).

        W_t(a) = C_t sigma ||x_a||_{V_t^-1} (Sigma = sigma^2 V_t^-1), or C_t sigma / sqrt(N_a)
        for classical indices (Sec 2, last paragraph: lambda = 0, canonical features).
        """
        # W_t(a) = C_t ||x_a||_Sigma = C_t sigma ||x_a||_{V_t^-1} (Sec 2); classical: C_t sigma / sqrt(N_a)
        # (Sec 2, last paragraph; with the LUCB1 threshold, Kalyanakrishnan et al. 2012's width)
        C = self.confidence(state, inst) * self._sigma(inst)
        if self.index == "individual":
            s = jnp.sqrt(jnp.maximum(self._variances(state), 0.0))
        else:
            s = 1.0 / jnp.sqrt(jnp.maximum(state.counts, 1e-300))
        up = state.mu + C * s
        if inst.arm_mask is not None:
            up = jnp.where(inst.arm_mask, up, -jnp.inf)  # a padded arm is never a challenger
        return up, state.mu - C * s

    def _mth_index(self, state: GIFAState, inst: Instance, B: jax.Array | None) -> jax.Array:
        """[j] -> max^m_{i != j} B[i, j] for every j (compute_J = "gap").

        Paired indices (full mode): m passes over the K x K matrix ``B``.  Individual (and
        classical) indices are separable, B[i, j] = U_i - L_j, so max^m_{i != j} B[i, j] = (the m-th
        largest U, or the (m+1)-th when j is itself among the m largest) - L_j: O(K), the same
        numbers.
        """
        m = self.m
        if self.index == "paired":
            eye = jnp.eye(inst.num_arms, dtype=bool)
            return mth_largest(jnp.where(eye, -jnp.inf, B).T, m)
        up, low = self._individual_bounds(state, inst)
        top = top_values(up, m + 1)
        return jnp.where(topm_mask(up, m), top[m], top[m - 1]) - low

    def _mth_columns(self, Bc: jax.Array, idx: jax.Array) -> jax.Array:
        """[k] -> max^m_{i != idx_k} Bc[i, k] for the columns Bc = B[:, idx]: O(m^2 K)."""
        own = jnp.arange(Bc.shape[0])[:, None] == idx[None, :]
        return mth_largest(jnp.where(own, -jnp.inf, Bc), self.m, axis=0)

    def _decide(self, state: GIFAState, inst: Instance, prev: GIFAState | None = None) -> GIFAState:
        """J(t), b_t, c_t, the stopping statistic and the stopping decision from the current data
        (Algorithm 1, Table 1).

        ``prev``: the state before the last pull (None at initialization); only read with
        ``stopping_pair="pre_pull"``, where the decision is the released code's: tau_LUCB on the
        pair chosen before the pull with the new indices, B_{c_{t-1}, b_{t-1}}(t), or tau_UGapE's
        statistic computed before the pull, and the answer is the J chosen before the pull.
        """
        m = self.m
        full = self._full_matrix()
        B = self.gap_indices(state, inst) if full else None
        valid = inst.valid_arms()
        mth_all = None
        if self.compute_J == "empirical":
            score = state.mu
        else:
            mth_all = self._mth_index(state, inst, B)  # [j]: max^m_{i != j} B[i, j]
            score = -mth_all
        idx = top_indices(jnp.where(valid, score, -jnp.inf) if inst.arm_mask is not None else score, m)  # J(t)
        ar = jnp.arange(inst.num_arms)
        J = jnp.any(ar[:, None] == idx[None, :], axis=1)
        Bc = B[:, idx] if full else self.gap_columns(state, inst, idx)  # [K, m]: B[i, j], j in J(t)
        if self.compute_b == "gap" or self.stopping == "ugape":
            mth = mth_all[idx] if mth_all is not None else self._mth_columns(Bc, idx)  # max^m_{i != j} B[i, j]
        if m == 1:
            k = 0
        else:
            if self.compute_b == "lucb":
                score_b = jnp.max(jnp.where(J[:, None], -jnp.inf, Bc), axis=0)  # max_{i notin J} B[i, j]
            else:
                score_b = mth
            # argmax over j in J(t), ties: the lowest arm index
            k = argmax_fast(idx == jnp.min(jnp.where(score_b == jnp.max(score_b), idx, inst.num_arms)))
        b = idx[k]
        Bb = Bc[:, k]
        c = argmax_fast(jnp.where(J, -jnp.inf, Bb))
        if self.stopping == "lucb":
            stat = Bb[c]
        elif self.stopping == "ugape":
            stat = jnp.max(mth)
        if self.stopping == "glr":
            stat, J_emp = self.glr_statistic(state, inst)
            done = stat > self.glr_threshold(state)
            J = jnp.where(done, J_emp, J)
        elif self.stopping_pair == "post_pull":
            done = stat <= self.epsilon
        elif prev is None:
            done = jnp.asarray(False)  # the released code checks only after a pull
        else:
            if self.stopping == "lucb":
                pre_stat = B[prev.c, prev.b] if full else self.gap_columns(state, inst, prev.b[None])[prev.c, 0]
            else:
                pre_stat = prev.stat
            done = pre_stat <= self.epsilon
            J = jnp.where(done, prev.J, J)
        return state._replace(J=J, b=b.astype(jnp.int32), c=c.astype(jnp.int32), stat=stat, done=done)

    def glr_statistic(self, state: GIFAState, inst: Instance):
        """(min_{i in J_emp, j notin J_emp} (mu_i - mu_j)_+^2 / (2 sigma^2 ||x_i - x_j||^2_{V_t^-1}),
        J_emp) with J_emp = argmax^[m] mu(t) (bool [K]): the GLR statistic of the Top-m answer
        J_emp with the ridge V_t (Tirinzoni & Degenne's ``min_alt``).  O(m K d)."""
        valid = inst.valid_arms()
        mu = state.mu
        idx = top_indices(jnp.where(valid, mu, -jnp.inf) if inst.arm_mask is not None else mu, self.m)
        J_emp = jnp.any(jnp.arange(inst.num_arms)[:, None] == idx[None, :], axis=1)
        g = self._variances(state)
        D = jnp.maximum(g[:, None] + g[idx][None, :] - 2.0 * self._cross(state, inst, idx), 0.0)  # [K, m]
        gaps = jnp.maximum(mu[idx][None, :] - mu[:, None], 0.0)
        sigma = self._sigma(inst)
        z = gaps * gaps / (2.0 * sigma**2 * jnp.maximum(D, 1e-300))
        z = jnp.where((~J_emp & valid)[:, None], z, jnp.inf)
        return jnp.min(z), J_emp

    def glr_threshold(self, state: GIFAState) -> jax.Array:
        """log((t + 1) / delta) of the GLR stopping rule (``stopping="glr"``), t samples so far."""
        return thresholds.log_t(state.t, self.delta)

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

    def _pick(self, key, v, valid):
        return argmax_random_ties(key if self.tie_break == "random" else None, v, valid)

    def select(self, key: jax.Array, state: GIFAState, inst: Instance):
        """The selection rule: (arm, new state with the w* cache) (seed 003 Sec 3.2, eq. (1))."""
        K = inst.num_arms
        b, c = state.b, state.c
        ar = jnp.arange(K)
        if self.selection in ("largest_variance", "both"):
            if self._linear():
                var = self._variances(state)
            else:
                var = 1.0 / jnp.maximum(state.counts, 1e-300)
            v = jnp.where(ar == b, var[b], jnp.where(ar == c, var[c], -jnp.inf))
            return self._pick(key, v, (ar == b) | (ar == c)), state
        if self.selection == "greedy":
            # ||y||^2_{(V + x_a x_a^T)^-1} = ||y||^2_{V^-1} - (y^T V^-1 x_a)^2 / (1 + ||x_a||^2_{V^-1}),
            # y = x_b - x_c, y^T V^-1 x_a = G[b, a] - G[c, a]: minimise = maximise the decrease.
            if self._full_matrix():
                u = state.G[b] - state.G[c]
            else:
                u = _mv(inst.arms, _mv(state.Vinv, inst.arms[b] - inst.arms[c]))  # O(K d + d^2)
            v = u * u / (1.0 + self._variances(state))
            return self._pick(key, v, inst.valid_arms()), state
        # optimized (eq. (1)); w* cached per pair
        pair = jnp.stack([b, c])
        stale = jnp.any(pair != state.w_pair)
        sol = min_l1_representation(inst.arms, inst.arms[b] - inst.arms[c], active=stale,
                                    fixed_trips=self.policy.batched)
        w = jnp.where(stale, sol.w, state.w)
        aw = jnp.abs(w)
        valid = (aw > 1e-9 * jnp.max(aw)) & inst.valid_arms()
        v = -state.counts / jnp.where(valid, aw, 1.0)
        arm = self._pick(key, v, valid)
        return arm, state._replace(w_pair=pair, w=w)

    def _update(self, state: GIFAState, inst: Instance, arm, reward) -> GIFAState:
        counts = state.counts.at[arm].add(1.0)
        sums = state.sums.at[arm].add(reward)
        Vinv, g, G, logdet = state.Vinv, state.g, state.G, state.logdet
        if self._full_matrix():
            u = state.G[:, arm]
            den = 1.0 + u[arm]
            G = state.G - jnp.outer(u, u) / den
        elif self._linear():
            x = inst.arms[arm]
            p = _mv(state.Vinv, x)
            den = 1.0 + jnp.sum(x * p)
            Vinv = state.Vinv - jnp.outer(p, p) / den
            u = _mv(inst.arms, p)  # [K] x_i^T V^-1 x_a
            g = state.g - u * u / den
        if self._linear():
            mu = state.mu + u * (reward - state.mu[arm]) / den
            logdet = state.logdet + jnp.log(den)
        else:
            mu = sums / jnp.maximum(counts, 1.0)
        return state._replace(counts=counts, sums=sums, Vinv=Vinv, g=g, G=G, mu=mu, logdet=logdet, t=state.t + 1.0)

    # -- the contract --------------------------------------------------------------------------
    def init(self, key: jax.Array, inst: Instance) -> GIFAState:
        X = inst.arms
        K, N = X.shape
        dt = X.dtype
        counts = inst.valid_arms().astype(dt) if self.initialization else jnp.zeros(K, dt)
        sums = pull_counts(key, inst, counts) if self.initialization else jnp.zeros(K, dt)
        Vinv, g, G = jnp.zeros((1, 1), dt), jnp.zeros(1, dt), jnp.zeros((1, 1), dt)
        if self._linear():
            lam = self._reg(inst)
            V = lam * jnp.eye(N, dtype=dt) + (X.T * counts) @ X
            L = jnp.linalg.cholesky(V)
            logdet = 2.0 * jnp.sum(jnp.log(jnp.diagonal(L))) - N * jnp.log(lam)
            if self._full_matrix():
                W = jax.scipy.linalg.solve_triangular(L, X.T, lower=True)  # [N, K]
                G = W.T @ W
                mu = G @ sums  # X V^-1 X^T sums = X theta_hat, since b_t = X^T sums
            else:
                Vinv = common.inverse_from_cholesky(L)
                g = jnp.sum((X @ Vinv) * X, axis=-1)
                mu = X @ (Vinv @ (X.T @ sums))
        else:
            mu = sums / jnp.maximum(counts, 1.0)
            logdet = jnp.zeros((), dt)
        st = GIFAState(counts=counts, sums=sums, Vinv=Vinv, g=g, G=G, mu=mu, logdet=logdet, t=jnp.sum(counts),
                       J=jnp.zeros(K, bool), b=jnp.int32(0), c=jnp.int32(0), stat=jnp.asarray(jnp.inf, dt),
                       done=jnp.asarray(False), w_pair=jnp.full((2,), -1, jnp.int32),
                       w=jnp.zeros(K if self.selection == "optimized" else 1, dt))
        return self._decide(st, inst)

    def step(self, key: jax.Array, state: GIFAState, inst: Instance) -> GIFAState:
        k_sel, k_pull, k_pull2 = jax.random.split(key, 3)
        arm, st = self.select(k_sel, state, inst)
        st = self._update(st, inst, arm, pull(k_pull, inst, arm))
        if self.selection == "both":
            other = jnp.where(arm == state.b, state.c, state.b)
            st = self._update(st, inst, other, pull(k_pull2, inst, other))
        new = self._decide(st, inst, prev=state)
        return jax.tree.map(lambda n, o: jnp.where(state.done, o, n), new, state)

    def done(self, state: GIFAState) -> jax.Array:
        return state.done

    def outcome(self, state: GIFAState, inst: Instance) -> Outcome:
        # counts stay floats (exact integers): the engine saturates a lost count as NON_FINITE, where a
        # cast to int32 would clamp a count past 2**31 - 1 (two pulls a step, "both") silently
        return Outcome(answer=state.J, samples=state.t, pulls=state.counts)


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
