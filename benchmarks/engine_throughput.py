"""Engine throughput: replication-steps per second and lane efficiency.

Workload (``--alg``): LT&S (seed 000 Algorithm 1, default) or uniform round-robin sampling with
the GLR stopping rule (seed 000 Sec 3.4) on the many-arms instance (K = 1000, d = 2; the authors'
code generator, seed 000 Table 1), 1000 replications, and on 100 random many-arms instances x 10
replications.  (Uniform sampling needs ~1e5 pulls per run there: the arms are nearly collinear,
which is the point of the instance; use a smaller ``--K`` with it.)  Compared layouts:

* ``refill``: the engine's default (fixed lanes, finished lanes refilled inside the loop);
* ``plain vmap``: all replications in one vmapped while_loop (lanes = replications, no refill:
  every lane runs until the slowest stops), the usual way of batching;
* the same on 2 XLA CPU devices (``--xla_force_host_platform_device_count=2``, subprocess);
* with ``--alg uniform``, a NumPy loop over single replications (same algorithm), for the
  steps-per-second ratio.

Usage: ``python benchmarks/engine_throughput.py [--alg lts|uniform] [--reps 1000] [--K 1000]``.  Numbers vary 15-25 %
from run to run on a shared machine; ratios are measured within one run.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np


def numpy_uniform_glr(X, theta, sigma, delta, rng, max_steps=10**7):
    """Reference: one replication of round-robin + GLR stopping in plain NumPy."""
    K, d = X.shape
    A = np.zeros((d, d))
    b = np.zeros(d)
    c = np.max(np.sum(X**2, 1))
    for t in range(1, max_steps + 1):
        a = (t - 1) % K
        r = X[a] @ theta + sigma * rng.normal()
        A += np.outer(X[a], X[a])
        b += r * X[a]
        if t < d:
            continue
        L = np.linalg.cholesky(A + 1e-12 * np.trace(A) / d * np.eye(d))
        th = np.linalg.solve(A, b)
        v = X @ th
        best = int(np.argmax(v))
        D = X[best] - X
        W = np.linalg.solve(L, D.T)
        nrm = np.sum(W * W, 0)
        gaps = v[best] - v
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(np.arange(K) == best, np.inf, gaps**2 / (2 * nrm))
        beta = 2 * sigma**2 * (0.5 * np.linalg.slogdet(A / c + np.eye(d))[1] - np.log(delta))
        if z.min() > beta and np.linalg.eigvalsh(A)[0] >= c:
            return t, best
    return max_steps, best


def make_algorithm(name: str):
    if name == "uniform":
        from jaxbandits.algorithms.fixed_confidence.uniform import UniformGLR

        return UniformGLR(delta=0.05)
    from jaxbandits.algorithms.fixed_confidence.track_and_stop import LazyTrackAndStop

    return LazyTrackAndStop(delta=0.05, averaging=False)


def run_layouts(reps: int, K: int, alg_name: str) -> dict:
    import jax

    import jaxbandits.precision
    jaxbandits.precision.enable_globally()  # the benchmark's own arrays in float64 too
    from jaxbandits.engine import simulate
    from jaxbandits.instances import seeds

    alg = make_algorithm(alg_name)
    inst = seeds.many_arms_code(jax.random.key(0), K)
    rand = seeds.batch(seeds.many_arms_code, jax.random.key(1), max(reps // 10, 1), num_arms=K)
    out = {"devices": len(jax.devices())}
    for name, instances, n in (("fixed", inst, reps), ("random", rand, 10)):
        r = simulate(alg, instances, jax.random.key(2), n, 10**7)
        p = simulate(alg, instances, jax.random.key(2), n, 10**7, lanes=10**9, chunk_size=10**9)
        assert np.array_equal(r.samples, p.samples)
        for lay, x in (("refill", r), ("plain_vmap", p)):
            print(f"[{len(jax.devices())} dev] {name} {lay}: lanes {x.lanes}, {x.samples.size / x.wall_time:.1f} reps/s, "
                  f"{x.useful_steps / x.wall_time:,.0f} steps/s, efficiency {x.efficiency:.3f}, "
                  f"compile {x.compile_time:.1f}s", file=sys.stderr, flush=True)
        out[name] = {
            lay: dict(wall=x.wall_time, compile=x.compile_time, efficiency=x.efficiency,
                      steps_per_s=x.useful_steps / x.wall_time, reps_per_s=x.samples.size / x.wall_time,
                      lanes=x.lanes, mean_samples=float(x.samples.mean()))
            for lay, x in (("refill", r), ("plain_vmap", p))
        }
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--max-devices", type=int, default=2)
    ap.add_argument("--K", type=int, default=1000)
    ap.add_argument("--alg", choices=("lts", "uniform"), default="lts")
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--numpy-reps", type=int, default=3)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(run_layouts(a.reps, a.K, a.alg)))
        return
    env1 = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=1")
    env2 = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2")
    cmd = [sys.executable, __file__, "--child", "--reps", str(a.reps), "--K", str(a.K), "--alg", a.alg]
    res = {}
    for nd, env in ((1, env1), (2, env2))[:a.max_devices]:
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True, check=True)
        res[nd] = json.loads(p.stdout.strip().splitlines()[-1])

    np_sps = float("nan")
    if a.alg == "uniform":
        import jax

        import jaxbandits.precision
        jaxbandits.precision.enable_globally()  # the benchmark's own arrays in float64 too
        from jaxbandits.instances import seeds

        inst = seeds.many_arms_code(jax.random.key(0), a.K)
        X, th = np.asarray(inst.arms), np.asarray(inst.theta)
        rng = np.random.default_rng(0)
        t0 = time.perf_counter()
        steps = sum(numpy_uniform_glr(X, th, 1.0, 0.05, rng)[0] for _ in range(a.numpy_reps))
        np_sps = steps / (time.perf_counter() - t0)
        print(f"NumPy loop (one replication at a time): {np_sps:,.0f} steps/s")
    print(f"{a.alg}, many arms K = {a.K}, d = 2, {a.reps} replications")
    print("| workload | devices | layout | lanes | reps/s | steps/s | efficiency | compile s | vs NumPy |")
    print("|---|---|---|---|---|---|---|---|---|")
    for nd in sorted(res):
        for wl in ("fixed", "random"):
            for lay in ("refill", "plain_vmap"):
                x = res[nd][wl][lay]
                print(f"| {wl} | {nd} | {lay} | {x['lanes']} | {x['reps_per_s']:.1f} | {x['steps_per_s']:,.0f} | "
                      f"{x['efficiency']:.3f} | {x['compile']:.1f} | {x['steps_per_s'] / np_sps:.1f}x |")
    for wl in ("fixed", "random") if 2 in res else ():
        f = res[2][wl]["refill"]["steps_per_s"] / res[1][wl]["plain_vmap"]["steps_per_s"]
        print(f"{wl}: refill on 2 devices vs plain vmap on 1 device: {f:.2f}x")


if __name__ == "__main__":
    main()
