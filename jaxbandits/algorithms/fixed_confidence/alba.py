"""ALBA with the Y-ElimTil sub-procedure (Tao, Blanco, Zhou, ICML 2018, "Best Arm Identification
in Linear Bandits with Linear Dimension Dependency"), as seed 001 App F ran it.

Structure (Tao et al., Algorithms ALBA and Y-ElimTil; constants of seed 001's released
ALBA_YELIM.py, which produced seed 001 Figs. 1-2):

* Rounds r = 0, 1, ...: delta_r = 6 delta / (pi^2 (r + 1)^2); the round's sub-procedure
  Y-ElimTil_{p_r} eliminates arms until at most p_r = floor(d / 2^r) remain (n_r = number of
  active arms when the round starts).  ALBA stops when one arm is left.
* Iteration s = 1, 2, ... of Y-ElimTil: delta_s = 6 delta_r / (pi^2 s^2), e_s = 2^-s,
  c_0 = max(4 L^2, 3) (L a bound on ||theta||), l_s = 4 c_0 (2 + (6 + 4 / g^s) d) (g^s / 4)^2
  with g = 1.1, N_s = ceil(l_s log(5 n_r^2 / (2 delta_s))) fresh pulls drawn i.i.d. from the
  G-optimal design lambda_s on the active arms (and every arm in their span), weights below 1e-5
  moved to the largest one;
* the estimator of Tao et al. uses the *design* matrix instead of the empirical one:
  theta_s = (N_s M_s)^+ b_s with M_s = sum_x lambda_x x x^T and b_s = sum_t x_t r_t;
* every active x other than the empirical best x_hat is eliminated when
  conf(y) < y^T theta_s for y = x_hat - x, with conf = min(err, ERR) the two confidence widths of
  Tao et al.'s Y-ElimTil (Bernstein-type bounds on the design-matrix estimator; ERR uses the
  empirical |x^T theta_s| + e_s / 2 in the variance proxy), in the form of the released code.

Noise.  Tao et al. and the released code assume unit-variance noise (the code draws N(0, 1)).  The
noise enters Y-ElimTil in one place: the last term of both widths (``tail`` below),
sqrt(2 (||y||^2_{M^+} / l_s)(1 + sqrt(3 d / l_s))), the deviation of the noise part
y^T M^+ sum_t x_t eta_t / N_s of the estimate, whose variance proxy is sigma^2 ||y||^2_{M^+} / N_s
for sigma-sub-Gaussian eta; so it gets a factor sigma.  To keep each iteration's elimination
target (widths ~ e_s) the sample size grows with it: c_0 = max(4 L^2, 3 sigma^2) in l_s (the code's
max(4 L^2, 3) is the larger of the signal and the unit-noise constants).  This sigma placement is
our extension for sigma != 1 (neither Tao et al. nor seed 001 state it); sigma = 1 is the released
code exactly.  sigma is the ``sigma`` option, else the instance's noise scale
(:func:`jaxbandits.algorithms.common.noise_scale`).

One ``step`` = one Y-ElimTil iteration (fresh samples; nothing is carried over between
iterations but the active set, as in the code).  ALBA is stated for X = Z.  L defaults to
||theta|| of the instance (the released code passes the true norm; Tao et al. assume a known
bound); set ``norm_bound`` to use a fixed bound instead.
"""
from __future__ import annotations

import dataclasses
import math
from typing import ClassVar, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from jaxbandits.batching import solve_where
from jaxbandits.design.gopt import g_optimal
from jaxbandits.algorithms.base import (Algorithm, Outcome, answer_mask, hyperparameter, instance_cache,
                                        map_instances, with_cache)
from jaxbandits.algorithms.common import noise_scale
from jaxbandits.algorithms.common import check_sigma, require_linear_rewards
from jaxbandits.algorithms.elimination import single_answer
from jaxbandits.design.core import inverse_design, null_projector
from jaxbandits.environment import multinomial, pull_counts
from jaxbandits.instances.base import Instance


class ALBAState(NamedTuple):
    """active: [K] bool; round: r; iteration: s (within the round); round_active: n_r;
    pulls: [K]; samples: total pulls; theta_hat: [d] last estimate; unfinished_draws: binomial
    draws that did not finish within their fixed number of tries
    (:func:`jaxbandits.environment.multinomial`; 0 but with negligible probability); design: [K]
    the G-optimal design of the active set (after the cutoff), solved when the set changes."""

    active: jax.Array
    round: jax.Array
    iteration: jax.Array
    round_active: jax.Array
    pulls: jax.Array
    samples: jax.Array
    theta_hat: jax.Array
    unfinished_draws: jax.Array
    design: jax.Array


#: growth of the buffer sizes of ALBA's design solve under the accelerator policy
#: (:func:`jaxbandits.batching.solve_where`'s ``bucket_factor``)
DESIGN_BUCKET_FACTOR = 4096


def span_mask(X: jax.Array, active: jax.Array, rtol: float = 1e-9) -> jax.Array:
    """Active arms plus every arm lying in the span of the active arms (Y-ElimTil's design set)."""
    perp, _ = null_projector(X, active, rtol)
    res = jnp.sum((X @ perp) ** 2, axis=-1)
    return active | (res <= 1e-12 * jnp.maximum(jnp.sum(X * X, axis=-1), 1e-300))


@dataclasses.dataclass(frozen=True)
class ALBA(Algorithm):
    """ALBA / Y-ElimTil (Tao et al. 2018; seed 001 App F).  One ``step`` = one Y-ElimTil iteration.

    Attributes:
      delta: confidence level.
      sigma: sub-Gaussian scale of the noise (the widths' noise term x sigma, c_0 = max(4 L^2,
        3 sigma^2)); None (default) = the instance's noise scale (Gaussian), 1/2 (Bernoulli).
      growth: g in l_s (1.1 in the released code).
      norm_bound: L >= ||theta||; None uses the instance's ||theta|| (released code).
      design_cutoff: design weights below it are moved to the largest weight (released code).
      design_tol, design_iters: G-optimal solver settings.
    """

    delta: float = hyperparameter(0.05, low=0.0, high=1.0, traced=True)
    sigma: Optional[float] = hyperparameter(None, low=0.0, traced=True)
    growth: float = hyperparameter(1.1, traced=True)
    norm_bound: Optional[float] = hyperparameter(None, low=0.0, traced=True)
    design_cutoff: float = hyperparameter(1e-5, low=0.0, low_open=False, traced=True)
    design_tol: float = hyperparameter(1e-3, low=0.0, traced=True)
    design_iters: int = hyperparameter(2000, count=1)

    # padded arms (= items): never active, never in the design set (a zero arm lies in every span)
    supports_padding: ClassVar[bool] = True

    def _advance(self, active, r, s, n_r, d):
        """Move to the next round while at most p_r = floor(d / 2^r) arms are active."""
        n = jnp.sum(active).astype(jnp.int32)
        rounds = int(math.ceil(math.log2(max(d, 1)))) + 2

        def body(_, c):
            r, s, n_r = c
            p = jnp.floor(d / 2.0 ** r.astype(jnp.result_type(float)))
            adv = (n > 1) & (n <= p)
            return (r + adv.astype(r.dtype), jnp.where(adv, 1, s).astype(s.dtype),
                    jnp.where(adv, n, n_r).astype(n_r.dtype))

        return jax.lax.fori_loop(0, rounds, body, (r, s, n_r))

    def initial_design(self, instance: Instance) -> jax.Array:
        """The first round's design (every valid arm active, :meth:`_design`): the same for every
        replication of an instance."""
        return self._design(instance.arms, instance.valid_arms(), instance.arm_mask, self.design_tol,
                            self.design_cutoff)

    def prepare(self, instances: Instance) -> Instance:
        """Solve the first round's design once per instance instead of in every replication's
        ``init``: on an accelerator ``init`` runs over every lane at each refill, and its solver was
        one more copy of the G-optimal Frank-Wolfe in the engine's program."""
        return with_cache(instances, map_instances(self, "initial_design", instances))

    def init(self, key: jax.Array, instance: Instance) -> ALBAState:
        K, d = instance.arms.shape
        dt = instance.arms.dtype
        active = instance.valid_arms()
        cached = instance_cache(instance)
        r, s, n_r = self._advance(active, jnp.asarray(0, jnp.int32), jnp.asarray(1, jnp.int32),
                                  jnp.asarray(instance.true_num_arms(), jnp.int32), d)
        return ALBAState(active=active, round=r, iteration=s, round_active=n_r,
                         pulls=jnp.zeros((K,), dt), samples=jnp.zeros((), dt),
                         theta_hat=jnp.zeros((d,), dt), unfinished_draws=jnp.zeros((), jnp.int32),
                         design=self.initial_design(instance) if cached is None else cached)

    def _design(self, X, active, arm_mask, tol, cutoff, needed=None):
        """The G-optimal design on the active arms and the arms in their span, weights below the
        cutoff moved to the largest one (released code).  It depends on the active set alone, so
        a step solves it only when that set changes (under
        :func:`jaxbandits.batching.solve_where`); under an accelerator policy with a trip count
        known at compile time (``g_optimal(fixed_trips=True)``, the same design).  ``tol`` and
        ``cutoff`` are ``design_tol`` and ``design_cutoff``, passed in rather than read from
        ``self`` because they may be traced and ``solve_where`` sees only its arguments.  With
        fused kernels (the policy's ``kernels``; GPUs) the solve is one kernel that every lane
        enters and only the lanes with ``needed`` run (no ``solve_where``)."""
        smask = span_mask(X, active)
        if arm_mask is not None:
            smask = smask & arm_mask
        lam = g_optimal(X, arm_mask=smask, tol=tol, max_iters=int(self.design_iters),
                        fixed_trips=self.policy.batched, kernels=self.policy.kernels, needed=needed).allocation
        small = lam < cutoff
        dropped = jnp.sum(jnp.where(small, lam, 0.0))
        lam = jnp.where(small, 0.0, lam)
        return lam.at[jnp.argmax(lam)].add(dropped)

    def sample_size(self, r, s, n_r, d, L, sigma=1.0):
        """(N_s, l_s, e_s) of iteration s of round r (sigma: noise scale, module docstring)."""
        f = jnp.result_type(float)
        r = r.astype(f)
        s = s.astype(f)
        delta_r = 6.0 * self.delta / (math.pi**2 * (r + 1.0) ** 2)
        delta_s = 6.0 * delta_r / (math.pi**2 * s**2)
        # sigma^2: the noise constant of c_0 (released code: 3 at sigma = 1; module docstring)
        c0 = jnp.maximum(4.0 * L**2, 3.0 * sigma**2)
        g = self.growth**s
        l_s = 4.0 * c0 * (2.0 + (6.0 + 4.0 / g) * d) * (g / 4.0) ** 2
        n = jnp.ceil(l_s * jnp.log(5.0 * n_r.astype(f) ** 2 / (2.0 * delta_s)))
        return n, l_s, 2.0 ** (-s)

    def step(self, key: jax.Array, state: ALBAState, instance: Instance) -> ALBAState:
        X = instance.arms
        K, d = X.shape
        L = (jnp.linalg.norm(instance.theta) if self.norm_bound is None
             else jnp.asarray(self.norm_bound, X.dtype))
        sigma = noise_scale(self.sigma, instance)
        n, l_s, e_s = self.sample_size(state.round, state.iteration, state.round_active, d, L, sigma)

        # G-optimal design on the active arms and the arms in their span (solved when the active
        # set last changed).
        lam = state.design

        k_alloc, k_pull = jax.random.split(key)
        counts, unfinished = multinomial(k_alloc, n, lam, dtype=X.dtype)
        sums = pull_counts(k_pull, instance, counts)
        b = X.T @ sums
        perp, _ = null_projector(X, state.active)
        Minv = inverse_design(lam, X, perp)                 # M^+ on span(active)
        theta = Minv @ b / n

        # Eliminate against the empirical best active arm (Y-ElimTil; released code's conf).
        vals = X @ theta
        best = single_answer(state.active, vals)
        Y = X[best][None, :] - X                            # [K, d]
        YM = Y @ Minv
        y_var2 = jnp.maximum(jnp.sum(YM * Y, axis=-1), 0.0)
        y_var = jnp.sqrt(y_var2)
        y_norm = jnp.linalg.norm(Y, axis=-1)
        sd = math.sqrt(d)
        # the noise term of both widths, x sigma (module docstring)
        tail = sigma * jnp.sqrt(2.0 * ((y_var2 / l_s) * jnp.sqrt(3.0 * d / l_s) + y_var2 / l_s))
        err = (math.sqrt(2.0) * L * y_var / jnp.sqrt(l_s)
               + 2.0 * L * (y_norm + y_var * sd) / (3.0 * l_s) + tail)
        cross = YM @ X.T                                    # [K, K] y^T M^+ x
        expect = jnp.sum(lam[None, :] * (cross * (jnp.abs(vals) + e_s / 2.0)[None, :]) ** 2, axis=-1)
        gap = Y @ theta
        ERR = (jnp.sqrt(2.0 * expect / l_s)
               + (2.0 * (jnp.abs(gap) + e_s / 2.0) + L * y_var * sd) / (3.0 * l_s) + tail)
        conf = jnp.minimum(err, ERR)
        removed = state.active & (jnp.arange(K) != best) & (conf < gap)
        active = state.active & ~removed

        r, s, n_r = self._advance(active, state.round, state.iteration + 1, state.round_active, d)
        # buffers of 0, 1, 4,096 and all the lanes (not 0, 1, 8, 64, ...): a G-optimal solve on K
        # arms is launch-bound on a GPU far beyond 4,096 lanes, and each buffer size is a copy of
        # the solver to compile (ALBA on Soare d = 5 at 262,144 lanes, compiled for an H100: 17.8
        # CPU seconds with buffers growing by 64, 14.5 by 4,096; the same results,
        # docs/measurements/2026-11-29-short-runs-and-peace-solver-calls.md)
        changed = jnp.any(removed) & (jnp.sum(active) > 1)
        args = (X, active, instance.arm_mask, jnp.asarray(self.design_tol, X.dtype),
                jnp.asarray(self.design_cutoff, X.dtype))
        if self.policy.kernels == "xla":
            design = solve_where(changed, self._design, args, lam, bucket_factor=DESIGN_BUCKET_FACTOR)
        else:
            # one fused kernel over every lane, in which only the lanes whose set changed iterate
            design = jnp.where(changed, self._design(*args, needed=changed), lam)
        return ALBAState(active=active, round=r, iteration=s, round_active=n_r,
                         pulls=state.pulls + counts, samples=state.samples + jnp.sum(counts),
                         theta_hat=theta, unfinished_draws=state.unfinished_draws + unfinished,
                         design=design)

    def done(self, state: ALBAState) -> jax.Array:
        return jnp.sum(state.active) <= 1

    def outcome(self, state: ALBAState, instance: Instance) -> Outcome:
        idx = single_answer(state.active, instance.arms @ state.theta_hat)
        return Outcome(answer=answer_mask(idx, instance.num_items), samples=state.samples,
                       pulls=state.pulls, converged=state.unfinished_draws == 0)

    def validate(self, instance: Instance) -> None:
        super().validate(instance)
        require_linear_rewards(instance, "ALBA")
        check_sigma(self.sigma)
        if instance.arms.shape != instance.items.shape or not np.array_equal(
                np.asarray(instance.arms), np.asarray(instance.items)):
            raise ValueError("ALBA is defined for X = Z (plain linear best-arm identification)")
        if not (self.growth > 1.0):
            raise ValueError(f"growth must be > 1, got {self.growth}")


__all__ = ["ALBA", "ALBAState", "span_mask"]
