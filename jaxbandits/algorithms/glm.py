"""Logistic-regression maximum likelihood by iteratively reweighted least squares (IRLS), batched.

The GLM estimators of seed 002 (GSE-Log, Eq. 4, Sec 5) and of UCB-GLM (Li, Lu & Zhou 2017) solve

    sum_j (Y_j - h(X_j^T theta)) X_j = 0,        h(z) = 1 / (1 + exp(-z)),

from the observations of a stage.  With rewards drawn per arm, the data are sufficient statistics:
``counts[k]`` pulls of arm k of which ``successes[k]`` returned 1, so one Newton step costs
O(K d^2 + d^3), whatever the number of pulls (seed 002 Sec 5 cites IRLS, Wolke & Schwetlick 1988).

Newton's method on the (optionally ridge-penalised) negative log-likelihood is IRLS.  Here each
Newton direction is followed by a line search over a fixed grid of step sizes (1, 1/2, ..., 2^-7,
evaluated at once), which keeps the iteration monotone when the data are (quasi-)separable, where
the plain Newton step overshoots.  The loop runs ``max_iters`` passes, those after convergence
masked (:func:`jaxbandits.batching.fixed_trip_while`: jit and vmap safe, a static trip count)
returning a convergence flag; when the MLE does not exist (separable data, a real possibility with
a few pulls per arm), the penalty ``reg`` (default 1e-6, negligible otherwise) keeps the estimate
finite and the flag says whether the gradient norm reached the tolerance.

``perp`` (optional, [d, d]) is added to the Hessian only: the projector onto directions the data
cannot see (the complement of the span of the surviving arms), so that the fit is the
minimum-norm MLE on the span, as the projection step of GSE (seed 002 Sec 4, footnote 1) asks.
"""
from __future__ import annotations

from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp

from jaxbandits.algorithms import common
from jaxbandits.batching import fixed_trip_while

_STEPS = 2.0 ** -jnp.arange(8.0)


class GLMFit(NamedTuple):
    """Result of :func:`logistic_mle`.

    Attributes:
      theta: [d] the estimate.
      converged: whether the gradient norm fell below ``tol`` within ``max_iters`` iterations.
      iterations: Newton iterations taken.
      hessian: [d, d] the (penalised) Fisher information sum_k n_k h'(x_k^T theta) x_k x_k^T at
        ``theta`` (the V matrix of UCB-GLM-style confidence widths, seed 002 Sec 5's c_min V_t).
    """

    theta: jax.Array
    converged: jax.Array
    iterations: jax.Array
    hessian: jax.Array


def _log1pexp(z):
    return jnp.logaddexp(0.0, z)


def logistic_nll(theta, X, counts, successes, reg=0.0):
    """Negative log-likelihood of a logistic model from per-arm counts/successes (+ reg/2 ||theta||^2)."""
    z = X @ theta
    return jnp.sum(counts * _log1pexp(z) - successes * z) + 0.5 * reg * theta @ theta


def logistic_mle(X: jax.Array, counts: jax.Array, successes: jax.Array, *, init: Optional[jax.Array] = None,
                 reg: float = 1e-6, perp: Optional[jax.Array] = None, max_iters: int = 50,
                 tol: float = 1e-8) -> GLMFit:
    """Maximum-likelihood logistic regression by damped IRLS (Newton) [seed 002 Eq. 4].

    Args:
      X: [K, d] features (rows of arms with zero counts do not matter).
      counts: [K] number of observations of each row; successes: [K] number of ones among them.
      init: [d] warm start (default 0).
      reg: ridge penalty (reg/2) ||theta||^2 added to the negative log-likelihood.
      perp: optional [d, d] PSD matrix added to the Hessian (projector onto unseen directions).
      max_iters: bound on Newton iterations; tol: stop when ||gradient||_inf <= tol (1 + n_max).

    Returns: :class:`GLMFit`.
    """
    dt = X.dtype
    d = X.shape[-1]
    counts = counts.astype(dt)
    successes = successes.astype(dt)
    theta0 = jnp.zeros(d, dt) if init is None else init.astype(dt)
    extra = jnp.zeros((d, d), dt) if perp is None else perp.astype(dt)
    eye = jnp.eye(d, dtype=dt)
    scale_tol = tol * (1.0 + jnp.max(counts))

    def grad_hess(theta):
        z = X @ theta
        p = jax.nn.sigmoid(z)
        g = X.T @ (counts * p - successes) + reg * theta
        w = counts * p * (1.0 - p)
        H = (X.T * w) @ X + reg * eye
        return g, H

    def cond(c):
        theta, it, gnorm = c
        return (it < max_iters) & (gnorm > scale_tol)

    def body(c):
        theta, it, _ = c
        g, H = grad_hess(theta)
        # A tiny relative jitter keeps the Cholesky finite when the Fisher information is singular
        # (all-success or all-failure arms drive p(1-p) to 0).
        Hs = H + extra + (1e-12 * (jnp.trace(H) / d) + 1e-300) * eye
        L = common.cholesky(Hs)       # unrolled for d <= SMALL_DIM: no solver call under vmap
        direction = -common.cho_solve(L, g)
        cand = theta[None, :] + _STEPS.astype(dt)[:, None] * direction[None, :]
        vals = jax.vmap(lambda t: logistic_nll(t, X, counts, successes, reg))(cand)
        best = jnp.argmin(jnp.where(jnp.isfinite(vals), vals, jnp.inf))
        f0 = logistic_nll(theta, X, counts, successes, reg)
        new = jnp.where(vals[best] <= f0, cand[best], theta)
        g_new, _ = grad_hess(new)
        # Gradient measured on the span only: components along ``perp`` are not identifiable.
        if perp is not None:
            g_new = g_new - extra @ g_new
        return new, it + 1, jnp.max(jnp.abs(g_new))

    # max_iters passes with the converged ones masked: no host round trip per Newton step on an
    # accelerator, the same fit as a loop stopping at convergence
    theta, it, gnorm = fixed_trip_while(cond, body, (theta0, jnp.asarray(0), jnp.asarray(jnp.inf, dt)),
                                        max_iters)
    _, H = grad_hess(theta)
    return GLMFit(theta, gnorm <= scale_tol, it, H)
