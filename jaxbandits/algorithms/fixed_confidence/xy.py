"""The XY-allocation family: XY-static, XY-oracle (seed 001 App F) and XY-adaptive (Soare et al.).

* **XY-static** (seed 001 Sec 2 and App F): the design lambda minimising
  max_{y in Y(Z)} ||y||^2_{A(lambda)^-1} over all differences of items is computed once; round t
  draws ceil(gamma^t) pulls from it (gamma = 1.35) and, at the end of the round, with all pulls
  so far (A_t, theta_t), stops if
  exists z' in Z, for all z in Z: sigma ||z' - z||_{A_t^-1} sqrt(2 log(2 t^2 |Z|^2 / delta))
  <= (z' - z)^T theta_t,
  returning that z'.
* **XY-oracle** (seed 001 App F): the same with the oracle design on Y*(Z) normalised by the gaps
  (lambda* of psi*, :func:`jaxbandits.design.oracle_allocation`, which knows theta), gamma = 1.1
  and the union bound over |Z| only: log(2 t^2 |Z| / delta).
* **XY-adaptive** (Soare, Lazaric, Munos, NeurIPS 2014, "Best-Arm Identification in Linear
  Bandits", Fig. 3 / Sec 5; as run in seed 001 App F): phases j = 1, 2, ...; each phase restarts
  from A = I, b = 0 and pulls greedily x_t = argmin_x max_{y in Y_j} y^T (A + x x^T)^{-1} y over
  Y_j = Y(Z_j) (the differences of the active items) while
  rho_j / n >= alpha rho_{j-1} / n_{j-1}  (alpha = 0.1, n counting d for the prior A = I,
  rho_0 = 1, n_0 = d(d+1) + 1); at the end of the phase theta_j = A^{-1} b and every item z with
  some z' in Z_j such that sigma ||z' - z||_{A^-1} sqrt(2 log(pi^2 |Z|^2 j^2 / (3 delta))) <=
  (z' - z)^T theta_j is discarded; the active set is not reset between phases and the confidence
  interval uses the phase index j (App F: "we include the phase index and not the number of
  samples"); it stops when one item is left.  The constants of the width and of the phase rule
  are those of seed 001's released XY_ADAPTIVE.py, which produced Fig. 1a.

Noise.  Seed 001 (Sec 1.1) and Soare et al. (Sec 2) assume unit-scale (1-sub-Gaussian / N(0, 1))
noise; for sigma-sub-Gaussian noise y^T(theta_hat - theta) is sigma^2 ||y||^2_{A^-1}-sub-Gaussian,
so every confidence width above gets a factor sigma (the only place the noise enters: round sizes
and the XY-adaptive phase rule do not depend on the rewards).  sigma is the ``sigma`` option, else
the instance's noise scale (:func:`jaxbandits.algorithms.common.noise_scale`).  With it
XY-static/oracle/adaptive are exactly scale-equivariant: (theta, noise s) and (theta / s, noise 1)
give the same stopping times with the same key.

Designs of XY-static / XY-oracle (``design_method``): "certified" (default) solves the design
with App F's Frank-Wolfe and then polishes it with the certified solver of
:mod:`jaxbandits.design.minimax` warm-started there (``polish_iters`` iterations), and keeps the
one with the smaller value (both values are exact, both gaps certified); the value and certified
gap travel in the prepared cache and the state (``design_value``, ``design_gap``).  Measured
(seed 001 Fig 1(d), d = 20): the XY-oracle design's value goes from 494.0 (App F, certified
relative gap 0.15) to 451.6 (gap 3e-4) and its smallest weight from 4.8e-5 to 2.5e-4; d = 40:
630.3 -> 464.2.  Direction sets with more than ``polish_max_directions`` directions (all pairs
of a large Z: the polish then costs O(|Z|^2) per iteration) keep App F's design, whose certified
gap is still reported.  "paper" is App F's Frank-Wolfe alone (stopped on a 1 %
change of lambda, which on seed 001 Fig 1(d) leaves arms at weight ~5e-5 that multinomial
sampling takes ~1e5 pulls to reach; the XY-oracle then waits for them).  "smooth" is the
certified solver from the uniform design alone.

Sampling within a round of XY-static / XY-oracle: ``sampling="multinomial"`` draws the round's
pulls i.i.d. from the design as seed 001's released code does (default);
``sampling="round"`` uses the efficient rounding of App B instead.  Either way rewards come as
exact per-arm sums (:func:`jaxbandits.environment.pull_counts`), so a round costs O(K).

Departures from the released code, on purpose: its XY-static/oracle start the sample count at d
without pulling and increment the round index twice per round (rounds of gamma^1, gamma^3, ...);
we follow the text (rounds t = 1, 2, ..., samples counted as pulled).  Stopping is only allowed
once the arms pulled so far span R^d (before that the least-squares estimate is undetermined;
the released code used a pseudo-inverse).
"""
from __future__ import annotations

import dataclasses
import functools
import math
from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxbandits import design
from jaxbandits.algorithms.base import Algorithm, Outcome, answer_mask, instance_cache, map_instances, with_cache, hyperparameter
from jaxbandits.batching import ALL_LANES, in_smallest_bucket, item_buckets, solve_where
from jaxbandits.algorithms.common import check_sigma, noise_scale, require_linear_rewards, safe_cholesky
from jaxbandits.algorithms import common
from jaxbandits.algorithms.elimination import (eliminate, gram_from_counts, single_answer, threshold_design,
                                              whiten_items)
from jaxbandits.design.core import SMALL_DIM, Entries, first_max, small_cholesky, small_forward, small_pivots_exceed
from jaxbandits.design import kernels as kern
from jaxbandits.environment import binomial, draws_at_exact, pull_counts, uniform_at, uniform_at_words
from jaxbandits.instances.base import Instance


# ------------------------------------------------------------------------------------------------
# XY-static and XY-oracle
# ------------------------------------------------------------------------------------------------
class XYPhasedState(NamedTuple):
    """State of XY-static / XY-oracle.

    design: [K] the fixed design; phase: index t of the next round (from 1); pulls, sums: [K]
    per-arm counts and reward sums of every round so far; samples: total pulls; stopped: the
    stopping condition held; best: [] index of the item returned (the empirical best);
    design_value, design_gap: the design's value max_y ||y||^2_{A(lambda)^-1} (before the 1e-5
    cutoff) and its certified duality gap (value - a lower bound on the optimum);
    unfinished_draws: binomial draws of the rounds that did not finish within their fixed number
    of tries (:func:`jaxbandits.environment.binomial`; 0 but with negligible probability).
    """

    design: jax.Array
    phase: jax.Array
    pulls: jax.Array
    sums: jax.Array
    samples: jax.Array
    stopped: jax.Array
    best: jax.Array
    design_value: jax.Array
    design_gap: jax.Array
    unfinished_draws: jax.Array


def spans(X: jax.Array, counts: jax.Array, rtol: float = 1e-9) -> jax.Array:
    """Whether the arms with a positive count span R^d (unweighted, so heavy imbalance between
    counts does not matter): lambda_min > rtol lambda_max of their Gram matrix A.

    For d <= :data:`jaxbandits.design.core.SMALL_DIM` the test is on the pivots of A's elimination
    instead (:func:`jaxbandits.design.core.small_pivots_exceed`, every pivot > rtol tr(A)), which
    fuses into the step's kernels where ``eigvalsh`` is a solver call on a GPU.  The two differ
    only for A of condition number between 1 / rtol and d / rtol; a rank-deficient A has a pivot at
    rounding level (about 1e-16 tr(A)), 7 orders of magnitude below the tolerance."""
    A = gram_from_counts(X, (counts > 0).astype(X.dtype))
    if A.shape[-1] <= SMALL_DIM:
        return small_pivots_exceed(A, rtol * jnp.trace(A))
    ev = jnp.linalg.eigvalsh(A)
    return ev[0] > rtol * jnp.maximum(ev[-1], 1e-300)


def certified_best(items: jax.Array, theta_hat: jax.Array, L: jax.Array, log_term: jax.Array,
                   sigma: float | jax.Array = 1.0, item_mask: jax.Array | None = None):
    """(holds, z'): whether some z' has sigma ||z' - z||_{A^-1} sqrt(2 log_term) <= (z' - z)^T
    theta_hat for every z != z' (items equal to z' skipped), and that z'.

    Only the empirical best item can satisfy it (for any other z' the gap to the best is < 0), so
    only its row is computed: O(M d^2).  Seed 001 App F.  ``item_mask``: the real items of a
    padded instance (padded items are neither z' nor a z to beat).
    """
    values = items @ theta_hat
    valid = jnp.ones(values.shape, bool) if item_mask is None else item_mask
    best = single_answer(valid, values)
    diffs = items[best][None, :] - items
    W = whiten_items(L, diffs)
    sq = jnp.sum(W * W, axis=0)
    gaps = values[best] - values
    same = jnp.all(diffs == 0, axis=-1) | ~valid
    # seed 001 App F stopping rule, width x sigma (sigma-sub-Gaussian noise; module docstring)
    ok = same | (sigma * jnp.sqrt(2.0 * log_term * sq) <= gaps)
    return jnp.all(ok), best


def multinomial_on_support(key: jax.Array, n: jax.Array, p: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(counts [K] (float), unfinished): Multinomial(n, p) counts drawn on the support of p only,
    and the number of its binomials that did not finish (:func:`jaxbandits.environment.binomial`).

    ``jax.random.multinomial`` draws one binomial per category in a sequential scan (K rejection
    samplers); a design has few arms in its support, so the categories with p > 0 are gathered
    (in order) into the smallest buffer of :func:`jaxbandits.batching.item_buckets` that
    holds them, the conditional binomials are drawn there and scattered back (categories with
    p = 0 get 0, as they must).  Under ``vmap`` the buffer is the one holding every lane's support
    (``custom_vmap``), so the branch taken is a real one; the draw itself does not depend on the
    buffer size (key of the c-th support category: fold_in(key, c)), so results stay independent
    of batching.  The support loop has a trip count fixed at compile time (the buffer's B - 1
    categories, those past the support skipped), and so do the binomials under an accelerator
    policy (:func:`jaxbandits.environment.binomial`), with the values of the data-dependent loops.
    """
    K = p.shape[0]
    buckets = item_buckets(K)

    def branch(B):
        def f(key, n, p):
            idx = jnp.nonzero(p > 0, size=B, fill_value=K)[0]
            pc = jnp.where(idx < K, p[jnp.minimum(idx, K - 1)], 0.0)
            # sequential conditional binomials (as jax.random.multinomial), with the key of the
            # c-th support category fold_in(key, c): the draw does not depend on the buffer size
            rest = jnp.cumsum(pc[::-1])[::-1]
            ratios = jnp.clip(pc / jnp.where(rest > 0, rest, 1.0), 0.0, 1.0)

            # only the support's categories are drawn (support - 1 binomials, not B: past the
            # support every count is 0), and the last one takes the remainder (its ratio is 1)
            last = jnp.sum(idx < K) - 1

            def one(c, carry):
                rem, counts, bad = carry
                cnt, ok = binomial(jax.random.fold_in(key, c), rem, ratios[c], dtype=p.dtype)
                use = c < last
                cnt = jnp.where(use, cnt, 0.0)
                return rem - cnt, counts.at[c].set(cnt), bad + (use & ~ok).astype(jnp.int32)

            rem, counts, bad = jax.lax.fori_loop(0, max(B - 1, 0), one,
                                                 (n, jnp.zeros((B,), p.dtype), jnp.zeros((), jnp.int32)))
            counts = counts.at[jnp.maximum(last, 0)].set(jnp.where(last >= 0, rem, 0.0))
            return jnp.zeros_like(p).at[idx].set(counts, mode="drop"), bad
        return f

    return in_smallest_bucket(jnp.sum(p > 0), buckets, branch, key, jnp.asarray(n, p.dtype), p)


@dataclasses.dataclass(frozen=True)
class XYStatic(Algorithm):
    """XY-static allocation with the stopping rule of seed 001 App F.  One ``step`` = one round.

    Attributes:
      delta: confidence level.
      sigma: sub-Gaussian scale of the noise, a factor of the stopping rule's width; None
        (default) = the instance's noise scale (Gaussian), 1/2 (Bernoulli).
      gamma: growth of the rounds (ceil(gamma^t) pulls in round t; 1.35 in seed 001).
      sampling: "multinomial" (released code) or "round" (App B rounding).
      design_cutoff: design weights below it are zeroed (App F: 1e-5).
      design_tol, design_iters: solver tolerance and cap of each solver run (None: the solvers'
        defaults, 5000 iterations for App F's Frank-Wolfe as the paper ran it, 2000 for the
        certified solver).
      design_method: "certified" (default: the better of App F's Frank-Wolfe and the certified
        solver warm-started from it), "paper" (App F's Frank-Wolfe with step 2/(k+2) alone, as the
        paper ran it) or "smooth" (the certified solver alone; module docstring).
      polish_iters, polish_max_directions: iterations of the certified polish, and the largest
        direction set it is run on ("certified" only).
    """

    delta: float = hyperparameter(0.05, low=0.0, high=1.0, traced=True)
    sigma: float | None = hyperparameter(None, low=0.0, traced=True)
    gamma: float = hyperparameter(1.35, traced=True)
    sampling: str = "multinomial"
    design_cutoff: float = hyperparameter(1e-5, low=0.0, low_open=False, traced=True)
    design_tol: float = hyperparameter(1e-4, low=0.0, traced=True)
    design_iters: int | None = hyperparameter(None, count=1)
    design_method: str = "certified"
    polish_iters: int = hyperparameter(300, count=0)
    polish_max_directions: int = hyperparameter(50_000, count=1)

    # padded arms: zero design weight (never drawn); padded items: not in Y(Z), never z'; |Z| real
    supports_padding: ClassVar[bool] = True

    def _num_directions(self, instance: Instance):
        M = instance.true_num_items()
        return M * (M - 1) // 2

    def _solve(self, instance: Instance, method: str, init=None, max_iters=None):
        return design.xy_allocation(instance.arms, instance.items, item_mask=instance.item_mask,
                                    arm_mask=instance.arm_mask, tol=self.design_tol, init=init,
                                    max_iters=max_iters or self.design_iters, method=method)

    def _design(self, instance: Instance):
        """(lambda, value, certified gap) of the design (``design_method``)."""
        if self.design_method != "certified":
            sol = self._solve(instance, self.design_method)
            return sol.allocation, sol.value, sol.gap
        fw = self._solve(instance, "paper")
        n_dirs = self._num_directions(instance)
        if isinstance(n_dirs, int) and n_dirs > self.polish_max_directions:
            return fw.allocation, fw.value, fw.gap

        def polished(fw):
            sm = self._solve(instance, "smooth", init=fw.allocation, max_iters=self.polish_iters)
            # the certified solve can fail (non-finite) or stall where the optimum is nearly
            # singular; then App F's design is kept.  Either way the gap reported is that
            # design's certificate.
            ok = jnp.all(jnp.isfinite(sm.allocation)) & jnp.isfinite(sm.value) & (sm.value <= fw.value)
            pick = lambda a, b: jnp.where(ok, a, b)  # noqa: E731
            return pick(sm.allocation, fw.allocation), pick(sm.value, fw.value), pick(sm.gap, fw.gap)

        if isinstance(n_dirs, int):
            return polished(fw)
        # padded instance: the real |Z| decides (as unpadded), at run time
        plain = lambda fw: (fw.allocation, fw.value, fw.gap)  # noqa: E731
        return jax.lax.cond(n_dirs > self.polish_max_directions, plain, polished, fw)

    def _log_term(self, phase: jax.Array, num_items: int) -> jax.Array:
        t = phase.astype(jnp.result_type(float))
        return jnp.log(2.0 * t**2 * num_items**2 / self.delta)

    def prepared_design(self, instance: Instance):
        """(thresholded design, value, certified gap) of one instance (shared by every
        replication)."""
        lam, value, gap = self._design(instance)
        # App F zeroes weights below the cutoff; kept only where the support still spans R^d
        # (the stopping rule needs spanning pulls: on a random sphere instance with K = d = 10
        # the oracle design puts ~3e-6 on some arms, and the thresholded design never stopped)
        cut = threshold_design(lam, self.design_cutoff)
        return jnp.where(spans(instance.arms, cut), cut, lam), value, gap

    def prepare(self, instances: Instance) -> Instance:
        """Solve the design once per instance instead of in every replication's ``init``."""
        return with_cache(instances, map_instances(self, "prepared_design", instances))

    def init(self, key: jax.Array, instance: Instance) -> XYPhasedState:
        K = instance.num_arms
        dt = instance.arms.dtype
        cached = instance_cache(instance)
        lam, value, gap = self.prepared_design(instance) if cached is None else cached
        return XYPhasedState(design=lam, phase=jnp.asarray(1, jnp.int32), pulls=jnp.zeros((K,), dt),
                             sums=jnp.zeros((K,), dt), samples=jnp.zeros((), dt),
                             stopped=jnp.asarray(False), best=jnp.asarray(0, jnp.int32),
                             design_value=jnp.asarray(value, dt), design_gap=jnp.asarray(gap, dt),
                             unfinished_draws=jnp.zeros((), jnp.int32))

    def design_report(self, instances: Instance) -> dict:
        """Per instance of a batch: the design's value, certified gap, relative gap and support
        size (after the cutoff), as numpy arrays; what the experiments report next to the
        sample complexity."""
        import numpy as np

        from jaxbandits.instances.base import as_batch

        lam, value, gap = map_instances(self, "prepared_design", as_batch(instances))
        value, gap = np.asarray(value), np.asarray(gap)
        return dict(design_value=value, design_gap=gap, design_rel_gap=gap / value,
                    design_support=np.asarray(jnp.sum(lam > 0, axis=-1)))

    def round_counts(self, key: jax.Array, lam: jax.Array, n: jax.Array) -> tuple[jax.Array, jax.Array]:
        """(counts [K], unfinished binomial draws) of a round of ``n`` pulls."""
        if self.sampling == "multinomial":
            return multinomial_on_support(key, n, lam)
        return (design.round_design(lam, n, fixed_trips=self.policy.batched).astype(lam.dtype),
                jnp.zeros((), jnp.int32))

    def step(self, key: jax.Array, state: XYPhasedState, instance: Instance) -> XYPhasedState:
        X, Z = instance.arms, instance.items
        k_alloc, k_pull = jax.random.split(key)
        t = state.phase.astype(X.dtype)
        n = jnp.ceil(self.gamma**t)
        counts, unfinished = self.round_counts(k_alloc, state.design, n)
        sums = state.sums + pull_counts(k_pull, instance, counts)
        pulls = state.pulls + counts
        L = safe_cholesky(gram_from_counts(X, pulls))
        theta = common.cho_solve(L, X.T @ sums)
        holds, best = certified_best(Z, theta, L, self._log_term(state.phase, instance.true_num_items()),
                                     noise_scale(self.sigma, instance), instance.item_mask)
        return state._replace(phase=state.phase + 1, pulls=pulls, sums=sums,
                              samples=state.samples + jnp.sum(counts),
                              stopped=holds & spans(X, pulls), best=best.astype(jnp.int32),
                              unfinished_draws=state.unfinished_draws + unfinished)

    def done(self, state: XYPhasedState) -> jax.Array:
        return state.stopped

    def outcome(self, state: XYPhasedState, instance: Instance) -> Outcome:
        return Outcome(answer=answer_mask(state.best, instance.num_items), samples=state.samples,
                       pulls=state.pulls, converged=state.unfinished_draws == 0)

    def validate(self, instance: Instance) -> None:
        super().validate(instance)
        require_linear_rewards(instance, type(self).__name__)
        check_sigma(self.sigma)
        if self.design_method not in ("certified", "paper", "smooth"):
            raise ValueError("design_method must be 'certified', 'paper' or 'smooth', got "
                             f"{self.design_method!r}")
        if not (self.gamma > 1.0):
            raise ValueError(f"gamma must be > 1, got {self.gamma}")
        if self.sampling not in ("multinomial", "round"):
            raise ValueError(f"sampling must be 'multinomial' or 'round', got {self.sampling!r}")


@dataclasses.dataclass(frozen=True)
class XYOracle(XYStatic):
    """XY-oracle (seed 001 App F): the oracle design lambda* (knows theta), gamma = 1.1, union
    bound over |Z| only: log(2 t^2 |Z| / delta)."""

    gamma: float = 1.1

    def _num_directions(self, instance: Instance):
        return instance.true_num_items() - 1

    def _solve(self, instance: Instance, method: str, init=None, max_iters=None):
        return design.oracle_allocation(instance.arms, instance.items, instance.theta,
                                        item_mask=instance.item_mask, arm_mask=instance.arm_mask,
                                        tol=self.design_tol, init=init,
                                        max_iters=max_iters or self.design_iters, method=method)

    def _log_term(self, phase: jax.Array, num_items: int) -> jax.Array:
        t = phase.astype(jnp.result_type(float))
        return jnp.log(2.0 * t**2 * num_items / self.delta)


# ------------------------------------------------------------------------------------------------
# XY-adaptive
# ------------------------------------------------------------------------------------------------
class XYAdaptiveState(NamedTuple):
    """State of XY-adaptive.

    active: [M] bool active items; phase: index j of the current phase (from 1);
    phase_counts: [K] pulls of the current phase; n: pulls of the phase + d (the prior A = I);
    rho: last greedy value max_y ||y||^2_{A^-1}; rho_past, n_past: those of the previous phase;
    pulls: [K] all pulls; samples: total pulls; theta_hat: [d] last phase's estimate.
    """

    active: jax.Array
    phase: jax.Array
    phase_counts: jax.Array
    n: jax.Array
    rho: jax.Array
    rho_past: jax.Array
    n_past: jax.Array
    pulls: jax.Array
    samples: jax.Array
    theta_hat: jax.Array


def _pair_index(M: int):
    i, j = jnp.triu_indices(M, 1)
    return i, j


def _tie_draw(key: jax.Array, i: jax.Array, cand: jax.Array, S: int, dtype) -> jax.Array:
    """The arm pulled at pull i of a step among the candidates [K]: the one with the largest of
    row i of ``jax.random.uniform(key, (K, S)).T`` (arm k's draws do not depend on K, so padding
    changes nothing), computing only that row (:func:`jaxbandits.environment.uniform_at`)."""
    K = cand.shape[0]
    counters = jnp.arange(K, dtype=jnp.uint32) * S + jnp.asarray(i).astype(jnp.uint32)
    return jnp.argmax(jnp.where(cand, uniform_at(key, counters, dtype), -1.0))


def _tie_table(key: jax.Array, K: int, S: int, dtype) -> jax.Array:
    """The step's tie-breaking uniforms [S, K]: row i for pull i (``jax.random.uniform(key, (K,
    S)).T``, so arm k's draws do not depend on K and padding changes nothing)."""
    return jax.random.uniform(key, (K, S), dtype).T


def _lazy_ties(key: jax.Array, K: int, S: int, dtype):
    """(pick, initial carry) breaking ties with the step's :func:`_tie_table`, drawn (a branch) at
    the first pull where some lane has two candidates, at most once per step and only for the lanes
    that tie: ties are rare (on Soare's instance a few dozen pulls at the start of a replication,
    in ~10^5; a lane on a fresh state, such as one a run with fewer replications than lanes leaves
    idle, ties in every step)."""
    def pick(i, cand, tb):
        table, have = tb
        need = (jnp.sum(cand) > 1) & ~have
        table = solve_where(need, functools.partial(_tie_table, K=K, S=S, dtype=dtype), (key,), table,
                            capacity=None, batched_solve=True)
        # one candidate: that one whatever the table holds (uniforms are >= 0)
        return jnp.argmax(jnp.where(cand, table[i], -1.0)), (table, have | need)
    return pick, (jnp.zeros((S, K), dtype), jnp.asarray(False))


def _greedy_pulls(H, pair_on, bar, arm_ok, carry, pick, tb0, S: int):
    """Up to S greedy pulls of XY-adaptive from H = [[G, C], [diag G, yn]] ([K + 1, K + P]) over
    the pairs ``pair_on`` [P] of its columns: (phase counts, n, rho, going) after them."""
    K = arm_ok.shape[0]
    dtype = H.dtype
    last_row = (jnp.arange(K + 1) == K)[:, None]
    arms = jnp.arange(K)

    def pull_one(i, c):
        H, counts, n, rho, going, tb = c
        going = going & (rho / n >= bar)
        yn, C, g_diag = H[K, K:], H[:K, K:], H[K, :K]
        score = yn[None, :] - C**2 / (1.0 + g_diag)[:, None]
        worst = jnp.max(jnp.where(pair_on[None, :], score, -jnp.inf), axis=1)   # [K]
        worst = jnp.where(arm_ok, worst, jnp.inf)                          # padded: never picked
        m = jnp.min(worst)
        # Ties broken uniformly at random, as the released code's randargmin: with A = I
        # many arms tie, and a fixed rule would pull one arm forever.  A tie is equality up to
        # 16 ulps: symmetric arms (e_3, e_4, e_5 of Soare's instance) tie exactly in exact
        # arithmetic, but XLA may round the same formula differently at different vector
        # positions in differently fused programs (1 vs 2 devices), and an exact test then
        # broke the tie differently (docs/design.md, Numerics: reproducibility).
        tie = m + 16.0 * jnp.finfo(dtype).eps * jnp.abs(m)
        k, tb = pick(i, worst <= tie, tb)
        row = H[k]                                      # [G[k, :], C[k, :]] = [g, c]
        den = 1.0 + row[k]
        upd = going.astype(dtype)
        # Sherman-Morrison: G -= g g^T / den, C -= g c^T / den, yn -= c^2 / den
        col = jnp.where(last_row, row[None, :], jnp.concatenate([row[:K], jnp.zeros((1,), dtype)])[:, None])
        H = H - upd * (col * row[None, :]) / den
        counts = counts + upd * (arms == k).astype(dtype)
        n = n + upd
        rho = jnp.where(going, m, rho)
        return H, counts, n, rho, going, tb

    counts, n, rho, going = carry
    _, counts, n, rho, going, _ = jax.lax.fori_loop(0, S, pull_one, (H, counts, n, rho, going, tb0), unroll=4)
    return counts, n, rho, going


def _greedy_pulls_fused(H, pair_on, bar, arm_ok, carry, key, S: int, kernels: str):
    """:func:`_greedy_pulls_rows`'s pulls as one fused kernel a step (GPUs: ``kernels`` "triton";
    "interpret" runs that kernel on any backend): a lane's H (as its arm and pair columns, padded
    to powers of two), counts and scalars stay in one program's registers for the step's ``S``
    pulls, and the tie-breaking uniforms are :func:`~jaxbandits.environment.uniform_at_words`
    (threefry written out: the same bits as :func:`~jaxbandits.environment.uniform_at`).  The same
    operations on the same numbers as the rows form, so the same pulls (a tie within 16 ulps is
    tested with ``m + 16 eps |m|``, which XLA:CPU may round as a fused multiply-add)."""
    R, W = H.shape
    K = R - 1
    P = W - K
    dt = H.dtype
    Rp, Pp = kern.power_of_two(R), kern.power_of_two(P)
    Ha = jnp.zeros((Rp, Rp), dt).at[:R, :K].set(H[:, :K])
    Hp = jnp.zeros((Rp, Pp), dt).at[:R, :P].set(H[:, K:])
    on = jnp.zeros((Pp,), jnp.int32).at[:P].set(pair_on.astype(jnp.int32))
    ok = jnp.zeros((Rp,), jnp.int32).at[:K].set(arm_ok.astype(jnp.int32))
    counts, n, rho, going = carry
    kd = jax.random.key_data(key)
    out = kern.fused_fori_loop(
        S, functools.partial(_pull_fused, K=K, S=S),
        (Ha, Hp, jnp.zeros((Rp,), dt).at[:K].set(counts), n, rho, going.astype(jnp.int32)),
        (on, ok, jnp.asarray(bar, dt), kd[0], kd[1]), kernels=kernels)
    return out[2][:K], out[3], out[4], out[5] != 0


def table_operands(X, Z, arm_ok):
    """The instance's operands of :func:`_greedy_pulls_tables`' kernel: the arms X and the pairs'
    directions Z[i] - Z[j] (i < j), zero-padded to powers of two [Rp, dp] and [Pp, dp] (Rp above
    K + 1), and the real arms as integers [Rp]."""
    K, d = X.shape
    M = Z.shape[0]
    pi, pj = _pair_index(M)
    Y = Z[pi] - Z[pj]
    Rp, Pp, dp = kern.power_of_two(K + 1), kern.power_of_two(Y.shape[0]), kern.power_of_two(d)
    return (jnp.pad(X, ((0, Rp - K), (0, dp - d))), jnp.pad(Y, ((0, Pp - Y.shape[0]), (0, dp - d))),
            jnp.pad(arm_ok.astype(jnp.int32), (0, Rp - K)))


_batch_table_operands = jax.jit(jax.vmap(table_operands))


def _greedy_pulls_tables(X, Y, pair_on, bar, arm_ok, carry, key, S: int, kernels: str, operands=None):
    """:func:`_greedy_pulls_fused` with the step's table H built inside the same kernel, from the
    arms X [K, d], the pairs' directions Y [P, d] and the phase's counts: A = I + sum_k counts_k
    x_k x_k^T, its Cholesky factor (:func:`jaxbandits.design.core.small_cholesky`, as
    :func:`jaxbandits.algorithms.common.cholesky`), L^-1 by forward substitution, the whitened
    arms and pairs and their products G, C, ||y||^2 as sums in index order.  H never leaves the
    program's registers: the step reads the counts and writes the counts and three scalars a lane,
    where building H in XLA took about twenty kernels and 25 KB of memory traffic a lane (an H100
    model of Soare's d = 5 instance).  The same formulas as the XLA step's, summed in the kernel's
    order (XLA's products are library calls: cuBLAS on a GPU, its own dot on a CPU), so H can
    differ in its last bits, and a pull with it only where the greedy choice is within rounding of
    a tie that the 16-ulp tie test does not absorb.  For d <= ``SMALL_DIM``.  ``operands``: the
    instance's :func:`table_operands` where prepared once (:meth:`XYAdaptive.prepare`; None: padded
    here, in every step); X then gives only the shapes and Y is unused."""
    K, d = X.shape
    P = pair_on.shape[0]
    dt = X.dtype
    Rp, Pp, dp = kern.power_of_two(K + 1), kern.power_of_two(P), kern.power_of_two(d)
    counts, n, rho, going = carry
    kd = jax.random.key_data(key)
    if operands is None:
        pad2 = lambda a, r, c: jnp.pad(a, ((0, r - a.shape[0]), (0, c - a.shape[1])))  # noqa: E731
        operands = (pad2(X, Rp, dp), pad2(Y, Pp, dp), jnp.pad(arm_ok.astype(jnp.int32), (0, Rp - K)))
    Xp, Yp, okp = operands
    args = (Xp, Yp, jnp.pad(counts, (0, Rp - K)), n, rho, going.astype(jnp.int32),
            jnp.pad(pair_on.astype(jnp.int32), (0, Pp - P)), okp, jnp.asarray(bar, dt), kd[0], kd[1])

    def run(Xv, Yv, c, n, rho, going, on, ok, bar, k0, k1):
        xs = [kern.column(Xv, i) for i in range(d)]   # arm coordinates [Rp]
        ys = [kern.column(Yv, i) for i in range(d)]   # pair coordinates [Pp]
        # A = I + (X^T diag(counts)) X, symmetrised as common.cholesky does
        A = [[(1.0 if a == b else 0.0) + jnp.sum((xs[a] * c) * xs[b]) for b in range(d)] for a in range(d)]
        L, r = small_cholesky(Entries([[0.5 * (A[a][b] + A[b][a]) for b in range(d)] for a in range(d)]))
        ids = kern.iota(dp)
        Linv = small_forward(L, r, [jnp.where(ids == i, 1.0, 0.0).astype(dt) for i in range(d)])  # its rows
        lij = [[kern.entry(Linv[i], j) for j in range(d)] for i in range(d)]
        xw = [kern.dot_columns(xs, lij[i]) for i in range(d)]   # L^-1 X^T, row by row [Rp]
        yw = [kern.dot_columns(ys, lij[i]) for i in range(d)]   # L^-1 Y^T [Pp]
        G = xw[0][:, None] * xw[0][None, :]
        C = xw[0][:, None] * yw[0][None, :]
        gd, yn = xw[0] * xw[0], yw[0] * yw[0]
        for i in range(1, d):
            G = G + xw[i][:, None] * xw[i][None, :]
            C = C + xw[i][:, None] * yw[i][None, :]
            gd, yn = gd + xw[i] * xw[i], yn + yw[i] * yw[i]
        ir = kern.iota(Rp)[:, None]
        Ha = jnp.where(ir < K, G, jnp.where(ir == K, gd[None, :], 0.0))
        Hp = jnp.where(ir < K, C, jnp.where(ir == K, yn[None, :], 0.0))
        out = jax.lax.fori_loop(0, S, lambda i, cr: _pull_fused(jnp.asarray(i, jnp.int32), cr, on, ok, bar, k0, k1,
                                                                 K=K, S=S),
                                (Ha, Hp, c, n, rho, going))
        return out[2:]

    out_like = (args[2], n, rho, args[5])
    counts, n, rho, going = kern.lane_program(run, out_like, args, kernels=kernels)
    return counts[:K], n, rho, going != 0


def _pull_fused(i, carry, on, ok, bar, k0, k1, *, K: int, S: int):
    """One pull of :func:`_greedy_pulls_fused` (the body of :func:`_greedy_pulls_rows`' loop on
    arrays: rows 0..K-1 are the arms, row K the diagonal of G and ||y||^2_{A^-1})."""
    Ha, Hp, counts, n, rho, going = carry
    Rp = Ha.shape[0]
    dt = Ha.dtype
    ir = kern.iota(Rp)
    go = (going != 0) & (rho / n >= bar)
    yn, g_diag = kern.row(Hp, K), kern.row(Ha, K)
    score = yn[None, :] - Hp ** 2 / (1.0 + g_diag)[:, None]
    worst = jnp.where(ok != 0, jnp.max(jnp.where(on[None, :] != 0, score, -jnp.inf), axis=1), jnp.inf)
    m = jnp.min(worst)
    tie = m + 16.0 * jnp.finfo(dt).eps * jnp.abs(m)
    u = uniform_at_words(k0, k1, ir.astype(jnp.uint32) * jnp.asarray(S, jnp.uint32) + i.astype(jnp.uint32), dt)
    cand = jnp.where((worst <= tie) & (ir < K), u, -1.0)
    k = jnp.min(jnp.where(cand == jnp.max(cand), ir, Rp))   # the first largest uniform (_tie_draw)
    rowa, rowp = kern.row(Ha, k), kern.row(Hp, k)
    den = 1.0 + kern.entry(rowa, k)
    upd = go.astype(dt)
    last = ir[:, None] == K
    Ha = Ha - upd * jnp.where(last, rowa[None, :] * rowa[None, :], rowa[:, None] * rowa[None, :]) / den
    Hp = Hp - upd * jnp.where(last, rowp[None, :] * rowp[None, :], rowa[:, None] * rowp[None, :]) / den
    counts = counts + upd * (ir == k).astype(dt)
    return Ha, Hp, counts, n + upd, jnp.where(go, m, rho), go.astype(jnp.int32)


#: most arms for which :func:`_greedy_pulls_rows` unrolls H's rows
ROWS_K = 16
#: most lanes a device (the accelerator policy's ``capacity``) for which the accelerator program
#: uses :func:`_greedy_pulls_rows`.  Its pulls launch 3 kernels where the array form launches 8,
#: but move about 12 % more bytes: below this a step is bound by launches (an H100 model of
#: Soare's d = 5 instance at 16,384 lanes: 300.6 -> 176.6 kernels a step), above it by memory
#: (at 262,144 lanes the array form's 50.8 GB a step against 56.9)
ROWS_MAX_LANES = 65_536


def _greedy_pulls_rows(H, pair_on, bar, arm_ok, carry, key, S: int):
    """:func:`_greedy_pulls` with :func:`_tie_draw`'s ties, H held as its K + 1 rows (the arms
    unrolled, the columns a vector): the same operations on the same numbers in the same order (max
    and min are exact in any order; the argmax, the pulled arm's row and the counts are chains of
    compares and selects over the arms), so the same pulls, while the only reductions of a pull
    are the K row maxima over the pairs (sibling reductions: one kernel) and everything else is
    elementwise over the lanes and fuses: about 3 kernels a pull instead of 8 on a GPU (H100 model,
    Soare d = 5, 16,384 lanes).  For few arms (:data:`ROWS_K`) and lanes (:data:`ROWS_MAX_LANES`).
    """
    R, W = H.shape
    K = R - 1
    dtype = H.dtype
    ok = [arm_ok[k] for k in range(K)]
    ulp16 = 16.0 * jnp.finfo(dtype).eps

    def pull_one(i, c):
        h, counts, n, rho, going = c
        going = going & (rho / n >= bar)
        yn, g_diag = h[K][K:], [h[K][k] for k in range(K)]
        worst = [jnp.where(ok[k], jnp.max(jnp.where(pair_on, yn - h[k][K:] ** 2 / (1.0 + g_diag[k]), -jnp.inf)), jnp.inf)
                 for k in range(K)]
        m = functools.reduce(jnp.minimum, worst)
        tie = m + ulp16 * jnp.abs(m)      # as in _greedy_pulls
        i32 = jnp.asarray(i).astype(jnp.uint32)
        # _tie_draw: the first largest uniform among the candidates
        k, _ = first_max([jnp.where(worst[kk] <= tie, uniform_at(key, jnp.asarray(kk * S, jnp.uint32) + i32, dtype),
                                    -1.0) for kk in range(K)])
        row = functools.reduce(lambda v, kk: jnp.where(k == kk, h[kk], v), range(K - 2, -1, -1), h[K - 1])  # H[k]
        den = 1.0 + functools.reduce(lambda v, kk: jnp.where(k == kk, h[kk][kk], v), range(K - 2, -1, -1),
                                     h[K - 1][K - 1])
        upd = going.astype(dtype)
        Hn = tuple(h[r] - upd * ((row if r == K else row[r]) * row) / den for r in range(R))
        counts = tuple(counts[kk] + upd * (k == kk).astype(dtype) for kk in range(K))
        return Hn, counts, n + upd, jnp.where(going, m, rho), going

    counts, n, rho, going = carry
    _, counts, n, rho, going = jax.lax.fori_loop(0, S, pull_one, (tuple(H[r] for r in range(R)),
                                                                  tuple(counts[k] for k in range(K)), n, rho, going),
                                                 unroll=4)
    return jnp.stack(counts), n, rho, going


def _greedy_pulls_all_pairs(H, pair_on, bar, arm_ok, carry, key, S: int):
    """:func:`_greedy_pulls` over every pair, the step's tie table drawn up front (the same
    uniforms the lazy draw gives)."""
    table = _tie_table(key, arm_ok.shape[0], S, H.dtype)

    def pick(i, cand, tb):
        return jnp.argmax(jnp.where(cand, table[i], -1.0)), tb
    return _greedy_pulls(H, pair_on, bar, arm_ok, carry, pick, (), S)


@dataclasses.dataclass(frozen=True)
class XYAdaptive(Algorithm):
    """XY-adaptive (Soare et al. 2014, Fig. 3; seed 001 App F).  One ``step`` = up to
    ``pulls_per_step`` greedy pulls of the current phase, and the phase's end (estimate,
    elimination) when the phase rule stops it.

    The greedy choice needs no rewards, so the phase's rewards are drawn at its end as exact
    per-arm sums.  Inside a step the greedy quantities x^T A^-1 x', x^T A^-1 y and ||y||^2_{A^-1}
    are kept by rank-one (Sherman-Morrison) downdates, O(K (K + P)) per pull with P = M(M-1)/2
    pairs, held in one [K + 1, K + P] matrix so that a pull is one update by one of its rows; they
    are recomputed from the exact A = I + sum counts x x^T at the start of every step, so rounding
    errors never accumulate over more than ``pulls_per_step`` pulls.  The tie-breaking uniforms
    are drawn only where a pull has tied candidates, and on a CPU the phase's end (reward sums,
    estimate, elimination) runs only in steps where some lane's phase ends; on an accelerator
    both stay branch-free (a branch there is a host round trip).  On a CPU a lane with two active
    items (one pair: after the first phases, almost every pull) pulls on H narrowed to the
    columns of G and of that pair, [K + 1, K + 1], the same numbers in the same operations, so
    the same pulls; lanes with more active pairs run over every pair, gathered under
    :func:`~jaxbandits.batching.solve_where` in the steps that have any.

    Attributes:
      delta: confidence level.  alpha: phase-length parameter (0.1 as in Soare et al. and seed 001).
      sigma: sub-Gaussian scale of the noise, a factor of the elimination width; None (default) =
        the instance's noise scale (Gaussian), 1/2 (Bernoulli).
      pulls_per_step: greedy pulls per ``step`` at most (a speed knob; results do not depend on it
        except through the step count).
    """

    delta: float = hyperparameter(0.05, low=0.0, high=1.0, traced=True)
    sigma: float | None = hyperparameter(None, low=0.0, traced=True)
    alpha: float = hyperparameter(0.1, traced=True)
    pulls_per_step: int = hyperparameter(32, count=1)

    # padded arms: never the greedy pick; padded items: never active; |Z| the real count
    supports_padding: ClassVar[bool] = True

    def init(self, key: jax.Array, instance: Instance) -> XYAdaptiveState:
        K, d = instance.arms.shape
        M = instance.num_items
        dt = instance.arms.dtype
        return XYAdaptiveState(
            active=instance.valid_items(), phase=jnp.asarray(1, jnp.int32),
            phase_counts=jnp.zeros((K,), dt), n=jnp.asarray(float(d), dt),
            rho=jnp.ones((), dt), rho_past=jnp.ones((), dt),
            n_past=jnp.asarray(float(d * (d + 1) + 1), dt), pulls=jnp.zeros((K,), dt),
            samples=jnp.zeros((), dt), theta_hat=jnp.zeros((d,), dt))

    def _log_term(self, phase, num_items):
        j = phase.astype(jnp.result_type(float))
        return jnp.log(2.0 * math.pi**2 * num_items**2 * j**2 / (6.0 * self.delta))

    def _tables_in_kernel(self, instance: Instance) -> bool:
        """Whether a step builds its table H inside the pulls' kernel (:func:`_greedy_pulls_tables`:
        GPUs, d <= ``SMALL_DIM``, exact uniform draws)."""
        return (self.policy.batched and self.policy.kernels != "xla" and instance.arms.shape[-1] <= SMALL_DIM
                and draws_at_exact("uniform", jnp.dtype(instance.arms.dtype).name))

    def prepare(self, instances: Instance) -> Instance:
        """For d <= ``SMALL_DIM``, the instance's operands of the kernel that builds a step's table
        on a GPU (:func:`table_operands`: the padded arms and pairs' directions), once per run:
        padded in every step, they were kernels of their own.  (The engine prepares before it
        knows the device's policy; other programs leave them unread.)"""
        if instances.arms.shape[-1] > SMALL_DIM:
            return instances
        return with_cache(instances, _batch_table_operands(instances.arms, instances.items, instances.valid_arms()))

    def step(self, key: jax.Array, state: XYAdaptiveState, instance: Instance) -> XYAdaptiveState:
        X, Z = instance.arms, instance.items
        K, d = X.shape
        M = Z.shape[0]
        pi, pj = _pair_index(M)
        Y = Z[pi] - Z[pj]                                   # [P, d]
        pair_on = state.active[pi] & state.active[pj]

        def tables():
            eye = jnp.eye(d, dtype=X.dtype)
            L = common.cholesky(eye + gram_from_counts(X, state.phase_counts))
            Xw = whiten_items(L, X)                                   # [d, K]
            Yw = whiten_items(L, Y)                                   # [d, P]
            G = Xw.T @ Xw                                       # x^T A^-1 x'
            # exactly symmetric, so that row k of G is its column k (the rank-one update reads rows)
            G = jnp.where(jnp.arange(K)[:, None] <= jnp.arange(K)[None, :], G, G.T)
            C = Xw.T @ Yw                                       # x^T A^-1 y
            yn = jnp.sum(Yw * Yw, axis=0)                       # ||y||^2_{A^-1}
            # H = [[G, C], [diag G, yn]] [K + 1, K + P]: one pull's rank-one update of G, C and yn
            # is one update of H by its row k (G[k, :] = G[:, k], C[k, :], G[k, k] there); the last
            # row gets the same update as the diagonal of G (g_j g_j / den), so it stays diag G, read
            # contiguously by the greedy score
            return jnp.concatenate([jnp.concatenate([G, C], axis=1),
                                    jnp.concatenate([jnp.diagonal(G)[None, :], yn[None, :]], axis=1)], axis=0)

        bar = self.alpha * state.rho_past / state.n_past

        k_ties, k_pull = jax.random.split(key)
        arm_ok = instance.valid_arms()
        S = self.pulls_per_step
        carry0 = (state.phase_counts, state.n, state.rho, jnp.sum(state.active) > 1)

        if self.policy.batched:
            # on an accelerator one branch-free loop over every pair (a branch there is a host
            # round trip); each pull draws its own tie-breaking uniforms inside its fused kernels
            # (or the step's [S, K] table where those draws would not be exact)
            lanes = self.policy.capacity
            if self._tables_in_kernel(instance):
                # H built and used inside one kernel
                counts, n, rho, going = _greedy_pulls_tables(X, Y, pair_on, bar, arm_ok, carry0, k_ties, S,
                                                             self.policy.kernels, instance_cache(instance))
            elif draws_at_exact("uniform", jnp.dtype(X.dtype).name) and self.policy.kernels != "xla":
                counts, n, rho, going = _greedy_pulls_fused(tables(), pair_on, bar, arm_ok, carry0, k_ties, S,
                                                            self.policy.kernels)
            elif draws_at_exact("uniform", jnp.dtype(X.dtype).name) and K <= ROWS_K and lanes is not None \
                    and lanes <= ROWS_MAX_LANES:
                counts, n, rho, going = _greedy_pulls_rows(tables(), pair_on, bar, arm_ok, carry0, k_ties, S)
            elif draws_at_exact("uniform", jnp.dtype(X.dtype).name):
                def pick(i, cand, tb):
                    return _tie_draw(k_ties, i, cand, S, X.dtype), tb
                counts, n, rho, going = _greedy_pulls(tables(), pair_on, bar, arm_ok, carry0, pick, (), S)
            else:
                counts, n, rho, going = _greedy_pulls_all_pairs(tables(), pair_on, bar, arm_ok, carry0, k_ties, S)
        else:
            # On a CPU the pulls of a lane with one active pair (two active items: 99.98 % of the
            # pulls on Soare's instance) read only the columns of G and of that pair: H narrowed to
            # [K + 1, K + 1], the same numbers in the same operations, so the same pulls.  Lanes with
            # more active pairs (the first phases) run the loop over all pairs, under solve_where
            # (none in most steps).
            one = jnp.argmax(pair_on)
            H = tables()
            H1 = jnp.concatenate([H[:, :K], H[:, K + one][:, None]], axis=1)
            counts, n, rho, going = _greedy_pulls(H1, pair_on[one][None], bar, arm_ok, carry0,
                                                 *_lazy_ties(k_ties, K, S, X.dtype), S)
            counts, n, rho, going = solve_where(
                jnp.sum(pair_on) > 1, functools.partial(_greedy_pulls_all_pairs, S=S), (H, pair_on, bar, arm_ok, carry0, k_ties),
                (counts, n, rho, going), capacity=ALL_LANES, batched_solve=True)
        going0 = carry0[3]
        new_pulls = counts - state.phase_counts
        ended = going0 & (rho / n < bar)
        log_term = self._log_term(state.phase, instance.true_num_items())
        sigma = jnp.asarray(noise_scale(self.sigma, instance), X.dtype)
        leaves, treedef = jax.tree.flatten(instance)

        def phase_end(key, counts, active, log_term, sigma, *leaves):
            # Phase end: rewards of the phase (exact sums), ridge estimate with A = I + sum x x^T,
            # elimination with the phase index in the width.
            inst = jax.tree.unflatten(treedef, leaves)
            sums = pull_counts(key, inst, counts)
            La = common.cholesky(jnp.eye(d, dtype=counts.dtype) + gram_from_counts(inst.arms, counts))
            theta = common.cho_solve(La, inst.arms.T @ sums)
            # elimination width sigma ||y||_{A^-1} sqrt(2 log(pi^2 |Z|^2 j^2 / (3 delta)))
            return eliminate(active, inst.items, theta, La, log_term, sigma), theta

        args = (k_pull, counts, state.active, log_term, sigma, *leaves)
        if self.policy.batched:
            # on an accelerator every step computes it: a branch would cost a host round trip
            active_end, theta = phase_end(*args)
            active, theta_hat = jnp.where(ended, active_end, state.active), jnp.where(ended, theta, state.theta_hat)
        else:
            # on a CPU only the steps where some lane's phase ends do, for those lanes (gathered
            # into the smallest of a few buffers holding them)
            active, theta_hat = solve_where(ended, phase_end, args, (state.active, state.theta_hat),
                                            capacity=None, batched_solve=True)

        sel = lambda a, b: jnp.where(ended, a, b)  # noqa: E731
        return XYAdaptiveState(
            active=active,
            phase=state.phase + ended.astype(jnp.int32),
            phase_counts=sel(jnp.zeros_like(counts), counts),
            n=sel(jnp.asarray(float(d), X.dtype), n),
            rho=rho,
            rho_past=sel(rho, state.rho_past),
            n_past=sel(n, state.n_past),
            pulls=state.pulls + new_pulls,
            samples=state.samples + jnp.sum(new_pulls),
            theta_hat=theta_hat)

    def done(self, state: XYAdaptiveState) -> jax.Array:
        return jnp.sum(state.active) <= 1

    def outcome(self, state: XYAdaptiveState, instance: Instance) -> Outcome:
        idx = single_answer(state.active, instance.items @ state.theta_hat)
        return Outcome(answer=answer_mask(idx, instance.num_items), samples=state.samples,
                       pulls=state.pulls)

    def validate(self, instance: Instance) -> None:
        super().validate(instance)
        require_linear_rewards(instance, "XYAdaptive")
        check_sigma(self.sigma)
        if not (0.0 < self.alpha < 1.0):
            raise ValueError(f"alpha must be in (0, 1), got {self.alpha}")
        if self.pulls_per_step < 1:
            raise ValueError("pulls_per_step must be >= 1")
        K = instance.num_arms
        if K * int(self.pulls_per_step) > 2**32:  # the tie-breaking draws of a step: uint32 counters k S + i
            raise ValueError(f"pulls_per_step must be at most 2**32 / K = {2**32 // K} with K = {K} arms (a step's "
                             f"tie-breaking draws are numbered k * pulls_per_step + i in 32 bits), got "
                             f"{self.pulls_per_step}")


__all__ = ["XYStatic", "XYOracle", "XYAdaptive", "XYPhasedState", "XYAdaptiveState",
           "certified_best", "spans", "multinomial_on_support"]
