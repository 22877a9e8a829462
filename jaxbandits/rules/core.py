"""The contract of the rules an algorithm is composed of (:func:`jaxbandits.rules.compose`).

A fixed-confidence algorithm of the pure-exploration literature is a sampling rule, a stopping rule
(a GLR statistic against a threshold, with the recommendation it certifies) and, optionally,
elimination (Tirinzoni & Degenne 2022).  Each rule here is a frozen dataclass of its
hyperparameters (hashable, so that it keys a compiled program; its numeric fields listed in
``dynamic_fields`` are traced, so that a sweep over them compiles once: the machinery of
:class:`~jaxbandits.algorithms.base.Configurable`) with pure methods over a NamedTuple state, in
the manner of optax's ``(init, update)`` pairs:

* :class:`SamplingRule`: ``init(key, instance) -> state`` and
  ``update(keys, state, belief, ctx) -> (arm, state)``: the arm to pull next, from what the
  stopping rule made of the data so far (:class:`Belief`).  ``draws`` says how many random keys
  ``update`` takes (0 for a deterministic rule); ``initial_pulls(instance)`` how many pulls its
  initialisation makes, before which the stopping rule is not consulted.
* :class:`StoppingRule`: ``prior(instance) -> Belief`` (before any pull),
  ``decide(stats, t, ctx) -> Decision``: the estimate, the recommended answer, its GLR statistic,
  the threshold and whether the rule's other preconditions hold; and ``beta(stats, t, ctx)``, the
  threshold and preconditions alone.  A sampling rule declares the parts of the belief it
  reads (``reads``), so a composition carries no more state per lane than its rules need.
  ``initial_counts(instance)`` (None by default) says which arms a rule pulls all at once before
  its first step, as the released codes of LinGame and of Tirinzoni & Degenne's experiments do.
  ``holds(state)`` (None by default) says that a step played no round: the rule is still working
  towards its next pull (LT&S's allocation solve spread over steps on an accelerator).
* A stopping rule that keeps something from one pull to the next (the spanning set that seed
  000's rule (8) draws, the item of its last full pass) keeps it in ``Belief.carry`` and
  implements ``start(key, instance)``, ``advance(belief, stats, t, ctx)`` and
  ``belief_beta(belief, ctx)``, which the composition calls (by default ``prior``, ``decide``
  and ``beta``).

What every rule may read, :class:`Context`: the instance, the confidence level, the slack
epsilon, the noise scale and the active answers (all True unless elimination at sampling is on).
"""
from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp

from jaxbandits.algorithms import common
from jaxbandits.algorithms.base import Configurable
from jaxbandits.instances.base import Instance


class Context(NamedTuple):
    """What every rule may read besides its own state.

    Attributes:
      instance: the bandit instance (arms, items, masks).
      delta: the confidence level (a traced scalar inside the engine's program).
      epsilon: the tolerated slack of epsilon-best-answer identification (0: exact).
      sigma: the noise scale, resolved (:func:`jaxbandits.algorithms.common.noise_scale`).
      active: [M] bool, the answers not eliminated (all True without elimination at sampling).
      start: pulls made before a wrapped rule took over (:class:`jaxbandits.rules.sampling.Initial`
        sets it for the rule it hands over to; 0 otherwise).
      stopped: the replication has stopped already (the engine steps a lane that waits for a new
        replication from its final state and discards the result): a rule may skip work that
        only a running replication needs.
      live: False where the engine holds the lane (its replication finished, or it waits for
        one): a sampling rule that keeps its state in place (:meth:`SamplingRule.in_place`) must
        then return its state unchanged, bit for bit.  True outside the engine's lanes.
    """

    instance: Instance
    delta: jax.Array
    epsilon: jax.Array
    sigma: jax.Array
    active: jax.Array
    start: int = 0
    stopped: Any = False
    live: Any = True


class Belief(NamedTuple):
    """The data and what the stopping rule made of it after the last pull.

    Attributes:
      stats: the sufficient statistics (:class:`jaxbandits.algorithms.common.LinearStats`).
      t: pulls so far (int32; a float where a rule's start says so, for more than 2^31 pulls).
      theta: [d] the estimate.
      chol: the Cholesky factor of the (regularised) design matrix, or None where the stopping
        rule works with the inverse.
      inv: the inverse of the (regularised) design matrix, or None where it works with the factor.
      answer: the recommended answer: an int32 item index, or for Top-m a bool mask [M] of the
        m items.
      carry: what a stopping rule keeps from one pull to the next besides the data (``()`` for
        the stateless rules; see :meth:`StoppingRule.advance`).
    """

    stats: common.LinearStats
    t: jax.Array
    theta: jax.Array
    chol: Any
    inv: Any
    answer: jax.Array
    carry: Any = ()

    def inverse(self) -> jax.Array:
        """(A_t + reg I)^-1, from whichever form the stopping rule kept."""
        return self.inv if self.inv is not None else common.inverse_from_cholesky(self.chol)


class Decision(NamedTuple):
    """The stopping rule's reading of the data: stop when ``ready & (statistic > beta)``.

    Attributes:
      belief: the estimate and the recommended answer (:class:`Belief`).
      statistic: the GLR statistic of the answer (unit variance: sigma enters ``beta``).
      beta: sigma^2 beta(t, delta), the threshold in the statistic's units.
      ready: the rule's other preconditions (e.g. lambda_min(A_t) >= c of seed 000's rule (8)).
    """

    belief: Belief
    statistic: jax.Array
    beta: jax.Array
    ready: jax.Array


@dataclasses.dataclass(frozen=True)
class SamplingRule(Configurable):
    """Base class of sampling rules (module docstring).  Subclass as a frozen dataclass."""

    #: random keys ``update`` takes per step (0: deterministic; the pull then uses the step's key)
    draws: ClassVar[int] = 0
    #: arms pulled per step: ``update`` returns one arm, or an array of ``pulls`` arms pulled in
    #: that order (LUCB's pair)
    pulls: ClassVar[int] = 1
    #: the fields of the :class:`Belief` that ``update`` reads besides ``stats``, ``t`` and ``answer``
    #: (of "theta", "chol", "inv"); the composition carries only these from one step to the next
    reads: ClassVar[tuple[str, ...]] = ("theta", "chol", "inv")

    def split_key(self, key: jax.Array) -> tuple[tuple, tuple]:
        """(the keys ``update`` takes, one key per pull) from the step's key: the step's key for
        the pull of a deterministic one-pull rule, else the first ``draws`` and the last ``pulls``
        of ``split(key, draws + pulls)``."""
        n, p = self.draws, self.pulls
        if n == 0 and p == 1:
            return (), (key,)
        keys = jax.random.split(key, n + p)
        return tuple(keys[i] for i in range(n)), tuple(keys[n + i] for i in range(p))

    def init(self, key: jax.Array, instance: Instance) -> Any:
        """The rule's own state before the first pull (default: none)."""
        del key, instance
        return ()

    def update(self, keys: tuple, state: Any, belief: Belief, ctx: Context) -> tuple[jax.Array, Any]:
        """(the arm to pull, the new state)."""
        raise NotImplementedError

    def initial_pulls(self, instance: Instance) -> int:
        """Pulls of the rule's initialisation made one per step (static): the stopping rule is not
        ready before."""
        del instance
        return 0

    def initial_counts(self, instance: Instance) -> jax.Array | None:
        """[K] pulls per arm made all at once before the first step, their rewards drawn together
        (from the key of ``init``), after which the stopping rule decides; None (default): none."""
        del instance
        return None

    def validate(self, instance: Instance) -> None:
        """Host-side checks of the rule against an instance (raise ``ValueError``)."""

    def check_stopping(self, stopping: "StoppingRule") -> None:
        """Host-side check that the rule can read what ``stopping`` puts in the belief (raise
        ``TypeError``); default: any stopping rule."""

    def prepare(self, instances: Instance) -> Instance:
        """Per-instance work shared by every replication, once per run (the contract's
        ``prepare``; the batch of instances in, the instances, possibly with a cache, out)."""
        return instances

    def holds(self, state: Any) -> jax.Array | None:
        """True when the step that produced ``state`` played no round: the rule is still working
        towards its next pull (a solve spread over several steps under the accelerator policy),
        so the arm it returned is not pulled and the data, the belief and the stopping decision
        stay as they were.  None (default): every step plays a round."""
        del state
        return None

    def in_place(self, instance: Instance) -> bool:
        """Whether ``update`` returns its state unchanged, bit for bit, where ``ctx.live`` is False,
        so that the composition need not select a held lane's sampling state (a pass over every
        array of every lane, each step): the rule then writes its large arrays only for the lanes
        that change them, in place (:func:`jaxbandits.design.kernels.gated_kernel`; LT&S), or its
        kernel writes a held lane's old values back into their own buffers
        (:func:`jaxbandits.batching.fused_entries`'s ``alias``; LinGame's game).  Default: False
        (the composition selects)."""
        del instance
        return False

    def converged(self, state: Any) -> jax.Array | None:
        """False when a solver with a fixed trip count that the rule relied on ended before its
        certificate (:attr:`jaxbandits.algorithms.base.Outcome.converged`); None: no such solver."""
        del state
        return None


@dataclasses.dataclass(frozen=True)
class StoppingRule(Configurable):
    """Base class of stopping rules (module docstring).  Subclass as a frozen dataclass."""

    #: the ridge parameter of the estimate (the elimination tests use the same estimate)
    reg: ClassVar[float] = 0.0
    #: whether the rule certifies epsilon-best answers (epsilon > 0)
    epsilon_good: ClassVar[bool] = False

    def prior(self, instance: Instance) -> Belief:
        """The belief before any pull: zero estimate, identity matrices, answer 0."""
        d = instance.dim
        dt = instance.arms.dtype
        return Belief(common.init_stats(instance), jnp.zeros((), jnp.int32), jnp.zeros((d,), dt),
                      jnp.eye(d, dtype=dt), None, jnp.zeros((), jnp.int32))

    def start(self, key: jax.Array, instance: Instance, ctx: Context) -> Belief:
        """The belief before any pull, for a rule that draws something at the start (the key of
        the composition's ``init``) or reads the context; default: :meth:`prior`."""
        del key, ctx
        return self.prior(instance)

    def stops_at_start(self, belief: Belief) -> jax.Array:
        """Whether the rule stops before any pull (a test that its prior data can pass: GIFA's
        tau_LUCB with a large epsilon); default: no."""
        del belief
        return jnp.zeros((), bool)

    def decide(self, stats: common.LinearStats, t: jax.Array, ctx: Context) -> Decision:
        raise NotImplementedError

    def advance(self, belief: Belief, stats: common.LinearStats, t: jax.Array, ctx: Context,
                pulled: tuple[jax.Array, jax.Array] | None = None) -> Decision:
        """The decision after a pull, from the belief before it: what the composition calls.  A
        stateless rule's is :meth:`decide` on the new data (the default); a rule that keeps
        something from one pull to the next in ``Belief.carry`` overrides this instead.
        ``pulled``: (arm, reward) of the pull, or (arms, rewards), two tuples in the order pulled,
        for a sampling rule that pulls several arms a step (``SamplingRule.pulls``); None after the
        pulls made all at once at the start (``SamplingRule.initial_counts``).  For a rule whose
        carry is updated pull by pull (the per-arm sums of squared rewards of an
        empirical-variance test, GIFA's Sherman-Morrison statistics)."""
        del belief, pulled
        return self.decide(stats, t, ctx)

    def belief_beta(self, belief: Belief, ctx: Context) -> tuple[jax.Array, jax.Array]:
        """(sigma^2 beta(t, delta), ready) of ``belief``'s data: :meth:`beta` of its statistics by
        default (a rule with a carry overrides this with :meth:`advance`)."""
        return self.beta(belief.stats, belief.t, ctx)

    def beta(self, stats: common.LinearStats, t: jax.Array, ctx: Context) -> tuple[jax.Array, jax.Array]:
        """(sigma^2 beta(t, delta), ready) alone: what ``decide`` compares the statistic with (the
        elimination protocol's ``stopping_threshold``)."""
        raise NotImplementedError

    def elimination_beta(self, decision: Decision, ctx: Context) -> jax.Array:
        """The threshold elimination compares the unit-variance GLR with, from a decision: its
        ``beta`` (a rule that compares a statistic in other units says how to convert)."""
        del ctx
        return decision.beta

    def validate(self, instance: Instance) -> None:
        """Host-side checks of the rule against an instance (raise ``ValueError``)."""

    def check_epsilon(self, epsilon: float, instance: Instance) -> None:
        """Host-side check of a slack epsilon > 0 against an instance (raise ``ValueError``), for a
        rule with ``epsilon_good`` that certifies epsilon-best answers on some instances only;
        default: none."""
        del epsilon, instance
