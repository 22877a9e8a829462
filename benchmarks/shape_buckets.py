"""Benchmark: shape buckets -- programs and compile seconds of a sweep over K,
with and without padding, and the run-time cost of padding.

  python benchmarks/shape_buckets.py [--algs uniform,rage] [--Ks 10,20,50,100,200,500,1000] [--reps 8]
                                     [--overhead-K 100,520] [--overhead-reps 64]

Part 1 (compile): for each algorithm, one ``simulate`` per K on one random unit-sphere instance
(d = 2, sigma^2 T* = ``--hardness``), run (a) at its own shape, (b) padded to powers of two from 8
(:class:`jaxbandits.Buckets`, the sweep's default), (c) padded to powers of four from 16.  Counts
the engine programs compiled (:func:`jaxbandits.engine.programs_compiled`) and sums their compile
seconds (``Results.compile_time``), in a fresh process per policy so no program is shared
(the persistent compilation cache is off).

Part 2 (run-time overhead): replications per second of the same compiled program on the
unpadded and the padded instance (the second of two calls, so compilation is excluded; the
padded and unpadded runs are the same replications, tested in tests/test_buckets.py).

  python benchmarks/shape_buckets.py --part padding [--cases uniform,ugape]

Part 3 (padding, a check: exits non-zero on a failure; not part of ``--part all``): for every
algorithm that supports padding (``ALL_CASES`` in tests/test_buckets.py, one case per kernel that
reads the masks), the assertions of tests/test_buckets.py's padded-vs-unpadded test
(``check_padded_run``): a padded arm is never pulled, a padded item never returned, the padded run
repeats the unpadded replications with the same keys (UGapE: the same stopping-time distribution by
a two-sample test, and error rates within 0.1), and the bucketed run reuses the padded program.
The test suite runs a representative subset of these cases; run this after changing a kernel's
mask handling (about two programs per case to compile: several minutes on a CPU).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

POLICIES = {"none": None, "x2": dict(factor=2, smallest=8), "x4": dict(factor=4, smallest=16)}


def make_algs(names):
    from jaxbandits.algorithms import RAGE, LazyTrackAndStop, LinGapE, UniformGLR, XYStatic

    table = {"uniform": UniformGLR(), "rage": RAGE(), "lts": LazyTrackAndStop(), "xy-static": XYStatic(),
             "lingape": LinGapE()}
    return {n: table[n] for n in names}


def instance(K, hardness, d=2):
    import jax

    from jaxbandits.instances import seeds

    return seeds.sphere_calibrated(jax.random.key(K), num_arms=K, dim=d, hardness=hardness)


def compile_part(policy: str, algs, Ks, reps, hardness):
    import jax

    import jaxbandits as jb
    from jaxbandits import engine

    buckets = None if POLICIES[policy] is None else jb.Buckets(**POLICIES[policy])
    out = {}
    for name, alg in make_algs(algs).items():
        n0, ct, t0 = engine.programs_compiled(), 0.0, time.perf_counter()
        for K in Ks:
            r = engine.simulate(alg, instance(K, hardness), jax.random.key(0), reps, 10**6, buckets=buckets)
            ct += r.compile_time
        out[name] = dict(programs=engine.programs_compiled() - n0, compile_s=round(ct, 1),
                         total_s=round(time.perf_counter() - t0, 1))
    return out


def overhead_part(algs, Ks, reps, hardness):
    import jax

    import jaxbandits as jb
    from jaxbandits import engine

    rows = []
    for name, alg in make_algs(algs).items():
        for K in Ks:
            inst = instance(K, hardness)
            Kb, Mb = jb.Buckets().shape_for(inst)
            rate = {}
            for label, x in (("unpadded", inst), ("padded", jb.pad_to(inst, Kb, Mb))):
                engine.simulate(alg, x, jax.random.key(0), reps, 10**6)           # compile + warm up
                r = engine.simulate(alg, x, jax.random.key(1), reps, 10**6)
                rate[label] = reps / r.wall_time
            rows.append(dict(algorithm=name, K=K, bucket=Kb, unpadded_reps_s=round(rate["unpadded"], 2),
                             padded_reps_s=round(rate["padded"], 2),
                             slowdown=round(rate["unpadded"] / rate["padded"], 2)))
    return rows


def padding_part(cases):
    """Run tests/test_buckets.py's padded-vs-unpadded check on the named cases (all when empty);
    returns the names of the cases that failed."""
    import os
    import traceback

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
    from jaxbandits import precision

    precision.enable_globally()  # the test suite's precision (tests/conftest.py)
    import test_buckets as tb

    known = [c[0] for c in tb.ALL_CASES]
    unknown = set(cases) - set(known)
    if unknown:
        raise SystemExit(f"unknown cases {sorted(unknown)}; known: {known}")
    failed = []
    for name, alg, inst, exact in tb.ALL_CASES:
        if cases and name not in cases:
            continue
        t0 = time.perf_counter()
        try:
            tb.check_padded_run(alg, inst, exact)
            status = "ok"
        except Exception:  # noqa: BLE001 -- report every case, then fail
            failed.append(name)
            status = "FAILED\n" + traceback.format_exc()
        print(f"  {name:14s} {'exact' if exact else 'two-sample':10s} {time.perf_counter() - t0:6.1f} s  {status}",
              flush=True)
    return failed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--algs", default="uniform,rage")
    ap.add_argument("--Ks", default="10,20,50,100,200,500,1000")
    ap.add_argument("--reps", type=int, default=8)
    ap.add_argument("--hardness", type=float, default=30.0)
    ap.add_argument("--overhead-K", default="100,520")
    ap.add_argument("--overhead-reps", type=int, default=64)
    ap.add_argument("--part", default="all", choices=["all", "compile", "overhead", "padding", "_child"])
    ap.add_argument("--cases", default="", help="--part padding: comma-separated case names (default all)")
    ap.add_argument("--policy", default="none")
    a = ap.parse_args()
    algs = a.algs.split(",")
    if a.part == "padding":
        print("padding: padded vs unpadded runs, every algorithm that supports padding")
        failed = padding_part([c for c in a.cases.split(",") if c])
        if failed:
            raise SystemExit(f"padding check failed for: {', '.join(failed)}")
        return
    if a.part == "_child":
        print(json.dumps(compile_part(a.policy, algs, [int(k) for k in a.Ks.split(",")], a.reps, a.hardness)))
        return
    if a.part in ("all", "compile"):
        print(f"compile: K in {{{a.Ks}}}, {a.reps} replications each, one instance per K")
        for pol in POLICIES:
            cmd = [sys.executable, __file__, "--part", "_child", "--policy", pol, "--algs", a.algs, "--Ks", a.Ks,
                   "--reps", str(a.reps), "--hardness", str(a.hardness)]
            res = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.splitlines()[-1])
            for name, v in res.items():
                print(f"  policy {pol:4s} {name:10s} programs {v['programs']:2d}  compile {v['compile_s']:6.1f} s"
                      f"  total {v['total_s']:6.1f} s")
    if a.part in ("all", "overhead"):
        print(f"run-time overhead ({a.overhead_reps} replications, warm program):")
        for r in overhead_part(algs, [int(k) for k in a.overhead_K.split(",")], a.overhead_reps, a.hardness):
            print("  " + json.dumps(r))


if __name__ == "__main__":
    main()
