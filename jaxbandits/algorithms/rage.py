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
3. N_t = max(ceil(2 (2^t)^2 rho_t (1 + eps) log(|Z|^2 / delta_t)), r(eps)), r(eps) = 2 p / eps
   with p the support size of lambda_t (the Pukelsheim rounding of App B / Sec 2.3), eps = 1/10;
4. the N_t pulls x_1..x_{N_t} = ROUND(lambda_t, N_t) (:func:`jaxbandits.design.round_design`),
   whose reward sums are drawn exactly with :func:`jaxbandits.environment.pull_counts` (O(K));
5. theta_t = A_t^{-1} b_t from the pulls *of this round only*;
6. remove z from Z_t if some z' in Z_t has
   ||z' - z||_{A_t^-1} sqrt(2 log(|Z|^2 / delta_t)) < (z' - z)^T theta_t.

It stops when one item is left and returns it.  The released code of seed 001 (RAGE.py) puts a
factor 2 inside both logarithms, log(2 |Z|^2 / delta_t); ``log_factor=2.0`` reproduces it.
"""
from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxbandits import design
from jaxbandits.algorithms.base import Algorithm, Outcome, answer_mask
from jaxbandits.algorithms.common import safe_cholesky, whiten
from jaxbandits.environment import pull_counts
from jaxbandits.instances.base import Instance


# ------------------------------------------------------------------------------------------------
# pieces shared with the XY family (jaxbandits.algorithms.xy)
# ------------------------------------------------------------------------------------------------
def threshold_design(lam: jax.Array, cutoff: float = 1e-5) -> jax.Array:
    """Set design weights below ``cutoff`` to 0 and renormalise (seed 001 App F)."""
    kept = jnp.where(lam >= cutoff, lam, 0.0)
    s = jnp.sum(kept)
    return jnp.where(s > 0, kept / jnp.where(s > 0, s, 1.0), lam)


def gram_from_counts(X: jax.Array, counts: jax.Array) -> jax.Array:
    """A = sum_k counts_k x_k x_k^T [d, d]."""
    return (X.T * counts.astype(X.dtype)) @ X


def pairwise_gaps_and_widths(items: jax.Array, theta_hat: jax.Array, L: jax.Array):
    """(gaps, sq_norms) [M, M]: gaps[i, j] = (z_i - z_j)^T theta_hat and
    sq_norms[i, j] = ||z_i - z_j||^2_{A^-1}, given the Cholesky factor L of A.

    Computed in whitened coordinates W = L^{-1} Z^T (O(M^2 d) time, O(M^2) memory), so that the
    quadratic forms of every pair cost one matrix product.
    """
    W = whiten(L, items)                       # [d, M]
    G = W.T @ W                                # [M, M]
    nz = jnp.diagonal(G)
    sq = jnp.maximum(nz[:, None] + nz[None, :] - 2.0 * G, 0.0)
    v = items @ theta_hat
    return v[:, None] - v[None, :], sq


def eliminate(active: jax.Array, items: jax.Array, theta_hat: jax.Array, L: jax.Array,
              log_term: jax.Array) -> jax.Array:
    """The elimination rule of seed 001 Algorithm 1: the new active mask [M].

    z is removed if some active z' has ||z' - z||_{A^-1} sqrt(2 log_term) < (z' - z)^T theta_hat.
    The empirical best active item is never removed (its gaps to every z' are <= 0).
    """
    gaps, sq = pairwise_gaps_and_widths(items, theta_hat, L)
    beats = (jnp.sqrt(2.0 * log_term * sq) < gaps) & active[:, None] & active[None, :]
    return active & ~jnp.any(beats, axis=0)


def single_answer(active: jax.Array, values: jax.Array) -> jax.Array:
    """Index of the returned item: the best (by ``values``) of the active items."""
    v = jnp.where(active, values, -jnp.inf)
    m = jnp.max(v)
    return jnp.min(jnp.where(v == m, jnp.arange(v.shape[0]), v.shape[0]))


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
                    log_factor: float = 1.0):
    """N_t = max(ceil(2 (2^t)^2 rho (1 + eps) log(f |Z|^2 / delta_t)), r(eps)) of seed 001
    Algorithm 1, with delta_t = delta / t^2 and r(eps) = 2 p / eps (p = support size, Sec 2.3).

    ``log_factor`` f = 1 as in the paper; f = 2 as in the released code.
    """
    t = jnp.asarray(phase, jnp.result_type(float))
    log_term = jnp.log(log_factor * num_items**2 * t**2 / delta)
    n = jnp.ceil(2.0 * (2.0**t) ** 2 * rho * (1.0 + rounding_eps) * log_term)
    r_eps = jnp.ceil(2.0 * support / rounding_eps)
    return jnp.maximum(n, r_eps), log_term


@dataclasses.dataclass(frozen=True)
class RAGE(Algorithm):
    """RAGE (seed 001 Algorithm 1; App B rounding; App F settings).  One ``step`` = one round.

    Attributes:
      delta: confidence level.
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
    """

    delta: float = 0.05
    rounding_eps: float = 0.1
    log_factor: float = 1.0
    design_cutoff: float = 1e-5
    design_tol: float = 1e-3
    design_iters: int = 5000
    design_method: str = "paper"

    def init(self, key: jax.Array, instance: Instance) -> RAGEState:
        K, d = instance.arms.shape
        M = instance.num_items
        dt = instance.arms.dtype
        return RAGEState(
            active=jnp.ones((M,), bool), phase=jnp.asarray(1, jnp.int32),
            samples=jnp.zeros((), dt), pulls=jnp.zeros((K,), dt),
            design=jnp.full((K,), 1.0 / K, dt), last_n=jnp.zeros((), dt),
            last_rho=jnp.zeros((), dt), theta_hat=jnp.zeros((d,), dt))

    def plan(self, state: RAGEState, instance: Instance):
        """The round's design, rho, N_t, integer allocation and log term (no sampling)."""
        X, Z = instance.arms, instance.items
        sol = design.xy_allocation(X, Z, item_mask=state.active, init=state.design,
                                   tol=self.design_tol, max_iters=self.design_iters,
                                   method=self.design_method)
        lam = threshold_design(sol.allocation, self.design_cutoff)
        support = jnp.sum(lam > 0)
        n, log_term = rage_phase_size(sol.value, state.phase, self.delta, Z.shape[0], support,
                                      self.rounding_eps, self.log_factor)
        counts = design.round_design(lam, n)
        return lam, sol.value, n, counts, log_term

    def step(self, key: jax.Array, state: RAGEState, instance: Instance) -> RAGEState:
        X, Z = instance.arms, instance.items
        lam, rho, n, counts, log_term = self.plan(state, instance)
        counts = counts.astype(X.dtype)
        sums = pull_counts(key, instance, counts)
        L = safe_cholesky(gram_from_counts(X, counts))
        theta = jax.scipy.linalg.cho_solve((L, True), X.T @ sums)
        active = eliminate(state.active, Z, theta, L, log_term)
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
        if not (self.rounding_eps > 0):
            raise ValueError(f"rounding_eps must be positive, got {self.rounding_eps}")
        if self.log_factor < 1.0:
            raise ValueError(f"log_factor must be >= 1, got {self.log_factor}")


__all__ = ["RAGE", "RAGEState", "rage_phase_size", "eliminate", "threshold_design",
           "pairwise_gaps_and_widths", "gram_from_counts", "single_answer"]
