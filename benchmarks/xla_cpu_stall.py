"""Reproducer for the XLA:CPU stall behind jaxbandits/watchdog.py (issue 14 item 5), and its cause.

CAUSE (found with this script; native stacks from ``gdb`` of every wedged trial).  In jaxlib
0.10.2 the LAPACK FFI kernels (seen here: ``lapack_sgetrf_ffi``, LU, and ``lapack_dsyevd_ffi``,
symmetric eigendecomposition; public reports add ``dpotrf``, Cholesky, and ``gtsv``) split a batched
call over XLA:CPU's intra-op thread pool (``jax::ParallelBatchMap``) and block the calling pool
thread in ``absl::BlockingCounter::Wait`` until the pieces are done.  That pool has one thread per
core (2 here).  With 2 host devices each device's executable runs on one pool thread; when both
reach a batched LAPACK call at the same time, both pool threads block waiting for sub-tasks queued
on the same pool, and no thread is left to run them: a deadlock.  Wedged trials show exactly that:
the two ``tf_XLAEigen`` threads in ``BlockingCounter::Wait`` <- ``ParallelBatchMap`` <-
``lapack_d*_ffi`` <- ``CustomCallThunk::Execute``, the two PjRt execute threads in
``tsl::BlockUntilReady``, every other thread idle in ``WaitForWork``, 0.0 s of CPU in 5 s.  Hence
the earlier observations: only with 2 forced host devices, only kernels with a batched linear
solve / eigh (GSE's design solver, LinUCB's LU), "timing dependent" (both devices must enter a
LAPACK call together), re-dispatch in the same process wedges too (the pool threads never come
back).  jaxlib 0.9.2 and older have no such path in ``jaxlib/cpu/_lapack.so`` (no
``BlockingCounter``/``ParallelBatchMap`` symbols; checked with ``strings`` on 0.9.2, 0.8.3,
0.6.2, 0.4.38) and never stalled here.  (Public reports agree: the batch-parallel LAPACK path
appeared in jaxlib 0.10.0 and is compiled out of open-source builds from 0.11.1, which this
project's package index does not offer; it lists 0.4.13 ... 0.10.2.)

What the script does.  Each *trial* is a fresh subprocess (``--child``) that makes ``--calls``
calls of one compiled program (call 0 includes compilation) and copies every output to the host,
each call guarded the way ``jaxbandits.watchdog.run_guarded`` guards the engine: poll
``is_ready`` with back-off, then copy in a helper thread, and declare a **stall** when the process
used < 1 % of a core for ``--stall-timeout`` seconds (default 15) while a result was pending.  A
stalled child stays alive; the parent measures its CPU use over 5 s, takes its Python stacks
(SIGUSR1 -> faulthandler) and native stacks (``gdb``, saved to /tmp/xla_cpu_stall_gdb_*.txt,
with counts of ParallelBatchMap / BlockingCounter / WaitForWork frames in the JSON line), then
kills it.  A trial that outlives ``--trial-timeout`` s is killed and counted as "timeout".  The
table gives stalls / trials per (jax version, workload, devices, config) with a two-sided 95 %
Clopper-Pearson upper bound on the stall rate, calls/s of the completed trials and, for engine
workloads, replications/s (calls/s x ``--chunk``).

Workloads (``--workload``):

* ``plain`` (default): plain JAX, no jaxbandits import, so it runs on old jax versions too.
  ``jit(shard_map(vmap(lane)))`` over all host devices, ``--lanes`` (256) lanes per device; a lane
  is a ``lax.while_loop`` with a lane-dependent trip count (4 .. ``--iters``) whose body adds a
  random rank-one term to a d x d matrix (d = 10) and solves with it by LU
  (``jnp.linalg.solve``) and by Cholesky (``cho_solve``); then ``np.asarray`` of the output.
* ``twin``: two independent batched LAPACK calls (Cholesky and LU solve of [lanes, d, d]
  batches) in one jitted program without loop or shard_map: probes whether one device can
  exhaust the pool by running both concurrently.
* ``gse`` / ``linucb``: the library's engine, ``simulate`` of ``GSE(budget=2000, design="fwg")``
  or ``LinUCB(budget=400)`` on ``seeds.sphere_gse(K=16)`` (d = 10), one chunk of ``--chunk``
  replications per call (guarded inside ``simulate``); needs a jax the library supports.

Usage (repository root; trials run one after another, never in parallel)::

    python benchmarks/xla_cpu_stall.py --trials 3 --devices 2 1 --json /tmp/stall.jsonl
    # configurations: 'ENV=VALUE ...' added to the child's environment (XLA_FLAGS is appended to
    # the forced device count), one --config each
    python benchmarks/xla_cpu_stall.py --devices 2 --json /tmp/stall.jsonl \\
        --config "XLA_FLAGS=--xla_cpu_multi_thread_eigen=false" --config "JAX_CPU_ENABLE_ASYNC_DISPATCH=false"
    # another jax in a throwaway venv (python3 -m venv /tmp/v092 && /tmp/v092/bin/pip install
    # jax==0.9.2 jaxlib==0.9.2 numpy; add pandas tqdm scipy optax for the engine workloads)
    python benchmarks/xla_cpu_stall.py --python /tmp/v092/bin/python --devices 2 --json /tmp/stall.jsonl
    # engine throughput, 1 vs 2 devices: run single trials interleaved, then summarize
    python benchmarks/xla_cpu_stall.py --workload gse --lanes 128 --chunk 512 --calls 4 --trials 1 \\
        --devices 1 --json /tmp/speed.jsonl      # (repeat with --devices 2 / other --python)
    python benchmarks/xla_cpu_stall.py --summarize /tmp/stall.jsonl /tmp/speed.jsonl

RESULTS
(2026-11-23, 17:30-18:20 UTC, on this project's 2-core machine shared with 5 other JAX sessions,
load average 7-13; stall timeout 15 s; one row per (jax, workload, lanes per device[/chunk],
devices, config); a stall always came at call 0, i.e. on the first execution, 22-40 s in.)

Stalls (all wedged trials: 0.0 CPU-s in 5 s, gdb shows 2 pool threads in ParallelBatchMap ->
BlockingCounter::Wait under lapack_sgetrf_ffi (plain) or lapack_dsyevd_ffi (GSE)):

| jax | workload | lanes(/chunk) | devices | config | trials | stalls | CP95 upper | calls |
|---|---|---|---|---|---|---|---|---|
| 0.10.2 | plain | 256 | 1 | - | 3 | 0 | 0.71 | 90 |
| 0.10.2 | plain | 256 | 2 | - | 4 | 4 | 1.00 (lower 0.40) | 0 |
| 0.10.2 | plain | 256 | 2 | --xla_cpu_multi_thread_eigen=false | 2 | 2 | 1.00 | 0 |
| 0.10.2 | plain | 256 | 2 | --xla_cpu_use_thunk_runtime=false | 2 | 2 | 1.00 | 0 |
| 0.10.2 | plain | 256 | 2 | --xla_cpu_enable_concurrency_optimized_scheduler=false | 2 | 2 | 1.00 | 0 |
| 0.10.2 | plain | 256 | 2 | --xla_cpu_parallel_codegen_split_count=1 | 2 | 2 | 1.00 | 0 |
| 0.10.2 | plain | 256 | 2 | JAX_CPU_ENABLE_ASYNC_DISPATCH=false | 2 | 2 | 1.00 | 0 |
| 0.10.2 | plain | 32 (d = 6) | 1 | - | 8 | 0 | 0.37 | 24000 |
| 0.10.2 | plain | 32 (d = 6) | 2 | - | 8 | 0 | 0.37 | 24000 |
| 0.10.2 | twin | 256, 512 (d = 10, 24) | 1 | - | 2 | 0 | 0.84 | 500 |
| 0.10.2 | gse | 128/512, 512/8192 | 1 | - | 8 | 0 | 0.37 | 32 |
| 0.10.2 | gse | 128/512 | 2 | - | 1 | 1 | 1.00 | 0 |
| 0.10.2 | gse | 256/512 | 2 | - | 1 | 1 (first run, killed at 300 s) | 1.00 | 0 |
| 0.10.2 | linucb | 256/1024 | 1 | - | 3 | 0 | 0.71 | 9 |
| 0.10.2 | linucb | 256/1024 | 2 | - | 2 | 2 | 1.00 | 0 |
| 0.9.2 | plain | 256 | 2 | - | 7 | 0 | 0.41 | 210 |
| 0.9.2 | gse | 128/512, 512/8192 | 2 | - | 7 | 0 | 0.41 | 28 |
| 0.9.2 | linucb | 256/1024 | 2 | - | 3 | 0 | 0.71 | 9 |
| 0.8.3 | plain | 256 | 2 | - | 3 | 0 | 0.71 | 90 |
| 0.6.2 | plain | 256 | 2 | - | 3 | 0 | 0.71 | 90 |
| 0.4.38 | plain | 256 | 2 | - | 3 | 0 | 0.71 | 90 |

On 0.10.2 with 2 host devices the stall is deterministic here once the LAPACK batch is large
(256 lanes x 10 x 10: 4/4 plain, 2/2 GSE, 2/2 LinUCB); no XLA flag or JAX option tried avoids it
(``intra_op_parallelism_threads`` is not an XLA:CPU flag in 0.10.2: no such string in
libjax_common.so; the pool size follows the process's CPU affinity).  Small batches (32 lanes,
d = 6) never stalled in 24000 calls: below some size the kernel does not split the batch.  One
device never stalled (0/24 trials across workloads on 0.10.2), and two independent batched LAPACK calls in
one single-device program did not either (``twin``, 500 calls).  jaxlib 0.9.2, 0.8.3, 0.6.2 and
0.4.38 never stalled on 2 devices (0/16 plain trials, and 0/10 engine trials on 0.9.2).

Throughput, 1 vs 2 host devices (engine, ``--lanes 512 --chunk 8192 --calls 4`` for GSE and
``--lanes 256 --chunk 1024 --calls 3`` for LinUCB; single trials interleaved 0.10.2/1 dev,
0.9.2/1 dev, 0.9.2/2 dev; replications per second, mean +- SE over trials):

| jax | devices | GSE reps/s (5 trials) | LinUCB reps/s (3 trials) |
|---|---|---|---|
| 0.10.2 | 1 | 6993 +- 225 | 911 +- 85 |
| 0.9.2 | 1 | 5663 +- 305 | 1058 +- 103 |
| 0.9.2 | 2 | 5355 +- 140 | 842 +- 8 |

No speed-up from the second device on this machine: the benchmark process got 0.44-0.48 cores
(CPU-s / wall-s, all three configurations) because the other sessions saturate both cores, so
there was no idle core to use.  Per CPU-second, 2 devices on 0.9.2 did as well as 1 (GSE 12000
vs 11000 reps per CPU-s); 0.10.2 on one device did 14800 per CPU-s.  The speed-up of one device
per core must be measured on an idle multi-core machine; these numbers do not support it.
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


def twin_program(lanes: int, d: int):
    """Two independent batched LAPACK calls in one program, no loop and no shard_map: a Cholesky
    factorisation of one [lanes, d, d] batch and an LU solve with another.  XLA:CPU's thunk
    executor may run independent thunks concurrently, so this probes the same pool exhaustion
    on a single device."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    @jax.jit
    def f(seed):
        k1, k2, k3 = jax.random.split(jax.random.PRNGKey(seed), 3)
        G = jax.random.normal(k1, (lanes, d, d), jnp.float32)
        H = jax.random.normal(k2, (lanes, d, d), jnp.float32)
        v = jax.random.normal(k3, (lanes, d), jnp.float32)
        L = jnp.linalg.cholesky(G @ jnp.swapaxes(G, 1, 2) + d * jnp.eye(d))
        x = jnp.linalg.solve(H + d * jnp.eye(d), v[..., None])[..., 0]
        return jnp.sum(L, axis=(1, 2)) + jnp.sum(x, axis=1)

    def call(i):
        return f(np.uint32(i))

    return call, len(jax.devices())


def engine_program(workload: str, lanes: int, chunk: int, stall_timeout: float):
    """The library's engine: one small-chunk simulate() per call (guarded inside simulate)."""
    import jax

    from jaxbandits.algorithms.fixed_budget.gse import GSE
    from jaxbandits.algorithms.fixed_budget.regret import LinUCB
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
    elif args.workload == "twin":
        call, D = twin_program(args.lanes, args.d)
    else:
        call, D = engine_program(args.workload, args.lanes, args.chunk, args.stall_timeout)
    # call 0 compiles; it is guarded like every other call (the engine wedged on its first chunk)
    t1 = time.time()
    for i in range(0, args.calls + 1):
        if i % 100 == 0 or args.workload in ("gse", "linucb"):
            print(f"call {i}", flush=True)
        if args.workload in ("plain", "twin"):
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
            t1, c1 = time.time(), _cpu_seconds()  # calls 1.. are timed (call 0 includes compilation)
    print(json.dumps({"stall": False, "calls": args.calls, "devices": D, "jax": jax.__version__,
                      "calls_per_s": args.calls / (time.time() - t1), "compile_s": t1 - t0,
                      "cores_used": (_cpu_seconds() - c1) / (time.time() - t1)}), flush=True)
    return 0


# -------------------------------------------------------------------------------------- parent


def clopper_pearson_upper(k: int, n: int, alpha: float = 0.05) -> float:
    """Two-sided 95 % Clopper-Pearson upper bound on a binomial rate (bisection; the old-jax venvs have no scipy)."""
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
           "--calls", str(args.calls), "--lanes", str(args.lanes), "--iters", str(args.iters), "--d", str(args.d),
           "--chunk", str(args.chunk),
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
            for tag in ("ParallelBatchMap", "BlockingCounter", "WaitForWork", "BlockUntilReady",
                        "PyArray_bf_getbuffer", "CopyToHost", "futex",
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
    ap.add_argument("--workload", choices=["plain", "twin", "gse", "linucb"], default="plain")
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
    ap.add_argument("--json", default=None, help="append one JSON line per trial to this file")
    ap.add_argument("--summarize", nargs="+", default=None, help="print the table from these --json files")
    args = ap.parse_args(argv)
    if args.summarize:
        summarize(args.summarize)
        return 0
    if args.child:
        return child(args)
    configs = args.config or [""]
    runs = [(cfg, dev) for cfg in configs for dev in args.devices]
    stop = set()
    for t in range(args.trials):  # interleaved: load changes hit every configuration alike
        for cfg, dev in runs:
            if (cfg, dev) in stop:
                continue
            r = run_trial(args.python, dev, parse_config(cfg), args)
            line = {"config": cfg, "devices": dev, "python": args.python, "workload": args.workload,
                    "calls": args.calls, "lanes": args.lanes, "iters": args.iters, "chunk": args.chunk, **r}
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
                size = f"{r.get('lanes')}" + (f"/{r.get('chunk')}" if r["workload"] in ("gse", "linucb") else "")
                k = (r.get("jax", "?"), r["python"], r["workload"], size, r["devices"], r["config"] or "-")
                groups.setdefault(k, []).append(r)
    print("| jax | workload | lanes(/chunk) | devices | config | trials | stalls | CP95 upper | calls/s (mean) "
          "| reps/s (engine) "
          "| wall s | detail |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (ver, py, wl, size, dev, cfg), rs in sorted(groups.items(), key=lambda kv: tuple(map(str, kv[0]))):
        if ver == "?":
            ver = next((r["jax"] for r in rs if "jax" in r), "? (" + py + ")")
        counts = {c: sum(r["result"] == c for r in rs) for c in ("ok", "stall", "timeout", "error")}
        n = len(rs)
        bad = counts["stall"] + counts["timeout"]
        rates = [r["calls_per_s"] for r in rs if r["result"] == "ok"]
        rate = sum(rates) / len(rates) if rates else float("nan")
        ok = [r for r in rs if r["result"] == "ok"]
        reps = "-" if wl in ("plain", "twin") else ", ".join(f"{r['calls_per_s'] * r['chunk']:.0f}" for r in ok)
        wall = sum(r["wall_s"] for r in rs)
        where = "; ".join(f"call {r['call']} ({r['where']})" for r in rs if r["result"] == "stall")
        errs = [r["stderr"].strip() for r in rs if r["result"] == "error" and r["stderr"].strip()]
        err = errs[0].splitlines()[-1] if errs else ""
        calls = sum(r.get("calls", 0) for r in rs if r["result"] == "ok")
        cores = [r["cores_used"] for r in rs if "cores_used" in r]
        if cores:
            where = f"cores used {sum(cores) / len(cores):.2f}; " + where
        print(f"| {ver} | {wl} | {size} | {dev} | {cfg} | {n} | {bad} | {clopper_pearson_upper(bad, n):.2f} | "
              f"{rate:.1f} | {reps} | "
              f"{wall:.0f} | {calls} calls ok; {where} {err[:160]} |")

if __name__ == "__main__":
    sys.exit(main())
