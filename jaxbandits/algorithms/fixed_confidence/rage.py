"""RAGE: Randomized Adaptive Gap Elimination for transductive linear bandits.

Seed 001 (Fiez, Jain, Jamieson, Ratliff, NeurIPS 2019), Algorithm 1, with the implementation
choices of its Appendix F and the rounding of its Appendix B.  Arms X [K, d] are measured, the
best item of Z [M, d] is sought (X = Z is plain linear best-arm identification).

Round t (one call of ``step``):

1. delta_t = delta / t^2;
2. lambda_t, rho_t = argmin / min over the simplex of max_{y in Y(Z_t)} ||y||^2_{A(lambda)^-1},
   Y(Z_t) = {z - z' : z, z' in Z_t} the differences of the active items
   (:func:`jaxbandits.design.xy_allocation` with an item mask); design weights below 1e-5 are set
   to 0 and the design renormalised (App F);
3. N_t = max(ceil(2 sigma^2 (2^t)^2 rho_t (1 + eps) log(|Z|^2 / delta_t)), r(eps)), r(eps) = 2 p / eps
   with p the support size of lambda_t (the Pukelsheim rounding of App B / Sec 2.3), eps = 1/10;
4. the N_t pulls x_1..x_{N_t} = ROUND(lambda_t, N_t) (:func:`jaxbandits.design.round_design`),
   whose reward sums are drawn exactly with :func:`jaxbandits.environment.pull_counts` (O(K));
5. theta_t = A_t^{-1} b_t from the pulls *of this round only*;
6. remove z from Z_t if some z' in Z_t has
   sigma ||z' - z||_{A_t^-1} sqrt(2 log(|Z|^2 / delta_t)) < (z' - z)^T theta_t.

Noise.  Seed 001 assumes 1-sub-Gaussian noise (Sec 1.1); with sigma-sub-Gaussian noise
y^T(theta* - theta_t) is sigma^2 ||y||^2_{A_t^-1}-sub-Gaussian (App A, proof of Lemma 2), so the
width of step 6 gets a factor sigma and N_t a factor sigma^2 (then the round's confidence interval
is 2^-t again and Lemma 2 / Claim 1 / Theorem 2 hold unchanged).  sigma is the ``sigma`` option,
else the instance's noise scale (:func:`jaxbandits.algorithms.common.noise_scale`); sigma = 1
gives the paper's algorithm exactly.

It stops when one item is left and returns it.  The released code of seed 001 (RAGE.py) puts a
factor 2 inside both logarithms, log(2 |Z|^2 / delta_t); ``log_factor=2.0`` reproduces it.
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp

from jaxbandits import design
from jaxbandits.algorithms.base import (Algorithm, CachedInstance, Outcome, answer_mask,  # noqa: F401
                                       hyperparameter, instance_cache, map_instances, with_cache)

from jaxbandits.algorithms.common import check_sigma, noise_scale, require_linear_rewards, safe_cholesky  # noqa: F401 (re-exported)
from jaxbandits.algorithms import common
from jaxbandits.algorithms.elimination import (  # noqa: F401 (re-exported)
    compacted_xy_design, eliminate, eliminate_all_pairs, gram_from_counts, pairwise_gaps_and_widths, single_answer,
    threshold_design, whiten_items)
from jaxbandits.batching import item_buckets  # noqa: F401 (re-exported)
from jaxbandits.environment import pull_counts
from jaxbandits.instances.base import Instance

# ------------------------------------------------------------------------------------------------
# RAGE
# ------------------------------------------------------------------------------------------------
class RAGEState(NamedTuple):
    """State of RAGE between rounds.

    active: [M] bool, the active items Z_t.
    phase: the index t of the next round (starts at 1).
    samples: total pulls so far.
    pulls: [K] pulls per arm so far.
    design: [K] the last round's design lambda_t (warm start of the next solve).
    last_n: N_t of the last round;  last_rho: rho(Y(Z_t)) of the last round.
    theta_hat: [d] the last round's estimate (diagnostic).
    """

    active: jax.Array
    phase: jax.Array
    samples: jax.Array
    pulls: jax.Array
    design: jax.Array
    last_n: jax.Array
    last_rho: jax.Array
    theta_hat: jax.Array


def rage_phase_size(rho, phase, delta, num_items, support, rounding_eps: float = 0.1,
                    log_factor: float = 1.0, sigma: float | jax.Array = 1.0):
    """N_t = max(ceil(2 sigma^2 (2^t)^2 rho (1 + eps) log(f |Z|^2 / delta_t)), r(eps)) of seed 001
    Algorithm 1, with delta_t = delta / t^2 and r(eps) = 2 p / eps (p = support size, Sec 2.3).

    ``log_factor`` f = 1 as in the paper; f = 2 as in the released code.  ``sigma``: sub-Gaussian
    scale of the noise (the paper's sigma = 1; module docstring).
    """
    t = jnp.asarray(phase, jnp.result_type(float))
    log_term = jnp.log(log_factor * num_items**2 * t**2 / delta)
    # sigma^2: Algorithm 1's N_t for sigma-sub-Gaussian noise (App A, Lemma 2: ||y||^2_{A_t^-1}
    # sigma^2 <= (2 (2^t)^2 log(|Z|^2/delta_t))^-1 keeps the round's interval at 2^-t)
    n = jnp.ceil(2.0 * sigma**2 * (2.0**t) ** 2 * rho * (1.0 + rounding_eps) * log_term)
    r_eps = jnp.ceil(2.0 * support / rounding_eps)
    return jnp.maximum(n, r_eps), log_term


@dataclasses.dataclass(frozen=True)
class RAGE(Algorithm):
    """RAGE (seed 001 Algorithm 1; App B rounding; App F settings).  One ``step`` = one round.

    Attributes:
      delta: confidence level.
      sigma: sub-Gaussian scale of the noise, in N_t (x sigma^2) and the elimination width
        (x sigma); None (default) = the instance's noise scale (Gaussian), 1/2 (Bernoulli).
      rounding_eps: eps of the rounding procedure (1/10 in seed 001's experiments).
      log_factor: 1 (paper) or 2 (released code: log(2 |Z|^2 / delta_t)).
      design_cutoff: design weights below this are zeroed (App F: 1e-5).
      design_tol, design_iters: tolerance (relative duality gap) and iteration cap of the
        XY-allocation solver.
      design_method: "paper" (default: App F's Frank-Wolfe, step 2/(k+2), stopped on a 1%
        relative change of lambda or 5000 iterations, as the experiments ran) or "smooth" (the
        certified solver of :mod:`jaxbandits.design.minimax`; it returns NaN when the optimal
        design is singular, e.g. a single direction y needing fewer than d arms, so it is not
        the default).
      compact: solve each round's design on the active items gathered into a small buffer
        (:func:`compacted_xy_design`; same design, O(|Z_t|^2) instead of O(|Z|^2) per solver
        iteration, and under vmap each lane's solve runs alone).  Speed only.
      cache_first_design: solve round 1's design (all items active, uniform start) once per
        instance in :meth:`prepare` instead of once per replication.  Speed only.
    """

    #: float32 runs keep float64's distribution (two-sample tests, docs/design.md, Numerics)
    float32_validated: ClassVar[bool] = True
    delta: float = hyperparameter(0.05, low=0.0, high=1.0, traced=True)
    sigma: float | None = hyperparameter(None, low=0.0, traced=True)
    rounding_eps: float = hyperparameter(0.1, traced=True)
    log_factor: float = hyperparameter(1.0, traced=True)
    design_cutoff: float = hyperparameter(1e-5, low=0.0, low_open=False, traced=True)
    design_tol: float = hyperparameter(1e-3, low=0.0, traced=True)
    design_iters: int = hyperparameter(5000, count=1)
    design_method: str = "paper"
    compact: bool = True
    cache_first_design: bool = True

    # padded arms: zero design weight (never pulled); padded items: never active; |Z| the real count
    supports_padding: ClassVar[bool] = True

    def init(self, key: jax.Array, instance: Instance) -> RAGEState:
        K, d = instance.arms.shape
        M = instance.num_items
        dt = instance.arms.dtype
        return RAGEState(
            active=instance.valid_items(), phase=jnp.asarray(1, jnp.int32),
            samples=jnp.zeros((), dt), pulls=jnp.zeros((K,), dt),
            design=instance.valid_arms().astype(dt) / instance.true_num_arms(), last_n=jnp.zeros((), dt),
            last_rho=jnp.zeros((), dt), theta_hat=jnp.zeros((d,), dt))

    def first_design(self, instance: Instance):
        """(lambda_1, rho_1): round 1's design over Y(Z), the same for every replication."""
        sol = design.xy_allocation(instance.arms, instance.items, item_mask=instance.item_mask,
                                   arm_mask=instance.arm_mask,
                                   init=instance.valid_arms().astype(instance.arms.dtype) / instance.true_num_arms(),
                                   tol=self.design_tol, max_iters=self.design_iters,
                                   method=self.design_method)
        return sol.allocation, sol.value

    def prepare(self, instances: Instance) -> Instance:
        """Solve round 1's design once per instance (it depends on the instance only)."""
        if not self.cache_first_design:
            return instances
        return with_cache(instances, map_instances(self, "first_design", instances))

    def plan(self, state: RAGEState, instance: Instance):
        """The round's design, rho, N_t, integer allocation and log term (no sampling)."""
        X, Z = instance.arms, instance.items
        kw = dict(tol=self.design_tol, max_iters=self.design_iters, method=self.design_method)
        cached = instance_cache(instance)
        if self.compact:
            # round 1 comes from the cache when there is one: no lane needs a solve then; nor
            # does a finished state (one item left), which the engine may hold in an idle lane
            need = state.active if cached is None else state.active & (state.phase > 1)
            need = need & (jnp.sum(state.active) > 1)
            alloc, rho = compacted_xy_design(X, Z, need, state.design, arm_mask=instance.arm_mask,
                                             fixed_trips=self.policy.batched, kernels=self.policy.kernels, **kw)
        else:
            sol = design.xy_allocation(X, Z, item_mask=state.active, arm_mask=instance.arm_mask, init=state.design, **kw)
            alloc, rho = sol.allocation, sol.value
        if cached is not None:
            first = state.phase == 1
            alloc = jnp.where(first, cached[0], alloc)
            rho = jnp.where(first, cached[1], rho)
        lam = threshold_design(alloc, self.design_cutoff)
        support = jnp.sum(lam > 0)
        n, log_term = rage_phase_size(rho, state.phase, self.delta, instance.true_num_items(), support,
                                      self.rounding_eps, self.log_factor,
                                      noise_scale(self.sigma, instance))
        counts = design.round_design(lam, n, fixed_trips=self.policy.batched)
        return lam, rho, n, counts, log_term

    def step(self, key: jax.Array, state: RAGEState, instance: Instance) -> RAGEState:
        X, Z = instance.arms, instance.items
        lam, rho, n, counts, log_term = self.plan(state, instance)
        counts = counts.astype(X.dtype)
        sums = pull_counts(key, instance, counts)
        L = safe_cholesky(gram_from_counts(X, counts))
        theta = common.cho_solve(L, X.T @ sums)
        # Algorithm 1's discard rule with the width sigma ||z' - z||_{A_t^-1} sqrt(2 log(|Z|^2/delta_t))
        active = eliminate(state.active, Z, theta, L, log_term, noise_scale(self.sigma, instance))
        return RAGEState(active=active, phase=state.phase + 1, samples=state.samples + jnp.sum(counts),
                         pulls=state.pulls + counts, design=lam, last_n=n, last_rho=rho,
                         theta_hat=theta)

    def done(self, state: RAGEState) -> jax.Array:
        return jnp.sum(state.active) <= 1

    def outcome(self, state: RAGEState, instance: Instance) -> Outcome:
        # Stopped: the one item left.  Capped: the empirical best active item of the last round.
        idx = single_answer(state.active, instance.items @ state.theta_hat)
        return Outcome(answer=answer_mask(idx, instance.num_items), samples=state.samples,
                       pulls=state.pulls)

    def validate(self, instance: Instance) -> None:
        super().validate(instance)
        require_linear_rewards(instance, "RAGE")
        check_sigma(self.sigma)
        if not (self.rounding_eps > 0):
            raise ValueError(f"rounding_eps must be positive, got {self.rounding_eps}")
        if self.log_factor < 1.0:
            raise ValueError(f"log_factor must be >= 1, got {self.log_factor}")


__all__ = ["RAGE", "RAGEState", "rage_phase_size", "require_linear_rewards", "check_sigma", "CachedInstance", "with_cache", "instance_cache",
           "map_instances", "item_buckets", "whiten_items", "compacted_xy_design", "eliminate_all_pairs", "eliminate", "threshold_design",
           "pairwise_gaps_and_widths", "gram_from_counts", "single_answer"]
