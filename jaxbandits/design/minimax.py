"""Minimax (XY / transductive / oracle) designs: min over the simplex of max over directions y of
||y||^2_{A(lambda)^-1}, with a certified duality gap.

Seed 001 Sec 1.2 defines rho(Y) = min_lambda max_{y in Y} ||y||^2_{A(lambda)^-1} (the algorithm
and Prop 2 use the squared norm, as here); Thm 1 / eq. (1) define psi*(theta); seed 000 eq. (1)
defines T*(theta).

Solver ("smooth", the default).  f(lambda) = max_y g_y(lambda), g_y = ||y||^2_{A^-1}, is convex and
non-smooth.  We run Frank-Wolfe with away steps on the log-sum-exp smoothing
f_beta = beta^-1 log sum_y exp(beta g_y) (convex, since log-sum-exp is convex and increasing and
each g_y is convex), beta = s / f, with an exact line search (bisection on the derivative of the
closed form of g_y along the segment, restricted to the 512 largest g_y), and continuation
(s x4 once the smoothed FW gap is below f/s).  Every ``_CHUNK`` (48) iterations an active-set Newton polish
solves the optimality (KKT) system on the current support and near-active directions
(:func:`_polish`); its candidate is accepted only if it lowers f, and its dual weights only if they
raise the certified lower bound.  Small problems then converge to machine precision in a few
dozen iterations; large direction sets (thousands of pairs) still need hundreds.

Certificate.  For any distribution mu over Y, g_mu = sum_y mu_y g_y = tr(A^-1 B_mu),
B_mu = sum_y mu_y y y^T, is convex and below f, so min f >= min_lambda g_mu(lambda) >=
g_mu(lambda_k) + min_x <grad g_mu(lambda_k), e_x - lambda_k> = 2 g_mu(lambda_k) - max_x
x^T A^-1 B_mu A^-1 x.  We use mu = softmax(beta g) (the smoothed gradient's weights), which tends
to an optimal dual as s grows, so the gap closes.  ``gap = value - best lower bound``.

Gradients.  value = max_y g_y at the (stop-gradient) solution; its derivative is that of the
Lagrangian tr(A(lambda*)^-1 B_mu*) (envelope / Danskin for the saddle point (lambda*, mu*)), which
is the gradient of the optimal value when the saddle point is unique.  Where several directions
are active, mu* weights them (the dual solution), i.e. the gradient is the element of the
subdifferential selected by the optimal dual; with a unique active direction it is that
direction's partial gradient.
"""
from __future__ import annotations

from functools import partial
from typing import Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp

from jaxbandits.batching import fixed_trip_while
from jaxbandits.design.app_f import PaperFW, dense_iterate, dense_solve, finish
from jaxbandits.design.core import (SMALL_DIM, DesignSolution, as_float, full_mask, initial_design,
                                    inverse_design, masked_argmax, masked_argmin, null_projector, oracle_directions,  # noqa: F401
                                    pair_table, quad_norms)
from jaxbandits.stats import kl_bernoulli
from jaxbandits.design import kernels as kern
from jaxbandits.design.kernels import check_kernels, fused_fori_loop, power_of_two

_TOPK = 512
_BISECT = 40
_CHUNK = 48  # Frank-Wolfe iterations between Newton polishes (a polish costs ~50 iterations)
_NEWTON = 4
_PAIR_BLOCK = 256  # rows of the pair table handled at once by the App F Frank-Wolfe


class _Directions(NamedTuple):
    """How the solver sees the direction set Y (explicit rows, or implicit pairwise differences)."""

    norms: Callable  # Ainv -> g [N] (masked entries -inf)
    bmat: Callable  # mu [N] -> B_mu [d, d]
    inner: Callable  # (idx [T], v [d]) -> y_idx^T v [T]
    rows: Callable  # idx [T] -> y_idx [T, d]
    size: int
    # Ainv -> (max_y g_y, flat index of the first maximiser): what the App F Frank-Wolfe needs
    # each iteration, without building the [N] vector of every g_y (None: argmax of ``norms``)
    best: Optional[Callable] = None


def _explicit(Y, y_mask) -> _Directions:
    def norms(Ainv):
        return jnp.where(y_mask, quad_norms(Y, Ainv), -jnp.inf)

    def bmat(mu):
        return (Y * mu[:, None]).T @ Y

    def inner(idx, v):
        return Y[idx] @ v

    def best(Ainv):
        g = norms(Ainv)
        m = jnp.max(g)
        return m, jnp.min(jnp.where(g == m, jnp.arange(g.shape[0]), g.shape[0] - 1))

    return _Directions(norms, bmat, inner, lambda idx: Y[idx], Y.shape[0], best)


def _pairs(Z, item_mask) -> _Directions:
    """Y = {z_i - z_j : i < j active}, never materialised: ||z_i - z_j||^2_{A^-1} =
    (w_i - w_j)^T (z_i - z_j) with w = A^-1 z, from the differences (:func:`pair_table`).  The
    Gram form Q_ii + Q_jj - 2 Q_ij (Q = Z A^-1 Z^T) cancels its large common part: in float32 it
    put rho of the Soare pair (e_1, x') 4 % high (1.068e-4 against 1.0264e-4)."""
    M = Z.shape[0]
    iu = jnp.arange(M)
    pmask = item_mask[:, None] & item_mask[None, :] & (iu[:, None] < iu[None, :])

    Zt = Z.T

    def table(Wt_r, Zt_r, Wt):
        return pair_table([Wt_r, Zt_r], [Wt, Zt], lambda u, k: u[0] * u[1])

    def norms(Ainv):
        Wt = Ainv @ Zt                                   # [d, M]: A^-1 z (Ainv symmetric)
        return jnp.where(pmask, table(Wt, Zt, Wt), -jnp.inf).reshape(-1)

    def bmat(mu):
        mu = mu.reshape(M, M)
        C = Z.T @ (mu @ Z)  # sum mu_ij z_i z_j^T
        w = jnp.sum(mu, 0) + jnp.sum(mu, 1)
        return (Z * w[:, None]).T @ Z - C - C.T

    def inner(idx, v):
        p = Z @ v
        return p[idx // M] - p[idx % M]

    def rows(idx):
        return Z[idx // M] - Z[idx % M]

    # Row blocks of the [M, M] table of pair values, so that each block stays in cache and the
    # full table is never written out: per block, the masked row maxima and their first argmax.
    R = min(M, _PAIR_BLOCK)
    nb = -(-M // R)
    Mp = nb * R
    Zp = jnp.pad(Z, ((0, Mp - M), (0, 0)))
    act_p = jnp.pad(item_mask, (0, Mp - M))
    rows_idx = jnp.arange(Mp).reshape(nb, R)

    def best(Ainv):
        Wt = Ainv @ Zp.T                                 # [d, Mp]

        def block(b):
            ib = rows_idx[b]
            Gb = table(Wt[:, ib], Zp.T[:, ib], Wt[:, :M])                     # [R, M]
            ok = act_p[ib][:, None] & item_mask[None, :] & (ib[:, None] < iu[None, :])
            Gb = jnp.where(ok, Gb, -jnp.inf)
            m = jnp.max(Gb, axis=1)
            a = jnp.min(jnp.where(Gb == m[:, None], iu[None, :], M - 1), axis=1)
            return m, a

        m, a = jax.lax.map(block, jnp.arange(nb))
        m, a = m.reshape(-1), a.reshape(-1)
        top = jnp.max(m)
        i = jnp.min(jnp.where(m == top, jnp.arange(Mp), Mp - 1))
        i = jnp.minimum(i, M - 1)
        return top, i * M + a[i]

    return _Directions(norms, bmat, inner, rows, M * M, best)


def _softmax_weights(g, beta):
    f = jnp.max(g)
    w = jnp.where(jnp.isfinite(g), jnp.exp(beta * (g - f)), 0.0)
    return w / jnp.sum(w)


def _lower_bound(X, mask, Ainv, B, g_mu):
    W = X @ Ainv
    h = jnp.sum((W @ B) * W, axis=-1)
    return 2.0 * g_mu - jnp.max(jnp.where(mask, h, -jnp.inf)), h


def _certificate(X, mask, lam, perp, dirs, scales=(1.0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6)):
    """(f(lambda), best lower bound over softmax duals at several temperatures, that dual)."""
    Ainv = inverse_design(lam, X, perp)
    g = dirs.norms(Ainv)
    f = jnp.max(g)
    best, best_mu = -jnp.inf, jnp.zeros_like(g)
    for s in scales:
        mu = _softmax_weights(g, s / f)
        B = dirs.bmat(mu)
        lb, _ = _lower_bound(X, mask, Ainv, B, jnp.sum(jnp.where(mu > 0, mu * g, 0.0)))
        better = lb > best
        best = jnp.where(better, lb, best)
        best_mu = jnp.where(better, mu, best_mu)
    return f, best, best_mu


def _fw_step(X, mask, perp, dirs, T, dtype, s_max, state):
    """One smoothed Frank-Wolfe iteration (toward or away step, exact line search on f_beta)."""
    lam, s, lb, mu_best = state
    Ainv = inverse_design(lam, X, perp)
    g = dirs.norms(Ainv)
    f = jnp.max(g)
    beta = s / f
    mu = _softmax_weights(g, beta)
    B = dirs.bmat(mu)
    g_mu = jnp.sum(jnp.where(mu > 0, mu * g, 0.0))
    LB, h = _lower_bound(X, mask, Ainv, B, g_mu)
    better = LB > lb
    lb = jnp.where(better, LB, lb)
    mu_best = jnp.where(better, mu, mu_best)
    # Frank-Wolfe (toward) and away directions for f_beta, whose gradient is -h.
    j = masked_argmax(h, mask)
    supp = mask & (lam > 0)
    a = masked_argmin(h, supp)
    tg = h[j] - g_mu
    ag = g_mu - h[a]
    toward = tg >= ag
    t = jnp.where(toward, j, a)
    lam_t = lam[t]
    lo = jnp.where(toward, 0.0, -lam_t / jnp.maximum(1.0 - lam_t, 1e-300))
    hi = jnp.where(toward, 1.0 - 1e-9, 0.0)
    v = Ainv @ X[t]
    gtt = X[t] @ v
    gT, idx = jax.lax.top_k(g, T)
    valid = jnp.isfinite(gT)
    gT = jnp.where(valid, gT, 0.0)
    cT = jnp.where(valid, dirs.inner(idx, v), 0.0)

    def phi(gam):
        gg = (gT - gam * cT * cT / ((1.0 - gam) + gam * gtt)) / (1.0 - gam)
        return jax.nn.logsumexp(beta * gg, b=valid.astype(dtype)) / beta

    dphi = jax.grad(phi)

    def bis(_, ab):
        a_, b_ = ab
        m = 0.5 * (a_ + b_)
        pos = dphi(m) > 0
        return jnp.where(pos, a_, m), jnp.where(pos, m, b_)

    a_, b_ = jax.lax.fori_loop(0, _BISECT, bis, (lo, hi))
    gam = jnp.where(toward, a_, b_)  # the end nearer 0: never overshoot the minimiser
    gam = jnp.where(phi(gam) <= phi(jnp.zeros((), dtype)), gam, 0.0)
    drop = (~toward) & (gam <= lo + 1e-12 * jnp.abs(lo))
    lam_new = (1.0 - gam) * lam
    lam_new = lam_new.at[t].add(gam)
    lam_new = jnp.where(drop, lam_new.at[t].set(0.0), lam_new)
    lam_new = jnp.where(mask, jnp.clip(lam_new, 0.0, None), 0.0)
    lam_new = lam_new / jnp.sum(lam_new)
    sharpen = (tg <= f / s) & (s < s_max)
    s = jnp.where(sharpen, jnp.minimum(4.0 * s, s_max), s)
    return (lam_new, s, lb, mu_best), f


def _polish(X, mask, perp, dirs: _Directions, lam, s, steps=_NEWTON):
    """Active-set Newton on the optimality conditions of the minimax problem.

    With support S (arms of largest lambda) and active directions A (largest g_y), the saddle
    point (lambda*, mu*, t = value) solves  g_y(lambda) = t (y in A),  sum_y mu_y (x_i^T A^-1 y)^2
    = t (i in S),  sum lambda = sum mu = 1  (KKT of min_lambda max_mu tr(A^-1 B_mu)).  Gauss-Newton
    (least squares) steps on this small system, dropping arms / directions whose weight turns
    negative and entering candidates whose condition is violated (h_i > t or g_y > t).  Its output is only a candidate: the caller accepts it through the certificate.
    """
    K, d = X.shape
    dtype = X.dtype
    S = min(K, d * (d + 1) // 2 + 1)
    T = min(dirs.size, S + 8)
    Ainv = inverse_design(lam, X, perp)
    g = dirs.norms(Ainv)
    f = jnp.max(g)
    # Candidate arms: the support of lambda first, then the arms of largest h = sum_y mu_y
    # (x^T A^-1 y)^2 (the arms the KKT conditions would add), so that an arm the optimal design
    # needs but lambda lacks can enter (below) instead of the polish stalling at the optimum
    # restricted to a wrong support (seen on seed 001's unit-sphere instances: FW then cannot
    # close the last 0.1-1% of the gap and every solve ran to max_iters).
    insupp = mask & (lam > 1e-4 * jnp.max(jnp.where(mask, lam, 0.0)))
    mu_all = _softmax_weights(g, s / f)
    _, h_all = _lower_bound(X, mask, Ainv, dirs.bmat(mu_all), jnp.zeros((), dtype))
    h_all = h_all / jnp.maximum(jnp.max(jnp.where(mask, h_all, 0.0)), 1e-300)
    score = jnp.where(insupp, 2.0 + lam, jnp.where(mask, jnp.clip(h_all, 0.0, 1.0), -1.0))
    _, iS = jax.lax.top_k(score, S)
    lamS = lam[iS]
    vS = mask[iS]
    mS = insupp[iS]
    gA, iA = jax.lax.top_k(g, T)
    mu0 = _softmax_weights(gA, s / f)
    vA = jnp.isfinite(gA)
    mA = jnp.isfinite(gA) & (mu0 > 1e-3 * jnp.max(mu0))
    XS = X[iS]
    YA = jnp.where(jnp.isfinite(gA)[:, None], dirs.rows(iA), 0.0)
    lamS = jnp.where(mS, lamS, 0.0)
    lamS = lamS / jnp.sum(lamS)
    mu0 = jnp.where(mA, mu0, 0.0)
    mu0 = mu0 / jnp.sum(mu0)
    eye = jnp.eye(d, dtype=dtype)

    def parts(v):
        l, m, t = v[:S], v[S:S + T], v[-1]
        A = (XS * l[:, None]).T @ XS + perp + 1e-300 * eye
        Ai = jnp.linalg.inv(A)
        W = YA @ Ai
        gy = jnp.sum(W * YA, 1)
        C = XS @ W.T  # [S, T]
        hi = (C * C) @ m
        return l, m, t, gy, hi

    def resid(v, mS, mA):
        l, m, t, gy, hi = parts(v)
        ra = jnp.where(mA, gy - t, m)
        rb = jnp.where(mS, hi - t, l)
        return jnp.concatenate([ra, rb, jnp.stack([jnp.sum(l) - 1.0, jnp.sum(m) - 1.0])])

    def step(_, carry):
        v, mS, mA = carry
        r = resid(v, mS, mA)
        J = jax.jacfwd(resid)(v, mS, mA)
        # Gauss-Newton via regularised normal equations (cheaper to compile than an SVD lstsq)
        JtJ = J.T @ J
        dv = jnp.linalg.solve(JtJ + 1e-12 * jnp.trace(JtJ) / JtJ.shape[0] * jnp.eye(JtJ.shape[0], dtype=dtype),
                              -J.T @ r)
        v = v + dv
        l, m, t, gy, hi = parts(v)
        # active-set update: drop negative weights, (re-)enter violated KKT conditions
        mS = jnp.where(mS, l > 0, vS & (hi > t))
        mA = jnp.where(mA, m > 0, vA & (gy > t))
        l = jnp.where(mS, jnp.maximum(l, 0.0), 0.0)
        m = jnp.where(mA, jnp.maximum(m, 0.0), 0.0)
        l = l / jnp.sum(l)
        m = m / jnp.sum(m)
        return jnp.concatenate([l, m, t[None]]), mS, mA

    v0 = jnp.concatenate([lamS, mu0, f[None]])
    v, mS, mA = jax.lax.fori_loop(0, steps, step, (v0, mS, mA))
    lam_new = jnp.zeros((K,), dtype).at[iS].add(v[:S])
    lam_new = jnp.where(mask, jnp.clip(lam_new, 0.0, None), 0.0)
    ok = jnp.all(jnp.isfinite(v)) & (jnp.sum(lam_new) > 0)
    lam_new = jnp.where(ok, lam_new / jnp.sum(lam_new), lam)
    muA = jnp.where(ok, v[S:S + T], mu0)
    return lam_new, muA, iA, YA


def _smooth_fw(X, mask, lam0, perp, dirs: _Directions, tol, max_iters, s0=10.0, trips: int | None = None):
    """Chunks of smoothed Frank-Wolfe iterations, each followed by a Newton polish; stops on the
    certified relative gap (module docstring).  ``trips`` (a Python int, at least ``max_iters``):
    ceil(trips / _CHUNK) chunks as a loop of a trip count known at compile time, the chunks after
    the stop leaving the state unchanged (:func:`jaxbandits.batching.fixed_trip_while`): the same
    result."""
    dtype = X.dtype
    T = min(_TOPK, dirs.size)
    s_max = jnp.maximum(1e3, 30.0 / tol)

    def chunk(state):
        lam, k, s, lb, mu_best, rgap = state

        def inner(i, carry):
            st, f = carry
            new, f = _fw_step(X, mask, perp, dirs, T, dtype, s_max, st)
            return new, f

        (lam, s, lb, mu_best), _ = jax.lax.fori_loop(0, _CHUNK, inner, ((lam, s, lb, mu_best), jnp.zeros((), dtype)))
        # Newton polish and certificate.
        lam_p, muA, iA, YA = _polish(X, mask, perp, dirs, lam, s)
        f_old = jnp.max(dirs.norms(inverse_design(lam, X, perp)))
        Ainv_p = inverse_design(lam_p, X, perp)
        f_p = jnp.max(dirs.norms(Ainv_p))
        take = jnp.isfinite(f_p) & (f_p < f_old)
        lam = jnp.where(take, lam_p, lam)
        f_cur = jnp.where(take, f_p, f_old)
        Ainv = jnp.where(take, Ainv_p, inverse_design(lam, X, perp))
        mu_c = jnp.clip(jnp.where(jnp.isfinite(muA), muA, 0.0), 0.0, None)
        mu_c = mu_c / jnp.maximum(jnp.sum(mu_c), 1e-300)
        B = (YA * mu_c[:, None]).T @ YA
        g_mu = jnp.sum(mu_c * jnp.sum((YA @ Ainv) * YA, 1))
        LB, _ = _lower_bound(X, mask, Ainv, B, g_mu)
        LB = jnp.where(jnp.isfinite(LB), LB, -jnp.inf)
        better = LB > lb
        lb = jnp.where(better, LB, lb)
        mu_full = jnp.zeros_like(mu_best).at[iA].add(mu_c)
        mu_best = jnp.where(better, mu_full, mu_best)
        rgap = (f_cur - lb) / f_cur
        s = jnp.where(take, jnp.clip(1.0 / jnp.maximum(rgap, 1e-300), s, s_max), s)
        return lam, k + _CHUNK, s, lb, mu_best, rgap

    def cond(state):
        lam, k, s, lb, mu_best, rgap = state
        return (k < max_iters) & (rgap > tol)

    init = (lam0, jnp.array(0, jnp.int32), jnp.asarray(s0, dtype), jnp.asarray(-jnp.inf, dtype),
            jnp.zeros((dirs.size,), dtype), jnp.asarray(jnp.inf, dtype))
    if trips is not None:
        lam, k, s, lb, mu_best, _ = fixed_trip_while(cond, chunk, init, -(-int(trips) // _CHUNK))
    else:
        lam, k, s, lb, mu_best, _ = jax.lax.while_loop(cond, chunk, init)
    return lam, k, lb, mu_best


def _xy_setup(X, Z, item_mask, arm_mask):
    X, Z = as_float(X), as_float(Z)
    mask = full_mask(arm_mask, X.shape[0])
    perp, _ = null_projector(X, mask)
    return X, mask, perp, _pairs(Z, full_mask(item_mask, Z.shape[0]))


def xy_paper_start(X, Z, *, item_mask=None, arm_mask=None, init=None) -> PaperFW:
    """App F's Frank-Wolfe for the XY design of :func:`xy_allocation` (``method="paper"``), in
    pieces: the start (warm start ``init``, as :func:`xy_allocation`), :func:`xy_paper_iterate`
    (any number of times: the iterates are those of one uninterrupted run) and
    :func:`xy_paper_value`.  A caller can so run a few iterations batched over many problems
    and continue only the ones still running
    (:func:`jaxbandits.algorithms.elimination.compacted_xy_design`)."""
    X, mask, _, _ = _xy_setup(X, Z, item_mask, arm_mask)
    return PaperFW(initial_design(mask, init, X.dtype), jnp.array(0, jnp.int32), jnp.asarray(jnp.inf, X.dtype))


def xy_paper_iterate(X, Z, state: PaperFW, *, item_mask=None, arm_mask=None, max_iters=5_000,
                     trips: int | None = None) -> PaperFW:
    """Continue App F's Frank-Wolfe from ``state`` while :func:`~jaxbandits.design.app_f.paper_fw_running`; ``trips``: a
    loop of that many iterations known at compile time instead (:func:`~jaxbandits.design.app_f.dense_iterate`)."""
    X, mask, perp, dirs = _xy_setup(X, Z, item_mask, arm_mask)
    return dense_iterate(X, mask, perp, dirs, state, max_iters, trips)


def xy_paper_value(X, Z, state: PaperFW, *, item_mask=None, arm_mask=None):
    """(lambda, value) of a finished run: App F's cutoff applied, and max_y ||y||^2_{A(lambda)^-1}
    (the ``allocation`` and ``value`` of :func:`xy_allocation`, bit for bit; no certificate: its
    ``gap`` is not computed)."""
    X, mask, perp, dirs = _xy_setup(X, Z, item_mask, arm_mask)
    lam = finish(X, state.lam, perp)
    return lam, jnp.max(dirs.norms(inverse_design(lam, X, perp)))


def xy_paper_run_fused(X, Z, state: PaperFW, go, *, item_mask=None, arm_mask=None, max_iters=5_000,
                       trips: int, kernels: str) -> PaperFW:
    """:func:`xy_paper_iterate` with ``trips`` (App F's iterations from ``state`` while they
    run, at most ``trips``), computed as one fused kernel (:mod:`jaxbandits.design.kernels`):
    under ``vmap`` one program a lane, which does nothing where ``go`` is False and otherwise makes
    its own run in registers, the iterations after its stop branched over.  Each iteration forms
    A(lambda) + P_perp summed over the arms in order, inverts it with
    :func:`~jaxbandits.design.app_f.exact_inverse`'s jitter and unrolled Cholesky, takes the pair
    of items of largest ||z_i - z_j||^2_{A^-1} (the pair table of :func:`_pairs`, differences first
    and coordinates in order; its first maximiser in the same row-major order), the arm
    maximising (x^T A^-1 y)^2 and App F's step.

    The design enters the iteration's arithmetic only through its decisions (the pair, the arm,
    the 1 % test), and lambda is computed from those decisions alone by the same operations
    ((1 - gamma) lambda, then gamma added to the chosen arm): it is :func:`xy_paper_iterate`'s bit
    for bit unless a decision falls within rounding of a tie.  ``state``: the run so far (k, the
    relative change); ``kernels``: "triton" (GPUs) or "interpret" (Pallas's interpreter).  For
    d <= ``SMALL_DIM``."""
    from jaxbandits.design.app_f import fused_trips_supported, kernel_exact_inverse, step_size

    if kernels not in ("triton", "interpret"):
        raise ValueError(f"kernels must be 'triton' or 'interpret' for the fused form, got {kernels!r}")
    X, mask, perp, _ = _xy_setup(X, Z, item_mask, arm_mask)
    Z = as_float(Z)
    (K, d), M = X.shape, Z.shape[0]
    if not fused_trips_supported(d):
        raise ValueError(f"the fused App F run needs d <= {SMALL_DIM}, got d = {d}")
    dtype = X.dtype
    item_mask = full_mask(item_mask, M)
    Kp, Mp, dp = power_of_two(K), power_of_two(M), power_of_two(d)
    pad2 = lambda a, r, c: jnp.pad(a, ((0, r - a.shape[0]), (0, c - a.shape[1])))  # noqa: E731
    pad1 = lambda a, n: jnp.pad(a, (0, n - a.shape[0]))  # noqa: E731
    carry = (pad1(state.lam.astype(dtype), Kp), state.k.astype(jnp.int32), state.rel.astype(dtype))
    consts = (pad2(X, Kp, dp), pad2(Z.astype(dtype), Mp, dp), pad2(perp.astype(dtype), dp, dp),
              pad1(item_mask.astype(jnp.int32), Mp), pad1(mask.astype(jnp.int32), Kp))
    n_trips = int(trips)

    def iteration(carry, Xv, xcols, zs, im, am, P):
        lam, k, _ = carry
        # A(lambda) + P_perp (the arms in order), then (A + eps I)^-1
        A = None
        for a in range(K):
            x = kern.row(Xv, a)
            term = kern.entry(lam, a) * (x[:, None] * x[None, :])
            A = term if A is None else A + term
        Ainv = kernel_exact_inverse(A + P, d)
        # the pair table of _pairs (w = A^-1 z; differences first, coordinates in order)
        ws = [kern.dot_columns(zs, kern.row(Ainv, c)) for c in range(d)]
        G = None
        for c in range(d):
            term = (ws[c][:, None] - ws[c][None, :]) * (zs[c][:, None] - zs[c][None, :])
            G = term if G is None else G + term
        iu = kern.iota(Mp)
        ok = (im[:, None] != 0) & (im[None, :] != 0) & (iu[:, None] < iu[None, :]) & (iu[None, :] < M)
        G = jnp.where(ok, G, -jnp.inf)
        m = jnp.max(G, axis=1)
        cols = jnp.min(jnp.where(G == m[:, None], iu[None, :], M - 1), axis=1)
        top = jnp.max(m)
        i = jnp.minimum(jnp.min(jnp.where(m == top, iu, Mp - 1)), M - 1)
        y = kern.pick_row(zs, i, dp) - kern.pick_row(zs, kern.entry(cols, i), dp)
        # the arm of largest (x^T A^-1 y)^2, and App F's step
        u = kern.dot_columns([kern.column(Ainv, c) for c in range(d)], y)
        h = kern.dot_columns(xcols, u)
        arm = kern.first_argmax(h * h, am != 0)
        gam = step_size(k, dtype)
        new = (1.0 - gam) * lam
        new = jnp.where(kern.iota(Kp) == arm, new + gam, new)
        rel = jnp.sqrt(jnp.sum((new - lam) ** 2)) / jnp.sqrt(jnp.sum(lam ** 2))
        return new, k + 1, rel

    def run(lam, k, rel, Xv, Zv, P, im, am):
        xcols = [kern.column(Xv, c) for c in range(d)]
        zs = [kern.column(Zv, c) for c in range(d)]

        def trip(_, s):
            on = (s[1] < max_iters) & (s[2] >= 0.01)  # :func:`~jaxbandits.design.app_f.running`
            return jax.lax.cond(on, lambda s: iteration(s, Xv, xcols, zs, im, am, P), lambda s: s, s)

        return jax.lax.fori_loop(0, n_trips, trip, (lam, k, rel))

    lam, k, rel = kern.gated_kernel(run, carry, consts, go, kernels=kernels)
    return PaperFW(lam[:K].astype(state.lam.dtype), k.astype(state.k.dtype), rel.astype(state.rel.dtype))


def _check_fixed_trips(fixed_trips, max_iters, method):
    if fixed_trips is not None:
        # max_iters is traced here unless left to its default (then 2,000 / 5,000): the caller
        # checks a traced one
        bound = (2_000 if method == "smooth" else 5_000) if max_iters is None else 1
        if isinstance(fixed_trips, bool) or not isinstance(fixed_trips, int) or fixed_trips < bound:
            raise ValueError(f"fixed_trips must be None or an integer >= max_iters (here >= {bound}), got {fixed_trips!r}: "
                             "fewer trips would cut the solver short")


def _solve(X, mask, init, perp, dirs, tol, max_iters, method, trips: int | None = None):
    if max_iters is None:
        max_iters = 5_000 if method == "paper" else 2_000
    lam0 = initial_design(mask, init, X.dtype)
    if method == "smooth":
        lam, k, lb, mu = _smooth_fw(X, mask, lam0, perp, dirs, tol, max_iters, trips=trips)
        f, lb2, mu2 = _certificate(X, mask, lam, perp, dirs)
        use2 = lb2 > lb
        lb = jnp.maximum(lb, lb2)
        mu = jnp.where(use2, mu2, mu)
    elif method == "paper":
        lam, k = dense_solve(X, mask, lam0, perp, dirs, max_iters, trips)
        f, lb, mu = _certificate(X, mask, lam, perp, dirs)
    else:
        raise ValueError(f"unknown method {method!r}; expected 'smooth' or 'paper'")
    return lam, k, f, lb, mu


def _value(lam, mu, X, perp, bmat_fn, f):
    """f at the stop-gradient solution, with the envelope gradient of tr(A^-1 B_mu)."""
    lam = jax.lax.stop_gradient(lam)
    mu = jax.lax.stop_gradient(mu)
    Ainv = inverse_design(lam, X, perp)
    lagr = jnp.sum(Ainv * bmat_fn(mu))
    return jax.lax.stop_gradient(f) + lagr - jax.lax.stop_gradient(lagr)


def _solution(lam, k, f, lb, value, tol):
    gap = jnp.maximum(f - lb, 0.0)
    return DesignSolution(allocation=lam, value=value, gap=gap, iterations=k, converged=gap <= tol * f)


@partial(jax.jit, static_argnames=("method", "fixed_trips"))
def minimax_design(X, Y, *, y_mask=None, arm_mask=None, init=None, tol: float = 1e-3,
                   max_iters=None, method: str = "smooth", fixed_trips: int | None = None) -> DesignSolution:
    """min over the simplex (on ``arm_mask``) of max_{y in Y, y_mask} ||y||^2_{A(lambda)^-1}.

    This is rho(Y) of seed 001 Sec 1.2 (squared norm, as in Algorithm 1 and App B) for an
    arbitrary direction set.  ``method="smooth"`` (default): smoothed Frank-Wolfe with away steps,
    exact line search and a certified duality gap (module docstring); stops when
    gap <= tol * value.  ``method="paper"``: seed 001 App F exactly (step 2/(k+2); stop on a
    relative l2 change of lambda below 0.01 or after ``max_iters`` = 5000 iterations; lambda < 1e-5
    set to 0 and renormalised), for baselines that replicate the paper; its gap is still certified.

    Args:
      X: arms [K, d].
      Y: directions [N, d].
      y_mask: [N] bool.
      arm_mask: [K] bool.
      init: warm start [K].
      tol: relative gap.
      max_iters: cap (default 2000, or 5000 for ``method="paper"``; not static, changing it does
        not recompile).
      fixed_trips: as :func:`oracle_allocation`'s (None: a ``while_loop``).
    """
    _check_fixed_trips(fixed_trips, max_iters, method)
    X = as_float(X)
    Y = as_float(Y)
    mask = full_mask(arm_mask, X.shape[0])
    ym = full_mask(y_mask, Y.shape[0])
    perp, _ = null_projector(X, mask)
    Xs, Ys = jax.lax.stop_gradient(X), jax.lax.stop_gradient(Y)
    lam, k, f, lb, mu = _solve(Xs, mask, init, perp, _explicit(Ys, ym), tol, max_iters, method, fixed_trips)
    value = _value(lam, mu, X, perp, lambda m: (Y * m[:, None]).T @ Y, f)
    return _solution(lam, k, f, lb, value, tol)


@partial(jax.jit, static_argnames=("method", "fixed_trips"))
def xy_allocation(X, Z=None, *, item_mask=None, arm_mask=None, init=None, tol: float = 1e-3,
                  max_iters=None, method: str = "smooth", fixed_trips: int | None = None) -> DesignSolution:
    """XY allocation: the design attaining rho(Y(Z)) with Y(Z) = {z - z' : z != z' active items}.

    Seed 001 Sec 1.2 (rho) and Sec 2.2 / Alg 1 (lambda_t of RAGE on the active items; XY-static
    when Z = X).  The M^2 differences are never materialised: ||z_i - z_j||^2_{A^-1} =
    Q_ii + Q_jj - 2 Q_ij with Q = Z A^-1 Z^T, and B_mu = Z^T (diag(mu 1 + mu^T 1) - mu - mu^T) Z.
    Memory is O(M^2) (an [M, M] matrix per iteration).  Z defaults to X.  Value = rho(Y(Z)).
    Same ``method`` / ``tol`` semantics as :func:`minimax_design`; ``fixed_trips`` as
    :func:`oracle_allocation`'s.
    """
    _check_fixed_trips(fixed_trips, max_iters, method)
    X = as_float(X)
    Z = X if Z is None else as_float(Z)
    M = Z.shape[0]
    mask = full_mask(arm_mask, X.shape[0])
    im = full_mask(item_mask, M)
    perp, _ = null_projector(X, mask)
    Xs, Zs = jax.lax.stop_gradient(X), jax.lax.stop_gradient(Z)
    lam, k, f, lb, mu = _solve(Xs, mask, init, perp, _pairs(Zs, im), tol, max_iters, method, fixed_trips)
    value = _value(lam, mu, X, perp, _pairs(Z, im).bmat, f)
    return _solution(lam, k, f, lb, value, tol)


#: iterations of :func:`xy_fixed_iterations` between two fresh inversions of A(lambda)
_XY_REFRESH = 128


def xy_fixed_iterations(X, Z=None, *, item_mask=None, iters: int = 1000, step: float = 0.5,
                        kernels: str = "xla", needed=None):
    """(lambda, rho): the XY design of the released Peace codes' Frank-Wolfe (Katz-Samuels et al.
    2020's ``fw_XY``, as Xiong et al.'s ``algorithms/fw.py`` runs it): from the uniform design over
    every arm, ``iters - 1`` (999) iterations of lambda <- (1 - eta) lambda + eta e_j, eta = step / (k + 2)
    at iteration k = 1, 2, ..., j = argmax_x (x^T A(lambda)^-1 y)^2 for the pair y = z - z' of the
    active items with the largest ||y||^2_{A^-1}; rho = that largest value at the last iteration's
    design (before its step), as the released code returns it; rho = 0 and the uniform design
    when fewer than two items are active.  Fixed iterations, no stopping test (a loop of a trip
    count known at compile time).  The design keeps every arm in its support, so A(lambda) is
    invertible when the arms span R^d (the released code's pseudo-inverse is then the inverse).

    The iterations never form A(lambda)^-1: they carry H = [X; Z] A(lambda)^-1 [X; Z]^T as its
    blocks X A^-1 X^T [K, K], X A^-1 Z^T [K, M] and Z A^-1 Z^T [M, M], which is all an iteration
    reads (the pair norms are Q_ii + Q_jj - 2 Q_ij of the last block, x^T A^-1 y a difference of
    two columns of the second), and update them by the rank-one step's Sherman-Morrison formula.
    They are computed afresh from an inversion of A(lambda) every ``_XY_REFRESH`` iterations (the
    released code inverts at every iteration; here Gauss-Jordan, inside the loop, with no solver
    call).  The designs equal the released code's (``tests/test_fixed_budget.py``); against an
    inversion at every iteration (200 item subsets each of four instances, a near tie and an
    ill-conditioned one among them) every design was within 1e-12 and rho within 3.1e-12 relative.

    ``kernels``: how the loop runs (:func:`jaxbandits.design.kernels.fused_fori_loop`): "xla" (a
    loop of XLA operations), "triton" (the whole design one fused GPU kernel: a lane's three
    blocks of H stay in registers) or "interpret" (that kernel interpreted, on any backend); every
    one computes the same operations in the same order.  ``needed`` (a traced bool, per lane under ``vmap``; None: True): whether the
    caller uses the result.  A fused kernel runs no iteration for a lane where it is False and
    returns the uniform design there; the "xla" loop runs every lane (its trip count stays fixed,
    with no loop that waits on data)."""
    check_kernels(kernels)
    X = as_float(X)
    Z = X if Z is None else as_float(Z)
    (K, d), M = X.shape, Z.shape[0]
    dt = X.dtype
    im = full_mask(item_mask, M)
    n = int(iters) - 1  # iterations k = 1, ..., iters - 1
    # the fused kernel's arrays have power-of-two dimensions: zero arms that are never chosen, items
    # in no pair, and zero coordinates (the identity on them in A)
    Kp, Mp, dp = (K, M, d) if kernels == "xla" else (power_of_two(K), power_of_two(M), power_of_two(d))
    Xp = jnp.zeros((Kp, dp), dt).at[:K, :d].set(X)
    Zp = jnp.zeros((Mp, dp), dt).at[:M, :d].set(Z)
    imp = jnp.zeros((Mp,), bool).at[:M].set(im)
    pair = (imp[:, None] & imp[None, :] & ~jnp.eye(Mp, dtype=bool)).astype(jnp.int32)
    arm_ok = (jnp.arange(Kp) < K).astype(jnp.int32)
    lam0 = jnp.zeros((Kp,), dt).at[:K].set(1.0 / K)
    blocks = -(-n // _XY_REFRESH)
    if kernels != "xla" and needed is not None:
        blocks = jnp.where(needed, blocks, 0).astype(jnp.int32)
    lam, rho = fused_fori_loop(blocks, partial(_xy_block, n=n, step=step, d=d), (lam0, jnp.zeros((), dt)),
                               (Xp, Zp, pair, arm_ok), kernels=kernels, max_trips=-(-n // _XY_REFRESH))
    few = jnp.sum(im) < 2
    return jnp.where(few, lam0[:K], lam[:K]), jnp.where(few, 0.0, rho)


def _xy_block(b, carry, Xp, Zp, pair, arm_ok, *, n: int, step: float, d: int):
    """Block ``b`` of :func:`xy_fixed_iterations`: A(lambda)^-1 afresh (Gauss-Jordan on
    sum_x lambda_x x x^T, the identity on padded coordinates), the three blocks of H, then
    ``_XY_REFRESH`` iterations."""
    lam, rho = carry
    dp = Xp.shape[1]
    ids = kern.iota(dp)
    A = jnp.where((ids[:, None] == ids[None, :]) & (ids[:, None] >= d), 1.0, 0.0).astype(lam.dtype)
    A = jax.lax.fori_loop(0, Xp.shape[0], lambda k, A: A + (kern.entry(lam, k) * kern.row(Xp, k))[:, None]
                          * kern.row(Xp, k)[None, :], A)
    Ainv = kern.gauss_jordan_inverse(A)
    XA, ZA = kern.matmul(Xp, Ainv), kern.matmul(Zp, Ainv)
    first = (1 + b * _XY_REFRESH).astype(jnp.int32)
    lam, _, _, _, _, rho = jax.lax.fori_loop(
        0, _XY_REFRESH, lambda i, c: _xy_iteration(i, c, pair, arm_ok, first, n=n, step=step),
        (lam, kern.matmul_t(XA, Xp), kern.matmul_t(XA, Zp), kern.matmul_t(ZA, Zp), jnp.ones((), lam.dtype), rho))
    return lam, rho


def _xy_iteration(i, carry, pair, arm_ok, first, *, n: int, step: float):
    """Iteration ``first + i`` of :func:`xy_fixed_iterations` on its carry (lambda, the blocks of
    H times S: X A^-1 X^T S, X A^-1 Z^T S, Z A^-1 Z^T S, the scalar S, rho).  S = prod (1 - eta) over
    the block's steps so far: carrying H S instead of H saves a division per entry, and changes no
    choice (every entry shares the positive factor).  jnp that Pallas also lowers to Triton, with
    exact reductions only (max, min, and sums of one nonzero term), so every form computes the
    same bits."""
    lam, Hxx, Hxz, Hzz, S, rho_prev = carry
    K, M = Hxz.shape
    dt = lam.dtype
    ik, im = kern.iota(K), kern.iota(M)
    count = first + i
    # the pair of active items with the largest ||z_a - z_b||^2_{A^-1} (its first index, row-major)
    q = jnp.sum(jnp.where(im[:, None] == im[None, :], Hzz, 0.0), axis=1)
    norms = jnp.where(pair != 0, (q[:, None] + q[None, :]) - 2.0 * Hzz, -jnp.inf)
    top = jnp.max(norms)
    flat = jnp.min(jnp.where(norms == top, im[:, None] * M + im[None, :], M * M))
    a, b = flat // M, flat % M
    # the arm maximising (x^T A^-1 (z_a - z_b))^2 (its first index)
    g = kern.column(Hxz, a) - kern.column(Hxz, b)
    g2 = jnp.where(arm_ok != 0, g * g, -jnp.inf)
    j = jnp.min(jnp.where(g2 == jnp.max(g2), ik, K))
    live = count <= n  # the last block's iterations past iters - 1 change nothing
    eta = jnp.where(live, step / (count.astype(dt) + 2.0), 0.0)
    # Sherman-Morrison for A <- (1 - eta) A + eta x_j x_j^T: with u = A^-1 x_j,
    # A^-1 <- (A^-1 - u u^T / ((1 - eta) / eta + x_j^T u)) / (1 - eta).  With A^-1 = G / S:
    # G <- G - (G x_j)(G x_j)^T / (S (1 - eta) / eta + x_j^T G x_j) and S <- S (1 - eta); each block
    # W G V^T changes by the outer product of W G x_j and V G x_j (the column j of the first block,
    # the row j of the second).  No product is added to anything (no a * b + c): XLA:CPU contracts
    # such a pair into a fused multiply-add, XLA:GPU and Triton do not, and they would round apart.
    xu, zu = kern.column(Hxx, j), kern.row(Hxz, j)
    S_next = S * (1.0 - eta)
    denom = S_next / eta + kern.entry(xu, j)  # +inf when eta = 0: no step
    Hxx = Hxx - (xu[:, None] * xu[None, :]) / denom
    Hxz = Hxz - (xu[:, None] * zu[None, :]) / denom
    Hzz = Hzz - (zu[:, None] * zu[None, :]) / denom
    lam = (lam + jnp.where(ik == j, eta / (1.0 - eta), 0.0).astype(dt)) * (1.0 - eta)
    return lam, Hxx, Hxz, Hzz, S_next, jnp.where(live, top / S, rho_prev)


@partial(jax.jit, static_argnames=("method", "fixed_trips"))
def oracle_allocation(X, Z, theta, *, item_mask=None, arm_mask=None, init=None, tol: float = 1e-3,
                      max_iters=None, method: str = "smooth", fixed_trips: int | None = None) -> DesignSolution:
    """Oracle allocation lambda* and psi*(theta) (seed 001 Thm 1 and eq. (1)).

    psi*(theta) = min_lambda max_{z != z*} ||z* - z||^2_{A(lambda)^-1} / ((z* - z)^T theta)^2,
    z* = argmax over active items of z^T theta; the minimax problem with directions
    (z* - z) / Delta(z).  Returns psi* (no factor 2).  The characteristic time of seed 000 eq. (1)
    (X = Z) is T*(theta) = 2 psi*(theta): see :func:`characteristic_time`.  The value is
    differentiable in X, Z and theta (envelope theorem; z* is held fixed, valid away from ties).

    ``fixed_trips`` (a Python int, at least ``max_iters``; None: a ``while_loop``): the solver's
    iterations as loops of a trip count known at compile time covering that many iterations
    (whole chunks of 48 for ``"smooth"``), those after its stop leaving the iterate unchanged: the
    same solution, with no loop asking an accelerator's host for its predicate.
    """
    _check_fixed_trips(fixed_trips, max_iters, method)
    X = as_float(X)
    Z = as_float(Z)
    theta = as_float(theta)
    mask = full_mask(arm_mask, X.shape[0])
    im = full_mask(item_mask, Z.shape[0])
    perp, _ = null_projector(X, mask)
    Ys, ym = oracle_directions(jax.lax.stop_gradient(Z), jax.lax.stop_gradient(theta), im)
    lam, k, f, lb, mu = _solve(jax.lax.stop_gradient(X), mask, init, perp, _explicit(Ys, ym), tol,
                               max_iters, method, fixed_trips)
    Y, _ = oracle_directions(Z, theta, im)
    value = _value(lam, mu, X, perp, lambda m: (Y * m[:, None]).T @ Y, f)
    return _solution(lam, k, f, lb, value, tol)


def characteristic_time(inst, *, tol: float = 1e-4, max_iters: int = 5_000) -> jax.Array:
    """T*(theta) of seed 000 eq. (1) (Thm 1), generalised to items Z: T* = 2 psi*(theta).

    Seed 000: (T*)^-1 = sup_w min_{a != a*} (theta^T (a* - a))^2 / (2 ||a* - a||^2_{(sum_a w_a a a^T)^-1}),
    so T* = 2 psi* with psi* of seed 001 eq. (1) (which has no 1/2).  Unit noise; multiply by
    sigma^2 for the lower bound (:func:`lower_bound`).  Works on one instance or a batch; a padded
    instance (:func:`jaxbandits.instances.base.pad_to`) gives the T* of its real arms and items.
    """
    fn = lambda X, Z, th, am, im: 2.0 * oracle_allocation(X, Z, th, arm_mask=am, item_mask=im, tol=tol,  # noqa: E731
                                                          max_iters=max_iters).value
    if inst.is_batched:
        fn = jax.vmap(fn, in_axes=(0, 0, 0, None if inst.arm_mask is None else 0, None if inst.item_mask is None else 0))
    return fn(inst.arms, inst.items, inst.theta, inst.arm_mask, inst.item_mask)


def lower_bound(inst, delta, *, tol: float = 1e-4, max_iters: int = 5_000) -> jax.Array:
    """Seed 000 Thm 1: E[tau] >= sigma^2 T*(theta) kl(delta, 1 - delta) for any delta-PAC algorithm.

    sigma = ``inst.noise`` (Gaussian noise standard deviation).  Batched instances give a batch.
    """
    return inst.noise ** 2 * characteristic_time(inst, tol=tol, max_iters=max_iters) * kl_bernoulli(delta, 1 - delta)
