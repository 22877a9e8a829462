"""Every algorithm of the library on its seed instance, on the default device and on the CPU
(issue 13 item 7).

One row per algorithm: replications per second with default settings (``simulate`` chooses lanes,
chunks and solve batching; compilation excluded), lane efficiency (useful replication-steps /
lane-steps), peak device memory (``memory_stats()["peak_bytes_in_use"]`` where the backend reports
it: the process's running peak, so a row shows the largest so far; the CPU backend reports none),
the compiled program's bytes (XLA's memory analysis) and the compile time.  When the default device
is not a CPU, every row is also run on ``jax.devices("cpu")``, and the ratio is reported.

Instances: the seed instance each algorithm was written for (seed 000 many-arms for LT&S, seed 001
Soare d = 5 for the elimination family, seed 003 top-m instances for the GIFA family, seed 002
fixed-budget instances for GSE / OD-LinBAI / BayesGap / Peace / LinUCB / UCB-GLM, a sphere-uniform
instance for the uniform GLR, seed 000 Sec 4.2's rotated basis for SphereBAI).  ``--quick`` shrinks replications (and K for LT&S) so
the whole table runs on a CPU in a few minutes; replications/s from so few replications include
the idle tail of the last chunk, so they understate long runs (the efficiency column says by how
much).

Usage: ``python benchmarks/devices.py [--quick] [--only NAME ...] [--json PATH]``.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time


@dataclasses.dataclass
class Workload:
    name: str
    algorithm: object
    instance: object
    reps: int
    quick_reps: int
    max_steps: int = 10**7


def workloads(quick: bool) -> list[Workload]:
    import jax
    import jax.numpy as jnp

    from jaxbandits import algorithms as A
    from jaxbandits.algorithms.fixed_confidence.sphere import sphere_instance
    from jaxbandits.instances import seeds

    key = jax.random.key(0)
    soare = seeds.soare_benchmark(5)
    K_lts = 100 if quick else 1000
    many = seeds.many_arms_code(key, K_lts)
    topm = seeds.topm_classic()
    top1 = seeds.topm_hard_top1()  # topm_classic ties its two best items: a top-1 run never stops
    static = seeds.static_basis(0.3, d=16, noise=math.sqrt(10.0))
    sphere = seeds.sphere_calibrated(key, 20, 5)
    logistic = seeds.logistic_gse(key, 8, 5)  # seed 002 Sec 8.4
    # seed 000 Sec 4.2: an orthonormal basis of R^3 in a random rotation, 50 items on the sphere
    basis = sphere_instance(key, jnp.array([0.6, 0.3, 0.1]), num_items=50, random_basis=True)
    return [
        Workload(f"LT&S no averaging, many-arms K={K_lts}", A.LazyTrackAndStop(averaging=False), many, 1000, 20),
        Workload("RAGE, Soare d=5", A.RAGE(), soare, 1000, 200),
        Workload("XY-static, Soare d=5", A.XYStatic(), soare, 1000, 100),
        Workload("XY-oracle, Soare d=5", A.XYOracle(), soare, 1000, 100),
        Workload("XY-adaptive, Soare d=5", A.XYAdaptive(), soare, 500, 8),
        Workload("ALBA, Soare d=5", A.ALBA(), soare, 1000, 50),
        Workload("Oracle, Soare d=5", A.Oracle(), soare, 1000, 100),
        Workload("uniform + GLR, sphere K=20 d=5", A.UniformGLR(), sphere, 1000, 20),
        Workload("uniform + GLR + elimination, sphere K=20 d=5", A.Eliminate(A.UniformGLR()), sphere, 1000, 20),
        Workload("FWS, Soare d=5", A.FWS(), soare, 1000, 4),
        Workload("Top Two, Soare d=5", A.TopTwo(), soare, 1000, 4),
        Workload("LinGame, Soare d=5", A.LinGame(), soare, 1000, 4),
        Workload("SphereBAI, sphere basis d=3", A.SphereBAI(epsilon=0.3, delta=0.3), basis, 1000, 100),
        Workload(f"LinGapE greedy, many-arms K={K_lts}", A.LinGapE(), many, 1000, 50),
        Workload("LinGapE (top-1), hard top-1 K=3", A.LinGapE(), top1, 10_000, 20),
        Workload("m-LinGapE, top-m K=4 m=2", A.MLinGapE(2), topm, 100_000, 2000),
        Workload("LinGIFA, top-m K=4 m=2", A.LinGIFA(2), topm, 100_000, 2000),
        Workload("LUCB, top-m K=4 m=2", A.LUCB(2), topm, 100_000, 2000),
        Workload("UGapE, top-m K=4 m=2", A.UGapE(2), topm, 100_000, 2000),
        Workload("GSE, static d=16 B=320", A.GSE(budget=320), static, 10_000, 500),
        Workload("OD-LinBAI, static d=16 B=320", A.ODLinBAI(budget=320), static, 10_000, 500),
        Workload("BayesGap, static d=16 B=320", A.BayesGap(budget=320), static, 10_000, 200),
        Workload("Peace, static d=16 B=320", A.Peace(budget=320), static, 10_000, 200),
        Workload("LinUCB, static d=16 B=320", A.LinUCB(budget=320), static, 10_000, 500),
        Workload("UCB-GLM, logistic K=8 d=5 B=400", A.UCBGLM(budget=400), logistic, 10_000, 100),
        Workload("LinGapE capped at B=320, static d=16", A.BudgetCapped(A.LinGapE(), 320), static, 10_000, 200),
    ]


def peak_bytes(device) -> int | None:
    try:
        st = device.memory_stats() or {}
    except Exception:  # backends without memory statistics
        return None
    return st.get("peak_bytes_in_use")


def measure(w: Workload, reps: int, devices) -> dict:
    import jax

    from jaxbandits.engine import simulate

    t0 = time.perf_counter()
    r = simulate(w.algorithm, w.instance, jax.random.key(1), reps, w.max_steps, record_pulls=False,
                 devices=devices)
    total = time.perf_counter() - t0
    lay = r.layout
    return dict(platform=lay.platform if lay else devices[0].platform, reps=reps,
                reps_per_s=reps / r.wall_time if r.wall_time > 0 else float("nan"),
                efficiency=r.efficiency, lanes=r.lanes, compile_s=r.compile_time, wall_s=r.wall_time,
                total_s=total, peak_bytes=peak_bytes(devices[0]),
                program_bytes=lay.program_bytes if lay else None,
                mean_samples=float(r.samples.mean()), stopped=float(r.stopped.mean()))


def _mib(b):
    return "n/a" if b is None else f"{b / 2**20:.1f}"


def table(rows: list[dict]) -> str:
    head = ("| algorithm, instance | reps | default device | reps/s | CPU reps/s | ratio | lane eff. | lanes "
            "| peak MiB | program MiB | compile s |")
    out = [head, "|" + " --- |" * (head.count("|") - 1)]
    for row in rows:
        d, c = row["default"], row.get("cpu")
        cpu_rate = d["reps_per_s"] if c is None else c["reps_per_s"]
        out.append(
            f"| {row['name']} | {d['reps']} | {d['platform']} | {d['reps_per_s']:,.1f} | {cpu_rate:,.1f} "
            f"| {d['reps_per_s'] / cpu_rate:.2f} | {d['efficiency']:.2f} | {d['lanes']} | {_mib(d['peak_bytes'])} "
            f"| {_mib(d['program_bytes'])} | {d['compile_s']:.1f} |")
    return "\n".join(out)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="few replications: a few minutes on a CPU")
    p.add_argument("--only", nargs="*", default=None, help="run the rows whose name contains one of these")
    p.add_argument("--json", default=None, help="also write the rows as JSON here")
    args = p.parse_args(argv)
    import jax

    import jaxbandits.precision

    jaxbandits.precision.enable_globally()  # the benchmark's own arrays in float64 too
    default = jax.devices()
    cpu = jax.devices("cpu")
    print(f"# jax {jax.__version__}, default devices: {default[0].device_kind} x {len(default)} "
          f"({default[0].platform}); CPU devices: {len(cpu)}", flush=True)
    rows = []
    for w in workloads(args.quick):
        if args.only and not any(s.lower() in w.name.lower() for s in args.only):
            continue
        reps = w.quick_reps if args.quick else w.reps
        row = dict(name=w.name, default=measure(w, reps, default))
        if default[0].platform != "cpu":
            row["cpu"] = measure(w, reps, cpu[:1])
        rows.append(row)
        d = row["default"]
        print(f"  {w.name}: {d['reps_per_s']:,.1f} reps/s, efficiency {d['efficiency']:.2f}, compile "
              f"{d['compile_s']:.1f} s, mean samples {d['mean_samples']:,.0f}, stopped {d['stopped']:.2f}",
              flush=True)
    print(table(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
