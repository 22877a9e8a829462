"""Uniform (round-robin) sampling with the GLR (Chernoff) stopping rule of seed 000.

The simplest delta-PAC algorithm for linear best-arm identification: pull the arms in turn and
stop with the stopping rule (8) of Jedra & Proutiere (seed 000 Sec 3.4):

    tau = inf{t : Z(t) > beta(delta, t)  and  A_t >= c I_d},

with Z(t) the GLR statistic of Lemma 7, beta the threshold of Prop 2 / eq. (9), and the choices of
Remark 1: c = max_a ||a||^2, u = 1.  Prop 2 makes it delta-correct under any sampling rule; the
round-robin rule makes lambda_min(A_t) grow linearly, so it stops.  It is the engine's reference
workload and the baseline every adaptive algorithm should beat.

Transductive instances (Z != X) are allowed: the GLR statistic is computed over the items.
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp

from jaxbandits.algorithms import common
from jaxbandits.algorithms.base import Algorithm, Outcome, answer_mask
from jaxbandits.environment import pull
from jaxbandits.instances.base import Instance
from jaxbandits.rules import thresholds


class UniformState(NamedTuple):
    stats: common.LinearStats
    t: jax.Array          # pulls so far
    best: jax.Array       # empirical best item
    stopped: jax.Array


@dataclasses.dataclass(frozen=True)
class UniformGLR(Algorithm):
    """Round-robin sampling + GLR stopping (seed 000 Sec 3.4, eq. (8)-(9), Remark 1).

    Attributes:
      delta: confidence level.
      u: the constant u of Prop 2 (Remark 1: u = 1).
      sigma: sub-Gaussian noise scale (default: taken from the instance).
    """

    dynamic_fields: ClassVar[tuple[str, ...]] = ("delta", "u", "sigma")
    delta: float = 0.05
    u: float = 1.0
    sigma: float | None = None

    supports_padding: ClassVar[bool] = True  # round robin over the real arms, GLR over the real items

    def init(self, key, instance: Instance) -> UniformState:
        del key
        return UniformState(common.init_stats(instance), jnp.zeros((), jnp.int32),
                            jnp.zeros((), jnp.int32), jnp.zeros((), bool))

    def step(self, key, state: UniformState, instance: Instance) -> UniformState:
        return self.step_masked(key, state, instance, jnp.ones((instance.num_items,), bool))

    # -- elimination protocol (Tirinzoni & Degenne 2022; jaxbandits.algorithms.Eliminate) --------
    def step_masked(self, key, state: UniformState, instance: Instance, active: jax.Array) -> UniformState:
        """One round-robin pull.  The sampling rule computes no closest alternative, so ``active``
        changes nothing: elimination at sampling is the identity for this algorithm."""
        del active
        arm = common.round_robin_arm(instance, state.t)
        reward = pull(key, instance, arm)
        stats = common.add_pull(state.stats, instance, arm, reward)
        theta, L = common.least_squares(stats)
        z, best = common.glr_statistic(theta, L, instance.items, instance.item_mask)
        beta, ready = self._threshold(stats, instance)
        return UniformState(stats, state.t + 1, best.astype(jnp.int32), (z > beta) & ready)

    def linear_stats(self, state: UniformState) -> common.LinearStats:
        return state.stats

    def stopping_threshold(self, state: UniformState, instance: Instance):
        """(beta(delta, t), lambda_min(A_t) >= c) of the stopping rule (8) (Prop 2 / eq. (9),
        Remark 1)."""
        return self._threshold(state.stats, instance)

    def _threshold(self, stats: common.LinearStats, instance: Instance):
        c = jnp.max(jnp.sum(instance.arms**2, axis=-1))
        # sigma enters the threshold only: beta = (1 + u) sigma^2 log(...) (Prop 2 / eq. (9))
        beta = thresholds.prop2(stats.gram, self.delta, common.noise_scale(self.sigma, instance), c, self.u)
        return beta, common.lambda_min(stats.gram) >= c

    def done(self, state: UniformState) -> jax.Array:
        return state.stopped

    def outcome(self, state: UniformState, instance: Instance) -> Outcome:
        return Outcome(answer_mask(state.best, instance.num_items), state.t,
                       state.stats.counts.astype(jnp.int32))
