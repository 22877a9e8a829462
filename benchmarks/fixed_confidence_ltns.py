"""Speed of LT&S (seed 000 Algorithm 1) and the Oracle on the engine.

Workloads: (ii) many arms, K = 1000 (``many_arms_code``), and (i) the Soare benchmark,
d = 5, theta = 2 e_1, omega = 0.01.  Reports replications per second, replication-steps per
second, lane efficiency and compile time separately, and the ratio to the released code's
~0.8 s per LT&S replication on (ii) (measured one replication at a time on this kind of 2-core machine).  A row
"LT&S rounds only" runs the same kernel with the lazy design solves switched off (no update ever
scheduled, capped at 1500 rounds): its rep-steps/s against the full row's gives the share of the
time the Frank-Wolfe solves take.

On (i) an LT&S replication takes ~2.7 M rounds: tau ~ T*(theta) beta(delta_tau, tau), with
T* ~ 2.0e4 and the Prop 2 threshold beta ~ 130 at that t (the d/2 log det term and the
6 delta / (pi^2 t^2) union over rounds); 1000 of them would be ~2.7e9 rounds, hours on 2 cores,
so LT&S runs ``--soare-lts-reps`` (default 8) replications there, the Oracle ``--soare-reps``.
The benchmark prints T*, the lower bound sigma^2 T* kl(delta, 1 - delta) and, for LT&S, the mean
of tau / (T* beta(delta_tau, tau)) computed from the final design matrix (c = 1, a lower bound
for the threshold; ~1 means the stopping time is what the threshold implies).  "LT&S [code
choices]" is :meth:`LazyTrackAndStop.released_code` (with the released code's A_0
prior, which the ratio's count-only design matrix leaves out).

    python benchmarks/fixed_confidence_ltns.py [--reps 1000] [--soare-reps 1000]
        [--soare-lts-reps 8] [--skip-soare] [--devices 1] [--lanes L] [--cores N]

One XLA CPU device by default (``--devices 2`` sets XLA_FLAGS before importing jax): runs with 2
forced host devices were seen to stall on this loaded 2-core machine.  ``--cores 1`` restricts the
process to one core before JAX starts (XLA's thread pool then has one thread), so "x authors" is
a ratio per core against the released code's single-threaded NumPy; without it, one XLA device
on a 2-core machine keeps the second core busy with the pool's other thread.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

AUTHORS_S_PER_REP = {"many_arms": 0.8}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=1000)
    p.add_argument("--soare-reps", type=int, default=1000)
    p.add_argument("--soare-lts-reps", type=int, default=8)
    p.add_argument("--skip-soare", action="store_true")
    p.add_argument("--skip-many", action="store_true")
    p.add_argument("--devices", type=int, default=1)
    p.add_argument("--lanes", type=int, default=None)
    p.add_argument("--cores", type=int, default=None,
                   help="run the process on this many of its cores (set before JAX starts, so XLA's "
                        "thread pool has as many threads); 1 compares per core with the released "
                        "code's single-threaded NumPy")
    a = p.parse_args(argv)
    if a.cores is not None:
        allowed = sorted(os.sched_getaffinity(0))
        if not 1 <= a.cores <= len(allowed):
            p.error(f"--cores must be between 1 and the {len(allowed)} cores this process may use, got {a.cores}")
        if "jax" in sys.modules:
            p.error("--cores must be set before JAX starts: run the benchmark as a script")
        os.sched_setaffinity(0, allowed[:a.cores])
    if "jax" not in sys.modules and a.devices > 1:
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                                   + f" --xla_force_host_platform_device_count={a.devices}").strip()
    import jax
    import jax.numpy as jnp
    import numpy as np

    import jaxbandits.precision
    jaxbandits.precision.enable_globally()  # the benchmark's own arrays in float64 too
    from jaxbandits.algorithms import common
    from jaxbandits.algorithms.fixed_confidence.oracle import Oracle
    from jaxbandits.algorithms.fixed_confidence.track_and_stop import LazyTrackAndStop
    from jaxbandits.design import characteristic_time, lower_bound
    from jaxbandits.engine import simulate
    from jaxbandits.instances import seeds

    work = []
    if not a.skip_many:
        work.append(("many_arms", seeds.many_arms_code(jax.random.PRNGKey(0), 1000)))
    if not a.skip_soare:
        work.append(("soare_d5", seeds.soare_benchmark(5, omega=0.01)))
    algs = {
        "LT&S (no averaging)": LazyTrackAndStop(averaging=False),
        "LT&S": LazyTrackAndStop(averaging=True),
        "LT&S [code choices]": LazyTrackAndStop.released_code(averaging=False),
        "LT&S rounds only": LazyTrackAndStop(averaging=False, first_update=2**30),
        "Oracle [code]": Oracle.released_code(),
    }
    print(f"devices: {jax.devices()}; cores: {len(os.sched_getaffinity(0))}")
    print("| workload | algorithm | reps | mean samples (se) | reps/s | rep-steps/s | efficiency | lanes | "
          "compile s | run s | x authors | tau / (T* beta) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for wname, inst in work:
        tstar = float(characteristic_time(inst))
        lb = float(lower_bound(inst, 0.05))
        for name, alg in algs.items():
            lts = name.startswith("LT&S")
            if wname == "soare_d5":
                if name == "LT&S rounds only" or name == "LT&S":
                    continue
                reps = a.soare_lts_reps if lts else a.soare_reps
            else:
                reps = a.reps
            cap = 1500 if name == "LT&S rounds only" else (2000 if name.startswith("Oracle") else 50_000_000)
            r = simulate(alg, inst, jax.random.PRNGKey(1), reps, cap, lanes=a.lanes)
            s = r.summary()
            rps = reps / r.wall_time
            ref = AUTHORS_S_PER_REP.get(wname)
            ratio = f"{rps * ref:.0f}" if ref and lts and name != "LT&S rounds only" else "-"
            pred = "-"
            if lts and name != "LT&S rounds only":
                P = np.asarray(r.pulls.reshape(-1, inst.num_arms), float)
                X = np.asarray(inst.arms)
                q = []
                for pk in P:
                    t = pk.sum()
                    dl = common.anytime_delta(alg.delta, t) if alg.anytime else alg.delta
                    beta = float(common.glr_threshold(jnp.asarray((X.T * pk) @ X), dl, 1.0, 1.0, alg.u))
                    q.append(t / (tstar * beta))
                pred = f"{np.mean(q):.2f}"
            mean = f"{s['mean']:.0f} ({s['se']:.0f})" if name != "LT&S rounds only" else "(capped)"
            print(f"| {wname} | {name} | {reps} | {mean} | {rps:.1f} | {r.useful_steps / r.wall_time:.3g} | "
                  f"{r.efficiency:.2f} | {r.lanes} | {r.compile_time:.1f} | {r.wall_time:.1f} | {ratio} | {pred} |",
                  flush=True)
        print(f"| {wname} | T* = {tstar:.4g}, lower bound sigma^2 T* kl(0.05, 0.95) = {lb:.4g} | | | | | | | | | | |",
              flush=True)


if __name__ == "__main__":
    main()
