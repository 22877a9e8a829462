"""BayesGap (Hoffman, Shahriari & de Freitas 2014), fixed-budget, with GP kernels (seed 002 App E.1).

M. W. Hoffman, B. Shahriari, N. de Freitas, "On correlation and budget constraints in model-based
bandit optimization with application to automatic machine learning", AISTATS 2014, Algorithm 1
(a Bayesian version of UGapE, Gabillon et al. 2012).

Model: the arm means f = (f(x_1), ..., f(x_K)) have a Gaussian-process prior with kernel k, and
rewards are f(x_k) + N(0, sigma^2).  Written in weight space: f = Phi w, w ~ N(0, eta^2 I), with
Phi Phi^T = G the kernel matrix (Phi = X for the linear kernel; Phi = V diag(sqrt(lambda)) from
the eigendecomposition of G otherwise), so the posterior is Bayesian linear regression on Phi.  It is
updated by exact rank-one (Kalman) steps per pull, O(p^2 + K p) with p the feature dimension.

Each round t (after one initial pull of every arm):

* s_k(t) posterior standard deviation, U_k = mu_k + beta s_k, L_k = mu_k - beta s_k,
* B_k(t) = max_{i != k} U_i - L_k,  J(t) = argmin_k B_k(t),  j(t) = argmax_{k != J(t)} U_k,
* pull whichever of J(t), j(t) has the larger s_k (Hoffman et al. Algorithm 1),
* recommend J(t*) with t* = argmin_t B_{J(t)}(t).

The noise variance sigma^2 (``noise_var``, or ``sigma`` squared, default
:func:`jaxbandits.algorithms.common.noise_scale`: the instance's Gaussian noise, 1/2 for
Bernoulli/logistic rewards) enters in three places, all from Hoffman et al. Sec 3-4: the posterior
precision Phi^T Phi / sigma^2 + I / eta^2 and mean C Phi^T y / sigma^2 (the GP posterior, Sec 3),
the rank-one update's innovation variance sigma^2 + phi_a^T C phi_a, and beta (Theorem 1).

beta follows Hoffman et al. Theorem 1 for the linear-Gaussian model,
beta^2 = ((B - K) / sigma^2 + kappa / eta^2) / (4 H_eps), kappa = sum_k ||phi_k||^{-2},
H_eps = sum_k H_{k,eps}^{-2}, H_{k,eps} = max(1/2 (Delta_k + eps), eps); the gaps Delta_k are
unknown and are estimated every round from the posterior with the 3-standard-deviation bounds
(as the seed 002 authors' release does).  Pass ``beta`` to fix it instead.

Kernels (seed 002 App E.1: BayesGap-Lin, BayesGap-exp, BayesGap-M): ``"linear"`` k = x^T x';
``"exponential"`` k = exp(-||x - x'|| / l); ``"matern"`` Matern nu = 3/2,
k = (1 + sqrt(3) r / l) exp(-sqrt(3) r / l) (the nu of the authors' release).  One ``step`` is one
pull; the run spends exactly B pulls.
"""
from __future__ import annotations

import dataclasses
import math
from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp

from jaxbandits.algorithms.base import Algorithm, Outcome, answer_mask, concrete, arms_and_dim, hyperparameter
from jaxbandits.algorithms.common import noise_scale
from jaxbandits.environment import pull, pull_counts
from jaxbandits.instances.base import Instance

KERNELS = ("linear", "exponential", "matern", "sq_exponential")
FEATURES = ("root", "kernel_rows")
RULES = ("hoffman", "released")


def kernel_matrix(X: jax.Array, kernel: str, length_scale: float) -> jax.Array:
    """Kernel matrix G [K, K] of the arms for a named kernel (seed 002 App E.1)."""
    if kernel == "linear":
        return X @ X.T
    sq = jnp.sum(X * X, axis=-1)
    r2 = jnp.maximum(sq[:, None] + sq[None, :] - 2.0 * X @ X.T, 0.0)
    r = jnp.sqrt(r2 + 1e-300) * (r2 > 0)
    if kernel == "exponential":
        return jnp.exp(-r / length_scale)
    if kernel == "sq_exponential":  # the seed 002 release's 'exp' kernel: exp(-||x - x'||^2 / l)
        return jnp.exp(-r2 / length_scale)
    if kernel == "matern":
        a = math.sqrt(3.0) * r / length_scale
        return (1.0 + a) * jnp.exp(-a)
    raise ValueError(f"unknown kernel {kernel!r}; expected one of {KERNELS}")


def feature_map(X: jax.Array, kernel: str, length_scale: float, features: str = "root") -> jax.Array:
    """Phi with Phi Phi^T = G (Phi = X for the linear kernel); ``features="kernel_rows"``: Phi = G
    itself (prior covariance G^2), what the seed 002 release does for its Matern kernel."""
    if kernel == "linear":
        return X
    G = kernel_matrix(X, kernel, length_scale)
    if features == "kernel_rows":
        return G
    lam, V = jnp.linalg.eigh(G)
    return V * jnp.sqrt(jnp.maximum(lam, 0.0))[None, :]


class BayesGapState(NamedTuple):
    t: jax.Array          # pulls made so far
    mean: jax.Array       # [K] posterior mean of f
    var: jax.Array        # [K] posterior variance of f
    C: jax.Array          # [p, p] posterior covariance of the weights
    phi: jax.Array        # [K, p] feature map
    kappa: jax.Array      # sum_k ||phi_k||^{-2}
    best_b: jax.Array     # min_t B_{J(t)}(t)
    rec: jax.Array        # J(t*) (recommendation)
    pulls: jax.Array      # [K]


@dataclasses.dataclass(frozen=True)
class BayesGap(Algorithm):
    """BayesGap (Hoffman et al. 2014 Algorithm 1) with a GP prior.

    Attributes:
      budget: B (>= K; the first K pulls sample every arm once).
      kernel: "linear", "exponential" or "matern" (seed 002 App E.1).
      length_scale: l of the exponential / Matern kernels.
      prior_std: eta, prior standard deviation of the weights (f ~ GP(0, eta^2 k)).
      noise_var: sigma^2 of the rewards (Hoffman et al.'s noise variance).
      sigma: the sub-Gaussian scale instead (sigma^2 = sigma**2), the convention of every other
        algorithm.  Give at most one of the two; default (both None):
        :func:`~jaxbandits.algorithms.common.noise_scale` (the instance's Gaussian noise, 1/2 for
        Bernoulli / logistic rewards, on which the Gaussian likelihood is misspecified, as in
        seed 002 Sec 8.4's BayesGap-M).
      eps: epsilon of H_eps (Hoffman et al. Theorem 1).
      beta: fixed exploration coefficient (default: Theorem 1's, with estimated gaps).
      features: "root" (Phi Phi^T = G, a GP with kernel k) or "kernel_rows" (Phi = G).
      rule: "hoffman" (Theorem 1's beta and the bounds mu +- beta s, s the posterior standard
        deviation) or "released": the seed 002 authors' code, beta = ((B - K) / sigma^2 +
        kappa / eta^2) / (4 sum_k max((Delta_k + eps) / 2, eps)) (no square root, H_eps without
        the inverse squares) and bounds mu +- beta s^2 (the posterior *variance*), the gap
        estimates from mu +- 3 s^2.

    :func:`released_config` gives the whole configuration of the authors' code (kernel, length
    scale, prior std 50, eps 0, these two rules), the row the seed 002 experiments print beside
    Hoffman et al.'s.
    """

    budget: int = hyperparameter(low=0.0, pulls=True, traced=True)
    kernel: str = "linear"
    length_scale: float = hyperparameter(1.0, low=0.0, traced=True)
    prior_std: float = hyperparameter(1.0, low=0.0, traced=True)
    noise_var: float | None = hyperparameter(None, low=0.0, traced=True)
    eps: float = hyperparameter(0.01, low=0.0, low_open=False, traced=True)
    beta: float | None = hyperparameter(None, low=0.0, traced=True)
    sigma: float | None = hyperparameter(None, low=0.0, traced=True)
    features: str = "root"
    rule: str = "hoffman"

    needs_span: ClassVar[bool] = False
    fixed_budget: ClassVar[bool] = True

    def __post_init__(self):
        if self.kernel not in KERNELS:
            raise ValueError(f"unknown kernel {self.kernel!r}; expected one of {KERNELS}")
        if self.features not in FEATURES:
            raise ValueError(f"unknown features {self.features!r}; expected one of {FEATURES}")
        if self.rule not in RULES:
            raise ValueError(f"unknown rule {self.rule!r}; expected one of {RULES}")
        if concrete(self.noise_var) and concrete(self.sigma):
            raise ValueError("BayesGap: give the noise as sigma or as noise_var (= sigma^2), not both")

    def validate(self, instance: Instance) -> None:
        super().validate(instance)
        if int(self.budget) < instance.num_arms:
            raise ValueError(f"BayesGap needs B >= K = {instance.num_arms} (one initial pull per arm), "
                             f"got B = {self.budget}")
        if instance.num_items != instance.num_arms:
            raise ValueError("BayesGap identifies the best arm: items must be the arms (Z = X)")

    def steps_needed(self, instance, dim=None) -> int:
        """Engine steps a run takes (:class:`~jaxbandits.algorithms.base.StepsNeeded`): the budget
        less the K initial pulls."""
        return int(self.budget) - arms_and_dim(instance, dim)[0]

    def _sigma2(self, instance):
        """sigma^2 of Hoffman et al. Sec 3 (the GP likelihood's noise variance)."""
        if self.noise_var is not None:
            return jnp.asarray(self.noise_var, instance.arms.dtype)
        return noise_scale(self.sigma, instance) ** 2

    def init(self, key, instance: Instance) -> BayesGapState:
        X = instance.arms
        K = X.shape[0]
        dt = X.dtype
        phi = feature_map(X, self.kernel, self.length_scale, self.features)
        p = phi.shape[1]
        s2 = self._sigma2(instance)
        counts = jnp.ones(K, dt)
        sums = pull_counts(key, instance, counts)
        # posterior of w ~ N(0, eta^2 I) after one reward per arm (Hoffman et al. Sec 3): sigma^2 here
        prec = phi.T @ phi / s2 + jnp.eye(p, dtype=dt) / self.prior_std ** 2
        L = jnp.linalg.cholesky(prec)
        Linv = jax.scipy.linalg.solve_triangular(L, jnp.eye(p, dtype=dt), lower=True)
        C = Linv.T @ Linv
        w = C @ (phi.T @ sums) / s2  # posterior mean (Sec 3): sigma^2 here
        mean = phi @ w
        var = jnp.sum((phi @ C) * phi, axis=-1)
        norms = jnp.sum(phi * phi, axis=-1)
        kappa = jnp.sum(1.0 / jnp.maximum(norms, 1e-300))
        # Before any gap-based round the recommendation is the posterior argmax (B = K case).
        return BayesGapState(jnp.asarray(K, jnp.int32), mean, var, C, phi, kappa,
                             jnp.asarray(jnp.inf, dt), jnp.argmax(mean).astype(jnp.int32), counts)

    def _gap_index(self, mean, s, beta):
        U, L = mean + beta * s, mean - beta * s
        K = mean.shape[0]
        # max + masked max instead of top_k: top_k under vmap was the bottleneck on CPU.
        idx = jnp.arange(K)
        m1 = jnp.max(U)
        amax = jnp.min(jnp.where(U == m1, idx, K))
        m2 = jnp.max(jnp.where(idx == amax, -jnp.inf, U))
        max_other = jnp.where(idx == amax, m2, m1)
        return max_other - L, U

    def step(self, key, state: BayesGapState, instance: Instance) -> BayesGapState:
        dt = state.mean.dtype
        K = state.mean.shape[0]
        s2 = self._sigma2(instance)
        s = jnp.sqrt(jnp.maximum(state.var, 0.0))
        # the unit of the confidence bounds: the standard deviation (Hoffman et al.), or the
        # variance (the seed 002 release)
        w = jnp.maximum(state.var, 0.0) if self.rule == "released" else s
        if self.beta is None:
            dhat, _ = self._gap_index(state.mean, w, 3.0)
            H = jnp.maximum(0.5 * (dhat + self.eps), self.eps)
            # Hoffman et al. Theorem 1: beta^2 = ((B - K) / sigma^2 + kappa / eta^2) / (4 H_eps)
            num = (jnp.asarray(self.budget) - K) / s2 + state.kappa / self.prior_std ** 2
            if self.rule == "released":
                beta = num / jnp.maximum(4.0 * jnp.sum(H), 1e-300)
            else:
                beta = jnp.sqrt(num / (4.0 * jnp.sum(H ** -2.0)))
        else:
            beta = jnp.asarray(self.beta, dt)
        Bk, U = self._gap_index(state.mean, w, beta)
        J = jnp.argmin(Bk)
        j = jnp.argmax(jnp.where(jnp.arange(K) == J, -jnp.inf, U))
        a = jnp.where(s[J] >= s[j], J, j)
        better = Bk[J] < state.best_b
        best_b = jnp.where(better, Bk[J], state.best_b)
        rec = jnp.where(better, J, state.rec)
        y = pull(key, instance, a)
        phi_a = state.phi[a]
        u = state.C @ phi_a
        denom = s2 + phi_a @ u  # innovation variance of the Kalman update (Sec 3): sigma^2 here
        resid = y - state.mean[a]
        proj = state.phi @ u
        return BayesGapState(state.t + 1, state.mean + proj * resid / denom, state.var - proj * proj / denom,
                             state.C - jnp.outer(u, u) / denom, state.phi,
                             state.kappa, best_b, rec.astype(jnp.int32), state.pulls.at[a].add(1.0))

    def done(self, state: BayesGapState) -> jax.Array:
        return state.t >= self.budget

    def outcome(self, state: BayesGapState, instance: Instance) -> Outcome:
        return Outcome(answer_mask(state.rec, instance.num_items), state.t, state.pulls)


RELEASED_KERNELS = {"matern": ("matern", 10.0, "kernel_rows"), "exponential": ("sq_exponential", 1000.0, "root")}
"""The seed 002 release's BayesGap kernels (its grid-searched choices per experiment): Matern
nu = 3/2 with l = 10 and the kernel matrix as features (sphere, synt 6; logistic, synt 3), and
'exp' = exp(-||x - x'||^2 / l) with l = 1000 and eigen-features (static instance, synt 5)."""


def released_config(budget: int, kernel: str = "matern", **kw) -> BayesGap:
    """BayesGap configured as the seed 002 authors' code runs it: prior std eta = 50, eps = 0,
    ``rule="released"``, and the kernel of :data:`RELEASED_KERNELS`.  The noise is sigma^2 of the
    job (10 in every synthetic experiment, Bernoulli ones included): pass ``noise_var``."""
    kern, ell, feats = RELEASED_KERNELS[kernel]
    return BayesGap(budget=budget, kernel=kern, length_scale=ell, prior_std=50.0, eps=0.0,
                    features=feats, rule="released", **kw)
