"""Complexity constants H^eps(A, mu) of seed 003 Table 2, and the minimum-l1 representation w*(i, j).

Seed 003 (Reda, Kaufmann, Delahaye-Duriez, AISTATS 2021), Theorem 2 and Table 2 bound the
sample complexity of a Top-m algorithm A by inf{u : u > 1 + H^eps(A, mu) C_{delta,u}^2 (+ K)}:

* LUCB:                      2 sum_a max(eps / 2, Delta_a)^-2
* UGapE:                     2 sum_a max(eps, (eps + Delta_a) / 2)^-2
* m-LinGapE (largest var.):  4 sigma^2 sum_a max(eps, (eps + Delta_a) / 3)^-2
* m-LinGapE (optimized):     sigma^2 sum_a max_{i,j} |w*_a(i,j)| / max(eps, (eps+Delta_i)/3, (eps+Delta_j)/3)^2

with Delta_k = mu_k - mu_{m+1} for the m best arms and mu_m - mu_k otherwise (Sec 4.2), and
w*(i, j) = argmin{ ||w||_1 : sum_a w_a x_a = x_i - x_j } (eq. (1), Xu et al. 2018).

The minimum-l1 representation is a linear program.  :func:`min_l1_representation` solves it
exactly (a basic optimal solution, up to float64 rounding) with a dense two-phase tableau simplex
written as a bounded ``lax.while_loop``: pure, jit and vmap safe (vmap over pairs and instances).
Accuracy: the returned w satisfies X^T w = y to ~1e-12 and its l1 norm matches scipy's HiGHS
optimum to ~1e-10 on random instances (``tests/test_complexity.py``).  When the optimum is not
unique (degenerate X), the vertex found may differ from another solver's; the objective does not.

Paper claim checked (Sec 4.4): "H(LUCB) >= H(m-LinGapE(1)) >= H(UGapE)".  With Table 2 as printed
this ordering does *not* hold at eps = 0 for any sigma: there H(UGapE) = 4 H(LUCB) and
H(m-LinGapE(1)) = 18 sigma^2 H(LUCB).  It holds term by term when eps dominates the gaps
(every Delta_a <= eps / 2) and 1/2 <= sigma^2 <= 2.  ``tests/test_complexity.py`` checks exactly these.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np


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
                          tol: float = 1e-10) -> LPSolution:
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
    cols = jnp.arange(K + 1)
    rows = jnp.arange(d + 2)

    def first_min(v, size):
        # argmin as min + where: cheaper than jnp.argmin under vmap on CPU (measured)
        mn = jnp.min(v)
        return jnp.min(jnp.where(v == mn, jnp.arange(size), size))

    def choose(T, it):
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

    def cond(c):
        T, basis, it, go = c
        return go & (it < max_iters)

    def body(c):
        # Gathers and scatters with per-lane indices are slow under vmap on CPU: the pivot column
        # and row are read with one-hot contractions and the whole pivot is one rank-one update
        # (row r: T_r - (T_re - 1) T_r / T_re = T_r / T_re).
        T, basis, it, _ = c
        has, phase1, e = choose(T, it)
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
        return T, basis, it + ok.astype(it.dtype), ok

    T, basis, it, _ = jax.lax.while_loop(cond, body, (T, basis, jnp.int32(0), jnp.asarray(active)))
    x = jnp.zeros(2 * K + d, dt).at[basis].set(T[:d, K])
    w = x[:K] - x[K:2 * K]
    has, phase1, _ = choose(T, it)
    converged = (~has) & (~phase1)
    if K <= d:
        w = jnp.where(unique, w_unique, w)
        converged = converged | unique
    return LPSolution(w, jnp.sum(jnp.abs(w)), it, converged)


def topm_gaps(mu: jax.Array, m: int) -> jax.Array:
    """Gaps Delta_k of seed 003 Sec 4.2: mu_k - mu_(m+1) for the m best arms, mu_(m) - mu_k else [K]."""
    s = jax.lax.top_k(mu, m + 1)[0]
    mu_m, mu_m1 = s[m - 1], s[m]
    best = mu >= mu_m
    return jnp.where(best, mu - mu_m1, mu_m - mu)


def h_lucb(mu: jax.Array, m: int, epsilon: float = 0.0) -> jax.Array:
    """H^eps(LUCB, mu) = 2 sum_a max(eps/2, Delta_a)^-2 (seed 003 Table 2)."""
    g = topm_gaps(mu, m)
    return 2.0 * jnp.sum(jnp.maximum(epsilon / 2.0, g) ** -2)


def h_ugape(mu: jax.Array, m: int, epsilon: float = 0.0) -> jax.Array:
    """H^eps(UGapE, mu) = 2 sum_a max(eps, (eps + Delta_a)/2)^-2 (seed 003 Table 2)."""
    g = topm_gaps(mu, m)
    return 2.0 * jnp.sum(jnp.maximum(epsilon, (epsilon + g) / 2.0) ** -2)


def h_lingape_largest_variance(mu: jax.Array, m: int, epsilon: float = 0.0, sigma: float = 1.0) -> jax.Array:
    """H^eps(m-LinGapE(1), mu) = 4 sigma^2 sum_a max(eps, (eps + Delta_a)/3)^-2 (seed 003 Thm 2 (i))."""
    g = topm_gaps(mu, m)
    return 4.0 * sigma**2 * jnp.sum(jnp.maximum(epsilon, (epsilon + g) / 3.0) ** -2)


def pairwise_w_star(X: jax.Array, **kw) -> LPSolution:
    """w*(i, j) of eq. (1) for every ordered pair (i, j): fields with leading axes [K, K].

    Only the K (K - 1) / 2 pairs i < j are solved: w*(j, i) = -w*(i, j) (negating a feasible point
    for x_i - x_j gives one for x_j - x_i with the same l1 norm); w*(i, i) = 0.
    """
    K = X.shape[0]
    iu, ju = np.triu_indices(K, 1)
    sol = jax.vmap(lambda y: min_l1_representation(X, y, **kw))(X[iu] - X[ju])
    w = jnp.zeros((K, K, K), X.dtype).at[iu, ju].set(sol.w).at[ju, iu].set(-sol.w)

    def sym(a, fill):
        return jnp.full((K, K), fill, a.dtype).at[iu, ju].set(a).at[ju, iu].set(a)

    return LPSolution(w, sym(sol.value, 0), sym(sol.iterations, 0), sym(sol.converged, True))


def h_lingape_optimized(X: jax.Array, mu: jax.Array, m: int, epsilon: float = 0.0, sigma: float = 1.0,
                        **kw):
    """H^eps(m-LinGapE(2), mu) = sigma^2 sum_a max_{i,j} |w*_a(i,j)| / max(eps, (eps+D_i)/3, (eps+D_j)/3)^2.

    Seed 003 Thm 2 (ii) / Table 2.  Pairs with i = j contribute w* = 0.  Returns (H, all_converged).
    """
    g = topm_gaps(mu, m)
    sol = pairwise_w_star(X, **kw)
    den = jnp.maximum(epsilon, (epsilon + jnp.maximum(g[:, None], g[None, :])) / 3.0) ** 2  # [K, K]
    K = X.shape[0]
    offdiag = ~jnp.eye(K, dtype=bool)
    ratio = jnp.where(offdiag[:, :, None], jnp.abs(sol.w) / den[:, :, None], 0.0)  # [i, j, a]
    H = sigma**2 * jnp.sum(jnp.max(ratio, axis=(0, 1)))
    return H, jnp.all(sol.converged | ~offdiag)


def complexity_constants(X: jax.Array, theta: jax.Array, m: int, epsilon: float = 0.0, sigma: float = 1.0,
                         **kw) -> dict:
    """All four constants of seed 003 Table 2 for one instance (vmap for batches).

    Returns a dict with keys ``lucb``, ``ugape``, ``lingape_lv``, ``lingape_opt``, ``lp_converged``.
    """
    mu = X @ theta
    h_opt, ok = h_lingape_optimized(X, mu, m, epsilon, sigma, **kw)
    return dict(lucb=h_lucb(mu, m, epsilon), ugape=h_ugape(mu, m, epsilon),
                lingape_lv=h_lingape_largest_variance(mu, m, epsilon, sigma),
                lingape_opt=h_opt, lp_converged=ok)
