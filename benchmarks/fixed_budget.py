"""Benchmark of the fixed-budget algorithms of seed 002: replications per second and compile time.

    python benchmarks/fixed_budget.py [--reps 1000] [--K 16 64 256] [--d 10] [--budget-per-arm 10] [--repeat 2]
                                      [--algorithms ...] [--quick] [--out results/benchmarks]

Every algorithm runs ``reps`` replications (timed ``--repeat`` times, best wall time reported) on
one random unit-sphere instance (seed 002 Sec 8.3 / App E.3 generator, sigma^2 = 1) with
B = budget_per_arm * K, through :func:`jaxbandits.engine.simulate` on one XLA CPU device
(``--devices N`` for more; 2 forced host devices were seen to stall).  Reported: wall time
of the run (compilation excluded), replications per second, compile time, lane efficiency, and
the speed-up over the references of seed 002: the authors' GSE code at 0.03-0.08 s per replication
(K = 8 to 24; ratio given against both ends), and Peace at 530 s per 100 runs at K = 16 (5.3 s per
run; 14 h per 100 runs at K = 32, i.e. 504 s per run).  Ratios compare against published numbers
from other machines; the same 2-core machine was not available for the reference code.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

GSE_REF_S = (0.03, 0.08)          # seconds per replication of the authors' GSE (seed 002 Sec 8.1 / code)
PEACE_REF_S = {16: 5.3, 32: 504.0}  # seconds per run of the authors' approximate Peace (Sec 8.1)

ALL = ["GSE-Lin", "GSE-Lin-FWG", "GSE-Lin-Greedy", "GSE-Lin-Wynn", "OD-LinBAI", "BayesGap-Lin", "Peace"]


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=1000)
    p.add_argument("--K", type=int, nargs="+", default=[16, 64, 256])
    p.add_argument("--d", type=int, default=10)
    p.add_argument("--budget-per-arm", type=int, default=10)
    p.add_argument("--algorithms", nargs="+", default=ALL)
    p.add_argument("--repeat", type=int, default=2,
                   help="timed runs per row (the best wall time is reported; shared machines are noisy)")
    p.add_argument("--quick", action="store_true", help="50 reps, K = 16 only")
    p.add_argument("--out", default="results/benchmarks")
    p.add_argument("--devices", type=int, default=1,
                   help="XLA CPU devices to expose (default 1: 2 forced host devices were seen to stall)")
    a = p.parse_args(argv)
    if "jax" not in sys.modules:
        n = a.devices or 1
        if n > 1 and "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
            os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                                       f" --xla_force_host_platform_device_count={n}").strip()
    import jax

    import jaxbandits.precision
    jaxbandits.precision.enable_globally()  # the benchmark's own arrays in float64 too
    from experiments.seed002_adaptive import roster
    from jaxbandits.engine import simulate
    from jaxbandits.instances import seeds

    if a.quick:
        a.reps, a.K = 50, [16]
    rows = []
    for K in a.K:
        inst = seeds.unit_sphere(jax.random.key(K), K, a.d, alpha=0.01, noise=1.0)
        B = a.budget_per_arm * K
        for name, alg, steps in roster(a.algorithms, B, K, a.d):
            t0 = time.perf_counter()
            res = simulate(alg, inst, jax.random.key(0), a.reps, max_steps=steps, record_pulls=False)
            total = time.perf_counter() - t0
            compile_s = res.compile_time
            walls = [res.wall_time]
            for _ in range(a.repeat - 1):  # same compiled program; best-of-n damps load noise
                walls.append(simulate(alg, inst, jax.random.key(0), a.reps, max_steps=steps,
                                      record_pulls=False).wall_time)
            wall = min(walls)
            rps = a.reps / wall
            row = dict(algorithm=name, K=K, d=a.d, B=B, reps=a.reps, wall_s=round(wall, 3),
                       reps_per_s=round(rps, 1), compile_s=round(compile_s, 2),
                       total_s=round(total, 2), efficiency=round(res.efficiency, 3),
                       accuracy=round(float(res.correct.mean()), 3))
            if name.startswith("GSE"):
                row["speedup_vs_ref"] = f"{rps * GSE_REF_S[0]:.0f}-{rps * GSE_REF_S[1]:.0f}x"
            elif name == "Peace" and K in PEACE_REF_S:
                row["speedup_vs_ref"] = f"{rps * PEACE_REF_S[K]:.0f}x"
            rows.append(row)
            print(json.dumps(row), flush=True)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "fixed_budget.json").write_text(json.dumps(dict(args=vars(a), devices=[str(d) for d in jax.devices()],
                                                           rows=rows), indent=2))
    cols = list(dict.fromkeys(k for r in rows for k in r))
    md = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    md += ["| " + " | ".join(str(r.get(c, "")) for c in cols) + " |" for r in rows]
    (out / "fixed_budget.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    main()
