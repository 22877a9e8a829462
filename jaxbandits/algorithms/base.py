"""The algorithm contract every kernel follows, and what a finished run returns.

An algorithm is a frozen (hashable) dataclass holding its hyperparameters, static under ``jit``,
with pure functions over a NamedTuple state:

* ``init(key, instance) -> state``
* ``step(key, state, instance) -> state``: one decision, or one whole phase for phase-based
  algorithms.  The key comes first (blackjax style); the engine derives it from
  ``(key, instance index, replication index, step index)`` only, so results do not depend on
  batching.
* ``done(state) -> bool``: stopped (fixed confidence) or budget spent (fixed budget).
* ``outcome(state, instance) -> Outcome``: the answer and the cost.

No Python control flow on traced values, fixed shapes (active sets are masks), no host callbacks.
``validate(instance)`` runs on the host before anything is compiled and raises ``ValueError`` on
bad input.  The engine (:mod:`jaxbandits.engine`) vmaps these over lanes of replications and
instances.
"""
from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp

from jaxbandits.instances.base import Instance, validate_instance


class Outcome(NamedTuple):
    """What a run returns.

    Attributes:
      answer: [M] bool mask of the returned items (exactly ``m`` of them; one for best-arm
        identification).
      samples: total number of pulls used (the stopping time tau, or the budget spent).
      pulls: [K] per-arm pull counts.
    """

    answer: jax.Array
    samples: jax.Array
    pulls: jax.Array


def answer_mask(index: jax.Array, num_items: int) -> jax.Array:
    """One-hot bool mask [M] of a single returned item."""
    return jnp.arange(num_items) == index


def is_correct(answer: jax.Array, instance: Instance, m: int = 1, epsilon: float = 0.0) -> jax.Array:
    """Whether a returned set of items is (epsilon, m)-correct.

    The answer (a bool mask [M]) must hold exactly ``m`` items, each with value at least the m-th
    largest value minus ``epsilon`` (seed 003 Sec 2; with m = 1, epsilon = 0 it is the exact best
    arm).  Works on one instance; vmap for batches.
    """
    values = instance.item_values()
    mth = jax.lax.top_k(values, m)[0][m - 1]
    ok_items = jnp.all(jnp.where(answer, values >= mth - epsilon - 1e-12 * jnp.abs(mth), True))
    return ok_items & (jnp.sum(answer) == m)


@dataclasses.dataclass(frozen=True)
class Algorithm:
    """Base class of algorithm configurations (subclass as a frozen dataclass).

    Class attributes a subclass may override:
      needs_span: the arms must span R^d (least-squares based algorithms).
      fixed_budget: the algorithm spends a budget instead of stopping on a confidence level.
      dynamic_fields: numeric hyperparameters (e.g. ``("budget",)``) that the engine passes to the
        compiled program as traced scalars instead of baking them in, so that one executable
        serves every value (a budget sweep compiles once).  The kernels must then use these
        fields through ``jnp`` operations only (never ``int(...)``, never to size an array or a
        loop); static bounds derived from them must not exist or must come from other fields.
    """

    needs_span: ClassVar[bool] = True
    fixed_budget: ClassVar[bool] = False
    dynamic_fields: ClassVar[tuple[str, ...]] = ()

    # -- the contract --------------------------------------------------------------------------
    def init(self, key: jax.Array, instance: Instance) -> Any:
        raise NotImplementedError

    def step(self, key: jax.Array, state: Any, instance: Instance) -> Any:
        raise NotImplementedError

    def done(self, state: Any) -> jax.Array:
        raise NotImplementedError

    def outcome(self, state: Any, instance: Instance) -> Outcome:
        raise NotImplementedError

    # -- defaults ------------------------------------------------------------------------------
    def prepare(self, instances: Instance) -> Instance:
        """Per-instance work shared by every replication, done once per run by the engine.

        Receives the batch of instances (leading axis) and returns it, possibly as a subclass of
        :class:`Instance` carrying extra leaves (e.g. a design that depends on the instance only)
        that ``init`` / ``step`` then read.  Default: nothing to do.
        """
        return instances

    def split_dynamic(self) -> tuple["Algorithm", dict]:
        """(this configuration with every dynamic field set to None, {field: value}).

        The first part keys the engine's compiled program; the values are passed to it as traced
        arguments and put back with ``dataclasses.replace`` inside the trace.
        """
        # a None value (e.g. ``sigma=None``: the instance's noise) is a structural choice: static
        values = {f: getattr(self, f) for f in self.dynamic_fields if getattr(self, f) is not None}
        if not values:
            return self, values
        return dataclasses.replace(self, **dict.fromkeys(values)), values

    @property
    def top_m(self) -> int:
        """Number of items to return (1 for best-arm identification)."""
        return getattr(self, "m", 1)

    @property
    def correct_by_construction(self) -> bool:
        """True when the returned answer cannot be wrong by design (an oracle that is handed the
        true best item): its error rate is reported as "n/a", never as a meaningless 0."""
        return False

    @property
    def slack(self) -> float:
        """Tolerated suboptimality epsilon of the answer (0: exact identification)."""
        return float(getattr(self, "epsilon", 0.0))

    def validate(self, instance: Instance) -> None:
        """Host-side input checks, run before compiling; raise ``ValueError`` on bad input."""
        validate_instance(instance, need_span=self.needs_span)
        delta = getattr(self, "delta", None)
        if delta is not None and not (0.0 < float(delta) < 1.0):
            raise ValueError(f"delta must be in (0, 1), got {delta}")
        budget = getattr(self, "budget", None)
        if budget is not None and int(budget) <= 0:
            raise ValueError(f"the budget must be positive, got {budget}")
        m = self.top_m
        if not (1 <= m < instance.num_items):
            raise ValueError(f"m must satisfy 1 <= m < M = {instance.num_items}, got m = {m}")
