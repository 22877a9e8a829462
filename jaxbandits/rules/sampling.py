"""Sampling rules (:class:`jaxbandits.rules.core.SamplingRule`): which arm to pull next.

* :class:`RoundRobin`: the arms in turn (seed 000 Sec 3.4's reference rule).
* :class:`Stateless`: a rule of your own from one pure function ``(keys, belief, ctx) -> arm``.
* :class:`GreedyG`, :class:`GreedyXY`: one greedy pull of the G-optimal design, or of the XY design
  of the current answer's directions (Soare et al. 2014's XY-adaptive selection).
* :class:`Tracking`: track an allocation fixed per instance (:class:`GOptimal`, :class:`XYDesign`,
  :class:`OracleWeights`), D-tracking with forced exploration (Garivier & Kaufmann 2016).
* :class:`Initial`: pull a fixed set of arms first (each arm once, as the experiments of Top Two and
  FWS do, or d arms of a random spanning set, seed 000 Lemma 5's A_0), then hand over to another
  rule, which starts tracking from the counts of the initialisation.
* :class:`FrankWolfe`: Frank-Wolfe Sampling's rule (Wang, Tzeng & Proutiere, NeurIPS 2021).
* :class:`Game`: LinGame's agent (AdaHedge) against nature's best response, C-tracked (Degenne et
  al. 2020).
* :class:`TopTwo`: leader / challenger sampling (Jourdan, Degenne, Baudry, de Heide, Kaufmann,
  "Top Two algorithms revisited", NeurIPS 2022, Algorithm 1; its linear form, Jourdan & Degenne,
  ICML 2022, Sec 4-5), built from three pieces:

  - a **leader**: :class:`EBLeader` (the stopping rule's recommended answer, "empirical best") or
    :class:`TSLeader` (argmax_i z_i^T theta~, theta~ ~ N(theta_hat, sigma^2 V_t^-1): Thompson
    sampling, Top Two revisited Sec 2.1);
  - the **transportation-cost challenger** C_t = argmin_{j != B_t, j active} W^eps_{B_t, j}
    (Top Two revisited eq. (4));
  - an **allocation** between them: :class:`PairDesign` (C-tracking of the c-optimal designs of
    the pair directions z_B - z_C, Jourdan & Degenne Sec 4-5; Elfving), :class:`GreedyPair` (the
    arm that most reduces ||z_B - z_C||^2_{V^-1} in one pull, seed 003's greedy selection) or
    :class:`LeaderCoin` (the unstructured rule of Top Two revisited Algorithm 1: the leader with
    probability beta, else the challenger; needs arms = items).

Every rule is written with the floating-point operations of the algorithm it came from, so the
named compositions (:class:`jaxbandits.algorithms.TopTwo`, :class:`jaxbandits.algorithms.UniformGLR`,
:class:`jaxbandits.algorithms.FWS`)
reproduce their replications bit for bit.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxbandits.algorithms import common, glr
from jaxbandits import design
from jaxbandits.algorithms.base import Configurable, hyperparameter, instance_cache, map_instances, with_cache
from jaxbandits.design.copt import c_optimal
from jaxbandits.design.games import (EXACT_GAME_GAP, hedge_update, hedge_weights, is_square, matrix_game,
                                     matrix_game_certified, matrix_game_exact)
from jaxbandits.instances.base import Instance
from jaxbandits.rules import entrywise
from jaxbandits.rules.alternative import answer_rank, closest_piece
from jaxbandits.rules.core import Belief, Context, SamplingRule


# -- round robin ---------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class RoundRobin(SamplingRule):
    """The arms in turn, t mod K (over the real arms of a padded instance)."""

    reads: ClassVar[tuple[str, ...]] = ()

    def update(self, keys, state, belief: Belief, ctx: Context):
        return common.round_robin_arm(ctx.instance, belief.t), state


# -- a rule from a function ----------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Stateless(SamplingRule):
    """A sampling rule with no state of its own, from a pure function
    ``choose(keys, belief, ctx) -> arm`` (``keys``: a tuple of ``n_keys`` random keys; ``belief``:
    :class:`~jaxbandits.rules.core.Belief`; ``ctx``: :class:`~jaxbandits.rules.core.Context`).
    The function is part of the configuration (compared by identity): define it once, at module
    level, so that every run reuses one compiled program.

    >>> def most_uncertain(keys, belief, ctx):   # argmax_k ||x_k||^2_{V_t^-1}
    ...     X = ctx.instance.arms
    ...     return jnp.argmax(jnp.sum((X @ belief.inverse()) * X, axis=-1))
    >>> rule = Stateless(most_uncertain)

    Attributes:
      choose: the function.
      n_keys: the random keys it takes per step (0: deterministic).
    """

    choose: Any = None
    n_keys: int = 0

    def __post_init__(self):
        if not callable(self.choose):
            raise TypeError(f"Stateless.choose must be a function (keys, belief, ctx) -> arm, got {self.choose!r}")
        if isinstance(self.n_keys, bool) or not isinstance(self.n_keys, int) or self.n_keys < 0:
            raise ValueError(f"Stateless.n_keys must be an integer >= 0, got {self.n_keys!r}")

    @property
    def draws(self) -> int:
        return self.n_keys

    def update(self, keys, state, belief: Belief, ctx: Context):
        return self.choose(keys, belief, ctx), state


# -- greedy design pulls ----------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class GreedyG(SamplingRule):
    """Pull the arm whose mean is least known, argmax_k ||x_k||^2 in V_t^-1: the greedy step of the
    G-optimal design (the arm that most increases log det V_t; Fedorov-Wynn), one pull at a time."""

    reads: ClassVar[tuple[str, ...]] = ("chol", "inv")

    def update(self, keys, state, belief: Belief, ctx: Context):
        X = ctx.instance.arms
        widths = jnp.sum((X @ belief.inverse()) * X, axis=-1)
        return common.argmax_fast(jnp.where(ctx.instance.valid_arms(), widths, -jnp.inf)), state


@dataclasses.dataclass(frozen=True)
class GreedyXY(SamplingRule):
    """The greedy XY pull (Soare, Lazaric & Munos, NeurIPS 2014, XY-adaptive's arm selection, with
    the directions of the current answer): the arm x that minimises
    max_j ||z_best - z_j||^2 in (V_t + x x^T)^-1 over the active items j != best, by
    Sherman-Morrison, ||y||^2_{V^-1} - (y^T V^-1 x)^2 / (1 + x^T V^-1 x).  O(K M d) per pull."""

    def update(self, keys, state, belief: Belief, ctx: Context):
        instance = ctx.instance
        X, Z = instance.arms, instance.items
        Vinv = belief.inverse()
        Y = Z[belief.answer][None, :] - Z                          # [M, d]
        keep = ctx.active & instance.valid_items() & jnp.any(Y != 0, axis=-1)
        VY = Y @ Vinv                                              # [M, d]
        base = jnp.sum(VY * Y, axis=-1)                            # ||y||^2_{V^-1}
        cross = X @ VY.T                                           # [K, M]: x^T V^-1 y
        q = jnp.sum((X @ Vinv) * X, axis=-1)                       # x^T V^-1 x
        after = base[None, :] - cross * cross / (1.0 + q)[:, None]
        worst = jnp.max(jnp.where(keep[None, :], after, -jnp.inf), axis=-1)
        return common.argmax_fast(jnp.where(instance.valid_arms(), -worst, -jnp.inf)), state


# -- tracking of a per-instance allocation --------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class GOptimal(Configurable):
    """The G-optimal design of the arms, min_w max_x ||x||^2 in A(w)^-1 (Kiefer-Wolfowitz; seed 002
    Sec 6; :func:`jaxbandits.design.g_optimal`): it does not depend on the rewards."""

    def __call__(self, instance: Instance) -> jax.Array:
        return design.g_optimal(instance.arms, arm_mask=instance.arm_mask).allocation


@dataclasses.dataclass(frozen=True)
class XYDesign(Configurable):
    """The XY design over every pair of items, min_w max_{z, z'} ||z - z'||^2 in A(w)^-1 (seed 001
    Sec 2.2, XY-static's; :func:`jaxbandits.design.xy_allocation`): it does not depend on the
    rewards."""

    def __call__(self, instance: Instance) -> jax.Array:
        return design.xy_allocation(instance.arms, instance.items, item_mask=instance.item_mask,
                                    arm_mask=instance.arm_mask).allocation


@dataclasses.dataclass(frozen=True)
class OracleWeights(Configurable):
    """The optimal allocation w*(theta) of the instance's true parameter, the maximiser of seed
    000 eq. (1) (seed 001 Thm 1; :func:`jaxbandits.design.oracle_allocation`): an oracle baseline,
    which no algorithm can use, that shows what the lower bound's allocation costs with a given
    stopping rule.

    Attributes:
      tol: relative duality gap at which the solver stops.
      iters: the solver's iteration cap.
    """

    tol: float = hyperparameter(1e-3, low=0.0, traced=True)
    iters: int = hyperparameter(2_000, count=1)

    def __call__(self, instance: Instance) -> jax.Array:
        return design.oracle_allocation(instance.arms, instance.items, instance.theta, item_mask=instance.item_mask,
                                        arm_mask=instance.arm_mask, tol=self.tol, max_iters=self.iters).allocation


@dataclasses.dataclass(frozen=True)
class Tracking(SamplingRule):
    """Track an allocation w [K] fixed per instance (computed once per run, in ``prepare``): pull
    argmin_k N_k(t) - t w_k, D-tracking (Garivier & Kaufmann, COLT 2016, Sec 3.1; with a fixed w,
    C-tracking's cumulative target sum_{s <= t} w is the same), with forced exploration: while
    some arm has fewer than sqrt(t) - K/2 pulls, the least pulled one (their D-tracking rule, so
    that every arm is pulled about sqrt(t) times and A_t grows in every direction: the
    precondition A_t >= c I of seed 000's stopping rule is then met even when w has fewer than d
    arms in its support).

    Attributes:
      allocation: what to track, per instance: :class:`GOptimal`, :class:`XYDesign`,
        :class:`OracleWeights`, or any ``Configurable`` with ``__call__(instance) -> w [K]``.
      forced: forced exploration (False: pure tracking).
    """

    reads: ClassVar[tuple[str, ...]] = ()
    allocation: Configurable = GOptimal()
    forced: bool = True

    def __post_init__(self):
        if not callable(self.allocation):
            raise TypeError(f"Tracking.allocation must be a callable instance -> w [K] (jaxbandits.rules.sampling."
                            f"GOptimal, XYDesign, OracleWeights), got {self.allocation!r}")

    def prepare(self, instances: Instance) -> Instance:
        return with_cache(instances, map_instances(self.allocation, "__call__", instances))

    def update(self, keys, state, belief: Belief, ctx: Context):
        instance = ctx.instance
        w = instance_cache(instance)
        w = self.allocation(instance) if w is None else w
        dt = instance.arms.dtype
        counts = belief.stats.counts
        t = belief.t.astype(dt)
        real = instance.valid_arms()
        arm = common.argmax_fast(jnp.where(real, t * w - counts, -jnp.inf))
        if self.forced:
            pulled = jnp.where(real, counts, jnp.inf)
            K = jnp.asarray(instance.true_num_arms(), dt)
            starved = jnp.min(pulled) < jnp.sqrt(t) - K / 2.0
            arm = jnp.where(starved, common.argmax_fast(-pulled), arm)
        return arm, state


# -- initialisation ------------------------------------------------------------------------------
INITS = ("all", "spanning", "batch")


class InitialState(NamedTuple):
    first: Any           # [K] the initial arms ("spanning": d arms, then repeated; "all": None, arm t)
    then: Any            # the state of the rule handed over to


@dataclasses.dataclass(frozen=True)
class Initial(SamplingRule):
    """Pull the initial arms, then follow ``then`` (module docstring).

    ``then`` sees the pulls made so far as its starting point (``ctx.start``): a tracking rule
    starts from the initialisation's counts.  Its state is left as it was during the initial
    pulls; its keys are drawn every step, as the original algorithms drew them.

    Attributes:
      then: the sampling rule that takes over.
      first: "all" (each arm once: K pulls, which make V_t invertible when the arms span, one per
        step), "spanning" (d arms drawn at random among those that increase the rank, seed 000
        Lemma 5's A_0, :func:`jaxbandits.algorithms.common.random_spanning_set`) or "batch" (each
        arm once, all before the first step, their K rewards drawn together: the initialisation
        of LinGame's and of Tirinzoni & Degenne's released code, ``initial_counts``).
    """

    then: SamplingRule = RoundRobin()
    first: str = "all"

    def __post_init__(self):
        if self.first not in INITS:
            raise ValueError(f"Initial.first must be one of {INITS}, got {self.first!r}")
        if not isinstance(self.then, SamplingRule):
            raise TypeError(f"Initial.then must be a sampling rule, got {self.then!r}")

    @property
    def draws(self) -> int:
        return self.then.draws

    @property
    def pulls(self) -> int:
        return self.then.pulls

    def split_key(self, key):
        return self.then.split_key(key)

    @property
    def reads(self) -> tuple[str, ...]:
        return self.then.reads

    def initial_pulls(self, instance: Instance) -> int:
        return {"spanning": instance.dim, "all": instance.num_arms, "batch": 0}[self.first]

    def initial_counts(self, instance: Instance) -> jax.Array | None:
        if self.first != "batch":
            return None
        return instance.valid_arms().astype(instance.arms.dtype)  # each real arm once

    def init(self, key, instance: Instance) -> InitialState:
        K = instance.num_arms
        first = None  # "all": the arm of pull t < K is t, carried by no state
        if self.first == "batch":  # the key draws the initial rewards (Composition.init)
            return InitialState(first, self.then.init(jax.random.fold_in(key, 1), instance))
        if self.first == "spanning":
            first = jnp.resize(common.random_spanning_set(key, instance.arms).astype(jnp.int32), (K,))
        return InitialState(first, self.then.init(key, instance))

    def update(self, keys, state: InitialState, belief: Belief, ctx: Context):
        n0 = self.initial_pulls(ctx.instance)
        if self.first == "batch":  # the initial pulls are over before the first step
            arm, then = self.then.update(keys, state.then, belief, ctx._replace(start=ctx.instance.num_arms))
            return arm, InitialState(state.first, then)
        arm, then = self.then.update(keys, state.then, belief, ctx._replace(start=n0))
        warm = belief.t < n0
        K = ctx.instance.num_arms
        arm = jnp.where(warm, belief.t % K if state.first is None else state.first[belief.t % K], arm)
        then = jax.tree.map(lambda old, new: jnp.where(warm, old, new), state.then, then)
        return arm, InitialState(state.first, then)

    def validate(self, instance: Instance) -> None:
        self.then.validate(instance)

    def check_stopping(self, stopping) -> None:
        self.then.check_stopping(stopping)

    def converged(self, state: InitialState):
        return self.then.converged(state.then)

    def in_place(self, instance: Instance) -> bool:
        # the initial arms never change, and ``then``'s state, kept during the initial pulls, is
        # ``then``'s own where the engine holds the lane
        return self.then.in_place(instance)

    def prepare(self, instances: Instance) -> Instance:
        return self.then.prepare(instances)


# -- Frank-Wolfe sampling ------------------------------------------------------------------------
FORCED = ("squares", "exact_squares", "none")
GAMES = ("hedge", "certified", "exact")


class FrankWolfeState(NamedTuple):
    x: jax.Array          # Frank-Wolfe iterate x(t) [K]
    n_forced: jax.Array   # diagnostics: forced (uniform) steps, steps with a game (>= 2 r-active pieces)
    n_game: jax.Array
    game_gap: jax.Array   # largest relative duality gap of a certified or exact game


@dataclasses.dataclass(frozen=True)
class FrankWolfe(SamplingRule):
    """Frank-Wolfe Sampling's rule (Wang, Tzeng & Proutiere, NeurIPS 2021, Algorithm 1; every
    choice is described in :mod:`jaxbandits.algorithms.fixed_confidence.fws`): one Frank-Wolfe step
    per round on the lower-bound objective F(x) = min_{j != i*} f_j(x) at the empirical best item
    i* (the stopping rule's answer), through the r-subdifferential's matrix game
    (:mod:`jaxbandits.design.games`), forced exploration, and tracking argmax_k x_k(t + 1) / N_k(t).
    Its closest-alternative pieces j range over the active items (elimination at sampling).

    Attributes:
      r_scale, r_exponent: r_t = r_scale t^{-r_exponent} / K (experiments: 1, 9/10).
      forced: "squares" (released code), "exact_squares" (the text) or "none".
      max_active: cap on the r-active pieces entering the matrix game (static).
      game_iters: Hedge iterations, or with ``game="exact"`` the cap on the simplex's pivots (static).
      game: "hedge", "certified" (Hedge and its duality-gap certificate) or "exact" (simplex).
    """

    reads: ClassVar[tuple[str, ...]] = ("theta",)
    r_scale: float = hyperparameter(1.0, traced=True)
    r_exponent: float = hyperparameter(0.9, traced=True)
    forced: str = "squares"
    max_active: int = hyperparameter(8, count=1)
    game_iters: int = hyperparameter(64, count=1)
    game: str = "hedge"

    def __post_init__(self):
        for name, val, allowed in (("forced", self.forced, FORCED), ("game", self.game, GAMES)):
            if val not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {val!r}")

    def init(self, key, instance: Instance) -> FrankWolfeState:
        K = instance.num_arms
        dt = instance.arms.dtype
        i32 = jnp.zeros((), jnp.int32)
        return FrankWolfeState(jnp.full((K,), 1.0 / K, dt), i32, i32, jnp.zeros((), dt))

    def _square(self, t, K: int):
        """Whether round t is one of forced exploration's ("squares": t // K a perfect square;
        "exact_squares": t a multiple of K too; "none": never)."""
        if self.forced == "squares":
            return is_square(t // K)
        if self.forced == "exact_squares":
            return (t % K == 0) & is_square(t // K)
        return jnp.zeros((), bool)

    def direction(self, state: "FrankWolfeState", belief: Belief, ctx: Context):
        """(z(t), forced, game, relative duality gap of the game: 0 unless ``game="certified"``) of
        Algorithm 1 at the current data (class docstring)."""
        instance, active = ctx.instance, ctx.active
        X, Z = instance.arms, instance.items
        K, d = X.shape
        M = Z.shape[0]
        dt = X.dtype
        sigma = ctx.sigma
        tf = jnp.maximum(belief.t.astype(dt), 1.0)
        x = state.x
        best = belief.answer
        D = Z[best][None, :] - Z
        gaps = D @ belief.theta
        same = jnp.all(D == 0, axis=-1)
        ambiguous = jnp.any(~same & (gaps <= 0.0))  # theta_hat outside Lambda (ties)
        forced = ambiguous | self._square(belief.t, K)
        Vxinv = common.inverse_gram((X * x[:, None]).T @ X)
        U = D @ Vxinv
        q = jnp.sum(U * D, axis=-1)
        # f_j in KL units: (d_j^T theta)^2 / (2 sigma^2 ||d_j||^2_{V_x^-1}) (Prop. 1, Gaussian KL)
        f = gaps * gaps / (2.0 * sigma**2 * jnp.maximum(q, 1e-300))
        valid = ~same & active
        f = jnp.where(valid, f, jnp.inf)
        r = self.r_scale * tf ** (-self.r_exponent) / K  # r_t of the experiments (t^{-9/10} / K)
        P = min(int(self.max_active), M)
        negf, idx = jax.lax.top_k(-f, P)
        fP = -negf
        rows = jnp.isfinite(fP) & (fP < fP[0] + r)
        H = X @ U[idx].T  # [K, P]: a_k^T V_x^-1 d_j
        coef = gaps[idx] ** 2 / (2.0 * sigma**2 * jnp.maximum(q[idx] ** 2, 1e-300))
        G = coef[:, None] * (H * H).T - jnp.where(rows, fP, 0.0)[:, None]  # <e_k - x, grad f_j>
        if self.game == "exact":
            z, gap, _ = matrix_game_exact(G, rows, int(self.game_iters), needed=~forced)
        elif self.game == "certified":
            z, gap = matrix_game_certified(G, rows, int(self.game_iters))
        else:
            z, gap = matrix_game(G, rows, int(self.game_iters)), jnp.zeros((), dt)
        gap = jnp.where(forced, 0.0, gap)
        z = jnp.where(forced, jnp.full((K,), 1.0 / K, dt), z)
        return z, forced, jnp.sum(rows) > 1, gap

    def update(self, keys, state: FrankWolfeState, belief: Belief, ctx: Context):
        instance = ctx.instance
        dt = instance.arms.dtype
        if entrywise.fw_applies(instance, self.max_active, self.game):  # the accelerator program's form
            K = instance.num_arms
            tf = jnp.maximum(belief.t.astype(dt), 1.0)
            r = self.r_scale * tf ** (-self.r_exponent) / K
            arm, x, forced, game = entrywise.fw_step(
                instance.arms, instance.items, state.x, belief.stats.counts, belief.theta, belief.answer, ctx.active,
                belief.t, ctx.sigma, r, self._square(belief.t, K), int(self.game_iters))
            return arm, FrankWolfeState(x, state.n_forced + forced.astype(jnp.int32),
                                        state.n_game + (~forced & game).astype(jnp.int32),
                                        jnp.maximum(state.game_gap, jnp.zeros((), dt)))
        z, forced, game, gap = self.direction(state, belief, ctx)
        tf = jnp.maximum(belief.t.astype(dt), 1.0)
        x = state.x * ((tf - 1.0) / tf) + z / tf
        arm = common.argmax_fast(x / jnp.maximum(belief.stats.counts, 1e-300))
        return arm, FrankWolfeState(x, state.n_forced + forced.astype(jnp.int32),
                                    state.n_game + (~forced & game).astype(jnp.int32),
                                    jnp.maximum(state.game_gap, gap))

    def converged(self, state: FrankWolfeState):
        # the exact game's pivot cap reached before the optimum shows as a gap above rounding
        return state.game_gap <= EXACT_GAME_GAP if self.game == "exact" else None


# -- a game learner against nature's best response --------------------------------------------------
GAME_LEARNERS = ("per_answer", "single")
GAME_TRACKINGS = ("C", "D")
BEST_RESPONSES = ("agent", "counts")
GAME_WIDTHS = ("squared", "norm")


class GameState(NamedTuple):
    """State of :class:`Game`.

    Attributes:
      W: [K] cumulative allocations sum_s w(s) (C-tracking), from the counts of the initialisation.
      keys: [S] the answer each learner slot belongs to (:func:`~jaxbandits.rules.alternative.answer_rank`; -1: empty).
      used: [S] the round each slot was last used.
      losses: [S, K] AdaHedge's cumulative losses.  gap: [S] its cumulative mixability gap.
    """

    W: jax.Array
    keys: jax.Array
    used: jax.Array
    losses: jax.Array
    gap: jax.Array


@dataclasses.dataclass(frozen=True)
class Game(SamplingRule):
    """The agent-nature game of LinGame (Degenne, Menard, Shang & Valko, ICML 2020, Sec 3;
    :mod:`jaxbandits.algorithms.fixed_confidence.lingame` has the algorithm in full):

    1. the agent: the AdaHedge learner (de Rooij et al. 2014, :func:`jaxbandits.design.games.hedge_weights`)
       of the recommended answer plays w_t;
    2. nature best-responds: lambda_t = argmin_{lambda in Alt(answer)} ||theta_hat - lambda||^2_{V}
       over the pieces whose challenger is active (:meth:`nature`), V = V_{w_t} (``"agent"``) or
       V_{N_t} (``"counts"``);
    3. the learner incurs minus the optimistic gains
       U_k = (|x_k^T (theta_hat - lambda_t)| / sigma + sqrt(2 log t) ||x_k||_{V_t^-1})^2 / 2
       (``optimism``; ``width="norm"`` puts ||x_k||^{1/2}, as seed 003's code), clipped at log t (``clip``);
    4. the arm is tracked: C-tracking argmax_k sum_s w_k(s) - N_k(t), or D-tracking t w_k - N_k(t).

    The rule computes its ridge estimate theta_hat = (V_{N_t} + reg I)^-1 b_t and V_t^-1 from the
    counts at every step (as LinGame does), so no estimate is carried between steps (``reads`` is
    empty: less state per lane); LinGame's stopping rule, :class:`~jaxbandits.rules.stopping.GameGLR`,
    uses the same ``reg``.

    Attributes:
      m: size of the answer (1: best-arm identification; Top-m answers are keyed by their rank).
      reg: ridge regulariser of the estimate and of V_t = V_{N_t} + reg I (> 0).
      hedge_delta0: AdaHedge's initial mixability gap (0.01 in the experiments' code).
      learners: "per_answer" (one learner per answer, Sec 3) or "single" (one for every answer,
        Tirinzoni & Degenne's code).
      learner_slots: learners kept; with more answers the least recently used one restarts.
      tracking: "C" or "D".
      best_response: "agent" (V_{w_t}, Sec 3) or "counts" (V_{N_t}, seed 003's code).
      width: "squared" (the paper's) or "norm" (seed 003's code).
      optimism: optimistic gains; False: the plain gains (x_k^T (theta_hat - lambda_t))^2 / 2 sigma^2.
      clip: clip the gains at log t (the experiments' code).
    """

    reads: ClassVar[tuple[str, ...]] = ()
    m: int = hyperparameter(1, count=1)
    reg: float = hyperparameter(1.0, low=0.0, traced=True)
    hedge_delta0: float = hyperparameter(0.01, low=0.0, traced=True)
    learners: str = "per_answer"
    learner_slots: int = hyperparameter(16, count=1)
    tracking: str = "C"
    best_response: str = "agent"
    width: str = "squared"
    optimism: bool = True
    clip: bool = True

    def __post_init__(self):
        for field, allowed in (("learners", GAME_LEARNERS), ("tracking", GAME_TRACKINGS),
                               ("best_response", BEST_RESPONSES), ("width", GAME_WIDTHS)):
            if getattr(self, field) not in allowed:
                raise ValueError(f"{field} must be one of {allowed}, got {getattr(self, field)!r}")

    def validate(self, instance: Instance) -> None:
        if math.comb(instance.num_items, int(self.m)) >= 2**62:
            raise ValueError("too many answers to key the learners")

    def slots(self, instance: Instance) -> int:
        """The learner slots kept: ``learner_slots``, or the number of answers when that is fewer."""
        return int(min(self.learner_slots, math.comb(instance.num_items, int(self.m))))

    def init(self, key, instance: Instance) -> GameState:
        K = instance.num_arms
        dt = instance.arms.dtype
        S = self.slots(instance)
        return GameState(W=jnp.zeros((K,), dt), keys=jnp.full((S,), -1, jnp.int64), used=jnp.zeros((S,), jnp.int32),
                         losses=jnp.zeros((S, K), dt), gap=jnp.full((S,), self.hedge_delta0, dt))

    def lookup(self, state: GameState, key):
        """(slot, losses, gap) of the learner of answer ``key``, fresh (losses 0, gap
        ``hedge_delta0``) when new: an empty slot, else the least recently used one."""
        hit = state.keys == key
        found = jnp.any(hit)
        lru = common.argmax_fast(-jnp.where(state.keys < 0, -1, state.used))
        slot = jnp.where(found, common.argmax_fast(hit), lru)
        fresh = ~found
        losses = jnp.where(fresh, 0.0, state.losses[slot])
        gap = jnp.where(fresh, jnp.asarray(self.hedge_delta0, state.gap.dtype), state.gap[slot])
        return slot, losses, gap

    def nature(self, theta, w, stats: common.LinearStats, instance: Instance, answer, active):
        """Nature's best response lambda_t = argmin_{lambda in Alt(answer)} ||theta - lambda||^2_V
        (V = V_w, or V_{N_t} with ``best_response="counts"``) over the pieces whose challenger j is
        ``active``: (lambda_t, i, j), the piece being {lambda^T (z_j - z_i) >= 0}.  ``answer``: [M]
        bool."""
        X, Z = instance.arms, instance.items
        Vinv = common.inverse_gram((X.T * w) @ X if self.best_response == "agent" else stats.gram)
        _, i, j = closest_piece(theta, Vinv, Z, answer, active | answer, int(self.m))
        y = Z[j] - Z[i]
        # projection on {lambda^T y >= 0} in the V norm (closed form)
        coef = (y @ theta) / jnp.maximum(y @ Vinv @ y, 1e-300)
        return theta - coef * (Vinv @ y), i, j

    def in_place(self, instance: Instance) -> bool:
        """Under the accelerator policy's entry form (:func:`jaxbandits.rules.entrywise.applies`)
        the learner table and the allocations come out of one kernel, which writes a held lane's
        back as they were: no select of them follows."""
        return entrywise.applies(instance, self.m, self.slots(instance))

    def update(self, keys, state: GameState, belief: Belief, ctx: Context):
        instance = ctx.instance
        X = instance.arms
        dt = X.dtype
        tf = belief.t.astype(dt)
        stats = belief.stats
        if belief.answer.ndim == 0 and entrywise.applies(instance, self.m, state.keys.shape[0]):  # entry form
            akey = belief.answer if self.learners == "per_answer" else np.zeros((), np.int64)  # one learner: key 0
            live = None if isinstance(ctx.live, bool) and ctx.live else ctx.live
            arm, W, kn, un, Ln, gn = entrywise.game_update(
                self, X, instance.items, stats.gram, stats.b, stats.counts, state.W, state.keys, state.used,
                state.losses, state.gap, belief.t, ctx.start, belief.answer, ctx.active, ctx.sigma, akey, live)
            return arm, GameState(W, kn, un, Ln, gn)
        d = stats.gram.shape[0]
        Vinv = common.inverse_gram(stats.gram + self.reg * jnp.eye(d, dtype=stats.gram.dtype))
        theta = Vinv @ stats.b
        answer = belief.answer if belief.answer.ndim else jnp.arange(instance.num_items) == belief.answer
        akey = answer_rank(answer, int(self.m))
        if self.learners == "single":
            akey = jnp.zeros_like(akey)
        slot, losses, gap = self.lookup(state, akey)
        w = hedge_weights(losses, gap)
        lam, _, _ = self.nature(theta, w, belief.stats, instance, answer, ctx.active)
        h = jnp.log(tf) if self.optimism else jnp.zeros((), dt)
        q = jnp.maximum(jnp.sum((X @ Vinv) * X, axis=-1), 0.0)  # ||x_k||^2_{V_t^-1}
        width = jnp.sqrt(2.0 * h * (q if self.width == "squared" else jnp.sqrt(q)))
        gains = 0.5 * (jnp.abs(X @ (theta - lam)) / ctx.sigma + width) ** 2
        if self.clip:
            gains = jnp.minimum(gains, jnp.log(tf))
        losses, gap = hedge_update(losses, gap, -gains)
        counts = belief.stats.counts
        base = jnp.where(belief.t == ctx.start, counts, state.W)  # the allocations start at the initial counts
        W = base + w
        target = W if self.tracking == "C" else tf * w
        arm = common.argmax_fast(target - counts)
        t1 = belief.t + 1
        return arm, GameState(W, state.keys.at[slot].set(akey), state.used.at[slot].set(t1),
                              state.losses.at[slot].set(losses), state.gap.at[slot].set(gap))


# -- Top Two -------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class EBLeader(Configurable):
    """The leader is the stopping rule's recommended answer (Top Two revisited Sec 2.1, "EB")."""

    def __call__(self, key, belief: Belief, ctx: Context) -> jax.Array:
        del key, ctx
        return belief.answer


@dataclasses.dataclass(frozen=True)
class TSLeader(Configurable):
    """Thompson-sampling leader: argmax_i z_i^T theta~, theta~ ~ N(theta_hat, sigma^2 V_t^-1), the
    Gaussian posterior (Top Two revisited Sec 2.1, TTTS)."""

    def __call__(self, key, belief: Belief, ctx: Context) -> jax.Array:
        theta = belief.theta
        L = common.cholesky(belief.inverse())
        sample = theta + ctx.sigma * (L @ jax.random.normal(key, theta.shape, theta.dtype))
        return common.argmax_fast(ctx.instance.items @ sample)


class DesignState(NamedTuple):
    cum: jax.Array       # sum of the tracked designs [K] (starts at the counts of the initialisation)
    w: jax.Array         # last design (warm start) [K]


@dataclasses.dataclass(frozen=True)
class PairDesign(Configurable):
    """Track the c-optimal designs w(y_s) of the pair directions y_s = z_B - z_C (Elfving; Jourdan &
    Degenne Sec 4-5): pull argmax_k sum_{s <= t} w_k(y_s) - N_k(t) (C-tracking).  w(y_t) from
    :func:`jaxbandits.design.copt.c_optimal`, ``iters`` Frank-Wolfe steps with exact line search
    warm-started from w(y_{t-1}).  In the unstructured case (arms = items = e_i), w(e_B - e_C) puts
    1/2 on B and 1/2 on C: the Top Two rule with beta = 1/2.

    Attributes:
      iters: Frank-Wolfe iterations per round (static).
    """

    iters: int = hyperparameter(16, count=1)

    def init(self, instance: Instance) -> DesignState:
        K = instance.num_arms
        dt = instance.arms.dtype
        return DesignState(jnp.zeros((K,), dt), jnp.full((K,), 1.0 / K, dt))

    def __call__(self, key, state: DesignState, y, lead, chal, belief: Belief, ctx: Context):
        del key, lead, chal
        counts = belief.stats.counts
        w = c_optimal(ctx.instance.arms, y, init=state.w, iters=int(self.iters)).allocation
        base = jnp.where(belief.t == ctx.start, counts, state.cum)  # tracking starts from the initial counts
        cum = base + w
        return common.argmax_fast(cum - counts), DesignState(cum, w)


@dataclasses.dataclass(frozen=True)
class GreedyPair(Configurable):
    """Pull argmax_k (x_k^T V^-1 y)^2 / (1 + x_k^T V^-1 x_k): the arm that most reduces
    ||y||^2_{V^-1} in one pull (seed 003's greedy selection), y = z_B - z_C."""

    def init(self, instance: Instance):
        return ()

    def __call__(self, key, state, y, lead, chal, belief: Belief, ctx: Context):
        del key, lead, chal
        X = ctx.instance.arms
        Ainv = belief.inverse()
        u = X @ (Ainv @ y)
        c = jnp.sum((X @ Ainv) * X, axis=-1)
        return common.argmax_fast(u * u / (1.0 + c)), state


@dataclasses.dataclass(frozen=True)
class LeaderCoin(Configurable):
    """Pull the leader with probability ``beta``, else the challenger (Top Two revisited
    Algorithm 1; needs arms = items, the unstructured case).

    Attributes:
      beta: the leader's probability, in (0, 1) (Top Two revisited: 1/2).
    """

    beta: float = hyperparameter(0.5, low=0.0, high=1.0, traced=True)

    def init(self, instance: Instance):
        return ()

    def __call__(self, key, state, y, lead, chal, belief: Belief, ctx: Context):
        dt = ctx.instance.arms.dtype
        return jnp.where(jax.random.uniform(key, (), dt) < self.beta, lead, chal), state

    def validate(self, instance: Instance) -> None:
        if instance.num_arms != instance.num_items or not np.array_equal(
                np.asarray(instance.arms), np.asarray(instance.items)):
            raise ValueError("LeaderCoin pulls the leader and challenger items: it needs arms = items "
                             "(Top Two's allocation=\"arms\")")
        b = self.beta
        if isinstance(b, (int, float)) and not 0.0 < b < 1.0:
            raise ValueError(f"LeaderCoin.beta must be in (0, 1), got {b}")


def tc_challenger(leader: jax.Array, belief: Belief, ctx: Context) -> jax.Array:
    """argmin_{j active} W^eps_{leader, j} (Top Two revisited eq. (4); W = +inf at j = leader)."""
    W, _, _ = glr.transport_costs(belief.theta, belief.inverse(), ctx.instance.items, leader, ctx.epsilon)
    W = jnp.where(ctx.active, W, jnp.inf)  # TC challenger over the active pieces
    return common.argmax_fast(-W)


@dataclasses.dataclass(frozen=True)
class TopTwo(SamplingRule):
    """Top Two sampling: a leader, the transportation-cost challenger, an allocation between them
    (module docstring).  Draws two keys per step (the leader's, the allocation's).

    Attributes:
      leader: :class:`EBLeader` or :class:`TSLeader`.
      allocation: :class:`PairDesign`, :class:`GreedyPair` or :class:`LeaderCoin`.
    """

    draws: ClassVar[int] = 2
    leader: Configurable = EBLeader()
    allocation: Configurable = PairDesign()

    def init(self, key, instance: Instance):
        return self.allocation.init(instance)

    def update(self, keys, state, belief: Belief, ctx: Context):
        k_lead, k_alloc = keys
        lead = self.leader(k_lead, belief, ctx)
        Z = ctx.instance.items
        if entrywise.transport_applies(ctx.instance, None):  # the accelerator program's form: one kernel
            chal, y = entrywise.tc_challenger(Z, belief.theta, belief.inverse(), lead, ctx.active, ctx.epsilon)
        else:
            chal = tc_challenger(lead, belief, ctx)
            y = Z[lead] - Z[chal]
        return self.allocation(k_alloc, state, y, lead, chal, belief, ctx)

    def validate(self, instance: Instance) -> None:
        check = getattr(self.allocation, "validate", None)
        if check is not None:
            check(instance)
