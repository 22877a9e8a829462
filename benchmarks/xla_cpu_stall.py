"""Reproducer for the XLA:CPU lost-wakeup stall (issue 14 item 5; see jaxbandits/watchdog.py).

Symptom being hunted: a batched run on XLA:CPU never finishes; every XLA worker thread idles in
``Eigen::ThreadPool::WaitForWork``, the main thread blocks in ``tsl::BlockUntilReady`` under the
host copy of an output, and the process burns no CPU.  Seen with 2 forced host devices on a loaded
2-core machine (GSE, LinUCB with an LU solve, LT&S at K = 1000); one device never stalled.

What this script does.  Each *trial* is a fresh subprocess (``--child``) that makes ``--calls``
calls of one compiled program and copies every output to the host, each call guarded the way
``jaxbandits.watchdog.run_guarded`` guards the engine: poll ``is_ready`` with back-off, then copy
in a helper thread, and declare a **stall** when the process used < 1 % of a core for
``--stall-timeout`` seconds (default 15) while a result was pending.  The parent also kills a
trial after ``--trial-timeout`` seconds (counted as "timeout", a stall the guard missed).  It
reports stalls / trials per configuration (python/jax version, device count, XLA_FLAGS, JAX_*
environment), with a Clopper-Pearson 95 % upper bound on the stall rate, and calls per second.

Workloads (``--workload``):

* ``plain`` (default): plain JAX, no jaxbandits import, so it runs on old jax versions too.  A
  vmapped ``lax.while_loop`` (``--lanes`` lanes per device, lane-dependent trip counts of 20-120
  iterations) whose body does a rank-one update of a d x d matrix and an LU solve
  (``jnp.linalg.solve``) and a Cholesky solve, under ``shard_map`` over all host devices; then
  ``np.asarray`` of the output.  Many short calls = many buffer hand-overs, which is where the
  wedge was seen.
* ``gse``: the library's engine, ``simulate(GSE(budget=..., design="fwg"), sphere_gse(K=16))``,
  called repeatedly with small chunks (every chunk is one guarded dispatch + host copy).
* ``linucb``: the engine with ``LinUCB`` (LU solve per step) on a sphere instance.

Usage (repository root)::

    # 6 trials each of 1 and 2 host devices on the installed jax
    python benchmarks/xla_cpu_stall.py --trials 6 --devices 1 2
    # extra configurations: one per --config, 'ENV=VALUE ...' added to the environment;
    # an XLA flag goes in XLA_FLAGS (appended to the forced device count)
    python benchmarks/xla_cpu_stall.py --devices 2 \\
        --config "" --config "XLA_FLAGS=--xla_cpu_multi_thread_eigen=false"
    # another jax in a throwaway venv (plain workload only on versions the library does not support)
    python benchmarks/xla_cpu_stall.py --python /tmp/venv-092/bin/python --devices 2
    # the speed-up of 2 host devices over 1 on the engine (interleaved runs, same workload)
    python benchmarks/xla_cpu_stall.py --speedup --workload gse --trials 3

Trials run one after another (never in parallel; the point is the same loaded 2-core machine the
stall was seen on, and this machine is shared).  Results: see RESULTS below.

RESULTS (2-core machine shared with 5 other JAX sessions, load average ~10; 2026-11-23):
see the end of this docstring, filled in from the runs.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


# --------------------------------------------------------------------------------------- child


def _cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system


def wait_until(is_done, stall_timeout: float) -> bool:
    """Copy of jaxbandits.watchdog.wait_until (kept here so the plain workload never imports the
    library): poll until ``is_done()``; False when < 1 % of a core was used for ``stall_timeout``."""
    pause = 1e-4
    w_start, c_start = time.monotonic(), _cpu_seconds()
    while not is_done():
        time.sleep(pause)
        pause = min(2.0 * pause, 0.25)
        now = time.monotonic()
        if now - w_start >= stall_timeout:
            if _cpu_seconds() - c_start < 0.01 * (now - w_start):
                return False
            w_start, c_start = now, _cpu_seconds()
    return True


def guarded(fn, *args, stall_timeout: float):
    """fn(*args) brought to the host (np.asarray of every leaf), or None when it wedged; also
    returns where it wedged ("ready": waiting for the outputs, "copy": in the host copy)."""
    import jax
    import numpy as np

    out = fn(*args)
    leaves = [x for x in jax.tree_util.tree_leaves(out) if hasattr(x, "is_ready")]
    if not wait_until(lambda: all(x.is_ready() for x in leaves), stall_timeout):
        return None, "ready"
    box = {}

    def work():
        box["v"] = [np.asarray(x) for x in jax.tree_util.tree_leaves(out)]

    th = threading.Thread(target=work, daemon=True)
    th.start()
    if not wait_until(lambda: not th.is_alive(), stall_timeout):
        return None, "copy"
    return box["v"], ""


def _shard_map():
    import jax

    if hasattr(jax, "shard_map"):
        return jax.shard_map, {"check_vma": False}
    from jax.experimental.shard_map import shard_map

    return shard_map, {"check_rep": False}


def plain_program(lanes: int, d: int, iters: int):
    """jit(shard_map(vmap(while_loop with LU + Cholesky solves))) over all devices; the argument
    is a [D * lanes] uint32 seed vector sharded over the devices."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    devs = jax.devices()
    D = len(devs)
    mesh = Mesh(np.asarray(devs), ("d",))

    def lane(seed):
        key = jax.random.PRNGKey(seed)
        n = 4 + seed % jnp.uint32(max(iters - 3, 1))  # lane-dependent trip count: lanes finish at different times

        def cond(c):
            return c[0] < n

        def body(c):
            t, A, x, k = c
            k, sub = jax.random.split(k)
            v = jax.random.normal(sub, (d,), A.dtype)
            A = A + jnp.outer(v, v)
            y = jnp.linalg.solve(A, v)                                     # LU
            L = jnp.linalg.cholesky(A)
            z = jax.scipy.linalg.cho_solve((L, True), v)                   # Cholesky
            return t + 1, A, x + y - z + 1e-3 * y, k

        A0 = jnp.eye(d, dtype=jnp.float32)
        _, A, x, _ = jax.lax.while_loop(cond, body, (jnp.int32(0), A0, jnp.zeros(d, jnp.float32), key))
        return jnp.sum(x) + jnp.trace(A)

    def per_device(seeds):
        return jax.vmap(lane)(seeds)

    sm, kw = _shard_map()
    f = jax.jit(sm(per_device, mesh=mesh, in_specs=P("d"), out_specs=P("d"), **kw))
    sharding = NamedSharding(mesh, P("d"))

    def call(i):
        seeds = (np.arange(D * lanes, dtype=np.uint32) * 7919 + np.uint32(i * 104729)) % np.uint32(2**31)
        return f(jax.device_put(seeds, sharding))

    return call, D


def engine_program(workload: str, lanes: int, chunk: int, stall_timeout: float):
    """The library's engine: one small-chunk simulate() per call (guarded inside simulate)."""
    import jax

    from jaxbandits.algorithms.gse import GSE
    from jaxbandits.algorithms.regret import LinUCB
    from jaxbandits.engine import simulate
    from jaxbandits.instances import seeds

    inst = seeds.sphere_gse(jax.random.key(1), 16)
    alg = GSE(budget=2000, design="fwg") if workload == "gse" else LinUCB(budget=400)
    steps = alg.steps_needed(16)
    D = len(jax.devices())

    def call(i):
        return simulate(alg, inst, jax.random.key(i), chunk, max_steps=steps, lanes=lanes,
                        chunk_size=chunk, stall_timeout=stall_timeout)

    return call, D


def child(args) -> int:
    import faulthandler
    import signal

    faulthandler.register(signal.SIGUSR1, all_threads=True)
    import jax

    print("imported", flush=True)

    t0 = time.time()
    if args.workload == "plain":
        call, D = plain_program(args.lanes, args.d, args.iters)
    else:
        call, D = engine_program(args.workload, args.lanes, args.chunk, args.stall_timeout)
    # call 0 compiles; it is guarded like every other call (the engine wedged on its first chunk)
    t1 = time.time()
    for i in range(0, args.calls + 1):
        if i % 100 == 0 or args.workload != "plain":
            print(f"call {i}", flush=True)
        if args.workload == "plain":
            _, where = guarded(call, i, stall_timeout=args.stall_timeout)
        else:
            from jaxbandits.watchdog import StalledComputation

            try:
                call(i)
                where = ""
            except StalledComputation:
                where = "engine"
        if where:
            print(json.dumps({"stall": True, "call": i, "where": where, "devices": D, "jax": jax.__version__,
                              "after_s": time.time() - t0}), flush=True)
            time.sleep(600)  # let the parent inspect the wedged process (it kills it)
            os._exit(3)
        if i == 0:
            t1 = time.time()  # calls 1.. are timed (call 0 includes compilation)
    print(json.dumps({"stall": False, "calls": args.calls, "devices": D, "jax": jax.__version__,
                      "calls_per_s": args.calls / (time.time() - t1), "compile_s": t1 - t0}), flush=True)
    return 0


# -------------------------------------------------------------------------------------- parent


def clopper_pearson_upper(k: int, n: int, alpha: float = 0.05) -> float:
    """One-sided... two-sided 95 % CP upper bound on a binomial rate (bisection, no scipy needed)."""
    if k >= n:
        return 1.0
    from math import comb

    def cdf(p):
        return sum(comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(k + 1))

    lo, hi = k / n, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if cdf(mid) > alpha / 2 else (lo, mid)
    return hi


def run_trial(python: str, devices: int, env_extra: dict, args, workload: str | None = None) -> dict:
    env = dict(os.environ)
    flags = f"--xla_force_host_platform_device_count={devices}" if devices > 1 else ""
    for k, v in env_extra.items():
        if k == "XLA_FLAGS":
            flags = (flags + " " + v).strip()
        else:
            env[k] = v
    env["XLA_FLAGS"] = flags
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [python, os.path.abspath(__file__), "--child", "--workload", workload or args.workload,
           "--calls", str(args.calls), "--lanes", str(args.lanes), "--iters", str(args.iters), "--d", str(args.d), "--chunk", str(args.chunk),
           "--stall-timeout", str(args.stall_timeout)]
    t0 = time.time()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list = []
    err: list = []

    def pump(stream, sink):
        for ln in iter(stream.readline, ""):
            sink.append(ln)

    threading.Thread(target=pump, args=(p.stdout, lines), daemon=True).start()
    threading.Thread(target=pump, args=(p.stderr, err), daemon=True).start()
    r = None
    while p.poll() is None:
        time.sleep(0.5)
        stalled = any('"stall": true' in ln for ln in lines)
        if stalled or time.time() - t0 > args.trial_timeout:
            # the wedged process is still there (a stalled child waits to be inspected): measure its
            # CPU use, take Python (faulthandler) and native (gdb) stacks, then kill it
            diag = diagnose(p.pid)
            p.kill()
            p.wait()
            time.sleep(0.5)
            r = {"result": "stall" if stalled else "timeout", **diag}
            break
    time.sleep(0.2)
    js = [ln for ln in lines if ln.startswith("{")]
    if js:
        r = {**json.loads(js[-1]), **(r or {})}
        r.setdefault("result", "stall" if r["stall"] else "ok")
    elif r is None:
        r = {"result": "error", "rc": p.returncode}
    r["progress"] = lines[-1].strip()[:200] if lines else ""
    if r["result"] in ("error", "timeout", "stall"):
        r["stderr"] = "".join(err)[-3000:]
    r["wall_s"] = time.time() - t0
    return r


def _proc_cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as fh:
        f = fh.read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def diagnose(pid: int) -> dict:
    """CPU seconds the process used over 5 s, its Python stacks (SIGUSR1 -> faulthandler) and a
    summary of its native stacks (gdb, if installed): where the XLA threads sit."""
    import signal
    import shutil

    out: dict = {}
    try:
        c0 = _proc_cpu(pid)
        time.sleep(5.0)
        out["cpu_s_in_5s"] = round(_proc_cpu(pid) - c0, 3)
        os.kill(pid, signal.SIGUSR1)
        time.sleep(1.0)
    except OSError as e:
        out["diag_error"] = str(e)
        return out
    if shutil.which("gdb"):
        try:
            g = subprocess.run(["gdb", "-p", str(pid), "-batch", "-nx", "-ex", "thread apply all bt 25"],
                               capture_output=True, text=True, timeout=120)
            bt = g.stdout
            out["threads"] = bt.count("\nThread ")
            for tag in ("ParallelBatchMap", "BlockingCounter", "WaitForWork", "BlockUntilReady", "PyArray_bf_getbuffer", "CopyToHost", "futex",
                        "pthread_cond_wait", "Compile", "Execute"):
                out["bt_" + tag] = bt.count(tag)
            stamp = time.strftime("%H%M%S")
            path = f"/tmp/xla_cpu_stall_gdb_{pid}_{stamp}.txt"
            with open(path, "w") as fh:
                fh.write(bt)
            out["gdb_file"] = path
        except (subprocess.TimeoutExpired, OSError) as e:
            out["diag_error"] = str(e)
    return out


def parse_config(s: str) -> dict:
    out = {}
    for tok in shlex.split(s):
        k, _, v = tok.partition("=")
        out[k] = v
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--workload", choices=["plain", "gse", "linucb"], default="plain")
    ap.add_argument("--trials", type=int, default=6, help="fresh processes per configuration")
    ap.add_argument("--calls", type=int, default=30, help="guarded calls per trial")
    ap.add_argument("--lanes", type=int, default=256, help="vmapped lanes per device")
    ap.add_argument("--iters", type=int, default=40, help="max while_loop trips per lane (plain workload)")
    ap.add_argument("--d", type=int, default=10, help="matrix size of the plain workload")
    ap.add_argument("--chunk", type=int, default=128, help="replications per engine call")
    ap.add_argument("--devices", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--config", action="append", default=None,
                    help="'ENV=VALUE ...' added to the environment (XLA_FLAGS appended); repeatable")
    ap.add_argument("--python", default=sys.executable, help="interpreter (e.g. a venv with another jax)")
    ap.add_argument("--stall-timeout", type=float, default=15.0)
    ap.add_argument("--trial-timeout", type=float, default=240.0)
    ap.add_argument("--speedup", action="store_true",
                    help="measure calls/s of 1 vs 2 host devices, interleaved (no stall statistics)")
    ap.add_argument("--json", default=None, help="append one JSON line per trial to this file")
    ap.add_argument("--summarize", nargs="+", default=None, help="print the table from these --json files")
    args = ap.parse_args(argv)
    if args.summarize:
        summarize(args.summarize)
        return 0
    if args.child:
        return child(args)
    configs = args.config or [""]
    if args.speedup:
        rates = {1: [], 2: []}
        for t in range(args.trials):
            for dev in (1, 2):
                r = run_trial(args.python, dev, parse_config(configs[0]), args)
                print(f"trial {t} devices={dev}: {r.get('result')} {r.get('calls_per_s', float('nan')):.3f} calls/s",
                      flush=True)
                if r["result"] == "ok":
                    rates[dev].append(r["calls_per_s"])
        import statistics as st

        for dev, v in rates.items():
            if v:
                print(f"devices={dev}: mean {st.mean(v):.3f} calls/s over {len(v)} runs {['%.3f' % x for x in v]}")
        if rates[1] and rates[2]:
            print(f"speed-up 2 vs 1 devices: {st.mean(rates[2]) / st.mean(rates[1]):.2f}x "
                  f"(per-pair ratios {['%.2f' % (b / a) for a, b in zip(rates[1], rates[2])]})")
        return 0
    runs = [(cfg, dev) for cfg in configs for dev in args.devices]
    stop = set()
    for t in range(args.trials):  # interleaved: load changes hit every configuration alike
        for cfg, dev in runs:
            if (cfg, dev) in stop:
                continue
            r = run_trial(args.python, dev, parse_config(cfg), args)
            line = {"config": cfg, "devices": dev, "python": args.python, "workload": args.workload,
                    "calls": args.calls, "lanes": args.lanes, "iters": args.iters, **r}
            print(json.dumps(line), flush=True)
            if args.json:
                with open(args.json, "a") as fh:
                    fh.write(json.dumps(line) + "\n")
            if r["result"] == "error":
                stop.add((cfg, dev))  # e.g. an unknown XLA flag: no point repeating
    return 0


def summarize(paths) -> None:
    """Table of stalls / trials per (python, workload, devices, config) from --json files."""
    groups: dict = {}
    for path in paths:
        with open(path) as fh:
            for ln in fh:
                r = json.loads(ln)
                k = (r.get("jax", "?"), r["python"], r["workload"], r["devices"], r["config"] or "-")
                groups.setdefault(k, []).append(r)
    print("| jax | workload | devices | config | trials | stalls | CP95 upper | calls/s (mean) | wall s | detail |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for (ver, py, wl, dev, cfg), rs in sorted(groups.items(), key=lambda kv: tuple(map(str, kv[0]))):
        if ver == "?":
            ver = next((r["jax"] for r in rs if "jax" in r), "? (" + py + ")")
        counts = {c: sum(r["result"] == c for r in rs) for c in ("ok", "stall", "timeout", "error")}
        n = len(rs)
        bad = counts["stall"] + counts["timeout"]
        rates = [r["calls_per_s"] for r in rs if r["result"] == "ok"]
        rate = sum(rates) / len(rates) if rates else float("nan")
        wall = sum(r["wall_s"] for r in rs)
        where = "; ".join(f"call {r['call']} ({r['where']})" for r in rs if r["result"] == "stall")
        err = next((r["stderr"].strip().splitlines()[-1] for r in rs if r["result"] == "error" and r["stderr"].strip()), "")
        calls = sum(r.get("calls", 0) for r in rs if r["result"] == "ok")
        print(f"| {ver} | {wl} | {dev} | {cfg} | {n} | {bad} | {clopper_pearson_upper(bad, n):.2f} | {rate:.1f} | "
              f"{wall:.0f} | {calls} calls ok; {where} {err[:160]} |")

if __name__ == "__main__":
    sys.exit(main())
