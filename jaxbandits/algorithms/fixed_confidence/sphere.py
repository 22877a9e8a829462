"""Best-arm identification with the unit sphere as set of arms (seed 000 Sec 4.2, Prop 3, Thm 5).

A = S^{d-1}; the goal is an arm a_hat with mu^T (a*_mu - a_hat) <= epsilon w.p. >= 1 - delta
(Definition 2), where a*_mu = mu / ||mu||.

* Sampling (Sec 4.2): round robin over an orthonormal basis U = {u_1, ..., u_d}:
  a_t = u_(t mod d).  Here U is the instance's arms (K = d orthonormal rows; :func:`sphere_instance`).
* Decision: a_hat_t = argmax_{a in S^{d-1}} mu_hat_t^T a = mu_hat_t / ||mu_hat_t||.
* Stopping, eq. (11)-(12) (Prop 3): stop when
  Z(t) = inf_{b in S^{d-1} : mu_hat_t^T (a_hat_t - b) >= eps_t} Z_{a_hat_t, b, eps_t}(t) >= beta(delta, t)
  and lambda_min(A_t) >= max(c, rho(delta, t)), with Z_{a,b,eps} of Lemma 7,
  zeta_t = log det(c^{-1} A_t + I_d)^{1/2} - log delta_t, beta = 2 sigma^2 zeta_t,
  rho = 4 sigma^2 eps_t^2 zeta_t / (eps - eps_t)^2, delta_t = 6 delta / (pi^2 t^2) (so that
  sum_t delta_t <= delta) and c = max ||a||^2 = 1 (Remark 1).

Z(t) in closed form.  With x = 1 - a_hat^T b in [0, 2], m = ||mu_hat||: mu_hat^T (a_hat - b) = m x
and ||a_hat - b||^2 = 2 x.  Using ||v||^2_{A^-1} <= ||v||^2 / lambda_min(A_t),
Z_{a_hat,b,eps_t} >= lambda_min(A_t) (m x + eps_t)^2 / (4 x), whose minimum over x >= eps_t / m is
lambda_min(A_t) m eps_t (at x = eps_t / m; the set is empty, Z = +inf, when eps_t > 2 m).  This is
exact when A_t = n I (t a multiple of d) and a lower bound otherwise, so stopping on it keeps
Prop 3's guarantee (it can only stop later, by less than one round-robin cycle).

Caveat (documented choice): in our copy of the paper the formulas of rho(delta, t) and of Theorem
5's eps_t are partly garbled.  We read rho as above and use
eps_t = eps (1 + (4 sigma^2 eps log t)^{-1/2})^{-1}, which satisfies Prop 3's requirements
(eps_t in (0, eps), eps_t -> eps); Prop 3 gives (eps, delta)-correctness for any such sequence.

Answer.  The Outcome needs an [M] mask over the instance's items: it marks the item closest in
direction to a_hat (argmax_z z^T mu_hat).  The continuous answer itself is ``state.direction``;
:func:`direction_regret` gives mu^T (a* - a_hat) = ||mu|| - mu^T a_hat, the quantity Definition 2
bounds.  With a fine grid of items the mask is a discretisation of a_hat, not an exact answer.
"""
from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxbandits.algorithms import common
from jaxbandits.algorithms.base import Algorithm, Outcome, answer_mask, hyperparameter
from jaxbandits.environment import pull
from jaxbandits.instances.base import Instance, make_instance
from jaxbandits.rules import thresholds


def sphere_instance(key: jax.Array, theta, *, num_items: int = 1000, noise: float = 1.0,
                    random_basis: bool = False) -> Instance:
    """Continuous-arm instance of seed 000 Sec 4: arms = an orthonormal basis of R^d (the
    canonical one, or a random rotation), items = ``num_items`` uniform points of S^{d-1} plus
    the basis (used only to express the answer as a mask; see the module docstring)."""
    theta = jnp.asarray(theta, jnp.result_type(float))
    d = theta.shape[-1]
    k1, k2 = jax.random.split(key)
    U = jnp.eye(d, dtype=theta.dtype)
    if random_basis:
        Q, R = jnp.linalg.qr(jax.random.normal(k1, (d, d), theta.dtype))
        U = (Q * jnp.sign(jnp.diag(R))[None, :]).T
    G = jax.random.normal(k2, (num_items, d), theta.dtype)
    items = jnp.concatenate([U, G / jnp.linalg.norm(G, axis=-1, keepdims=True)], axis=0)
    return make_instance(U, theta, noise, items=items)


def direction_regret(direction: jax.Array, instance: Instance) -> jax.Array:
    """mu^T (a*_mu - a_hat) = ||mu|| - mu^T a_hat for a unit vector a_hat (Definition 2)."""
    return jnp.linalg.norm(instance.theta, axis=-1) - jnp.sum(instance.theta * direction, axis=-1)


def sphere_lower_bound(instance: Instance, epsilon: float, delta: float) -> jax.Array:
    """Seed 000 Thm 4: E[tau] >= sigma^2 (d - 1) / (20 ||mu|| eps) kl(delta, 1 - delta)."""
    d = instance.dim
    kl = delta * math.log(delta / (1 - delta)) + (1 - delta) * math.log((1 - delta) / delta)
    return instance.noise**2 * (d - 1) / (20.0 * jnp.linalg.norm(instance.theta, axis=-1) * epsilon) * kl


class SphereState(NamedTuple):
    stats: common.LinearStats
    t: jax.Array
    direction: jax.Array  # a_hat_t [d]
    best: jax.Array       # item closest to a_hat_t
    stopped: jax.Array


@dataclasses.dataclass(frozen=True)
class SphereBAI(Algorithm):
    """Round robin over an orthonormal basis + stopping rule (11)-(12) (seed 000 Sec 4.2).

    Attributes:
      epsilon: tolerated suboptimality (Definition 2); also the slack of the engine's check of the
        item mask.
      delta: confidence level.
      sigma: noise scale (default: the instance's).
    """

    epsilon: float = hyperparameter(0.1, low=0.0, low_open=False, traced=True)
    delta: float = hyperparameter(0.05, low=0.0, high=1.0, traced=True)
    sigma: float | None = hyperparameter(None, low=0.0, traced=True)

    @property
    def slack(self):
        return 0.0 if self.epsilon is None else self.epsilon  # None: the static part of a split

    def epsilon_t(self, t: jax.Array, sigma: jax.Array) -> jax.Array:
        """eps_t = eps (1 + (4 sigma^2 eps log t)^{-1/2})^{-1} (our reading of Thm 5; 0 at t = 1)."""
        lg = jnp.log(jnp.maximum(t, 1.0))
        s = jnp.where(lg > 0, 1.0 / jnp.sqrt(4.0 * sigma**2 * self.epsilon * jnp.maximum(lg, 1e-300)), jnp.inf)
        return self.epsilon / (1.0 + s)

    def init(self, key, instance: Instance) -> SphereState:
        d = instance.dim
        dt = instance.arms.dtype
        # the per-arm counts and reward sums only: with an orthonormal basis they determine A_t and
        # b_t (see ``step``), which are not kept
        stats = common.LinearStats(jnp.zeros(d, dt), jnp.zeros(d, dt), jnp.zeros((0, 0), dt), jnp.zeros(0, dt))
        return SphereState(stats, jnp.zeros((), jnp.int32),
                           jnp.zeros((d,), instance.arms.dtype), jnp.zeros((), jnp.int32),
                           jnp.zeros((), bool))

    def step(self, key, state: SphereState, instance: Instance) -> SphereState:
        d = instance.dim
        dtype = instance.arms.dtype
        arm = state.t % d
        stats = common.add_pull(state.stats, instance, arm, pull(key, instance, arm))
        t = state.t + 1
        tf = t.astype(dtype)
        sigma = common.noise_scale(self.sigma, instance)
        # The arms u_1..u_d are an orthonormal basis (``validate``), so A_t = sum_i n_i u_i u_i^T has
        # the eigenvalues n_i (the pull counts) and the eigenvectors u_i, and the least-squares
        # estimate is theta_hat = sum_i (S_i / n_i) u_i (S_i: arm i's reward sum; the pseudo-inverse's
        # 0 along an arm not pulled yet).  Exact, and elementwise: no eigensolver, determinant or
        # Cholesky factorisation per step (batched solver calls on d x d matrices cost a GPU more
        # than the rest of the step).
        n, X = stats.counts, instance.arms
        pulled = n > 0
        coords = jnp.where(pulled, stats.sums / jnp.where(pulled, n, 1.0), 0.0)
        theta = jnp.sum(coords[:, None] * X, axis=0)
        m = jnp.linalg.norm(theta)
        direction = theta / jnp.maximum(m, 1e-300)
        lmin = jnp.min(n)                                                   # lambda_min(A_t)
        c = jnp.max(jnp.sum(X**2, axis=-1))
        eps_t = self.epsilon_t(tf, sigma)
        zeta = thresholds.prop2_log_spectrum(n, thresholds.anytime_delta(self.delta, tf), c)  # Prop 2 / eq. (9)
        beta = 2.0 * sigma**2 * zeta
        rho = 4.0 * sigma**2 * eps_t**2 * zeta / (self.epsilon - eps_t) ** 2
        z = jnp.where(eps_t <= 2.0 * m, lmin * m * eps_t, jnp.inf)
        stop = (eps_t > 0) & (z >= beta) & (lmin >= jnp.maximum(c, rho))
        best = common.argmax_fast(instance.items @ theta).astype(jnp.int32)
        return SphereState(stats, t, direction, best, stop)

    def done(self, state: SphereState) -> jax.Array:
        return state.stopped

    def outcome(self, state: SphereState, instance: Instance) -> Outcome:
        return Outcome(answer_mask(state.best, instance.num_items), state.t,
                       state.stats.counts.astype(jnp.int32))

    def validate(self, instance: Instance) -> None:
        super().validate(instance)
        X = jnp.asarray(instance.arms)
        K, d = X.shape[-2:]
        if K != d or not bool(jnp.allclose(jnp.einsum("...ij,...kj->...ik", X, X), jnp.eye(d), atol=1e-8)):
            raise ValueError("SphereBAI needs the arms to be an orthonormal basis (K = d); use sphere_instance")
        if not (self.epsilon > 0):
            raise ValueError(f"epsilon must be positive, got {self.epsilon}")
