"""G-optimal tracking with the GLR stopping rule: a complete fixed-confidence algorithm written
outside the jaxbandits package (the walk-through is docs/adding_an_algorithm.md).

Sampling rule: solve the G-optimal design w = argmin_w max_x ||x||^2_{A(w)^-1} once per instance
(it does not depend on the observations) and track it: pull argmin_a N_a(t) - (t + 1) w_a over the
support of w.  Stopping rule: the GLR statistic Z(t) = min_{b != best} (theta^T (z_best - z_b))^2 /
(2 ||z_best - z_b||^2_{A_t^-1}) against sigma^2 beta(t, delta), beta = log((1 + log t) / delta), the
threshold of the experiments of Frank-Wolfe Sampling and Top Two.  Answer: the empirical best item.

Run it without touching the library::

    jaxbandits calibrate docs/examples/gopt_tracking.py:GOptTracking --quick
    jaxbandits benchmark docs/examples/gopt_tracking.py:GOptTracking --suite fixed-confidence --quick
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp

from jaxbandits.algorithms import common
from jaxbandits.algorithms.base import Algorithm, Outcome, answer_mask
from jaxbandits.algorithms.base import instance_cache, map_instances, with_cache
from jaxbandits.design import g_optimal
from jaxbandits.environment import pull
from jaxbandits.instances.base import Instance


class GOptState(NamedTuple):
    stats: common.LinearStats   # per-arm counts and reward sums, A_t and b_t
    t: jax.Array                # pulls so far
    best: jax.Array             # empirical best item
    stopped: jax.Array


@dataclasses.dataclass(frozen=True)
class GOptTracking(Algorithm):
    """Track the G-optimal design; stop when the GLR statistic exceeds sigma^2 log((1 + log t) / delta).

    Attributes:
      delta: confidence level.
      sigma: sub-Gaussian noise scale (None: the instance's noise, as every library algorithm).
    """

    dynamic_fields: ClassVar[tuple[str, ...]] = ("delta", "sigma")   # traced: one program for all values
    supports_padding: ClassVar[bool] = True                           # respects arm_mask / item_mask
    delta: float = 0.05
    sigma: float | None = None

    # -- per-instance work, once per run ----------------------------------------------------------
    def design(self, instance: Instance) -> jax.Array:
        """The G-optimal allocation [K] of one instance (zero on padded arms)."""
        return g_optimal(instance.arms, arm_mask=instance.arm_mask).allocation

    def prepare(self, instances: Instance) -> Instance:
        return with_cache(instances, map_instances(self, "design", instances))

    # -- the contract -------------------------------------------------------------------------------
    def init(self, key, instance: Instance) -> GOptState:
        del key
        return GOptState(common.init_stats(instance), jnp.zeros((), jnp.int32),
                         jnp.zeros((), jnp.int32), jnp.zeros((), bool))

    def step(self, key, state: GOptState, instance: Instance) -> GOptState:
        w = instance_cache(instance)
        w = self.design(instance) if w is None else w
        support = w > 0
        # tracking: the arm furthest behind its target (t + 1) w_a
        lag = jnp.where(support, state.stats.counts - (state.t + 1) * w, jnp.inf)
        arm = jnp.argmin(lag)
        stats = common.add_pull(state.stats, instance, arm, pull(key, instance, arm))
        theta, L = common.least_squares(stats)
        z, best = common.glr_statistic(theta, L, instance.items, instance.item_mask)
        t = state.t + 1
        beta = self.threshold(t.astype(theta.dtype), common.noise_scale(self.sigma, instance))
        ready = jnp.all(jnp.where(support, stats.counts >= 1, True))   # A_t invertible
        return GOptState(stats, t, best.astype(jnp.int32), ready & (z > beta))

    def threshold(self, t: jax.Array, sigma: jax.Array) -> jax.Array:
        """sigma^2 beta(t, delta), beta = log((1 + log t) / delta)."""
        return sigma**2 * jnp.log((1.0 + jnp.log(t)) / self.delta)

    def done(self, state: GOptState) -> jax.Array:
        return state.stopped

    def outcome(self, state: GOptState, instance: Instance) -> Outcome:
        return Outcome(answer_mask(state.best, instance.num_items), state.t,
                       state.stats.counts.astype(jnp.int32))
