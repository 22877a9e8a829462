"""What every algorithm's chunk program costs on an NVIDIA H100, from the compiled program alone.

XLA compiles for an H100 without one: with the CUDA plugin installed (``pip install -e
".[gpu-model]"``; never needed to use the library) and ``JAX_PLATFORMS=cpu``, a device made by
``jax.experimental.topologies.get_topology_desc`` from an H100 target description receives the
engine's chunk runner, lowered exactly as :func:`jaxbandits.engine.simulate` lowers it for an
accelerator (accelerator lanes, steps per block and batched solves).  The optimised GPU HLO is
then read, per algorithm on its seed instance (``benchmarks/devices.py``'s workloads):

* **kernels per step**: operations that launch a kernel (fusions, library calls, copies, sorts,
  ...), in the engine's block divided by its steps, loops with a known trip count multiplied out;
* **host syncs per step**: a ``while`` whose trip count XLA cannot infer copies its predicate to the
  host and waits, every iteration; a ``conditional`` does the same once.  Loops that remain inside
  a step are counted at ``--unknown-trips`` iterations (1 by default: a lower bound on the cost);
* **loops left**: the data-dependent ``while`` loops inside a step, named by the JAX operation they
  come from;
* **bytes per lane** (:func:`jaxbandits.engine.layout.lane_bytes`), **lanes on 80 GB**
  (:func:`jaxbandits.engine.layout.choose_lanes` with the H100's memory) and the compiled program's bytes
  at those lanes (XLA's memory analysis: arguments, outputs and temporaries);
* **solver calls per step**: of the kernels, the batched dense solver calls of cuSOLVER and cuBLAS
  (Cholesky, LU, eigendecompositions, triangular solves; not matrix products): on small matrices
  they cost a GPU far more than a kernel launch (:data:`T_SOLVER`);
* **predicted replications/s**: ``lanes * efficiency / (steps per replication * step time)`` with
  step time ``kernels * T_KERNEL + syncs * T_SYNC + HBM bytes / BANDWIDTH + solver entries *
  T_SOLVER`` (HBM bytes: operands and results of every kernel of a step, except what a kernel
  updates in place, :func:`kernel_bytes`; solver entries: the
  entries of the solver calls' matrices, lanes * d^2 for a call batched over the lanes, d^2 for
  one on a matrix the lanes share).  Steps per replication come from a short CPU run
  (``--reps``); lane efficiency is taken as 0.9.

The constants are fitted by hand to H100 measurements of 2026-11-23 (jax 0.11.2, the library at
93f9a23, one step per iteration of the engine's loop), with the model applied to the programs as
they were then: m-LinGapE top-m, 47,488 replications/s at 100,000 lanes (83 kernels and 2 syncs per
step, as this script counts them on that version; 3,261 steps per replication) is predicted at
57,900 (1.22x); LT&S at K = 1000, 1,459 per second at 4,096 lanes with batched solves (about
3,650 kernels and 164 syncs per step once its Frank-Wolfe iterations are counted; 473 steps) at
1,220 (0.84x).  The RAGE figure (87 per second) was taken at lanes that were not recorded and does
not constrain them.  Two points and three constants: starting points.

Checked against an H100 on 2026-11-26 (``benchmarks/devices.py``, 16,384 lanes,
docs/measurements/2026-11-26-h100-device-run.md): where a step has no ``switch`` the step time is
within 15-30 % (m-LinGapE 0.068 ms predicted, 0.054 measured; XY-adaptive 1.72 against 2.01);
where it has (LT&S, RAGE) the costliest branch
and the whole-operand byte count make it 4-20 times too long, so their rates are lower bounds.
Those two switch-free rows alone would give T_KERNEL 0.75 us and 1.9 TB/s; the constants are
kept until a lane sweep gives more points than unknowns.

Usage (in an environment with the ``gpu-model`` extra)::

    python benchmarks/gpu_model.py [--only NAME ...] [--json PATH] [--reps N] [--lanes L]
    python benchmarks/gpu_model.py --study [--only NAME ...] --json study.json    # the study table, predicted
    python benchmarks/gpu_model.py --study --json new.json --check study.json     # the regression check
    python benchmarks/gpu_model.py --only "Top Two" FWS XY-adaptive LinGame "uniform + GLR" --lanes 16384 \
        --reps 0 --json new.json --check docs/measurements/2026-11-30-launch-bound-baseline-lingame-in-place.json

``--study`` predicts each row of ``devices.py study`` (10^6 replications of each seed paper's
headline workload, lanes sized for them): kernels and syncs per step, bytes per lane, lanes,
replications/s, the compile seconds of this compile and the end to end seconds they give
(``PROCESS_START_S`` + compile + 10^6 / rate), against the row's target.  ``--check BASELINE``
compares every row with the baseline's (kernels per step within 2 %, syncs and bytes per lane
not above) and exits with status 1 on a regression.  Compile seconds are those of the machine
that compiles (the XLA compile runs on the host, so a quiet CPU's seconds are about the GPU
machine's: XY-static 45 s on a quiet 2-core CPU, 44.9 s on the H200's host; under a load of 4 on
the 2 cores, 67-69 s).

Triton GEMM is turned off (``--xla_gpu_enable_triton_gemm=false``): with it, some float64 matrix
products of the elimination family fail to find tile sizes when compiled without a device.
"""
from __future__ import annotations

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
_FLAG = "--xla_gpu_enable_triton_gemm=false"
if _FLAG not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _FLAG).strip()

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

#: an H100 SXM 80 GB as XLA describes it (GpuTargetConfigProto, text form): NVIDIA's published
#: figures (132 SMs, 3.35 TB/s, 50 MiB L2, compute capability 9.0)
H100_TARGET = """gpu_device_info {
  threads_per_block_limit: 1024
  threads_per_warp: 32
  shared_memory_per_block: 49152
  shared_memory_per_core: 233472
  threads_per_core_limit: 2048
  core_count: 132
  fpus_per_core: 128
  block_dim_limit_x: 2147483647
  block_dim_limit_y: 65535
  block_dim_limit_z: 65535
  memory_bandwidth: 3352320000000
  l2_cache_size: 52428800
  clock_rate_ghz: 1.98
  device_memory_size: 84929347584
  shared_memory_per_block_optin: 232448
  cuda_compute_capability { major: 9 }
  registers_per_core_limit: 65536
  registers_per_block_limit: 65536
}
platform_name: "CUDA"
dnn_version_info { major: 9 minor: 7 }
device_description_str: "NVIDIA H100 80GB HBM3"
"""
#: free memory assumed on an idle 80 GB H100 (what the allocator reports as its limit)
H100_FREE_BYTES = 79 * 2**30

#: cost model (fitted, see the module docstring): seconds per kernel launch, per host round trip,
#: and the HBM bandwidth reached by the step's kernels
T_KERNEL = 1.3e-6
T_SYNC = 10.0e-6
BANDWIDTH = 0.8 * 3.35e12
#: seconds per lane and per d^2 of a batched solver library call (:func:`solver_call`: cuSOLVER's
#: Cholesky, LU, eigendecompositions, cuBLAS's triangular solves, on d x d matrices), fitted to one
#: H200 (2026-11-28, docs/measurements/2026-11-28-h200-study.md) where the rest of the model held:
#: SphereBAI (5 calls a step, d = 3) ran 2.25 ms a step longer than predicted at 262,144 lanes,
#: 0.45 ms a call (0.19 ns per lane and d^2); XY-static, XY-oracle and Oracle (5 calls, d = 5) 6.4
#: to 7.5 ms, 1.3 to 1.5 ms a call (0.20 to 0.23 ns).  The launch of such a call is in T_KERNEL.
T_SOLVER = 0.2e-9
#: element operations a second charged for the arithmetic of fused kernels (Pallas ``pallas_call``s,
#: ``jaxbandits.design.kernels``): an H100 SXM's float64 rate outside its tensor cores (33.5 TFLOP/s
#: counting a fused multiply-add as two), each element operation of a kernel's body (selects,
#: compares and integer operations included) charged as one float64 instruction.  The rest of the
#: model charges launches and memory traffic, which a fused kernel all but removes; its
#: arithmetic is what is left.  Not fitted: no fused kernel has run on a GPU yet.
FP64_OPS = 16.7e12
#: lane efficiency assumed for the predictions (refilled lanes, block tail); measured on an H100
#: with 4 tasks per lane: 0.34 (RAGE), 0.57 (m-LinGapE), 0.61 (LT&S),
#: docs/measurements/2026-11-26-h100-device-run.md
EFFICIENCY = 0.9
#: mean steps per replication where no CPU run is asked for (``--reps 0``): LT&S many-arms K = 1000
#: without averaging (1,605 steps: the 1,463 rounds measured on an H100 over 65,536 replications,
#: docs/measurements/2026-11-26-h100-device-run.md, with the steps a lane paused for its solve
#: adds, 1,535.6 per 1,399.5 rounds under the accelerator policy at the default
#: ``pause_trips`` = 8; the released code's configuration plays about 473 rounds), XY-adaptive
#: and uniform + GLR (their step counts on these instances), m-LinGapE (measured here on the CPU,
#: 2,000 replications).
#: The others (2026-11-25, docs/measurements/2026-11-26-h100-compile-model.md): the fixed-budget
#: rows from ``--reps 8``, the rest from ``steps_per_rep(w, 1000)``; the first key a row's name
#: starts with is taken, so "GSE logistic" precedes "GSE".  2026-11-28: SphereBAI from
#: ``steps_per_rep(w, 64)``, Peace (Katz-Samuels et al.'s, 3 epochs at K = 16) from 8.
STEPS_PER_REP = {"LT&S": 1_605.0, "XY-adaptive": 22_600.0, "uniform + GLR, sphere": 96_000.0, "m-LinGapE": 3_261.0,
                 "RAGE": 13.72, "XY-static": 43.21, "XY-oracle": 112.27, "ALBA": 30.48, "Oracle": 112.27,
                 "LinGapE (top-1)": 4_479.6, "LinGIFA": 4_469.7, "LUCB": 14_032.5, "UGapE": 14_053.3,
                 "GSE logistic": 3.0, "GSE": 4.0, "OD-LinBAI": 4.0, "BayesGap": 304.0, "Peace": 3.0,
                 "LinUCB": 320.0, "UCB-GLM": 400.0, "LinGapE capped": 304.0, "SphereBAI": 3_321.0}

#: the fraction of a step's lanes that run a gated kernel updating their state in place (HBM bytes
#: of such a kernel, :func:`kernel_bytes`; 1 where a row has none).  LT&S (K = 1000, no averaging):
#: the lanes held for their allocation update, (steps - pulls) / steps of the accelerator program
#: (XLA form) on the CPU, 32 replications: 0.089
GATED_FRACTION = {"LT&S": 0.089}

_NO_KERNEL = {"parameter", "constant", "get-tuple-element", "tuple", "bitcast", "while", "conditional",
              "call", "after-all", "partition-id", "replica-id", "opt-barrier", "add-dependency",
              "get-dimension-size", "domain"}
_DTYPE_BYTES = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4, "u32": 4,
                "f32": 4, "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16}
_INSTR = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*?)\s([\w\-]+)\((.*)$")
_SHAPE = re.compile(r"\b(pred|[sufc]\d+|bf16)\[([\d,]*)\]")


def _shape_bytes(text: str) -> int:
    total = 0
    for dt, dims in _SHAPE.findall(text):
        n = 1
        for d in filter(None, dims.split(",")):
            n *= int(d)
        total += n * _DTYPE_BYTES.get(dt, 8)
    return total


@dataclasses.dataclass
class Instr:
    name: str
    op: str
    out_bytes: int
    operands: list
    called: dict  # role -> computation names (body/condition/branches/calls)
    trip: int | None  # known trip count of a while
    label: str  # op_name metadata
    target: str = ""  # a custom call's target
    root: bool = False  # its computation's ROOT
    param: int | None = None  # a parameter's index
    aliased: tuple = ()  # a custom call's operands that are its outputs' buffers (updated in place)


def parse_hlo(text: str) -> tuple[dict, str]:
    """Computations of an optimised HLO module (name -> instructions) and the entry's name."""
    comps, cur, entry = {}, None, None
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith("//"):
            continue
        m = re.match(r"^(ENTRY\s+)?%?([\w.\-]+)\s*\(.*\)\s*->.*\{$", s)
        if m and not _INSTR.match(s):
            cur = m.group(2)
            comps[cur] = []
            if m.group(1):
                entry = cur
            continue
        if s == "}":
            cur = None
            continue
        if cur is None:
            continue
        im = _INSTR.match(s)
        if not im:
            continue
        name, shape, op, rest = im.groups()
        root = s.startswith("ROOT ")
        pm = re.match(r"(\d+)\)", rest) if op == "parameter" else None
        am = re.search(r"output_to_operand_aliasing=(\{(?:[^{}]|\{[^{}]*\})*\})", rest)
        aliased = tuple(int(x) for x in re.findall(r":\s*\((\d+),", am.group(1))) if am else ()
        args = rest.split("),", 1)[0] if ")," in rest else rest.rsplit(")", 1)[0]
        operands = re.findall(r"%([\w.\-]+)", args)
        called = {}
        for role in ("condition", "body", "calls", "to_apply", "true_computation", "false_computation"):
            cm = re.search(role + r"=%?([\w.\-]+)", rest)
            if cm:
                called[role] = [cm.group(1)]
        bm = re.search(r"branch_computations=\{([^}]*)\}", rest)
        if bm:
            called["branches"] = re.findall(r"%?([\w.\-]+)", bm.group(1))
        tm = re.search(r'"known_trip_count":\{"n":"(\d+)"', rest)
        lm = re.search(r'op_name="([^"]*)"', rest)
        cm = re.search(r'custom_call_target="([^"]*)"', rest)
        comps[cur].append(Instr(name, op, _shape_bytes(shape), operands, called, int(tm.group(1)) if tm else None,
                                lm.group(1) if lm else "", cm.group(1) if cm else "", root,
                                int(pm.group(1)) if pm else None, aliased))
    return comps, entry


def solver_call(target: str) -> bool:
    """A batched dense solver call of the vendor libraries (cuSOLVER: Cholesky, LU, eigen- and
    singular value decompositions; cuBLAS: triangular solves), not a matrix product."""
    return target.startswith("cusolver") or "triangularSolve" in target


@dataclasses.dataclass
class Cost:
    kernels: float = 0.0
    syncs: float = 0.0
    bytes: float = 0.0
    loops: list = dataclasses.field(default_factory=list)  # data-dependent whiles: labels
    solver_calls: float = 0.0  # of the kernels, batched solver library calls (:func:`solver_call`)
    # the entries of those calls' matrices (their first operands', all of a batch): what a call costs
    solver_entries: float = 0.0

    def __add__(self, o):
        return Cost(self.kernels + o.kernels, self.syncs + o.syncs, self.bytes + o.bytes, self.loops + o.loops,
                    self.solver_calls + o.solver_calls, self.solver_entries + o.solver_entries)

    def __mul__(self, k):
        return Cost(self.kernels * k, self.syncs * k, self.bytes * k, self.loops, self.solver_calls * k,
                    self.solver_entries * k)


def scattered_operand(comps: dict, fusion: Instr) -> int | None:
    """The operand of a fusion whose root is a ``scatter`` that the scatter updates (its output's
    buffer: XLA's GPU scatter writes in place, copying first where the buffer is still needed,
    a ``copy`` of its own), else None."""
    body = comps.get((fusion.called.get("calls") or [None])[0], [])
    byname = {i.name: i for i in body}
    root = next((i for i in body if i.root), None)
    if root is None or root.op != "scatter" or not root.operands:
        return None
    src = byname.get(root.operands[0])
    return src.param if src is not None and src.op == "parameter" else None


def kernel_bytes(comps: dict, i: Instr, shapes: dict, gated: float = 1.0) -> float:
    """HBM bytes a kernel moves: its operands and results, except that

    * a scatter (a fusion whose root is one) reads and writes only the entries it updates, not
      the operand it updates in place (:func:`scattered_operand`);
    * a custom call whose outputs are its operands' buffers (``output_to_operand_aliasing``: a
      gated kernel updating the lanes' state in place) moves them only for the lanes that run
      it, a fraction ``gated`` of the lanes (1: every lane, the bound)."""
    ins = [shapes.get(o, 0) for o in i.operands]
    if i.op == "fusion":
        p = scattered_operand(comps, i)
        if p is not None and p < len(ins):
            return float(sum(ins) - ins[p])
    if i.aliased:
        held = sum(ins[k] for k in set(i.aliased) if k < len(ins))
        return float(sum(ins) - held) + gated * 2.0 * held
    return float(i.out_bytes + sum(ins))


def cost(comps: dict, name: str, unknown_trips: float, memo=None, gated: float = 1.0) -> Cost:
    """Kernels, host syncs and HBM bytes (:func:`kernel_bytes`) of one execution of computation
    ``name``."""
    memo = {} if memo is None else memo
    if name in memo:
        return memo[name]
    shapes = {i.name: i.out_bytes for i in comps.get(name, [])}
    c = Cost()
    for i in comps.get(name, []):
        if i.op == "while":
            body = cost(comps, i.called["body"][0], unknown_trips, memo, gated) + cost(
                comps, i.called["condition"][0], unknown_trips, memo, gated)
            if i.trip is not None:
                c = c + body * i.trip
            else:
                c = c + (body + Cost(syncs=1)) * unknown_trips
                c.loops = c.loops + [i.label or i.name]
        elif i.op == "conditional":
            branches = [cost(comps, b, unknown_trips, memo, gated)
                        for b in i.called.get("branches", []) + i.called.get("true_computation", [])
                        + i.called.get("false_computation", [])]
            worst = max(branches, key=lambda b: b.kernels, default=Cost())
            c = c + worst + Cost(syncs=1)
        elif i.op == "call":
            c = c + cost(comps, i.called["to_apply"][0] if "to_apply" in i.called else i.called["calls"][0],
                         unknown_trips, memo, gated)
        elif i.op not in _NO_KERNEL:
            solver = i.op == "custom-call" and solver_call(i.target)
            c = c + Cost(kernels=1, bytes=kernel_bytes(comps, i, shapes, gated),
                         solver_calls=1.0 if solver else 0.0,
                         solver_entries=shapes.get(i.operands[0], 0) / 8.0 if solver and i.operands else 0.0)
    memo[name] = c
    return c


def step_cost(text: str, block_steps: int, unknown_trips: float, gated: float = 1.0) -> tuple[Cost, Cost]:
    """(cost per step, data-dependent loops inside a step) of an engine chunk program: its
    largest data-dependent ``while`` is the engine's loop over blocks; a block is
    ``block_steps`` steps plus one test of that loop; ``gated``: as in :func:`kernel_bytes`."""
    comps, entry = parse_hlo(text)
    memo: dict = {}
    outer, best = None, -1.0
    stack, seen = [entry], set()
    while stack:  # the entry and what it calls (a shard_map body, a call)
        cname = stack.pop()
        if cname in seen:
            continue
        seen.add(cname)
        for i in comps.get(cname, []):
            if i.op == "while" and i.trip is None:
                k = cost(comps, i.called["body"][0], 1.0, memo).kernels
                if k > best:
                    outer, best = i, k
            elif i.op == "call":
                stack.extend(i.called.get("to_apply", []) + i.called.get("calls", []))
    memo = {}
    block = cost(comps, outer.called["body"][0], unknown_trips, memo, gated) + cost(
        comps, outer.called["condition"][0], unknown_trips, memo, gated) + Cost(syncs=1)
    per_step = block * (1.0 / block_steps)
    per_step.loops = block.loops
    return per_step, block


def h100_device():
    from jax.experimental import topologies

    topo = topologies.get_topology_desc("h100", platform="cuda", target_config=H100_TARGET, topology="1x1x1")
    return topo.devices[0]


def compile_for_h100(w, lanes: int | None, n_tasks: int):
    """Lower and compile ``w``'s chunk program as the engine would on an 80 GB H100; ``compile_s``
    is the wall time, ``compile_cpu_s`` the process's CPU time (every thread), which the load
    of a shared machine inflates far less."""
    import jax
    import jax.numpy as jnp

    from jaxbandits import batching, engine
    from jaxbandits.engine import layout as policy
    from jaxbandits.instances.base import as_batch

    dev = h100_device()
    sh = jax.sharding.SingleDeviceSharding(dev)
    alg = w.algorithm
    inst = alg.prepare(as_batch(w.instance))
    bpl = policy.lane_bytes(alg, inst, "gpu")
    try:
        L80 = policy.choose_lanes("gpu", bpl, H100_FREE_BYTES, inst, tasks=n_tasks)
    except TypeError:  # a layout policy without task buckets
        L80 = policy.choose_lanes("gpu", bpl, H100_FREE_BYTES, inst)
    L = int(lanes) if lanes else L80
    chunk = policy.CHUNK_LANES * L
    try:  # the engine's choice: blocks no longer than the most steps a replication takes
        from jaxbandits.engine.runner import steps_bound
        S = policy.choose_block_steps("gpu", steps_bound(alg, inst, w.max_steps))
    except ImportError:  # a library whose blocks follow the backend only
        S = policy.choose_block_steps("gpu") if hasattr(policy, "choose_block_steps") else 1
    static, dynamic = alg.split_dynamic()
    try:  # the policy is the configuration's own (Algorithm.batching), as the engine sets it
        from jaxbandits.algorithms.base import with_batching
        static = with_batching(static, batching.solve_for("gpu", L))
    except ImportError:  # a library from before that field
        pass
    rmin = max(1, L // 16)
    try:
        from jaxbandits.engine.lanes import make_chunk_runner
        run = make_chunk_runner(static, L, chunk, False, rmin, S)
    except ImportError:  # the single-module engine
        run = engine._make_chunk_runner(static, L, chunk, False, rmin)

    def spec(a):
        a = jnp.asarray(a)
        return jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=sh)

    args = (jax.ShapeDtypeStruct((chunk,), jnp.int32, sharding=sh), jax.tree.map(spec, inst),
            jax.ShapeDtypeStruct((), jax.random.key(0).dtype, sharding=sh), jax.tree.map(spec, dynamic),
            jax.ShapeDtypeStruct((), jnp.int32, sharding=sh), jax.ShapeDtypeStruct((), jnp.int32, sharding=sh))
    t0, c0 = time.perf_counter(), time.process_time()
    with batching.policy(batching.solve_for("gpu", L)):
        compiled = jax.jit(run).lower(*args).compile()
    ct, cpu = time.perf_counter() - t0, time.process_time() - c0
    try:
        m = compiled.memory_analysis()
        pbytes = int(m.temp_size_in_bytes + m.argument_size_in_bytes + m.output_size_in_bytes)
    except Exception:
        pbytes = None
    return compiled.as_text(), dict(lanes=L, lanes_80gb=L80, bytes_per_lane=bpl, block_steps=S,
                                    program_bytes=pbytes, compile_s=ct, compile_cpu_s=cpu)


def extra_workloads() -> list:
    """Rows of this script beyond ``devices.py``'s workloads: GSE with the logistic estimator
    (Eq. 4, IRLS) on seed 002's logistic instance, the budget of the UCB-GLM row; fixed-confidence Peace
    (Katz-Samuels et al. 2020, the released transductive run) on Soare et al.'s instance, d = 5."""
    import jax

    from devices import Lazy, Workload

    from jaxbandits import algorithms as A
    from jaxbandits.instances import seeds

    logistic = Lazy(lambda: seeds.logistic_gse(jax.random.key(0), 8, 5))
    return [Workload("GSE logistic, logistic K=8 d=5 B=400", A.GSE(budget=400, estimator="logistic"),
                     logistic, 10_000, 100),
            Workload("FC-Peace, Soare d=5", A.FixedConfidencePeace(), Lazy(lambda: seeds.soare_benchmark(5)), 1000,
                     50, max_steps=60),
            *karmed_workloads()]


def karmed_workloads() -> list:
    """The K-armed algorithms on Garivier & Kaufmann 2016's Bernoulli scenario mu1 (fixed budget:
    B = 3000) and on a random 10-armed Gaussian bandit (sigma = 1/2)."""
    import jax

    from devices import Lazy, Workload

    from jaxbandits import algorithms as A
    from jaxbandits.instances import garivier_kaufmann_2016, random_k_armed

    gk = Lazy(lambda: garivier_kaufmann_2016(1))
    gauss = Lazy(lambda: random_k_armed(jax.random.key(0), 10, noise=0.5))
    fc = [("Track-and-Stop (D)", A.KArmedTrackAndStop(delta=0.1), gk),
          ("EB-TC", A.KArmedTopTwo(delta=0.1), gk),
          ("EB-TCI, IDS", A.KArmedTopTwo(delta=0.1, challenger="TCI", selection="ids"), gk),
          ("TTTS, bounded Beta", A.KArmedTopTwo(delta=0.1, leader="TS", challenger="TS", beta_sampler="bounded"), gk),
          ("KL-LUCB", A.KArmedKLLUCB(delta=0.1), gk),
          ("LUCB1", A.KArmedLUCB1(delta=0.1), gauss),
          ("lil'UCB", A.KArmedLilUCB(delta=0.1), gauss),
          ("Successive Elimination", A.SuccessiveElimination(delta=0.1), gauss),
          ("Successive Elimination", A.SuccessiveElimination(delta=0.1), gk),
          ("Track-and-Stop, Kaufmann & Koolen", A.KArmedTrackAndStop(delta=0.1, threshold="kaufmann_koolen"), gauss),
          ("EB-TC-epsilon (IDS), epsilon 0.1", A.KArmedEBTCEpsilon(delta=0.1, epsilon=0.1), gauss),
          ("Track-and-Stop, unknown variances (calibrated)",
           A.KArmedTrackAndStop(delta=0.1, variances="empirical", statistic="glr", threshold="calibrated"), gauss)]
    out = [Workload(f"K-armed {n}, {'GK16 mu1' if i is gk else 'Gaussian K=10'}", a, i, 1000, 50) for n, a, i in fc]
    out += [Workload("K-armed Successive Rejects, GK16 mu1 B=3000", A.SuccessiveRejects(budget=3000), gk, 10_000, 100),
            Workload("K-armed Sequential Halving, GK16 mu1 B=3000", A.SequentialHalving(budget=3000), gk, 10_000, 100)]
    return out


#: primitives of a kernel body that move or relabel data rather than compute
_NO_OP = {"get", "swap", "load", "store", "broadcast_in_dim", "reshape", "squeeze", "iota", "convert_element_type",
          "expand_dims", "program_id", "num_programs"}


def kernel_ops(jaxpr, inside: bool = False, gated: float = 1.0) -> float:
    """Element operations a lane of the fused kernels (``pallas_call`` bodies) in ``jaxpr``: each
    equation of a body counted at its largest output's size, times the trips of the loops around
    it; a ``cond`` counted at its costlier branch, so a loop whose trips are a lane's own
    (``max_trips``, branching over the body past them) is charged all its trips: an upper bound.
    A kernel that updates its operands in place (a gated kernel, :func:`kernel_bytes`) runs its
    body for a fraction ``gated`` of the lanes."""
    total = 0.0
    for e in jaxpr.eqns:
        name = e.primitive.name
        if name == "pallas_call":
            ops = kernel_ops(e.params["jaxpr"], True)
            total += ops * gated if e.params.get("input_output_aliases") else ops
            continue
        if name == "scan":
            total += e.params["length"] * kernel_ops(e.params["jaxpr"].jaxpr, inside, gated)
            continue
        if name == "cond":
            total += max(kernel_ops(b.jaxpr, inside, gated) for b in e.params["branches"])
            continue
        subs = [getattr(v, "jaxpr", v) for v in e.params.values() if hasattr(getattr(v, "jaxpr", v), "eqns")]
        subs += [getattr(x, "jaxpr", x) for v in e.params.values() if isinstance(v, (tuple, list))
                 for x in v if hasattr(getattr(x, "jaxpr", x), "eqns")]
        if subs:  # a while outside a kernel (the step's own loops), a jit, a custom batching rule
            total += sum(kernel_ops(j, inside, gated) for j in subs)
            continue
        if inside and name not in _NO_OP:
            total += max([math.prod(v.aval.shape) for v in e.outvars if hasattr(v.aval, "shape")] + [1])
    return total


def fused_ops_per_step(w, gated: float = 1.0) -> float:
    """Element operations a lane of ``w``'s step runs in fused kernels (:func:`kernel_ops` of the
    step traced for one lane under a GPU's policy; ``gated``: as there)."""
    import jax
    import jax.numpy as jnp

    from jaxbandits import batching
    from jaxbandits.algorithms.base import with_batching
    from jaxbandits.engine import instance_at
    from jaxbandits.instances.base import as_batch

    alg = with_batching(w.algorithm, batching.solve_for("gpu", 1))
    one = jax.eval_shape(lambda b: instance_at(alg.prepare(b), jnp.zeros((), jnp.int32)), as_batch(w.instance))
    key = jax.random.key(0)
    state = jax.eval_shape(alg.init, key, one)
    return kernel_ops(jax.make_jaxpr(alg.step)(key, state, one).jaxpr, gated=gated)


def steps_per_rep(w, reps: int) -> float:
    """Mean steps per replication from a short CPU run."""
    import jax

    from jaxbandits.engine import simulate

    r = simulate(w.algorithm, w.instance, jax.random.key(1), reps, w.max_steps, record_pulls=False)
    return float(r.steps.mean())


def occupied_steps(steps: float, block_steps: int = 1) -> float:
    """Steps a replication of ``steps`` steps (a mean) holds its lane in blocks of ``block_steps``:
    lanes start at a block's start and are freed at the end of the block they finish in, so a run
    no longer than a block holds a whole block (S ceil(steps / S)), and a longer one about half a
    block more than its steps (steps + (S - 1) / 2)."""
    S = max(1, int(block_steps))
    if steps <= S:
        return S * math.ceil(steps / S)
    return steps + (S - 1) / 2


def predict(per_step: Cost, lanes: int, steps: float, dim: int = 0, block_steps: int = 1,
            fused_ops: float = 0.0) -> float:
    """Replications per second: ``lanes x EFFICIENCY / (occupied steps x step time)``
    (:func:`occupied_steps`), the step time from its kernels, host syncs, HBM bytes, its solver
    calls on ``dim`` x ``dim`` matrices and the ``fused_ops`` element operations a lane of its
    fused kernels (:func:`fused_ops_per_step`, at ``FP64_OPS``)."""
    # a solver call is charged T_SOLVER an entry of its matrices: lanes x d^2 for a call batched
    # over the lanes, d^2 for one on a matrix the lanes share (the instance's, computed once);
    # rows written before the entries were counted charge every call lanes x d^2
    entries = per_step.solver_entries if per_step.solver_entries else per_step.solver_calls * lanes * dim**2
    t = (per_step.kernels * T_KERNEL + per_step.syncs * T_SYNC + per_step.bytes / BANDWIDTH
         + entries * T_SOLVER + fused_ops * lanes / FP64_OPS)
    return lanes * EFFICIENCY / (occupied_steps(steps, block_steps) * t)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", nargs="*", default=None, help="rows whose name contains one of these")
    p.add_argument("--json", default=None, help="write the rows here (rows already in it are kept)")
    p.add_argument("--reps", type=int, default=0, help="CPU replications to measure steps per replication "
                   "(0: use the rows of --json, else skip the prediction)")
    p.add_argument("--lanes", type=int, default=None, help="compile at this many lanes (default: 80 GB's)")
    p.add_argument("--tasks", type=int, default=10**6, help="replications the lanes are sized for")
    p.add_argument("--unknown-trips", type=float, default=1.0, help="iterations assumed per data-dependent loop")
    p.add_argument("--quick", action="store_true", help="the quick workloads of devices.py")
    p.add_argument("--predict-only", action="store_true",
                   help="recompute the predictions of the rows in --json (no compiling)")
    p.add_argument("--study", action="store_true",
                   help="the study rows of devices.py (10^6 replications each): the study table's predictions")
    p.add_argument("--check", default=None, metavar="BASELINE",
                   help="compare the rows with those of this JSON (a regression check: kernels and syncs "
                        "per step, bytes per lane); exit status 1 where one went up")
    args = p.parse_args(argv)
    import jax

    import jaxbandits.precision

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from devices import workloads

    jaxbandits.precision.enable_globally()
    if args.study:
        from devices import STUDY_REPS, study_rows

        study = {name: row for row, name in study_rows(args.quick, args.only)}
        args.tasks = STUDY_REPS
        args.only = None
    rows = {}
    if args.json and os.path.exists(args.json):
        with open(args.json) as f:
            rows = {r["name"]: r for r in json.load(f)}
    if args.predict_only:
        for row in rows.values():
            if "kernels_per_step" not in row:
                continue
            if not row.get("steps_per_rep"):
                row["steps_per_rep"] = next((v for k, v in STEPS_PER_REP.items() if row["name"].startswith(k)), None)
            if row.get("steps_per_rep"):
                c = Cost(row["kernels_per_step"], row["syncs_per_step"], row["hbm_bytes_per_step"],
                         solver_calls=row.get("solver_calls_per_step", 0.0),
                         solver_entries=row.get("solver_entries_per_step", 0.0))
                row["predicted_reps_per_s"] = predict(c, row["lanes"], row["steps_per_rep"], row.get("dim", 0),
                                                     row.get("block_steps", 1), row.get("fused_ops_per_step", 0.0))
                row["prediction_is_upper_bound"] = bool(row["loops_left"])
                if args.study and row["name"] in study:
                    row.update(study_prediction(row, study[row["name"]], STUDY_REPS))
        with open(args.json, "w") as f:
            json.dump(list(rows.values()), f, indent=1)
        print(table(list(rows.values())))
        if args.study:
            print()
            print(study_table([r for r in rows.values() if r["name"] in study], study))
        return 0
    print(f"# jax {jax.__version__}, H100 target (compiled, not run); T_KERNEL {T_KERNEL * 1e6:.1f} us, "
          f"T_SYNC {T_SYNC * 1e6:.1f} us, {BANDWIDTH / 1e12:.1f} TB/s", flush=True)
    for w in workloads(args.quick) + extra_workloads():
        if args.only and not any(s.lower() in w.name.lower() for s in args.only):
            continue
        if args.study and w.name not in study:
            continue
        row = rows.get(w.name, dict(name=w.name))
        try:
            lanes = (study[w.name].lanes or args.lanes) if args.study else args.lanes
            text, info = compile_for_h100(w, lanes, args.tasks)
        except Exception as e:  # one row's failure is reported, the others still run
            row.update(error=f"{type(e).__name__}: {str(e)[:300]}")
            rows[w.name] = row
            print(f"  {w.name}: {row['error']}", flush=True)
            continue
        gated = next((v for k, v in GATED_FRACTION.items() if w.name.startswith(k)), 1.0)
        per_step, _ = step_cost(text, info["block_steps"], args.unknown_trips, gated)
        row.update(info, kernels_per_step=per_step.kernels, syncs_per_step=per_step.syncs,
                   solver_calls_per_step=per_step.solver_calls, solver_entries_per_step=per_step.solver_entries,
                   dim=int(w.instance.dim),
                   hbm_bytes_per_step=per_step.bytes, loops_left=sorted(set(per_step.loops)),
                   fused_ops_per_step=fused_ops_per_step(w, gated), gated_fraction=gated)
        row.pop("error", None)
        if args.reps:
            row["steps_per_rep"] = steps_per_rep(w, args.reps)
        elif not row.get("steps_per_rep"):
            row["steps_per_rep"] = next((v for k, v in STEPS_PER_REP.items() if w.name.startswith(k)), None)
        if args.study and not row.get("steps_per_rep"):  # a study row is predicted whatever it takes
            row["steps_per_rep"] = steps_per_rep(w, 64)
        if row.get("steps_per_rep"):
            # with data-dependent loops left, each counted once: an upper bound
            row["predicted_reps_per_s"] = predict(per_step, info["lanes"], row["steps_per_rep"], row["dim"],
                                                  info["block_steps"], row["fused_ops_per_step"])
            row["prediction_is_upper_bound"] = bool(per_step.loops)
        if args.study:
            row.update(study_prediction(row, study[w.name], args.tasks))
        rows[w.name] = row
        print(f"  {w.name}: {per_step.kernels:.1f} kernels, {per_step.syncs:.2f} syncs per step, "
              f"{len(row['loops_left'])} loops left, {info['lanes']} lanes, compile {info['compile_s']:.1f} s",
              flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(list(rows.values()), f, indent=1)
    print(table(list(rows.values())))
    if args.study:
        print()
        print(study_table([r for r in rows.values() if r["name"] in study], study))
    if args.check:
        return check(list(rows.values()), args.check)
    return 0


#: seconds to start a row's process on the device machine (imports, CUDA, instances), added to the
#: predicted end to end time
PROCESS_START_S = 8.0


def study_prediction(row: dict, target, reps: int) -> dict:
    """A study row's predictions: replications/s (:func:`predict`), compile seconds (those of
    this compile on this machine, CPU seconds where smaller than wall), and the end to end
    seconds of ``reps`` replications with them, against the row's target (``devices.StudyRow``)."""
    rate = row.get("predicted_reps_per_s")
    # the compile's CPU seconds where measured: a loaded machine inflates them far less than the
    # wall seconds (a quiet one gives about the same for both)
    compile_s = min(row["compile_s"], row.get("compile_cpu_s") or row["compile_s"])
    out = dict(study_reps=reps, target_s=target.target_s, target_rate=target.target_rate,
               predicted_compile_s=compile_s)
    if rate:
        out["predicted_e2e_s"] = PROCESS_START_S + compile_s + reps / rate
    return out


def study_verdict(r: dict) -> str:
    notes = []
    e2e, rate = r.get("predicted_e2e_s"), r.get("predicted_reps_per_s")
    bound = "rate an upper bound (loops left); " if r.get("prediction_is_upper_bound") else ""
    if r.get("target_s") is not None and e2e is not None:
        notes.append(f"{bound}target < {r['target_s']:.0f} s: {'met' if e2e < r['target_s'] else 'missed'}")
    if r.get("target_rate") is not None and rate is not None:
        notes.append(f"{bound}target >= {r['target_rate']:,.0f} reps/s: "
                     f"{'met' if rate >= r['target_rate'] else 'missed'}")
    if r.get("predicted_compile_s", r.get("compile_s", 0)) >= 15.0:
        notes.append("compile >= 15 s")
    return "; ".join(notes)


def study_table(rows: list[dict], study: dict) -> str:
    """The study table as predicted: the columns of ``devices.py study`` that a compile gives."""
    head = ("| workload | kernels / step | syncs / step | bytes / lane | lanes | steps / rep "
            "| predicted reps/s | compile s (here: wall / CPU) | predicted end to end s | note |")
    out = [head, "|" + " --- |" * (head.count("|") - 1)]
    order = {n: i for i, n in enumerate(study)}
    for r in sorted(rows, key=lambda r: order.get(r["name"], len(order))):
        if "error" in r:
            out.append(f"| {r['name']} | compile failed: {r['error'][:80]} |" + " |" * 8)
            continue
        pred, e2e = r.get("predicted_reps_per_s"), r.get("predicted_e2e_s")
        comp = f"{r['compile_s']:.1f}" + (f" / {r['compile_cpu_s']:.1f}" if "compile_cpu_s" in r else "")
        out.append(f"| {r['name']} | {r['kernels_per_step']:,.1f} | {r['syncs_per_step']:.2f} "
                   f"| {r['bytes_per_lane']:,} | {r['lanes']:,} | {r.get('steps_per_rep') or float('nan'):,.1f} "
                   f"| {'n/a' if pred is None else ('<= ' if r.get('prediction_is_upper_bound') else '') + f'{pred:,.0f}'} "
                   f"| {comp} | {'n/a' if e2e is None else f'{e2e:,.1f}'} | {study_verdict(r)} |")
    return "\n".join(out)


#: how far a count may rise against the baseline before :func:`check` calls it a regression
CHECK_TOLERANCE = dict(kernels_per_step=1.02, syncs_per_step=1.0, bytes_per_lane=1.0)


def check(rows: list[dict], baseline_path: str) -> int:
    """Every row against the baseline's row of the same name: kernels per step within 2 %, host
    syncs per step and bytes per lane not above; compile seconds are printed, not checked (they
    depend on the machine's load).  Returns the exit status (1: a regression)."""
    with open(baseline_path) as f:
        base = {r["name"]: r for r in json.load(f)}
    bad = 0
    for r in rows:
        b = base.get(r["name"])
        if b is None or "error" in r or "error" in b:
            print(f"  check {r['name']}: no baseline" if b is None else f"  check {r['name']}: an error")
            continue
        if b.get("lanes") != r.get("lanes"):  # counts depend on the lanes (XLA fuses by size)
            print(f"  check {r['name']}: the baseline is at {b.get('lanes')} lanes, this row at {r.get('lanes')}: "
                  f"not compared")
            continue
        for key, tol in CHECK_TOLERANCE.items():
            if r[key] > b[key] * tol + 1e-9:
                bad += 1
                print(f"  REGRESSION {r['name']}: {key} {b[key]:,.2f} -> {r[key]:,.2f}")
        print(f"  check {r['name']}: kernels {b['kernels_per_step']:,.1f} -> {r['kernels_per_step']:,.1f}, "
              f"syncs {b['syncs_per_step']:.2f} -> {r['syncs_per_step']:.2f}, bytes / lane "
              f"{b['bytes_per_lane']:,} -> {r['bytes_per_lane']:,}, compile {b.get('compile_s', 0):.1f} -> "
              f"{r.get('compile_s', 0):.1f} s")
    print(f"# check against {baseline_path}: {'no regression' if not bad else f'{bad} regressions'}")
    return 1 if bad else 0


def table(rows: list[dict]) -> str:
    head = ("| algorithm, instance | kernels / step | host syncs / step | solver calls / step | loops left "
            "| bytes / lane | lanes (80 GB) | program GiB | steps / rep | predicted reps/s |")
    out = [head, "|" + " --- |" * (head.count("|") - 1)]
    for r in rows:
        if "error" in r:
            out.append(f"| {r['name']} | compile failed: {r['error'][:80]} |" + " |" * 8)
            continue
        pred = r.get("predicted_reps_per_s")
        pb = r.get("program_bytes")
        sc = r.get("solver_calls_per_step")
        out.append(f"| {r['name']} | {r['kernels_per_step']:,.1f} | {r['syncs_per_step']:.2f} "
                   f"| {'n/a' if sc is None else f'{sc:,.2f}'} "
                   f"| {len(r['loops_left'])} | {r['bytes_per_lane']:,} | {r['lanes_80gb']:,} "
                   f"| {'n/a' if pb is None else f'{pb / 2**30:.2f}'} "
                   f"| {r.get('steps_per_rep') or float('nan'):,.0f} "
                   f"| {'n/a' if pred is None else ('<= ' if r.get('prediction_is_upper_bound') else '') + f'{pred:,.0f}'} |")
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
