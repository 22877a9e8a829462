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
from jaxbandits.rules import thresholds
from jaxbandits.rules.core import Belief, Context, Decision, StoppingRule
from jaxbandits.rules.recommend import FurthestAnswer


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
        return beta, common.lambda_min(stats.gram) >= c

    def decide(self, stats: common.LinearStats, t: jax.Array, ctx: Context) -> Decision:
        instance = ctx.instance
        theta, L = common.least_squares(stats)
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
