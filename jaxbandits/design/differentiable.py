"""Differentiable design values and an optax design solver.

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
as Frank-Wolfe's.

Which solver is the default, per problem (benchmarks/optax_vs_fw.py: 1000 random instances, K = 10
unit-sphere arms in R^3, Z = X, theta ~ N(0, I); relative excess of the value over the certified
optimum, median / 90th pct / max; batched wall time on 2 shared CPU cores, compile excluded):

  problem    Frank-Wolfe (library default tol)           optax Adam(0.05), 1000 steps
  G-optimal  8e-7 / 1e-6 / 1.5e-5,   10 s                1.0e-2 / 1.8e-2 / 3.4e-2,  11 s
  psi*, T*   6e-14 / 3.6e-4 / 1.4e-2, 40 s               2.6e-3 / 8.5e-3 / 2.4e-2,  10 s
  XY (rho)   3e-6 / 2.7e-3 / 1.1e-2,  244 s              9.3e-3 / 1.7e-2 / 3.6e-2,  17 s

Frank-Wolfe stays the default for all three.  G-optimal: it wins on both counts (Fedorov-Wynn
with exact steps is exact to the tolerance at the same cost).  psi* / T* and XY: it is 10^3 (XY) to
10^10 (psi*) times more accurate at the median and 6-24x at the 90th percentile (a few percent of
instances stall near 1 % at max_iters, about as far off as optax), and it certifies its own answer (median certified gap 3e-13 and
3e-5, against 0.06 and 0.36 for optax's), which the algorithms' stopping rules and the lower bound
need; its price is time: 4x (psi*) and 15x (XY) slower here, because a vmapped while loop runs
until its slowest instance (up to max_iters, while the mean is 310 / 922 iterations) and each
iteration does an exact line search.  The optax solver runs a fixed number of cheap steps, so its
time is predictable, but its accuracy plateaus near 1 % (from 200 to 1000 steps: G 1.5 -> 1.0 %,
XY 1.1 -> 0.9 %, psi* 1.3 -> 0.26 %; Adam's step noise on the annealed smoothing) and softmax weights never reach 0.  Use it where a ~1 %
value is enough and many instances must be solved at once (e.g. scoring random candidates); use
Frank-Wolfe everywhere else.
"""
from __future__ import annotations

from functools import partial
from typing import Optional

import jax
import jax.numpy as jnp
import optax

from jaxbandits.design.core import DesignSolution, as_float, full_mask, inverse_design, null_projector
from jaxbandits.design.gopt import g_optimal
from jaxbandits.design.minimax import (_certificate, _explicit, oracle_directions, _pairs, _value, oracle_allocation,
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
        Y, ym = oracle_directions(Z, theta, full_mask(item_mask, Z.shape[0]))
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
