"""The fused kernels against the XLA loops they replace, on one device: speed and identity.

On a GPU the engine runs Peace's released Frank-Wolfe, Top Two's c-optimal design, FWS's Hedge,
XY-adaptive's greedy pulls, ALBA's G-optimal design and the binomial draws of ALBA's and
XY-static's multinomials as fused Pallas (Triton) kernels (``jaxbandits.design.kernels``,
``jaxbandits.batching.fused_elementwise``).
This script runs each of those workloads twice on the same device, with the same key and lanes:
once as the engine does (fused) and once with the loops as XLA operations
(``SolvePolicy.kernels = "xla"``), and reports for each the compile seconds, the run's seconds
(compilation excluded), replication-steps per second, the speed-up and whether every
replication's sample count, answer and pulls are equal (XY-adaptive's fused step builds its
table H inside the kernel, summed in its own order where the XLA form calls cuBLAS: a replication
can differ where a greedy choice falls within rounding, so its row reports how many are equal and
does not fail the run).  Top Two, FWS and XY-adaptive
replications take 10^4 steps and more on Soare's instance: they run capped at ``--steps`` steps
(the states at the cap are compared); Peace, ALBA and XY-static run ``--full-reps`` whole
replications.

On a CPU the fused form is the kernel interpreted (``kernels = "interpret"``): a check of the
script and of the kernels' results, not of their speed.

    PYTHONPATH=. python3 benchmarks/fused_kernels.py --json fused.json          # on a GPU, about 4 minutes
    python benchmarks/fused_kernels.py --lanes 16 --reps 16 --steps 40 --full-reps 16   # CPU smoke test
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time

import jax
import numpy as np


#: rows whose fused form sums in another order than the XLA form (their replications can differ
#: where a choice falls within rounding)
ROUNDING = {"XY-adaptive, Soare d=5"}


def workloads():
    from jaxbandits import algorithms as A
    from jaxbandits.instances import seeds

    soare = seeds.soare_benchmark(5, omega=0.1)
    static = seeds.static_basis(0.3, d=16, noise=math.sqrt(10.0))
    return [("Peace, static d=16 B=320", A.Peace(budget=320), static, "budget"),
            ("Top Two, Soare d=5", A.TopTwo(), soare, "capped"),
            ("FWS, Soare d=5", A.FWS(), soare, "capped"),
            ("XY-adaptive, Soare d=5", A.XYAdaptive(), soare, "capped"),
            ("ALBA, Soare d=5", A.ALBA(), soare, "full"),
            ("XY-static, Soare d=5", A.XYStatic(), soare, "full")]


def run(alg, inst, form: str, lanes: int, reps: int, steps: int):
    from jaxbandits import batching
    from jaxbandits.engine import simulate

    base = batching.solve_for

    def patched(platform, n):
        p = base(platform, n)
        if form == "xla":
            return dataclasses.replace(p, kernels="xla")
        if platform == "cpu":  # the fused program, interpreted
            return batching.SolvePolicy(batched=True, capacity=max(1, int(n)), kernels="interpret")
        return p

    batching.solve_for = patched
    try:
        t0 = time.perf_counter()
        res = simulate(alg, inst, jax.random.key(2026), reps, steps, lanes=lanes)
        total = time.perf_counter() - t0
    finally:
        batching.solve_for = base
    return res, total


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lanes", type=int, default=16_384)
    p.add_argument("--reps", type=int, default=16_384, help="replications of the capped rows (Top Two, FWS)")
    p.add_argument("--steps", type=int, default=2_000, help="the cap of the capped rows")
    p.add_argument("--full-reps", type=int, default=65_536, help="replications of the rows run whole "
                   "(Peace, ALBA, XY-static)")
    p.add_argument("--only", nargs="*", default=None)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    import jaxbandits.precision

    jaxbandits.precision.enable_globally()
    dev = jax.devices()[0]
    print(f"# {dev.platform} {getattr(dev, 'device_kind', '')}, jax {jax.__version__}", flush=True)
    rows = []
    for name, alg, inst, kind in workloads():
        if args.only and not any(o in name for o in args.only):
            continue
        reps = args.reps if kind == "capped" else args.full_reps
        steps = {"capped": args.steps, "budget": None, "full": 10**6}[kind] or alg.steps_needed(inst)
        out = {}
        for form in ("fused", "xla"):
            res, total = run(alg, inst, form, args.lanes, reps, steps)
            lane_steps = float(np.sum(res.steps))
            out[form] = dict(res=res, compile_s=float(res.compile_time), run_s=float(res.wall_time), total_s=total,
                             steps_per_s=lane_steps / max(float(res.wall_time), 1e-9))
        f, x = out["fused"], out["xla"]
        def per_rep(k):
            a, b = np.asarray(getattr(f["res"], k)), np.asarray(getattr(x["res"], k))
            a, b = a.reshape(a.shape[0] * a.shape[1], -1), b.reshape(b.shape[0] * b.shape[1], -1)
            return np.all(a == b, axis=1)

        equal = np.logical_and.reduce([per_rep(k) for k in ("samples", "answer", "pulls", "steps")])
        same = bool(np.all(equal))
        row = dict(name=name, platform=dev.platform, lanes=args.lanes, reps=reps, steps_cap=steps,
                   fused_compile_s=f["compile_s"], xla_compile_s=x["compile_s"], fused_run_s=f["run_s"],
                   xla_run_s=x["run_s"], fused_steps_per_s=f["steps_per_s"], xla_steps_per_s=x["steps_per_s"],
                   speedup=f["steps_per_s"] / max(x["steps_per_s"], 1e-9), identical=same,
                   identical_reps=int(np.sum(equal)), rounding=name in ROUNDING)
        rows.append(row)
        print(f"{name}: fused {row['fused_run_s']:.2f} s ({row['fused_steps_per_s']:.4g} rep-steps/s, compile "
              f"{row['fused_compile_s']:.1f} s), xla {row['xla_run_s']:.2f} s ({row['xla_steps_per_s']:.4g}, compile "
              f"{row['xla_compile_s']:.1f} s): {row['speedup']:.2f}x, replications "
              f"{'identical' if same else 'DIFFER'} ({int(np.sum(equal))} of {equal.size} equal)", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(dict(device=str(dev), jax=jax.__version__, rows=rows), fh, indent=1)
    return 0 if all(r["identical"] or r["rounding"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
