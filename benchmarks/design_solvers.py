"""Benchmark: batched JAX design solvers versus a NumPy loop over instances.

  python benchmarks/design_solvers.py [--n 1000] [--K 100] [--d 10] [--numpy-n 50] [--xy-n N]

G-optimal: jaxbandits.design.g_optimal (Fedorov-Wynn, exact step, away steps, rank-one updates,
vmapped over instances) vs the NumPy reference np_g_optimal (the same method, A^-1 recomputed
each iteration), both to tol 1e-6.  XY over all K(K-1)/2 pairs: xy_allocation (smoothed FW + Newton
polish, certified gap, tol 1e-3) vs the NumPy Frank-Wolfe of seed 001 App F (step 2/(k+2), stop on a
relative change < 0.01 or 5000 iterations), the method the paper's code uses.

Accuracy: for both, the certified relative excess (value - L) / L, L = the JAX solver's certified
lower bound on the optimum (value - gap).  The NumPy loop runs on the first ``--numpy-n``
instances and its time is extrapolated linearly to ``--n`` (it is a sequential loop; said in the
table).  One run, one process: the ratio is what to read (timings on a shared machine are noisy).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import jax
import jax.numpy as jnp

import jaxbandits.precision
jaxbandits.precision.enable_globally()  # the benchmark's own arrays in float64 too
from jaxbandits.design import g_optimal, xy_allocation
from jaxbandits.design.reference import np_g_optimal, np_minimax_fw, pair_differences


def _time(fn, *a):
    t = time.perf_counter()
    out = fn(*a)
    jax.block_until_ready(out)
    return out, time.perf_counter() - t


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--K", type=int, default=100)
    ap.add_argument("--d", type=int, default=10)
    ap.add_argument("--numpy-n", type=int, default=50)
    ap.add_argument("--xy-n", type=int, default=None, help="instances for the XY part (default --n)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    n, K, d = args.n, args.K, args.d
    nx = args.xy_n or n
    X = np.array(jax.random.normal(jax.random.PRNGKey(args.seed), (n, K, d)))
    X /= np.linalg.norm(X, axis=-1, keepdims=True)
    rows = []
    log = lambda m: print(f"[{time.strftime('%H:%M:%S')}] {m}", flush=True)

    # ---- G-optimal
    gopt = jax.jit(jax.vmap(lambda x: g_optimal(x, tol=1e-6, max_iters=100_000)))
    _, t_compile = _time(gopt, X[:2])
    log(f"G-optimal compiled in {t_compile:.1f}s")
    sol, t_jax = _time(gopt, X)
    log(f"G-optimal JAX {t_jax:.2f}s")
    t0 = time.perf_counter()
    np_vals = [np_g_optimal(X[i], tol=1e-6, max_iters=100_000)[1] for i in range(args.numpy_n)]
    t_np = (time.perf_counter() - t0) * n / args.numpy_n
    log(f"G-optimal NumPy {t_np:.2f}s (scaled)")
    rows.append(dict(problem="G-optimal", n=n, jax_s=t_jax, compile_s=t_compile, numpy_s=t_np,
                     jax_iters=float(np.mean(sol.iterations)), jax_excess=float(np.max(sol.gap / d)),
                     numpy_excess=float(np.max((np.array(np_vals) - d) / d))))

    # ---- XY over all pairs
    Xx = X[:nx]
    xy = jax.jit(jax.vmap(lambda x: xy_allocation(x, tol=1e-3)))
    _, t_compile = _time(xy, Xx[:2])
    log(f"XY compiled in {t_compile:.1f}s")
    sol, t_jax = _time(xy, Xx)
    log(f"XY JAX {t_jax:.2f}s")
    lower = np.asarray(sol.value - sol.gap)
    m = min(args.numpy_n, nx)
    t0 = time.perf_counter()
    np_vals = [np_minimax_fw(Xx[i], pair_differences(Xx[i]), iters=5000, rel_tol=0.01)[1] for i in range(m)]
    t_np = (time.perf_counter() - t0) * nx / m
    log(f"XY NumPy {t_np:.2f}s (scaled)")
    rows.append(dict(problem=f"XY ({K * (K - 1) // 2} pairs), smooth FW vs NumPy App-F FW", n=nx, jax_s=t_jax,
                     compile_s=t_compile, numpy_s=t_np, jax_iters=float(np.mean(sol.iterations)),
                     jax_excess=float(np.max(np.asarray(sol.gap) / lower)),
                     numpy_excess=float(np.max((np.array(np_vals) - lower[:m]) / lower[:m]))))
    # the same App-F Frank-Wolfe in JAX, batched (what RAGE / XY baselines run)
    xyp = jax.jit(jax.vmap(lambda x: xy_allocation(x, method="paper")))
    _, t_compile = _time(xyp, Xx[:2])
    solp, t_jaxp = _time(xyp, Xx)
    log(f"XY paper JAX {t_jaxp:.2f}s")
    rows.append(dict(problem="XY, App-F FW: JAX batched vs NumPy", n=nx, jax_s=t_jaxp, compile_s=t_compile,
                     numpy_s=t_np, jax_iters=float(np.mean(solp.iterations)),
                     jax_excess=float(np.max((np.asarray(solp.value) - lower) / lower)),
                     numpy_excess=float(np.max((np.array(np_vals) - lower[:m]) / lower[:m]))))

    print(f"\nDesign solvers, {n} instances, K = {K}, d = {d}, device {jax.devices()[0].platform}; NumPy time "
          f"measured on {args.numpy_n} instances and scaled to n")
    print("| problem | n | JAX batched (s) | compile (s) | NumPy loop (s) | NumPy / JAX | mean JAX iters | "
          "max certified rel. excess JAX | NumPy |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['problem']} | {r['n']} | {r['jax_s']:.2f} | {r['compile_s']:.1f} | {r['numpy_s']:.1f} | "
              f"{r['numpy_s'] / r['jax_s']:.1f}x | {r['jax_iters']:.0f} | {r['jax_excess']:.1e} | {r['numpy_excess']:.1e} |")
    return rows


if __name__ == "__main__":
    main()
