"""Game solvers: matrix games (Hedge against best responses, with or without its duality-gap
certificate, and the exact simplex solve) and the AdaHedge learner.

* :func:`matrix_game`, :func:`matrix_game_certified`, :func:`matrix_game_exact`:
  max_{z in simplex} min_{j in rows} (G z)_j, the r-subdifferential step of Frank-Wolfe Sampling
  (Wang, Tzeng & Proutiere, NeurIPS 2021, eq. (7)-(8); :class:`jaxbandits.rules.sampling.FrankWolfe`).
* :func:`hedge_weights`, :func:`hedge_update`: AdaHedge (de Rooij, van Erven, Grunwald & Koolen,
  JMLR 2014), the agent's learner of LinGame (Degenne, Menard, Shang & Valko, ICML 2020).
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from jaxbandits.batching import argmax_fast, current_policy, fixed_trip_while, solve_where


# -- matrix games ---------------------------------------------------------------------------------
#: largest relative duality gap of ``game="exact"`` counted as solved (the simplex's optimum is
#: certified to about 1e-14 of the payoff range; a larger gap means the pivot cap was reached)
EXACT_GAME_GAP = 1e-9


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
        k = argmax_fast(q @ Gm)
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
        k = argmax_fast(q @ Gm)
        return loss + Gm[:, k], counts.at[k].add(1.0), qsum + q

    _, counts, qsum = jax.lax.fori_loop(0, iters, body, (jnp.zeros((P,), dt), jnp.zeros((K,), dt), jnp.zeros((P,), dt)))
    z = counts / iters
    upper = jnp.max((qsum / iters) @ Gm)
    lower = jnp.min(jnp.where(rows, G @ z, jnp.inf))
    single = jnp.sum(rows) <= 1
    z = jnp.where(single, jax.nn.one_hot(argmax_fast(jnp.where(rows[:, None], G, -jnp.inf).max(0)), K, dtype=dt), z)
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
    vertex = jax.nn.one_hot(argmax_fast(jnp.where(rows[:, None], G, -jnp.inf).max(0)), K, dtype=dt)
    z = jnp.where(single | ~go, vertex, z)
    upper = jnp.max(q @ jnp.where(rows[:, None], G, 0.0))
    lower = jnp.min(jnp.where(rows, G @ z, jnp.inf))
    gap = jnp.where(single | ~go, 0.0, jnp.maximum(upper - lower, 0.0) / span)
    return z, gap, pivots


# -- AdaHedge (de Rooij, van Erven, Grunwald, Koolen 2014), LinGame's learner ------------------
def hedge_weights(losses: jax.Array, gap: jax.Array) -> jax.Array:
    """AdaHedge's play: w proportional to exp(-eta (L - min L)), eta = log K / Delta."""
    eta = math.log(losses.shape[-1]) / gap
    u = jnp.exp(-eta * (losses - jnp.min(losses)))
    return u / jnp.sum(u)


def _mix_loss(losses, eta):
    lo = jnp.min(losses)
    return lo - jnp.log(jnp.mean(jnp.exp(-eta * (losses - lo)))) / eta


def hedge_update(losses: jax.Array, gap: jax.Array, loss: jax.Array):
    """AdaHedge after incurring ``loss`` [K]: (L + loss, Delta + hedge loss - mix loss)."""
    w = hedge_weights(losses, gap)
    eta = math.log(losses.shape[-1]) / gap
    new = losses + loss
    mix = _mix_loss(new, eta) - _mix_loss(losses, eta)
    return new, gap + jnp.maximum(jnp.dot(w, loss) - mix, 0.0)


def is_square(n: jax.Array) -> jax.Array:
    """n is a perfect square (n >= 0 integer array), robust to float sqrt rounding."""
    p = jnp.floor(jnp.sqrt(n.astype(jnp.float32))).astype(n.dtype)
    return (p * p == n) | ((p + 1) * (p + 1) == n)
