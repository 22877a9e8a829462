"""The rules of the GIFA family (seed 003, Reda, Kaufmann & Delahaye-Duriez, "Top-m identification
for linear bandits", AISTATS 2021, Algorithm 1), of which LinGapE, m-LinGapE, LinGIFA, LUCB and
UGapE are compositions (:class:`jaxbandits.algorithms.GIFA` and its assemblies).

* :class:`GapIndices`, the stopping rule: from the data, the gap indices
  B_{i,j}(t) = mu_i(t) - mu_j(t) + C_{t,delta} W_t(i, j), the estimated answer J(t), the pair
  (b_t, c_t) and the stopping statistic (tau_LUCB, tau_UGapE, or the GLR of Tirinzoni & Degenne);
  it keeps its Sherman-Morrison statistics (V_t^-1 and the arms' variances, or the K x K matrix
  X V_t^-1 X^T) and its reading (J, b, c, statistic) in the belief's carry (:class:`GapCarry`),
  updated pull by pull in :meth:`GapIndices.advance`.
* :class:`GapSelection`, the sampling rule: the arm pulled from the pair (b_t, c_t) of the carry
  (largest variance, greedy, optimized eq. (1), or both arms, original LUCB).

The options, the formulas, the two modes of the statistics and their costs are those of
:mod:`jaxbandits.algorithms.top_m.gifa` (its module docstring).  The two rules are written for each
other: the selection reads the carry of :class:`GapIndices` (:meth:`GapSelection.check_stopping`).
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp

from jaxbandits.algorithms import common
from jaxbandits.algorithms.base import hyperparameter
from jaxbandits.algorithms.common import argmax_fast, mth_largest, top_indices, top_values, topm_mask
from jaxbandits.design.simplex import min_l1_representation
from jaxbandits.instances.base import Instance
from jaxbandits.rules import thresholds
from jaxbandits.rules.core import Belief, Context, Decision, SamplingRule, StoppingRule

INDICES = ("paired", "individual", "classical")
COMPUTE_J = ("empirical", "gap")
COMPUTE_B = ("lucb", "gap")
SELECTIONS = ("largest_variance", "greedy", "optimized", "both")
STOPPINGS = ("lucb", "ugape", "glr")
STOPPING_PAIRS = ("post_pull", "pre_pull")
THRESHOLD_TAILS = ("sqrt_lambda", "lambda")
TIE_BREAKS = ("random", "first")


class GapCarry(NamedTuple):
    """What :class:`GapIndices` keeps from one pull to the next (``Belief.carry``).

    Attributes:
      Vinv: [d, d] V_t^-1 (column mode; [1, 1] zeros otherwise).
      g: [K] ||x_a||^2_{V_t^-1} (column mode; [1] zeros otherwise).
      G: [K, K] X V_t^-1 X^T (full mode: paired indices with compute_J = "gap"; [1, 1] zeros
        otherwise).
      mu: [K] empirical means mu_a(t) (least squares, or averages for classical indices).
      logdet: ln det V_t - N ln lambda (for the determinant threshold).
      b, c: b_t and c_t (the estimated answer J(t) is the belief's ``answer``).
      stat: the stopping statistic of the current data.
      done: the stopping rule fired (stat <= epsilon, the released code's pre-pull check, or the
        GLR test).
    """

    Vinv: jax.Array
    g: jax.Array
    G: jax.Array
    mu: jax.Array
    logdet: jax.Array
    b: jax.Array
    c: jax.Array
    stat: jax.Array
    done: jax.Array


class GapView(NamedTuple):
    """The data and the carry together, as the rule's formulas read them (``t`` a float)."""

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


def view(belief: Belief) -> GapView:
    """The :class:`GapView` of a belief whose carry is a :class:`GapCarry`."""
    k = belief.carry
    return GapView(belief.stats.counts, belief.stats.sums, k.Vinv, k.g, k.G, k.mu, k.logdet, belief.t, belief.answer,
                   k.b, k.c, k.stat, k.done)


def carry_of(v: GapView) -> GapCarry:
    return GapCarry(v.Vinv, v.g, v.G, v.mu, v.logdet, v.b, v.c, v.stat, v.done)


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
class GapIndices(StoppingRule):
    """GIFA's gap indices, answer, pair and stopping test (seed 003 Algorithm 1; the options of
    :class:`jaxbandits.algorithms.GIFA`, whose fields of the same names these are; ``stop`` is its
    ``stopping``).

    Its decision carries no GLR statistic for tau_LUCB and tau_UGapE (which stop when a statistic
    falls below epsilon): ``Decision.statistic`` is +inf where the rule fired and -inf elsewhere,
    against 0; with ``stop="glr"`` it is the GLR statistic against log((t + 1) / delta).
    """

    epsilon_good: ClassVar[bool] = True
    m: int = 1
    index: str = "paired"
    threshold: str = "theoretical"
    compute_J: str = "empirical"
    compute_b: str = "lucb"
    stop: str = "lucb"
    reg: float | None = hyperparameter(None, low=0.0, low_open=False, traced=True)
    S: float | None = hyperparameter(None, low=0.0, traced=True)
    stopping_pair: str = "post_pull"
    threshold_tail: str = "sqrt_lambda"

    def __post_init__(self):
        for field, allowed in (("index", INDICES), ("threshold", thresholds.names("gifa")), ("compute_J", COMPUTE_J),
                               ("compute_b", COMPUTE_B), ("stop", STOPPINGS), ("stopping_pair", STOPPING_PAIRS),
                               ("threshold_tail", THRESHOLD_TAILS)):
            if getattr(self, field) not in allowed:
                raise ValueError(f"{field} must be one of {allowed}, got {getattr(self, field)!r}")

    def _reg(self, ctx: Context):
        if self.reg is None:
            return ctx.sigma / 20.0  # lambda = sigma / 20 (seed 003 Sec 5)
        return jnp.asarray(self.reg, ctx.instance.arms.dtype)

    def _linear(self) -> bool:
        return self.index != "classical"

    def confidence(self, state: GapView, ctx: Context) -> jax.Array:
        """The threshold C_{t,delta} (seed 003 eq. (2), Sec 5, Kalyanakrishnan et al. 2012, Xu et al. 2018).

        Dimensionless: the widths are C_{t,delta} ||x||_Sigma = C_{t,delta} sigma ||x||_{V_t^-1}.
        """
        inst = ctx.instance
        N = inst.arms.shape[1]
        K = inst.true_num_arms()
        t = jnp.maximum(state.t, 1.0)
        delta = ctx.delta
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
        lam = self._reg(ctx)
        S = jnp.linalg.norm(inst.theta) if self.S is None else self.S
        sigma = ctx.sigma
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

    def _variances(self, state: GapView) -> jax.Array:
        """[K] ||x_a||^2_{V_t^-1} (linear indices)."""
        return jnp.diagonal(state.G) if self._full_matrix() else state.g

    def _cross(self, state: GapView, inst: Instance, idx: jax.Array | None) -> jax.Array:
        """[K, n] x_i^T V_t^-1 x_j for j in ``idx`` (None: all K): a slice of G in full mode,
        X (V^-1 X_idx^T) in column mode (O(n K d + n d^2))."""
        if self._full_matrix():
            return state.G if idx is None else state.G[:, idx]
        X = inst.arms
        Xj = X if idx is None else X[idx]
        return _mv(X, _mv(state.Vinv, Xj.T))

    def gap_columns(self, state: GapView, ctx: Context, idx: jax.Array | None = None) -> jax.Array:
        """B[:, idx] = mu_i(t) - mu_j(t) + C_{t,delta} W_t(i, j) for j in ``idx`` [K, n] (seed 003
        Sec 2); ``idx=None``: the whole [K, K] matrix."""
        inst = ctx.instance
        mu = state.mu
        take = (lambda v: v) if idx is None else (lambda v: v[idx])
        if self.index == "paired":
            # ||x_i - x_j||_Sigma = sigma ||x_i - x_j||_{V_t^-1}, Sigma = sigma^2 V_t^-1 (Sec 2)
            C = self.confidence(state, ctx) * ctx.sigma
            g = self._variances(state)
            D = jnp.maximum(g[:, None] + take(g)[None, :] - 2.0 * self._cross(state, inst, idx), 0.0)
            W = C * jnp.sqrt(D)
            B = mu[:, None] - take(mu)[None, :] + W
            # a padded arm is never a challenger i (row -inf)
            return B if inst.arm_mask is None else jnp.where(inst.arm_mask[:, None], B, -jnp.inf)
        up, low = self._individual_bounds(state, ctx)
        return up[:, None] - take(low)[None, :]

    def gap_indices(self, state: GapView, ctx: Context) -> jax.Array:
        """B[i, j] = mu_i(t) - mu_j(t) + C_{t,delta} W_t(i, j) [K, K] (seed 003 Sec 2).  Read by
        the algorithm in full mode only; in column mode O(K^2 d), for diagnostics and tests."""
        return self.gap_columns(state, ctx, None)

    def _individual_bounds(self, state: GapView, ctx: Context):
        """Individual indices: B[i, j] = U_i - L_j with U = mu + W, L = mu - W (Sec 2).

        W_t(a) = C_t sigma ||x_a||_{V_t^-1} (Sigma = sigma^2 V_t^-1), or C_t sigma / sqrt(N_a)
        for classical indices (Sec 2, last paragraph: lambda = 0, canonical features).
        """
        inst = ctx.instance
        # W_t(a) = C_t ||x_a||_Sigma = C_t sigma ||x_a||_{V_t^-1} (Sec 2); classical: C_t sigma / sqrt(N_a)
        # (Sec 2, last paragraph; with the LUCB1 threshold, Kalyanakrishnan et al. 2012's width)
        C = self.confidence(state, ctx) * ctx.sigma
        if self.index == "individual":
            s = jnp.sqrt(jnp.maximum(self._variances(state), 0.0))
        else:
            s = 1.0 / jnp.sqrt(jnp.maximum(state.counts, 1e-300))
        up = state.mu + C * s
        if inst.arm_mask is not None:
            up = jnp.where(inst.arm_mask, up, -jnp.inf)  # a padded arm is never a challenger
        return up, state.mu - C * s

    def _mth_index(self, state: GapView, ctx: Context, B: jax.Array | None) -> jax.Array:
        """[j] -> max^m_{i != j} B[i, j] for every j (compute_J = "gap").

        Paired indices (full mode): m passes over the K x K matrix ``B``.  Individual (and
        classical) indices are separable, B[i, j] = U_i - L_j, so max^m_{i != j} B[i, j] = (the m-th
        largest U, or the (m+1)-th when j is itself among the m largest) - L_j: O(K), the same
        numbers.
        """
        inst = ctx.instance
        m = self.m
        if self.index == "paired":
            eye = jnp.eye(inst.num_arms, dtype=bool)
            return mth_largest(jnp.where(eye, -jnp.inf, B).T, m)
        up, low = self._individual_bounds(state, ctx)
        top = top_values(up, m + 1)
        return jnp.where(topm_mask(up, m), top[m], top[m - 1]) - low

    def _mth_columns(self, Bc: jax.Array, idx: jax.Array) -> jax.Array:
        """[k] -> max^m_{i != idx_k} Bc[i, k] for the columns Bc = B[:, idx]: O(m^2 K)."""
        own = jnp.arange(Bc.shape[0])[:, None] == idx[None, :]
        return mth_largest(jnp.where(own, -jnp.inf, Bc), self.m, axis=0)

    def decide_pair(self, state: GapView, ctx: Context, prev: GapView | None = None) -> GapView:
        """J(t), b_t, c_t, the stopping statistic and the stopping decision from the current data
        (Algorithm 1, Table 1).

        ``prev``: the state before the last pull (None at initialization); only read with
        ``stopping_pair="pre_pull"``, where the decision is the released code's: tau_LUCB on the
        pair chosen before the pull with the new indices, B_{c_{t-1}, b_{t-1}}(t), or tau_UGapE's
        statistic computed before the pull, and the answer is the J chosen before the pull.
        """
        inst = ctx.instance
        m = self.m
        full = self._full_matrix()
        B = self.gap_indices(state, ctx) if full else None
        valid = inst.valid_arms()
        mth_all = None
        if self.compute_J == "empirical":
            score = state.mu
        else:
            mth_all = self._mth_index(state, ctx, B)  # [j]: max^m_{i != j} B[i, j]
            score = -mth_all
        idx = top_indices(jnp.where(valid, score, -jnp.inf) if inst.arm_mask is not None else score, m)  # J(t)
        ar = jnp.arange(inst.num_arms)
        J = jnp.any(ar[:, None] == idx[None, :], axis=1)
        Bc = B[:, idx] if full else self.gap_columns(state, ctx, idx)  # [K, m]: B[i, j], j in J(t)
        if self.compute_b == "gap" or self.stop == "ugape":
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
        if self.stop == "lucb":
            stat = Bb[c]
        elif self.stop == "ugape":
            stat = jnp.max(mth)
        if self.stop == "glr":
            stat, J_emp = self.glr_statistic(state, ctx)
            done = stat > self.glr_threshold(state, ctx)
            J = jnp.where(done, J_emp, J)
        elif self.stopping_pair == "post_pull":
            done = stat <= ctx.epsilon
        elif prev is None:
            done = jnp.asarray(False)  # the released code checks only after a pull
        else:
            if self.stop == "lucb":
                pre_stat = B[prev.c, prev.b] if full else self.gap_columns(state, ctx, prev.b[None])[prev.c, 0]
            else:
                pre_stat = prev.stat
            done = pre_stat <= ctx.epsilon
            J = jnp.where(done, prev.J, J)
        return state._replace(J=J, b=b.astype(jnp.int32), c=c.astype(jnp.int32), stat=stat, done=done)

    def glr_statistic(self, state: GapView, ctx: Context):
        """(min_{i in J_emp, j notin J_emp} (mu_i - mu_j)_+^2 / (2 sigma^2 ||x_i - x_j||^2_{V_t^-1}),
        J_emp) with J_emp = argmax^[m] mu(t) (bool [K]): the GLR statistic of the Top-m answer
        J_emp with the ridge V_t (Tirinzoni & Degenne's ``min_alt``).  O(m K d)."""
        inst = ctx.instance
        valid = inst.valid_arms()
        mu = state.mu
        idx = top_indices(jnp.where(valid, mu, -jnp.inf) if inst.arm_mask is not None else mu, self.m)
        J_emp = jnp.any(jnp.arange(inst.num_arms)[:, None] == idx[None, :], axis=1)
        g = self._variances(state)
        D = jnp.maximum(g[:, None] + g[idx][None, :] - 2.0 * self._cross(state, inst, idx), 0.0)  # [K, m]
        gaps = jnp.maximum(mu[idx][None, :] - mu[:, None], 0.0)
        sigma = ctx.sigma
        z = gaps * gaps / (2.0 * sigma**2 * jnp.maximum(D, 1e-300))
        z = jnp.where((~J_emp & valid)[:, None], z, jnp.inf)
        return jnp.min(z), J_emp

    def glr_threshold(self, state: GapView, ctx: Context) -> jax.Array:
        """log((t + 1) / delta) of the GLR stopping rule (``stopping="glr"``), t samples so far."""
        return thresholds.log_t(state.t, ctx.delta)


    # -- statistics ------------------------------------------------------------------------------
    def fresh(self, counts, sums, ctx: Context) -> GapView:
        """The statistics of the data (counts, reward sums) computed from scratch: V_t by a
        Cholesky factorisation (the initialization, or none)."""
        inst = ctx.instance
        X = inst.arms
        K, N = X.shape
        dt = X.dtype
        Vinv, g, G = jnp.zeros((1, 1), dt), jnp.zeros(1, dt), jnp.zeros((1, 1), dt)
        if self._linear():
            lam = self._reg(ctx)
            V = lam * jnp.eye(N, dtype=dt) + (X.T * counts) @ X
            L = common.cholesky(V)
            logdet = 2.0 * jnp.sum(jnp.log(jnp.diagonal(L))) - N * jnp.log(lam)
            if self._full_matrix():
                W = common.whiten(L, X)  # [N, K]
                G = W.T @ W
                mu = G @ sums  # X V^-1 X^T sums = X theta_hat, since b_t = X^T sums
            else:
                Vinv = common.inverse_from_cholesky(L)
                g = jnp.sum((X @ Vinv) * X, axis=-1)
                mu = X @ (Vinv @ (X.T @ sums))
        else:
            mu = sums / jnp.maximum(counts, 1.0)
            logdet = jnp.zeros((), dt)
        return GapView(counts=counts, sums=sums, Vinv=Vinv, g=g, G=G, mu=mu, logdet=logdet, t=jnp.sum(counts),
                       J=jnp.zeros(K, bool), b=jnp.int32(0), c=jnp.int32(0), stat=jnp.asarray(jnp.inf, dt),
                       done=jnp.asarray(False))

    def pulled(self, state: GapView, inst: Instance, arm, reward) -> GapView:
        """The statistics after one more reward of ``arm`` (``counts`` and ``sums`` already
        include it): Sherman-Morrison on V_t^-1 and the variances, or on X V_t^-1 X^T."""
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
            mu = state.sums / jnp.maximum(state.counts, 1.0)
        return state._replace(Vinv=Vinv, g=g, G=G, mu=mu, logdet=logdet)

    # -- the rule's contract --------------------------------------------------------------------
    def _belief(self, v: GapView, stats: common.LinearStats) -> Belief:
        return Belief(stats, v.t, None, None, None, v.J, carry_of(v))

    def _decision(self, v: GapView, ctx: Context) -> Decision:
        dt = v.mu.dtype
        if self.stop == "glr":  # done = stat > log((t + 1) / delta), as decide_pair
            return v.stat, self.glr_threshold(v, ctx)
        return jnp.where(v.done, jnp.inf, -jnp.inf).astype(dt), jnp.zeros((), dt)

    def _stats(self, counts, sums) -> common.LinearStats:
        dt = counts.dtype
        return common.LinearStats(counts, sums, jnp.zeros((0, 0), dt), jnp.zeros((0,), dt))  # no A_t, b_t

    def start(self, key: jax.Array, instance: Instance, ctx: Context) -> Belief:
        """No data: the statistics of V_0 = lambda I and the decision they give (Algorithm 1 tests
        its stopping rule before the first pull)."""
        del key
        zero = jnp.zeros(instance.num_arms, instance.arms.dtype)
        return self._belief(self.decide_pair(self.fresh(zero, zero, ctx), ctx), self._stats(zero, zero))

    def stops_at_start(self, belief: Belief) -> jax.Array:
        return belief.carry.done

    def advance(self, belief: Belief, stats: common.LinearStats, t: jax.Array, ctx: Context,
                pulled=None) -> Decision:
        if pulled is None:  # the pulls made all at once before the first step: from scratch
            v = self.fresh(stats.counts, stats.sums, ctx)._replace(t=t)
            new = self.decide_pair(v, ctx)
        else:
            prev = view(belief)
            v = prev._replace(counts=stats.counts, sums=stats.sums, t=t)
            arms, rewards = pulled
            if isinstance(arms, tuple):  # several pulls in the step, in order
                for a, r in zip(arms, rewards):
                    v = self.pulled(v, ctx.instance, a, r)
            else:
                v = self.pulled(v, ctx.instance, arms, rewards)
            new = self.decide_pair(v, ctx, prev=prev)
        statistic, beta = self._decision(new, ctx)
        return Decision(self._belief(new, stats), statistic, beta, jnp.ones((), bool))

    def belief_beta(self, belief: Belief, ctx: Context):
        raise TypeError("the GIFA family's gap indices are not a GLR statistic against a threshold: no elimination")


# ------------------------------------------------------------------------------------------------
# the sampling rule
# ------------------------------------------------------------------------------------------------
class OptimizedState(NamedTuple):
    w_pair: jax.Array  # [2] the pair (b, c) whose w* is cached in ``w``
    w: jax.Array       # [K] w*(b, c) of eq. (1)


@dataclasses.dataclass(frozen=True)
class GapSelection(SamplingRule):
    """GIFA's selection rule (seed 003 Sec 3.2): the arm pulled from the pair (b_t, c_t) of
    :class:`GapIndices`'s carry.

    Attributes:
      selection: ``"largest_variance"`` (argmax_{a in {b, c}} W_t(a)), ``"greedy"``
        (argmin_a ||x_b - x_c||_{(V_t + x_a x_a^T)^-1}), ``"optimized"`` (eq. (1); w* cached until
        the pair changes) or ``"both"`` (pull b_t and c_t, original LUCB: two pulls per step).
      tie_break: ``"random"`` (Sec 3.1) or ``"first"`` (lowest index).
      batched: the accelerator program (the optimized rule's simplex with fixed trips).
    """

    draws: ClassVar[int] = 1
    reads: ClassVar[tuple[str, ...]] = ()
    selection: str = "largest_variance"
    tie_break: str = "random"
    batched: bool = False

    def __post_init__(self):
        if self.selection not in SELECTIONS:
            raise ValueError(f"selection must be one of {SELECTIONS}, got {self.selection!r}")
        if self.tie_break not in TIE_BREAKS:
            raise ValueError(f"tie_break must be one of {TIE_BREAKS}, got {self.tie_break!r}")

    @property
    def pulls(self) -> int:
        return 2 if self.selection == "both" else 1

    def split_key(self, key):
        """(selection key,), (pull key[, second pull key]): ``split(key, 3)``, whatever the rule."""
        k_sel, k_pull, k_pull2 = jax.random.split(key, 3)
        return (k_sel,), (k_pull, k_pull2)[:self.pulls]

    def check_stopping(self, stopping: StoppingRule) -> None:
        if not isinstance(stopping, GapIndices):
            raise TypeError(f"GapSelection reads the pair (b_t, c_t) and the statistics that GapIndices keeps in the "
                            f"belief: compose it with jaxbandits.rules.gap.GapIndices, got {type(stopping).__name__}")

    def init(self, key, instance: Instance):
        del key
        if self.selection != "optimized":
            return ()
        return OptimizedState(jnp.full((2,), -1, jnp.int32), jnp.zeros(instance.num_arms, instance.arms.dtype))

    def _pick(self, key, v, valid):
        return argmax_random_ties(key if self.tie_break == "random" else None, v, valid)

    def update(self, keys, state, belief: Belief, ctx: Context):
        """The selection rule: (arm, or the pair (arm, other) with ``"both"``; the w* cache)."""
        inst = ctx.instance
        key = keys[0]
        v = view(belief)
        K = inst.num_arms
        b, c = v.b, v.c
        ar = jnp.arange(K)
        full, column = v.G.shape[0] > 1, v.g.shape[0] > 1  # the modes of GapIndices (GapCarry's shapes)
        variances = jnp.diagonal(v.G) if full else v.g
        if self.selection in ("largest_variance", "both"):
            var = variances if (full or column) else 1.0 / jnp.maximum(v.counts, 1e-300)
            w = jnp.where(ar == b, var[b], jnp.where(ar == c, var[c], -jnp.inf))
            arm = self._pick(key, w, (ar == b) | (ar == c))
            if self.selection == "both":
                return jnp.stack([arm, jnp.where(arm == b, c, b)]), state
            return arm, state
        if self.selection == "greedy":
            # ||y||^2_{(V + x_a x_a^T)^-1} = ||y||^2_{V^-1} - (y^T V^-1 x_a)^2 / (1 + ||x_a||^2_{V^-1}),
            # y = x_b - x_c, y^T V^-1 x_a = G[b, a] - G[c, a]: minimise = maximise the decrease.
            if full:
                u = v.G[b] - v.G[c]
            else:
                u = _mv(inst.arms, _mv(v.Vinv, inst.arms[b] - inst.arms[c]))  # O(K d + d^2)
            score = u * u / (1.0 + variances)
            return self._pick(key, score, inst.valid_arms()), state
        # optimized (eq. (1)); w* cached per pair
        pair = jnp.stack([b, c])
        stale = jnp.any(pair != state.w_pair)
        sol = min_l1_representation(inst.arms, inst.arms[b] - inst.arms[c], active=stale, fixed_trips=self.batched)
        w = jnp.where(stale, sol.w, state.w)
        aw = jnp.abs(w)
        valid = (aw > 1e-9 * jnp.max(aw)) & inst.valid_arms()
        score = -v.counts / jnp.where(valid, aw, 1.0)
        arm = self._pick(key, score, valid)
        return arm, OptimizedState(pair, w)

    def validate(self, instance: Instance) -> None:
        pass
