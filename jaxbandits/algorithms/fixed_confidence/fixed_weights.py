"""The fixed-weights Oracle of Tirinzoni & Degenne, "On elimination strategies for bandit
fixed-confidence identification", NeurIPS 2022 (Sec 5, Table 1 "Oracle"; released code
``sampling_rules.jl``, ``FixedWeights``, and ``experiments/linear_bai.jl``).

The oracle knows the optimal allocation w* = argmax_w min_{z != z*} (theta^T (z* - z))^2 /
(2 ||z* - z||^2_{A(w)^-1}) of the true theta (the allocation of T*(theta), seed 000 eq. (1); here
:func:`jaxbandits.design.oracle_allocation`, solved once per instance in ``prepare``) and tracks it
with D-tracking: after every arm has been pulled once, pull argmin_k N_k(t) - t w*_k (ties: the
lowest index).  It stops with the GLR rule of the rest of the table: the ridge estimate
theta_hat = (A_t + reg I)^-1 b_t (reg = 1), Z(t) = min_{z != z_hat} (theta_hat^T (z_hat - z))^2 /
(2 ||z_hat - z||^2_{(A_t + reg I)^-1}), stop when Z(t) > sigma^2 beta(t, delta) with
beta = log((t + 1) / delta) (``threshold="log_t"``, the paper's experiments) or a threshold of
:mod:`.glr`; it returns the empirical best item z_hat, which can be wrong (the answer is not handed
to it).

This is not :class:`jaxbandits.algorithms.fixed_confidence.oracle.Oracle`, Fiez et al.'s phased
XY-oracle with its K-dependent elimination-style stop (seed 000 Table 1).
"""
from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxbandits import presets
from jaxbandits.algorithms import common
from jaxbandits.algorithms.base import Algorithm, Outcome, answer_mask, instance_cache, with_cache, hyperparameter
from jaxbandits.algorithms import glr
from jaxbandits.environment import pull, pull_counts
from jaxbandits.instances.base import Instance


class FixedWeightsState(NamedTuple):
    stats: common.LinearStats
    t: jax.Array
    best: jax.Array
    stopped: jax.Array


_SOLVERS: dict = {}


def _allocation_solver(iters: int):
    """The batched w* solver for ``iters`` Frank-Wolfe iterations, compiled once per process (every
    ``prepare`` of every configuration with these iterations reuses it)."""
    if iters not in _SOLVERS:
        from jaxbandits.design import oracle_allocation

        _SOLVERS[iters] = jax.jit(jax.vmap(
            lambda X, Z, th, tol: oracle_allocation(X, Z, th, tol=tol, max_iters=iters).allocation,
            in_axes=(0, 0, 0, None)))
    return _SOLVERS[iters]


@dataclasses.dataclass(frozen=True)
class FixedWeightsOracle(Algorithm):
    """D-tracking of the true optimal allocation w* with the GLR stopping rule (module docstring).

    Attributes:
      delta: confidence level.
      threshold: a threshold of :mod:`.glr` ("log_t": log((t + 1) / delta), the paper's; "lts":
        seed 000 eq. (9) with the union over rounds, delta-correct).
      reg: ridge regulariser of the estimate and of the GLR (1 in the released code).
      sigma: sub-Gaussian noise scale (None: :func:`common.noise_scale`); enters the threshold.
      design_tol, design_iters: tolerance (relative duality gap) and iteration cap of w*'s solve.
    """

    delta: float = hyperparameter(0.01, low=0.0, high=1.0, traced=True)
    threshold: str = "log_t"
    reg: float = hyperparameter(1.0, low=0.0, low_open=False, traced=True)
    sigma: float | None = hyperparameter(None, low=0.0, traced=True)
    design_tol: float = hyperparameter(1e-6, low=0.0, traced=True)
    design_iters: int = hyperparameter(20_000, count=1)


    @classmethod
    def tirinzoni_degenne(cls, **kw) -> "FixedWeightsOracle":
        """The Oracle row of Tirinzoni & Degenne 2022's Table 1 (the defaults); ``kw`` overrides."""
        return cls(**presets.TD_ORACLE.apply(**kw))

    def __post_init__(self):
        glr.check_threshold(self.threshold)

    def validate(self, instance: Instance) -> None:
        super().validate(instance)
        common.require_linear_rewards(instance, "FixedWeightsOracle")
        common.check_sigma(self.sigma)

    def prepare(self, instances: Instance) -> Instance:
        solve = _allocation_solver(int(self.design_iters))
        w = solve(instances.arms, instances.items, instances.theta, jnp.asarray(self.design_tol, instances.arms.dtype))
        return with_cache(instances, w.astype(instances.arms.dtype))

    def weights(self, instance: Instance) -> jax.Array:
        """w* [K] of this instance (computed in ``prepare``)."""
        w = instance_cache(instance)
        if w is None:
            raise ValueError("FixedWeightsOracle needs the instance prepared (prepare) to know w*")
        return w

    # -- elimination protocol ------------------------------------------------------------------
    def linear_stats(self, state: FixedWeightsState) -> common.LinearStats:
        return state.stats

    def stopping_threshold(self, state: FixedWeightsState, instance: Instance):
        """(sigma^2 beta(t, delta), ready): the GLR stopping rule's threshold."""
        sigma = common.noise_scale(self.sigma, instance)
        c = jnp.max(jnp.sum(instance.arms * instance.arms, axis=-1))
        beta = glr.stopping_threshold(self.threshold, state.stats.gram, state.t, self.delta, sigma, c)
        return beta, jnp.ones((), bool)

    def _decide(self, stats: common.LinearStats, t, instance: Instance):
        Vinv = common.inverse_from_cholesky(common.safe_cholesky(common.regularized_gram(stats, self.reg)))
        theta = Vinv @ stats.b
        best = common.argmax_fast(instance.items @ theta)
        z = jnp.min(glr.ridge_glr_row(theta, Vinv, instance.items, best))
        sigma = common.noise_scale(self.sigma, instance)
        c = jnp.max(jnp.sum(instance.arms * instance.arms, axis=-1))
        beta = glr.stopping_threshold(self.threshold, stats.gram, t, self.delta, sigma, c)
        return best.astype(jnp.int32), z > beta

    # -- contract ------------------------------------------------------------------------------
    def init(self, key, instance: Instance) -> FixedWeightsState:
        X = instance.arms
        counts = jnp.ones((X.shape[0],), X.dtype)
        stats = common.add_counts(common.init_stats(instance), instance, counts, pull_counts(key, instance, counts))
        t = jnp.asarray(X.shape[0], jnp.int32)
        best, stop = self._decide(stats, t, instance)
        return FixedWeightsState(stats, t, best, stop)

    def step_masked(self, key, state: FixedWeightsState, instance: Instance, active: jax.Array) -> FixedWeightsState:
        """One D-tracking pull (fixed weights: elimination at sampling changes nothing)."""
        w = self.weights(instance)
        tf = state.t.astype(instance.arms.dtype)
        arm = common.argmax_fast(tf * w - state.stats.counts)
        stats = common.add_pull(state.stats, instance, arm, pull(key, instance, arm))
        t1 = state.t + 1
        best, stop = self._decide(stats, t1, instance)
        return FixedWeightsState(stats, t1, best, stop)

    def step(self, key, state: FixedWeightsState, instance: Instance) -> FixedWeightsState:
        return self.step_masked(key, state, instance, jnp.ones((instance.num_items,), bool))

    def done(self, state: FixedWeightsState) -> jax.Array:
        return state.stopped

    def outcome(self, state: FixedWeightsState, instance: Instance) -> Outcome:
        return Outcome(answer_mask(state.best, instance.num_items), state.t, state.stats.counts.astype(jnp.int32))
