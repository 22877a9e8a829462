"""Approximate fixed-budget Peace (Katz-Samuels, Jain, Karnin & Jamieson 2020), as seed 002 runs it.

J. Katz-Samuels, L. Jain, Z. Karnin, K. Jamieson, "An Empirical Process Approach to the Union
Bound: Practical Algorithms for Combinatorial and Linear Bandits", NeurIPS 2020.  Peace allocates
samples to minimise a Gaussian width, E_eta[ sup_z (z0 - z)^T A(lambda)^{-1/2} eta / (b + theta0^T
(z0 - z)) ], instead of the XY-design's worst-case pair.  The exact Gaussian width has no closed
form; Katz-Samuels et al. (App D, "computationally efficient algorithm") minimise it over the
simplex by stochastic mirror descent with single-eta gradient estimates, and seed 002 (Sec 7,
Remark 2, Sec 8) ran that approximation inside the elimination skeleton of GSE: s = ceil(log2 K)
stages of B / s pulls, theta0 the previous stage's estimate (0 at the start), z0 = argmax_z
theta0^T z, b = 1, allocation = the averaged mirror-descent iterate times the stage budget, least
squares, keep the better half (the seed 002 authors' release).  That is what this module computes,
batched and jitted:

* A(lambda) = sum_x (lambda_x / 2 + 1 / (2 |A_t|)) x x^T (+ the projector on span(A_t)^perp), the
  mixture with the uniform design that keeps A invertible (Peace's Delta-tilde; the authors'
  release);
* A^{-1/2} eta is replaced by L^{-T} eta with A = L L^T (Cholesky): both are N(0, A^{-1}), so the
  Gaussian width is the same, and the Cholesky factor is cheap and smoothly differentiable;
* entropic mirror descent for ``md_iters`` iterations (authors: between 10 and 100), each with
  ``md_samples`` eta draws (authors: 1), gradients by automatic differentiation (authors: a
  Kronecker-sum formula), step size sqrt(2 log |A_t| / T) / ||g||_inf (the standard step of
  mirror descent on the simplex; the authors' kappa = 2 b^2 sqrt(2/T) / d^3 barely moves lambda);
* the allocation rounds n * lambda_bar by efficient apportionment (authors: floor plus a uniform
  multinomial remainder).

One ``step`` is one stage.

Noise: the fixed-budget Peace of Katz-Samuels et al. (and the approximation seed 002 runs) reads no
noise scale: the Gaussian width E sup_z (z0 - z)^T A^{-1/2} eta / (b + ...) has standard normal
eta whatever sigma, and the stage budgets depend on B and K only; sigma enters only the error
bound (Katz-Samuels et al. Theorem 7), so there is no ``sigma`` option.
"""
from __future__ import annotations

import dataclasses
import math
from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxbandits.algorithms.base import Algorithm, Outcome, answer_mask, arms_and_dim, hyperparameter
from jaxbandits.algorithms.stages import halving_schedule, keep_top, projected_least_squares, round_allocation, stage_budget
from jaxbandits.design.core import null_projector
from jaxbandits.environment import pull_counts
from jaxbandits.instances.base import Instance


def gaussian_width_objective(lam, X, alive, perp, theta0, z0, b, etas):
    """Monte Carlo estimate of E_eta max_{z in A_t} (z0 - z)^T L^{-T} eta / (b + theta0^T (z0 - z)).

    A = sum_x (lam_x / 2 + u_x / 2) x x^T + P_perp = L L^T, u uniform on the surviving arms
    (Katz-Samuels et al. 2020 App D objective with the Delta-tilde mixture).  etas: [S, d].
    """
    dt = X.dtype
    w = alive.astype(dt)
    u = w / jnp.sum(w)
    mix = 0.5 * lam + 0.5 * u
    A = (X.T * mix) @ X + perp
    L = jnp.linalg.cholesky(A)
    W = jax.scipy.linalg.solve_triangular(L.T, etas.T, lower=False)  # [d, S] = L^{-T} eta
    diff = z0[None, :] - X                                            # [K, d]
    denom = b + diff @ theta0                                         # [K] > 0 (z0 is the argmax)
    ratios = (diff @ W) / denom[:, None]                              # [K, S]
    ratios = jnp.where(alive[:, None], ratios, -jnp.inf)
    return jnp.mean(jnp.max(ratios, axis=0))


def peace_allocation(key, X, alive, theta0, *, iters: int = 100, samples: int = 1, b: float = 1.0):
    """Averaged stochastic-mirror-descent design lambda_bar [K] over the surviving arms."""
    dt = X.dtype
    K, d = X.shape
    perp, _ = null_projector(X, alive)
    w = alive.astype(dt)
    lam0 = w / jnp.sum(w)
    z0 = X[jnp.argmax(jnp.where(alive, X @ theta0, -jnp.inf))]
    step0 = jnp.sqrt(2.0 * jnp.log(jnp.maximum(jnp.sum(w), 2.0)) / iters)
    grad = jax.grad(gaussian_width_objective)

    def body(i, carry):
        lam, acc = carry
        etas = jax.random.normal(jax.random.fold_in(key, i), (samples, d), dt)
        g = grad(lam, X, alive, perp, theta0, z0, b, etas)
        g = jnp.where(alive, g, 0.0)
        scale = jnp.maximum(jnp.max(jnp.abs(g)), 1e-300)
        logits = jnp.log(jnp.maximum(lam, 1e-300)) - step0 * g / scale
        logits = jnp.where(alive, logits - jnp.max(jnp.where(alive, logits, -jnp.inf)), -jnp.inf)
        lam = jnp.exp(logits)
        lam = lam / jnp.sum(lam)
        return lam, acc + lam

    _, acc = jax.lax.fori_loop(0, iters, body, (lam0, jnp.zeros(K, dt)))
    return acc / iters


class PeaceState(NamedTuple):
    alive: jax.Array
    stage: jax.Array
    pulls: jax.Array
    theta: jax.Array


@dataclasses.dataclass(frozen=True)
class Peace(Algorithm):
    """Approximate fixed-budget Peace (Katz-Samuels et al. 2020) in seed 002's halving skeleton.

    Attributes:
      budget: B (>= K).
      eta: elimination parameter of the skeleton (2 in seed 002).
      md_iters: mirror-descent iterations per stage; md_samples: eta draws per gradient.
      b: the offset b of the Gaussian-width ratio (1 in the authors' release).
    """

    budget: int = hyperparameter(low=0.0, pulls=True, traced=True)
    eta: float = 2.0
    md_iters: int = hyperparameter(100, count=1)
    md_samples: int = hyperparameter(1, count=1)
    b: float = hyperparameter(1.0, traced=True)

    needs_span: ClassVar[bool] = False
    fixed_budget: ClassVar[bool] = True

    def validate(self, instance: Instance) -> None:
        super().validate(instance)
        if int(self.budget) < instance.num_arms:
            raise ValueError(f"Peace needs a budget of at least K = {instance.num_arms}, got B = {self.budget}")
        if instance.num_items != instance.num_arms:
            raise ValueError("Peace (fixed budget, seed 002) identifies the best arm: items must be the arms")

    def steps_needed(self, instance, dim=None) -> int:
        """Engine steps a run takes (:class:`~jaxbandits.algorithms.base.StepsNeeded`): its stages."""
        return len(halving_schedule(arms_and_dim(instance, dim)[0], self.eta)) - 1

    def init(self, key, instance: Instance) -> PeaceState:
        K, d = instance.arms.shape
        dt = instance.arms.dtype
        return PeaceState(jnp.ones(K, bool), jnp.zeros((), jnp.int32), jnp.zeros(K, dt), jnp.zeros(d, dt))

    def step(self, key, state: PeaceState, instance: Instance) -> PeaceState:
        X = instance.arms
        K = X.shape[0]
        dt = X.dtype
        sizes = halving_schedule(K, self.eta)
        t = state.stage
        n = stage_budget(self.budget, len(sizes) - 1, t).astype(dt)
        k_md, k_pull = jax.random.split(key)
        lam = peace_allocation(k_md, X, state.alive, state.theta, iters=self.md_iters,
                               samples=self.md_samples, b=self.b)
        counts = round_allocation(lam, n, state.alive)
        sums = pull_counts(k_pull, instance, counts)
        theta = projected_least_squares(X, counts, sums, state.alive, "span")
        alive = keep_top(X @ theta, state.alive, jnp.asarray(sizes[1:])[t])
        return PeaceState(alive, t + 1, state.pulls + counts, theta)

    def done(self, state: PeaceState) -> jax.Array:
        return jnp.sum(state.alive) <= 1

    def outcome(self, state: PeaceState, instance: Instance) -> Outcome:
        return Outcome(answer_mask(jnp.argmax(state.alive), instance.num_items),
                       jnp.sum(state.pulls).astype(jnp.int32), state.pulls)
