"""GLR stopping rules: stop when the GLR statistic of the recommended answer exceeds the threshold.

* :class:`GLR`: seed 000's stopping rule (8) (Jedra & Proutiere 2020, Sec 3.4): the least-squares
  estimate, the GLR statistic Z(t) = min_{b != ihat} Z_{ihat,b}(t) of Lemma 7 (its Cholesky form,
  :func:`jaxbandits.algorithms.common.glr_statistic`), the threshold of Prop 2 / eq. (9)
  (:func:`jaxbandits.rules.thresholds.prop2`, constant ``u``, c = max_a ||a||^2: Remark 1) and the
  precondition A_t >= c I; the recommendation is the empirical best item.  Delta-correct under any
  sampling rule (Prop 2).
* :class:`TransportGLR`: the GLR of Jourdan & Degenne (ICML 2022, Sec 2) through the
  transportation costs W^eps_{i,j} (:func:`jaxbandits.algorithms.glr.transport_costs`, the
  inverse of the ridge-regularised design matrix), epsilon-best answers allowed, the answer chosen
  by a recommendation rule (:mod:`jaxbandits.rules.recommend`), any threshold of the GLR family
  (:data:`jaxbandits.rules.thresholds.ALIASES` ``["glr"]``: ``"heuristic"`` log((1 + log t) /
  delta), ``"lts"`` eq. (9) with the union over rounds, ``"log_t"`` log((t + 1) / delta)).

* :class:`EmpiricalGLR`: the GLR of the empirical best item under the ridge estimate, in the form
  of Wang et al.'s released FWS code (``"envelope"``, the alternative built with the ridge inverse
  and evaluated with A_t) or of Tirinzoni & Degenne's ``runit.jl`` (``"ridge"``, the ridge inverse
  in the norm), against any threshold of the GLR family.
* :class:`GameGLR`: LinGame's GLR stopping rule (Degenne, Menard, Shang & Valko 2020, Sec 3 and
  6), best-arm and Top-m: the ridge estimate, the statistic of the closest piece of the
  alternative (:mod:`jaxbandits.rules.alternative`) in units of sigma^2 against
  log((log t + 1) / delta), Abbasi-Yadkori's self-normalised bound, or log((t + 1) / delta).

All are written as the algorithms that used them computed them (the same floating-point
operations), so a composition reproduces those algorithms' replications bit for bit.
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp

from jaxbandits.algorithms import common, glr
from jaxbandits.algorithms.base import Configurable, hyperparameter
from jaxbandits.instances.base import Instance
from jaxbandits.rules import entrywise, thresholds
from jaxbandits.rules.alternative import closest_piece
from jaxbandits.rules.core import Belief, Context, Decision, StoppingRule
from jaxbandits.rules.recommend import EmpiricalBest, FurthestAnswer


def glr_threshold(kind: str, stats: common.LinearStats, t, ctx: Context):
    """sigma^2 beta(t, delta) of a GLR-family threshold (:func:`jaxbandits.algorithms.glr.stopping_threshold`),
    with c = max_a ||a||^2 where it enters (eq. (9))."""
    X = ctx.instance.arms
    c = jnp.max(jnp.sum(X * X, axis=-1))
    return glr.stopping_threshold(kind, stats.gram, t, ctx.delta, ctx.sigma, c)


@dataclasses.dataclass(frozen=True)
class GLR(StoppingRule):
    """Seed 000's GLR stopping rule (8): Z(t) > beta(delta, t) and A_t >= c I, beta of Prop 2 /
    eq. (9) with constant ``u`` (Remark 1: u = 1) and c = max_a ||a||^2 (module docstring).

    Attributes:
      u: the constant u of Prop 2.
    """

    u: float = hyperparameter(1.0, low=0.0, traced=True)

    def beta(self, stats: common.LinearStats, t: jax.Array, ctx: Context):
        c = jnp.max(jnp.sum(ctx.instance.arms**2, axis=-1))
        # sigma enters the threshold only: beta = (1 + u) sigma^2 log(...) (Prop 2 / eq. (9))
        beta = thresholds.prop2(stats.gram, ctx.delta, ctx.sigma, c, self.u)
        # A_t >= c I up to a relative 1e-12 (common.covers): with a basis among the arms A_t
        # reaches lambda_min = c exactly, and the slack settles that tie the same way in every
        # program (unrolled pivots for d <= 8: no solver call on a GPU)
        return beta, common.covers(stats.gram, c)

    def decide(self, stats: common.LinearStats, t: jax.Array, ctx: Context) -> Decision:
        instance = ctx.instance
        theta, L = common.least_squares(stats)
        if entrywise.glr_applies(instance):  # the accelerator program's form: one elementwise kernel
            z, best = entrywise.glr_decide(instance.items, stats.gram, stats.b, instance.item_mask)
        else:
            z, best = common.glr_statistic(theta, L, instance.items, instance.item_mask)
        beta, ready = self.beta(stats, t, ctx)
        return Decision(Belief(stats, t, theta, L, None, best.astype(jnp.int32)), z, beta, ready)


@dataclasses.dataclass(frozen=True)
class TransportGLR(StoppingRule):
    """The GLR of the recommended answer through the transportation costs, epsilon-best answers
    allowed: stop when min_j W^eps_{answer,j} > sigma^2 beta(t, delta) (module docstring).

    Attributes:
      threshold: a name of the GLR family (:data:`jaxbandits.rules.thresholds.ALIASES` ``["glr"]``).
      reg: ridge parameter of the estimate (0: least squares; any fixed ridge keeps
        sigma-equivariance).
      recommend: the recommendation rule (:class:`~jaxbandits.rules.recommend.FurthestAnswer` or
        :class:`~jaxbandits.rules.recommend.EmpiricalBest`).
    """

    epsilon_good: ClassVar[bool] = True
    threshold: str = "heuristic"
    reg: float = hyperparameter(0.0, low=0.0, low_open=False, traced=True)
    recommend: Configurable = FurthestAnswer()

    def __post_init__(self):
        glr.check_threshold(self.threshold)
        if not callable(self.recommend):
            raise TypeError(f"TransportGLR.recommend must be a recommendation rule (jaxbandits.rules.recommend), "
                            f"got {self.recommend!r}")

    def prior(self, instance: Instance) -> Belief:
        d = instance.dim
        dt = instance.arms.dtype
        return Belief(common.init_stats(instance), jnp.zeros((), jnp.int32), jnp.zeros((d,), dt), None,
                      jnp.eye(d, dtype=dt), jnp.zeros((), jnp.int32))

    def beta(self, stats: common.LinearStats, t: jax.Array, ctx: Context):
        return glr_threshold(self.threshold, stats, t, ctx), jnp.ones((), bool)

    def decide(self, stats: common.LinearStats, t: jax.Array, ctx: Context) -> Decision:
        rec = self.recommend
        known = type(rec) in (FurthestAnswer, EmpiricalBest)
        if known and entrywise.transport_applies(ctx.instance, getattr(rec, "candidates", None)):
            # the accelerator program's form: two elementwise kernels
            theta, Ainv, answer, z = entrywise.transport_decide(ctx.instance.items, stats.gram, stats.b, self.reg,
                                                                ctx.epsilon, isinstance(rec, FurthestAnswer))
            beta = glr_threshold(self.threshold, stats, t, ctx)
            return Decision(Belief(stats, t, theta, None, Ainv, answer), z, beta, jnp.ones((), bool))
        L = common.safe_cholesky(common.regularized_gram(stats, self.reg))
        Ainv = common.inverse_from_cholesky(L)
        theta = Ainv @ stats.b
        z, answer = self.recommend(theta, Ainv, ctx.instance.items, ctx.epsilon)
        beta = glr_threshold(self.threshold, stats, t, ctx)
        return Decision(Belief(stats, t, theta, None, Ainv, answer.astype(jnp.int32)), z, beta,
                        jnp.ones((), bool))


GLR_FORMS = ("envelope", "ridge")


def envelope_glr(theta, gram, W, Z, best):
    """The released FWS code's GLR: Z_j = (d_j^T theta)^2 d_j^T W A W d_j / (2 (d_j^T W d_j)^2),
    d_j = z_best - z_j, min over j with z_j != z_best (W = (A_t + reg I)^-1; with reg = 0 the exact
    GLR of seed 000 Lemma 7)."""
    D = Z[best][None, :] - Z
    gaps = jnp.maximum(D @ theta, 0.0)
    U = D @ W
    q = jnp.sum(U * D, axis=-1)
    s = jnp.sum((U @ gram) * U, axis=-1)
    z = gaps * gaps * s / (2.0 * jnp.maximum(q * q, 1e-300))
    same = jnp.all(D == 0, axis=-1)
    return jnp.min(jnp.where(same, jnp.inf, z))


@dataclasses.dataclass(frozen=True)
class EmpiricalGLR(StoppingRule):
    """The GLR of the empirical best item under the ridge estimate theta_hat = (A_t + reg I)^-1 b_t
    (module docstring): stop when Z(t) > sigma^2 beta(t, delta).

    Attributes:
      threshold: a name of the GLR family (:data:`jaxbandits.rules.thresholds.ALIASES` ``["glr"]``).
      reg: ridge parameter (Wang et al.'s and Tirinzoni & Degenne's code: 1).
      form: "envelope" (Wang et al.'s released code, :func:`envelope_glr`) or "ridge" (the ridge
        inverse in the norm, Tirinzoni & Degenne's ``runit.jl``).
    """

    threshold: str = "heuristic"
    reg: float = hyperparameter(1.0, low=0.0, low_open=False, traced=True)
    form: str = "envelope"

    def __post_init__(self):
        glr.check_threshold(self.threshold)
        if self.form not in GLR_FORMS:
            raise ValueError(f"glr_form must be one of {GLR_FORMS}, got {self.form!r}")

    prior = TransportGLR.prior  # the belief keeps the inverse, as the decision does

    def decide(self, stats: common.LinearStats, t: jax.Array, ctx: Context) -> Decision:
        Z = ctx.instance.items
        if entrywise.pairs_apply(ctx.instance):  # the accelerator program's form: two elementwise kernels
            theta, W, best, z = entrywise.empirical_glr_decide(Z, stats.gram, stats.b, self.reg,
                                                               self.form == "envelope")
            beta = glr_threshold(self.threshold, stats, t, ctx)
            return Decision(Belief(stats, t, theta, None, W, best), z, beta, jnp.ones((), bool))
        W = common.inverse_from_cholesky(common.safe_cholesky(common.regularized_gram(stats, self.reg)))
        theta = W @ stats.b
        best = common.argmax_fast(Z @ theta).astype(jnp.int32)
        if self.form == "ridge":  # Tirinzoni & Degenne's runit.jl: the ridge inverse in the norm
            z = jnp.min(glr.ridge_glr_row(theta, W, Z, best))
        else:
            z = envelope_glr(theta, stats.gram, W, Z, best)  # unit variance: sigma on the threshold side
        beta = glr_threshold(self.threshold, stats, t, ctx)
        return Decision(Belief(stats, t, theta, None, W, best), z, beta, jnp.ones((), bool))

    def beta(self, stats: common.LinearStats, t: jax.Array, ctx: Context):
        return glr_threshold(self.threshold, stats, t, ctx), jnp.ones((), bool)


@dataclasses.dataclass(frozen=True)
class GameGLR(StoppingRule):
    """LinGame's GLR stopping rule (Degenne et al. 2020, Sec 3 / Sec 6): the ridge estimate
    theta_hat = (V_{N_t} + reg I)^-1 b_t, the answer i*(theta_hat) (the m best items for Top-m),
    and stop when Z(t) / sigma^2 > beta(t, delta), Z(t) the distance of theta_hat to the closest
    piece of Alt(answer) (:func:`~jaxbandits.rules.alternative.closest_piece`).

    ``threshold`` (:data:`jaxbandits.rules.thresholds.ALIASES` ``["lingame"]``): ``"heuristic"``
    log((log t + 1) / delta) (Sec 6, after Garivier & Kaufmann 2016), with A = V_{N_t}
    unregularised in Z, as the experiments' code; ``"theoretical"`` Abbasi-Yadkori et al.'s
    self-normalised bound (2011, Thm 2) with A = V_t (delta-correct); ``"log_t"`` log((t + 1) /
    delta) (Tirinzoni & Degenne 2022).  The belief keeps theta_hat and (V_{N_t} + reg I)^-1, the
    optimistic gains' V_t^-1.

    Attributes:
      m: size of the answer (1: best-arm identification).
      threshold: "heuristic", "theoretical" or "log_t".
      reg: ridge regulariser (> 0).
      S: bound on ||theta|| of the theoretical threshold (None: ||theta|| of the instance).
    """

    m: int = hyperparameter(1, count=1)
    threshold: str = "heuristic"
    reg: float = hyperparameter(1.0, low=0.0, traced=True)
    S: float | None = hyperparameter(None, low=0.0)

    def __post_init__(self):
        thresholds.resolve("lingame", self.threshold)

    def prior(self, instance: Instance) -> Belief:
        d = instance.dim
        dt = instance.arms.dtype
        answer = (jnp.zeros((), jnp.int32) if int(self.m) == 1 else jnp.zeros((instance.num_items,), bool))
        return Belief(common.init_stats(instance), jnp.zeros((), jnp.int32), jnp.zeros((d,), dt), None,
                      jnp.eye(d, dtype=dt), answer)

    def unit_beta(self, stats: common.LinearStats, tf, ctx: Context):
        """beta(t, delta) in units of sigma^2."""
        rule = thresholds.resolve("lingame", self.threshold)
        if rule == "log_log_t":  # Sec 6 (Garivier & Kaufmann 2016 Sec 6)
            return thresholds.log_log_t(tf, ctx.delta)
        if rule == "log_t":  # Tirinzoni & Degenne 2022 (thresholds.jl)
            return thresholds.log_t(tf, ctx.delta)
        dt = ctx.instance.arms.dtype
        S = jnp.linalg.norm(ctx.instance.theta) if self.S is None else jnp.asarray(self.S, dt)
        return thresholds.abbasi_yadkori(stats.gram, ctx.delta, self.reg, S, ctx.sigma)  # Thm 2

    def beta(self, stats: common.LinearStats, t: jax.Array, ctx: Context):
        """(sigma^2 beta(t, delta), ready): the threshold of the unit-variance GLR, as elimination
        compares it."""
        return ctx.sigma**2 * self.unit_beta(stats, t.astype(ctx.instance.arms.dtype), ctx), jnp.ones((), bool)

    def elimination_beta(self, decision: Decision, ctx: Context) -> jax.Array:
        return ctx.sigma**2 * decision.beta

    def decide(self, stats: common.LinearStats, t: jax.Array, ctx: Context) -> Decision:
        inst = ctx.instance
        dt = inst.arms.dtype
        d = stats.gram.shape[0]
        Vinv = common.inverse_gram(stats.gram + self.reg * jnp.eye(d, dtype=stats.gram.dtype))
        theta = Vinv @ stats.b
        values = inst.items @ theta
        m = int(self.m)
        # heuristic: V_{N_t}^-1 (the experiments' code); otherwise the ridge inverse V_t^-1
        Ainv = common.inverse_gram(stats.gram) if self.threshold == "heuristic" else Vinv
        beta = self.unit_beta(stats, t.astype(dt), ctx)
        if entrywise.applies(inst, m):  # the accelerator program's form: one elementwise kernel
            answer, z = entrywise.game_glr_decide(inst.items, stats.gram, stats.b, self.reg, ctx.sigma,
                                                self.threshold == "heuristic")
            return Decision(Belief(stats, t, theta, None, Vinv, answer), z, beta, jnp.ones((), bool))
        if m == 1:  # seed 000 Lemma 7's statistic (the library's O(M d^2) form)
            answer = common.argmax_fast(values).astype(jnp.int32)
            z, _ = common.glr_statistic_inv(theta, Ainv, inst.items)
        else:
            answer = common.topm_mask(values, m)
            z, _, _ = closest_piece(theta, Ainv, inst.items, answer, jnp.ones_like(answer), m)
        z = z / ctx.sigma**2  # the Gaussian GLR is 1/(2 sigma^2) ||.||^2 (Sec 2)
        return Decision(Belief(stats, t, theta, None, Vinv, answer), z, beta, jnp.ones((), bool))
