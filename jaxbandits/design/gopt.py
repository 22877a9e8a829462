"""G-optimal designs: Fedorov-Wynn / D-optimal Frank-Wolfe with exact line search, Wynn's
method, the FWG algorithm of seed 002, and the greedy sequential allocation of Soare et al.

G-optimal design (Kiefer & Wolfowitz 1960; seed 002 Sec 6 and App C): minimise over the simplex
g(lambda) = max_x ||x||^2_{A(lambda)^-1}.  By the Kiefer-Wolfowitz theorem the minimisers are the
D-optimal designs (maximisers of log det A(lambda)) and the optimal value is d, or r when the
active arms span an r-dimensional subspace (then everything is computed on that subspace, see
:mod:`jaxbandits.design.core`).  Because the optimum is known exactly, ``gap = value - r`` is an
exact certificate.
"""
from __future__ import annotations

import math
from functools import partial
from typing import Optional

import jax
import jax.numpy as jnp

from jaxbandits.batching import fixed_trip_while
from jaxbandits.design import kernels as kern
from jaxbandits.design.core import (DesignSolution, as_float, full_mask, initial_design, inverse_design,
                                    masked_argmax, masked_argmin, null_projector, quad_norms)
from jaxbandits.design.kernels import check_kernels, fused_fori_loop, power_of_two

_REFRESH = 32  # recompute A^-1 from scratch every this many rank-one updates (float64 drift ~1e-15)


def _g_value(lam, X, mask, perp):
    """Differentiable G-value at a fixed (stop-gradient) design.

    Returns max_x ||x||^2_{A^-1} with the gradient of the Lagrangian sum_x lambda_x ||x||^2_{A^-1}:
    at the G-optimum the dual weights equal lambda (Kiefer-Wolfowitz), so this is the envelope
    (Danskin) derivative of the optimal value, which is 0 (the optimum is r for every X).
    """
    lam = jax.lax.stop_gradient(lam)
    g = quad_norms(X, inverse_design(lam, X, perp))
    f = jnp.max(jnp.where(mask, g, -jnp.inf))
    lagr = jnp.sum(jnp.where(mask, lam * g, 0.0))
    return jax.lax.stop_gradient(f) + lagr - jax.lax.stop_gradient(lagr), g


def _fw_loop(X, mask, lam0, perp, r, tol, max_iters, step_rule: str, fixed_trips: bool = False):
    """Shared D-optimal Frank-Wolfe loop on lambda with rank-one updates of A^-1 and of g.

    fixed_trips: run the outer loop (blocks of 32 iterations between refreshes) as a loop of
    ceil(max_iters / 32) + 1 blocks, a trip count known at compile time (``max_iters`` must then
    be static), the blocks after the stopping test holds leaving the design unchanged: the same
    result as the data-dependent loop (:func:`jaxbandits.batching.fixed_trip_while`).

    step_rule: "exact" (Fedorov 1972 exact line search for log det, with Wolfe away / drop steps
    as in Todd & Yildirim 2007: linear convergence) or "wynn" (step 1/(n0 + k + 1): Wynn 1970,
    the weight of one added observation to a design of n0 + k observations, n0 = #active arms).
    """
    dtype = X.dtype
    n0 = jnp.sum(mask).astype(dtype)

    def refresh(lam):
        Ainv = inverse_design(lam, X, perp)
        return Ainv, quad_norms(X, Ainv)

    def one_step(carry, _):
        lam, Ainv, g, k, done = carry
        gmax = jnp.max(jnp.where(mask, g, -jnp.inf))
        done = done | (gmax - r <= tol * r) | (k >= max_iters)
        j = masked_argmax(g, mask)
        supp = mask & (lam > 0)
        a = masked_argmin(g, supp)
        ga = g[a]
        if step_rule == "exact":
            toward = (gmax - r) >= (r - ga)
            t = jnp.where(toward, j, a)
            gt = g[t]
            alpha_star = (gt - r) / (r * (gt - 1.0))
            lam_t = lam[t]
            alpha_min = -lam_t / (1.0 - lam_t)
            alpha_away = jnp.where(gt <= 1.0, alpha_min, jnp.maximum(alpha_star, alpha_min))
            alpha = jnp.where(toward, jnp.clip(alpha_star, 0.0, 1.0 - 1e-12), alpha_away)
            # a single-arm support cannot move away from itself
            alpha = jnp.where(~toward & (lam_t >= 1.0 - 1e-15), 0.0, alpha)
            drop = (~toward) & (alpha <= alpha_min)
        else:
            t = j
            gt = g[t]
            alpha = 1.0 / (n0 + k.astype(dtype) + 1.0)
            drop = jnp.array(False)
        alpha = jnp.where(done, 0.0, alpha)
        x = X[t]
        u = Ainv @ x
        denom = (1.0 - alpha) + alpha * gt
        c = X @ u
        g_new = (g - alpha * c * c / denom) / (1.0 - alpha)
        Ainv_new = (Ainv - alpha * jnp.outer(u, u) / denom) / (1.0 - alpha)
        lam_new = (1.0 - alpha) * lam
        lam_new = lam_new.at[t].add(alpha)
        lam_new = jnp.where(drop & ~done, lam_new.at[t].set(0.0), lam_new)
        lam_new = jnp.where(mask, jnp.clip(lam_new, 0.0, None), 0.0)
        lam_new = lam_new / jnp.sum(lam_new)
        k_new = k + jnp.where(done, 0, 1)
        return (lam_new, Ainv_new, g_new, k_new, done), None

    def cond(state):
        lam, k, done = state
        return ~done

    def body(state):
        lam, k, _ = state
        Ainv, g = refresh(lam)
        (lam, _, g, k, done), _ = jax.lax.scan(one_step, (lam, Ainv, g, k, jnp.array(False)), None,
                                               length=_REFRESH)
        return lam, k, done

    init = (lam0, jnp.array(0, jnp.int32), jnp.array(False))
    if fixed_trips:
        # done is set at the latest by the iteration after k reaches max_iters
        lam, k, _ = fixed_trip_while(cond, body, init, -(-int(max_iters) // _REFRESH) + 1)
    else:
        lam, k, _ = jax.lax.while_loop(cond, body, init)
    return lam, k


def _fw_fused(X, mask, lam0, perp, r, tol, max_iters: int, kernels: str, needed=None):
    """:func:`_fw_loop` with the exact step, as one fused kernel (:func:`fused_fori_loop`): the
    blocks of ``_REFRESH`` iterations, each starting from A(lambda)^-1 afresh, run inside one
    program a lane, the matrices in registers.  ``ceil(max_iters / 32) + 1`` blocks at most, as
    the fixed-trip loop; a block after the stopping test holds branches over (no arithmetic), and
    a lane whose ``needed`` is False runs none and returns ``lam0``.

    The same iterates as :func:`_fw_loop` up to rounding: A(lambda)^-1 by Gauss-Jordan instead of
    Cholesky (with the same jitter, :func:`jaxbandits.design.core.add_jitter`), products and sums
    as loops in index order (:mod:`jaxbandits.design.kernels`' helpers), so the kernel and its
    interpretation perform the same operations in the same order; a product added to a sum may
    still be contracted into a fused multiply-add by XLA:CPU (the interpreted kernel) and not by
    Triton (the module docstring of :mod:`jaxbandits.design.kernels`)."""
    K, d = X.shape
    dt = X.dtype
    Kp, dp = power_of_two(K), power_of_two(d)
    Xp = jnp.zeros((Kp, dp), dt).at[:K, :d].set(X)
    ids = jnp.arange(dp)
    # A's constant part: the projector off the active arms' span, the identity on padded coordinates
    P = jnp.zeros((dp, dp), dt).at[:d, :d].set(perp) + jnp.diag((ids >= d).astype(dt))
    maskp = jnp.zeros((Kp,), jnp.int32).at[:K].set(mask.astype(jnp.int32))
    lamp = jnp.zeros((Kp,), dt).at[:K].set(lam0)
    blocks = -(-int(max_iters) // _REFRESH) + 1
    trips = blocks if needed is None else jnp.where(needed, blocks, 0).astype(jnp.int32)
    consts = (Xp, P, maskp, jnp.asarray(r, dt), jnp.asarray(tol, dt))
    lam, k, _ = fused_fori_loop(trips, partial(_fw_block, max_iters=int(max_iters), d=d),
                                (lamp, jnp.zeros((), jnp.int32), jnp.zeros((), jnp.int32)), consts,
                                kernels=kernels, max_trips=blocks)
    return lam[:K], k


def _ordered_total(v):
    """sum(v) as v[0] + v[1] + ..., in index order (exact gathers: :func:`kern.entry`)."""
    return jax.lax.fori_loop(1, v.shape[0], lambda i, s: s + kern.entry(v, i), kern.entry(v, 0))


def _fw_block(b, carry, Xp, P, maskp, r, tol, *, max_iters: int, d: int):
    """A block of :func:`_fw_fused`: nothing once the stopping test has held, else A^-1 and the
    norms afresh, then ``_REFRESH`` iterations of :func:`_fw_loop`'s exact step."""
    lam, k, done = carry
    Kp, dp = Xp.shape
    idd = kern.iota(dp)
    mask = maskp != 0

    def run(carry):
        lam, k, _ = carry
        A = jax.lax.fori_loop(0, Kp, lambda i, A: A + (kern.entry(lam, i) * kern.row(Xp, i))[:, None]
                              * kern.row(Xp, i)[None, :], P)
        # add_jitter's 1e-13 tr(A) / d on the d real coordinates
        tr = _ordered_total(jnp.where(idd < d, jnp.sum(jnp.where(idd[:, None] == idd[None, :], A, 0.0), axis=1),
                                      0.0))
        A = A + jnp.where((idd[:, None] == idd[None, :]) & (idd[:, None] < d), 1e-13 * tr / d, 0.0)
        Ainv = kern.gauss_jordan_inverse(A)
        XA = kern.matmul(Xp, Ainv)
        g = jax.lax.fori_loop(1, dp, lambda l, s: s + kern.column(XA, l) * kern.column(Xp, l),
                              kern.column(XA, 0) * kern.column(Xp, 0))
        lam, _, _, k, done = jax.lax.fori_loop(0, _REFRESH, lambda i, c: _fw_iteration(c, Xp, mask, r, tol,
                                                                                     max_iters),
                                               (lam, Ainv, g, k, jnp.zeros((), jnp.int32)))
        return lam, k, done

    return jax.lax.cond(done != 0, lambda c: c, run, (lam, k, done))


def _fw_iteration(carry, Xp, mask, r, tol, max_iters: int):
    """One exact step of :func:`_fw_loop`'s ``one_step`` on a lane's padded arrays."""
    lam, Ainv, g, k, done = carry
    Kp, dp = Xp.shape
    ik = kern.iota(Kp)
    gmax = jnp.max(jnp.where(mask, g, -jnp.inf))
    stop = (done != 0) | (gmax - r <= tol * r) | (k >= max_iters)
    j = kern.first_argmax(g, mask)
    a = kern.first_argmax(-g, mask & (lam > 0))
    ga = kern.entry(g, a)
    toward = (gmax - r) >= (r - ga)
    t = jnp.where(toward, j, a)
    gt = kern.entry(g, t)
    alpha_star = (gt - r) / (r * (gt - 1.0))
    lam_t = kern.entry(lam, t)
    alpha_min = -lam_t / (1.0 - lam_t)
    alpha_away = jnp.where(gt <= 1.0, alpha_min, jnp.maximum(alpha_star, alpha_min))
    alpha = jnp.where(toward, jnp.clip(alpha_star, 0.0, 1.0 - 1e-12), alpha_away)
    alpha = jnp.where(~toward & (lam_t >= 1.0 - 1e-15), 0.0, alpha)
    drop = (~toward) & (alpha <= alpha_min)
    alpha = jnp.where(stop, 0.0, alpha)
    x = kern.row(Xp, t)
    u = jax.lax.fori_loop(1, dp, lambda l, s: s + kern.column(Ainv, l) * kern.entry(x, l),
                          kern.column(Ainv, 0) * kern.entry(x, 0))
    denom = (1.0 - alpha) + alpha * gt
    c = jax.lax.fori_loop(1, dp, lambda l, s: s + kern.column(Xp, l) * kern.entry(u, l),
                          kern.column(Xp, 0) * kern.entry(u, 0))
    g_new = (g - alpha * c * c / denom) / (1.0 - alpha)
    Ainv_new = (Ainv - alpha * (u[:, None] * u[None, :]) / denom) / (1.0 - alpha)
    lam_new = (1.0 - alpha) * lam + jnp.where(ik == t, alpha, 0.0)
    lam_new = jnp.where(drop & ~stop & (ik == t), 0.0, lam_new)
    lam_new = jnp.where(mask, jnp.maximum(lam_new, 0.0), 0.0)
    lam_new = lam_new / _ordered_total(lam_new)
    return lam_new, Ainv_new, g_new, k + jnp.where(stop, 0, 1), stop.astype(jnp.int32)


def _finish(lam, k, X, mask, perp, r, tol):
    value, _ = _g_value(lam, X, mask, perp)
    rr = r.astype(value.dtype)
    gap = jnp.maximum(jax.lax.stop_gradient(value) - rr, 0.0)
    return DesignSolution(allocation=lam, value=value, gap=gap, iterations=k, converged=gap <= tol * rr)


@partial(jax.jit, static_argnames=("max_iters", "fixed_trips", "kernels"))
def g_optimal(X, *, arm_mask=None, init=None, tol: float = 1e-6, max_iters: int = 10_000,
              fixed_trips: bool = False, kernels: str = "xla", needed=None) -> DesignSolution:
    """G-optimal design by D-optimal Frank-Wolfe (Fedorov-Wynn) with exact line search.

    Solves min_lambda max_{x active} ||x||^2_{A(lambda)^-1} (seed 002 Sec 6 / App C; seed 001
    Sec 2.2 with Y = X) through its Kiefer-Wolfowitz equivalent max_lambda log det A(lambda):
    Frank-Wolfe on log det with the closed-form exact step (Fedorov 1972, the D-optimal variant
    seed 002 App C mentions) plus Wolfe away/drop steps (Todd & Yildirim 2007, linearly
    convergent; Khachiyan 1996 for the plain method).  A^-1 and the norms are kept by rank-one
    updates (O(Kd) per iteration), refreshed from scratch every 32 iterations.

    Args:
      X: arms [K, d].
      arm_mask: [K] bool, the active arms (default all).
      init: warm-start design [K] (default uniform on the active arms).
      tol: stop when value - r <= tol * r (relative gap).
      max_iters: iteration cap (static).
      fixed_trips: run with a trip count known at compile time (no loop asks the host whether
        to go on; the same result; ``max_iters`` must be a Python int): every block of the cap is
        paid for, so this suits solves that run rarely, under :func:`jaxbandits.batching.solve_where`.
      kernels: how the Frank-Wolfe loop runs (:func:`jaxbandits.design.kernels.fused_fori_loop`):
        "xla" (a loop of XLA operations), "triton" (the whole solve one fused GPU kernel a lane,
        its trip count known at compile time as with ``fixed_trips``) or "interpret" (that kernel
        interpreted, on any backend).  The fused forms compute the same iterates up to rounding
        (:func:`_fw_fused`).
      needed: a bool (traced; per lane under ``vmap``; None: True): whether the caller uses the
        result.  Where False the solution is the starting design with 0 iterations, and a fused
        kernel runs no iteration for that lane (so a solve that few lanes need at a step costs
        the others nothing); the "xla" loop still runs.
    Returns:
      DesignSolution; value = max_x ||x||^2_{A^-1} (-> r = dim span of the active arms, d when
      they span R^d); gap = value - r is exact.  The value's gradient w.r.t. X is the envelope
      derivative (zero: the optimum is r for all X).
    """
    check_kernels(kernels)
    X = as_float(X)
    K = X.shape[0]
    mask = full_mask(arm_mask, K)
    perp, r = null_projector(X, mask)
    rr = r.astype(X.dtype)
    Xs = jax.lax.stop_gradient(X)
    lam0 = initial_design(mask, init, X.dtype)
    if kernels == "xla":
        lam, k = _fw_loop(Xs, mask, lam0, perp, rr, tol, max_iters, "exact", fixed_trips)
    else:
        lam, k = _fw_fused(Xs, mask, lam0, perp, rr, tol, max_iters, kernels, needed)
    if needed is not None:
        needed = jnp.asarray(needed, bool)
        lam, k = jnp.where(needed, lam, lam0), jnp.where(needed, k, 0)
    return _finish(lam, k, X, mask, perp, r, tol)


@jax.jit
def wynn(X, *, arm_mask=None, init=None, tol: float = 1e-3, max_iters: int = 1_000) -> DesignSolution:
    """G-optimal design by Wynn's method (Wynn 1970; Fedorov 1972), as used by GSE-Lin-Wynn.

    Each iteration adds the arm of largest ||x||^2_{A^-1} with weight alpha_k = 1/(n0 + k + 1)
    (one more observation to a design of n0 + k observations, n0 = number of active arms, the
    uniform start), i.e. Frank-Wolfe on log det with a harmonic step.  Seed 002 Sec 8 (Wynn's
    G-optimal method, citing Fedorov 1972).  Converges slowly (O(1/k)); returned gap is exact.
    """
    X = as_float(X)
    K = X.shape[0]
    mask = full_mask(arm_mask, K)
    perp, r = null_projector(X, mask)
    rr = r.astype(X.dtype)
    Xs = jax.lax.stop_gradient(X)
    lam0 = initial_design(mask, init, X.dtype)
    lam, k = _fw_loop(Xs, mask, lam0, perp, rr, tol, max_iters, "wynn")
    return _finish(lam, k, X, mask, perp, r, tol)


def _segment_max(g, c, gtt, gamma):
    """max_i ||x_i||^2 in ((1-gamma) A + gamma x_t x_t^T)^-1, from g_i, c_i = x_i^T A^-1 x_t."""
    denom = (1.0 - gamma) + gamma * gtt
    return (g - gamma * c * c / denom) / (1.0 - gamma)


@jax.jit
def fwg(X, *, arm_mask=None, init=None, tol: float = 1e-6, max_iters: int = 100) -> DesignSolution:
    """FWG: Frank-Wolfe on the G-objective itself with line search (seed 002 Algorithm 2, App C).

    g(pi) = max_i ||x_i||^2_{V^-1}; the Danskin gradient is -(x_j^T V^-1 x_max)^2 (seed 002
    Sec 6); the surrogate picks the vertex e_j of largest (x_j^T V^-1 x_max)^2, then a line search
    over gamma in [0, 1] minimises g along pi + gamma (e_j - pi) (golden section on the exact
    closed form of the segment, 60 evaluations).  Starts from uniform (Alg 2 line 2) and runs at
    most ``max_iters`` iterations (the paper's N), stopping early once value - r <= tol * r.
    FW on this non-smooth objective can stall above d; ``g_optimal`` is the accurate solver.
    """
    X = as_float(X)
    K = X.shape[0]
    mask = full_mask(arm_mask, K)
    perp, r = null_projector(X, mask)
    rr = r.astype(X.dtype)
    Xs = jax.lax.stop_gradient(X)
    lam0 = initial_design(mask, init, X.dtype)
    phi = (math.sqrt(5.0) - 1.0) / 2.0

    def body(state):
        lam, k, _ = state
        Ainv = inverse_design(lam, Xs, perp)
        g = jnp.where(mask, quad_norms(Xs, Ainv), -jnp.inf)
        imax = masked_argmax(g, mask)
        c_max = Xs @ (Ainv @ Xs[imax])
        j = masked_argmax(c_max * c_max, mask)
        c = Xs @ (Ainv @ Xs[j])
        gtt = c[j]
        f = lambda gam: jnp.max(_segment_max(g, c, gtt, gam))

        def gs(_, ab):
            a, b = ab
            x1 = b - phi * (b - a)
            x2 = a + phi * (b - a)
            left = f(x1) <= f(x2)
            return jnp.where(left, a, x1), jnp.where(left, x2, b)

        a, b = jax.lax.fori_loop(0, 60, gs, (jnp.zeros((), X.dtype), jnp.ones((), X.dtype) - 1e-9))
        gam = 0.5 * (a + b)
        gam = jnp.where(f(gam) < jnp.max(g), gam, 0.0)
        lam = (1.0 - gam) * lam
        lam = lam.at[j].add(gam)
        return lam, k + 1, jnp.max(g) - rr

    def cond(state):
        lam, k, gap = state
        return (k < max_iters) & (gap > tol * rr)

    lam, k, _ = jax.lax.while_loop(cond, body, (lam0, jnp.array(0, jnp.int32), jnp.array(jnp.inf, X.dtype)))
    return _finish(lam, k, X, mask, perp, r, tol)


def greedy_allocation(X, n, *, arm_mask=None, max_n: Optional[int] = None):
    """Greedy sequential G-allocation of Soare et al. (2014), used by GSE-Lin-Greedy (seed 002 Sec 8).

    Pulls are chosen one at a time: x_t = argmin_x max_{x' active} ||x'||^2_{(A_{t-1} + x x^T)^-1}
    (ties, to a relative 1e-9, towards the arm of largest ||x||^2_{A_{t-1}^-1}, then the lowest
    index: see :func:`_greedy_pick`).  The first r = rank pulls are a spanning set chosen by greedy
    volume maximisation (pivoted Gram-Schmidt: the arm of largest residual norm), so that A_{t-1}
    is invertible on span(X) from then on.  Returns integer counts [K] summing to n (n may be
    traced; ``max_n``, optional, is a static cap on the number of pulls placed).
    """
    return _greedy(X, n, arm_mask, max_n)


GREEDY_TIE_RTOL = 1e-9


def _greedy_pick(worst, g, mask):
    """argmin of the max-variance after each candidate pull, ties towards the arm of largest
    current variance g_j = ||x_j||^2_{A^-1} (then the lowest index).

    The max over arms is flat in every candidate whose pull leaves another arm at the maximum
    (exactly so for orthogonal arms), so a lowest-index tie-break put every pull after the
    spanning set on arm 0 (40 pulls on e_1..e_8: [33, 1, ..., 1]); preferring the most uncertain
    arm among the minimisers gives the round robin the G-criterion intends.  Ties are taken to a
    relative tolerance ``GREEDY_TIE_RTOL`` so that they do not depend on rounding.
    """
    w = jnp.where(mask, worst, jnp.inf)
    wmin = jnp.min(w)
    cand = mask & (w <= wmin + GREEDY_TIE_RTOL * jnp.abs(wmin))
    gc = jnp.where(cand, g, -jnp.inf)
    gmax = jnp.max(gc)
    return masked_argmax(jnp.where(gc >= gmax - GREEDY_TIE_RTOL * jnp.abs(gmax), 1.0, 0.0), cand)


@partial(jax.jit, static_argnames=("max_n",))
def _greedy(X, n, arm_mask, max_n):
    X = as_float(jax.lax.stop_gradient(X))
    K, d = X.shape
    mask = full_mask(arm_mask, K)
    perp, r = null_projector(X, mask)
    n = jnp.asarray(n, jnp.int32)
    scale = jnp.max(jnp.where(mask, jnp.sum(X * X, 1), 0.0))

    def pivot(i, carry):
        counts, R = carry
        nr = jnp.where(mask, jnp.sum(R * R, 1), -1.0)
        j = masked_argmax(nr, mask)
        ok = (i < jnp.minimum(n, r)) & (nr[j] > 1e-10 * scale)
        q = R[j] / jnp.sqrt(jnp.where(ok, nr[j], 1.0))
        R = jnp.where(ok, R - jnp.outer(R @ q, q), R)
        return counts.at[j].add(jnp.where(ok, 1, 0)), R

    n_pivots = d if max_n is None else min(d, max_n)  # pivots past min(n, r) are no-ops
    counts, _ = jax.lax.fori_loop(0, n_pivots, pivot, (jnp.zeros((K,), jnp.int32), X))
    A = (X * counts[:, None].astype(X.dtype)).T @ X + perp
    C0 = X @ jnp.linalg.inv(A) @ X.T  # C[i, j] = x_i^T A^-1 x_j
    idx = jnp.arange(K)

    def step(carry):
        counts, C, i = carry
        g = jnp.diag(C)
        # value after adding x_j: max_i g_i - C_ij^2 / (1 + g_j)
        after = g[:, None] - C * C / (1.0 + g[None, :])
        worst = jnp.max(jnp.where(mask[:, None], after, -jnp.inf), axis=0)
        j = _greedy_pick(worst, g, mask)
        # Sherman-Morrison on C itself: (A + x_j x_j^T)^-1 gives C - c_j c_j^T / (1 + C_jj), with
        # c_j = C[:, j]; O(K^2) per pull instead of O(K^2 d) for re-forming X A^-1 X^T.
        cj = jnp.sum(jnp.where(idx[None, :] == j, C, 0.0), axis=1)  # column j without a gather
        C = C - jnp.outer(cj, cj) / (1.0 + jnp.sum(jnp.where(idx == j, g, 0.0)))
        return counts + (idx == j).astype(counts.dtype), C, i + 1

    # one pull per pass until n are placed (n may be traced: no static trip count needed; a
    # static max_n caps the passes as the fixed-length loop it replaces did)
    cap = jnp.iinfo(jnp.int32).max if max_n is None else max_n
    counts, _, _ = jax.lax.while_loop(lambda c: (jnp.sum(c[0]) < n) & (c[2] < cap), step,
                                      (counts, C0, jnp.zeros((), jnp.int32)))
    return counts
