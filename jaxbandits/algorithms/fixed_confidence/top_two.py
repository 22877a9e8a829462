"""Top Two for (transductive) linear bandits with the GLR stopping rule, and its epsilon-best-answer
version.

Sources: Jourdan, Degenne, Baudry, de Heide, Kaufmann, "Top Two algorithms revisited", NeurIPS 2022
(arXiv 2206.05979; Sec 2, Algorithm 1: leader, challenger, beta); Jourdan & Degenne, "Choosing
answers in epsilon-best-answer identification for linear bandits", ICML 2022 (arXiv 2206.04456;
Sec 2 epsilon-alternative and GLR, Sec 3 the furthest answer, Sec 4-5 the linear sampling).

Initialisation (``initial=``): ``"all"`` (default) pulls each arm once, as the experiments' code
does (it makes V_t invertible when the arms span; K pulls, which dominates on many-arms instances);
``"spanning"`` pulls d arms drawn at random among those that increase the rank (seed 000 Lemma 5's
A_0, :func:`.track_and_stop.random_spanning_set`).  Then, one round:

* **Leader** B_t (Top Two revisited Sec 2.1): ``leader="EB"`` (default) the candidate answer
  computed after the previous pull: with ``answer="furthest"`` (default; Jourdan & Degenne Sec 3)
  the furthest answer argmax_i min_{j != i} W^eps_{i,j} (the answer whose epsilon-alternative is
  furthest in GLR, i.e. the one the stopping rule certifies), which is the empirical best item
  when eps = 0; ``answer="best"`` the empirical best item (shown not asymptotically optimal for
  eps > 0 in Sec 3).  ``leader="TS"``: argmax_i z_i^T theta~, theta~ ~ N(theta_hat, sigma^2 V_t^-1)
  (Thompson sampling leader, Top Two revisited Sec 2.1 / TTTS).
* **Challenger** C_t = argmin_{j != B_t} W^eps_{B_t, j}, the transportation cost (TC) challenger
  (Top Two revisited eq. (4)), W^eps_{i,j} = (theta^T (z_i - z_j) + eps)_+^2 / (2 ||z_i - z_j||^2_{V_t^-1})
  (:mod:`.glr`).  It ranges over the active items (elimination protocol).
* **Allocation** between leader and challenger (``allocation=``):
  - ``"design"`` (default, the linear construction): the pair direction y_t = z_B - z_C is what
    the GLR against the challenger needs, and the allocation minimising ||y_t||^2_{V^-1} is the
    c-optimal design w(y_t) (Elfving); the arms are chosen by tracking the cumulative designs,
    argmin_k N_k(t) - sum_{s <= t} w_k(y_s) (C-tracking, Jourdan & Degenne Sec 4-5 track an
    optimal design).  w(y_t) comes from :func:`jaxbandits.design.copt.c_optimal`
    (``design_iters`` Frank-Wolfe steps with exact line search, warm-started from w(y_{t-1})).
    In the unstructured case (arms = items = e_i) w(e_B - e_C) puts 1/2 on B and 1/2 on C: the
    Top Two rule with beta = 1/2, the Top Two revisited default.
  - ``"greedy"``: the one-step version, pull argmax_k (x_k^T V^-1 y_t)^2 / (1 + x_k^T V^-1 x_k)
    (the arm that most reduces ||y_t||^2_{V^-1}; seed 003's greedy selection).
  - ``"arms"``: the unstructured Top Two of Top Two revisited Algorithm 1 (needs arms = items):
    pull B_t with probability ``beta``, else C_t.  ``beta`` (default 1/2) is read only here; in
    the linear allocations the design fixes the split.
* **Stopping** (GLR, Jourdan & Degenne Sec 2, Top Two revisited Sec 2.2): stop when
  max_i min_{j != i} W^eps_{i,j} > sigma^2 beta(t, delta) (over the answer choice above) and
  recommend that answer; beta = log((1 + log t) / delta) as in both papers' experiments
  (``threshold="heuristic"``; ``"lts"``: seed 000 eq. (9), proven delta-correct).

The furthest answer is searched among the ``fa_candidates`` items of largest empirical value
(static); it is exact whenever at most that many items are empirically eps-good, since every other
item i has min_j W^eps_{i,j} = 0.

Noise scale sigma: enters the TS posterior sigma^2 V_t^-1 and the threshold sigma^2 beta; the
leader/challenger argmins, the designs and the tracking are scale-free.  The estimate is least
squares (``reg`` = 0; any fixed ridge keeps sigma-equivariance).

Elimination protocol (docs/design.md, section 5; :class:`~jaxbandits.algorithms.Eliminate`): :meth:`TopTwo.linear_stats`, :meth:`TopTwo.step_masked`.

Measured (delta = 0.05, shared 2-core machine at load ~11, compile excluded): Soare d = 2
(omega = 0.01, theta = 2 e_1, sigma = 1): 32 runs, mean 97,514 +- 11,867 pulls, 1.82 +- 0.22 x the
lower bound 53,532, 0 errors, 0.39 replications/s.  Many arms K = 1000 (released code's generator,
4 instances x 4 runs): 1,075 +- 18 pulls (18.1 x the bound, 59.4 on average; 1000 of them the
initialisation), 0.80 replications/s; with ``initial="spanning"`` (4 x 16 runs) 106.8 +- 8.3 pulls,
1.80 +- 0.14 x the bound, 0/64 errors, 4.5 replications/s.
"""
from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxbandits.algorithms import common
from jaxbandits.algorithms.base import Algorithm, Outcome, answer_mask
from jaxbandits.algorithms import glr
from jaxbandits.algorithms.common import random_spanning_set
from jaxbandits.design.copt import c_optimal
from jaxbandits.environment import pull
from jaxbandits.instances.base import Instance

LEADERS = ("EB", "TS")
ANSWERS = ("furthest", "best")
ALLOCATIONS = ("design", "greedy", "arms")
INITS = ("all", "spanning")


class TopTwoState(NamedTuple):
    stats: common.LinearStats
    t: jax.Array         # pulls so far
    theta: jax.Array     # estimate after the last pull [d]
    Ainv: jax.Array      # V_t^-1 (+ reg I) [d, d]
    answer: jax.Array    # candidate answer / recommendation after the last pull
    cum: jax.Array       # sum of the tracked designs [K] (starts at the initial counts)
    w: jax.Array         # last design (warm start) [K]
    first: jax.Array     # the initial arms [K] ("all": 0..K-1; "spanning": d arms, then repeated)
    stopped: jax.Array


def answer_glr(theta, Ainv, Z, epsilon, candidates: int, furthest: bool):
    """(GLR statistic, answer): the furthest answer among the ``candidates`` items of largest
    value (``furthest``) or the empirical best item, with its min_j W^eps_{i,j} (module docstring)."""
    values = Z @ theta
    if not furthest:
        i = common.argmax_fast(values)
        W, _, _ = glr.transport_costs(theta, Ainv, Z, i, epsilon)
        return jnp.min(W), i
    _, idx = jax.lax.top_k(values, candidates)
    Wmin = jax.vmap(lambda i: jnp.min(glr.transport_costs(theta, Ainv, Z, i, epsilon)[0]))(idx)
    k = common.argmax_fast(Wmin)
    return Wmin[k], idx[k]


@dataclasses.dataclass(frozen=True)
class TopTwo(Algorithm):
    """Top Two (leader / TC challenger) for linear bandits with GLR stopping (module docstring).

    Attributes:
      delta: confidence level.
      epsilon: slack of epsilon-best-answer identification (0: best-arm identification).
      beta: leader probability of the unstructured allocation ``"arms"`` (default 1/2).
      leader: "EB" (the candidate answer) or "TS" (Thompson sampling).
      answer: "furthest" (Jourdan & Degenne Sec 3) or "best" (empirical best), for the candidate
        answer, the leader under "EB" and the recommendation.
      allocation: "design" (tracking of the c-optimal design of z_B - z_C), "greedy", or "arms".
      design_iters: Frank-Wolfe iterations per round of the pair design (static).
      threshold: "heuristic" (experiments) or "lts" (seed 000 eq. (9)).
      reg: ridge parameter of the estimate (0: least squares).
      fa_candidates: items searched for the furthest answer (static).
      initial: "all" (each arm once) or "spanning" (d arms of a random spanning set).
      sigma: sub-Gaussian noise scale (default :func:`common.noise_scale`).
    """

    delta: float = 0.05
    epsilon: float = 0.0
    beta: float = 0.5
    leader: str = "EB"
    answer: str = "furthest"
    allocation: str = "design"
    design_iters: int = 16
    threshold: str = "heuristic"
    reg: float = 0.0
    fa_candidates: int = 16
    initial: str = "all"
    sigma: float | None = None

    dynamic_fields = ("delta", "epsilon", "beta", "reg", "sigma")

    def __post_init__(self):
        glr.check_threshold(self.threshold)
        for name, val, allowed in (("leader", self.leader, LEADERS), ("answer", self.answer, ANSWERS),
                                   ("allocation", self.allocation, ALLOCATIONS), ("initial", self.initial, INITS)):
            if val not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {val!r}")

    def validate(self, instance: Instance) -> None:
        super().validate(instance)
        common.require_linear_rewards(instance, "TopTwo")
        common.check_sigma(self.sigma)
        eps = self.epsilon
        if isinstance(eps, (int, float)) and eps < 0:
            raise ValueError(f"epsilon must be >= 0, got {eps}")
        if self.allocation == "arms":
            import numpy as np

            if instance.num_arms != instance.num_items or not np.array_equal(
                    np.asarray(instance.arms), np.asarray(instance.items)):
                raise ValueError('allocation="arms" pulls the leader and challenger items: it needs arms = items')
            b = self.beta
            if isinstance(b, (int, float)) and not 0.0 < b < 1.0:
                raise ValueError(f"beta must be in (0, 1), got {b}")

    @property
    def slack(self):
        return 0.0 if self.epsilon is None else self.epsilon  # None: the static part of a split

    # -- elimination protocol ------------------------------------------------------------------
    def linear_stats(self, state: TopTwoState) -> common.LinearStats:
        return state.stats

    # -- contract ------------------------------------------------------------------------------
    def init(self, key, instance: Instance) -> TopTwoState:
        X = instance.arms
        K, d = X.shape
        dt = X.dtype
        i32 = lambda v: jnp.asarray(v, jnp.int32)
        if self.initial == "spanning":
            first = jnp.resize(random_spanning_set(key, X).astype(jnp.int32), (K,))
        else:
            first = jnp.arange(K, dtype=jnp.int32)
        return TopTwoState(common.init_stats(instance), i32(0), jnp.zeros((d,), dt), jnp.eye(d, dtype=dt), i32(0),
                           jnp.zeros((K,), dt), jnp.full((K,), 1.0 / K, dt), first, jnp.zeros((), bool))

    def _n_init(self, instance: Instance) -> int:
        return instance.dim if self.initial == "spanning" else instance.num_arms

    def step(self, key, state: TopTwoState, instance: Instance) -> TopTwoState:
        return self.step_masked(key, state, instance, jnp.ones((instance.num_items,), bool))

    def leader_challenger(self, key, state: TopTwoState, instance: Instance, active: jax.Array):
        """(B_t, C_t) of the module docstring at the current state."""
        Z = instance.items
        theta, Ainv = state.theta, state.Ainv
        if self.leader == "TS":
            sigma = common.noise_scale(self.sigma, instance)
            # theta~ ~ N(theta_hat, sigma^2 V_t^-1): the Gaussian posterior (Top Two revisited Sec 2.1)
            L = jnp.linalg.cholesky(Ainv)
            sample = theta + sigma * (L @ jax.random.normal(key, theta.shape, theta.dtype))
            lead = common.argmax_fast(Z @ sample)
        else:
            lead = state.answer
        W, _, _ = glr.transport_costs(theta, Ainv, Z, lead, self.epsilon)
        W = jnp.where(active, W, jnp.inf)  # TC challenger over the active pieces
        chal = common.argmax_fast(-W)
        return lead, chal

    def stopping_threshold(self, state, instance: Instance):
        """(sigma^2 beta(t, delta), ready) of this algorithm's GLR stopping rule, for the elimination
        wrapper (:class:`jaxbandits.algorithms.Eliminate`, Tirinzoni & Degenne 2022)."""
        sigma = common.noise_scale(self.sigma, instance)
        c = jnp.max(jnp.sum(instance.arms * instance.arms, axis=-1))
        beta = glr.stopping_threshold(self.threshold, state.stats.gram, state.t, self.delta, sigma, c)
        return beta, state.t >= self._n_init(instance)

    def step_masked(self, key, state: TopTwoState, instance: Instance, active: jax.Array) -> TopTwoState:
        X, Z = instance.arms, instance.items
        K, d = X.shape
        M = Z.shape[0]
        dt = X.dtype
        t = state.t
        n0 = self._n_init(instance)
        warm = t < n0
        k_lead, k_coin, k_pull = jax.random.split(key, 3)
        lead, chal = self.leader_challenger(k_lead, state, instance, active)
        y = Z[lead] - Z[chal]
        counts = state.stats.counts
        w, cum = state.w, state.cum
        if self.allocation == "design":
            w = c_optimal(X, y, init=state.w, iters=int(self.design_iters)).allocation
            cum = state.cum + w
            tracked = common.argmax_fast(cum - counts)
        elif self.allocation == "greedy":
            u = X @ (state.Ainv @ y)
            c = jnp.sum((X @ state.Ainv) * X, axis=-1)
            tracked = common.argmax_fast(u * u / (1.0 + c))
        else:  # "arms": Top Two revisited Algorithm 1, leader with probability beta
            tracked = jnp.where(jax.random.uniform(k_coin, (), dt) < self.beta, lead, chal)
        arm = jnp.where(warm, state.first[t % K], tracked)
        cum = jnp.where(warm, state.cum, cum)
        w = jnp.where(warm, state.w, w)

        reward = pull(k_pull, instance, arm)
        stats = common.add_pull(state.stats, instance, arm, reward)
        t1 = t + 1
        cum = jnp.where(t1 == n0, stats.counts, cum)  # tracking counts the initial pulls
        L = common.safe_cholesky(common.regularized_gram(stats, self.reg))
        Ainv = common.inverse_from_cholesky(L)
        theta = Ainv @ stats.b
        zstat, ans = answer_glr(theta, Ainv, Z, self.epsilon, min(int(self.fa_candidates), M),
                                self.answer == "furthest")
        sigma = common.noise_scale(self.sigma, instance)
        c = jnp.max(jnp.sum(X * X, axis=-1))
        beta_t = glr.stopping_threshold(self.threshold, stats.gram, t1, self.delta, sigma, c)
        stop = (t1 >= n0) & (zstat > beta_t)
        return TopTwoState(stats, t1, theta, Ainv, ans.astype(jnp.int32), cum, w, state.first, stop)

    def done(self, state: TopTwoState) -> jax.Array:
        return state.stopped

    def outcome(self, state: TopTwoState, instance: Instance) -> Outcome:
        return Outcome(answer_mask(state.answer, instance.num_items), state.t,
                       state.stats.counts.astype(jnp.int32))
