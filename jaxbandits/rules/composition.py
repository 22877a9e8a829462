"""Algorithms as compositions of rules: ``compose(sampling=..., stopping=..., eliminate=...)``.

One step of a composition (:class:`Composition`), whatever its rules:

1. the sampling rule picks the arm from the current :class:`~jaxbandits.rules.core.Belief` (with
   elimination at sampling, its closest-alternative computations range over the active answers);
2. the arm is pulled and the linear statistics updated;
3. the stopping rule reads the data: estimate, recommended answer, GLR statistic, threshold;
   the algorithm stops when the statistic exceeds the threshold, the rule's preconditions hold and
   the sampling rule's initialisation is over;
4. with elimination (:class:`~jaxbandits.rules.elimination.Elimination`), every answer whose
   evidence exceeds the same threshold is eliminated, and the algorithm also stops when at most one
   answer is left.

Random keys: a sampling rule with ``draws = n > 0`` gets the first n of ``split(key, n + 1)`` and
the pull the last; a deterministic rule (n = 0) leaves the step's key to the pull.  The engine
derives the step's key from (run key, instance, replication, round) only, so results do not depend
on batching.

A composition is an :class:`~jaxbandits.algorithms.base.Algorithm` like any other (``simulate``,
``sweep``, ``calibrate``, ``benchmark``, :class:`~jaxbandits.algorithms.Eliminate`), with the
problem-level hyperparameters ``delta``, ``epsilon`` and ``sigma`` as its own fields (every rule
reads them from :class:`~jaxbandits.rules.core.Context`), and the rules' numeric hyperparameters
traced (a sweep over them compiles once).  The named algorithms that are compositions
(:class:`jaxbandits.algorithms.UniformGLR`, :class:`jaxbandits.algorithms.TopTwo`) subclass
:class:`Composed`: their fields are their papers' options, and :meth:`Composed.rules` says which
composition those options make.

>>> import jaxbandits as jb
>>> from jaxbandits.rules import compose, sampling, stopping
>>> top_two_ts = compose(sampling=sampling.Initial(sampling.TopTwo(leader=sampling.TSLeader())),
...                      stopping=stopping.TransportGLR(threshold="heuristic"), delta=0.05)
"""
from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxbandits.algorithms import common
from jaxbandits.algorithms.base import Algorithm, Outcome, answer_mask, display_name, hyperparameter
from jaxbandits.batching import once_per_replication
from jaxbandits.environment import pull, pull_counts
from jaxbandits.instances.base import Instance
from jaxbandits.rules.core import Belief, Context, SamplingRule, StoppingRule
from jaxbandits.rules.elimination import Elimination


class ComposedState(NamedTuple):
    belief: Belief          # the data and the stopping rule's reading of it after the last pull (the
                            # parts the sampling rule reads, :attr:`SamplingRule.reads`)
    sampling: Any           # the sampling rule's state
    stopped: jax.Array      # the stopping rule fired
    elimination: Any        # EliminationState, or () without elimination

    @property
    def stats(self) -> common.LinearStats:
        return self.belief.stats

    @property
    def t(self) -> jax.Array:
        return self.belief.t


@dataclasses.dataclass(frozen=True)
class Composed(Algorithm):
    """An algorithm that is a composition of rules: a subclass says which in :meth:`rules`, from
    its own fields, and inherits the contract (``init``, ``step``, ``done``, ``outcome``) and the
    elimination protocols (:class:`~jaxbandits.rules.elimination.LinearStatistics`,
    :class:`~jaxbandits.rules.elimination.MaskedSampling`)."""

    supports_padding: ClassVar[bool] = False

    def rules(self) -> "Composition":
        raise NotImplementedError

    def composition(self) -> "Composition":
        """:meth:`rules` under this configuration's ``batching`` policy."""
        comp = self.rules()
        return comp if comp.batching == self.batching else dataclasses.replace(comp, batching=self.batching)

    def validate(self, instance: Instance) -> None:
        Algorithm.validate(self, instance)
        self.composition().validate_rules(instance)

    def init(self, key, instance: Instance) -> ComposedState:
        return self.composition().init(key, instance)

    def step(self, key, state: ComposedState, instance: Instance) -> ComposedState:
        # through step_masked, so that a subclass that overrides it changes every step
        return self.step_masked(key, state, instance, self.composition().active(state, instance))

    def step_masked(self, key, state: ComposedState, instance: Instance, active: jax.Array) -> ComposedState:
        return self.composition().step_masked(key, state, instance, active)

    def holds_in_place(self, instances: Instance) -> bool:
        return self.composition().holds_in_place(instances)

    def step_where(self, key, state: ComposedState, instance: Instance, live: jax.Array) -> ComposedState:
        own = type(self).step is Composed.step and type(self).step_masked is Composed.step_masked
        if not (own and self.holds_in_place(instance)):  # through step, as a subclass may change it
            return Algorithm.step_where(self, key, state, instance, live)
        return self.composition().step_where(key, state, instance, live)

    def done(self, state: ComposedState) -> jax.Array:
        return self.composition().done(state)

    def rounds(self, state: ComposedState, steps: jax.Array) -> jax.Array:
        return self.composition().rounds(state, steps)

    def prepare(self, instances: Instance) -> Instance:
        return self.composition().sampling.prepare(instances)

    def outcome(self, state: ComposedState, instance: Instance) -> Outcome:
        return self.composition().outcome(state, instance)

    def linear_stats(self, state: ComposedState) -> common.LinearStats:
        return state.belief.stats

    def stopping_threshold(self, state: ComposedState, instance: Instance):
        """(sigma^2 beta(t, delta), ready) of the last pull's stopping test."""
        return self.composition().stopping_threshold(state, instance)

    @property
    def slack(self):
        eps = getattr(self.rules(), "epsilon", 0.0)
        return 0.0 if eps is None else eps  # None: the static part of a split

    @property
    def top_m(self) -> int:
        """The size of the answer: the stopping rule's ``m`` (1 unless it identifies a Top-m set)."""
        return int(getattr(self.rules().stopping, "m", 1))


@dataclasses.dataclass(frozen=True)
class Composition(Composed):
    """A sampling rule, a stopping rule and optional elimination, as one algorithm (module
    docstring).  Build one with :func:`compose`.

    Attributes:
      sampling: a :class:`~jaxbandits.rules.core.SamplingRule`.
      stopping: a :class:`~jaxbandits.rules.core.StoppingRule`.
      eliminate: an :class:`~jaxbandits.rules.elimination.Elimination`, or None.
      delta: confidence level.
      epsilon: slack of epsilon-best-answer identification (0: best-arm identification; only
        stopping rules that certify epsilon-best answers accept epsilon > 0).
      sigma: sub-Gaussian noise scale (default: the instance's, :func:`common.noise_scale`).
      name: a label for tables and plots (not part of the configuration's identity).
    """

    sampling: SamplingRule
    stopping: StoppingRule
    eliminate: Elimination | None = None
    delta: float = hyperparameter(0.05, low=0.0, high=1.0, traced=True)
    epsilon: float = hyperparameter(0.0, low=0.0, low_open=False, traced=True)
    sigma: float | None = hyperparameter(None, low=0.0, traced=True)
    name: str = display_name("composition")

    def __post_init__(self):
        for field, kind in (("sampling", SamplingRule), ("stopping", StoppingRule)):
            if not isinstance(getattr(self, field), kind):
                raise TypeError(f"compose: {field} must be a {kind.__name__} (jaxbandits.rules.{field}), got "
                                f"{getattr(self, field)!r}")
        if self.eliminate is not None and not isinstance(self.eliminate, Elimination):
            raise TypeError(f"compose: eliminate must be a jaxbandits.rules.elimination.Elimination or None, got "
                            f"{self.eliminate!r}")

    def rules(self) -> "Composition":
        return self

    def validate_rules(self, instance: Instance) -> None:
        """Host-side checks of the rules and of the problem-level hyperparameters."""
        common.require_linear_rewards(instance, self.name)
        common.check_sigma(self.sigma)
        eps = self.epsilon
        if isinstance(eps, (int, float)):
            if eps < 0:
                raise ValueError(f"epsilon must be >= 0, got {eps}")
            if eps > 0 and not self.stopping.epsilon_good:
                raise ValueError(f"epsilon = {eps} needs a stopping rule that certifies epsilon-best answers; "
                                 f"{type(self.stopping).__name__} identifies the best arm (epsilon = 0)")
            self.stopping.check_epsilon(eps, instance)
        if self.eliminate is not None and self.eliminate.on and (not (eps is None or eps == 0) or self.top_m != 1):
            raise ValueError("elimination covers exact best-arm identification (m = 1, epsilon = 0)")
        self.sampling.check_stopping(self.stopping)
        self.sampling.validate(instance)
        self.stopping.validate(instance)

    # -- pieces --------------------------------------------------------------------------------
    def context(self, instance: Instance, active: jax.Array, stopped=False, live=True) -> Context:
        dt = instance.arms.dtype
        eps = jnp.zeros((), dt) if self.epsilon is None else self.epsilon
        return Context(instance, self.delta, eps, common.noise_scale(self.sigma, instance), active,
                       stopped=stopped, live=live)

    def _eliminating(self) -> bool:
        return self.eliminate is not None and self.eliminate.on

    def _carried(self, belief: Belief) -> Belief:
        """The belief without the parts the sampling rule does not read (not carried to the next
        step: less state per lane)."""
        reads = self.sampling.reads
        return belief._replace(**{f: None for f in ("theta", "chol", "inv") if f not in reads})

    def _ready(self, ready, t, instance: Instance):
        n0 = self.sampling.initial_pulls(instance)
        return (t >= n0) & ready if n0 else ready

    def stopping_threshold(self, state: ComposedState, instance: Instance):
        """(sigma^2 beta(t, delta), ready) of the last pull's stopping test (the elimination
        protocol), ready only once the sampling rule's initialisation is over."""
        ctx = self.context(instance, jnp.ones((instance.num_items,), bool))
        beta, ready = self.stopping.belief_beta(state.belief, ctx)
        return beta, self._ready(ready, state.belief.t, instance)

    def rounds(self, state: ComposedState, steps: jax.Array) -> jax.Array:
        """One round per step, unless the sampling rule may hold (:meth:`SamplingRule.holds`): then
        the rounds played, so that the keys, hence the results, do not depend on the held steps."""
        if self.sampling.holds(state.sampling) is None:
            return steps
        return state.belief.t  # a rule that holds makes no pulls before its first step

    # -- contract ------------------------------------------------------------------------------
    def init(self, key, instance: Instance) -> ComposedState:
        elim = self.eliminate.init(instance) if self._eliminating() else ()
        sampling = self.sampling.init(key, instance)
        ctx = self.context(instance, jnp.ones((instance.num_items,), bool))
        belief = self.stopping.start(key, instance, ctx)
        counts = self.sampling.initial_counts(instance)
        if counts is None:
            return ComposedState(self._carried(belief), sampling, self.stopping.stops_at_start(belief), elim)
        # pulls made all at once before the first step (their rewards from this key), then a decision
        stats = common.add_counts(belief.stats, instance, counts, pull_counts(key, instance, counts))
        t = jnp.sum(counts).astype(belief.t.dtype)
        with once_per_replication():
            dec = self.stopping.advance(belief, stats, t, ctx)
        stopped = dec.ready & (dec.statistic > dec.beta)
        return ComposedState(self._carried(dec.belief), sampling, stopped, elim)

    def active(self, state: ComposedState, instance: Instance) -> jax.Array:
        """[M] the answers the sampling rule's closest-alternative computations range over: the
        active ones under elimination at sampling, else all."""
        if self._eliminating() and self.eliminate.at_sampling:
            return state.elimination.active
        # a host constant: the step's kernels get a literal, where a traced ``jnp.ones`` would be
        # made again every step (a kernel of its own on a GPU)
        return np.ones((instance.num_items,), bool)

    def step(self, key, state: ComposedState, instance: Instance) -> ComposedState:
        return self.step_masked(key, state, instance, self.active(state, instance))

    def step_masked(self, key, state: ComposedState, instance: Instance, active: jax.Array) -> ComposedState:
        return self._step(key, state, instance, active)

    def holds_in_place(self, instances: Instance) -> bool:
        """Whether :meth:`step_where` keeps a held lane's state in place (the sampling rule's
        :meth:`~jaxbandits.rules.core.SamplingRule.in_place`)."""
        return bool(self.sampling.in_place(instances))

    def step_where(self, key, state: ComposedState, instance: Instance, live: jax.Array) -> ComposedState:
        """The step where ``live``, else ``state`` itself.  With a sampling rule that keeps its
        state in place (:meth:`holds_in_place`), no select passes over its arrays or over the
        per-arm counts: the pull of a held lane adds nothing to them (the same bits), and only
        the belief's other parts, the stopping flag and the elimination state are selected."""
        if not self.holds_in_place(instance):
            return super().step_where(key, state, instance, live)
        return self._step(key, state, instance, self.active(state, instance), live)

    def _step(self, key, state: ComposedState, instance: Instance, active: jax.Array, live=None) -> ComposedState:
        ctx = self.context(instance, active, self.done(state), True if live is None else live)
        draws, k_pulls = self.sampling.split_key(key)
        belief = state.belief
        arm, sampling = self.sampling.update(draws, state.sampling, belief, ctx)
        hold = self.sampling.holds(sampling)
        # where the step keeps the lane as it is: the engine holds it, or the rule holds its round
        frozen = None if live is None else (~live if hold is None else ~live | hold)
        p = self.sampling.pulls
        arms = (arm,) if p == 1 else tuple(arm[i] for i in range(p))
        stats, rewards = belief.stats, ()
        for a, k in zip(arms, k_pulls):
            rewards += (pull(k, instance, a),)
            stats = common.add_pull(stats, instance, a, rewards[-1], None if frozen is None else ~frozen)
        t1 = belief.t + p
        dec = self.stopping.advance(belief, stats, t1, ctx, (arm, rewards[0]) if p == 1 else (arms, rewards))
        ready = self._ready(dec.ready, t1, instance)
        stopped = ready & (dec.statistic > dec.beta)
        elim = state.elimination
        if self._eliminating():
            elim = self.eliminate.update(elim, stats, self.stopping.elimination_beta(dec, ctx), ready, instance.items,
                                         self.stopping.reg)
        played = ComposedState(self._carried(dec.belief), sampling, stopped, elim)
        if frozen is not None:
            # the sampling rule kept its state in place; the counts and sums added nothing
            keep = lambda new, old: jax.tree.map(lambda a, b: jnp.where(frozen, b, a), new, old)  # noqa: E731
            kept = keep(played.belief, state.belief)
            new = played.belief.stats
            kept = kept._replace(stats=kept.stats._replace(counts=new.counts, sums=new.sums))
            return ComposedState(kept, sampling, keep(stopped, state.stopped), keep(elim, state.elimination))
        if hold is None:
            return played
        # a held step plays no round: everything but the sampling rule's state stays
        keep = lambda new, old: jax.tree.map(lambda a, b: jnp.where(hold, b, a), new, old)  # noqa: E731
        return ComposedState(keep(played.belief, state.belief), sampling, keep(stopped, state.stopped),
                             keep(elim, state.elimination))

    def done(self, state: ComposedState) -> jax.Array:
        if self._eliminating():
            return state.stopped | state.elimination.stopped
        return state.stopped

    def outcome(self, state: ComposedState, instance: Instance) -> Outcome:
        answer = state.belief.answer
        answer = answer if answer.ndim else answer_mask(answer, instance.num_items)  # Top-m: a mask already
        if self._eliminating():
            own = state.elimination.stopped & ~state.stopped
            answer = jnp.where(own, answer_mask(state.elimination.answer, instance.num_items), answer)
        return Outcome(answer, state.belief.t, state.belief.stats.counts.astype(jnp.int32),
                       self.sampling.converged(state.sampling))


def compose(sampling: SamplingRule, stopping: StoppingRule, *, eliminate: Elimination | None = None,
            delta: float = 0.05, epsilon: float = 0.0, sigma: float | None = None,
            name: str = "composition") -> Composition:
    """The algorithm that samples with ``sampling``, stops with ``stopping`` and, optionally,
    eliminates answers with ``eliminate`` (module docstring): an
    :class:`~jaxbandits.algorithms.base.Algorithm` that ``simulate``, ``sweep``, ``calibrate`` and
    ``benchmark`` take like any other.

    Args:
      sampling: a sampling rule (:mod:`jaxbandits.rules.sampling`, or your own subclass of
        :class:`~jaxbandits.rules.core.SamplingRule`).
      stopping: a stopping rule (:mod:`jaxbandits.rules.stopping`).
      eliminate: :class:`~jaxbandits.rules.elimination.Elimination` (at stopping, at sampling), or None.
      delta: confidence level, in (0, 1).
      epsilon: slack of epsilon-best-answer identification (>= 0).
      sigma: sub-Gaussian noise scale (None: the instance's).
      name: a label for tables and plots.
    """
    return Composition(sampling, stopping, eliminate, delta, epsilon, sigma, name)
