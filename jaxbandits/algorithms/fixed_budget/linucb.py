"""LinUCB (Li et al. 2010; the shared-parameter, OFUL-style form of seed 002 App F) turned into
fixed-budget identification: pull argmax_x x^T theta_hat + alpha ||x||_{V^{-1}} with ridge estimate
theta_hat; after B pulls return the most-pulled arm (App F: "we take the most frequently played
arm").  One ``step`` is one pull; the runs spend exactly B pulls.  LinUCB carries V_t^{-1}, updated
by Sherman-Morrison at each pull, so that a step makes no factorisation or triangular solve (no
solver library call under ``vmap`` on an accelerator, whatever d).
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp

from jaxbandits.algorithms.base import Algorithm, Outcome, answer_mask, hyperparameter
from jaxbandits.algorithms.common import noise_scale
from jaxbandits.environment import pull
from jaxbandits.instances.base import Instance


def most_pulled(pulls: jax.Array) -> jax.Array:
    """Index of the most-pulled arm (ties towards the smaller index)."""
    return jnp.argmax(pulls)


class UCBState(NamedTuple):
    t: jax.Array        # pulls made
    pulls: jax.Array    # [K]
    sums: jax.Array     # [K] reward sums (successes for Bernoulli rewards)
    theta: jax.Array    # [d] last estimate (warm start of the GLM fit)


class LinUCBState(NamedTuple):
    t: jax.Array        # pulls made
    pulls: jax.Array    # [K]
    sums: jax.Array     # [K] reward sums (successes for Bernoulli rewards)
    theta: jax.Array    # [d] the ridge estimate of the last pick
    inverse: jax.Array  # [d, d] V_t^{-1} = (lambda I + sum x x^T)^{-1}, by Sherman-Morrison updates


def sherman_morrison(inverse: jax.Array, x: jax.Array) -> jax.Array:
    """(V + x x^T)^{-1} from V^{-1} (symmetric): V^{-1} - u u^T / (1 + x^T u), u = V^{-1} x."""
    u = inverse @ x
    return inverse - jnp.outer(u, u) / (1.0 + x @ u)


def _gram(X, pulls):
    return (X.T * pulls) @ X


def _ucb_pick(X, theta, V, alpha, L=None, squared: bool = False):
    L = jnp.linalg.cholesky(V) if L is None else L
    W = jax.scipy.linalg.solve_triangular(L, X.T, lower=True)
    sq = jnp.sum(W * W, axis=0)
    return jnp.argmax(X @ theta + alpha * (sq if squared else jnp.sqrt(sq)))


@dataclasses.dataclass(frozen=True)
class _MostPulledBaseline(Algorithm):
    """The shared end of the regret baselines turned into fixed-budget identification (seed 002
    App F): run until the budget is spent, then recommend the most-pulled arm."""

    needs_span: ClassVar[bool] = False
    fixed_budget: ClassVar[bool] = True

    def validate(self, instance: Instance) -> None:
        super().validate(instance)
        if instance.num_items != instance.num_arms:
            raise ValueError(f"{type(self).__name__} recommends an arm: items must be the arms (Z = X)")

    def steps_needed(self, instance, dim=None) -> int:
        """Engine steps a run takes (:class:`~jaxbandits.algorithms.base.StepsNeeded`): one pull each."""
        return int(self.budget)

    def init(self, key, instance: Instance) -> UCBState:
        K, d = instance.arms.shape
        dt = instance.arms.dtype
        return UCBState(jnp.zeros((), jnp.int32), jnp.zeros(K, dt), jnp.zeros(K, dt), jnp.zeros(d, dt))

    def done(self, state: UCBState) -> jax.Array:
        return state.t >= self.budget

    def outcome(self, state: UCBState, instance: Instance) -> Outcome:
        return Outcome(answer_mask(most_pulled(state.pulls), instance.num_items), state.t, state.pulls)


@dataclasses.dataclass(frozen=True)
class LinUCB(_MostPulledBaseline):
    """LinUCB / OFUL (Li et al. 2010; Abbasi-Yadkori et al. 2011) returning the most-pulled arm.

    Attributes:
      budget: B.
      reg: ridge lambda > 0 (V = lambda I + sum x x^T; V_0 = lambda I is inverted at the start).
      alpha: confidence width multiplier; default (None) the OFUL radius
        sigma sqrt(d log(1 + t L^2 / (lambda d)) + 2 log(1 / delta)) + sqrt(lambda) S
        (Abbasi-Yadkori et al. 2011, Theorem 2 with det V_t <= (lambda + t L^2 / d)^d).
      delta, theta_norm: delta and the bound S on ||theta|| of that radius.
      sigma: sub-Gaussian scale R of that radius; default
        :func:`~jaxbandits.algorithms.common.noise_scale` (the instance's Gaussian noise, 1/2 for
        Bernoulli / logistic rewards).  Logistic rewards are accepted: the linear model is then
        misspecified, as GSE-Lin is on purpose in seed 002 Sec 8.4.
    """

    budget: int = hyperparameter(low=0.0, pulls=True, traced=True)
    reg: float = hyperparameter(1.0, low=0.0, traced=True)
    alpha: float | None = hyperparameter(None, traced=True)
    delta: float = hyperparameter(0.05, low=0.0, high=1.0, traced=True)
    theta_norm: float = hyperparameter(1.0, low=0.0, traced=True)
    sigma: float | None = hyperparameter(None, low=0.0, traced=True)

    def radius(self, t, instance):
        X = instance.arms
        d = X.shape[1]
        if self.alpha is not None:
            return jnp.asarray(self.alpha, X.dtype)
        L2 = jnp.max(jnp.sum(X * X, axis=-1))
        sigma = noise_scale(self.sigma, instance)
        # Abbasi-Yadkori et al. 2011 Thm 2: R sqrt(2 log(det(V_t)^1/2 det(lambda I)^-1/2 / delta))
        # + lambda^1/2 S, R = sigma the sub-Gaussian scale of the noise
        return (sigma * jnp.sqrt(d * jnp.log1p(t * L2 / (self.reg * d)) + 2.0 * jnp.log(1.0 / self.delta))
                + jnp.sqrt(self.reg) * self.theta_norm)

    def init(self, key, instance: Instance) -> LinUCBState:
        K, d = instance.arms.shape
        dt = instance.arms.dtype
        return LinUCBState(jnp.zeros((), jnp.int32), jnp.zeros(K, dt), jnp.zeros(K, dt), jnp.zeros(d, dt),
                           jnp.eye(d, dtype=dt) / jnp.asarray(self.reg, dt))

    def step(self, key, state: LinUCBState, instance: Instance) -> LinUCBState:
        X = instance.arms
        inverse = state.inverse
        theta = inverse @ (X.T @ state.sums)
        sq = jnp.maximum(jnp.sum((X @ inverse) * X, axis=1), 0.0)          # ||x||^2_{V^-1} of every arm
        a = jnp.argmax(X @ theta + self.radius(state.t.astype(X.dtype), instance) * jnp.sqrt(sq))
        y = pull(key, instance, a)
        return LinUCBState(state.t + 1, state.pulls.at[a].add(1.0), state.sums.at[a].add(y), theta,
                           sherman_morrison(inverse, X[a]))
