"""Every algorithm of the library on its seed instance, on one accelerator and on the CPU, in
commands short enough for a 30-minute lease of a GPU.

One row per (algorithm, platform, lanes): replications per second with everything else at its
default (``simulate`` chooses chunks, steps per block and solve batching; compilation excluded),
replication-steps per second, lane efficiency (useful replication-steps / lane-steps), the row's
peak device memory (``memory_stats()["peak_bytes_in_use"]``: every row runs in its own process, so
it is that row's peak; the CPU backend reports none), the compiled program's bytes (XLA's memory
analysis), the compile time and the layout, with the versions, XLA flags and commit.

How a lease is used: every row is a subprocess with a time budget (``--row-budget``); it runs
replications chunk by chunk until at least 16 x lanes replications are done or its budget is
spent, and writes ``OUT/<row>.json`` when it finishes.  ``run`` skips the rows whose JSON exists
and stops starting rows after ``--total`` seconds, so the same command, repeated, finishes the
table in pieces of at most 9 minutes; one failed row (an error, an out-of-memory, a timeout) is
written as such and never loses the others.  On the accelerator each algorithm runs at the
default lanes and at each of ``--lanes`` (a lane sweep); the CPU column is a separate command,
with few replications and its own budget.

Instances: the seed instance each algorithm was written for (seed 000 many-arms for LT&S, seed 001
Soare d = 5 for the elimination family, FWS, Top Two and LinGame, seed 003 top-m instances for the
GIFA family, seed 002 fixed-budget instances for GSE / OD-LinBAI / BayesGap / Peace / LinUCB /
UCB-GLM, a sphere-uniform instance for the uniform GLR and elimination, seed 000 Sec 4.2's rotated
basis for SphereBAI).

Usage, on a machine with one GPU (each command at most 9 minutes; repeat it until it says
"all rows done")::

    python benchmarks/devices.py run --out devices_h100 --total 500
    python benchmarks/devices.py run --out devices_h100 --platform cpu --total 500
    python benchmarks/devices.py table devices_h100

``--only NAME ...`` restricts the rows, ``--lanes`` with no value drops the lane sweep (default
lanes only), ``--quick`` shrinks the instances (LT&S K = 100) for a smoke test on a CPU.

In a lease of any length, one command does the rows in the order that matters (the rows with
targets first, each with the time it needs, then every other row at its default lanes, then the
lane sweep), writes ``table.md`` and ``rows.json`` (every row in one file) in ``--out``, and is
repeated until it says "all rows done" (a 15-minute lease, a start of one to two minutes
included, holds one command of about 9 minutes)::

    python benchmarks/devices.py lease --out devices_h100 --total 480

"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import re
import subprocess
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


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def peak_bytes(device) -> int | None:
    try:
        st = device.memory_stats() or {}
    except Exception:  # backends without memory statistics
        return None
    return st.get("peak_bytes_in_use")


def environment() -> dict:
    """Versions, flags, commit and device of this process."""
    import jax
    import jaxlib

    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10,
                                cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip() or None
    except Exception:
        commit = None
    plugins = {}
    for mod in ("jax_cuda12_plugin", "jax_cuda13_plugin"):
        try:
            plugins[mod] = __import__(mod).__version__
        except Exception:
            pass
    dev = jax.devices()[0]
    return dict(jax=jax.__version__, jaxlib=jaxlib.__version__, plugins=plugins, python=sys.version.split()[0],
                xla_flags=os.environ.get("XLA_FLAGS", ""), commit=commit, device_kind=dev.device_kind,
                platform=dev.platform, device_count=len(jax.devices()))


def measure_row(w: Workload, platform: str, lanes: int | None, budget: float, min_reps: int, save=None) -> dict:
    """Replications of ``w`` chunk by chunk (one program: the layout is fixed by the first call)
    until ``min_reps`` are done or ``budget`` seconds are spent; ``save(row)`` receives the row so
    far after every chunk (a row cut short by its time limit keeps what it measured).

    The first call runs one wave, a task on every lane: it compiles (timed apart) and measures at
    once, where a lone first replication would hold every lane for a whole replication's steps
    and measure nothing (22,600 steps for XY-adaptive on Soare d = 5).  Each later call runs as
    many whole waves as the rate so far says fit in the budget left, and none when not one does.
    """
    import jax

    from jaxbandits.engine import layout as policy
    from jaxbandits.engine import simulate
    from jaxbandits.instances.base import as_batch

    devices = jax.devices(platform)[:1]
    n_reps = max(min_reps, 1)
    if lanes is None:  # the default for the whole row, as simulate would choose it for n_reps tasks
        with jaxbandits_precision():
            inst = w.algorithm.prepare(as_batch(w.instance))
            lanes = policy.choose_lanes(platform if platform == "cpu" else devices[0].platform,
                                        policy.lane_bytes(w.algorithm, inst, devices[0].platform),
                                        policy.free_memory(devices[0]),
                                        inst, tasks=n_reps)
    t_start = time.perf_counter()
    done = wall = useful = lane_steps = compile_s = 0
    samples, stopped, layout, row = [], [], None, None
    start = 0
    while start < n_reps:
        if layout is None:
            count = min(n_reps, lanes)
        else:
            wave = min(lanes, n_reps - start)
            fits = done / wall * (budget - (time.perf_counter() - t_start)) if wall else float("inf")
            if fits < wave:
                break
            per_call = layout.devices * layout.chunk_per_device
            count = min(n_reps - start, per_call, max(wave, int(fits) // lanes * lanes))
        tasks = list(range(start, start + count))
        r = simulate(w.algorithm, w.instance, jax.random.key(1), n_reps, w.max_steps, record_pulls=False,
                     devices=devices, lanes=lanes, tasks=tasks)
        if layout is None:
            layout, lanes = r.layout, r.lanes
        compile_s += r.compile_time
        wall += r.wall_time
        useful += r.useful_steps
        lane_steps += r.lane_steps
        done += len(tasks)
        samples += r.samples[r.ran].tolist()
        stopped += r.stopped[r.ran].tolist()
        start += len(tasks)
        row = _summary(platform, layout, done, wall, useful, lane_steps, compile_s, devices, samples, stopped,
                       time.perf_counter() - t_start > budget)
        if save is not None:
            save(row)
    return row


def _summary(platform, layout, done, wall, useful, lane_steps, compile_s, devices, samples, stopped, cut):
    return dict(platform=platform, lanes=layout.lanes, reps=int(done), reps_per_s=done / wall if wall else None,
                rep_steps_per_s=useful / wall if wall else None, efficiency=useful / lane_steps if lane_steps else None,
                compile_s=compile_s, wall_s=wall, peak_bytes=peak_bytes(devices[0]),
                program_bytes=layout.program_bytes, layout=dataclasses.asdict(layout),
                mean_samples=sum(samples) / len(samples), stopped=sum(stopped) / len(stopped),
                budget_spent=cut)


def jaxbandits_precision():
    from jaxbandits import precision

    return precision.context("float64")


def _mib(b):
    return "n/a" if b is None else f"{b / 2**20:.1f}"


def table(rows: list[dict]) -> str:
    head = ("| algorithm, instance | platform | lanes | reps | reps/s | rep-steps/s | lane eff. | peak MiB "
            "| program MiB | compile s |")
    out = [head, "|" + " --- |" * (head.count("|") - 1)]
    for r in sorted(rows, key=lambda r: (r["name"], r["platform"], r.get("lanes_asked") or 0)):
        if "error" in r:
            out.append(f"| {r['name']} | {r['platform']} | {r.get('lanes_asked') or 'default'} | failed: "
                       f"{r['error'][:100]} |" + " |" * 6)
            continue
        out.append(f"| {r['name']} | {r['platform']} | {r['lanes']:,} | {r['reps']:,} | {r['reps_per_s']:,.1f} "
                   f"| {r['rep_steps_per_s']:,.0f} | {r['efficiency']:.2f} | {_mib(r['peak_bytes'])} "
                   f"| {_mib(r['program_bytes'])} | {r['compile_s']:.1f} |")
    return "\n".join(out)


def _row_path(out: str, name: str, platform: str, lanes: int | None) -> str:
    return os.path.join(out, f"{slug(name)}__{platform}__{lanes or 'default'}.json")


def row_main(args) -> int:
    """One row in this process: writes its JSON (or the error) and exits."""
    import jaxbandits.precision

    jaxbandits.precision.enable_globally()  # the benchmark's own arrays in float64 too
    w = next(w for w in workloads(args.quick) if w.name == args.name)
    path = _row_path(args.out, w.name, args.platform, args.lanes)
    row = dict(name=w.name, platform=args.platform, lanes_asked=args.lanes, env=environment())

    def save(part, complete=False):
        with open(path + ".tmp", "w") as f:
            json.dump(dict(row, **part, complete=complete), f, indent=1)
        os.replace(path + ".tmp", path)

    min_reps = w.quick_reps if args.platform == "cpu" else 16 * (args.lanes or 4096)
    try:
        save(measure_row(w, args.platform, args.lanes, args.budget, min_reps, save=save), complete=True)
    except Exception as e:  # written, so that a rerun does not repeat a failing row
        save(dict(error=f"{type(e).__name__}: {str(e)[:500]}"))
    return 0


#: the rows with targets, first in a lease, and the seconds each needs on an H100 with defaults
#: (compile + one wave at 16,384 lanes, measured 2026-11-26: LT&S compiles in 70 s, XY-adaptive's
#: 17,600 steps per replication take about 2 ms each)
PRIORITY = (("LT&S", 150.0), ("RAGE", 90.0), ("m-LinGapE", 60.0), ("XY-adaptive", 240.0))


def _rows_env() -> dict:
    """The environment of the row processes; this process then lists the workloads on the CPU,
    so that it takes none of the accelerator's memory (a process that touches a GPU reserves most
    of it, leaving the rows a fraction)."""
    env = dict(os.environ)
    os.environ["JAX_PLATFORMS"] = "cpu"
    return env


def _run_rows(todo, out: str, platform: str, quick: bool, total: float, env: dict) -> bool:
    """Runs the rows of ``todo`` ((name, lanes, seconds) each) not yet in ``out``, each in its own
    process with its time limit, until the next would end after ``total`` seconds; returns
    whether every row is done."""
    t0 = time.perf_counter()
    left = [r for r in todo if not os.path.exists(_row_path(out, r[0], platform, r[1]))]
    print(f"# {len(todo) - len(left)} of {len(todo)} rows already in {out}", flush=True)
    for started, (name, lanes, budget) in enumerate(left):
        spent = time.perf_counter() - t0
        if started and spent + budget > total:
            print(f"# time budget spent ({spent:.0f} s): run the same command again", flush=True)
            return False
        cmd = [sys.executable, os.path.abspath(__file__), "row", name, "--out", out, "--platform", platform,
               "--budget", str(budget * 0.6)] + (["--lanes", str(lanes)] if lanes else []) + (
            ["--quick"] if quick else [])
        row_env = dict(env)
        if platform == "cpu":
            row_env["JAX_PLATFORMS"] = "cpu"
        path = _row_path(out, name, platform, lanes)
        t = time.perf_counter()
        try:
            subprocess.run(cmd, timeout=budget, env=row_env, check=False)
        except subprocess.TimeoutExpired:  # a partial row (chunks done before the limit) is kept
            if not os.path.exists(path):
                with open(path, "w") as f:
                    json.dump(dict(name=name, platform=platform, lanes_asked=lanes,
                                   error=f"timed out after {budget:.0f} s (compile + run)"), f)
        if os.path.exists(path):
            with open(path) as f:
                r = json.load(f)
            msg = r.get("error") or (f"{r['reps_per_s']:,.1f} reps/s at {r['lanes']} lanes, efficiency "
                                     f"{r['efficiency']:.2f}, peak {_mib(r['peak_bytes'])} MiB")
        else:
            msg = "no result (the process died)"
        print(f"  {name} [{platform}, lanes {lanes or 'default'}] ({time.perf_counter() - t:.0f} s): {msg}",
              flush=True)
    print("# all rows done", flush=True)
    return True


def _matches(name: str, patterns) -> bool:
    return any(s.lower() in name.lower() for s in patterns)


def run_main(args) -> int:
    os.makedirs(args.out, exist_ok=True)
    env = _rows_env()
    todo = []
    for w in workloads(args.quick):
        if args.only and not _matches(w.name, args.only):
            continue
        sweep = [None] if args.platform == "cpu" else [None] + list(args.lanes)
        todo += [(w.name, lanes, args.row_budget) for lanes in sweep]
    _run_rows(todo, args.out, args.platform, args.quick, args.total, env)
    return 0


def lease_main(args) -> int:
    """The whole table in the order a short lease wants it: the rows with targets (``PRIORITY``,
    each with its own time limit), every other row at its default lanes, then the lane sweep;
    ``table.md`` and ``rows.json`` (every row in one file) written in ``--out`` at the end."""
    os.makedirs(args.out, exist_ok=True)
    env = _rows_env()
    names = [w.name for w in workloads(args.quick)]
    budget = {n: next((b for k, b in PRIORITY if n.startswith(k)), args.row_budget) for n in names}
    first = [n for k, _ in PRIORITY for n in names if n.startswith(k)]
    todo = [(n, None, budget[n]) for n in first]
    todo += [(n, None, args.row_budget) for n in names if n not in first]
    if args.platform != "cpu":
        todo += [(n, lanes, budget[n]) for n in first + [n for n in names if n not in first] for lanes in args.lanes]
    done = _run_rows(todo, args.out, args.platform, args.quick, args.total, env)
    rows = _read_rows(args.out)
    with open(os.path.join(args.out, "rows.json"), "w") as f:
        json.dump(rows, f, indent=1)
    with open(os.path.join(args.out, "table.md"), "w") as f:
        f.write(_table_text(rows) + "\n")
    print(f"# {'all rows done' if done else 'rows left: run the same command again'}; "
          f"{os.path.join(args.out, 'table.md')} and rows.json written", flush=True)
    return 0


def _read_rows(out: str) -> list[dict]:
    rows = []
    for fn in sorted(os.listdir(out)):
        if fn.endswith(".json") and "__" in fn:
            with open(os.path.join(out, fn)) as f:
                rows.append(json.load(f))
    return rows


def _table_text(rows: list[dict]) -> str:
    envs = {json.dumps(r.get("env", {}), sort_keys=True) for r in rows if r.get("env")}
    return "\n".join([f"# {e}" for e in envs] + [table(rows)])


def table_main(args) -> int:
    print(_table_text(_read_rows(args.out)))
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run the rows not yet in --out, each in its own process")
    r.add_argument("--out", required=True)
    r.add_argument("--platform", default="gpu", help="gpu (the accelerator) or cpu")
    r.add_argument("--lanes", type=int, nargs="*", default=[4096, 16384, 65536], help="lane sweep (accelerator)")
    r.add_argument("--row-budget", type=float, default=150.0, help="seconds per row, compilation included")
    r.add_argument("--total", type=float, default=500.0, help="stop starting rows after this many seconds")
    r.add_argument("--only", nargs="*", default=None, help="rows whose name contains one of these")
    r.add_argument("--quick", action="store_true", help="small instances: a smoke test on a CPU")
    e = sub.add_parser("lease", help="every row, those with targets first, then the lane sweep; writes "
                                     "table.md and rows.json in --out")
    e.add_argument("--out", required=True)
    e.add_argument("--platform", default="gpu", help="gpu (the accelerator) or cpu")
    e.add_argument("--lanes", type=int, nargs="*", default=[4096, 65536], help="lane sweep (accelerator)")
    e.add_argument("--row-budget", type=float, default=90.0, help="seconds per row without a target")
    e.add_argument("--total", type=float, default=500.0, help="stop starting rows after this many seconds")
    e.add_argument("--quick", action="store_true", help="small instances: a smoke test on a CPU")
    o = sub.add_parser("row", help="one row in this process (used by run and lease)")
    o.add_argument("name")
    o.add_argument("--out", required=True)
    o.add_argument("--platform", default="gpu")
    o.add_argument("--lanes", type=int, default=None)
    o.add_argument("--budget", type=float, default=90.0)
    o.add_argument("--quick", action="store_true")
    t = sub.add_parser("table", help="print the table of the rows in --out")
    t.add_argument("out")
    args = p.parse_args(argv)
    return {"run": run_main, "lease": lease_main, "row": row_main, "table": table_main}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
