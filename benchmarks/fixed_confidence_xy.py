"""Throughput of RAGE, XY-static, XY-oracle, XY-adaptive, ALBA and LinGapE.

Workloads (1000 replications each, delta = 0.05, unit Gaussian noise):

  (i)  the Soare benchmark, d = 5, theta = 2 e_1, omega = 0.01 (seed 001 Fig. 1a);
  (ii) many arms, K = 1000, d = 2 (the released code's instance; seed 000 Table 1).

Reported per (algorithm, workload): replications per second, replication-steps per second
(a step is a phase for RAGE / XY-static / ALBA, up to ``pulls_per_step`` greedy pulls for
XY-adaptive), pulls per second, lane efficiency (useful steps / lane steps), compile time
(apart), mean samples; and the ratio to the per-replication time of seed 001's released code on
this kind of machine (``speedup_vs_authors``; ``REFERENCE_S_PER_REP``, measured one replication at a time).  XY-adaptive on (ii) would need the M(M-1)/2 ~ 5e5 pair directions at every greedy pull;
the paper does not run it there either ("we omit it from the remaining experiments").

LinGapE (the GIFA m = 1 assembly of :mod:`jaxbandits.algorithms.top_m.gifa`, "optimized" selection as
in seed 001 App F) runs on (i) and (ii); its (ii) runs and XY-adaptive's take ~700k pulls per
replication on (i), so ``--slow-reps`` (default 100) replications are timed for them there.

Per-instance precomputation (:meth:`Algorithm.prepare`: the first-round design of RAGE, the
static design of XY-static) is timed apart: ``prepare_compile_s`` (first call, compiling) and
``prepare_s`` (second call); the runner's wall time includes the second.

Usage: ``python benchmarks/fixed_confidence_xy.py [--reps 1000] [--only RAGE,ALBA] [--devices 1]``.
Run-to-run spread on a shared machine is 15-25 %.  The two CPU rows tracked against the
released code (RAGE on (i), XY-oracle on (ii); compilation excluded, before/after back to back)::

    nice -n 5 python benchmarks/fixed_confidence_xy.py --only RAGE --workloads soare_d5 --reps 1000
    nice -n 5 python benchmarks/fixed_confidence_xy.py --only XY-oracle --workloads many_arms_1000 --reps 1000

Measured 2026-11-23 on the 2 shared cores (load ~5), main (94cdbc7) and h3-fwspeed back to back,
prepare warmed in both, 1000 replications, replications/s (x the released code): RAGE Soare d = 5
1,165 (107x) -> 5,091 (468x); XY-oracle K = 1000 357 (139x) -> 739 (287x); XY-static K = 1000
409 -> 1,175 (2,844x); XY-static Soare d = 5 1,544 -> 2,765 (948x); RAGE K = 1000 (300
replications) 229 -> 295 (463x).  Same samples, pulls and answers per replication.

XY-adaptive on (i), 2026-11-25, load 4-7, 100 replications: the step at 7de7ab4 and the one-matrix
greedy step alternated in one process, 0.82 -> 0.67 s per replication (45x -> 56x the released
code at that load), the same replications.  2026-11-26, idle machine, this command with
``--only XY-adaptive --workloads soare_d5``, back to back: 62.6 -> 22.9 s (59x -> 162x) with the
one-pair pulls on a narrowed matrix and idle lanes kept on their finished state; 15.2 s (243x)
with ``--devices 2``.  The same replications; docs/measurements/2026-11-26-cpu-xy-adaptive.md.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

#: seconds per replication of seed 001's released code, one replication at a time on this kind of
#: 2-core machine (mean samples 1,242 / 2,211 / 566 / 1,369 on many-arms and
#: 711,635 / 2.29M / 563k / 696k on Soare d = 5)
REFERENCE_S_PER_REP = {("RAGE", "many_arms_1000"): 1.57, ("XY-static", "many_arms_1000"): 2.42,
                       ("XY-oracle", "many_arms_1000"): 0.389, ("LinGapE", "many_arms_1000"): 4.09,
                       ("RAGE", "soare_d5"): 0.092, ("XY-static", "soare_d5"): 0.343,
                       ("XY-adaptive", "soare_d5"): 37.0, ("LinGapE", "soare_d5"): 115.0}


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=1000)
    p.add_argument("--only", type=str, default="")
    p.add_argument("--devices", type=int, default=1)
    p.add_argument("--slow-reps", type=int, default=100)
    p.add_argument("--workloads", type=str, default="")
    p.add_argument("--json", type=str, default="")
    a = p.parse_args(argv)
    if "jax" not in sys.modules and a.devices > 1:
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                                   + f" --xla_force_host_platform_device_count={a.devices}").strip()
    import jax

    import jaxbandits.precision
    jaxbandits.precision.enable_globally()  # the benchmark's own arrays in float64 too
    import time

    from jaxbandits.algorithms.fixed_confidence.alba import ALBA
    from jaxbandits.algorithms.fixed_confidence.lingape import LinGapE
    from jaxbandits.instances.base import as_batch
    from jaxbandits.algorithms.fixed_confidence.rage import RAGE
    from jaxbandits.algorithms.fixed_confidence.xy import XYAdaptive, XYOracle, XYStatic
    from jaxbandits.engine import simulate
    from jaxbandits.instances import seeds

    work = {"soare_d5": seeds.soare_benchmark(5, omega=0.01),
            "many_arms_1000": seeds.many_arms_code(jax.random.key(43), 1000)}
    algs = {"RAGE": (RAGE(), 60), "XY-static": (XYStatic(), 400), "XY-oracle": (XYOracle(), 2000),
            "ALBA": (ALBA(), 2000),
            "XY-adaptive": (XYAdaptive(pulls_per_step=64), 10**6),
            "LinGapE": (LinGapE(selection="optimized"), 5 * 10**6)}
    slow = {("XY-adaptive", "soare_d5"), ("LinGapE", "soare_d5"), ("LinGapE", "many_arms_1000")}
    only = set(filter(None, a.only.split(",")))
    wonly = set(filter(None, a.workloads.split(",")))
    rows = []
    for wname, inst in work.items():
        if wonly and wname not in wonly:
            continue
        for name, (alg, cap) in algs.items():
            if only and name not in only:
                continue
            if name == "XY-adaptive" and wname != "soare_d5":
                continue
            reps = a.slow_reps if (name, wname) in slow else a.reps
            t0 = time.perf_counter()
            jax.block_until_ready(alg.prepare(as_batch(inst)))
            prep_compile = time.perf_counter() - t0
            t0 = time.perf_counter()
            jax.block_until_ready(alg.prepare(as_batch(inst)))
            prep = time.perf_counter() - t0
            r = simulate(alg, inst, jax.random.key(0), reps, cap)
            s = r.summary()
            n = int(r.ran.sum())
            row = dict(algorithm=name, workload=wname, reps=n, wall_s=r.wall_time,
                       compile_s=r.compile_time, prepare_compile_s=prep_compile, prepare_s=prep,
                       reps_per_s=n / r.wall_time,
                       steps_per_s=r.useful_steps / r.wall_time,
                       pulls_per_s=float(r.samples[r.ran].sum()) / r.wall_time,
                       efficiency=r.efficiency, mean_samples=s["mean"], error=s["error_rate"],
                       capped=s["frac_capped"], lanes=r.lanes, devices=r.devices)
            ref = REFERENCE_S_PER_REP.get((name, wname))
            if ref is not None:
                row["speedup_vs_authors"] = row["reps_per_s"] * ref
            rows.append(row)
            print(json.dumps(row), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return rows


if __name__ == "__main__":
    main()
