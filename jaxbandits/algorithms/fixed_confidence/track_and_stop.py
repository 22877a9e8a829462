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
until it ends (:meth:`jaxbandits.rules.lazy.LazyTracking.holds`; the same pulls and stopping times, the
keys following the rounds played), so no step waits for the slowest solve of the
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
from typing import ClassVar

import jax
import jax.numpy as jnp

from jaxbandits.algorithms import common
from jaxbandits.algorithms.base import hyperparameter
from jaxbandits.algorithms.common import (glr_statistic_inv, glr_threshold_small, inverse_gram,  # noqa: F401 (also
                                         lambda_min_small, random_spanning_set)  # imported from here by older code)
from jaxbandits.batching import solve_where  # noqa: F401 (also imported from here: its old home)
from jaxbandits.design.app_f import FIXED_FW_TRIPS, paper_frank_wolfe  # noqa: F401 (also used from here)
from jaxbandits.instances.base import Instance
from jaxbandits import presets
from jaxbandits.rules import thresholds
from jaxbandits.rules.composition import Composed, ComposedState, Composition
from jaxbandits.rules.lazy import (METHODS, SCHEDULES, FWCarry, LazyTracking, LazyTrackingState,  # noqa: F401
                                   SpanningCarry, SpanningGLR, plug_in_allocation)

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


@dataclasses.dataclass(frozen=True)
class LazyTrackAndStop(Composed):
    """LT&S (seed 000 Algorithm 1; Lemma 5, eq. (5)-(10), Prop 2, Sec 5 experimental choices): the
    composition of :meth:`rules`, seed 000's sampling rule
    (:class:`~jaxbandits.rules.lazy.LazyTracking`) and stopping rule (8)
    (:class:`~jaxbandits.rules.lazy.SpanningGLR`).

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
        self.rules()  # the rules check their options (schedule, method, factor, period, pause_trips, threshold)

    def validate(self, instance: Instance) -> None:
        """Also refuses reward models outside the paper's linear model (Sec 2: r = mu^T a + eta,
        eta sigma-sub-Gaussian for Prop 2): logistic rewards, and Bernoulli rewards whose means
        x^T theta leave [0, 1] (then clipped, hence not linear)."""
        super().validate(instance)
        common.require_linear_rewards(instance, "LazyTrackAndStop")
        if isinstance(self.sigma, (int, float)) and not self.sigma > 0.0:  # host-side; a traced sigma is not checked
            raise ValueError(f"sigma must be positive, got {self.sigma}")

    def rules(self) -> Composition:
        """Seed 000's sampling rule (forced exploration, tracking, lazy updates) and stopping rule
        (8), with this configuration's options and its batching policy's program."""
        batched = self.policy.batched
        sampling = LazyTracking(averaging=self.averaging, schedule=self.schedule, factor=self.factor,
                                period=self.period, first_update=self.first_update, method=self.method, tol=self.tol,
                                max_iters=self.max_iters, warm_start=self.warm_start,
                                solve_capacity=self.solve_capacity, pause_trips=self.pause_trips, batched=batched,
                                kernels=self.policy.kernels)
        stopping = SpanningGLR(a0_prior=self.a0_prior, u=self.u, anytime=self.anytime, threshold=self.threshold,
                               batched=batched)
        return Composition(sampling, stopping, delta=self.delta, sigma=self.sigma, name=type(self).__name__)

    @staticmethod
    def cumulative_allocation(state: ComposedState) -> jax.Array:
        """sum_{s <= t} w(s) [K], the target of Algorithm 1's tracking rule (kept for both
        variants, except without averaging under the accelerator policy); batched states (leading
        axes) are fine."""
        s = state.sampling
        if s.cum_base.shape[-1] != s.w.shape[-1]:
            raise ValueError("cumulative_allocation: this state keeps no sum of the allocations (the accelerator "
                             "program without averaging drops it); run with averaging=True or under the CPU policy")
        steps = (state.belief.t - s.t_base).astype(s.w.dtype)
        K = state.belief.stats.counts.shape[-1]  # the accelerator program may hold w padded above K
        return (s.cum_base + steps[..., None] * s.w)[..., :K]

    def linear_stats(self, state: ComposedState) -> common.LinearStats:
        """Counts, A_t and b_t of the observations (``sums`` is not kept by LT&S: zeros)."""
        return state.belief.stats._replace(sums=jnp.zeros_like(state.belief.stats.counts))
