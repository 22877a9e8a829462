"""Differentiable design values and an optax design solver (issue 6).

Values.  :func:`g_value`, :func:`rho`, :func:`psi_star` and :func:`t_star` return the optimal
values of the design problems of :mod:`jaxbandits.design` as differentiable functions of the arms
X, the items Z and theta.  Gradients come from the envelope (Danskin) theorem for the saddle point
(lambda*, mu*) of min_lambda max_mu sum_y mu_y ||y||^2_{A(lambda)^-1}: the derivative of the value is
the partial derivative of the Lagrangian tr(A(lambda*)^-1 B_mu*) at the solver's (stop-gradient)
primal and dual solution, never a derivative through the iterations.  Where the maximising
direction is unique this is the ordinary gradient; where several directions are active it is the
subgradient selected by the optimal dual mu* (the Danskin derivative of the min-max value, which
is differentiable as long as (lambda*, mu*) is unique); for the G-optimal value it is 0
(Kiefer-Wolfowitz: the value is d for every X spanning R^d).  ``jax.grad`` and ``jax.jvp`` both
work, under ``jit`` and ``vmap``.

optax solver.  :func:`optax_design` minimises the same objectives over a softmax parameterisation
of the simplex, lambda = softmax(logits), with any optax optimiser (Adam by default), on the
log-sum-exp smoothing f_beta = beta^-1 log sum_y exp(beta g_y) with beta annealed geometrically
from 10/f to ``s_final``/f (relative temperatures); its certificate is the same duality bound
as Frank-Wolfe's.  It is simple and fully batched, but (benchmarks/design_solvers.py) it needs far
more iterations than Frank-Wolfe for a looser certified gap, cannot set weights exactly to 0, and
its accuracy depends on the step size and schedule; Frank-Wolfe with exact line search (and
Newton polish) stays the default for every problem.
"""
from __future__ import annotations

from functools import partial
from typing import Optional

import jax
import jax.numpy as jnp
import optax

from jaxbandits.design.core import DesignSolution, as_float, full_mask, inverse_design, null_projector
from jaxbandits.design.gopt import g_optimal
from jaxbandits.design.minimax import (_certificate, _explicit, _oracle_directions, _pairs, _value, oracle_allocation,
                                       xy_allocation)


def g_value(X, *, arm_mask=None, tol: float = 1e-8):
    """G-optimal value max_x ||x||^2_{A(lambda*)^-1} (= rank of X); gradient 0 (see module doc)."""
    return g_optimal(X, arm_mask=arm_mask, tol=tol).value


def rho(X, Z=None, *, item_mask=None, arm_mask=None, tol: float = 1e-6, max_iters: int = 5_000):
    """rho(Y(Z)) of seed 001 Sec 1.2 (squared norms), differentiable in X and Z."""
    return xy_allocation(X, Z, item_mask=item_mask, arm_mask=arm_mask, tol=tol, max_iters=max_iters).value


def psi_star(X, Z, theta, *, item_mask=None, arm_mask=None, tol: float = 1e-6, max_iters: int = 5_000):
    """psi*(theta) of seed 001 eq. (1), differentiable in X, Z and theta (z* held fixed)."""
    return oracle_allocation(X, Z, theta, item_mask=item_mask, arm_mask=arm_mask, tol=tol,
                             max_iters=max_iters).value


def t_star(X, Z, theta, **kw):
    """T*(theta) = 2 psi*(theta) (seed 000 eq. (1), unit noise), differentiable."""
    return 2.0 * psi_star(X, Z, theta, **kw)


def _dirs_for(kind, X, Z, theta, item_mask):
    if kind == "g":
        return _explicit(X, full_mask(item_mask, X.shape[0])), (lambda m, X=X: (X * m[:, None]).T @ X)
    if kind == "xy":
        Z = X if Z is None else Z
        d = _pairs(Z, full_mask(item_mask, Z.shape[0]))
        return d, d.bmat
    if kind == "oracle":
        Y, ym = _oracle_directions(Z, theta, full_mask(item_mask, Z.shape[0]))
        return _explicit(Y, ym), (lambda m: (Y * m[:, None]).T @ Y)
    if kind == "minimax":
        Y = Z
        return _explicit(Y, full_mask(item_mask, Y.shape[0])), (lambda m: (Y * m[:, None]).T @ Y)
    raise ValueError(f"unknown kind {kind!r}; expected 'g', 'xy', 'oracle' or 'minimax'")


@partial(jax.jit, static_argnames=("kind", "steps", "optimizer"))
def optax_design(X, Z=None, theta=None, *, kind: str = "xy", item_mask=None, arm_mask=None, init=None,
                 steps: int = 500, optimizer: Optional[optax.GradientTransformation] = None,
                 s_final: float = 1e4) -> DesignSolution:
    """Design by optax on softmax logits (module docstring), for comparison with Frank-Wolfe.

    kind: "g" (Y = X), "xy" (Y = pairwise differences of Z, default Z = X), "oracle" (psi*:
    directions (z* - z)/Delta(z) from Z and theta) or "minimax" (Y given as ``Z``).
    ``optimizer`` must be hashable (optax transformations are NamedTuples of functions: pass the
    same object to avoid recompiling); default ``optax.adam(0.05)``.
    Returns a DesignSolution with the certified gap (same certificate as Frank-Wolfe).
    """
    X = as_float(X)
    K = X.shape[0]
    mask = full_mask(arm_mask, K)
    perp, _ = null_projector(X, mask)
    Xs = jax.lax.stop_gradient(X)
    dirs, bmat = _dirs_for(kind, Xs, None if Z is None else jax.lax.stop_gradient(as_float(Z)),
                           None if theta is None else jax.lax.stop_gradient(as_float(theta)), item_mask)
    opt = optimizer if optimizer is not None else optax.adam(0.05)
    logits0 = jnp.where(mask, 0.0, -jnp.inf) if init is None else jnp.where(mask, jnp.log(jnp.clip(init, 1e-12)), -jnp.inf)
    logits0 = jnp.where(mask, logits0, 0.0)

    def lam_of(lg):
        return jax.nn.softmax(jnp.where(mask, lg, -jnp.inf))

    f0 = jnp.max(dirs.norms(inverse_design(lam_of(logits0), Xs, perp)))

    def loss(lg, beta):
        g = dirs.norms(inverse_design(lam_of(lg), Xs, perp))
        return jax.nn.logsumexp(beta * jnp.where(jnp.isfinite(g), g, -1e300)) / beta

    def step(i, carry):
        lg, st, fref = carry
        s = 10.0 * (s_final / 10.0) ** (i / jnp.maximum(steps - 1, 1))
        beta = s / fref
        grads = jax.grad(loss)(lg, beta)
        grads = jnp.where(mask, grads, 0.0)
        upd, st = opt.update(grads, st, lg)
        lg = optax.apply_updates(lg, upd)
        fnew = jnp.max(dirs.norms(inverse_design(lam_of(lg), Xs, perp)))
        return lg, st, jnp.minimum(fref, fnew)

    lg, _, _ = jax.lax.fori_loop(0, steps, step, (logits0, opt.init(logits0), f0))
    lam = lam_of(lg)
    f, lb, mu = _certificate(Xs, mask, lam, perp, dirs)
    _, bmat_live = _dirs_for(kind, X, None if Z is None else as_float(Z), None if theta is None else as_float(theta),
                             item_mask)
    value = _value(lam, mu, X, perp, bmat_live, f)
    gap = jnp.maximum(f - lb, 0.0)
    return DesignSolution(allocation=lam, value=value, gap=gap, iterations=jnp.asarray(steps, jnp.int32),
                          converged=gap <= 1e-3 * f)
