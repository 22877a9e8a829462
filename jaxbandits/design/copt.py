"""c-optimal design of one direction: min over the simplex of ||y||^2_{A(lambda)^-1}.

Used where an algorithm needs the design of a single direction at every round (Top Two's pair
direction z_leader - z_challenger, :mod:`jaxbandits.algorithms.fixed_confidence.top_two`): a few
Frank-Wolfe iterations with the exact line search in closed form, warm-started from the previous
round's design, cost O(K d + d^3) each; the general minimax solver
(:func:`jaxbandits.design.minimax_design` with one direction) is certified but far heavier per call.

Frank-Wolfe on f(lambda) = y^T A(lambda)^-1 y.  The gradient is -(x_k^T A^-1 y)^2 =: -b_k and
sum_k lambda_k b_k = f, so the Frank-Wolfe gap is max_k b_k - f and 2 f - max_k b_k is a lower
bound on the optimum (Elfving / the equivalence theorem: lambda is c-optimal iff
max_k (x_k^T A^-1 y)^2 <= y^T A^-1 y).  Along lambda -> (1 - g) lambda + g e_j, with a = f,
b = b_j, c = x_j^T A^-1 x_j, e = a c - b >= 0 (Cauchy-Schwarz) and r = g / (1 - g), Sherman-Morrison
gives f(r) = (1 + r)(a + e r) / (1 + c r); its stationary point solves e c r^2 + 2 e r + (a - b) = 0,
i.e. g = (b - a) / (s + e + b - a), s = sqrt(e^2 + e c (b - a)) (g = 1 when e = 0: y lies along
x_j in the A^-1 metric), and there is no descent when b <= a.
"""
from __future__ import annotations

from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

from jaxbandits.batching import current_policy, entries_int32, fused_entries
from jaxbandits.design.core import (SMALL_DIM, DesignSolution, Entries, add_jitter, first_max, full_mask,
                                   initial_design, inverse_design, ordered_sum, small_backward, small_cholesky, small_forward)


def c_optimal(X: jax.Array, y: jax.Array, *, arm_mask: Optional[jax.Array] = None,
              init: Optional[jax.Array] = None, iters: int = 16) -> DesignSolution:
    """``iters`` Frank-Wolfe iterations (exact line search) toward the c-optimal design of ``y``.

    A fixed iteration count (static) and no early stop, so the cost is the same on every lane.
    ``gap`` is the certified bound max_k b_k - f on f - optimum (module docstring); ``converged``
    is ``gap <= 1e-3 f``.  Arms must span the directions that matter (a singular design gets the
    relative jitter of :func:`jaxbandits.design.core.inverse_design`).  For d <= SMALL_DIM the
    iterations run in unrolled scalar arithmetic (:func:`_small_solve`), and under the accelerator
    policy with K <= SMALL_ARMS the arms are unrolled too (:func:`_tiny_solve`)."""
    X = jnp.asarray(X)
    K, d = X.shape
    dtype = X.dtype
    mask = full_mask(arm_mask, K)
    lam0 = initial_design(mask, init, dtype)
    if d <= SMALL_DIM and K <= SMALL_ARMS and current_policy().batched:
        # no mask: a host constant, literals of the kernel (not an operand made every step)
        lam, a, b_all = _tiny_solve(X, y, np.ones((K,), bool) if arm_mask is None else mask, lam0, iters,
                                    current_policy().kernels)
    elif d <= SMALL_DIM:
        lam, a, b_all = _small_solve(X, y, mask, lam0, iters)
    else:
        lam, a, b_all = _library_solve(X, y, mask, lam0, iters)
    gap = jnp.maximum(jnp.max(jnp.where(mask, b_all, -jnp.inf)) - a, 0.0)
    return DesignSolution(lam, a, gap, jnp.asarray(iters, jnp.int32), gap <= 1e-3 * a)


def _step(a, b, c):
    """The exact line-search step g toward the vertex e_j (module docstring): a = f, b = b_j,
    c = x_j^T A^-1 x_j."""
    e = jnp.maximum(a * c - b, 0.0)
    db = jnp.maximum(b - a, 0.0)
    s = jnp.sqrt(e * e + e * c * db)
    g = jnp.where(db > 0, db / jnp.maximum(s + e + db, 1e-300), 0.0)
    return jnp.clip(g, 0.0, 1.0)


def _library_solve(X, y, mask, lam0, iters):
    """(lambda, a, b) after ``iters`` iterations, A(lambda)^-1 from
    :func:`jaxbandits.design.core.inverse_design` (library Cholesky and triangular solve) at every
    iteration: a = y^T A^-1 y, b = (X A^-1 y)^2 at the final lambda."""
    K, d = X.shape
    perp = jnp.zeros((d, d), X.dtype)
    idx = jnp.arange(K)

    def parts(lam):
        Ainv = inverse_design(lam, X, perp)
        u = Ainv @ y
        h = X @ u
        return Ainv, y @ u, h * h

    def body(_, lam):
        Ainv, a, b_all = parts(lam)
        masked = jnp.where(mask, b_all, -jnp.inf)
        j, b = jnp.argmax(masked), jnp.max(masked)  # b = b_all[j]
        g = _step(a, b, X[j] @ (Ainv @ X[j]))
        new = (1.0 - g) * lam
        return jnp.where(idx == j, new + g, new)

    lam = jax.lax.fori_loop(0, iters, body, lam0)
    _, a, b_all = parts(lam)
    return lam, a, b_all


def _small_solve(X, y, mask, lam0, iters):
    """:func:`_library_solve` for d <= SMALL_DIM in unrolled scalar arithmetic
    (:func:`jaxbandits.design.core.small_cholesky`): each iteration forms A(lambda) + eps I = L L^T
    (eps as in :func:`jaxbandits.design.core.inverse_design`) by one reduction over the arms, then
    a = ||L^-1 y||^2, b = (X L^-T L^-1 y)^2 and c = ||L^-1 x_j||^2.  Under ``vmap`` the factor and
    the solves are elementwise over the lanes and fuse: an iteration is a few kernels instead of a
    matrix product, a factorisation, a triangular solve and three products, each its own launch."""
    K, d = X.shape
    idx = jnp.arange(K)

    def parts(lam):
        A = jnp.sum((lam[:, None, None] * X[:, :, None]) * X[:, None, :], axis=0)
        A = add_jitter(A, ordered_sum([A[i, i] for i in range(d)]))
        L, r = small_cholesky(A)
        z = small_forward(L, r, y)
        u = small_backward(L, r, z)
        h = ordered_sum([X[:, i] * u[i] for i in range(d)])
        return (L, r), ordered_sum([zi * zi for zi in z]), h * h

    def body(_, lam):
        (L, r), a, b_all = parts(lam)
        masked = jnp.where(mask, b_all, -jnp.inf)
        j, b = jnp.argmax(masked), jnp.max(masked)  # b = b_all[j]
        w = small_forward(L, r, X[j])
        g = _step(a, b, ordered_sum([wi * wi for wi in w]))
        new = (1.0 - g) * lam
        return jnp.where(idx == j, new + g, new)

    lam = jax.lax.fori_loop(0, iters, body, lam0, unroll=4)
    _, a, b_all = parts(lam)
    return lam, a, b_all


#: largest number of arms for which :func:`_tiny_solve` unrolls the arms too (with d <= SMALL_DIM)
SMALL_ARMS = 16


def _tiny_solve(X, y, mask, lam0, iters, kernels: str = "xla"):
    """:func:`_small_solve` for few arms (K <= SMALL_ARMS) as well as small d: the arms are
    unrolled too (A(lambda) a sum of K terms in arm order, the argmax a chain of compares, x_j a
    chain of selects), so under ``vmap`` an iteration is elementwise over the lanes: no reduction,
    gather or product is left in the loop.  On a GPU the loop is one fused kernel
    (:func:`jaxbandits.batching.fused_entries`, elementwise: a program a block of lanes)
    where XLA launched one or two kernels an iteration (Top Two, H100 model, Soare d = 5, 16,384
    lanes: 58.6 -> 39.6 kernels a step).  The accelerator program's form (:func:`c_optimal`); the
    CPU keeps :func:`_small_solve`, which is faster there and gives the same iterates up to the
    rounding of A(lambda)'s sum.  ``kernels``: the policy's form of fused loops."""
    K, d = X.shape

    def parts(lam, Xs, ys):
        rows = [[ordered_sum([(lam[k] * Xs[k][i]) * Xs[k][j] for k in range(K)]) for j in range(i + 1)]
                for i in range(d)]
        tr = ordered_sum([rows[i][i] for i in range(d)])
        eps = 1e-13 * tr / d
        rows = [[rows[i][j] + eps if i == j else rows[i][j] for j in range(i + 1)] for i in range(d)]
        L, r = small_cholesky(Entries(rows))
        z = small_forward(L, r, ys)
        u = small_backward(L, r, z)
        h = [ordered_sum([Xs[k][i] * u[i] for i in range(d)]) for k in range(K)]
        return (L, r), ordered_sum([zi * zi for zi in z]), [hk * hk for hk in h]

    def unpack(consts):
        """(arms [K][d], y [d], mask [K]) from the loop's flat scalar constants."""
        return ([list(consts[k * d:(k + 1) * d]) for k in range(K)], list(consts[K * d:K * d + d]),
                list(consts[K * d + d:]))

    def body(_, lam, *consts):
        Xs, ys, ms = unpack(consts)
        (L, r), a, b_all = parts(lam, Xs, ys)
        j, b = first_max([jnp.where(ms[k] != 0, b_all[k], -jnp.inf) for k in range(K)])
        xj = [Xs[K - 1][i] for i in range(d)]
        for k in reversed(range(K - 1)):
            xj = [jnp.where(j == k, Xs[k][i], xj[i]) for i in range(d)]
        w = small_forward(L, r, xj)
        g = _step(a, b, ordered_sum([wi * wi for wi in w]))
        new = [(1.0 - g) * lk for lk in lam]
        return tuple(jnp.where(j == k, new[k] + g, new[k]) for k in range(K))

    def loop(lam0, Xs, ys, ms):
        consts = tuple(Xs) + tuple(ys) + tuple(ms)
        return list(jax.lax.fori_loop(0, int(iters), lambda i, c: body(i, c, *consts), tuple(lam0), unroll=4)),

    # the arrays go into the kernel as they are (a kernel's input sliced into one scalar a lane per
    # entry was a kernel per entry on a GPU: y, made by Top Two's challenger kernel, cost five)
    lam, = fused_entries(loop, (lam0, X, y, entries_int32(mask)), ((K,),), kernels, name="c_optimal",
                         key=("c_optimal", int(iters)))
    lam = [lam[k] for k in range(K)]
    _, a, b_all = parts(lam, [[X[k, i] for i in range(d)] for k in range(K)], [y[i] for i in range(d)])
    return jnp.stack(lam), a, jnp.stack(b_all)
