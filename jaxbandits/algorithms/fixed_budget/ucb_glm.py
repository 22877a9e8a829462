"""UCB-GLM (Li, Lu & Zhou 2017, Algorithm 1) turned into fixed-budget identification (seed 002
App F): tau initial pulls (round-robin over the arms, in place of Li et al.'s random ones), then
argmax_x x^T theta_hat + alpha ||x||_{V^{-1}} with theta_hat the logistic maximum-likelihood
estimate (IRLS, warm-started, :mod:`jaxbandits.algorithms.glm`) and V = sum_s x_s x_s^T; returns
the most-pulled arm, as :class:`~jaxbandits.algorithms.fixed_budget.linucb.LinUCB` does.
"""
from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from jaxbandits.algorithms.base import hyperparameter
from jaxbandits.algorithms.common import noise_scale
from jaxbandits.algorithms.fixed_budget.linucb import UCBState, _gram, _MostPulledBaseline, _ucb_pick
from jaxbandits.algorithms.glm import logistic_mle
from jaxbandits.environment import pull
from jaxbandits.instances.base import Instance


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

    budget: int = hyperparameter(low=0.0, pulls=True, traced=True)
    tau: int | None = hyperparameter(None, count=0)
    alpha: float | None = hyperparameter(None, traced=True)
    kappa: float = hyperparameter(0.1, low=0.0, traced=True)
    delta: float = hyperparameter(0.05, low=0.0, high=1.0, traced=True)
    reg: float = hyperparameter(1e-3, low=0.0, low_open=False, traced=True)
    irls_iters: int = hyperparameter(10, count=1)
    sigma: float | None = hyperparameter(None, low=0.0, traced=True)
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
