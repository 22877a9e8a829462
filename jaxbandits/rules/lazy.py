"""The two rules of Lazy Track-and-Stop (seed 000, Jedra & Proutiere, NeurIPS 2020, Algorithm 1).

* :class:`SpanningGLR`, the stopping rule (8) of Sec 3.4: stop when lambda_min(A_t) >= c and
  Z(t) > beta(delta_t, t), with Z(t) the GLR statistic of Lemma 7 over the items and beta the
  threshold of Prop 2 / eq. (9).  Its constant c = c_{A_0} sqrt(d) comes from A_0, the spanning set
  of forced exploration (Lemma 5), which this rule draws at the start and keeps in its carry
  (:attr:`jaxbandits.rules.core.Belief.carry`), with lambda_min(A_t) and, in the released code's
  form, A_0's Gram matrix as a ridge prior.
* :class:`LazyTracking`, the sampling rule: forced exploration of A_0 while
  lambda_min(A_t) < c_{A_0} sqrt(t) (Lemma 5), else tracking (eq. (6)) of the allocation w(t),
  which is the plug-in optimal allocation argmax_w psi(mu_hat_t, w) (eq. (1)-(2)) updated lazily
  (Sec 3.3, eq. (7), (10)) at the rounds of an update set T.

The two are written for each other (the sampling rule reads A_0 and lambda_min(A_t) from the
stopping rule's carry) and :class:`jaxbandits.algorithms.LazyTrackAndStop` composes them; the
module docstring of :mod:`jaxbandits.algorithms.fixed_confidence.track_and_stop` says what each
option of the paper and of the released code changes.

Order within a step.  The allocation update after round t (w(t) from mu_hat_t) is made at the
start of the next step, before the tracking rule reads w(t): the same allocation, solved from the
same estimate, as an update made at the end of round t.  Under the accelerator policy
(``batched=True``) with the released code's Frank-Wolfe, a lane whose update is due runs
``pause_trips`` iterations per step and plays no round until the run ends
(:meth:`LazyTracking.holds`): no step waits for the slowest solve of the lanes; the pulls, the
stopping time and the answer are those of the whole solve in one step (the keys follow the rounds
played, :meth:`jaxbandits.rules.composition.Composition.rounds`).
"""
from __future__ import annotations

import dataclasses
import math
from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp

from jaxbandits.algorithms import common
from jaxbandits.algorithms.base import hyperparameter
from jaxbandits.batching import KERNELS, current_policy, solve_where
from jaxbandits.design import app_f, oracle_allocation
from jaxbandits.design import kernels as kern
from jaxbandits.design.app_f import paper_frank_wolfe
from jaxbandits.instances.base import Instance
from jaxbandits.rules import thresholds
from jaxbandits.rules.core import Belief, Context, Decision, SamplingRule, StoppingRule

SCHEDULES = ("exponential", "periodic", "every")
METHODS = ("smooth", "paper")


def plug_in_allocation(X, Z, theta, init, *, method: str, tol: float, max_iters: int, arm_mask=None,
                       item_mask=None, fixed_trips: bool | None = None):
    """w = argmax_w psi(theta, w) (seed 000 eq. (1)-(2); seed 001 eq. (1)): the oracle allocation of
    the plug-in parameter.

    ``item_mask`` ([M] bool, None = all): the min over z != z* in psi ranges over the masked items
    only (elimination at sampling, Tirinzoni & Degenne Sec 4; z* must be masked in).

    ``method="smooth"``: the project's certified smoothed Frank-Wolfe
    (:func:`jaxbandits.design.oracle_allocation`, stops at relative duality gap ``tol``).
    ``method="paper"``: the Frank-Wolfe of the released code (step 2 / (k + 2), relative change
    < 0.01, weights < 1e-5 dropped; seed 001 App F, seed 000 App A.3), run by
    :func:`~jaxbandits.design.app_f.paper_frank_wolfe`, which gives the iterates of
    ``oracle_allocation(..., method="paper")`` at a fraction of the cost per iteration (tested for
    parity).  ``arm_mask`` / ``item_mask``: the real arms and items of a padded instance (None: all).
    ``fixed_trips`` (None: True under the accelerator policy, :func:`jaxbandits.batching.
    current_policy`): the solver's loops with trip counts known at compile time, the same result
    (``"smooth"``: ``max_iters`` rounded up to whole chunks of 48 iterations; ``"paper"``:
    :func:`~jaxbandits.design.app_f.paper_frank_wolfe`).
    """
    fixed = current_policy().batched if fixed_trips is None else bool(fixed_trips)
    if method == "paper":
        return paper_frank_wolfe(X, Z, theta, init, max_iters, arm_mask, item_mask, fixed_trips=fixed)
    return oracle_allocation(X, Z, theta, init=init, tol=tol, max_iters=max_iters, method=method,
                             arm_mask=arm_mask, item_mask=item_mask,
                             fixed_trips=int(max_iters) if fixed else None).allocation


# ------------------------------------------------------------------------------------------------
# the stopping rule
# ------------------------------------------------------------------------------------------------
class SpanningCarry(NamedTuple):
    """What :class:`SpanningGLR` keeps from one pull to the next (``Belief.carry``)."""

    forced_arms: jax.Array  # A_0 [d]
    c0: jax.Array           # c_{A_0} = lambda_min(sum_{a in A_0} a a^T) / sqrt(d)
    prior: jax.Array        # sum_{a in A_0} a a^T with ``a0_prior`` (released code), else zeros [d, d]
    lmin: jax.Array         # lambda_min(A_t) (with the prior, if any)
    near: jax.Array         # the item b of the last min_b Z_{best,b}(t) computed in full


@dataclasses.dataclass(frozen=True)
class SpanningGLR(StoppingRule):
    """Seed 000's stopping rule (8): stop when lambda_min(A_t) >= c and Z(t) > beta(delta_t, t).

    Z(t) is Lemma 7's GLR statistic over the items, for the unit-variance likelihood (sigma enters
    the threshold only); the decision rule returns argmax_z z^T mu_hat_t.  The Sec 5 choices:
    c = c_{A_0} sqrt(d), u = 1, delta_t = 6 delta / (pi^2 t^2).

    Attributes:
      a0_prior: add A_0's Gram matrix to A_t as a reward-free prior (the released code): it enters
        mu_hat, lambda_min(A_t) and the threshold's det; Z(t) keeps the count-only A_t^{-1}, and the
        condition lambda_min(A_t) >= c (always true with the prior) becomes t >= d.
      u: the constant u of Prop 2 (Sec 5: 1; the released code: 0.1).
      anytime: beta(6 delta / (pi^2 t^2), t) (Sec 5) instead of beta(delta, t) (the code).
      threshold: ``"prop2"`` (Prop 2 / eq. (9)) or ``"log_t"`` (sigma^2 log((t + 1) / delta),
        Tirinzoni & Degenne 2022's experiments; not proven delta-correct).
      batched: the accelerator program: the full pass over the items every round (no branch,
        whose predicate would cost a host round trip per step).  False (the CPU program): where
        Z_{best,b}(t) of the last minimiser b is at most beta, which bounds the min from above,
        the round cannot stop and the pass runs only for the lanes that might
        (:func:`jaxbandits.batching.solve_where`); the same stops.
    """

    a0_prior: bool = False
    u: float = hyperparameter(1.0, low=0.0, traced=True)
    anytime: bool = True
    threshold: str = "prop2"
    batched: bool = False

    def __post_init__(self):
        thresholds.resolve("track_and_stop", self.threshold)

    def start(self, key: jax.Array, instance: Instance, ctx: Context) -> Belief:
        """A_0 drawn at random among the spanning sets (Sec 5, "A_0 is chosen at random"), zero
        data, answer 0."""
        del ctx
        X = instance.arms
        K, d = X.shape
        A0 = common.random_spanning_set(key, X, arm_mask=instance.arm_mask)
        XA = X[A0]
        G0 = XA.T @ XA
        c0 = common.lambda_min(G0) / math.sqrt(d)
        i32 = lambda v: jnp.asarray(v, jnp.int32)
        carry = SpanningCarry(A0, c0, G0 if self.a0_prior else jnp.zeros((d, d), X.dtype),
                              common.lambda_min(G0) if self.a0_prior else jnp.zeros((), X.dtype), i32(0))
        # per-arm reward sums are not kept ([0]): a [K] array less to carry, select and write per step
        stats = common.init_stats(instance)._replace(sums=jnp.zeros((0,), X.dtype))
        return Belief(stats, i32(0), jnp.zeros((d,), X.dtype), None, None, i32(0), carry)

    def prior(self, instance: Instance) -> Belief:
        raise TypeError("SpanningGLR draws its spanning set A_0 at the start: use start(key, instance)")

    def _threshold(self, gram, t, c0, ctx: Context):
        d = gram.shape[0]
        sigma = ctx.sigma
        if thresholds.resolve("track_and_stop", self.threshold) == "log_t":  # Tirinzoni & Degenne 2022
            return sigma**2 * thresholds.log_t(t.astype(gram.dtype), ctx.delta)
        dl = (thresholds.anytime_delta(ctx.delta, t.astype(gram.dtype)) if self.anytime
              else jnp.asarray(ctx.delta, gram.dtype))
        # sigma enters here only: beta(delta, t) = (1 + u) sigma^2 log(...) of Prop 2 / eq. (9)
        return thresholds.prop2_small(gram, dl, sigma, c0 * math.sqrt(d), self.u)

    def _ready(self, lmin, t, c0, d):
        ready = lmin >= c0 * math.sqrt(d) * (1.0 - 1e-9)
        if self.a0_prior:  # the code's ``t >= d`` (lambda_min >= c holds from the start)
            ready = ready & (t >= d)
        return ready

    def belief_beta(self, belief: Belief, ctx: Context):
        """(beta, ready) of rule (8) for the belief's data: beta(delta_t, t) of Prop 2 / eq. (9)
        (with the prior's det under ``a0_prior``) and ready = lambda_min(A_t) >= c."""
        carry = belief.carry
        gram = belief.stats.gram + carry.prior if self.a0_prior else belief.stats.gram
        d = gram.shape[0]
        return self._threshold(gram, belief.t, carry.c0, ctx), self._ready(carry.lmin, belief.t, carry.c0, d)

    def advance(self, belief: Belief, stats: common.LinearStats, t: jax.Array, ctx: Context,
                pulled=None) -> Decision:
        del pulled  # the statistics say all this rule needs
        instance = ctx.instance
        Z = instance.items
        d = instance.arms.shape[1]
        carry = belief.carry
        Ainv = common.inverse_gram(stats.gram)
        if self.a0_prior:
            # released code: A_t = prior + sum_s a_s a_s^T in mu_hat, lambda_min and the threshold;
            # Z(t) from the count-only A_t (its ``allocation`` design)
            gram = stats.gram + carry.prior
            theta = common.inverse_gram(gram) @ stats.b
        else:
            gram = stats.gram
            theta = Ainv @ stats.b
        # Lemma 7: no sigma (unit-variance likelihood)
        values, top, best = common.empirical_best(theta, Z, instance.item_mask)
        lmin = common.lambda_min_small(gram)
        beta = self._threshold(gram, t, carry.c0, ctx)
        ready = self._ready(lmin, t, carry.c0, d)
        # a stopped replication skips the pass: the engine steps the lanes that wait for one from
        # their final state and discards the result
        stat, near = self._statistic(Ainv, Z, instance.item_mask, values, top, best, beta, ready & ~ctx.stopped,
                                     carry.near)
        return Decision(Belief(stats, t, theta, None, None, best.astype(jnp.int32),
                               carry._replace(lmin=lmin, near=near)), stat, beta, ready)

    def _statistic(self, Ainv, Z, item_mask, values, top, best, beta, check, near):
        """(min_b Z_{best,b}(t), or an upper bound of it that is at most beta; the item b reaching
        the min the last time it was computed in full).

        Any one item b bounds the min from above, so where Z_{best,b}(t) of the last minimiser is
        at most beta (less a relative 1e-12, against rounding) the round cannot stop and the pass
        over every item is skipped: under the CPU program it runs (:func:`solve_where`) only for
        the lanes that are ready and whose bound exceeds beta, near the stopping time (at K = 1000,
        that pass was a fifth of a round).  The stops are those of the full pass in every round.
        Under the accelerator program every lane runs the full pass.  ``check`` False for a
        replication that has stopped (it stays stopped): the lanes that wait for a replication
        ran the pass in every step otherwise (48.8 passes per replication of the released code's
        configuration at K = 1000, 96 replications on 16 lanes, against 2.7 without them)."""
        zb = Z[best]
        if self.batched:
            return jnp.min(common.glr_pair_statistics(Ainv, Z, values, top, zb, item_mask)), near
        row = lambda a: None if a is None else a[near][None]
        zc = common.glr_pair_statistics(Ainv, row(Z), row(values), top, zb, row(item_mask))[0]
        check = check & ~(zc <= beta - 1e-12 * jnp.abs(beta))

        def full(Ainv, Z, values, top, zb, item_mask):  # no closed-over tracers (custom_vmap)
            r = common.glr_pair_statistics(Ainv, Z, values, top, zb, item_mask)
            neg, first = common.max_argmax(-r)  # the min and the first minimiser
            return -neg, first.astype(near.dtype)

        low, near = solve_where(check, full, (Ainv, Z, values, top, zb, item_mask), (zc, near))
        return jnp.where(check, low, zc), near


# ------------------------------------------------------------------------------------------------
# the sampling rule
# ------------------------------------------------------------------------------------------------
class FWCarry(NamedTuple):
    """The released code's Frank-Wolfe (:func:`~jaxbandits.design.app_f.paper_frank_wolfe`) between
    two steps of a lane held for its allocation update (:meth:`LazyTracking.holds`).  Outside such
    a run ``on`` is False and the rest is unused; ``v`` has K entries where the rule holds and
    none otherwise."""
    v: jax.Array            # raw weights [K] (lambda = c v)
    c: jax.Array
    n2: jax.Array           # ||lambda||^2
    A: jax.Array            # A(lambda) [d, d]
    Ainv: jax.Array
    k: jax.Array            # iterations run
    rel: jax.Array          # last relative change of lambda
    on: jax.Array           # a run is in progress: the lane plays no round


class LazyTrackingState(NamedTuple):
    w: jax.Array            # current allocation w(t) [K]
    cum_base: jax.Array     # sum_{s <= t_base} w(s) [K]: tracked by averaging; without averaging a diagnostic
                            # the CPU program keeps and the accelerator program does not ([0])
    t_base: jax.Array       # round of the last allocation change minus one: for t >= t_base,
                            # sum_{s <= t} w(s) = cum_base + (t - t_base) w(t)
    i0: jax.Array           # forced-exploration pointer into A_0
    next_update: jax.Array  # next round in the lazy update set T
    n_forced: jax.Array     # diagnostics: forced rounds, allocation updates,
    n_updates: jax.Array
    w_shift: jax.Array      # sum over the updates after the first of ||w(t) - w(t - 1)||_1
    solve: FWCarry          # a Frank-Wolfe run carried across steps (:meth:`LazyTracking.holds`)


@dataclasses.dataclass(frozen=True)
class LazyTracking(SamplingRule):
    """Seed 000's sampling rule: forced exploration (Lemma 5), tracking (eq. (6)) and lazy updates
    of the plug-in allocation (Sec 3.3), for :class:`SpanningGLR`'s carry (module docstring).

    * Forced exploration: c_{A_0} = lambda_min(sum_{a in A_0} a a^T) / sqrt(d), f(t) = c_{A_0}
      sqrt(t): if lambda_min(A_t) < f(t), pull a_0(i) and advance i cyclically (f at max(t, 1), so
      the first d rounds are A_0).
    * Tracking: ``averaging=True`` pulls argmin_{b in supp(sum_s w(s))} N_b(t) - sum_{s <= t}
      w_b(s) (Algorithm 1); ``averaging=False`` (Sec 5's "no averaging") argmin_{b in supp(w(t))}
      N_b(t) - t w_b(t).
    * Lazy updates: after round t in T, w(t) = argmax_w psi(mu_hat_t, w)
      (:func:`plug_in_allocation`, warm-started from w(t - 1) with ``warm_start``), else
      w(t) = w(t - 1); w(0) uniform.  ``schedule``: ``"exponential"`` T = {t_0, f t_0, f^2 t_0,
      ...} (f = ``factor``; Sec 5: T = {2^k}), ``"periodic"`` T = {t_0 + k P} (Sec 3.5 (i)),
      ``"every"``; t_0 = ``first_update`` (None: d).  A failed solve keeps the previous allocation.

    Attributes: the fields of the same names of :class:`jaxbandits.algorithms.LazyTrackAndStop`;
    ``batched`` is the accelerator program (the solver's loops with fixed trips, and with
    ``method="paper"`` the lane held ``pause_trips`` iterations per step while it solves).
    """

    reads: ClassVar[tuple[str, ...]] = ("theta",)
    averaging: bool = True
    schedule: str = "exponential"
    factor: float = hyperparameter(2.0, traced=True)
    period: int = hyperparameter(10, count=1)
    first_update: int | None = hyperparameter(None, count=1)
    method: str = "paper"
    tol: float = hyperparameter(1e-3, low=0.0, traced=True)
    max_iters: int = hyperparameter(1000, count=1)
    warm_start: bool = True
    solve_capacity: int | None = hyperparameter(None, count=1)
    pause_trips: int = hyperparameter(8, count=1)
    batched: bool = False
    kernels: str = "xla"

    def __post_init__(self):
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {self.schedule!r}")
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if self.schedule == "exponential" and isinstance(self.factor, (int, float)) and not self.factor > 1.0:
            raise ValueError(f"the exponential schedule needs factor > 1, got {self.factor}")
        if self.schedule == "periodic" and int(self.period) < 1:
            raise ValueError(f"period must be >= 1, got {self.period}")
        trips = self.pause_trips
        if not (isinstance(trips, int) and not isinstance(trips, bool) and trips >= 1
                and (app_f.REFACTOR % trips == 0 or trips % app_f.REFACTOR == 0)):
            raise ValueError(f"pause_trips must be a positive divisor or multiple of {app_f.REFACTOR}, got {trips!r}")
        if self.kernels not in KERNELS:
            raise ValueError(f"kernels must be one of {KERNELS}, got {self.kernels!r}")

    def pauses(self) -> bool:
        """Whether a lane is held for its allocation update (``pause_trips`` Frank-Wolfe iterations
        per step, no round played until the run ends) instead of running the whole solve in one
        step: the released code's Frank-Wolfe in the accelerator program, where a step costs its
        kernel launches and a whole solve would make every lane's step wait for the slowest of
        the lanes that solve in it."""
        return self.method == "paper" and self.batched

    def _next(self, t):
        if self.schedule == "exponential":
            return jnp.maximum(jnp.ceil(self.factor * t).astype(t.dtype), t + 1)
        if self.schedule == "periodic":
            return t + int(self.period)
        return t + 1

    def _solve(self, X, Z, theta, init, arm_mask=None, item_mask=None):
        return plug_in_allocation(X, Z, theta, init if self.warm_start else None,
                                  method=self.method, tol=self.tol, max_iters=self.max_iters,
                                  arm_mask=arm_mask, item_mask=item_mask, fixed_trips=self.batched)

    def init(self, key, instance: Instance) -> LazyTrackingState:
        del key  # A_0 is the stopping rule's draw
        X = instance.arms
        K, d = X.shape
        first = d if self.first_update is None else int(self.first_update)
        i32 = lambda v: jnp.asarray(v, jnp.int32)  # noqa: E731
        z = jnp.zeros((), X.dtype)
        w = instance.valid_arms().astype(X.dtype) / instance.true_num_arms()
        # in place (:meth:`in_place`): the arrays the update kernel writes are held padded to powers of two
        n, m = (kern.power_of_two(K), kern.power_of_two(d)) if self.in_place(instance) else (K, d)
        return LazyTrackingState(
            w=jnp.pad(w, (0, n - K)),
            cum_base=jnp.zeros((n if self.keeps_sum() else 0,), X.dtype),
            t_base=i32(0), i0=i32(0), next_update=i32(max(first, 1)), n_forced=i32(0), n_updates=i32(0), w_shift=z,
            solve=FWCarry(jnp.zeros((n if self.pauses() else 0,), X.dtype), jnp.ones((), X.dtype), z,
                          jnp.zeros((m, m), X.dtype), jnp.zeros((m, m), X.dtype), i32(0), z, jnp.zeros((), bool)))

    def in_place(self, instance: Instance) -> bool:
        """Whether the state stays in place (:meth:`jaxbandits.rules.core.SamplingRule.in_place`):
        with the held update (:meth:`pauses`) run as a fused kernel (``kernels`` not "xla", d <=
        :data:`jaxbandits.design.core.SMALL_DIM`), which then also starts the run and sets the new
        allocation (:func:`jaxbandits.design.app_f.paused_update_in_place`) for the lanes that
        solve only.  The state then holds w, the sum of the allocations and the run's weights
        padded to a power of two above K (zeros) and A(lambda), A(lambda)^-1 padded likewise above d."""
        return self.pauses() and self.kernels != "xla" and app_f.fused_trips_supported(instance.arms.shape[-1])

    def keeps_sum(self) -> bool:
        """Whether the state keeps sum_{s <= t} w(s) (``cum_base``): the tracking target with
        ``averaging``; without it a diagnostic
        (:meth:`jaxbandits.algorithms.LazyTrackAndStop.cumulative_allocation`), which the
        accelerator program drops: a [K] array less per lane to read, select and write each step
        (K = 1,000: 8 KB a lane)."""
        return bool(self.averaging or not self.batched)

    def check_stopping(self, stopping: StoppingRule) -> None:
        if not isinstance(stopping, SpanningGLR):
            raise TypeError(f"LazyTracking reads the spanning set A_0 and lambda_min(A_t) that SpanningGLR keeps in "
                            f"the belief: compose it with jaxbandits.rules.lazy.SpanningGLR, got {type(stopping).__name__}")

    def holds(self, state: LazyTrackingState):
        return state.solve.on if self.pauses() else None

    def update(self, keys, state: LazyTrackingState, belief: Belief, ctx: Context):
        instance = ctx.instance
        X, Z = instance.arms, instance.items
        d = X.shape[1]
        dtype = X.dtype
        carry = belief.carry
        t = belief.t
        due = t == state.next_update
        upd = due & ~ctx.stopped
        in_place = self.in_place(instance)
        if in_place:  # a lane the engine holds starts nothing (and must stay as it is)
            upd = upd & ctx.live
        next_update = jnp.where(due, self._next(t), state.next_update)
        item_mask = ctx.active | (jnp.arange(Z.shape[0]) == belief.answer)  # elimination at sampling
        if instance.item_mask is not None:  # padded items of a shape bucket
            item_mask = item_mask & instance.item_mask
        masks = (instance.arm_mask, item_mask)
        if in_place:
            w, cum_base, t_base, w_shift, solve = self._paused_update_in_place(state, instance, belief, upd, ctx)
            hold = solve.on
        elif self.pauses():
            w, cum_base, t_base, w_shift, solve = self._paused_update(state, instance, belief, upd, masks)
            hold = solve.on
        else:
            def update(X, Z, theta, w, base, tb, t, shift, nu, masks):  # no closed-over tracers (custom_vmap)
                new = self._solve(X, Z, theta, w, *masks)
                # a failed solve (non-finite, e.g. mu_hat = 0) keeps the previous allocation
                new = jnp.where(jnp.all(jnp.isfinite(new)) & (jnp.sum(new) > 0), new, w)
                # sum_{s <= t - 1} w(s) with the old w, then w(t) = new (both variants: diagnostic)
                base = base + (t - 1 - tb).astype(dtype) * w if base.shape[0] else base
                tb = t - 1
                shift = shift + jnp.where(nu > 0, jnp.sum(jnp.abs(new - w)), 0.0)
                return new, base, tb, shift

            w, cum_base, t_base, w_shift = solve_where(
                upd, update, (X, Z, belief.theta, state.w, state.cum_base, state.t_base, t, state.w_shift,
                              state.n_updates, masks),
                (state.w, state.cum_base, state.t_base, state.w_shift), self.solve_capacity)
            solve, hold = state.solve, None

        tf = t.astype(dtype)
        # forced exploration (Lemma 5): f evaluated at max(t, 1); relative slack so that
        # lambda_min(A_d) = c_{A0} sqrt(d) after the d first (forced) rounds counts as reached.
        f = carry.c0 * jnp.sqrt(jnp.maximum(tf, 1.0))
        forced = carry.lmin < f * (1.0 - 1e-9)
        counts = belief.stats.counts
        K = counts.shape[0]
        wk = w[:K]  # held padded in place
        if self.averaging:
            # sum_{s <= t} w(s), from the value at the last allocation change (w is constant
            # between lazy updates): no O(K) write per round
            cum_w = cum_base[:K] + (tf - t_base.astype(dtype)) * wk
            track = counts - cum_w
            supp = cum_w > 0
        else:
            track = counts - tf * wk
            supp = wk > 0
        tracked = common.argmax_fast(jnp.where(supp, -track, -jnp.inf))
        arm = jnp.where(forced, carry.forced_arms[state.i0], tracked)
        i0 = jnp.where(forced, (state.i0 + 1) % d, state.i0)
        n_forced = state.n_forced + forced.astype(jnp.int32)
        if hold is not None:  # a held step plays no round
            i0, n_forced = jnp.where(hold, state.i0, i0), jnp.where(hold, state.n_forced, n_forced)
        if in_place:  # a lane the engine holds stays as it is (the kernel left its arrays alone)
            keep = lambda new, old: jnp.where(ctx.live, new, old)  # noqa: E731
            i0, n_forced, next_update = keep(i0, state.i0), keep(n_forced, state.n_forced), keep(next_update,
                                                                                                 state.next_update)
        return arm, LazyTrackingState(w, cum_base, t_base, i0, next_update, n_forced,
                                      state.n_updates + upd.astype(jnp.int32), w_shift, solve)

    def _paused_update_in_place(self, state: LazyTrackingState, instance: Instance, belief: Belief, upd, ctx):
        """:meth:`_paused_update` as one kernel that writes the state's arrays only for the lanes
        that solve (:meth:`in_place`, :func:`jaxbandits.design.app_f.paused_update_in_place`): the
        same runs, starts and new allocations, with no pass over the other lanes' arrays."""
        X, Z = instance.arms, instance.items
        dtype = X.dtype
        old = state.solve
        paused = old.on
        start = upd & ~paused
        go = (start | paused) & ctx.live   # a lane the engine holds runs nothing, whatever its state
        t = belief.t
        nu = jnp.where(paused, state.n_updates - 1, state.n_updates)  # updates before this one
        base = state.cum_base if state.cum_base.shape[0] else None
        held = (state.w, base, old.v, old.c, old.n2, old.A, old.Ainv, old.k, old.rel, state.w_shift)
        # the items of psi's min: the active ones and the answer, joined in the kernel (a mask
        # shared by the lanes stays one array)
        item_mask = ctx.active if instance.item_mask is None else ctx.active & instance.item_mask
        w, base, v, c, n2, A, Ainv, k, rel, shift = app_f.paused_update_in_place(
            X, Z, belief.theta, item_mask, belief.answer, instance.arm_mask, held, go, start, nu > 0,
            (t - 1 - state.t_base).astype(dtype), int(self.max_iters), int(self.pause_trips), self.kernels,
            self.warm_start)
        running = go & app_f.running(k, rel, int(self.max_iters))
        fin = go & ~running
        return (w, state.cum_base if base is None else base, jnp.where(fin, t - 1, state.t_base), shift,
                FWCarry(v, c, n2, A, Ainv, k, rel, jnp.where(ctx.live, running, paused)))

    def _paused_update(self, state: LazyTrackingState, instance: Instance, belief: Belief, upd, masks):
        """The allocation update in the accelerator program (:meth:`pauses`): a lane whose update is
        due starts the released code's Frank-Wolfe and runs ``pause_trips`` iterations of it; a
        lane whose run is still going runs the next ``pause_trips``; a run that ends sets w(t) as
        the one-step update would.  While it runs, the estimate and the answer stay those of round
        t (no round is played), so the pulls, the stopping time and the answer are those of the
        one-step update; what changes is the number of engine steps (``Results.steps``): a run of
        n iterations adds ceil(n / ``pause_trips``) - 1 steps (13 at the median of 112 iterations
        on the released code's K = 1000 instance with the default 8)."""
        X, Z = instance.arms, instance.items
        dtype = X.dtype
        old = state.solve
        paused = old.on
        start = upd & ~paused
        go = start | paused
        max_iters, trips = int(self.max_iters), int(self.pause_trips)
        carry = (old.v, old.c, old.n2, old.A, old.Ainv, old.k, old.rel)

        if self.kernels != "xla" and app_f.fused_trips_supported(X.shape[1]):
            # one fused kernel over every lane (GPUs), in which only the lanes in a run iterate
            arm_mask, item_mask = masks
            fresh = app_f.incremental_start(X, state.w if self.warm_start else None, arm_mask, app_f.gram_sum)
            st = tuple(jnp.where(start, a, b) for a, b in zip(fresh, carry))
            st = app_f.incremental_trips_fused(X, Z, belief.theta, item_mask, arm_mask, st, go, max_iters, trips,
                                               self.kernels)
            running = go & app_f.incremental_running(st, max_iters)
            new = app_f.incremental_allocation(X, st[0], st[1], app_f.gram_sum)
        else:
            def advance(X, Z, theta, w, carry, start, masks):  # no closed-over tracers (custom_vmap)
                arm_mask, item_mask = masks
                Y, Yq, ym = app_f.oracle_fw_directions(Z, theta, item_mask, dtype)
                fresh = app_f.incremental_start(X, w if self.warm_start else None, arm_mask)
                st = tuple(jnp.where(start, a, b) for a, b in zip(fresh, carry))
                st = app_f.incremental_trips(X, Y, Yq, ym, arm_mask, st, max_iters, trips)
                return st, app_f.incremental_running(st, max_iters), app_f.incremental_allocation(X, st[0], st[1])

            st, running, new = solve_where(
                go, advance, (X, Z, belief.theta, state.w, carry, start, masks),
                (carry, jnp.zeros((), bool), state.w), self.solve_capacity)
        fin = go & ~running
        # as the one-step update: a failed solve keeps the previous allocation; sum_{s <= t - 1} w(s)
        # with the old w, then w(t) = new
        new = jnp.where(jnp.all(jnp.isfinite(new)) & (jnp.sum(new) > 0), new, state.w)
        t = belief.t
        nu = jnp.where(paused, state.n_updates - 1, state.n_updates)  # updates before this one
        shift = state.w_shift + jnp.where(nu > 0, jnp.sum(jnp.abs(new - state.w)), 0.0)
        base = state.cum_base
        if base.shape[0]:  # sum_{s <= t - 1} w(s), where the state keeps it (keeps_sum)
            base = base + (t - 1 - state.t_base).astype(dtype) * state.w
        return (jnp.where(fin, new, state.w), jnp.where(fin, base, state.cum_base),
                jnp.where(fin, t - 1, state.t_base), jnp.where(fin, shift, state.w_shift),
                FWCarry(*st, go & running))
