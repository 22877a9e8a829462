"""Probe-set design for the transductive setting (issue 6, experiment 2).

Given items Z [M, d] and a prior over theta (a Monte Carlo batch), learn K unit-norm probe vectors
X minimising the average psi*(theta) = min_lambda max_{z != z*} ||z* - z||^2_{A(lambda)^-1} /
((z* - z)^T theta)^2 (seed 001 Thm 1 / eq. (1)) with optax (Adam on unnormalised probes, projected
back to the sphere), gradients of psi* w.r.t. X by the envelope theorem.  Baselines: X = Z, the
standard basis, random unit probes (K of them).  Evaluation on a fresh batch of thetas from the
prior, then validation by running RAGE (seed 001 Alg 1) with each probe set on a few test thetas:
measured sample complexity with standard errors.

Items: M = 12 random unit vectors of R^4 concentrated around e_1 (a transductive problem where the
items are close to each other, so measuring along their differences pays); prior theta ~
N(e_1, 0.5^2 I).

Defaults (16 training thetas, 60 Adam steps, 64 test thetas, RAGE on 2 test thetas x 50 reps per
probe set) finished in 245 s on 2 CPU cores shared with other jobs (load
~10); raise them on a free machine.
"""
from __future__ import annotations

NAME = "design_probe_set"
DESCRIPTION = "Issue 6: learn K unit probes X minimising the mean psi*(theta) over a prior; RAGE validation"

DELTA = 0.05


def run(ctx):
    import time

    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax

    from jaxbandits.algorithms.rage import RAGE
    from jaxbandits.design.differentiable import psi_star
    from jaxbandits.instances.base import make_instance

    quick = ctx.quick
    d, M, K = 4, 12, 6
    n_prior, steps = (4, 3) if quick else (16, 60)
    n_test = 8 if quick else 64
    n_val = 1 if quick else 2
    reps = ctx.n_reps(50, 5)
    ctx.config.update(d=d, M=M, K=K, n_prior=n_prior, steps=steps, n_test=n_test, n_val=n_val, reps=reps)
    rng = np.random.default_rng(ctx.seed)
    Z = np.eye(d)[0] + 0.3 * rng.normal(size=(M, d))
    Z /= np.linalg.norm(Z, axis=1, keepdims=True)
    Zj = jnp.asarray(Z)
    prior = lambda k, n: jnp.asarray(np.eye(d)[0]) + 0.5 * jax.random.normal(k, (n, d))
    th_train = prior(jax.random.fold_in(ctx.key, 0), n_prior)
    th_test = prior(jax.random.fold_in(ctx.key, 1), n_test)

    def mean_psi(X, thetas):
        X = X / jnp.linalg.norm(X, axis=1, keepdims=True)
        v = jax.vmap(lambda t: psi_star(X, Zj, t, tol=1e-4, max_iters=2_000))(thetas)
        return jnp.mean(v)

    vg = jax.jit(jax.value_and_grad(mean_psi))
    evaluate = jax.jit(mean_psi)
    X = jnp.asarray(rng.normal(size=(K, d)))
    X = X / jnp.linalg.norm(X, axis=1, keepdims=True)
    X_random = X
    opt = optax.adam(0.05)
    st = opt.init(X)
    t0 = time.perf_counter()
    history = []
    best, best_X = np.inf, X
    for i in range(steps):
        v, g = vg(X, th_train)
        history.append(float(v))
        if float(v) < best:
            best, best_X = float(v), X
        upd, st = opt.update(g, st, X)
        X = optax.apply_updates(X, upd)
        X = X / jnp.linalg.norm(X, axis=1, keepdims=True)
    ctx.log(f"learned probes in {time.perf_counter() - t0:.1f}s; train mean psi* {history[0]:.4g} -> {best:.4g}")
    probe_sets = {"learned": best_X, "X = Z": Zj, "standard basis": jnp.eye(d), "random": X_random}
    rows = []
    for name, P in probe_sets.items():
        rows.append(dict(probes=name, K=int(P.shape[0]), mean_psi_test=float(evaluate(P, th_test)),
                         mean_psi_train=float(evaluate(P, th_train))))

    # validation: RAGE with each probe set on a few test thetas
    val_th = np.asarray(th_test[:n_val])
    for r in rows:
        P = np.asarray(probe_sets[r["probes"]])
        P = P / np.linalg.norm(P, axis=1, keepdims=True)
        means, ses, errs = [], [], []
        for j, th in enumerate(val_th):
            inst = make_instance(P, th, noise=1.0, items=Z)
            res = ctx.simulate(dict(probes=r["probes"], theta=j), RAGE(delta=DELTA), inst, reps, 60)
            sm = res.summary()
            means.append(sm["mean"])
            ses.append(sm["se"])
            errs.append(1 - float(np.mean(res.correct[res.ran])))
        r.update(rage_mean_samples=float(np.mean(means)),
                 rage_se=float(np.sqrt(np.sum(np.square(ses))) / len(ses)), rage_error_rate=float(np.mean(errs)))
    ctx.table(rows, "summary", f"Probe sets: mean psi* over the prior ({n_test} test thetas) and RAGE "
                               f"sample complexity ({n_val} thetas x {reps} reps, delta = {DELTA})")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    ax[0].plot(history)
    ax[0].set_xlabel("optax step")
    ax[0].set_ylabel("mean psi* (training thetas)")
    ax[0].set_yscale("log")
    names = [r["probes"] for r in rows]
    ax[1].bar(names, [r["rage_mean_samples"] for r in rows], yerr=[2 * r["rage_se"] for r in rows])
    ax[1].set_ylabel("RAGE mean samples (+-2 SE)")
    fig.tight_layout()
    ctx.savefig(fig, "probe_set")
