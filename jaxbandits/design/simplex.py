"""The simplex method, once: the pivot loop (:func:`run_pivots`) and the two linear programs the
library solves with it, each on its own dense tableau.

* :func:`matrix_game_exact`: the optimal strategy of a matrix game, max_{z in simplex}
  min_{j in rows} (G z)_j, the released code's ``solveZeroSumGame`` of Frank-Wolfe Sampling (Wang,
  Tzeng & Proutiere, NeurIPS 2021, eq. (7)-(8)): the row player's LP, feasible at the origin
  (no phase one), Bland's rule.
* :func:`min_l1_representation`: the minimum-l1 representation w* = argmin{||w||_1 : X^T w = y} of
  seed 003 eq. (1) (Xu et al. 2018; Reda, Kaufmann & Delahaye-Duriez's "optimized" selection
  rule and Table 2's complexity): two phases, the q columns kept implicit, Dantzig's steepest
  edge then Bland's rule.

Both are pure and vmap-safe.  :func:`run_pivots` runs their pivots as a ``while_loop`` (the CPU
policy), or as loops of a trip count known at compile time on only the lanes that need a solve
(:func:`jaxbandits.batching.fixed_trip_while` under :func:`jaxbandits.batching.solve_where`: the
accelerator policy, where a ``while_loop`` asks the host for its predicate every pivot), with the
same pivots.  Parity with SciPy's HiGHS: ``tests/test_complexity.py``,
``tests/test_tirinzoni_degenne.py``; the two paths agree: ``tests/test_fixed_trips.py``.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp

from jaxbandits.batching import argmax_fast, current_policy, fixed_trip_while, solve_where


def run_pivots(cond: Callable, body: Callable, start, go, max_pivots, *, fixed: bool):
    """``lax.while_loop(cond, body, start)``: the pivots of a simplex method.  With ``fixed`` and
    an int ``max_pivots``, ``max_pivots`` trips of :func:`jaxbandits.batching.fixed_trip_while`
    (the same pivots) on the lanes where ``go`` holds, ``start`` elsewhere
    (:func:`jaxbandits.batching.solve_where`); ``cond`` and ``body`` must then close over no
    traced value (everything they read is in the carry)."""
    if fixed and isinstance(max_pivots, int):
        def run(*carry):
            return fixed_trip_while(cond, body, tuple(carry), max_pivots)

        return solve_where(go, run, tuple(start), tuple(start))
    return jax.lax.while_loop(cond, body, start)


def first_min(v: jax.Array, size: int) -> jax.Array:
    """The first index of the minimum of ``v`` [size], as min + where: cheaper than
    ``jnp.argmin`` under vmap on CPU (measured)."""
    mn = jnp.min(v)
    return jnp.min(jnp.where(v == mn, jnp.arange(size), size))


# -- matrix games ---------------------------------------------------------------------------------
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
    argmax_k G[j, k]).  Under the accelerator policy (:func:`jaxbandits.batching.current_policy`),
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

    def cond(c):  # closes over no tracer (run_pivots' fixed-trip path)
        T, basis, it = c
        neg = T[K, :n_cols] < -eps
        return (jnp.min(jnp.where(neg, jnp.arange(n_cols), n_cols)) < n_cols) & (it < max_pivots)

    def body(c):
        T, basis, it = c
        neg = T[K, :n_cols] < -eps
        e = jnp.min(jnp.where(neg, jnp.arange(n_cols), n_cols))
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
    T, basis, pivots = run_pivots(cond, body, (T0, basis, jnp.int32(0)), go, max_pivots,
                                  fixed=current_policy().batched)
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


# -- minimum-l1 representations --------------------------------------------------------------------
class LPSolution(NamedTuple):
    """Result of :func:`min_l1_representation`.

    Attributes:
      w: [K] minimum-l1 coefficients (X^T w = y).
      value: ||w||_1.
      iterations: simplex pivots taken.
      converged: an optimal basic solution was reached within ``max_iters`` (and y is in the
        span of the arms).
    """

    w: jax.Array
    value: jax.Array
    iterations: jax.Array
    converged: jax.Array


def min_l1_representation(X: jax.Array, y: jax.Array, *, active=True, max_iters: int | None = None,
                          tol: float = 1e-10, fixed_trips: bool | None = None) -> LPSolution:
    """Minimum-l1 representation w* = argmin{||w||_1 : X^T w = y} of y in the arms (rows of X).

    Seed 003 eq. (1) (Xu et al. 2018, the "optimized" selection rule).  Solved as the LP
    min 1^T (p + q) s.t. X^T (p - q) = y, p, q >= 0 with a two-phase tableau simplex (phase 1 with
    d artificial variables; Dantzig's rule, switching to Bland's rule after ``2 (K + d)`` pivots so
    degenerate problems cannot cycle).  Artificials left basic at level 0 after phase 1 are pivoted
    out whenever the entering column allows (redundant rows keep them, harmlessly).

    The tableau stores only the K columns of p and the right-hand side: q_k's column is minus
    p_k's in the constraint rows and its reduced costs are 2 - (p_k's) in phase 2 and -(p_k's) in
    phase 1 (row operations preserve both identities), and the artificial columns are never
    entering candidates.  That is (d + 2) x (K + 1) numbers per pivot instead of
    (d + 2) x (2 K + d + 1).

    When K <= d and the arms are linearly independent, X^T w = y has exactly one solution,
    w = (X X^T)^-1 X y, which is then w* (no pivot is taken).

    Args:
      X: [K, d] arms.  y: [d] target (x_i - x_j for eq. (1)).
      active: traced bool; when False the loop runs zero pivots (used to skip cached solves).
      max_iters: pivot cap (default 10 (K + d)).
      tol: pivot / reduced-cost tolerance (relative to the scale of X and y).
      fixed_trips: the pivots as ``max_iters`` masked trips known at compile time, on the lanes
        where ``active`` holds (:func:`run_pivots`; None: under the accelerator policy), the same
        solution.
    """
    K, d = X.shape
    dt = X.dtype
    max_iters = int(max_iters or 10 * (K + d))
    bland_after = 2 * (K + d)
    unique = jnp.asarray(False)
    if K <= d:
        gram = X @ X.T
        ev = jnp.linalg.eigvalsh(gram)
        w_unique = jnp.linalg.inv(gram) @ (X @ y)
        resid = jnp.linalg.norm(X.T @ w_unique - y)
        unique = (ev[0] > 1e-10 * ev[-1]) & (resid <= 1e-9 * (1.0 + jnp.linalg.norm(y)))
        active = jnp.asarray(active) & ~unique
    scale = jnp.maximum(jnp.max(jnp.abs(X)), 1e-300)
    A = X.T / scale
    rhs = y / scale
    sgn = jnp.where(rhs < 0, -1.0, 1.0).astype(dt)
    A = A * sgn[:, None]
    rhs = rhs * sgn
    T = jnp.zeros((d + 2, K + 1), dt)
    T = T.at[:d, :K].set(A).at[:d, K].set(rhs)
    # row d: phase-2 reduced costs of p (cost 1; basis = artificials of cost 0)
    T = T.at[d, :K].set(1.0)
    # row d + 1: phase-1 reduced costs of p (-1^T rows), and -(phase-1 objective) in the rhs column
    T = T.at[d + 1, :].set(-jnp.sum(T[:d, :], axis=0))
    basis = 2 * K + jnp.arange(d)
    feas_tol = tol * (1.0 + jnp.sum(rhs))

    def choose(T, it, feas_tol):
        phase1 = -T[d + 1, K] > feas_tol
        rp = jnp.where(phase1, T[d + 1, :K], T[d, :K])
        rq = jnp.where(phase1, -T[d + 1, :K], 2.0 - T[d, :K])
        r = jnp.concatenate([rp, rq])  # reduced costs of p_0..p_{K-1}, q_0..q_{K-1}
        cand = r < -tol
        # steepest-edge flavour of Dantzig's rule: reduced cost per unit length of the column
        norms = jnp.sqrt(1.0 + jnp.sum(T[:d, :K] ** 2, axis=0))
        norms = jnp.concatenate([norms, norms])
        dantzig = first_min(jnp.where(cand, r / norms, jnp.inf), 2 * K)
        bland = first_min(jnp.where(cand, 0, 1), 2 * K)
        e = jnp.where(it < bland_after, dantzig, bland)
        return jnp.any(cand), phase1, e

    def cond(c):  # closes over no tracer (run_pivots' fixed-trip path)
        T, basis, it, go, feas_tol = c
        return go & (it < max_iters)

    def body(c):
        # Gathers and scatters with per-lane indices are slow under vmap on CPU: the pivot column
        # and row are read with one-hot contractions and the whole pivot is one rank-one update
        # (row r: T_r - (T_re - 1) T_r / T_re = T_r / T_re).
        T, basis, it, _, feas_tol = c
        cols = jnp.arange(K + 1)
        rows = jnp.arange(d + 2)
        has, phase1, e = choose(T, it, feas_tol)
        is_q = e >= K
        colp = T @ (cols == jnp.where(is_q, e - K, e)).astype(dt)  # p_k's column [d + 2]
        s = jnp.where(is_q, -1.0, 1.0)
        colfull = jnp.concatenate([s * colp[:d], jnp.where(is_q, 2.0 - colp[d:d + 1], colp[d:d + 1]),
                                   s * colp[d + 1:]])
        col = colfull[:d]
        ratio = jnp.where(col > tol, T[:d, K] / jnp.where(col > tol, col, 1.0), jnp.inf)
        art0 = (basis >= 2 * K) & (~phase1) & (jnp.abs(col) > tol)
        ratio = jnp.where(art0, -1.0, ratio)
        rmin = jnp.min(ratio)
        ties = ratio <= rmin + tol * (1.0 + jnp.abs(rmin))
        r = first_min(jnp.where(ties, basis, 2 * K + d + 1), d)
        ok = has & jnp.isfinite(rmin)
        orow = rows == r
        Trow = orow.astype(dt) @ T  # [K + 1]
        pv = jnp.sum(jnp.where(orow[:d], col, 0.0))
        f = jnp.where(ok, 1.0 / jnp.where(ok, pv, 1.0), 0.0)
        T = T - jnp.outer(colfull - orow.astype(dt), Trow * f)
        basis = jnp.where(ok & orow[:d], e, basis)
        return T, basis, it + ok.astype(it.dtype), ok, feas_tol

    go = jnp.asarray(active)
    T, basis, it, _, _ = run_pivots(cond, body, (T, basis, jnp.int32(0), go, feas_tol), go, max_iters,
                                    fixed=current_policy().batched if fixed_trips is None else bool(fixed_trips))
    x = jnp.zeros(2 * K + d, dt).at[basis].set(T[:d, K])
    w = x[:K] - x[K:2 * K]
    has, phase1, _ = choose(T, it, feas_tol)
    converged = (~has) & (~phase1)
    if K <= d:
        w = jnp.where(unique, w_unique, w)
        converged = converged | unique
    return LPSolution(w, jnp.sum(jnp.abs(w)), it, converged)
