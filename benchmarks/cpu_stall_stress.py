"""Stress test for XLA:CPU wedges: every algorithm of the library, default layout, at d = 5, 20, 50,
on 1 and 2 XLA:CPU devices; one fresh process per row, judged from outside.

jaxlib 0.10.x deadlocks when as many batched LAPACK calls run at once as there are pool threads
(:mod:`jaxbandits.watchdog`); this benchmark is the check that the installed runtime does not, for
every algorithm.  Each row runs ``simulate`` in a child process with the stall guard off
(``stall_timeout=0``: a plain blocking call, as on a supported install) and the parent watches the
child's CPU time in ``/proc``: a child that uses less than 1 % of a core for ``--stall-window``
seconds is **stalled** (its native stacks are taken with ``gdb`` when available and the frames in
``ParallelBatchMap`` counted), killed, and reported; one that outlives ``--budget`` while still
computing is **timeout**; otherwise **finished**, with its wall time and replications per second.

Instances (the linear best-arm instances of the seed papers and of Tirinzoni & Degenne 2022):

* d = 5: Soare et al.'s benchmark (seed 001 Fig. 1a, K = 6, omega = 0.1);
* d = 20: Tirinzoni & Degenne (NeurIPS 2022) Table 1, K = 50 (``seeds.tirinzoni_degenne_table1``,
  shipped with the package);
* d = 50: 100 arms uniform on the unit sphere, theta the closest arm's direction (seed 001 Fig. 1c
  family).

Top-m algorithms use m = 2 (d = 5) or 5; fixed-budget algorithms a budget of 10 K pulls.  Every run
is capped at ``--max-steps`` steps: the question is liveness, not sample complexity.

Usage (repository root; rows run one after another and append JSON lines, so a rerun skips
the rows already in the file)::

    python benchmarks/cpu_stall_stress.py --json /tmp/stress.jsonl               # everything
    python benchmarks/cpu_stall_stress.py --json /tmp/stress.jsonl --devices 1 --dims 20 --algorithms LinGame RAGE
    python benchmarks/cpu_stall_stress.py --summarize /tmp/stress.jsonl          # the table
    python benchmarks/cpu_stall_stress.py --python /path/to/other/venv/bin/python ...  # another jaxlib
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DIMS = (5, 20, 50)


def _algorithms(d: int):
    """name -> (constructor, family) for every exported algorithm, at dimension d."""
    from jaxbandits import algorithms as A

    m = 2 if d <= 5 else 5
    fc = {
        "LT&S": lambda: A.LazyTrackAndStop(), "LT&S released": lambda: A.LazyTrackAndStop.released_code(),
        "Oracle": lambda: A.Oracle(), "RAGE": lambda: A.RAGE(), "XY-static": lambda: A.XYStatic(),
        "XY-oracle": lambda: A.XYOracle(), "XY-adaptive": lambda: A.XYAdaptive(), "ALBA": lambda: A.ALBA(),
        "uniform+GLR": lambda: A.UniformGLR(), "LinGapE": lambda: A.LinGapE(), "FWS": lambda: A.FWS(),
        "TopTwo": lambda: A.TopTwo(), "LinGame": lambda: A.LinGame(),
        "Eliminate(LinGame)": lambda: A.Eliminate(A.LinGame()), "Eliminate(LT&S)": lambda: A.Eliminate(A.LazyTrackAndStop()),
        "SphereBAI": lambda: A.SphereBAI(),
    }
    topm = {
        "m-LinGapE": lambda: A.MLinGapE(m), "LinGIFA": lambda: A.LinGIFA(m), "LUCB": lambda: A.LUCB(m),
        "UGapE": lambda: A.UGapE(m), "LinGame(m)": lambda: A.LinGame(m=m),
    }
    fb = {
        "GSE": lambda B: A.GSE(budget=B), "OD-LinBAI": lambda B: A.ODLinBAI(budget=B),
        "BayesGap": lambda B: A.BayesGap(budget=B), "Peace": lambda B: A.Peace(budget=B),
        "LinUCB": lambda B: A.LinUCB(budget=B), "UCB-GLM": lambda B: A.UCBGLM(budget=B),
        "BudgetCapped(LinGapE)": lambda B: A.BudgetCapped(A.LinGapE(), budget=B),
    }
    out = {k: (v, "fixed_confidence") for k, v in fc.items()}
    out.update({k: (v, "top_m") for k, v in topm.items()})
    out.update({k: (v, "fixed_budget") for k, v in fb.items()})
    return out


def _instance(d: int, family: str):
    import jax
    import numpy as np

    from jaxbandits.instances import make_instance, seeds

    if d == 20:
        inst = seeds.tirinzoni_degenne_table1()
        X, theta = np.asarray(inst.arms), np.asarray(inst.theta)
    elif d == 5:
        inst = seeds.soare_benchmark(d=5, omega=0.1, theta_scale=1.0)
        X, theta = np.asarray(inst.arms), np.asarray(inst.theta)
    else:
        K = 50 if d == 20 else 2 * d
        inst = seeds.unit_sphere(jax.random.key(d), K, d, alpha=0.0)
        X, theta = np.asarray(inst.arms), np.asarray(inst.theta)
    return make_instance(X, theta, 1.0)


def child(name: str, d: int, reps: int, max_steps: int) -> None:
    import jax

    from jaxbandits.engine import simulate

    make, family = _algorithms(d)[name]
    inst = _instance(d, family)
    alg = make(10 * inst.num_arms) if family == "fixed_budget" else make()
    try:
        alg.validate(inst)
    except ValueError as e:
        print(json.dumps({"status": "refused", "reason": str(e).splitlines()[0][:200]}), flush=True)
        return
    t0 = time.perf_counter()
    res = simulate(alg, inst, jax.random.key(0), reps, max_steps, stall_timeout=0)
    wall = time.perf_counter() - t0
    print(json.dumps({"status": "finished", "wall_s": wall, "compile_s": res.compile_time,
                      "run_s": res.wall_time, "reps": reps, "reps_per_s": reps / max(res.wall_time, 1e-9),
                      "lanes": res.layout.lanes, "devices": res.layout.devices,
                      "frac_capped": float(res.summary()["frac_capped"])}), flush=True)


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / tick


def _stacks(pid: int) -> dict:
    if not shutil.which("gdb"):
        return {}
    try:
        txt = subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "thread apply all bt 30"],
                             capture_output=True, text=True, timeout=120).stdout
    except subprocess.TimeoutExpired:
        return {}
    lapack = sorted({w for line in txt.splitlines() for w in line.split() if w.startswith("lapack_")})
    return {"ParallelBatchMap_frames": txt.count("ParallelBatchMap"), "lapack_kernels": lapack}


def run_row(python: str, name: str, d: int, devices: int, reps: int, max_steps: int, budget: float,
            window: float) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu",
               XLA_FLAGS=(os.environ.get("XLA_FLAGS", "") + f" --xla_force_host_platform_device_count={devices}").strip())
    p = subprocess.Popen([python, __file__, "--child", name, str(d), str(reps), str(max_steps)], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t0 = time.monotonic()
    w_t, w_c = t0, 0.0
    row = {"status": "timeout"}
    while p.poll() is None:
        time.sleep(1.0)
        now = time.monotonic()
        try:
            c = _cpu_seconds(p.pid)
        except OSError:
            continue
        if now - w_t >= window:
            if c - w_c < 0.01 * (now - w_t):
                row = {"status": "stalled", "stalled_after_s": now - t0, **_stacks(p.pid)}
                p.kill()
                break
            w_t, w_c = now, c
        if now - t0 > budget:
            p.kill()
            break
    out, err = p.communicate()
    if p.returncode == 0 and out.strip():
        row = json.loads(out.strip().splitlines()[-1])
    elif row["status"] == "timeout" and p.returncode not in (None, -9):
        row = {"status": "error", "returncode": p.returncode, "stderr": err.strip().splitlines()[-1:]}
    row.update(algorithm=name, d=d, devices_requested=devices, elapsed_s=time.monotonic() - t0)
    return row


def _version(python: str) -> str:
    return subprocess.run([python, "-c", "import jax, jaxlib; print(jax.__version__, jaxlib.__version__)"],
                          capture_output=True, text=True).stdout.strip()


def summarize(paths) -> None:
    rows = [json.loads(line) for p in paths for line in open(p) if line.strip()]
    print("| jax | algorithm | d | devices | status | run s | reps/s | lanes |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r.get('jax', '?')} | {r['algorithm']} | {r['d']} | {r['devices_requested']} | {r['status']}"
              f"{' (' + ','.join(r.get('lapack_kernels', [])) + ')' if r['status'] == 'stalled' else ''} | "
              f"{r.get('run_s', float('nan')):.1f} | {r.get('reps_per_s', float('nan')):.1f} | {r.get('lanes', '-')} |")
    from collections import Counter

    print()
    for (jv, st), n in sorted(Counter((r.get("jax", "?"), r["status"]) for r in rows).items()):
        print(f"{jv}: {st} {n}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", nargs=4, metavar=("NAME", "D", "REPS", "MAX_STEPS"), help=argparse.SUPPRESS)
    ap.add_argument("--json", default="/tmp/cpu_stall_stress.jsonl")
    ap.add_argument("--python", default=sys.executable, help="interpreter (another jaxlib's venv)")
    ap.add_argument("--devices", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--dims", type=int, nargs="+", default=list(DIMS))
    ap.add_argument("--algorithms", nargs="+", default=None, help="names as in the table (default all)")
    ap.add_argument("--reps", type=int, default=64, help="replications per row (2 chunks of the default 32 lanes)")
    ap.add_argument("--max-steps", type=int, default=3000)
    ap.add_argument("--budget", type=float, default=300.0, help="seconds per row")
    ap.add_argument("--stall-window", type=float, default=20.0)
    ap.add_argument("--summarize", nargs="+", default=None)
    a = ap.parse_args()
    if a.child:
        name, d, reps, steps = a.child
        child(name, int(d), int(reps), int(steps))
        return
    if a.summarize:
        summarize(a.summarize)
        return
    sys.path.insert(0, str(ROOT))
    jv = _version(a.python)
    done = set()
    if Path(a.json).exists():
        done = {(r.get("jax"), r["algorithm"], r["d"], r["devices_requested"])
                for r in map(json.loads, filter(str.strip, open(a.json)))}
    names = a.algorithms or list(_algorithms(5))
    for devices in a.devices:
        for d in a.dims:
            for name in names:
                if (jv, name, d, devices) in done:
                    continue
                row = run_row(a.python, name, d, devices, a.reps, a.max_steps, a.budget, a.stall_window)
                row["jax"] = jv
                with open(a.json, "a") as f:
                    f.write(json.dumps(row) + "\n")
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
