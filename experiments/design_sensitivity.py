"""Sensitivity map of the characteristic time T*(theta) (seed 000 eq. (1)) of the Soare instance
(seed 001 Fig 1a: X = Z = {e_1..e_d, cos(w) e_1 + sin(w) e_2}, theta = 2 e_1) as the angle w and the
noise sigma vary.

The lower bound sigma^2 T*(w) kl(delta, 1 - delta) is computed two ways: brute force (one oracle
design solve per grid point) and from gradients (d T*/d w by the envelope theorem at a few anchor
angles, then a first-order extrapolation to the neighbouring grid points; the sigma direction is
exact: d log(sigma^2 T*)/d log sigma = 2).  The table reports T*, its gradient, a central finite
difference, the extrapolation errors, the elasticity w dT*/dw / T* and w^2 T* (the scaling of T*
as w -> 0 that the computation actually gives; the quick run finds T* ~ 2 / w^2).
"""
from __future__ import annotations

NAME = "design_sensitivity"
DESCRIPTION = "T* of the Soare instance over (omega, sigma) from gradients vs brute force"


def soare_tstar_fn(d: int):
    import jax.numpy as jnp

    from jaxbandits.design.differentiable import t_star

    def tstar(w):
        X = jnp.vstack([jnp.eye(d), jnp.concatenate([jnp.stack([jnp.cos(w), jnp.sin(w)]), jnp.zeros(d - 2)])[None]])
        theta = jnp.zeros(d).at[0].set(2.0)
        return t_star(X, X, theta, tol=1e-9, max_iters=20_000)

    return tstar


def run(ctx):
    import jax
    import jax.numpy as jnp
    import numpy as np

    from jaxbandits.design import kl_bernoulli

    d = 3 if ctx.quick else 5
    n_w = 4 if ctx.quick else 25
    omegas = np.geomspace(0.01, 0.5, n_w)
    sigmas = np.array([0.5, 1.0, 2.0]) if ctx.quick else np.linspace(0.25, 3.0, 12)
    delta = 0.05
    ctx.config.update(d=d, omegas=omegas.tolist(), sigmas=sigmas.tolist(), delta=delta)
    tstar = soare_tstar_fn(d)
    f = jax.jit(jax.vmap(tstar))
    g = jax.jit(jax.vmap(jax.grad(tstar)))
    T = np.asarray(f(jnp.asarray(omegas)))
    G = np.asarray(g(jnp.asarray(omegas)))
    h = 1e-6 * omegas
    FD = (np.asarray(f(jnp.asarray(omegas + h))) - np.asarray(f(jnp.asarray(omegas - h)))) / (2 * h)
    # first-order prediction of the next grid point from the gradient at the current one
    pred = T[:-1] + G[:-1] * np.diff(omegas)
    # log-linear prediction (T* is close to a power law in w): log T(w') ~ log T(w) + (w G / T) log(w'/w)
    pred_log = T[:-1] * np.exp(omegas[:-1] * G[:-1] / T[:-1] * np.log(omegas[1:] / omegas[:-1]))
    kl = float(kl_bernoulli(delta, 1 - delta))
    rows = []
    for i, w in enumerate(omegas):
        rows.append(dict(omega=float(w), T_star=float(T[i]), dT_domega=float(G[i]), fd=float(FD[i]),
                         grad_rel_err=float(abs(G[i] - FD[i]) / abs(FD[i])),
                         elasticity=float(w * G[i] / T[i]), w2_T=float(w * w * T[i]),
                         next_pred_rel_err=(float(abs(pred[i] - T[i + 1]) / T[i + 1]) if i + 1 < n_w else float("nan")),
                         next_logpred_rel_err=(float(abs(pred_log[i] - T[i + 1]) / T[i + 1]) if i + 1 < n_w else float("nan")),
                         LB_sigma1=float(T[i] * kl)))
    ctx.write_rows(rows, "rows")
    ctx.write_rows([dict(sigma=float(sg), omega=float(w), T_star=float(T[j]), lower_bound=float(sg**2 * T[j] * kl))
                    for sg in sigmas for j, w in enumerate(omegas)], "sigma_omega_rows")
    ctx.table(rows, "summary", f"Soare instance d = {d}, theta = 2 e1: T*(omega), gradient vs finite difference")
    worst = max(r["grad_rel_err"] for r in rows)
    ctx.log(f"max relative gradient error vs finite differences: {worst:.2e}")

    # the (omega, sigma) map: brute force sigma^2 T* against the gradient-based reconstruction
    LB = sigmas[:, None] ** 2 * T[None, :] * kl
    ctx.table([dict(sigma=float(s), **{f"w={w:.3g}": float(LB[i, j]) for j, w in enumerate(omegas[::max(1, n_w // 6)])})
               for i, s in enumerate(sigmas)], "lower_bound_map", "sigma^2 T* kl(delta, 1-delta), delta = 0.05")

    ctx.savefig(figure(omegas, sigmas, LB, T, G, FD, pred, pred_log, delta), "sensitivity")


def figure(omegas, sigmas, LB, T, G, FD, pred, pred_log, delta=0.05):
    """Three panels: the lower bound over (omega, sigma); the gradient dT*/domega against finite
    differences; T* against its first-order predictions from the gradient at the previous angle."""
    import numpy as np
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    from experiments._figures import legend_outside, new_figure

    def angle_axis(ax):
        ax.set_xscale("log")
        ticks = [t for t in (0.01, 0.02, 0.05, 0.1, 0.2, 0.5) if omegas.min() * 0.99 <= t <= omegas.max() * 1.01]
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xlabel("angle $\\omega$ between $x_{d+1}$ and $e_1$ (rad)")

    fig, axes = new_figure(1, 3, panel=(5.0, 3.8), extra=(0.8, 0.4))
    ax = axes[0]
    def edges(c, log):  # cell edges around the grid points (geometric midpoints on a log axis)
        c = np.log(c) if log else np.asarray(c, float)
        step = np.diff(c) if c.size > 1 else np.array([1.0])
        e = np.concatenate([[c[0] - step[0] / 2], (c[:-1] + c[1:]) / 2, [c[-1] + step[-1] / 2]])
        return np.exp(e) if log else e

    im = ax[0].pcolormesh(edges(omegas, True), edges(sigmas, False), np.log10(LB), shading="flat")
    angle_axis(ax[0])
    ax[0].set_ylabel("noise standard deviation $\\sigma$")
    ax[0].set_title(f"lower bound $\\sigma^2 T^* \\mathrm{{kl}}(\\delta, 1-\\delta)$, $\\delta$ = {delta}",
                    fontsize=10)
    fig.colorbar(im, ax=ax[0], label="log$_{10}$ lower bound (pulls)")
    ax[1].loglog(omegas, -G, "o-", ms=6, label="$-dT^*/d\\omega$ (envelope theorem)")
    ax[1].loglog(omegas, -FD, "x--", ms=9, mew=2, label="$-dT^*/d\\omega$ (central finite difference)")
    angle_axis(ax[1])
    ax[1].set_ylabel("$-dT^*/d\\omega$ (pulls per rad, $\\sigma$ = 1)")
    ax[1].set_title("gradient of $T^*$", fontsize=10)
    ax[2].loglog(omegas, T, "k-", marker="o", ms=5, label="$T^*$ (one design solve per angle)")
    ax[2].loglog(omegas[1:], pred_log, "r^", ms=8, mfc="none", mew=1.5, ls="none",  # open: T* shows through
                 label="log-linear prediction from the gradient")
    pos = pred > 0  # a linear step can overshoot below zero, off a log axis
    lin = "linear prediction from the gradient" + ("" if pos.all() else f" ({int((~pos).sum())} below 0, not shown)")
    ax[2].loglog(omegas[1:][pos], pred[pos], "b+", ms=11, mew=2, ls="none", label=lin)
    angle_axis(ax[2])
    ax[2].set_ylabel("$T^*(\\omega)$ (pulls, $\\sigma$ = 1)")
    ax[2].set_title("$T^*$ at the next angle, predicted from the previous one", fontsize=10)
    legend_outside(fig, loc="outside lower center", ncols=3)
    return fig
