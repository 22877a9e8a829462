"""Peace in fixed confidence (Katz-Samuels, Jain, Karnin & Jamieson, "An Empirical Process Approach
to the Union Bound: Practical Algorithms for Combinatorial and Linear Bandits", NeurIPS 2020), for
transductive linear bandits: arms X [K, d] are measured, the best item of Z [M, d] is sought.

In outline, the paper's fixed-confidence Peace runs epochs k = 1, 2, ... at gap scale eps_k ~ 2^-k: it
samples with the design minimising the epoch's complexity of the surviving items Z_k, a Gaussian
width term gamma plus a rho term times log(k^2 / delta), for N_k ~ eps_k^-2 (gamma + rho
log(k^2/delta)) pulls, and discards the items whose estimated gap to the empirical best exceeds
the epoch's scale.  :class:`FixedConfidencePeace` is that algorithm as the authors' released code
runs it on transductive linear bandits (github.com/jkatzsam/linear_bandits_empirical_process,
``transductive_bandits_alg.py``, function ``lin_tb_alg``, with ``gamma_tb_torch``,
``optimal_allocation`` and ``_rounding``; the constants below are that code's).  Epoch k (one
``step``):

1. z_0 = argmax_{z in Z_k} z^T theta_{k-1} (theta_0: a standard normal draw, as released) and the
   directions Y_k = {z_0 - z : z in Z_k};
2. rho design: lambda_rho, rho_k = argmin / min over the simplex of max_{y in Y_k}
   ||y||^2_{A(lambda)^-1} by seed 001 App F's Frank-Wolfe (step 2/(k+2), stop on a 1 % relative
   change of lambda or after ``design_iters`` = 1999 iterations, weights below 1e-5 zeroed even
   when that leaves A(lambda) singular;
   :func:`jaxbandits.design.minimax_design` with ``method="paper"``, the released
   ``optimal_allocation``);
3. gamma design (``complexity="mixed"``, the released default): the Gaussian width
   E_eta[max_{y in Y_k} y^T A(lambda)^{-1/2} eta] minimised over lambda = softmax(w) by Adam
   (learning rate ``gamma_lr`` = 1e-2, PyTorch's betas (0.9, 0.999) and eps 1e-8) for
   ``gamma_iters`` = 500 steps from w = 0, one eta ~ N(0, I_d) per step, the maximising y held
   fixed in the gradient (the released ``gamma_tb_torch``); gamma_k = the squared mean of the
   width over ``gamma_samples`` = 1000 fresh draws at the final lambda_gamma.  The gradient of
   y^T A^{-1/2} eta in A is written in closed form (Daleckii-Krein: in the eigenbasis
   A = U diag(a) U^T it is U (D o U^T sym(y eta^T) U) U^T with divided differences
   D_ij = -1 / (s_i s_j (s_i + s_j)), s = sqrt(a)): the derivative the released code takes by
   automatic differentiation through the inverse and scipy's sqrtm (a Sylvester equation);
4. lambda_k = (lambda_gamma + lambda_rho) / 2 and t_k = 2 sigma^2 rho_k log(2 k^2 / delta) +
   sigma^2 gamma_k (the 2 inside the logarithm is ``log_factor``); ``complexity="rho"``:
   lambda_k = lambda_rho and t_k = 2 sigma^2 rho_k log(2 k^2 / delta), the rho-only version;
5. N_k = max(ceil((1 + eps) t_k (2^(k+2) / B)^2), ceil(p / eps)), p the support of lambda_k,
   eps = ``rounding_eps`` = 1/2; the N_k pulls are lambda_k rounded by efficient apportionment
   (:func:`jaxbandits.design.round_design`, the released ``_rounding``) and drawn with
   :func:`jaxbandits.environment.pull_counts`;
6. theta_k = the least-squares estimate of this epoch's pulls alone (pseudo-inverse);
7. Z_{k+1} = {z in Z_k : (z_0' - z)^T theta_k < B / 2^(k+1)}, z_0' = argmax_{z in Z_k} z^T theta_k.

It stops with one item left and returns it (capped by ``max_steps``: the empirical best survivor).

The gap scale B.  With eps_k = B 2^-(k+1), step 5 is N_k = 4 (1 + eps) t_k / eps_k^2 and step 7
discards gaps above eps_k: B is an upper bound on the gaps, in reward units.  The released
transductive code sets B = t_1, the first epoch's complexity (``gap_scale=None``, the default
here), which is not a gap (its combinatorial ``combi_alg`` uses B = 2 d); ``gap_scale`` = a number
sets B to it instead.  With sigma != 1, B = t_1 / sigma^2 (the unit-noise complexity), so that
sigma = 1 is the released code exactly and N_k scales as sigma^2.

Confirmed against the released code: steps 1-7 and every constant above (theta_0 random, Y_k
from the empirical best rather than all pairs, the 1/2 mixture, the factor 2 inside the logarithm,
2^(k+2), eps = 1/2, B = t_1, the threshold B / 2^(k+1), the epoch-only estimate).  Not taken from
it: the released code's float32 PyTorch arithmetic (float64 here) and its rho, which it returns
at the design before the last Frank-Wolfe step and before the cutoff (here at the final design:
both within App F's 1 % stopping change).  The paper's own Algorithm was not available to check
its equation numbers or constants; they are not claimed here.

Noise: ``sigma`` as in :class:`~jaxbandits.algorithms.RAGE` (None: the instance's noise scale);
the released code assumes standard normal noise.
"""
from __future__ import annotations

import dataclasses
import math
from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp

from jaxbandits import design
from jaxbandits.algorithms.base import Algorithm, Outcome, answer_mask, hyperparameter
from jaxbandits.algorithms.common import check_sigma, noise_scale, require_linear_rewards
from jaxbandits.algorithms.elimination import single_answer, threshold_design
from jaxbandits.algorithms.stages import projected_least_squares
from jaxbandits.design.app_f import trip_bound
from jaxbandits.environment import pull_counts
from jaxbandits.instances.base import Instance

PEACE_COMPLEXITIES = ("mixed", "rho")


def inverse_sqrt_and_grad_weights(A):
    """(A^{-1/2}, U, D): the inverse square root of the SPD matrix A = U diag(a) U^T and the divided
    differences D_ij = -1 / (s_i s_j (s_i + s_j)) (s = sqrt(a)) of a -> a^{-1/2}, with which the
    derivative of <A^{-1/2}, C> in A is U (D o U^T C U) U^T for symmetric C (Daleckii-Krein)."""
    a, U = jnp.linalg.eigh(A)
    s = jnp.sqrt(jnp.maximum(a, jnp.finfo(A.dtype).tiny))
    D = -1.0 / (s[:, None] * s[None, :] * (s[:, None] + s[None, :]))
    return (U / s) @ U.T, U, D


def gamma_design(key, X, Y, y_mask, arm_mask=None, *, iters: int = 500, lr=1e-2, samples: int = 1000):
    """(lambda_gamma, gamma): the Gaussian-width design of the released ``gamma_tb_torch``
    (module docstring, step 3).  Fixed iterations (``iters`` and ``samples`` are static)."""
    dt = X.dtype
    K, d = X.shape
    arms = jnp.ones((K,), bool) if arm_mask is None else arm_mask
    b1, b2, eps = 0.9, 0.999, 1e-8
    k_opt, k_obj = jax.random.split(key)

    def weights(w):
        return jax.nn.softmax(jnp.where(arms, w, -jnp.inf))

    def body(t, carry):
        w, m, v = carry
        lam = weights(w)
        R, U, D = inverse_sqrt_and_grad_weights((X.T * lam) @ X)
        eta = jax.random.normal(jax.random.fold_in(k_opt, t), (d,), dt)
        scores = jnp.where(y_mask, Y @ (R @ eta), -jnp.inf)
        y = Y[jnp.argmax(scores)]
        C = 0.5 * (jnp.outer(y, eta) + jnp.outer(eta, y))
        G = U @ (D * (U.T @ C @ U)) @ U.T                      # d(y^T A^{-1/2} eta) / dA
        g_lam = jnp.sum((X @ G) * X, axis=1)                   # d / d lambda_i = x_i^T G x_i
        g = jnp.where(arms, lam * (g_lam - jnp.dot(lam, g_lam)), 0.0)  # through the softmax
        m = b1 * m + (1.0 - b1) * g
        v = b2 * v + (1.0 - b2) * g * g
        step = (t + 1).astype(dt)
        w = w - lr * (m / (1.0 - b1**step)) / (jnp.sqrt(v / (1.0 - b2**step)) + eps)
        return w, m, v

    zero = jnp.zeros((K,), dt)
    w, _, _ = jax.lax.fori_loop(0, int(iters), body, (zero, zero, zero))
    lam = weights(w)
    R, _, _ = inverse_sqrt_and_grad_weights((X.T * lam) @ X)
    etas = jax.random.normal(k_obj, (int(samples), d), dt)
    widths = jnp.max(jnp.where(y_mask[:, None], Y @ (R @ etas.T), -jnp.inf), axis=0)
    return lam, jnp.mean(widths) ** 2


class FixedConfidencePeaceState(NamedTuple):
    """State between epochs.

    active: [M] bool, the surviving items Z_k.  epoch: the index k of the next epoch (from 1).
    scale: the gap scale B (NaN until epoch 1 sets it, with ``gap_scale=None``).
    samples: total pulls; pulls: [K] per arm.  theta: [d] the last epoch's estimate (theta_0:
    a standard normal draw).  last_n, last_rho, last_gamma: N_k, rho_k, gamma_k of the last epoch.
    """

    active: jax.Array
    epoch: jax.Array
    scale: jax.Array
    samples: jax.Array
    pulls: jax.Array
    theta: jax.Array
    last_n: jax.Array
    last_rho: jax.Array
    last_gamma: jax.Array


@dataclasses.dataclass(frozen=True)
class FixedConfidencePeace(Algorithm):
    """Fixed-confidence Peace for transductive linear bandits (Katz-Samuels et al. 2020), as the
    authors' released ``lin_tb_alg`` runs it (module docstring).  One ``step`` = one epoch.

    Attributes:
      delta: confidence level.
      sigma: sub-Gaussian scale of the noise (x sigma^2 in t_k); None (default) = the instance's
        noise scale (Gaussian), 1/2 (Bernoulli).
      complexity: "mixed" (released: the 1/2 mixture of the gamma and rho designs, t_k = 2 rho_k
        log(2 k^2 / delta) + gamma_k) or "rho" (the rho design alone, t_k = 2 rho_k log(2 k^2 / delta)).
      rounding_eps: eps of N_k's (1 + eps) and of the floor p / eps (1/2 as released).
      log_factor: f in log(f k^2 / delta) (2 as released; 1 gives log(k^2 / delta)).
      gap_scale: B, an upper bound on the gaps (reward units); None (default) = the released code's
        B = t_1 / sigma^2.
      gamma_iters, gamma_lr, gamma_samples: Adam steps, learning rate and the Monte Carlo draws of
        the final width (500, 1e-2, 1000 as released).
      design_iters: the rho design's Frank-Wolfe iteration cap (1999: the released loop
        ``range(1, 2000)``).
    """

    delta: float = hyperparameter(0.05, low=0.0, high=1.0, traced=True)
    sigma: float | None = hyperparameter(None, low=0.0, traced=True)
    complexity: str = "mixed"
    rounding_eps: float = hyperparameter(0.5, low=0.0, traced=True)
    log_factor: float = hyperparameter(2.0, low=1.0, low_open=False, traced=True)
    gap_scale: float | None = None
    gamma_iters: int = hyperparameter(500, count=1)
    gamma_lr: float = hyperparameter(1e-2, low=0.0, traced=True)
    gamma_samples: int = hyperparameter(1000, count=1)
    design_iters: int = hyperparameter(1999, count=1)

    # padded arms: zero weight in both designs (never pulled); padded items: never active
    supports_padding: ClassVar[bool] = True

    def __post_init__(self):
        if self.complexity not in PEACE_COMPLEXITIES:
            raise ValueError(f"FixedConfidencePeace.complexity must be one of {PEACE_COMPLEXITIES}, got {self.complexity!r}")
        g = self.gap_scale
        if g is not None and (isinstance(g, bool) or not isinstance(g, (int, float)) or not math.isfinite(g) or g <= 0):
            raise ValueError(f"FixedConfidencePeace.gap_scale must be None (the released B = t_1) or a positive finite "
                             f"number, got {g!r}")

    def validate(self, instance: Instance) -> None:
        super().validate(instance)
        require_linear_rewards(instance, "FixedConfidencePeace")
        check_sigma(self.sigma)

    def init(self, key: jax.Array, instance: Instance) -> FixedConfidencePeaceState:
        K, d = instance.arms.shape
        dt = instance.arms.dtype
        zero = jnp.zeros((), dt)
        scale = jnp.asarray(jnp.nan if self.gap_scale is None else self.gap_scale, dt)
        return FixedConfidencePeaceState(
            active=instance.valid_items(), epoch=jnp.asarray(1, jnp.int32), scale=scale, samples=zero,
            pulls=jnp.zeros((K,), dt), theta=jax.random.normal(key, (d,), dt), last_n=zero, last_rho=zero,
            last_gamma=zero)

    def plan(self, key, state: FixedConfidencePeaceState, instance: Instance):
        """The epoch's design lambda_k, rho_k, gamma_k, t_k / sigma^2, N_k, B and integer allocation
        (no sampling; module docstring, steps 1-5)."""
        X, Z = instance.arms, instance.items
        dt = X.dtype
        K = X.shape[0]
        z0 = Z[single_answer(state.active, Z @ state.theta)]
        Y = z0[None, :] - Z
        trips = min(int(self.design_iters), trip_bound(K)) if self.policy.batched else None
        sol = design.minimax_design(X, Y, y_mask=state.active, arm_mask=instance.arm_mask,
                                    max_iters=int(self.design_iters), method="paper", fixed_trips=trips)
        # the released cutoff always applies (the library's keeps a design the cutoff leaves
        # singular; the released code then estimates with the pseudo-inverse, as step 6 does)
        lam_rho, rho = threshold_design(sol.allocation.astype(dt), 1e-5), sol.value.astype(dt)
        k = state.epoch.astype(dt)
        unit = 2.0 * rho * jnp.log(self.log_factor * k**2 / self.delta)
        if self.complexity == "mixed":
            lam_g, gamma = gamma_design(key, X, Y, state.active, instance.arm_mask, iters=self.gamma_iters,
                                        lr=self.gamma_lr, samples=self.gamma_samples)
            lam = 0.5 * (lam_g + lam_rho)
            unit = unit + gamma
        else:
            lam, gamma = lam_rho, jnp.zeros((), dt)
        sigma2 = noise_scale(self.sigma, instance) ** 2
        B = jnp.where(jnp.isnan(state.scale), unit, state.scale)
        support = jnp.sum(lam > 0).astype(dt)
        n = jnp.maximum(jnp.ceil((1.0 + self.rounding_eps) * sigma2 * unit * (2.0 ** (k + 2.0) / B) ** 2),
                        jnp.ceil(support / self.rounding_eps))
        counts = design.round_design(lam, n, arm_mask=instance.arm_mask, fixed_trips=self.policy.batched)
        return lam, rho, gamma, unit, n, B, counts.astype(dt)

    def step(self, key: jax.Array, state: FixedConfidencePeaceState, instance: Instance) -> FixedConfidencePeaceState:
        X, Z = instance.arms, instance.items
        k_design, k_pull = jax.random.split(key)
        _, rho, gamma, _, n, B, counts = self.plan(k_design, state, instance)
        sums = pull_counts(k_pull, instance, counts)
        theta = projected_least_squares(X, counts, sums, None, "pinv")  # this epoch's pulls alone
        values = Z @ theta
        best = values[single_answer(state.active, values)]
        active = state.active & (best - values < B / 2.0 ** (state.epoch.astype(X.dtype) + 1.0))
        return FixedConfidencePeaceState(active=active, epoch=state.epoch + 1, scale=B,
                                         samples=state.samples + jnp.sum(counts), pulls=state.pulls + counts,
                                         theta=theta, last_n=n, last_rho=rho, last_gamma=gamma)

    def done(self, state: FixedConfidencePeaceState) -> jax.Array:
        return jnp.sum(state.active) <= 1

    def outcome(self, state: FixedConfidencePeaceState, instance: Instance) -> Outcome:
        # stopped: the one item left; capped: the empirical best survivor of the last epoch
        idx = single_answer(state.active, instance.items @ state.theta)
        return Outcome(answer=answer_mask(idx, instance.num_items), samples=state.samples, pulls=state.pulls)


__all__ = ["FixedConfidencePeace", "FixedConfidencePeaceState", "gamma_design", "inverse_sqrt_and_grad_weights"]
