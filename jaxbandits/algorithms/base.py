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

Declared, never guessed: the numeric hyperparameters the kernels receive traced
(``dynamic_fields``; floats, except the integer ones listed in ``integer_fields``), the number of
items returned (``top_m``, overridden by the algorithms with an ``m`` field), the tolerated slack
(``slack``, overridden by those with an ``epsilon`` field), and the released-code configuration
(``released_settings``, reached by :meth:`Algorithm.released_code`).  A display ``name`` field is
declared with :func:`display_name` so that it stays out of equality, hashing and so out of the
engine's compile key.  :class:`Wrapper` is the base of algorithms built around another one.
"""
from __future__ import annotations

import dataclasses
import functools
import time
from functools import partial
from typing import Any, ClassVar, NamedTuple, Protocol, runtime_checkable

import jax
import jax.numpy as jnp
import numpy as np

from jaxbandits import batching, programs
from jaxbandits.arguments import check_fields
from jaxbandits.instances.base import Instance, validate_instance


class Outcome(NamedTuple):
    """What a run returns.

    Attributes:
      answer: [M] bool mask of the returned items (exactly ``m`` of them; one for best-arm
        identification).
      samples: total number of pulls used (the stopping time tau, or the budget spent).
      pulls: [K] per-arm pull counts.
      converged: bool scalar, False when a solver or sampler with a fixed trip count that the run
        relied on ended before its certificate (an unfinished binomial draw, a matrix game left
        with a duality gap); None (the default) for algorithms with no such step.  The engine
        reports such replications as ``RESULTS.NOT_CONVERGED``.
    """

    answer: jax.Array
    samples: jax.Array
    pulls: jax.Array
    converged: jax.Array | None = None


@runtime_checkable
class StepsNeeded(Protocol):
    """A fixed-budget algorithm that knows how many engine steps spend its budget on an instance
    (the ``max_steps`` to give :func:`jaxbandits.simulate`): GSE, OD-LinBAI, Peace, BayesGap,
    LinUCB, UCB-GLM, BudgetCapped."""

    def steps_needed(self, instance: Instance) -> int:
        """Engine steps a run takes on ``instance`` (its shapes only: K arms, dimension d)."""


def arms_and_dim(instance: Instance | int, dim: int | None = None) -> tuple[int, int | None]:
    """(K, d) of ``instance`` for :meth:`StepsNeeded.steps_needed`; an int is read as K, with
    ``dim`` as d (the form ``steps_needed(num_arms[, dim])`` of earlier versions)."""
    if isinstance(instance, Instance):
        return instance.num_arms, instance.dim
    return int(instance), (None if dim is None else int(dim))


def answer_mask(index: jax.Array, num_items: int) -> jax.Array:
    """One-hot bool mask [M] of a single returned item."""
    return jnp.arange(num_items) == index


def is_correct(answer: jax.Array, instance: Instance, m: int = 1, epsilon: float = 0.0) -> jax.Array:
    """Whether a returned set of items is (epsilon, m)-correct.

    The answer (a bool mask [M]) must hold exactly ``m`` items, each with value at least the m-th
    largest value minus ``epsilon`` (seed 003 Sec 2; with m = 1, epsilon = 0 it is the exact best
    arm).  Padded items (``instance.item_mask``) are never correct answers and never among the m
    best.  Works on one instance; vmap for batches.
    """
    values = instance.masked_item_values()
    mth = jax.lax.top_k(values, m)[0][m - 1]
    ok_items = jnp.all(jnp.where(answer, values >= mth - epsilon - 1e-12 * jnp.abs(mth), True))
    return ok_items & (jnp.sum(answer) == m)


def display_name(default: str):
    """A ``name`` field (a label for tables and plots): excluded from ``==`` and ``hash``, so two
    configurations that differ only in their names share one compiled program."""
    return dataclasses.field(default=default, compare=False)


class _ReleasedCode:
    """``released_code(**changes)``, one signature on the class and on an instance: on the class,
    the configuration built from :attr:`Algorithm.released_settings` and ``changes``
    (``LazyTrackAndStop.released_code(delta=0.01)``); on an instance, that configuration with the
    released settings and ``changes`` applied (``MLinGapE(2).released_code()``).  A ``name`` field,
    where there is one, gets the suffix " [released code]" unless ``changes`` names it."""

    def __get__(self, obj, cls):
        def released_code(**changes):
            if cls.released_settings is None:
                raise TypeError(f"{cls.__name__} has no released-code configuration (released_settings)")
            settings = {**cls.released_settings, **changes}
            new = cls(**settings) if obj is None else dataclasses.replace(obj, **settings)
            if "name" in {f.name for f in dataclasses.fields(cls)} and "name" not in changes:
                new = dataclasses.replace(new, name=f"{(obj if obj is not None else new).name} [released code]")
            return new

        released_code.__doc__ = _ReleasedCode.__doc__
        return released_code


def under_own_policy(fn):
    """``fn`` (a method of an algorithm) run under the algorithm's own ``policy``: the context
    :func:`jaxbandits.batching.current_policy` reads while it is traced is set from the
    configuration, never inherited from the caller's, so ``init`` and ``step`` are functions of the
    configuration and their arguments alone."""
    @functools.wraps(fn)
    def method(self, *args, **kwargs):
        with batching.policy(self.policy):
            return fn(self, *args, **kwargs)

    method._under_policy = True
    return method


def with_batching(algorithm: "Algorithm", policy) -> "Algorithm":
    """``algorithm`` with ``policy`` as its ``batching``, and so every algorithm held in its fields
    (a wrapper's)."""
    nested = {f.name: with_batching(getattr(algorithm, f.name), policy) for f in dataclasses.fields(algorithm)
              if isinstance(getattr(algorithm, f.name), Algorithm)}
    if algorithm.batching == policy and all(nested[k] is getattr(algorithm, k) for k in nested):
        return algorithm
    return dataclasses.replace(algorithm, batching=policy, **nested)


def concrete(value) -> bool:
    """Whether a field holds a host value that construction-time checks may read: not None (the
    static part of :meth:`Algorithm.split_dynamic`) and not a tracer (the engine's program puts
    traced dynamic fields back with ``dataclasses.replace``, which reruns ``__post_init__``)."""
    return value is not None and not isinstance(value, jax.core.Tracer)


def hyperparameter(default=dataclasses.MISSING, *, low: float | None = None, high: float | None = None,
                   low_open: bool = True, high_open: bool = True, count: int | None = None,
                   pulls: bool = False, traced: bool = False):
    """A dataclass field with its allowed values and its role declared beside it.

    Values: a real in the interval (``low``, ``high``) (closed ends with ``low_open`` /
    ``high_open`` False; no bounds: any finite number); with ``pulls`` also a whole number of
    pulls, at most 2^31 - 1 (a budget); or with ``count`` an integer >= ``count`` (an iteration
    count or a size, static: it shapes the program).  No ``default``: a required field.
    :func:`jaxbandits.arguments.check_fields` reads the declaration, before anything compiles, and
    names the field, its value and the allowed range in its error.

    Role: ``traced`` puts the field in the class's ``dynamic_fields`` (the engine passes it to the
    compiled program as a traced argument, so a sweep over it compiles once; with ``pulls``, as an
    integer, ``integer_fields``).  :class:`Configurable` collects them when the class is defined."""
    if count is not None:
        meta = {"count": int(count)}
    else:
        meta = {"range": {k: v for k, v in dict(low=low, high=high).items() if v is not None}
                | {"low_open": low_open, "high_open": high_open}}
        if pulls:
            meta["pulls"] = True
    if traced:
        if count is not None:
            raise ValueError("a count shapes the program: it cannot be traced")
        meta["traced"] = True
    return dataclasses.field(default=default, metadata=meta)


@dataclasses.dataclass(frozen=True)
class Configurable:
    """A frozen (hashable) dataclass of hyperparameters whose numeric fields the engine traces:
    the base of :class:`Algorithm` and of the rules an algorithm is composed of
    (:mod:`jaxbandits.rules`).

    Class attributes: ``dynamic_fields`` (traced), ``integer_fields`` (traced as integers),
    ``none_traced`` (whose None is traced as NaN); see :class:`Algorithm`.
    """

    dynamic_fields: ClassVar[tuple[str, ...]] = ()
    integer_fields: ClassVar[tuple[str, ...]] = ()
    none_traced: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs):
        """``dynamic_fields`` (and ``integer_fields``): the base class's, and the fields this class
        declares with ``hyperparameter(..., traced=True)`` (with ``pulls``: integers), unless the
        class sets the tuple itself."""
        super().__init_subclass__(**kwargs)
        own = {k: v for k, v in vars(cls).items() if isinstance(v, dataclasses.Field) and v.metadata.get("traced")}
        if own and "dynamic_fields" not in vars(cls):
            cls.dynamic_fields = tuple(dict.fromkeys(cls.dynamic_fields + tuple(own)))
        integer = tuple(k for k, v in own.items() if v.metadata.get("pulls"))
        if integer and "integer_fields" not in vars(cls):
            cls.integer_fields = tuple(dict.fromkeys(cls.integer_fields + integer))

    def split_dynamic(self) -> tuple["Configurable", dict]:
        """(this configuration with every dynamic field set to None, {field: value as an array}).

        The first part keys the engine's compiled program; the values are passed to it as traced
        arguments and put back with :meth:`with_dynamic` inside the trace.  A field whose value
        is None stays in the static part (None is a structural choice, e.g. ``alpha=None``: the
        theoretical width), so its program differs from that of any numeric value; the fields of
        ``none_traced`` are the exception: their None is passed as NaN (``sigma=None`` and
        ``sigma=0.7`` share a program, and the kernels read NaN as "the instance's noise scale"
        through :func:`~jaxbandits.algorithms.common.noise_scale`).  A dynamic field
        not listed in ``integer_fields`` is passed as a float array even when given as an int.  A
        field holding an algorithm (``BudgetCapped.inner``) is split the same way, its values
        nested in a dict.
        """
        static, values = {}, {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, Configurable):  # a wrapped algorithm (BudgetCapped) or a rule: its own fields
                inner_static, inner_values = v.split_dynamic()
                if inner_values:
                    static[f.name], values[f.name] = inner_static, inner_values
            elif f.name in self.dynamic_fields and (v is not None or f.name in self.none_traced):
                v = jnp.asarray(jnp.nan if v is None else v)
                if f.name not in self.integer_fields and not jnp.issubdtype(v.dtype, jnp.floating):
                    v = v.astype(jnp.result_type(float))
                static[f.name], values[f.name] = None, v
        return (dataclasses.replace(self, **static) if static else self), values

    def with_dynamic(self, values: dict) -> "Configurable":
        """This (static) configuration with the dynamic field ``values`` put back (traced values
        inside the engine's program, or inside :func:`jax.jit` for a ``prepare`` helper)."""
        if not values:
            return self

        def back(k, v):
            if isinstance(v, dict):
                return getattr(self, k).with_dynamic(v)
            if (k in self.none_traced and not isinstance(v, jax.core.Tracer) and np.ndim(v) == 0
                    and np.isnan(v)):
                return None  # the host round trip of split_dynamic's NaN (read on the host)
            return v

        put = {k: back(k, v) for k, v in values.items()}
        return dataclasses.replace(self, **put)


@dataclasses.dataclass(frozen=True)
class Algorithm(Configurable):
    """Base class of algorithm configurations (subclass as a frozen dataclass).

    Class attributes a subclass may override:
      needs_span: the arms must span R^d (least-squares based algorithms).
      fixed_budget: the algorithm spends a budget instead of stopping on a confidence level.
      supports_padding: the kernels respect the validity masks of a padded instance
        (:func:`jaxbandits.instances.base.pad_to`): a padded arm is never pulled (zero allocation,
        never tracked, never in forced exploration or a spanning set), a padded item is never a
        candidate, never eliminates another and is never returned, and |Z|, K in thresholds are
        the real counts.  The engine pads instances to shape buckets only for these
        (``simulate(..., buckets=...)``, :func:`jaxbandits.sweep`); tested in
        ``tests/test_buckets.py``.
      dynamic_fields: numeric hyperparameters that the engine passes to the compiled program as
        traced scalars instead of baking them in, so that one executable serves every value (a
        sweep over delta, epsilon, sigma, a budget or a tolerance compiles once).  Every numeric
        field that only enters arithmetic belongs here; fields that size arrays or loops or choose
        code paths stay static.  The kernels use these fields through ``jnp`` operations only
        (never ``float(...)``, ``int(...)``, ``math.log`` or a Python ``if`` on them, never to
        size an array or a loop); ``validate`` runs on the host with the concrete values and may
        read them.  A None value stays static (see :meth:`split_dynamic`), except in the fields
        of ``none_traced``.
      none_traced: the dynamic fields whose None is passed as a traced NaN instead of staying
        static, so that the default and an explicit value share one program: ``sigma``, whose
        None (the instance's noise scale) every kernel resolves with :func:`common.noise_scale`.
      integer_fields: the dynamic fields passed as integers (a budget); every other dynamic field
        is passed as a float array even when given as an int, so ``u=1`` and ``u=1.0`` share a
        program.
      released_settings: the field values of the authors' released code where it departs from the
        paper's text (None: no such configuration); :meth:`released_code` applies them.
      float32_validated: float32 runs (``simulate(..., precision="float32")``) passed two-sample
        tests against float64 on the seed instances (:func:`jaxbandits.precision.float32_validated`;
        declared by the class itself, not inherited).
    """

    needs_span: ClassVar[bool] = True
    fixed_budget: ClassVar[bool] = False
    supports_padding: ClassVar[bool] = False
    #: runs on instances with per-arm noise scales (``Instance.arm_noise``); see :meth:`accepts_arm_noise`
    supports_arm_noise: ClassVar[bool] = False
    dynamic_fields: ClassVar[tuple[str, ...]] = ()
    integer_fields: ClassVar[tuple[str, ...]] = ()
    none_traced: ClassVar[tuple[str, ...]] = ("sigma",)
    released_settings: ClassVar[dict | None] = None
    float32_validated: ClassVar[bool] = False
    released_code = _ReleasedCode()

    #: how the kernels batch their solves and loops (:class:`jaxbandits.batching.SolvePolicy`):
    #: a static, keyword-only field that the engine sets on the configuration it compiles, from the
    #: device and the lanes (:func:`with_batching`); None is the CPU policy.  Not shown in ``repr``
    #: (the store's labels), part of ``==`` and ``hash`` (the compiled program's key).
    batching: Any = dataclasses.field(default=None, kw_only=True, repr=False)

    #: the contract's methods that run under the configuration's own policy
    _UNDER_POLICY: ClassVar[tuple[str, ...]] = ("init", "step", "step_masked", "step_where", "done", "outcome",
                                                "rounds", "prepare")

    def __init_subclass__(cls, **kwargs):
        """The contract's methods a class defines run under its ``batching`` policy
        (:func:`under_own_policy`): its kernels, and the helpers they call
        (:func:`jaxbandits.batching.solve_where`, the reductions, the samplers), see the
        configuration's policy, whatever the caller's context."""
        super().__init_subclass__(**kwargs)
        for name in Algorithm._UNDER_POLICY:
            fn = vars(cls).get(name)
            if callable(fn) and not getattr(fn, "_under_policy", False):
                setattr(cls, name, under_own_policy(fn))

    @property
    def policy(self) -> "batching.SolvePolicy":
        """The policy this configuration's kernels run under (``batching``, else the CPU policy)."""
        return self.batching if self.batching is not None else batching.SolvePolicy()

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
    def step_where(self, key: jax.Array, state: Any, instance: Instance, live: jax.Array) -> Any:
        """``step`` where ``live``, else ``state`` itself, bit for bit: how the engine steps a lane
        that it may hold (a finished replication's, or an idle one), when :meth:`holds_in_place`
        says so.  Default: ``step``, then a select of every array of the state."""
        new = self.step(key, state, instance)
        return jax.tree.map(lambda a, b: jnp.where(live, a, b), new, state)

    def holds_in_place(self, instances: Instance) -> bool:
        """Whether :meth:`step_where` keeps a held lane's state without a select over its arrays
        (their new values written only for the lanes that change them, in place), so that the
        engine steps its lanes with it instead of ``step`` and a select of every array of every
        lane each step.  Default: False."""
        del instances
        return False

    def rounds(self, state: Any, steps: jax.Array) -> jax.Array:
        """The rounds a replication has completed after ``steps`` engine steps: the index the engine
        folds into the replication's run key for its next step, and the count ``max_steps`` caps.
        Default: one round per step.  An algorithm whose step may play no round (LT&S pausing a
        lane while its allocation solve runs, under the accelerator policy) returns its own count,
        so its keys, hence its results, do not depend on how many steps it paused."""
        return steps

    def prepare(self, instances: Instance) -> Instance:
        """Per-instance work shared by every replication, done once per run by the engine.

        Receives the batch of instances (leading axis) and returns it, possibly as a subclass of
        :class:`Instance` carrying extra leaves (e.g. a design that depends on the instance only)
        that ``init`` / ``step`` then read.  Default: nothing to do.
        """
        return instances

    @property
    def top_m(self) -> int:
        """Number of items to return (1 for best-arm identification; Top-m algorithms return
        their ``m`` field)."""
        return 1

    @property
    def correct_by_construction(self) -> bool:
        """True when the returned answer cannot be wrong by design (an oracle that is handed the
        true best item): its error rate is reported as "n/a", never as a meaningless 0."""
        return False

    @property
    def slack(self) -> float | jax.Array:
        """Tolerated suboptimality epsilon of the answer (0: exact identification; algorithms
        with an ``epsilon`` field return it, a traced scalar inside the engine's program when it
        is a dynamic field)."""
        return 0.0

    def validate(self, instance: Instance) -> None:
        """Host-side checks, run before compiling; raise ``ValueError`` on bad input: every
        hyperparameter against the range declared beside its field
        (:func:`jaxbandits.arguments.check_fields`: once per ``simulate`` call), then the algorithm
        against the instance.  A subclass extends it with ``super().validate(instance)``."""
        check_fields(self)
        validate_instance(instance, need_span=self.needs_span)
        m = self.top_m
        M = int(jnp.min(jnp.asarray(instance.true_num_items())))
        if not (1 <= m < M):
            raise ValueError(f"m must satisfy 1 <= m < M = {M}, got m = {m}")
        if instance.is_padded and not self.supports_padding:
            raise ValueError(f"{type(self).__name__} does not support padded instances (supports_padding)")
        if getattr(instance, "arm_noise", None) is not None and not self.accepts_arm_noise():
            raise ValueError(
                f"{type(self).__name__} assumes one known noise scale sigma shared by every arm, but the instance "
                f"has per-arm noise (arm_noise={np.asarray(instance.arm_noise).tolist()!r}); allowed: an instance "
                "with a scalar noise (k_armed(mu, 'gaussian', noise=0.5)), or an algorithm for per-arm variances: "
                "KArmedTrackAndStop / KArmedTopTwo with variances='known' or variances='empirical'")

    def accepts_arm_noise(self) -> bool:
        """Whether the algorithm runs on an instance with per-arm noise scales (``Instance.arm_noise``):
        its ``supports_arm_noise`` (False: it assumes one known sigma shared by every arm), or for a
        composition of rules (``composition()``), whether its sampling and stopping rules both
        declare ``supports_arm_noise`` (through wrappers that hand over to ``then``) and it
        eliminates nothing."""
        if self.supports_arm_noise:
            return True
        if not callable(getattr(self, "composition", None)):
            return False
        comp = self.composition()
        if getattr(comp, "eliminate", None) is not None:
            return False
        return _rule_accepts_arm_noise(comp.sampling) and _rule_accepts_arm_noise(comp.stopping)


def _rule_accepts_arm_noise(rule) -> bool:
    if getattr(rule, "supports_arm_noise", False):
        return True
    inner = getattr(rule, "then", None)
    return inner is not None and _rule_accepts_arm_noise(inner)


@dataclasses.dataclass(frozen=True)
class Wrapper(Algorithm):
    """An algorithm built around another one, :attr:`wrapped` (the field named by
    ``wrapped_field``).  Everything is forwarded to it by default: ``init``, ``step``, ``done``,
    ``outcome`` (the state is the wrapped algorithm's), ``prepare``, ``validate``, ``top_m``,
    ``slack``, ``correct_by_construction``, and the optional protocol methods named in
    ``forwarded`` (``stopping_threshold``, ``linear_stats``, ``step_masked``, ``delta``), present
    exactly when the wrapped algorithm has them.  A subclass overrides what it changes; a wrapper
    with a state of its own (:class:`~jaxbandits.algorithms.fixed_confidence.elimination_rules.Eliminate`)
    overrides the four contract methods.  The wrapped configuration's dynamic fields are traced
    like the wrapper's own (:meth:`Algorithm.split_dynamic`)."""

    wrapped_field: ClassVar[str] = "inner"
    forwarded: ClassVar[tuple[str, ...]] = ("stopping_threshold", "linear_stats", "step_masked", "delta")

    @property
    def wrapped(self) -> Algorithm:
        return getattr(self, self.wrapped_field)

    def __getattr__(self, name: str):
        # only reached for attributes the wrapper lacks; the field itself is never forwarded
        if name in type(self).forwarded and name != type(self).wrapped_field:
            return getattr(getattr(self, type(self).wrapped_field), name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def init(self, key: jax.Array, instance: Instance) -> Any:
        return self.wrapped.init(key, instance)

    def step(self, key: jax.Array, state: Any, instance: Instance) -> Any:
        return self.wrapped.step(key, state, instance)

    def done(self, state: Any) -> jax.Array:
        return self.wrapped.done(state)

    def rounds(self, state: Any, steps: jax.Array) -> jax.Array:
        return self.wrapped.rounds(state, steps)

    def outcome(self, state: Any, instance: Instance) -> Outcome:
        return self.wrapped.outcome(state, instance)

    def prepare(self, instances: Instance) -> Instance:
        return self.wrapped.prepare(instances)

    def validate(self, instance: Instance) -> None:
        check_fields(self)  # the wrapper's own fields; the wrapped algorithm's in its validate
        self.wrapped.validate(instance)

    @property
    def top_m(self) -> int:
        return self.wrapped.top_m

    @property
    def slack(self) -> float | jax.Array:
        return self.wrapped.slack

    @property
    def correct_by_construction(self) -> bool:
        return self.wrapped.correct_by_construction


# -- per-instance work done once per run (``prepare``) ---------------------------------------
@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class CachedInstance(Instance):
    """An :class:`Instance` carrying ``cache``: per-instance quantities computed once by
    :meth:`Algorithm.prepare` (e.g. the first round's design, which every replication shares)."""

    cache: Any = None


def with_cache(instances: Instance, cache) -> CachedInstance:
    """``instances`` with the pytree ``cache`` attached (leading batch axis like the instances)."""
    fields = {f.name: getattr(instances, f.name) for f in dataclasses.fields(Instance)}
    return CachedInstance(**fields, cache=cache)


def instance_cache(instance: Instance):
    """The cache attached by :func:`with_cache`, or None."""
    return getattr(instance, "cache", None)


def map_instances(obj, method: str, instances: Instance):
    """``obj.method(instance)`` for every instance of a batch, one after the other (``lax.map``,
    compiled once per equal static configuration: ``obj``'s dynamic fields are traced arguments, as
    in the engine, so a delta sweep solves its designs with one program): design solves under
    ``vmap`` would run every instance to the slowest one's iteration count.

    The program is compiled ahead of time, kept in :data:`jaxbandits.programs.PREPARED` and its
    compile time added to ``programs.PREPARE_COMPILE_SECONDS``, so that :func:`jaxbandits.engine.simulate` counts it as
    compilation, not as run time (called under a trace, it is simply traced inline)."""
    static, dynamic = obj.split_dynamic()
    if any(isinstance(a, jax.core.Tracer) for a in jax.tree.leaves((dynamic, instances))):
        return _mapped(static, method, dynamic, instances)
    sig = (static, method, jax.tree.structure((dynamic, instances)),
           tuple((a.shape, a.dtype) for a in jax.tree.leaves((dynamic, instances))))
    fn = programs.PREPARED.get(sig)
    if fn is None:
        programs.release_if_high()  # as the engine does before its compilations
        t0 = time.perf_counter()
        fn = programs.compile_interruptibly(_mapped.lower(static, method, dynamic, instances))
        programs.PREPARE_COMPILE_SECONDS[0] += time.perf_counter() - t0
        programs.PREPARED[sig] = fn
    return fn(dynamic, instances)


@partial(jax.jit, static_argnums=(0, 1))
def _mapped(static, method, dynamic, instances):
    return jax.lax.map(getattr(static.with_dynamic(dynamic), method), instances)
