"""Benchmark: the optax design solver versus Frank-Wolfe on random instances.

  python benchmarks/optax_vs_fw.py [--n 1000] [--K 10] [--d 3] [--steps 200 1000] [--lr 0.05] [--tight-iters 5000]

Three problems, each batched over ``--n`` random instances (arms: K Gaussian vectors normalised to
the unit sphere of R^d; items Z = X; theta ~ N(0, I_d)):

* G-optimal: min_lambda max_x ||x||^2_{A(lambda)^-1}; Frank-Wolfe = ``g_optimal`` (Fedorov-Wynn,
  exact step, away steps); the optimum is d exactly (Kiefer-Wolfowitz), so it is the certified
  optimum.
* XY / rho(Y(Z)) (seed 001 Sec 1.2) over the K(K-1)/2 pair differences: ``xy_allocation``.
* psi*(theta) (seed 001 eq. (1); T* = 2 psi*, seed 000 eq. (1)): ``oracle_allocation``.

Frank-Wolfe runs at the library default tolerance (what the algorithms call: 1e-6 for G, 1e-3
for XY / psi*) and at a tight one (1e-9, warm-started from the default run's allocation, up to ``--tight-iters`` = 2000 more
iterations; its time and iterations include the default run's); the optax solver
(``optax_design``: Adam on softmax logits of an annealed log-sum-exp smoothing) runs for each
``--steps``.  The certified optimum L of an instance is the largest certified lower bound
(value - gap) over all runs on it (d for G).  Reported per solver: the relative excess
(value - L) / L (median, 90th percentile, max) and its own certified relative gap (median), wall
time of the batched call (compile excluded, reported apart).  One process, one run; timings on a
shared machine are noisy, read the ratios.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import jax
import jax.numpy as jnp
import optax

import jaxbandits.precision
jaxbandits.precision.enable_globally()  # the benchmark's own arrays in float64 too
from jaxbandits.design import g_optimal, oracle_allocation, xy_allocation
from jaxbandits.design.differentiable import optax_design


def _time(fn, *a):
    t = time.perf_counter()
    out = fn(*a)
    jax.block_until_ready(out)
    return out, time.perf_counter() - t


def _instances(key, n, K, d):
    kx, kt = jax.random.split(key)
    X = jax.random.normal(kx, (n, K, d))
    X = X / jnp.linalg.norm(X, axis=-1, keepdims=True)
    theta = jax.random.normal(kt, (n, d))
    return np.asarray(X), np.asarray(theta)


def solvers(problem, d, steps_list, lr, tight_iters=20_000):
    """(name, batched function (X, theta[, init]) -> DesignSolution) for every solver of a problem; the
    tight Frank-Wolfe run takes the default run's allocation as a warm start."""
    opt = optax.adam(lr)
    out = []
    if problem == "G-optimal":
        out.append(("FW default tol 1e-6", lambda X, th: g_optimal(X, tol=1e-6)))
        out.append(("FW tight tol 1e-9", lambda X, th, init: g_optimal(X, init=init, tol=1e-9, max_iters=tight_iters)))
        kind = "g"
    elif problem == "XY (rho)":
        out.append(("FW default tol 1e-3", lambda X, th: xy_allocation(X, tol=1e-3)))
        out.append(("FW tight tol 1e-9", lambda X, th, init: xy_allocation(X, init=init, tol=1e-9, max_iters=tight_iters)))
        kind = "xy"
    else:
        out.append(("FW default tol 1e-3", lambda X, th: oracle_allocation(X, X, th, tol=1e-3)))
        out.append(("FW tight tol 1e-9", lambda X, th, init: oracle_allocation(X, X, th, init=init, tol=1e-9,
                                                                             max_iters=tight_iters)))
        kind = "oracle"
    for s in steps_list:
        out.append((f"optax Adam({lr}) {s} steps",
                    (lambda s: lambda X, th: optax_design(X, X, th, kind=kind, steps=s, optimizer=opt))(s)))
    return [(name, jax.jit(jax.vmap(fn))) for name, fn in out]


def _print(rows, header=True):
    if header:
        print("| problem | solver | batched wall (s) | compile (s) | mean iters | rel. excess over certified optimum: "
              "median | 90th pct | max | own certified rel. gap (median) |")
        print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['problem']} | {r['solver']} | {r['time_s']:.2f} | {r['compile_s']:.1f} | {r['iters']:.0f} | "
              f"{r['med']:.1e} | {r['p90']:.1e} | {r['mx']:.1e} | {r['own_gap']:.1e} |", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--K", type=int, default=10)
    ap.add_argument("--d", type=int, default=3)
    ap.add_argument("--steps", type=int, nargs="+", default=[200, 1000])
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tight-iters", type=int, default=2_000, help="extra iterations of the tight Frank-Wolfe run")
    ap.add_argument("--problems", nargs="+", default=["G-optimal", "psi*", "XY (rho)"])
    args = ap.parse_args(argv)
    n, K, d = args.n, args.K, args.d
    X, theta = _instances(jax.random.PRNGKey(args.seed), n, K, d)
    log = lambda m: print(f"[{time.strftime('%H:%M:%S')}] {m}", flush=True)
    rows = []
    for problem in args.problems:
        res = []
        default = None
        for name, fn in solvers(problem, d, args.steps, args.lr, args.tight_iters):
            extra = ()
            if name.startswith("FW tight"):  # warm-started from the default run: time = both
                extra = (default.allocation,)
            _, t_compile = _time(fn, X[:2], theta[:2], *(e[:2] for e in extra))
            sol, t = _time(fn, X, theta, *extra)
            it = np.asarray(sol.iterations)
            if default is None:
                default, t_default = sol, t
            elif extra:
                t += t_default
                it = it + np.asarray(default.iterations)
            value, gap = np.asarray(sol.value), np.asarray(sol.gap)
            log(f"{problem} / {name}: {t:.2f}s (compile {t_compile:.1f}s)")
            res.append((name, value, gap, t, t_compile, it))
        if problem == "G-optimal":
            L = np.full(n, float(d))
        else:
            L = np.max(np.stack([v - g for _, v, g, *_ in res]), axis=0)
        prow = []
        for name, value, gap, t, tc, it in res:
            ex = (value - L) / L
            prow.append(dict(problem=problem, solver=name, time_s=t, compile_s=tc, iters=float(np.mean(it)),
                             med=float(np.median(ex)), p90=float(np.quantile(ex, 0.9)), mx=float(np.max(ex)),
                             own_gap=float(np.median(gap / value))))
        _print(prow)
        rows += prow
    print(f"\noptax vs Frank-Wolfe, {n} random instances, K = {K}, d = {d} (unit-sphere arms, Z = X, "
          f"theta ~ N(0, I)), device {jax.devices()[0].platform}")
    _print(rows)
    return rows


if __name__ == "__main__":
    main()
