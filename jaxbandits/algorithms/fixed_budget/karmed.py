"""Fixed-budget best-arm identification on K-armed bandits: Successive Rejects (Audibert & Bubeck,
COLT 2010) and Sequential Halving (Karnin, Koren & Somekh, ICML 2013).

Both run on a K-armed instance (:func:`jaxbandits.instances.k_armed`: arms = items = I_K, any
reward model whose mean is the arm's coordinate of theta), one engine step per phase; a phase's
pulls are drawn at once as per-arm reward sums (:func:`jaxbandits.environment.pull_counts_fixed`,
exact in distribution; under an accelerator policy the Bernoulli sums' binomials are drawn with a
trip count fixed when the program is compiled, the same sums wherever each finishes, and a run in
which one did not is reported not converged).  Ties in the empirical means are broken uniformly
at random (a key per phase).

* :class:`SuccessiveRejects` (Audibert & Bubeck 2010, Sec 3, "SR"): with
  log-bar(K) = 1/2 + sum_{i=2}^K 1/i and n_k = ceil((n - K) / (log-bar(K) (K + 1 - k))), n_0 = 0,
  phase k = 1, ..., K - 1 pulls every remaining arm n_k - n_{k-1} times and rejects the one with
  the lowest empirical mean (over all its samples); the survivor is recommended.  At most n pulls.
* :class:`SequentialHalving` (Karnin et al. 2013, Algorithm 1): R = ceil(log2 K) rounds; round r
  pulls every arm of S_r t_r = floor(T / (|S_r| R)) times and keeps the ceil(|S_r| / 2) arms of
  largest empirical mean *of that round's samples*; the last survivor is recommended.  At most T
  pulls.
"""
from __future__ import annotations

import dataclasses
import math
from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxbandits.algorithms.base import Algorithm, Outcome, answer_mask, hyperparameter
from jaxbandits.environment import pull_counts_fixed
from jaxbandits.instances.base import Instance


def check_k_armed(instance: Instance, who: str) -> None:
    """arms = items = the identity matrix (host side)."""
    X, Z = np.asarray(instance.arms), np.asarray(instance.items)
    K = X.shape[-2]
    if X.shape[-1] != K or not np.array_equal(X, np.broadcast_to(np.eye(K), X.shape)) or not np.array_equal(X, Z):
        raise ValueError(f"{who} is for K-armed bandits: arms = items = the identity matrix "
                         "(build the instance with jaxbandits.instances.k_armed)")


def rank_with_random_ties(key: jax.Array, scores: jax.Array, alive: jax.Array) -> jax.Array:
    """[K] the rank of every arm by decreasing score (0: the largest), the dead arms last, ties
    broken uniformly at random."""
    K = scores.shape[0]
    u = jax.random.uniform(key, (K,))
    order = jnp.lexsort((u, -jnp.where(alive, scores, -jnp.inf)))
    return jnp.zeros((K,), jnp.int32).at[order].set(jnp.arange(K, dtype=jnp.int32))


class PhaseState(NamedTuple):
    alive: jax.Array     # [K] bool, the arms not yet rejected
    phase: jax.Array     # phases done
    pulls: jax.Array     # [K] pulls so far
    sums: jax.Array      # [K] reward sums so far
    unfinished: jax.Array  # phases whose Bernoulli sums had a draw unfinished (pull_counts_fixed)


def log_bar(K: int) -> float:
    """log-bar(K) = 1/2 + sum_{i=2}^K 1/i (Audibert & Bubeck 2010, Sec 3)."""
    return 0.5 + sum(1.0 / i for i in range(2, K + 1))


def successive_rejects_schedule(budget, K: int):
    """[K] n_0 = 0, n_1, ..., n_{K-1}: n_k = ceil((n - K) / (log-bar(K) (K + 1 - k))) (Audibert &
    Bubeck 2010, Sec 3); ``budget`` may be traced."""
    k = jnp.arange(1, K, dtype=jnp.result_type(float))
    n = jnp.ceil((jnp.asarray(budget, k.dtype) - K) / (log_bar(K) * (K + 1 - k)))
    return jnp.concatenate([jnp.zeros((1,), k.dtype), n])


@dataclasses.dataclass(frozen=True)
class PhasedElimination(Algorithm):
    """What Successive Rejects and Sequential Halving share: K-armed instances only, phases that
    pull the surviving arms and drop some (one engine step per phase), the last survivor returned.

    Attributes:
      budget: the number of pulls.
    """

    budget: int = hyperparameter(low=0.0, pulls=True, traced=True)

    needs_span: ClassVar[bool] = False
    fixed_budget: ClassVar[bool] = True

    def validate(self, instance: Instance) -> None:
        super().validate(instance)
        check_k_armed(instance, type(self).__name__)

    def init(self, key, instance: Instance) -> PhaseState:
        K = instance.num_arms
        dt = instance.arms.dtype
        return PhaseState(jnp.ones((K,), bool), jnp.zeros((), jnp.int32), jnp.zeros((K,), dt), jnp.zeros((K,), dt),
                          jnp.zeros((), jnp.int32))

    def done(self, state: PhaseState) -> jax.Array:
        return jnp.sum(state.alive) <= 1

    def outcome(self, state: PhaseState, instance: Instance) -> Outcome:
        return Outcome(answer_mask(jnp.argmax(state.alive), instance.num_items),
                       jnp.sum(state.pulls).astype(jnp.int32), state.pulls, converged=state.unfinished == 0)


@dataclasses.dataclass(frozen=True)
class SuccessiveRejects(PhasedElimination):
    """Successive Rejects (Audibert & Bubeck 2010, Sec 3; module docstring).

    Attributes:
      budget: n, the number of pulls (n > K).
    """

    def validate(self, instance: Instance) -> None:
        super().validate(instance)
        K = instance.num_arms
        if int(self.budget) <= K:
            raise ValueError(f"budget = {self.budget} too small for Successive Rejects with K = {K} arms: it needs "
                             f"budget > K (n_1 = ceil((n - K) / (log-bar(K) K)) >= 1)")

    def steps_needed(self, instance) -> int:
        """K - 1 phases."""
        K = instance if isinstance(instance, int) else instance.num_arms
        return K - 1

    def step(self, key, state: PhaseState, instance: Instance) -> PhaseState:
        K = instance.num_arms
        k_pull, k_tie = jax.random.split(key)
        n = successive_rejects_schedule(self.budget, K)
        k = state.phase + 1
        per_arm = n[k] - n[k - 1]
        counts = jnp.where(state.alive, per_arm, 0.0)
        drawn, finished = pull_counts_fixed(k_pull, instance, counts)
        sums = state.sums + drawn
        pulls = state.pulls + counts
        means = sums / jnp.maximum(pulls, 1.0)
        # reject the lowest mean: the arm ranked last among the alive ones
        rank = rank_with_random_ties(k_tie, -means, state.alive)
        worst = jnp.argmin(jnp.where(state.alive, rank, K))
        return PhaseState(state.alive.at[worst].set(False), k, pulls, sums, state.unfinished + (~finished))



def halving_sizes(K: int) -> list[int]:
    """|S_0| = K, |S_{r+1}| = ceil(|S_r| / 2), for r = 0 .. ceil(log2 K) (Karnin et al. 2013)."""
    R = max(1, math.ceil(math.log2(K)))
    sizes = [K]
    for _ in range(R):
        sizes.append(math.ceil(sizes[-1] / 2))
    return sizes


@dataclasses.dataclass(frozen=True)
class SequentialHalving(PhasedElimination):
    """Sequential Halving (Karnin, Koren & Somekh 2013, Algorithm 1; module docstring).

    Attributes:
      budget: T, the number of pulls (at least K ceil(log2 K), so that t_0 >= 1).
    """

    def validate(self, instance: Instance) -> None:
        super().validate(instance)
        K = instance.num_arms
        R = len(halving_sizes(K)) - 1
        if int(self.budget) < K * R:
            raise ValueError(f"budget = {self.budget} too small for Sequential Halving with K = {K} arms: it needs "
                             f"budget >= K ceil(log2 K) = {K * R} (t_0 = floor(T / (K ceil(log2 K))) >= 1)")

    def steps_needed(self, instance) -> int:
        """ceil(log2 K) rounds."""
        K = instance if isinstance(instance, int) else instance.num_arms
        return len(halving_sizes(K)) - 1

    def step(self, key, state: PhaseState, instance: Instance) -> PhaseState:
        K = instance.num_arms
        dt = instance.arms.dtype
        sizes = halving_sizes(K)
        R = len(sizes) - 1
        k_pull, k_tie = jax.random.split(key)
        r = state.phase
        size = jnp.asarray(sizes[:-1], dt)[r]
        keep = jnp.asarray(sizes[1:], jnp.int32)[r]
        t_r = jnp.floor(jnp.asarray(self.budget, dt) / (size * R))
        counts = jnp.where(state.alive, t_r, 0.0)
        round_sums, finished = pull_counts_fixed(k_pull, instance, counts)
        means = round_sums / jnp.maximum(t_r, 1.0)            # this round's samples only
        rank = rank_with_random_ties(k_tie, means, state.alive)
        alive = state.alive & (rank < keep)
        return PhaseState(alive, r + 1, state.pulls + counts, state.sums + round_sums,
                          state.unfinished + (~finished))

