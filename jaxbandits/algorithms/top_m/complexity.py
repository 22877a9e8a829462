"""Complexity constants H^eps(A, mu) of seed 003 Table 2, and the minimum-l1 representation w*(i, j).

Seed 003 (Reda, Kaufmann, Delahaye-Duriez, AISTATS 2021), Theorem 2 and Table 2 bound the
sample complexity of a Top-m algorithm A by inf{u : u > 1 + H^eps(A, mu) C_{delta,u}^2 (+ K)}:

* LUCB:                      2 sum_a max(eps / 2, Delta_a)^-2
* UGapE:                     2 sum_a max(eps, (eps + Delta_a) / 2)^-2
* m-LinGapE (largest var.):  4 sigma^2 sum_a max(eps, (eps + Delta_a) / 3)^-2
* m-LinGapE (optimized):     sigma^2 sum_a max_{i,j} |w*_a(i,j)| / max(eps, (eps+Delta_i)/3, (eps+Delta_j)/3)^2

with Delta_k = mu_k - mu_{m+1} for the m best arms and mu_m - mu_k otherwise (Sec 4.2), and
w*(i, j) = argmin{ ||w||_1 : sum_a w_a x_a = x_i - x_j } (eq. (1), Xu et al. 2018).

The minimum-l1 representation is a linear program.  :func:`~jaxbandits.design.simplex.min_l1_representation`
solves it exactly (a basic optimal solution, up to float64 rounding) with a dense two-phase tableau
simplex: pure, jit and vmap safe (vmap over pairs and instances).
Accuracy: the returned w satisfies X^T w = y to ~1e-12 and its l1 norm matches scipy's HiGHS
optimum to ~1e-10 on random instances (``tests/test_complexity.py``).  When the optimum is not
unique (degenerate X), the vertex found may differ from another solver's; the objective does not.

Paper claim checked (Sec 4.4): "H(LUCB) >= H(m-LinGapE(1)) >= H(UGapE)".  With Table 2 as printed
this ordering does *not* hold at eps = 0 for any sigma: there H(UGapE) = 4 H(LUCB) and
H(m-LinGapE(1)) = 18 sigma^2 H(LUCB).  It holds term by term when eps dominates the gaps
(every Delta_a <= eps / 2) and 1/2 <= sigma^2 <= 2.  ``tests/test_complexity.py`` checks exactly these.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxbandits.design.simplex import LPSolution, min_l1_representation  # noqa: F401 (also used from here)


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
