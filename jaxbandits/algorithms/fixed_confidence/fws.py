"""Frank-Wolfe Sampling (FWS): Wang, Tzeng & Proutiere, "Fast Pure Exploration via Frank-Wolfe",
NeurIPS 2021, Algorithm 1, for (transductive) linear best-arm identification (Sec 5.3, App. on
linear BAI).

The sampling rule runs one Frank-Wolfe step per round on the lower-bound objective
F(x) = min_{j != i*} f_j(x), f_j(x) = inf_{lambda : lambda^T (z_j - z_i*) >= 0} sum_k x_k
KL(x_k^T theta_hat, x_k^T lambda), with x the Frank-Wolfe iterate on the simplex of arms and i* the
empirical best item.  For Gaussian rewards with variance sigma^2 (KL = (.)^2 / (2 sigma^2)) and
d_j = z_i* - z_j, V_x = sum_k x_k a_k a_k^T (the paper's Prop. 1 / envelope form, as the released
code ``alt_min_linear_bai``):

    f_j(x) = (d_j^T theta)^2 / (2 sigma^2 ||d_j||^2_{V_x^-1}),
    grad f_j(x)_k = (d_j^T theta)^2 (a_k^T V_x^-1 d_j)^2 / (2 sigma^2 ||d_j||^4_{V_x^-1}),

and <x, grad f_j(x)> = f_j(x) (degree-one homogeneity).  One round at t pulls (Algorithm 1):

* **Initialisation**: each arm once (t = K), x(K) = uniform (released code).
* **Forced exploration**: if theta_hat has ties (not in the paper's set Lambda) or t is in the
  forced set, z(t) = uniform.  ``forced="squares"`` (default, the experiments: the released code
  tests ``is_complete_square(floor(t / K))``, so every round t in [n^2 K, (n^2 + 1) K) is forced,
  K consecutive rounds each time, among them the K rounds right after the initialisation);
  ``"exact_squares"``: sqrt(t / K) in N (Algorithm 1's text: one round at t = K n^2);
  ``"none"`` switches it off.
* **r-subdifferential step** (eq. (7)-(8)): otherwise, with r_t = t^{-9/10} / K (the experiments'
  value, ``r_scale * t^{-r_exponent} / K``), the r_t-subdifferential H(x, r_t) is the convex hull
  of the gradients of the f_j with f_j(x) < F(x) + r_t, and
  z(t) = argmax_{z in simplex} min_{h in H} <z - x, h>, a matrix game: when one f_j is r-active it
  is the vertex e_k, k = argmax_k grad f_j(x)_k; otherwise the code solves the LP exactly; here a
  fixed number (``game_iters``) of Hedge iterations for the minimising player against best
  responses, returning the average of the best responses (an approximate maximiser: the game value
  is reached within O(range sqrt(log P / game_iters))).  At most ``max_active`` r-active pieces
  (the smallest f_j) enter the game (static shape); the others are dropped.
* **Update and tracking**: x(t + 1) = (1 - 1/t) x(t) + z(t) / t; pull argmax_k x_k(t + 1) / N_k(t)
  (the code's ``argmax(x ./ hw)``).
* **Stopping** (Sec 2, GLR test): Z(t) = min_{j != i*} W_{i*,j} > sigma^2 beta(t, delta), with the
  experiments' beta = log((1 + log t) / delta) (``threshold="heuristic"``; ``"lts"``: seed 000
  eq. (9), proven delta-correct; :mod:`.glr`).  The estimate is the released code's ridge estimate
  theta_hat = (A_t + reg I)^{-1} b_t with reg = 1 (``Vinv`` starts at the identity), and Z(t) is
  the code's envelope form sum_k N_k (a_k^T (theta_hat - lambda_j))^2 / 2 at the alternative
  lambda_j built with W = (A_t + reg I)^{-1}:  Z_j = (d_j^T theta)^2 d_j^T W A_t W d_j /
  (2 (d_j^T W d_j)^2)  (with reg = 0 this is the exact GLR of seed 000 Lemma 7).

Noise scale sigma (``sigma``, else :func:`common.noise_scale`): enters the KL units of f_j and its
gradient (compared with r_t, which is in KL units) and the threshold sigma^2 beta.  With the ridge
prior fixed (not scaled with sigma) the estimate, f_j / sigma^2-units and Z / sigma^2 are
equivariant under (theta, sigma) -> (theta / sigma, 1): exactly sigma-equivariant.

Elimination protocol (docs/design.md, section 5; :class:`~jaxbandits.algorithms.Eliminate`): :meth:`FWS.linear_stats` and :meth:`FWS.step_masked` (the
pieces j of the r-subdifferential range over active items only).

Measured (delta = 0.05, shared 2-core machine at load ~11, compile excluded): Soare d = 2
(omega = 0.01, theta = 2 e_1, sigma = 1): 32 runs, mean 105,003 +- 13,918 pulls, 1.96 +- 0.26 x the
lower bound sigma^2 T* kl(delta, 1 - delta) = 53,532, 0 errors, 0.31 replications/s.  Many arms
K = 1000 (released code's generator, 4 instances x 4 runs): 2,056 +- 7 pulls (34.6 x the bound,
59.4 on average), 0 errors, 0.66 replications/s; with ``forced="exact_squares"`` 1,048 +- 9
(17.6 x): the code's floor(t / K) rule makes the K rounds after the initialisation uniform, and
the initialisation itself costs K pulls.  On the calibration instance hard_top1 (sigma = 1) no
round had two r-active pieces in 3000 pulls (``n_game`` = 0; 93 forced rounds), and
``game_iters`` = 64 vs 512 gave 1086 +- 41 vs 1089 +- 41 pulls (300 runs each, 2 errors each).

The matrix game, certified (``game="certified"``).  The released code solves the game exactly (a
linear program, ``solveZeroSumGame``); Hedge is approximate.  With ``game="certified"`` the Hedge
run also yields the minimising player's average strategy q, and max_k (q^T G)_k - min_j (G z)_j >= 0
bounds how far z's value is from the game's value (weak duality); the largest such gap over the run,
relative to the payoff range, is kept in the state (``game_gap``), so an approximate solve is
reported, never hidden.  With ``game="exact"`` the game is solved as the linear program it is, by
the simplex method (:func:`matrix_game_exact`: at most ``game_iters`` pivots, none on the steps that
need no game), and the same certificate is kept: on the Table 1 instance of Tirinzoni & Degenne it
is at rounding level (below 1e-15 of the payoff range) where 512 Hedge rounds over 16 pieces left
1.7-2.1 %, and a step of 16 lanes costs 1.5-2.4 ms, against 7.9-8.0 ms with those Hedge rounds and
0.9-1.9 ms with no game at all (two measurements on a loaded 2-core CPU, each the minimum of 5).

Tirinzoni & Degenne 2022 (:meth:`FWS.tirinzoni_degenne`, :data:`TIRINZONI_DEGENNE`): their Table 1
runs FWS with the ridge estimate (reg = 1), every arm pulled once, and the GLR of their ``runit.jl``
-- (d^T theta)^2 / (2 ||d||^2_{(A_t + I)^{-1}}) (``glr_form="ridge"``), not the envelope form --
against log((t + 1) / delta) (``threshold="log_t"``, :mod:`.glr`); their ``envelope.jl`` puts every
r-active piece into the game and solves it exactly (``game="exact"``, no cap on the pieces).
"""
from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxbandits.algorithms import common
from jaxbandits.algorithms.base import Algorithm, Outcome, answer_mask
from jaxbandits.algorithms import glr
from jaxbandits.algorithms.common import inverse_gram
from jaxbandits.batching import current_policy, fixed_trip_while, solve_where
from jaxbandits.environment import pull
from jaxbandits.instances.base import Instance

FORCED = ("squares", "exact_squares", "none")
GLR_FORMS = ("envelope", "ridge")
GAMES = ("hedge", "certified", "exact")

#: largest relative duality gap of ``game="exact"`` counted as solved (the simplex's optimum is
#: certified to about 1e-14 of the payoff range; a larger gap means the pivot cap was reached)
EXACT_GAME_GAP = 1e-9

#: FWS as run in Tirinzoni & Degenne 2022, Table 1 (released code ``experiments/linear_bai.jl``,
#: ``runit.jl``): log((t + 1) / delta) threshold, ridge GLR; the matrix game over every r-active
#: piece solved exactly as a linear program, as the released ``envelope.jl`` (``solveZeroSumGame``)
#: does: :func:`matrix_game_exact`, at most 256 simplex pivots (``game_gap`` certifies the solution)
TIRINZONI_DEGENNE = dict(threshold="log_t", reg=1.0, glr_form="ridge", game="exact", game_iters=256,
                         max_active=1024)


class FWSState(NamedTuple):
    stats: common.LinearStats
    t: jax.Array        # pulls so far
    x: jax.Array        # Frank-Wolfe iterate x(t) [K]
    theta: jax.Array    # ridge estimate after the last pull [d]
    best: jax.Array     # empirical best item (the recommendation)
    stopped: jax.Array
    n_forced: jax.Array  # diagnostics: forced (uniform) steps, steps with a game (>= 2 r-active pieces)
    n_game: jax.Array
    game_gap: jax.Array = None  # largest relative duality gap of a certified game (``game="certified"``)


def _hedge_setup(G: jax.Array, rows: jax.Array, iters: int):
    """The payoffs of the active rows (others zeroed), Hedge's step sqrt(8 log P / iters) / payoff
    range, and that range: shared by :func:`matrix_game` and :func:`matrix_game_certified`."""
    Gm = jnp.where(rows[:, None], G, 0.0)
    span = jnp.max(jnp.where(rows[:, None], G, -jnp.inf)) - jnp.min(jnp.where(rows[:, None], G, jnp.inf))
    n_rows = jnp.maximum(jnp.sum(rows), 2).astype(G.dtype)
    return Gm, jnp.sqrt(8.0 * jnp.log(n_rows) / iters) / jnp.maximum(span, 1e-300), span


def matrix_game(G: jax.Array, rows: jax.Array, iters: int) -> jax.Array:
    """Approximate maximiser z [K] of max_{z in simplex} min_{j in rows} (G z)_j, G [P, K].

    Hedge (multiplicative weights, step sqrt(8 log P / iters) / range) for the minimising row
    player against best responses of the column player; z is the empirical distribution of the
    best responses.  With one active row it is the vertex argmax_k G[j, k].  Fixed cost
    O(iters P K)."""
    P, K = G.shape
    dt = G.dtype
    Gm, eta, _ = _hedge_setup(G, rows, iters)

    def body(_, carry):
        loss, counts = carry
        logits = jnp.where(rows, -eta * (loss - jnp.min(jnp.where(rows, loss, jnp.inf))), -jnp.inf)
        q = jax.nn.softmax(logits)
        k = common.argmax_fast(q @ Gm)
        return loss + Gm[:, k], counts.at[k].add(1.0)

    _, counts = jax.lax.fori_loop(0, iters, body, (jnp.zeros((P,), dt), jnp.zeros((K,), dt)))
    return counts / iters


def matrix_game_certified(G: jax.Array, rows: jax.Array, iters: int):
    """(z [K], gap): :func:`matrix_game`'s maximiser and its duality-gap certificate
    max_k (q^T G)_k - min_{j in rows} (G z)_j >= 0, q the minimising player's average Hedge strategy
    (weak duality: z's value is within ``gap`` of the game's value), relative to the payoff range
    of the active rows.  Zero when a single row is active (the vertex is exact)."""
    P, K = G.shape
    dt = G.dtype
    Gm, eta, span = _hedge_setup(G, rows, iters)

    def body(_, carry):
        loss, counts, qsum = carry
        logits = jnp.where(rows, -eta * (loss - jnp.min(jnp.where(rows, loss, jnp.inf))), -jnp.inf)
        q = jax.nn.softmax(logits)
        k = common.argmax_fast(q @ Gm)
        return loss + Gm[:, k], counts.at[k].add(1.0), qsum + q

    _, counts, qsum = jax.lax.fori_loop(0, iters, body, (jnp.zeros((P,), dt), jnp.zeros((K,), dt), jnp.zeros((P,), dt)))
    z = counts / iters
    upper = jnp.max((qsum / iters) @ Gm)
    lower = jnp.min(jnp.where(rows, G @ z, jnp.inf))
    single = jnp.sum(rows) <= 1
    z = jnp.where(single, jax.nn.one_hot(common.argmax_fast(jnp.where(rows[:, None], G, -jnp.inf).max(0)), K, dtype=dt), z)
    gap = jnp.where(single, 0.0, jnp.maximum(upper - lower, 0.0) / jnp.maximum(span, 1e-300))
    return z, gap


def matrix_game_exact(G: jax.Array, rows: jax.Array, max_pivots: int | jax.Array,
                      needed: jax.Array | bool = True):
    """(z [K], gap, pivots): max_{z in simplex} min_{j in rows} (G z)_j, G [P, K], solved exactly as
    a linear program, the released code's ``solveZeroSumGame`` (an LP, there by an interior-point
    solver), here by the simplex method on the row player's LP in its textbook form (von Neumann;
    e.g. Chvatal, "Linear Programming", 1983, ch. 15): with the payoffs shifted and scaled to
    G' = (G - min G) / range + 1 >= 1 on the active rows,

        max 1^T y  s.t.  G'^T y <= 1, y >= 0   (y [P], inactive rows fixed at 0),

    whose optimum is 1 / v' (v' the value of G'), the row player's strategy q = y / 1^T y and the
    column player's z the LP's dual solution (the slacks' reduced costs) times v'.  The origin is
    feasible, so there is no phase one; Bland's rule (entering: the first column with a negative
    reduced cost; leaving: the smallest ratio, ties to the smallest basic index) excludes cycling.
    A ``while_loop`` pivots until no reduced cost is negative or ``max_pivots`` (may be traced) is reached;
    it does not run when ``needed`` is false (or a single row is active: z is then the vertex
    argmax_k G[j, k]).  Under the accelerator policy (:func:`jaxbandits.batching.current_policy`)
    with an int ``max_pivots``, the same pivots run as ``max_pivots`` masked trips
    (:func:`jaxbandits.batching.fixed_trip_while`) under :func:`jaxbandits.batching.solve_where`,
    on the lanes that need the game only: no loop that asks the host for its predicate.  ``gap`` is the certificate of :func:`matrix_game_certified`,
    max_k (q^T G)_k - min_{j in rows} (G z)_j >= 0 relative to the range, computed from the solution
    in the original payoffs: rounding-level at an optimum, larger only when the pivot cap stops the
    method early (reported, never hidden).  Where the optimal z is not unique the simplex method
    returns a vertex of the optimal set, an interior-point solver a point inside it: the same value.
    Cost O(pivots K (P + K))."""
    P, K = G.shape
    dt = G.dtype
    n_active = jnp.sum(rows)
    single = n_active <= 1
    gmin = jnp.min(jnp.where(rows[:, None], G, jnp.inf))
    span = jnp.maximum(jnp.max(jnp.where(rows[:, None], G, -jnp.inf)) - gmin, 1e-300)
    Gs = jnp.where(rows[:, None], (G - gmin) / span + 1.0, 0.0)            # [P, K], >= 1 on active rows
    cost = jnp.where(rows, 1.0, 0.0).astype(dt)
    # tableau [K + 1, P + K + 1]: constraints G'^T y + s = 1, objective row -c^T y (maximise c^T y)
    T = jnp.concatenate([
        jnp.concatenate([Gs.T, jnp.eye(K, dtype=dt), jnp.ones((K, 1), dt)], axis=1),
        jnp.concatenate([-cost, jnp.zeros((K + 1,), dt)])[None, :]], axis=0)
    basis = P + jnp.arange(K)
    n_cols = P + K
    eps = 1e-11
    col_ids = jnp.arange(n_cols)

    def entering(T):
        neg = T[K, :n_cols] < -eps
        return jnp.min(jnp.where(neg, col_ids, n_cols))

    def cond(c):
        T, basis, it = c
        return (entering(T) < n_cols) & (it < max_pivots)

    def body(c):
        T, basis, it = c
        e = entering(T)
        col = T[:K, e]
        ok = col > eps
        ratio = jnp.where(ok, T[:K, -1] / jnp.where(ok, col, 1.0), jnp.inf)
        rmin = jnp.min(ratio)
        tie = ok & (ratio <= rmin * (1.0 + 1e-12) + 1e-15)
        r = jnp.argmin(jnp.where(tie, basis, n_cols + 1))
        prow = T[r] / T[r, e]
        T = T - T[:, e][:, None] * prow[None, :]
        T = T.at[r].set(prow)
        return T, basis.at[r].set(e), it + 1

    go = jnp.asarray(needed) & ~single
    T0 = jnp.where(go, T, T.at[K].set(jnp.zeros((n_cols + 1,), dt)))  # nothing to pivot on: loop skipped
    start = (T0, basis, jnp.int32(0))
    if isinstance(max_pivots, int) and current_policy().batched:
        # accelerator policy: the same pivots as loops of trip counts known at compile time, only
        # on the lanes that need the game (one pass on the smallest buffer holding them)
        def pivot(T, basis):  # no closed-over tracers (solve_where's batching rule)
            ids = jnp.arange(n_cols)

            def running(c):
                return (jnp.min(jnp.where(c[0][K, :n_cols] < -eps, ids, n_cols)) < n_cols) & (c[2] < max_pivots)

            return fixed_trip_while(running, body, (T, basis, jnp.int32(0)), max_pivots)

        T, basis, pivots = solve_where(go, pivot, (T0, basis), start)
    else:
        T, basis, pivots = jax.lax.while_loop(cond, body, start)
    y = jnp.zeros((P + K,), dt).at[basis].set(T[:K, -1])[:P]
    y = jnp.where(rows, jnp.maximum(y, 0.0), 0.0)
    q = y / jnp.maximum(jnp.sum(y), 1e-300)
    zd = jnp.maximum(T[K, P:P + K], 0.0)
    z = zd / jnp.maximum(jnp.sum(zd), 1e-300)
    vertex = jax.nn.one_hot(common.argmax_fast(jnp.where(rows[:, None], G, -jnp.inf).max(0)), K, dtype=dt)
    z = jnp.where(single | ~go, vertex, z)
    upper = jnp.max(q @ jnp.where(rows[:, None], G, 0.0))
    lower = jnp.min(jnp.where(rows, G @ z, jnp.inf))
    gap = jnp.where(single | ~go, 0.0, jnp.maximum(upper - lower, 0.0) / span)
    return z, gap, pivots


def is_square(n: jax.Array) -> jax.Array:
    """n is a perfect square (n >= 0 integer array), robust to float sqrt rounding."""
    p = jnp.floor(jnp.sqrt(n.astype(jnp.float32))).astype(n.dtype)
    return (p * p == n) | ((p + 1) * (p + 1) == n)


def envelope_glr(theta, gram, W, Z, best):
    """The released code's GLR (module docstring): Z_j = (d_j^T theta)^2 d_j^T W A W d_j /
    (2 (d_j^T W d_j)^2), d_j = z_best - z_j, min over j with z_j != z_best."""
    D = Z[best][None, :] - Z
    gaps = jnp.maximum(D @ theta, 0.0)
    U = D @ W
    q = jnp.sum(U * D, axis=-1)
    s = jnp.sum((U @ gram) * U, axis=-1)
    z = gaps * gaps * s / (2.0 * jnp.maximum(q * q, 1e-300))
    same = jnp.all(D == 0, axis=-1)
    return jnp.min(jnp.where(same, jnp.inf, z))


@dataclasses.dataclass(frozen=True)
class FWS(Algorithm):
    """Frank-Wolfe Sampling (Wang et al. 2021, Algorithm 1; module docstring for every choice).

    Attributes:
      delta: confidence level.
      threshold: "heuristic" (experiments: log((1 + log t) / delta)) or "lts" (seed 000 eq. (9)).
      reg: ridge parameter of the estimate and of the GLR (released code: 1).
      r_scale, r_exponent: r_t = r_scale t^{-r_exponent} / K (experiments: 1, 9/10).
      forced: "squares" (uniform z when floor(t / K) is a perfect square: the released code),
        "exact_squares" (when t / K is a perfect square: the text) or "none".
      max_active: cap on the r-active pieces entering the matrix game (static; at most the number
        of items is used).
      game_iters: Hedge iterations of the matrix game, or with ``game="exact"`` the cap on the
        simplex's pivots (static).
      sigma: sub-Gaussian noise scale (default :func:`common.noise_scale`).
      glr_form: "envelope" (Wang et al.'s released code, module docstring) or "ridge" (the GLR
        with the ridge inverse, Tirinzoni & Degenne's code).
      game: "hedge", "certified" (Hedge plus its duality-gap certificate, ``game_gap``) or "exact"
        (the linear program solved by the simplex method, :func:`matrix_game_exact`, with the same
        certificate).
    """

    delta: float = 0.05
    threshold: str = "heuristic"
    reg: float = 1.0
    r_scale: float = 1.0
    r_exponent: float = 0.9
    forced: str = "squares"
    max_active: int = 8
    game_iters: int = 64
    sigma: float | None = None
    glr_form: str = "envelope"
    game: str = "hedge"

    dynamic_fields = ("delta", "reg", "r_scale", "r_exponent", "sigma")

    @classmethod
    def tirinzoni_degenne(cls, **kw) -> "FWS":
        """FWS as in Tirinzoni & Degenne 2022's Table 1 (:data:`TIRINZONI_DEGENNE`, module
        docstring); delta = 0.01 as there unless given.  ``kw`` overrides."""
        return cls(**{"delta": 0.01, **TIRINZONI_DEGENNE, **kw})

    def __post_init__(self):
        glr.check_threshold(self.threshold)
        if self.forced not in FORCED:
            raise ValueError(f"forced must be one of {FORCED}, got {self.forced!r}")
        for field in ("max_active", "game_iters"):
            if int(getattr(self, field)) < 1:
                raise ValueError(f"FWS.{field} must be an integer >= 1, got {getattr(self, field)!r}")
        if self.glr_form not in GLR_FORMS:
            raise ValueError(f"glr_form must be one of {GLR_FORMS}, got {self.glr_form!r}")
        if self.game not in GAMES:
            raise ValueError(f"game must be one of {GAMES}, got {self.game!r}")

    def validate(self, instance: Instance) -> None:
        super().validate(instance)
        common.require_linear_rewards(instance, "FWS")
        common.check_sigma(self.sigma)

    # -- elimination protocol ------------------------------------------------------------------
    def linear_stats(self, state: FWSState) -> common.LinearStats:
        return state.stats

    # -- contract ------------------------------------------------------------------------------
    def init(self, key, instance: Instance) -> FWSState:
        X = instance.arms
        K, d = X.shape
        i32 = lambda v: jnp.asarray(v, jnp.int32)
        return FWSState(common.init_stats(instance), i32(0), jnp.full((K,), 1.0 / K, X.dtype),
                        jnp.zeros((d,), X.dtype), i32(0), jnp.zeros((), bool), i32(0), i32(0),
                        jnp.zeros((), X.dtype))

    def step(self, key, state: FWSState, instance: Instance) -> FWSState:
        return self.step_masked(key, state, instance, jnp.ones((instance.num_items,), bool))

    def frank_wolfe_direction(self, state: FWSState, instance: Instance, active: jax.Array):
        """(z(t) [K], forced, game) of Algorithm 1 at the current state (module docstring)."""
        return self._direction(state, instance, active)[:3]

    def _direction(self, state: FWSState, instance: Instance, active: jax.Array):
        """(z(t), forced, game, relative duality gap of the game: 0 unless ``game="certified"``)."""
        X, Z = instance.arms, instance.items
        K, d = X.shape
        M = Z.shape[0]
        dt = X.dtype
        sigma = common.noise_scale(self.sigma, instance)
        tf = jnp.maximum(state.t.astype(dt), 1.0)
        x = state.x
        best = state.best
        D = Z[best][None, :] - Z
        gaps = D @ state.theta
        same = jnp.all(D == 0, axis=-1)
        ambiguous = jnp.any(~same & (gaps <= 0.0))  # theta_hat outside Lambda (ties)
        forced = ambiguous
        if self.forced == "squares":
            forced = forced | is_square(state.t // K)
        elif self.forced == "exact_squares":
            forced = forced | ((state.t % K == 0) & is_square(state.t // K))
        Vxinv = inverse_gram((X * x[:, None]).T @ X)
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

    def stopping_threshold(self, state, instance: Instance):
        """(sigma^2 beta(t, delta), ready) of this algorithm's GLR stopping rule, for the elimination
        wrapper (:class:`jaxbandits.algorithms.Eliminate`, Tirinzoni & Degenne 2022)."""
        sigma = common.noise_scale(self.sigma, instance)
        c = jnp.max(jnp.sum(instance.arms * instance.arms, axis=-1))
        beta = glr.stopping_threshold(self.threshold, state.stats.gram, state.t, self.delta, sigma, c)
        return beta, state.t >= instance.num_arms

    def step_masked(self, key, state: FWSState, instance: Instance, active: jax.Array) -> FWSState:
        X, Z = instance.arms, instance.items
        K, d = X.shape
        dt = X.dtype
        t = state.t
        warm = t < K  # initialisation: each arm once
        z, forced, game, gap = self._direction(state, instance, active)
        tf = jnp.maximum(t.astype(dt), 1.0)
        x_new = state.x * ((tf - 1.0) / tf) + z / tf
        counts = state.stats.counts
        tracked = common.argmax_fast(x_new / jnp.maximum(counts, 1e-300))
        arm = jnp.where(warm, t % K, tracked)
        x = jnp.where(warm, state.x, x_new)

        reward = pull(key, instance, arm)
        stats = common.add_pull(state.stats, instance, arm, reward)
        t1 = t + 1
        W = common.inverse_from_cholesky(common.safe_cholesky(common.regularized_gram(stats, self.reg)))
        theta = W @ stats.b
        best = common.argmax_fast(Z @ theta).astype(jnp.int32)
        if self.glr_form == "ridge":  # Tirinzoni & Degenne's runit.jl: the ridge inverse in the norm
            zstat = jnp.min(glr.ridge_glr_row(theta, W, Z, best))
        else:
            zstat = envelope_glr(theta, stats.gram, W, Z, best)  # unit variance: sigma on the threshold side
        sigma = common.noise_scale(self.sigma, instance)
        c = jnp.max(jnp.sum(X * X, axis=-1))
        beta = glr.stopping_threshold(self.threshold, stats.gram, t1, self.delta, sigma, c)
        stop = (t1 >= K) & (zstat > beta)
        live = ~warm
        return FWSState(stats, t1, x, theta, best, stop,
                        state.n_forced + (live & forced).astype(jnp.int32),
                        state.n_game + (live & ~forced & game).astype(jnp.int32),
                        jnp.maximum(state.game_gap, jnp.where(live, gap, 0.0)))

    def done(self, state: FWSState) -> jax.Array:
        return state.stopped

    def outcome(self, state: FWSState, instance: Instance) -> Outcome:
        # the exact game's pivot cap reached before the optimum shows as a gap above rounding
        converged = state.game_gap <= EXACT_GAME_GAP if self.game == "exact" else None
        return Outcome(answer_mask(state.best, instance.num_items), state.t,
                       state.stats.counts.astype(jnp.int32), converged)
