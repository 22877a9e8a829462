"""RAGE and XY-adaptive as run by Tirinzoni & Degenne, "On elimination strategies for bandit
fixed-confidence identification", NeurIPS 2022 (Table 1; released code
github.com/AndreaTirinzoni/bandit-elimination, ``sampling_rules.jl`` and ``runit.jl``).

Both are elimination algorithms whose estimate is the *global* one of their experiment loop: every
arm is pulled once first (counted), and the estimate is the ridge estimate
theta_hat = (A_t + I)^{-1} b_t of every sample since the start.

* :class:`CumulativeRAGE`: RAGE (seed 001 Algorithm 1) with the released code's phase sizes
  (N_p = max(ceil(2 (2^p)^2 rho_p (1 + eps) log(2 |Z|^2 / delta_p)), 2 |supp| / eps),
  delta_p = delta / p^2, eps = 1/10) whose elimination at the end of phase p uses the ridge estimate
  of all samples so far instead of the phase's own samples (seed 001 step 5); the width
  sqrt(2 ||y||^2_{(A_t + I)^{-1}} log(2 |Z|^2 / delta_p)).  Re-using past samples makes the
  phases' estimates dependent, which seed 001's analysis (Lemma 2) does not cover.
* :class:`GlobalXYAdaptive`: XY-adaptive (Soare et al. 2014) as the released ``XYAdaptive``: the
  greedy XY arm argmin_k max_{y in Y(active)} ||y||^2_{(V_t + x_k x_k^T)^{-1}} (V_t = A_t + I),
  recomputed every ``block`` = 10 pulls and pulled in between; a new phase starts when
  rho_t / t < alpha rho_old / t_old (alpha = 0.1), and then the active set is recomputed from all
  items with the global estimate: z is dropped when some z' has
  sqrt(2 beta ||z' - z||^2_{V_t^{-1}}) <= (z' - z)^T theta_hat, beta = log((t + 1) / delta) (the
  threshold of all their tests; not proven delta-correct).  It stops when at most one item is
  active.  The library's :class:`~jaxbandits.algorithms.fixed_confidence.xy.XYAdaptive` restarts its
  design and estimate every phase, as Soare et al.'s algorithm does.
"""
from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp

from jaxbandits import presets
from jaxbandits.algorithms import common
from jaxbandits.algorithms.base import Algorithm, Outcome, answer_mask, hyperparameter
from jaxbandits.algorithms.elimination import eliminate, gram_from_counts, single_answer
from jaxbandits.algorithms.fixed_confidence.rage import RAGE
from jaxbandits.environment import pull_counts
from jaxbandits.instances.base import Instance
from jaxbandits.rules import thresholds


class CumulativeRAGEState(NamedTuple):
    base: Any          # RAGEState (active set, phase, samples, pulls, design)
    gram: jax.Array    # A_t of every sample [d, d]
    b: jax.Array       # b_t of every sample [d]
    theta: jax.Array   # the last ridge estimate [d]


@dataclasses.dataclass(frozen=True)
class CumulativeRAGE(RAGE):
    """RAGE eliminating with the ridge estimate of all samples (module docstring).

    Attributes (besides :class:`RAGE`'s): reg: the ridge regulariser (1 in the released code).
    Defaults: delta = 0.01 and ``log_factor=2`` (the released code's log(2 |Z|^2 / delta_p)).
    """

    delta: float = hyperparameter(0.01, low=0.0, high=1.0, traced=True)
    log_factor: float = hyperparameter(2.0, traced=True)
    reg: float = hyperparameter(1.0, low=0.0, low_open=False, traced=True)

    supports_padding: ClassVar[bool] = False

    @classmethod
    def tirinzoni_degenne(cls, **kw) -> "CumulativeRAGE":
        """RAGE of Tirinzoni & Degenne 2022's Table 1 (the defaults); ``kw`` overrides."""
        return cls(**presets.TD_RAGE.apply(**kw))

    def init(self, key, instance: Instance) -> CumulativeRAGEState:
        X = instance.arms
        K = X.shape[0]
        base = super().init(key, instance)
        counts = jnp.ones((K,), X.dtype)
        sums = pull_counts(key, instance, counts)
        base = base._replace(samples=jnp.asarray(K, X.dtype), pulls=counts)
        return CumulativeRAGEState(base, gram_from_counts(X, counts), X.T @ sums, jnp.zeros((X.shape[1],), X.dtype))

    def step(self, key, state: CumulativeRAGEState, instance: Instance) -> CumulativeRAGEState:
        X, Z = instance.arms, instance.items
        d = X.shape[1]
        lam, rho, n, counts, log_term = self.plan(state.base, instance)
        counts = counts.astype(X.dtype)
        sums = pull_counts(key, instance, counts)
        gram = state.gram + gram_from_counts(X, counts)
        b = state.b + X.T @ sums
        L = common.safe_cholesky(gram + self.reg * jnp.eye(d, dtype=X.dtype))
        theta = common.cho_solve(L, b)
        active = eliminate(state.base.active, Z, theta, L, log_term, common.noise_scale(self.sigma, instance))
        bs = state.base
        base = bs._replace(active=active, phase=bs.phase + 1, samples=bs.samples + jnp.sum(counts),
                           pulls=bs.pulls + counts, design=lam, last_n=n, last_rho=rho, theta_hat=theta)
        return CumulativeRAGEState(base, gram, b, theta)

    def done(self, state: CumulativeRAGEState) -> jax.Array:
        return jnp.sum(state.base.active) <= 1

    def outcome(self, state: CumulativeRAGEState, instance: Instance) -> Outcome:
        idx = single_answer(state.base.active, instance.items @ state.theta)
        return Outcome(answer_mask(idx, instance.num_items), state.base.samples, state.base.pulls)


class GlobalXYState(NamedTuple):
    stats: common.LinearStats
    t: jax.Array          # samples so far (a float: an int32 adding ``block`` a step could wrap past 2**31)
    active: jax.Array     # [M] bool
    rho: jax.Array
    rho_old: jax.Array
    t_old: jax.Array
    theta: jax.Array
    stopped: jax.Array


@dataclasses.dataclass(frozen=True)
class GlobalXYAdaptive(Algorithm):
    """XY-adaptive with one global ridge estimate (module docstring).  One step = ``block`` pulls.

    Attributes:
      delta: confidence level.  alpha: the phase-change ratio (0.1).  reg: ridge regulariser (1).
      block: pulls of each greedy choice (10 in the released code; static).
      sigma: sub-Gaussian noise scale (None: :func:`common.noise_scale`); the elimination width
        is multiplied by it.
    """

    delta: float = hyperparameter(0.01, low=0.0, high=1.0, traced=True)
    alpha: float = hyperparameter(0.1, traced=True)
    reg: float = hyperparameter(1.0, low=0.0, low_open=False, traced=True)
    block: int = hyperparameter(10, count=1)
    sigma: float | None = hyperparameter(None, low=0.0, traced=True)


    @classmethod
    def tirinzoni_degenne(cls, **kw) -> "GlobalXYAdaptive":
        """XY-adaptive of Tirinzoni & Degenne 2022's Table 1 (the defaults); ``kw`` overrides."""
        return cls(**presets.TD_XY_ADAPTIVE.apply(**kw))

    def validate(self, instance: Instance) -> None:
        super().validate(instance)
        common.require_linear_rewards(instance, "GlobalXYAdaptive")
        common.check_sigma(self.sigma)
        if int(self.block) < 1:
            raise ValueError(f"block must be >= 1, got {self.block}")

    def _estimate(self, stats):
        d = stats.gram.shape[0]
        L = common.safe_cholesky(stats.gram + self.reg * jnp.eye(d, dtype=stats.gram.dtype))
        return common.cho_solve(L, stats.b), L

    def init(self, key, instance: Instance) -> GlobalXYState:
        X = instance.arms
        K = X.shape[0]
        dt = X.dtype
        counts = jnp.ones((K,), dt)
        stats = common.add_counts(common.init_stats(instance), instance, counts, pull_counts(key, instance, counts))
        theta, _ = self._estimate(stats)
        one = jnp.ones((), dt)
        return GlobalXYState(stats, jnp.asarray(K, dt), jnp.ones((instance.num_items,), bool), one, one,
                             jnp.asarray(K, dt), theta, jnp.zeros((), bool))

    def greedy_values(self, Vinv, X, Z, active):
        """[K] max_{y in Y(active)} ||y||^2_{(V + x_k x_k^T)^{-1}} for every arm k (Sherman-Morrison)."""
        W = Z @ Vinv                                   # [M, d]
        G = W @ Z.T                                    # [M, M]
        gz = jnp.diagonal(G)
        q = gz[:, None] + gz[None, :] - 2.0 * G        # ||z_i - z_j||^2_{V^-1}
        H = W @ X.T                                    # [M, K]: z_i^T V^-1 x_k
        gx = jnp.sum((X @ Vinv) * X, axis=-1)          # [K]
        M = Z.shape[0]
        pair = active[:, None] & active[None, :] & (jnp.arange(M)[:, None] < jnp.arange(M)[None, :])
        c = H[:, None, :] - H[None, :, :]              # [M, M, K]
        v = q[:, :, None] - c * c / (1.0 + gx)[None, None, :]
        return jnp.max(jnp.where(pair[:, :, None], v, -jnp.inf), axis=(0, 1))

    def step(self, key, state: GlobalXYState, instance: Instance) -> GlobalXYState:
        X, Z = instance.arms, instance.items
        K = X.shape[0]
        dt = X.dtype
        theta, L = self._estimate(state.stats)
        Vinv = common.inverse_from_cholesky(L)
        vals = self.greedy_values(Vinv, X, Z, state.active)
        arm = common.argmax_fast(-vals)
        tn = state.t + 1.0  # the released code's round index: samples + 1
        new_phase = state.rho / tn < self.alpha * state.rho_old / state.t_old
        beta = thresholds.log_t(tn, self.delta)
        sigma = common.noise_scale(self.sigma, instance)
        recomputed = eliminate(jnp.ones_like(state.active), Z, theta, L, beta, sigma)
        active = jnp.where(new_phase, recomputed, state.active)
        t_old = jnp.where(new_phase, tn, state.t_old)
        rho_old = jnp.where(new_phase, state.rho, state.rho_old)
        stop = jnp.sum(active) <= 1
        counts = jnp.where(stop, 0.0, float(self.block)) * (jnp.arange(K) == arm).astype(dt)
        stats = common.add_counts(state.stats, instance, counts, pull_counts(key, instance, counts))
        return GlobalXYState(stats, state.t + jnp.sum(counts), active, vals[arm], rho_old, t_old,
                             theta, stop)

    def done(self, state: GlobalXYState) -> jax.Array:
        return state.stopped

    def outcome(self, state: GlobalXYState, instance: Instance) -> Outcome:
        idx = single_answer(state.active, instance.items @ state.theta)
        return Outcome(answer_mask(idx, instance.num_items), state.t, state.stats.counts)
