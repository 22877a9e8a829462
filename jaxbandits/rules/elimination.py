"""Elimination at stopping and at sampling (Tirinzoni & Degenne, "On elimination strategies for
bandit fixed-confidence identification", NeurIPS 2022, arXiv 2205.10936), as one piece that applies
to any algorithm exposing its statistics: the composition's ``eliminate=`` (:func:`jaxbandits.rules.compose`)
and the wrapper :class:`jaxbandits.algorithms.Eliminate` both run :meth:`Elimination.update`.

**Elimination at stopping** (Sec 3): answer j is eliminated for good once the GLR evidence against
Theta_j exceeds the stopping rule's own threshold beta(t, delta); the algorithm stops when at most
one answer is active.  Two elimination-compatible tests (Sec 3.1):

* ``rule="computational"`` (CompElim): eliminate j when Z_{ihat,j}(t) > beta, ihat the empirical
  best item.  O(M d^2) per step.
* ``rule="statistical"`` (StatElim): eliminate j when max_i Z_{i,j}(t) > beta.  A superset of the
  computational rule; O(M^2 d) per step.

**Elimination at sampling** (Sec 4, ``at_sampling=True``): the sampling rule's closest-alternative
computations range over the active answers' pieces only.

What an algorithm exposes for it, declared as protocols (checked with ``isinstance``):
:class:`LinearStatistics` (``linear_stats`` and ``stopping_threshold``: elimination at stopping)
and :class:`MaskedSampling` (``step_masked``: elimination at sampling).  Correctness, cost and the
released code's choices: :mod:`jaxbandits.algorithms.fixed_confidence.elimination_rules`.
"""
from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple, Protocol, runtime_checkable

import jax
import jax.numpy as jnp

from jaxbandits.algorithms import common
from jaxbandits.algorithms.base import Configurable
from jaxbandits.instances.base import Instance

RULES = ("computational", "statistical")


@runtime_checkable
class LinearStatistics(Protocol):
    """An algorithm whose state holds the linear statistics of its observations and whose GLR
    stopping rule has a threshold: what elimination at stopping needs."""

    def linear_stats(self, state: Any) -> common.LinearStats:
        """Counts, sums, A_t = sum_s x_s x_s^T and b_t = sum_s x_s r_s of every observation."""

    def stopping_threshold(self, state: Any, instance: Instance) -> tuple[jax.Array, jax.Array]:
        """(sigma^2 beta(t, delta), ready): the threshold its own GLR stopping rule compares the
        unit-variance statistic with, and whether its other stopping preconditions hold."""


@runtime_checkable
class MaskedSampling(Protocol):
    """An algorithm whose sampling rule can range over the active answers only: what elimination
    at sampling needs.  ``step(k, s, i) == step_masked(k, s, i, all True)``."""

    def step_masked(self, key: jax.Array, state: Any, instance: Instance, active: jax.Array) -> Any:
        """One step whose closest-alternative computations range over the items j with ``active[j]``."""


class EliminationState(NamedTuple):
    active: jax.Array       # [M] bool: answers not eliminated
    elim_time: jax.Array    # [M] int32: pulls t at which each answer was eliminated (0: active)
    stopped: jax.Array      # the elimination stopping rule fired
    answer: jax.Array       # its answer (the last active item, or the empirical best if none is left)


def pairwise_evidence(theta_hat: jax.Array, L: jax.Array, items: jax.Array) -> jax.Array:
    """max_i Z_{i,j}(t) for every item j (the statistical elimination test of Tirinzoni & Degenne
    Sec 3.1; Z_{i,j} of seed 000 Lemma 7), from the Cholesky factor L of A_t.  O(M^2 d + M d^2)."""
    values = items @ theta_hat
    Q = items @ common.inverse_from_cholesky(L) @ items.T
    q = jnp.diag(Q)
    norms = q[:, None] + q[None, :] - 2.0 * Q          # ||z_i - z_j||^2_{A^-1}
    gaps = values[:, None] - values[None, :]           # theta^T (z_i - z_j)
    z = gaps * jnp.abs(gaps) / (2.0 * jnp.maximum(norms, 1e-300))
    same = jnp.all(items[:, None, :] == items[None, :, :], axis=-1)
    return jnp.max(jnp.where(same, -jnp.inf, z), axis=0)


@dataclasses.dataclass(frozen=True)
class Elimination(Configurable):
    """Elimination at stopping and/or at sampling (module docstring).

    Attributes:
      at_stopping: stop when at most one answer is active (Sec 3).
      at_sampling: restrict the sampling rule to the active answers' pieces (Sec 4).
      rule: "computational" (Z_{ihat,j} > beta) or "statistical" (max_i Z_{i,j} > beta).
    """

    at_stopping: bool = True
    at_sampling: bool = False
    rule: str = "computational"

    def __post_init__(self):
        if self.rule not in RULES:
            raise ValueError(f"rule must be one of {RULES}, got {self.rule!r}")

    @property
    def on(self) -> bool:
        return bool(self.at_stopping or self.at_sampling)

    def init(self, instance: Instance) -> EliminationState:
        M = instance.num_items
        return EliminationState(jnp.ones((M,), bool), jnp.zeros((M,), jnp.int32), jnp.zeros((), bool),
                                jnp.zeros((), jnp.int32))

    def evidence(self, stats: common.LinearStats, items: jax.Array, reg=0.0):
        """(evidence [M] against each answer, empirical best item): Z_{ihat,j} or max_i Z_{i,j},
        with theta_hat = (A_t + reg I)^-1 b_t (the stopping rule's ridge)."""
        theta, L = common.least_squares(stats, reg)
        row, best = common.glr_row(theta, L, items)
        if self.rule == "statistical":
            return pairwise_evidence(theta, L, items), best
        # glr_row puts +inf on ihat (and items equal to it), for the min of the stopping rule; no
        # evidence against them here
        return jnp.where(jnp.isposinf(row), -jnp.inf, row), best

    def update(self, state: EliminationState, stats: common.LinearStats, beta, ready, items: jax.Array,
               reg=0.0) -> EliminationState:
        """Eliminate every active answer whose evidence exceeds ``beta`` (when ``ready``)."""
        ev, best = self.evidence(stats, items, reg)
        out = state.active & jnp.asarray(ready, bool) & (ev > beta)
        active = state.active & ~out
        t = jnp.sum(stats.counts).astype(jnp.int32)
        elim_time = jnp.where(out, t, state.elim_time)
        n_active = jnp.sum(active)
        M = items.shape[0]
        last = jnp.min(jnp.where(active, jnp.arange(M), M))
        answer = jnp.where(n_active == 1, last, best).astype(jnp.int32)
        stopped = (n_active <= 1) if self.at_stopping else jnp.zeros((), bool)
        return EliminationState(active, elim_time, stopped, answer)
