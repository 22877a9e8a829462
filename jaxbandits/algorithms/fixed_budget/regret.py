"""Cumulative-regret and fixed-confidence baselines turned into fixed-budget identification
(seed 002 Sec 8 and App F).

* :class:`LinUCB` (Li et al. 2010; the shared-parameter, OFUL-style form of App F): pull
  argmax_x x^T theta_hat + alpha ||x||_{V^{-1}} with ridge estimate theta_hat; after B pulls return
  the most-pulled arm (App F: "we take the most frequently played arm").
* :class:`UCBGLM` (Li, Lu & Zhou 2017, Algorithm 1): tau initial pulls (round-robin over the arms,
  in place of Li et al.'s random ones), then argmax_x x^T theta_hat + alpha ||x||_{V^{-1}} with
  theta_hat the logistic maximum-likelihood estimate (IRLS, warm-started, :mod:`.glm`) and
  V = sum_s x_s x_s^T; returns the most-pulled arm.
* :func:`budget_capped`: any fixed-confidence algorithm stopped at the budget, recommending its
  current empirical best (App F: LinGapE "stopped at the budget limit", with delta chosen by grid
  search -- see :func:`grid_search_delta`).

One ``step`` is one pull; the runs spend exactly B pulls.
"""
from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxbandits.algorithms.base import Algorithm, Outcome, answer_mask
from jaxbandits.algorithms.common import noise_scale
from jaxbandits.algorithms.fixed_budget.glm import logistic_mle
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
    dynamic_fields: ClassVar[tuple[str, ...]] = ("budget",)  # traced: a budget sweep compiles once

    def validate(self, instance: Instance) -> None:
        super().validate(instance)
        if instance.num_items != instance.num_arms:
            raise ValueError(f"{type(self).__name__} recommends an arm: items must be the arms (Z = X)")

    def steps_needed(self, num_arms: int) -> int:
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
      reg: ridge lambda (V = lambda I + sum x x^T).
      alpha: confidence width multiplier; default (None) the OFUL radius
        sigma sqrt(d log(1 + t L^2 / (lambda d)) + 2 log(1 / delta)) + sqrt(lambda) S
        (Abbasi-Yadkori et al. 2011, Theorem 2 with det V_t <= (lambda + t L^2 / d)^d).
      delta, theta_norm: delta and the bound S on ||theta|| of that radius.
      sigma: sub-Gaussian scale R of that radius; default
        :func:`~jaxbandits.algorithms.common.noise_scale` (the instance's Gaussian noise, 1/2 for
        Bernoulli / logistic rewards).  Logistic rewards are accepted: the linear model is then
        misspecified, as GSE-Lin is on purpose in seed 002 Sec 8.4.
    """

    dynamic_fields: ClassVar[tuple[str, ...]] = ("budget", "reg", "alpha", "delta", "theta_norm", "sigma")
    budget: int
    reg: float = 1.0
    alpha: float | None = None
    delta: float = 0.05
    theta_norm: float = 1.0
    sigma: float | None = None

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

    def step(self, key, state: UCBState, instance: Instance) -> UCBState:
        X = instance.arms
        d = X.shape[1]
        V = _gram(X, state.pulls) + self.reg * jnp.eye(d, dtype=X.dtype)
        L = jnp.linalg.cholesky(V)
        theta = jax.scipy.linalg.cho_solve((L, True), X.T @ state.sums)
        a = _ucb_pick(X, theta, V, self.radius(state.t.astype(X.dtype), instance), L)
        y = pull(key, instance, a)
        return UCBState(state.t + 1, state.pulls.at[a].add(1.0), state.sums.at[a].add(y), theta)


@dataclasses.dataclass(frozen=True)
class UCBGLM(_MostPulledBaseline):
    """UCB-GLM (Li, Lu & Zhou 2017, Algorithm 1) for logistic rewards, returning the most-pulled arm.

    Attributes:
      budget: B.
      tau: initial exploration pulls, round-robin over the arms (default K: each arm once).
      alpha: width multiplier; default (None) Li et al.'s
        (sigma / kappa) sqrt(d/2 log(1 + 2 t / d) + log(1 / delta)) (Li, Lu & Zhou 2017,
        Theorem 1 / Algorithm 1 line 5).
      kappa, delta: of that default (kappa a lower bound on the link's derivative).
      sigma: the sub-Gaussian scale of that default; default
        :func:`~jaxbandits.algorithms.common.noise_scale` (1/2 for rewards in {0, 1}).
      reg: ridge guard of the MLE and of V; irls_iters: Newton steps per pull (warm-started).
      width: "norm" (Li et al.: alpha ||x||_{V^-1}) or "squared" (alpha ||x||^2_{V^-1}, what the
        seed 002 authors' code computes, with alpha = 1/2: a far smaller bonus once
        ||x||^2_{V^-1} < 1, i.e. nearly greedy).  :func:`ucbglm_released` is that configuration.

    The logistic likelihood needs rewards in {0, 1}: ``validate`` refuses Gaussian rewards
    (Bernoulli rewards with a linear mean are accepted, the logistic link then misspecified).
    """

    dynamic_fields: ClassVar[tuple[str, ...]] = ("budget", "alpha", "kappa", "delta", "reg", "sigma")
    budget: int
    tau: int | None = None
    alpha: float | None = None
    kappa: float = 0.1
    delta: float = 0.05
    reg: float = 1e-3
    irls_iters: int = 10
    sigma: float | None = None
    width: str = "norm"

    def __post_init__(self):
        if self.width not in ("norm", "squared"):
            raise ValueError(f"width must be 'norm' or 'squared', got {self.width!r}")

    def validate(self, instance: Instance) -> None:
        super().validate(instance)
        if instance.model == "gaussian":
            raise ValueError("UCB-GLM fits a logistic likelihood, which needs rewards in {0, 1}: "
                             "use a 'logistic' (or 'bernoulli') instance, not 'gaussian' rewards "
                             "(LinUCB is the Gaussian-reward baseline)")
        tau = instance.num_arms if self.tau is None else int(self.tau)
        if int(self.budget) < tau:
            raise ValueError(f"UCB-GLM needs B >= tau = {tau} initial pulls, got B = {self.budget}")

    def radius(self, t, instance):
        """The width multiplier alpha after t pulls (``alpha`` if given)."""
        X = instance.arms
        d = X.shape[1]
        if self.alpha is not None:
            return jnp.asarray(self.alpha, X.dtype)
        # Li, Lu & Zhou 2017 Thm 1: alpha = (sigma / kappa) sqrt(d/2 log(1 + 2t/d) + log(1/delta))
        sigma = noise_scale(self.sigma, instance)
        return (sigma / self.kappa) * jnp.sqrt(0.5 * d * jnp.log1p(2.0 * t / d) + jnp.log(1.0 / self.delta))

    def step(self, key, state: UCBState, instance: Instance) -> UCBState:
        X = instance.arms
        K, d = X.shape
        dt = X.dtype
        tau = K if self.tau is None else int(self.tau)
        t = state.t.astype(dt)
        fit = logistic_mle(X, state.pulls, state.sums, init=state.theta, reg=self.reg, max_iters=self.irls_iters)
        V = _gram(X, state.pulls) + self.reg * jnp.eye(d, dtype=dt)
        a_ucb = _ucb_pick(X, fit.theta, V, self.radius(t, instance), squared=self.width == "squared")
        a = jnp.where(state.t < tau, state.t % K, a_ucb)
        y = pull(key, instance, a)
        theta = jnp.where(state.t < tau, state.theta, fit.theta)
        return UCBState(state.t + 1, state.pulls.at[a].add(1.0), state.sums.at[a].add(y), theta)


def ucbglm_released(budget: int) -> "UCBGLM":
    """UCB-GLM as the seed 002 authors' code runs it: one pull per arm, then argmax x^T theta_hat +
    (1/2) ||x||^2_{V^-1} (the squared norm), V = sum x x^T with a 1e-8 ridge guard."""
    return UCBGLM(budget=budget, alpha=0.5, width="squared", reg=1e-8)


@dataclasses.dataclass(frozen=True)
class BudgetCapped(Algorithm):
    """A fixed-confidence algorithm run with a budget: it stops on its own stopping rule or when
    B pulls are spent, and recommends its current answer (seed 002 Sec 8 / App F: "LinGapE is used
    with its stopping rule at the budget limit").

    The inner algorithm's state must expose the number of pulls made as ``state.t`` (as
    :class:`jaxbandits.algorithms.top_m.gifa.GIFA` does), and its steps must pull one arm each.

    Attributes:
      inner: the fixed-confidence algorithm (e.g. ``gifa.LinGapE(delta)``).
      budget: B.
    """

    inner: Any
    budget: int

    needs_span: ClassVar[bool] = False
    fixed_budget: ClassVar[bool] = True
    dynamic_fields: ClassVar[tuple[str, ...]] = ("budget",)  # traced: a budget sweep compiles once

    @property
    def top_m(self) -> int:
        return self.inner.top_m

    @property
    def slack(self) -> float:
        return self.inner.slack

    @property
    def correct_by_construction(self) -> bool:
        return self.inner.correct_by_construction

    def prepare(self, instances: Instance) -> Instance:
        return self.inner.prepare(instances)

    def validate(self, instance: Instance) -> None:
        self.inner.validate(instance)
        if int(self.budget) < instance.num_arms:
            raise ValueError(f"budget B = {self.budget} is below K = {instance.num_arms}")

    def steps_needed(self, num_arms: int) -> int:
        return int(self.budget)

    def init(self, key, instance: Instance):
        return self.inner.init(key, instance)

    def step(self, key, state, instance: Instance):
        return self.inner.step(key, state, instance)

    def done(self, state) -> jax.Array:
        return self.inner.done(state) | (state.t >= self.budget)

    def outcome(self, state, instance: Instance) -> Outcome:
        return self.inner.outcome(state, instance)


def lingape_budgeted(budget: int, delta: float, **kw) -> BudgetCapped:
    """LinGapE (Xu et al. 2018, :func:`jaxbandits.algorithms.top_m.gifa.LinGapE`) capped at budget B."""
    from jaxbandits.algorithms.top_m.gifa import LinGapE

    return BudgetCapped(LinGapE(delta, **kw), int(budget))


LINGAPE_DELTA_GRID = (0.9, 0.5, 0.1, 0.01, 0.001)
"""The delta grid of the LinGapE baseline (seed 002 App F tunes delta by grid search and reports
the best; the grid values are not given there, these are ours)."""
