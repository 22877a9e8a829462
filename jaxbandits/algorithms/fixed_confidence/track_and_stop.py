"""Lazy Track-and-Stop (LT&S), seed 000 (Jedra & Proutiere, NeurIPS 2020), Algorithm 1.

One step = one round.  In round t + 1 (t rounds played):

* **Forced exploration** (Lemma 5): with A_0 = {a_0(1), ..., a_0(d)} a spanning set of arms drawn
  at random (Sec 5, "A_0 is chosen at random"), c_{A_0} = lambda_min(sum_{a in A_0} a a^T) / sqrt(d)
  and f(t) = c_{A_0} sqrt(t): if lambda_min(A_t) < f(t), pull a_0(i) and advance i cyclically.  The
  first d rounds are therefore A_0 (f is evaluated at max(t, 1)), after which lambda_min(A_d) = c
  (not with the released code's ``a0_prior``, where lambda_min(A_0) = c from the start).
* **Tracking** (eq. (6), Algorithm 1) otherwise: ``averaging=True`` pulls
  argmin_{b in supp(sum_s w(s))} N_b(t) - sum_{s <= t} w_b(s) (the cumulative allocation of
  Algorithm 1); ``averaging=False`` is the "no averaging" variant of Sec 5,
  argmin_{b in supp(w(t))} N_b(t) - t w_b(t).
* **Lazy updates** (Sec 3.3, eq. (7), (10)): after round t, if t is in the update set T,
  w(t) = argmax_w psi(mu_hat_t, w), the plug-in optimal allocation (the design solver
  :func:`jaxbandits.design.oracle_allocation` on Z with theta = mu_hat_t, warm-started from
  w(t - 1) as Sec 5 says); otherwise w(t) = w(t - 1).  Schedules: ``"exponential"``
  T = {t_0, 2 t_0, 4 t_0, ...} (Sec 5: T = {2^k}; with t_0 = d = 2 exactly that; the released
  code uses t_0 = d), ``"periodic"`` T = {t_0 + k P} (Sec 3.5 example (i)), ``"every"`` (P = 1).
  w(0) is uniform over the arms (as the released code).
* **Stopping** (Sec 3.4, eq. (8)): stop when lambda_min(A_t) >= c and Z(t) > beta(delta_t, t), with
  Z(t) the GLR statistic of Lemma 7 over the items, beta the threshold of Prop 2 / eq. (9), and the
  Sec 5 choices c = c_{A_0} sqrt(d), u = 1, delta_t = 6 delta / (pi^2 t^2).  The decision rule
  returns argmax_z z^T mu_hat_tau.

Paper text vs released code, side by side (:data:`jaxbandits.presets.LTS_PAPER`, :data:`jaxbandits.presets.LTS_RELEASED`; the
constructors :meth:`LazyTrackAndStop.paper` and :meth:`LazyTrackAndStop.released_code`; the plain
constructor is the paper's text).  Each switch is a field, so any mixture can be run:

=============  ==========================================  ==========================================
switch         paper text (Sec 3.4, 5; Algorithm 1)        released code (lazy_ts.py)
=============  ==========================================  ==========================================
``a0_prior``   False: A_t = sum_s a_s a_s^T                True: A_0's Gram matrix sum_{a in A_0} a a^T
                                                           is added to A_t once, with no reward (a
                                                           ridge prior): it enters mu_hat, the forced-
                                                           exploration test and the threshold's
                                                           det; Z(t) keeps the count-only A_t^{-1};
                                                           the condition lambda_min(A_t) >= c (always
                                                           true with the prior) becomes t >= d
``u``          1 (Sec 5)                                   0.1
``anytime``    True: beta(6 delta / (pi^2 t^2), t) (Sec 5) False: beta(delta, t)
``warm_start`` True: w(t - 1) fed to Frank-Wolfe (Sec 5)   False: Frank-Wolfe restarted from uniform
``method``     "paper" (FW of seed 001 App F, App A.3)     "paper" (same), 1000 iterations max
=============  ==========================================  ==========================================

The threshold switches (``u``, ``anytime``, and the prior's det) set the sample complexity on the
Table 1 instance: the sampling rule is the same in both columns.

Averaging vs no averaging.  Both rules are implemented as Algorithm 1 and Sec 5
state them; they differ only through sum_s w(s) - t w(t), i.e. only when w(t) moves between lazy
updates.  On the Table 1 many-arms instance it does not: for every direction y_b = e_1 - x_b
(angles in [0.78, 0.88)) the c-optimal design (Elfving) lies on the chord between -x_2
(x_2 the informative arm) and -x_p, x_p the look-alike arm of *largest* angle, and the max-min allocation is the
c-optimal design of the smallest-gap direction.  The certified solver returns the same
w* = (0.6962 on x_2, 0.3036 on the largest-angle arm) for theta_hat anywhere within ~0.4 of
theta (measured, relative duality gap < 1e-7), so w(t) is bit-identical at every update once the
empirical best is e_1 (from t = 4-16 on; the Frank-Wolfe of the code returns (0.7005, 0.2995)
from a warm start, (0.7011, 0.2989) from uniform), and sum_s w(s) differs from t w(t) by the <= 16
rounds of the first designs.  The two variants therefore coincide there up to a few pulls, as do
the released code's two variants (paired runs, same keys, K = 1000, 100 runs: averaging minus no
averaging 0.96 +- 1.03 pulls with the text's choices, 48 identical stopping times; -0.22 +- 1.26
with the code's, 63 identical); the paper's 1206.55 vs 1409 gap cannot come from Algorithm 1
on that instance.  Where w(t) does move (allocations that balance several directions whose gaps
depend on theta_hat) the variants differ (tests/test_track_and_stop.py).  ``w_shift`` in the state
records the total l_1 movement of w(t) over the updates after the first (the first replaces the
placeholder w(0)); :meth:`LazyTrackAndStop.cumulative_allocation` returns sum_{s <= t} w(s).

Noise scale sigma (``sigma`` field, else :func:`common.noise_scale`): it enters only the
exploration threshold beta(delta, t) = (1 + u) sigma^2 log(det(...)^{1/2} / delta) of Prop 2 /
eq. (9).  The GLR statistic Z(t) of Lemma 7 is written for the unit-variance likelihood
f_mu ~ exp(-1/2 sum (r_s - mu^T a_s)^2) and carries no sigma: the paper puts sigma^2 on the
threshold's side (Z > beta  <=>  Z / sigma^2 > (1 + u) log(...)).  Forced exploration (Lemma 5),
the lazy updates and the allocation psi (eq. (1)-(2)) are sigma-free (sigma^2 only scales T*).

Performance.  Under ``vmap`` a ``lax.cond`` whose predicate differs across lanes runs both
branches, so the design solve would run on every lane at every step.  The solve therefore goes
through :func:`solve_where`, a ``custom_vmap`` primitive whose batching rule gathers the lanes
that need an update (a few per step under the exponential schedule) into a small fixed-size
buffer, solves only those, and scatters the results back; steps where no lane updates pay only a
``jnp.any``.  The released code's Frank-Wolfe (``method="paper"``) runs as
:func:`paper_frank_wolfe`: the iterates of the general solver at O(K d + M d^2) per iteration
(Sherman-Morrison, lazily scaled weights, O(1) stopping test).  Under the accelerator policy
(the configuration's ``batching``, :class:`jaxbandits.batching.SolvePolicy`) a lane pauses for its update instead: the run goes
``pause_trips`` iterations per step, carried in the state, and the lane plays no round
until it ends (:meth:`LazyTrackAndStop._paused_update`; the same pulls and stopping times, the
keys following :meth:`LazyTrackAndStop.rounds`), so no step waits for the slowest solve of the
lanes; the smooth solver's chunks run as a fixed-trip loop; on a CPU both keep their
``while_loop`` within the step.  A round
costs O(K + M d^2 + d^3): the tracking argmin over K, the GLR statistic as fused elementwise sums
over the M items (no batched matrix products), closed forms of A_t^-1, lambda_min and the
log-determinant when d = 2 (batched LAPACK calls on 2 x 2 matrices cost more than the rest of a
round), and the cumulative allocation kept as its value at the last update plus (t - t_base) w,
so no O(K) array is written in rounds without an update.  Measured on K = 1000 (released-code instance, 300 replications,
one CPU device, machine loaded by other jobs): 2.5 -> 13.8 replications/s with identical
stopping times; about half of the remaining time is the Frank-Wolfe solves (``benchmarks/
fixed_confidence_ltns.py`` reports the split).
"""
from __future__ import annotations

import dataclasses
import math
from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp

from jaxbandits.algorithms import common
from jaxbandits.algorithms.base import Algorithm, Outcome, answer_mask, concrete, hyperparameter
from jaxbandits.algorithms.common import (glr_statistic_inv, glr_threshold_small, inverse_gram,  # noqa: F401 (also
                                         lambda_min_small, random_spanning_set)  # imported from here by older code)
from jaxbandits.batching import current_policy, solve_where  # solve_where also re-exported: its old home
from jaxbandits.design import oracle_allocation
from jaxbandits.design import app_f
from jaxbandits.design.app_f import FIXED_FW_TRIPS, paper_frank_wolfe  # noqa: F401 (also used from here)
from jaxbandits.environment import pull
from jaxbandits.instances.base import Instance
from jaxbandits import presets
from jaxbandits.rules import thresholds

SCHEDULES = ("exponential", "periodic", "every")
METHODS = ("smooth", "paper")

# The two named configurations, side by side (see the module docstring's table).
#: LT&S as run in Tirinzoni & Degenne, "On elimination strategies for bandit fixed-confidence
#: identification", NeurIPS 2022, Table 1 (released code ``sampling_rules.jl``, ``LazyTaS``, after
#: Wang et al. 2021's port): lazy updates at powers of 2 warm-started from w(t - 1), cumulative
#: tracking, and the stopping threshold log((t + 1) / delta) of every test in their experiments
#: (``thresholds.jl``) instead of Prop 2 / eq. (9).  Not proven delta-correct (no dimension term).
TIRINZONI_DEGENNE = presets.TD_LTS.settings
THRESHOLDS = thresholds.names("track_and_stop")  # jaxbandits.rules.thresholds.ALIASES
PAPER_TEXT = presets.LTS_PAPER.settings        # jaxbandits.presets
RELEASED_CODE = presets.LTS_RELEASED.settings


# ------------------------------------------------------------------------------------------------
# the allocation solver and the per-round statistics
# ------------------------------------------------------------------------------------------------
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
    :func:`paper_frank_wolfe`, which gives the iterates of ``oracle_allocation(...,
    method="paper")`` at a fraction of the cost per iteration (tested for parity).
    ``arm_mask`` / ``item_mask``: the real arms and items of a padded instance (None: all).
    ``fixed_trips`` (None: True under the accelerator policy, :func:`jaxbandits.batching.
    current_policy`): the solver's loops with trip counts known at compile time, the same result
    (``"smooth"``: ``max_iters`` rounded up to whole chunks of 48 iterations; ``"paper"``:
    :func:`paper_frank_wolfe`).
    """
    fixed = current_policy().batched if fixed_trips is None else bool(fixed_trips)
    if method == "paper":
        return paper_frank_wolfe(X, Z, theta, init, max_iters, arm_mask, item_mask, fixed_trips=fixed)
    return oracle_allocation(X, Z, theta, init=init, tol=tol, max_iters=max_iters, method=method,
                             arm_mask=arm_mask, item_mask=item_mask,
                             fixed_trips=int(max_iters) if fixed else None).allocation


# ------------------------------------------------------------------------------------------------
# the algorithm
# ------------------------------------------------------------------------------------------------
class LTSState(NamedTuple):
    stats: common.LinearStats  # counts, A_t, b_t; sums empty (not kept: linear_stats gives zeros)
    t: jax.Array            # rounds played
    lmin: jax.Array         # lambda_min(A_t)
    w: jax.Array            # current allocation w(t) [K]
    cum_base: jax.Array     # sum_{s <= t_base} w(s) [K] (both variants: a diagnostic without averaging)
    t_base: jax.Array       # round of the last allocation change minus one: for t >= t_base,
                            # sum_{s <= t} w(s) = cum_base + (t - t_base) w(t)
    forced_arms: jax.Array  # A_0 [d]
    prior: jax.Array        # sum_{a in A_0} a a^T with ``a0_prior`` (released code), else zeros [d, d]
    c0: jax.Array           # c_{A_0}
    i0: jax.Array           # forced-exploration pointer
    next_update: jax.Array  # next round in the lazy update set T
    best: jax.Array         # empirical best item
    stopped: jax.Array
    n_forced: jax.Array     # diagnostics: forced rounds, allocation updates,
    n_updates: jax.Array
    w_shift: jax.Array      # sum over the updates after the first of ||w(t) - w(t - 1)||_1
    solve: "FWCarry"        # a Frank-Wolfe run carried across steps (paused lanes; see step_masked)
    near: jax.Array         # the item b of the last min_b Z_{best,b}(t) computed in full (_stops)


class FWCarry(NamedTuple):
    """The released code's Frank-Wolfe (:func:`paper_frank_wolfe`) between two steps of a lane
    paused for its allocation update (``LazyTrackAndStop.step_masked`` under the accelerator
    policy).  Outside such a run ``on`` is False and the rest is unused.  ``v`` has K entries
    under the accelerator policy and none under the CPU's, where no lane pauses: ``init`` and
    ``step`` are traced under the same policy (the engine does; so does
    :func:`jaxbandits.engine.layout.lane_bytes` for the platform)."""
    v: jax.Array            # raw weights [K] (lambda = c v)
    c: jax.Array
    n2: jax.Array           # ||lambda||^2
    A: jax.Array            # A(lambda) [d, d]
    Ainv: jax.Array
    k: jax.Array            # iterations run
    rel: jax.Array          # last relative change of lambda
    theta: jax.Array        # the plug-in parameter solved for [d]
    on: jax.Array           # a run is in progress: the lane plays no round


@dataclasses.dataclass(frozen=True)
class LazyTrackAndStop(Algorithm):
    """LT&S (seed 000 Algorithm 1; Lemma 5, eq. (5)-(10), Prop 2, Sec 5 experimental choices).

    The defaults are the paper's text (:data:`jaxbandits.presets.LTS_PAPER`, :meth:`paper`); :meth:`released_code`
    gives the authors' code (:data:`jaxbandits.presets.LTS_RELEASED`).

    Attributes:
      delta: confidence level.
      averaging: track the cumulative allocation sum_s w(s) (Algorithm 1) or only w(t)
        ("no averaging", Sec 5).
      schedule: lazy update set T: "exponential" (Sec 5, T = {2^k}), "periodic" (period
        ``period``), "every".
      factor: growth factor of the exponential schedule (2 in the paper).
      period: P of the periodic schedule.
      first_update: first round of T (default d: the first round with A_t invertible).
      a0_prior: add the Gram matrix of A_0 to A_t as a reward-free prior (released code; the
        paper's A_t has no prior).  See the module docstring for where it enters.
      u: the constant u of Prop 2 (Sec 5: u = 1; the released code: 0.1).
      anytime: use beta(6 delta / (pi^2 t^2), t) (Sec 5) instead of beta(delta, t) (code).
      method: design solver method of :func:`jaxbandits.design.oracle_allocation`: "smooth" (the
        project's certified Frank-Wolfe) or "paper" (the released code's Frank-Wolfe).
      tol, max_iters: solver tolerance (relative duality gap) and iteration cap.
      warm_start: warm-start the solver from w(t - 1) (Sec 5; the code restarts from uniform).
      solve_capacity: lanes solved together by :func:`solve_where` under vmap (None: the
        device's policy, :mod:`jaxbandits.batching`: one at a time on CPU, all at once on an
        accelerator).
      pause_trips: Frank-Wolfe iterations per step of a lane paused for its allocation update
        under the accelerator policy (``method="paper"``; a divisor or a multiple of 32, the
        refactorisation period of A^-1).  No result depends on it: fewer make a step cheaper and
        a run longer in steps (8: about half the predicted time per replication of 32 on an H100
        at K = 1000, docs/measurements/2026-11-26-h100-compile-model.md).
      sigma: sub-Gaussian noise scale (default :func:`common.noise_scale`: the instance's
        Gaussian noise, 1/2 for Bernoulli rewards); enters the threshold of Prop 2 / eq. (9) only.
      threshold: "prop2" (Prop 2 / eq. (9), with ``u``, ``anytime`` and ``a0_prior``) or "log_t"
        (sigma^2 log((t + 1) / delta), Tirinzoni & Degenne 2022's experiments; not proven
        delta-correct).
    """

    #: the released LT&S code (lazy_ts.py) where it differs from the text: the Gram matrix of A_0
    #: added to A_t as a reward-free prior, u = 0.1, threshold beta(delta, t) (no union over t),
    #: Frank-Wolfe of seed 001 App F restarted from uniform at every update (1000 iterations max)
    released_settings: ClassVar[dict] = RELEASED_CODE
    delta: float = hyperparameter(0.05, low=0.0, high=1.0, traced=True)
    averaging: bool = True
    schedule: str = "exponential"
    factor: float = hyperparameter(2.0, traced=True)
    period: int = hyperparameter(10, count=1)
    first_update: int | None = hyperparameter(None, count=1)
    a0_prior: bool = False
    u: float = hyperparameter(1.0, low=0.0, traced=True)
    anytime: bool = True
    method: str = "paper"
    tol: float = hyperparameter(1e-3, low=0.0, traced=True)
    max_iters: int = hyperparameter(1000, count=1)
    warm_start: bool = True
    solve_capacity: int | None = hyperparameter(None, count=1)
    pause_trips: int = hyperparameter(8, count=1)
    sigma: float | None = hyperparameter(None, low=0.0, traced=True)
    threshold: str = "prop2"

    # padded arms: zero allocation, never in A_0, never tracked; padded items: not in Z(t)
    supports_padding: ClassVar[bool] = True

    @classmethod
    def paper(cls, **kw) -> "LazyTrackAndStop":
        """The choices of the paper's text (:data:`jaxbandits.presets.LTS_PAPER`; Sec 3.4, Sec 5, Algorithm 1):
        no prior, u = 1, beta(6 delta / (pi^2 t^2), t), Frank-Wolfe warm-started from w(t - 1).
        The same as the plain constructor; ``kw`` overrides."""
        return cls(**presets.LTS_PAPER.apply(**kw))

    @classmethod
    def tirinzoni_degenne(cls, **kw) -> "LazyTrackAndStop":
        """LT&S as in Tirinzoni & Degenne 2022's Table 1 (:data:`jaxbandits.presets.TD_LTS`); delta = 0.01
        as there unless given.  ``kw`` overrides."""
        return cls(**presets.TD_LTS.apply(**kw))

    def __post_init__(self):
        thresholds.resolve("track_and_stop", self.threshold)
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {self.schedule!r}")
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if self.schedule == "exponential" and concrete(self.factor) and not self.factor > 1.0:
            raise ValueError(f"the exponential schedule needs factor > 1, got {self.factor}")
        if self.schedule == "periodic" and int(self.period) < 1:
            raise ValueError(f"period must be >= 1, got {self.period}")
        trips = self.pause_trips
        if not (isinstance(trips, int) and not isinstance(trips, bool) and trips >= 1 and (app_f.REFACTOR % trips == 0 or trips % app_f.REFACTOR == 0)):
            raise ValueError(f"pause_trips must be a positive divisor or multiple of {app_f.REFACTOR}, got {trips!r}")

    def validate(self, instance: Instance) -> None:
        """Also refuses reward models outside the paper's linear model (Sec 2: r = mu^T a + eta,
        eta sigma-sub-Gaussian for Prop 2): logistic rewards, and Bernoulli rewards whose means
        x^T theta leave [0, 1] (then clipped, hence not linear)."""
        super().validate(instance)
        common.require_linear_rewards(instance, "LazyTrackAndStop")
        if isinstance(self.sigma, (int, float)) and not self.sigma > 0.0:  # host-side; a traced sigma is not checked
            raise ValueError(f"sigma must be positive, got {self.sigma}")

    # -- pieces --------------------------------------------------------------------------------
    def _next(self, t):
        if self.schedule == "exponential":
            return jnp.maximum(jnp.ceil(self.factor * t).astype(t.dtype), t + 1)
        if self.schedule == "periodic":
            return t + int(self.period)
        return t + 1

    def _solve(self, X, Z, theta, init, arm_mask=None, item_mask=None):
        return plug_in_allocation(X, Z, theta, init if self.warm_start else None,
                                  method=self.method, tol=self.tol, max_iters=self.max_iters,
                                  arm_mask=arm_mask, item_mask=item_mask, fixed_trips=self.policy.batched)

    @staticmethod
    def cumulative_allocation(state: LTSState) -> jax.Array:
        """sum_{s <= t} w(s) [K], the target of Algorithm 1's tracking rule (kept for both
        variants); batched states (leading axes) are fine."""
        steps = (state.t - state.t_base).astype(state.w.dtype)
        return state.cum_base + steps[..., None] * state.w

    # -- contract ------------------------------------------------------------------------------
    def init(self, key, instance: Instance) -> LTSState:
        X = instance.arms
        K, d = X.shape
        A0 = random_spanning_set(key, X, arm_mask=instance.arm_mask)
        XA = X[A0]
        G0 = XA.T @ XA
        c0 = common.lambda_min(G0) / math.sqrt(d)
        first = d if self.first_update is None else int(self.first_update)
        i32 = lambda v: jnp.asarray(v, jnp.int32)
        return LTSState(
            # per-arm reward sums are not kept ([0]; ``linear_stats`` gives zeros): a [K] array
            # less to carry, select and write per step
            stats=common.init_stats(instance)._replace(sums=jnp.zeros((0,), X.dtype)), t=i32(0),
            lmin=common.lambda_min(G0) if self.a0_prior else jnp.zeros((), X.dtype),
            w=instance.valid_arms().astype(X.dtype) / instance.true_num_arms(), cum_base=jnp.zeros((K,), X.dtype), t_base=i32(0), forced_arms=A0,
            prior=G0 if self.a0_prior else jnp.zeros((d, d), X.dtype),
            c0=c0, i0=i32(0), next_update=i32(max(first, 1)), best=i32(0),
            stopped=jnp.zeros((), bool), n_forced=i32(0), n_updates=i32(0), w_shift=jnp.zeros((), X.dtype),
            solve=FWCarry(jnp.zeros((K if self._pauses() else 0,), X.dtype), jnp.ones((), X.dtype),
                          jnp.zeros((), X.dtype), jnp.zeros((d, d), X.dtype), jnp.zeros((d, d), X.dtype), i32(0),
                          jnp.zeros((), X.dtype), jnp.zeros((d,), X.dtype), jnp.zeros((), bool)),
            near=i32(0))

    def _pauses(self) -> bool:
        """Whether a lane pauses for its allocation update (``pause_trips`` Frank-Wolfe
        iterations per step, no round played until the run ends) instead of running the whole
        solve in one step: the released code's Frank-Wolfe under the accelerator policy, where a
        step costs its kernel launches and a whole solve would make every lane's step wait for
        the slowest of the lanes that solve in it."""
        return self.method == "paper" and self.policy.batched

    def rounds(self, state: LTSState, steps: jax.Array) -> jax.Array:
        """Rounds played, counting the round whose allocation update is still running as not yet
        complete: the engine's key index and ``max_steps`` count, the same whether lanes pause
        or not."""
        return state.t - state.solve.on.astype(state.t.dtype)

    def step(self, key, state: LTSState, instance: Instance) -> LTSState:
        return self.step_masked(key, state, instance, jnp.ones((instance.num_items,), bool))

    # -- elimination protocol (Tirinzoni & Degenne 2022; jaxbandits.algorithms.Eliminate) --------
    def linear_stats(self, state: LTSState) -> common.LinearStats:
        """Counts, A_t and b_t of the observations (``sums`` is not kept by LT&S: zeros)."""
        return state.stats._replace(sums=jnp.zeros_like(state.stats.counts))

    def stopping_threshold(self, state: LTSState, instance: Instance):
        """(beta, ready) of the stopping rule (8): beta(delta_t, t) of Prop 2 / eq. (9) with the
        Sec 5 choices (the released code's with ``a0_prior`` / ``anytime=False``), and
        ready = lambda_min(A_t) >= c (and t >= d with the prior)."""
        d = instance.arms.shape[1]
        gram = state.stats.gram + state.prior if self.a0_prior else state.stats.gram
        return self._threshold(gram, state.t, state.c0, instance), self._ready(state.lmin, state.t, state.c0, d)

    def _threshold(self, gram, t, c0, instance):
        d = instance.arms.shape[1]
        if thresholds.resolve("track_and_stop", self.threshold) == "log_t":  # Tirinzoni & Degenne 2022
            sigma = common.noise_scale(self.sigma, instance)
            return sigma**2 * thresholds.log_t(t.astype(gram.dtype), self.delta)
        dl = (thresholds.anytime_delta(self.delta, t.astype(gram.dtype)) if self.anytime
              else jnp.asarray(self.delta, gram.dtype))
        # sigma enters here only: beta(delta, t) = (1 + u) sigma^2 log(...) of Prop 2 / eq. (9)
        sigma = common.noise_scale(self.sigma, instance)
        return thresholds.prop2_small(gram, dl, sigma, c0 * math.sqrt(d), self.u)

    def _ready(self, lmin, t, c0, d):
        ready = lmin >= c0 * math.sqrt(d) * (1.0 - 1e-9)
        if self.a0_prior:  # the code's ``t >= d`` (lambda_min >= c holds from the start)
            ready = ready & (t >= d)
        return ready

    def step_masked(self, key, state: LTSState, instance: Instance, active: jax.Array) -> LTSState:
        """One round in which the lazy allocation update w(t) = argmax_w psi(mu_hat_t, w) takes the
        min over the items z != z* with ``active[z]`` only (elimination at sampling, Tirinzoni &
        Degenne Sec 4; the empirical best z* is always kept).  Forced exploration, tracking and the
        stopping rule are unchanged."""
        X, Z = instance.arms, instance.items
        K, d = X.shape
        dtype = X.dtype
        t = state.t
        tf = t.astype(dtype)
        # forced exploration (Lemma 5): f evaluated at max(t, 1); relative slack so that
        # lambda_min(A_d) = c_{A0} sqrt(d) after the d first (forced) rounds counts as reached.
        f = state.c0 * jnp.sqrt(jnp.maximum(tf, 1.0))
        forced = state.lmin < f * (1.0 - 1e-9)
        counts = state.stats.counts
        if self.averaging:
            # sum_{s <= t} w(s), from the value at the last allocation change (w is constant
            # between lazy updates): no O(K) write per round
            cum_w = state.cum_base + (tf - state.t_base.astype(dtype)) * state.w
            track = counts - cum_w
            supp = cum_w > 0
        else:
            track = counts - tf * state.w
            supp = state.w > 0
        tracked = common.argmax_fast(jnp.where(supp, -track, -jnp.inf))
        arm = jnp.where(forced, state.forced_arms[state.i0], tracked)
        i0 = jnp.where(forced, (state.i0 + 1) % d, state.i0)

        reward = pull(key, instance, arm)
        x = X[arm]
        # LT&S needs counts, A_t and b_t only: per-arm reward sums are not kept (``stats.sums`` is
        # empty), which saves a scatter per round
        stats = common.LinearStats(state.stats.counts.at[arm].add(1.0), state.stats.sums,
                                   state.stats.gram + jnp.outer(x, x), state.stats.b + reward * x)
        t1 = t + 1
        Ainv = inverse_gram(stats.gram)
        if self.a0_prior:
            # released code: A_t = prior + sum_s a_s a_s^T in mu_hat, forced exploration and the
            # threshold; Z(t) from the count-only A_t (its ``allocation`` design)
            gram = stats.gram + state.prior
            theta = inverse_gram(gram) @ stats.b
        else:
            gram = stats.gram
            theta = Ainv @ stats.b
        # Lemma 7: no sigma (unit-variance likelihood)
        values, top, best = common.empirical_best(theta, Z, instance.item_mask)
        lmin = lambda_min_small(gram)
        beta = self._threshold(gram, t1, state.c0, instance)
        # a stopped state stays stopped without the stopping pass: the engine steps the lanes
        # that wait for a replication (and discards their rounds), and on a CPU their pass over
        # every item ran in each of those steps (``_stops``)
        stop, near = self._stops(Ainv, Z, instance.item_mask, values, top, best, beta,
                                 self._ready(lmin, t1, state.c0, d) & ~state.stopped, state.near)
        stop = stop | state.stopped

        upd = (t1 == state.next_update) & ~stop

        item_mask = active | (jnp.arange(Z.shape[0]) == best)  # elimination at sampling (step_masked)
        if instance.item_mask is not None:  # padded items of a shape bucket
            item_mask = item_mask & instance.item_mask

        def update(X, Z, theta, w, base, tb, t1, shift, nu, masks):  # no closed-over tracers (custom_vmap)
            new = self._solve(X, Z, theta, w, *masks)
            # a failed solve (non-finite, e.g. mu_hat = 0) keeps the previous allocation
            new = jnp.where(jnp.all(jnp.isfinite(new)) & (jnp.sum(new) > 0), new, w)
            # sum_{s <= t1 - 1} w(s) with the old w, then w(t1) = new (both variants: diagnostic)
            base = base + (t1 - 1 - tb).astype(dtype) * w
            tb = t1 - 1
            shift = shift + jnp.where(nu > 0, jnp.sum(jnp.abs(new - w)), 0.0)
            return new, base, tb, shift

        nxt = jnp.where(t1 == state.next_update, self._next(t1), state.next_update)
        # the round played, with the allocation (w, its cumulative sum, w_shift) not yet updated
        played = LTSState(
            stats=stats, t=t1, lmin=lmin, w=state.w, cum_base=state.cum_base, t_base=state.t_base,
            forced_arms=state.forced_arms, prior=state.prior, c0=state.c0, i0=i0, next_update=nxt,
            best=best.astype(jnp.int32), stopped=stop,
            n_forced=state.n_forced + forced.astype(jnp.int32),
            n_updates=state.n_updates + upd.astype(jnp.int32), w_shift=state.w_shift, solve=state.solve,
            near=near)
        if self._pauses():
            return self._paused_update(state, instance, active, played, theta, upd)
        w, cum_base, t_base, w_shift = solve_where(
            upd, update, (X, Z, theta, state.w, state.cum_base, state.t_base, t1, state.w_shift, state.n_updates,
                          (instance.arm_mask, item_mask)),
            (state.w, state.cum_base, state.t_base, state.w_shift), self.solve_capacity)
        return played._replace(w=w, cum_base=cum_base, t_base=t_base, w_shift=w_shift)

    def _stops(self, Ainv, Z, item_mask, values, top, best, beta, ready, near):
        """(stop, near): the stopping rule (8), ready and min_b Z_{best,b}(t) > beta, and the item
        b reaching the min the last time it was computed in full.

        Any one item b bounds the min from above, so where Z_{best,b}(t) of the last minimiser is
        at most beta (less a relative 1e-12, against rounding) the round cannot stop and the pass
        over every item is skipped: under the CPU policy it runs (:func:`solve_where`) only for
        the lanes that are ready and whose bound exceeds beta, near the stopping time (at K = 1000,
        that pass was a fifth of a round).  The stops are those of the full pass in every round.
        Under the accelerator policy every lane runs the full pass: a branch would cost a host
        round trip per step.  :meth:`step_masked` passes ``ready`` False for a state that has
        stopped already (it stays stopped): the engine steps the lanes waiting for a replication,
        and their pass ran in every such step (48.8 passes per replication of the released code's
        configuration at K = 1000, 96 replications on 16 lanes, against 2.7 without them)."""
        zb = Z[best]
        if self.policy.batched:
            z = jnp.min(common.glr_pair_statistics(Ainv, Z, values, top, zb, item_mask))
            return ready & (z > beta), near
        row = lambda a: None if a is None else a[near][None]
        zc = common.glr_pair_statistics(Ainv, row(Z), row(values), top, zb, row(item_mask))[0]
        check = ready & ~(zc <= beta - 1e-12 * jnp.abs(beta))

        def full(Ainv, Z, values, top, zb, item_mask, beta):  # no closed-over tracers (custom_vmap)
            r = common.glr_pair_statistics(Ainv, Z, values, top, zb, item_mask)
            neg, first = common.max_argmax(-r)  # the min and the first minimiser
            return -neg > beta, first.astype(near.dtype)

        exceeds, near = solve_where(check, full, (Ainv, Z, values, top, zb, item_mask, beta),
                                    (jnp.zeros((), bool), near))
        return check & exceeds, near

    def _paused_update(self, state: LTSState, instance: Instance, active, played: LTSState, theta, upd):
        """The allocation update of a step under the accelerator policy (:meth:`_pauses`): a lane
        whose round triggers an update starts the released code's Frank-Wolfe and runs
        ``pause_trips`` iterations of it; a lane whose run is still going plays no round
        (``played`` is dropped, its state stays) and runs the next ``pause_trips``; a run
        that ends sets w(t) as the one-step update would, for the round that started it.  No round
        is played while w(t) is pending, so the pulls, the stopping time and the answer are those
        of the one-step update (the keys follow :meth:`rounds`); what changes is the number of
        engine steps (``Results.steps``): a run of n iterations adds ceil(n / ``pause_trips``) - 1
        steps (13 at the median of 112 iterations on the released code's K = 1000 instance with
        the default 8)."""
        X, Z = instance.arms, instance.items
        dtype = X.dtype
        old = state.solve
        paused = old.on
        start = upd & ~paused
        go = start | paused
        theta_s = jnp.where(paused, old.theta, theta)
        best_s = jnp.where(paused, state.best, played.best)
        item_mask = active | (jnp.arange(Z.shape[0]) == best_s)
        if instance.item_mask is not None:
            item_mask = item_mask & instance.item_mask
        max_iters, trips = int(self.max_iters), int(self.pause_trips)
        carry = (old.v, old.c, old.n2, old.A, old.Ainv, old.k, old.rel)

        def advance(X, Z, theta_s, w, carry, start, masks):  # no closed-over tracers (custom_vmap)
            arm_mask, item_mask = masks
            Y, Yq, ym = app_f.oracle_fw_directions(Z, theta_s, item_mask, dtype)
            fresh = app_f.incremental_start(X, w if self.warm_start else None, arm_mask)
            st = tuple(jnp.where(start, a, b) for a, b in zip(fresh, carry))
            st = app_f.incremental_trips(X, Y, Yq, ym, arm_mask, st, max_iters, trips)
            return st, app_f.incremental_running(st, max_iters), app_f.incremental_allocation(X, st[0], st[1])

        st, running, new = solve_where(
            go, advance, (X, Z, theta_s, state.w, carry, start, (instance.arm_mask, item_mask)),
            (carry, jnp.zeros((), bool), state.w), self.solve_capacity)
        fin = go & ~running
        # as the one-step update: a failed solve keeps the previous allocation; sum_{s <= t - 1} w(s)
        # with the old w, then w(t) = new, t the round that started the run
        new = jnp.where(jnp.all(jnp.isfinite(new)) & (jnp.sum(new) > 0), new, state.w)
        t_s = jnp.where(paused, state.t, played.t)
        nu = jnp.where(paused, state.n_updates - 1, state.n_updates)  # updates before this one
        shift = state.w_shift + jnp.where(nu > 0, jnp.sum(jnp.abs(new - state.w)), 0.0)
        base = state.cum_base + (t_s - 1 - state.t_base).astype(dtype) * state.w
        keep = lambda a, b: jax.tree.map(lambda x, y: jnp.where(paused, y, x), a, b)
        out = keep(played, state)
        return out._replace(
            w=jnp.where(fin, new, state.w), cum_base=jnp.where(fin, base, state.cum_base),
            t_base=jnp.where(fin, t_s - 1, state.t_base), w_shift=jnp.where(fin, shift, state.w_shift),
            solve=FWCarry(*st, theta_s, go & running))

    def done(self, state: LTSState) -> jax.Array:
        return state.stopped

    def outcome(self, state: LTSState, instance: Instance) -> Outcome:
        return Outcome(answer_mask(state.best, instance.num_items), state.t,
                       state.stats.counts.astype(jnp.int32))
