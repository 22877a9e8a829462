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

from jaxbandits.design.core import DesignSolution, full_mask, initial_design, inverse_design, masked_argmax


def c_optimal(X: jax.Array, y: jax.Array, *, arm_mask: Optional[jax.Array] = None,
              init: Optional[jax.Array] = None, iters: int = 16) -> DesignSolution:
    """``iters`` Frank-Wolfe iterations (exact line search) toward the c-optimal design of ``y``.

    A fixed iteration count (static) and no early stop, so the cost is the same on every lane.
    ``gap`` is the certified bound max_k b_k - f on f - optimum (module docstring); ``converged``
    is ``gap <= 1e-3 f``.  Arms must span the directions that matter (a singular design gets the
    relative jitter of :func:`jaxbandits.design.core.inverse_design`)."""
    X = jnp.asarray(X)
    K, d = X.shape
    dtype = X.dtype
    mask = full_mask(arm_mask, K)
    lam0 = initial_design(mask, init, dtype)
    perp = jnp.zeros((d, d), dtype)

    def parts(lam):
        Ainv = inverse_design(lam, X, perp)
        u = Ainv @ y
        h = X @ u
        return Ainv, y @ u, h * h

    def body(_, lam):
        Ainv, a, b_all = parts(lam)
        j = masked_argmax(b_all, mask)
        b = b_all[j]
        c = X[j] @ (Ainv @ X[j])
        e = jnp.maximum(a * c - b, 0.0)
        db = jnp.maximum(b - a, 0.0)
        s = jnp.sqrt(e * e + e * c * db)
        g = jnp.where(db > 0, db / jnp.maximum(s + e + db, 1e-300), 0.0)
        g = jnp.clip(g, 0.0, 1.0)
        new = (1.0 - g) * lam
        return new.at[j].add(g)

    lam = jax.lax.fori_loop(0, iters, body, lam0)
    _, a, b_all = parts(lam)
    gap = jnp.maximum(jnp.max(jnp.where(mask, b_all, -jnp.inf)) - a, 0.0)
    return DesignSolution(lam, a, gap, jnp.asarray(iters, jnp.int32), gap <= 1e-3 * a)
