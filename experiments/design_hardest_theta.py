"""Hardest parameter for a fixed arm set (issue 6, experiment 1).

T*(theta) (seed 000 eq. (1), = 2 psi*(theta) of seed 001 eq. (1)) blows up as theta approaches a
tie, so "the hardest theta" is only meaningful after normalisation.  We maximise, over theta on
the unit sphere, the gap-normalised hardness

    H(theta) = Delta_min(theta)^2 T*(theta) / 2,

the number of samples T* needs relative to what the smallest gap alone costs (H >= 1 for X = Z:
the direction from the best arm to its closest competitor alone needs 2 ||y||^2_{A^-1} / Delta_min^2
samples).  H is scale free and bounded.  Projected gradient ascent with optax (Adam, then renormalise theta
to the sphere) runs from many batched starting points, with gradients of T* from the envelope
theorem (jaxbandits.design.differentiable) and of Delta_min (a subgradient).  It is compared with
batched random search over uniformly drawn thetas (100,000 by default).  Then RAGE (seed 001
Alg 1) and XY-oracle run at the found theta (theta scaled so that Delta_min = 0.1): measured
sample complexity against the lower bound sigma^2 T* kl(delta, 1 - delta) (seed 000 Thm 1).

Arm sets: the Soare instance (d = 3, omega = 0.1, seed 001 Fig 1a) and random unit-sphere arm
sets (K = 8, d = 3, seed 001 Fig 1c style).
"""
from __future__ import annotations

NAME = "design_hardest_theta"
DESCRIPTION = "Issue 6: hardest theta (gap-normalised T*) by batched optax ascent vs random search; RAGE at it"

DELTA = 0.05


def hardness_fns(X, tol=1e-6):
    import jax
    import jax.numpy as jnp

    from jaxbandits.design.differentiable import t_star

    X = jnp.asarray(X)

    def hardness(theta):
        theta = theta / jnp.linalg.norm(theta)
        v = X @ theta
        star = jnp.argmax(v)
        gaps = jnp.where(jnp.arange(X.shape[0]) == star, jnp.inf, v[star] - v)
        dmin = jnp.min(gaps)
        return 0.5 * dmin ** 2 * t_star(X, X, theta, tol=tol, max_iters=3_000)

    return hardness, jax.jit(jax.vmap(hardness)), jax.jit(jax.vmap(jax.value_and_grad(hardness)))


def ascend(vg, key, n_starts, steps, d, lr=0.05):
    import jax
    import jax.numpy as jnp
    import optax

    th = jax.random.normal(key, (n_starts, d))
    th = th / jnp.linalg.norm(th, axis=1, keepdims=True)
    opt = optax.adam(lr)
    st = opt.init(th)
    best_v = jnp.full((n_starts,), -jnp.inf)
    best_t = th
    for _ in range(steps):
        v, g = vg(th)
        better = v > best_v
        best_v = jnp.where(better, v, best_v)
        best_t = jnp.where(better[:, None], th, best_t)
        # projected gradient ascent: tangent component of the gradient, step, back to the sphere
        g = g - jnp.sum(g * th, 1, keepdims=True) * th
        upd, st = opt.update(-g, st, th)
        th = optax.apply_updates(th, upd)
        th = th / jnp.linalg.norm(th, axis=1, keepdims=True)
    return best_v, best_t


def run(ctx):
    import time

    import jax
    import jax.numpy as jnp
    import numpy as np

    from jaxbandits.algorithms.rage import RAGE
    from jaxbandits.design import lower_bound
    from jaxbandits.instances.base import make_instance

    quick = ctx.quick
    d = 3
    n_starts, steps = (4, 5) if quick else (64, 150)
    n_random = 500 if quick else 100_000
    reps = ctx.n_reps(200, 10)
    ctx.config.update(d=d, n_starts=n_starts, steps=steps, n_random=n_random, reps=reps, delta=DELTA)
    w = 0.1
    soare = np.vstack([np.eye(d), [np.cos(w), np.sin(w), 0.0]])
    arm_sets = {"soare(w=0.1)": soare}
    rng = np.random.default_rng(ctx.seed)
    for i in range(1 if quick else 3):
        A = rng.normal(size=(8, d))
        arm_sets[f"sphere{i}(K=8)"] = A / np.linalg.norm(A, axis=1, keepdims=True)

    rows, sims = [], []
    for name, X in arm_sets.items():
        _, _, vg = hardness_fns(X)
        _, hv, _ = hardness_fns(X, tol=1e-3)  # random search: values to 0.1 % are enough
        t0 = time.perf_counter()
        best_v, best_t = ascend(vg, jax.random.fold_in(ctx.key, len(rows)), n_starts, steps, d)
        t_grad = time.perf_counter() - t0
        i = int(jnp.argmax(best_v))
        t0 = time.perf_counter()
        th = jax.random.normal(jax.random.fold_in(ctx.key, 1000 + len(rows)), (n_random, d))
        vals = np.concatenate([np.asarray(hv(th[j:j + 5000])) for j in range(0, n_random, 5000)])
        t_rand = time.perf_counter() - t0
        j = int(np.nanargmax(vals))
        rows.append(dict(arms=name, H_gradient=float(best_v[i]), H_random=float(vals[j]),
                         median_H_random=float(np.nanmedian(vals)), evals_gradient=n_starts * steps,
                         evals_random=n_random, time_gradient_s=t_grad, time_random_s=t_rand,
                         theta=" ".join(f"{x:.3f}" for x in np.asarray(best_t[i] / jnp.linalg.norm(best_t[i])))))
        ctx.log(f"{name}: H by gradient {float(best_v[i]):.4g}, by random search {float(vals[j]):.4g}")
        sims.append((name, X, np.asarray(best_t[i])))
    ctx.table(rows, "hardest", "Gap-normalised hardness H = Delta_min^2 T*/2: batched optax ascent vs random search")

    # fixed-confidence algorithms at the found theta, scaled to Delta_min = 0.1
    srows = []
    for name, X, th in sims:
        th = th / np.linalg.norm(th)
        v = X @ th
        s = np.sort(v)
        th = th * 0.1 / (s[-1] - s[-2])
        inst = make_instance(X, th, noise=1.0)
        lb = float(lower_bound(inst, DELTA))
        res = ctx.simulate(dict(arms=name, algorithm="RAGE"), RAGE(delta=DELTA), inst, reps, 60)
        sm = res.summary()
        srows.append(dict(arms=name, algorithm="RAGE", lower_bound=lb, mean_samples=sm["mean"], se=sm["se"],
                          ratio=sm["mean"] / lb, error_rate=float(1 - np.mean(res.correct[res.ran]))))
    ctx.table(srows, "algorithms", f"RAGE at the hardest theta (Delta_min = 0.1), delta = {DELTA}, {reps} reps")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    xs = np.arange(len(rows))
    ax.bar(xs - 0.2, [r["H_gradient"] for r in rows], 0.4, label="optax ascent (best of starts)")
    ax.bar(xs + 0.2, [r["H_random"] for r in rows], 0.4, label=f"random search ({n_random})")
    ax.plot(xs, [r["median_H_random"] for r in rows], "k_", ms=20, label="median random theta")
    ax.set_xticks(xs, [r["arms"] for r in rows])
    ax.set_ylabel("H = Delta_min^2 T* / 2")
    ax.legend()
    fig.tight_layout()
    ctx.savefig(fig, "hardest_theta")
