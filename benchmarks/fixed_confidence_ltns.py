"""Speed of LT&S (seed 000 Algorithm 1) and the Oracle on the engine.

Workloads (issue 3): (ii) many arms, K = 1000 (``many_arms_code``), and (i) the Soare benchmark,
d = 5, theta = 2 e_1, omega = 0.01.  Reports replications per second, replication-steps per
second, lane efficiency and compile time separately, and the ratio to the released code's
~0.8 s per LT&S replication on (ii) (issue 3's figure for this kind of machine).

    python benchmarks/fixed_confidence_ltns.py [--reps 1000] [--soare-reps 1000] [--skip-soare]

Sets XLA_FLAGS to one CPU device per core before importing jax (DESIGN.md: the engine then runs
one loop per core).
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
    p.add_argument("--skip-soare", action="store_true")
    p.add_argument("--devices", type=int, default=os.cpu_count() or 1)
    p.add_argument("--lanes", type=int, default=None)
    a = p.parse_args(argv)
    if "jax" not in sys.modules and a.devices > 1:
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                                   + f" --xla_force_host_platform_device_count={a.devices}").strip()
    import jax

    import jaxbandits  # noqa: F401
    from jaxbandits.algorithms.oracle import Oracle
    from jaxbandits.algorithms.track_and_stop import LazyTrackAndStop
    from jaxbandits.engine import simulate
    from jaxbandits.instances import seeds

    work = [("many_arms", seeds.many_arms_code(jax.random.PRNGKey(0), 1000), a.reps)]
    if not a.skip_soare:
        work.append(("soare_d5", seeds.soare_benchmark(5, omega=0.01), a.soare_reps))
    algs = {
        "LT&S (no averaging)": LazyTrackAndStop(averaging=False),
        "LT&S": LazyTrackAndStop(averaging=True),
        "LT&S [code choices]": LazyTrackAndStop.released_code(averaging=False),
        "Oracle [code]": Oracle.released_code(),
    }
    caps = {"Oracle [code]": 2000}
    print(f"devices: {jax.devices()}")
    print("| workload | algorithm | reps | mean samples | reps/s | rep-steps/s | efficiency | compile s | "
          "run s | x authors |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for wname, inst, reps in work:
        for name, alg in algs.items():
            t0 = time.perf_counter()
            r = simulate(alg, inst, jax.random.PRNGKey(1), reps, caps.get(name, 5_000_000), lanes=a.lanes)
            s = r.summary()
            rps = reps / r.wall_time
            ref = AUTHORS_S_PER_REP.get(wname)
            ratio = f"{rps * ref:.0f}" if ref and name.startswith("LT&S") else "-"
            print(f"| {wname} | {name} | {reps} | {s['mean']:.0f} | {rps:.1f} | {r.useful_steps / r.wall_time:.3g} | "
                  f"{r.efficiency:.2f} | {r.compile_time:.1f} | {r.wall_time:.1f} | {ratio} |", flush=True)


if __name__ == "__main__":
    main()
