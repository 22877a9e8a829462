"""``simulate``: lay a run out on the devices, fetch or compile its chunk runner, run the chunks,
and gather the per-replication results."""
from __future__ import annotations

import dataclasses
import functools
import math
import time
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, PartitionSpec as P

from jaxbandits import batching, distributed, programs
from jaxbandits import precision as precision_policy
from jaxbandits.algorithms.base import Algorithm, StepsNeeded, with_batching
from jaxbandits.engine.lanes import make_chunk_runner
from jaxbandits.engine.layout import (CHUNK_LANES, Layout, _pow2_floor, choose_block_steps, choose_lanes,
                                      free_memory, lane_bytes)
from jaxbandits.engine.results import Results, _counts
from jaxbandits.instances.base import Buckets, Instance, as_batch, pad_to
from jaxbandits.watchdog import run_guarded, timeout_for
from jaxbandits import progress as progress_bar
from jaxbandits import validation


def _compiled_runner(static_algorithm, dynamic, instances, key, n_reps, max_steps, lanes, chunk_per_dev,
                     record_pulls, devices, refill_min, solve=batching.SolvePolicy(), block_steps=1):
    """Fetch or compile (once per configuration and shapes) the multi-device chunk runner.

    The cache key (:func:`jaxbandits.programs.compiled`) leaves out ``max_steps``, ``n_reps`` and
    the values of the algorithm's dynamic fields (their shapes and dtypes are in it): those are
    arguments of the executable.
    """
    D = len(devices)
    sig = (static_algorithm, lanes, chunk_per_dev, record_pulls, tuple(devices), refill_min, solve, block_steps,
           jax.tree.map(lambda a: (a.shape, a.dtype), instances), instances.model,
           jax.tree.structure(dynamic), tuple((v.shape, v.dtype) for v in jax.tree.leaves(dynamic)))

    def build():
        # the policy is the configuration's: its kernels are traced under it (Algorithm.batching)
        run = make_chunk_runner(with_batching(static_algorithm, solve), lanes, chunk_per_dev, record_pulls, refill_min,
                                block_steps)
        if D > 1:
            mesh = Mesh(np.asarray(devices), ("d",))
            run = jax.shard_map(run, mesh=mesh, in_specs=(P("d"), P(), P(), P(), P(), P()),
                                out_specs=(P("d"), P("d")), check_vma=False)
        tasks_proto = jnp.zeros((D * chunk_per_dev,), jnp.int32)
        with batching.policy(solve):  # the engine's own refill code (the kernels set their own)
            lowered = jax.jit(run).lower(tasks_proto, instances, key, dynamic, max_steps, n_reps)
        return programs.compile_interruptibly(lowered)

    return programs.compiled(sig, build)


def _with_precision(fn):
    """Run :func:`simulate` under its precision (:mod:`jaxbandits.precision`): float64 unless
    ``precision="float32"`` was asked for an algorithm validated in float32; the instances are cast
    to that dtype, and a float32 instance without the request is refused.  The caller's global
    x64 setting is left as it was."""

    @functools.wraps(fn)
    def wrapper(algorithm, instances, *args, precision: str | None = None, **kwargs):
        validation.check_algorithm(algorithm, fields=False)  # its type before any cast; its fields in validate
        validation.check_instances(instances)
        prec = precision_policy.resolve(precision, algorithm, instances)
        with precision_policy.context(prec):
            if isinstance(instances, Instance):
                instances = precision_policy.cast_instance(instances, prec)
            res = fn(algorithm, instances, *args, precision=prec, **kwargs)
        return dataclasses.replace(res, precision=prec)

    return wrapper


def _prepare(algorithm, instances, stall_timeout):
    """``algorithm.prepare`` on the batch, under the watchdog; returns (prepared instances, run
    seconds, compile seconds of its programs)."""
    c_prep = programs.PREPARE_COMPILE_SECONDS[0]
    t_prep = time.perf_counter()
    inst = run_guarded(algorithm.prepare, as_batch(instances), stall_timeout=stall_timeout, what="prepare")
    t_prep = time.perf_counter() - t_prep
    prep_compile = min(programs.PREPARE_COMPILE_SECONDS[0] - c_prep, t_prep)
    return inst, t_prep - prep_compile, prep_compile


def _task_list(tasks, T: int) -> np.ndarray:
    """The flat task ids this process runs (all of them unless ``tasks`` restricts the set)."""
    if T >= 2**31:
        raise ValueError("too many replications for int32 task ids; split the run")
    all_tasks = np.arange(T, dtype=np.int64) if tasks is None else np.unique(np.asarray(tasks, np.int64))
    validation.check_task_range(all_tasks, T)
    return distributed.process_share(all_tasks)  # this process's share (all of them on one host)


def steps_bound(algorithm, inst, max_steps: int) -> int:
    """The most steps a replication of ``algorithm`` takes on ``inst`` (a batch): ``max_steps``, or
    fewer for a fixed-budget algorithm that knows its steps
    (:class:`~jaxbandits.algorithms.base.StepsNeeded`)."""
    bound = int(max_steps)
    if isinstance(algorithm, StepsNeeded):
        bound = min(bound, int(algorithm.steps_needed(inst)))
    return bound


def _plan_and_compile(algorithm, inst, key, dynamic, n_reps_arr, max_steps_arr, devices, lanes, chunk_size,
                      refill_min, record_pulls, block_steps, n_tasks):
    """Choose the layout (:class:`Layout`) and fetch or compile its program; returns (program,
    layout, compile seconds).

    On a CPU the layout depends on the shapes and memory, never on the number of tasks: lanes
    and chunk slots past the last task are masked (task id -1), so ``n_reps``, a resumed task list
    and the number of chunks all reuse one program.  On an accelerator lanes follow memory and the
    tasks per device in powers of two (:func:`choose_lanes`), and a program too large for the free
    memory is recompiled with half the lanes.
    """
    D = len(devices)
    platform = getattr(devices[0], "platform", "cpu")
    free = free_memory(devices[0])
    bpl = lane_bytes(algorithm, inst, platform)
    L = int(lanes) if lanes else choose_lanes(platform, bpl, free, inst, tasks=-(-max(1, n_tasks) // D))
    # per-task output buffers ([C, M] answers, [C, K] pulls) stay within a tenth of free memory
    out_bytes = inst.num_items + (8 * inst.num_arms if record_pulls else 0) + 32
    max_chunk = CHUNK_LANES * L if free is None else _pow2_floor(max(1, int(0.1 * free) // out_bytes))
    if chunk_size is None:
        chunk_per_dev = max(1, min(CHUNK_LANES * L, max_chunk))
    else:
        chunk_per_dev = max(1, math.ceil(int(chunk_size) / D))
    L = min(L, chunk_per_dev)
    S = int(block_steps) if block_steps else choose_block_steps(
        platform, None if platform == "cpu" else steps_bound(algorithm, inst, int(max_steps_arr)))
    static_algorithm, _ = algorithm.split_dynamic()
    compile_time = 0.0
    while True:
        rmin = max(1, min(L, int(refill_min) if refill_min is not None else L // 16))
        solve = batching.solve_for(platform, L)
        compiled, ct = _compiled_runner(static_algorithm, dynamic, inst, key, n_reps_arr, max_steps_arr, L,
                                        chunk_per_dev, record_pulls, devices, rmin, solve, S)
        compile_time += ct
        need = programs.program_bytes(compiled)
        if (platform == "cpu" or lanes or free is None or need is None or need <= 0.9 * free or L == 1):
            break
        L = max(1, L // 2)
    layout = Layout(platform=platform, devices=D, lanes=L, chunk_per_device=chunk_per_dev, refill_min=rmin,
                    batched_solve=solve.batched, solve_capacity=solve.capacity, bytes_per_lane=bpl,
                    free_bytes=free, program_bytes=need, block_steps=S)
    return compiled, layout, compile_time


class _Collected:
    """Host-side per-task arrays, filled chunk by chunk."""

    def __init__(self, T: int, K: int, M: int, record_pulls: bool):
        self.samples = np.zeros((T,), np.int64)
        self.steps = np.zeros((T,), np.int64)
        self.correct = np.zeros((T,), bool)
        self.stopped = np.zeros((T,), bool)
        self.answer = np.zeros((T, M), bool)
        self.pulls = np.zeros((T, K), np.int64) if record_pulls else None
        self.converged = np.ones((T,), bool)
        self.ran = np.zeros((T,), bool)

    def add(self, tid, out, sel):
        self.samples[tid] = _counts(out.samples[sel])
        self.steps[tid] = out.steps[sel]
        self.correct[tid] = out.correct[sel]
        self.stopped[tid] = out.stopped[sel]
        self.answer[tid] = out.answer[sel]
        if self.pulls is not None:
            self.pulls[tid] = _counts(out.pulls[sel])
        self.converged[tid] = out.converged[sel]
        self.ran[tid] = True

    def arrays(self) -> dict:
        return dict(samples=self.samples, steps=self.steps, correct=self.correct, stopped=self.stopped,
                    answer=self.answer, pulls=self.pulls, converged=self.converged)

    def gather(self):
        """Every process gets every process's replications (a ``jax.distributed`` run)."""
        merged, self.ran = distributed.gather_results(self.arrays(), self.ran)
        for k, v in merged.items():
            setattr(self, k, v)


@_with_precision
def simulate(
    algorithm: Algorithm,
    instances: Instance,
    key: jax.Array,
    n_reps: int,
    max_steps: int,
    *,
    lanes: int | None = None,
    chunk_size: int | None = None,
    record_pulls: bool = True,
    refill_min: int | None = None,
    devices: list | None = None,
    tasks: np.ndarray | None = None,
    progress: bool | None | Callable[[str], None] = None,
    on_chunk: Callable[[np.ndarray, dict], None] | None = None,
    stall_timeout: float | None = None,
    precision: str | None = None,
    buckets: Buckets | None = None,
    block_steps: int | None = None,
    allow_ties: bool = False,
) -> Results:
    """Run ``n_reps`` replications of ``algorithm`` on every instance of ``instances``.

    Args:
      algorithm: a configured :class:`~jaxbandits.algorithms.base.Algorithm`.
      instances: one :class:`~jaxbandits.instances.base.Instance` or a batch (leading axis).
      key: PRNG key or int seed; replication i of instance j uses ``fold_in(fold_in(key, j), i)`` only.
      n_reps: replications per instance.
      max_steps: cap on ``step`` calls per replication; runs reaching it are reported with
        ``stopped = False`` and never counted as stops.
      lanes: replications stepped together per device (default: :func:`choose_lanes`: on a CPU
        ``CPU_LANES`` from the shapes and memory, whatever the number of tasks; on an accelerator
        as many as memory holds, up to the power of two following the tasks per device, and a
        program too large for the free memory is recompiled with half the lanes; lanes without a
        task are masked).  Results never depend on it.
      chunk_size: replications per compiled call over all devices (bounds memory; default
        ``CHUNK_LANES`` lanes' worth per device, with output buffers within a tenth of free
        memory).  Results never depend on it.
      record_pulls: keep per-arm pull counts [.., K].
      refill_min: refill finished lanes once at least this many lanes are free (default
        ``max(1, lanes // 16)``: each refill is one batched ``init`` over all lanes, so waiting for
        a few free lanes amortises expensive inits at the price of a few idle lane-steps).
      devices: devices to spread over (default: all of ``jax.devices()``; in a ``jax.distributed``
        run, this process's ``jax.local_devices()``).
      tasks: flat task ids ``j * n_reps + i`` to run (default all): resume support.
      progress: a progress bar of replications (done, rate, time left; :mod:`jaxbandits.progress`)
        when the run lasts more than a few seconds: None (default) shows it when stderr is a
        terminal, True always, False never; a callable receives one line after every chunk instead.
      on_chunk: called after every chunk with (task ids, dict of flat per-task arrays).
      stall_timeout: guard against the XLA:CPU deadlock of jaxlib 0.10.x (:mod:`jaxbandits.watchdog`):
        if the process makes no CPU progress for this many seconds while a chunk is pending,
        raise :class:`jaxbandits.watchdog.StalledComputation` instead of hanging.  Default: off
        (a plain blocking call) unless the installed jaxlib has that deadlock on XLA:CPU devices,
        then 30 s; ``JAXBANDITS_STALL_TIMEOUT`` (seconds) when set.  Never on accelerators unless
        an explicit positive value or that variable asks for it; 0 disables.  Chunks already done reached ``on_chunk``.
      precision: "float64" (default) or "float32" where validated (:mod:`jaxbandits.precision`).
      buckets: a :class:`~jaxbandits.instances.base.Buckets` policy: an algorithm that supports
        padding runs on its instances padded to the bucket's (K, M), so sizes sharing a bucket
        share one program; results are read back at the real K and M.
      block_steps: steps every lane takes between two checks for finished lanes (a loop with a
        trip count fixed at compile time; default :func:`choose_block_steps`, from the backend and,
        on an accelerator, the most steps a replication can take).
        Lanes that finish inside a block idle until it ends.  Results never depend on it.
      allow_ties: run instances whose best item (or top-m boundary) is tied; refused by default,
        since the answer is not unique and an exact-identification run may never stop.

    Returns:
      :class:`Results`.
    """
    # -- input checks (jaxbandits.validation): before anything is compiled ----------------------
    validation.check_simulate(algorithm, instances, n_reps, max_steps, lanes=lanes, chunk_size=chunk_size,
                              refill_min=refill_min, devices=devices, tasks=tasks, progress=progress,
                              stall_timeout=stall_timeout, buckets=buckets, record_pulls=record_pulls,
                              allow_ties=allow_ties)
    validation.as_count("block_steps", block_steps, allow_none=True)
    key = validation.as_key(key)
    # -- progress bar (jaxbandits.progress): shown once the run lasts a few seconds -------------
    bar = progress_bar.Bar(None, desc=type(algorithm).__name__, unit="rep",
                           enabled=progress_bar.wanted(progress), status="preparing")
    try:
        return _simulate(algorithm, instances, key, n_reps, max_steps, lanes=lanes, chunk_size=chunk_size,
                         record_pulls=record_pulls, refill_min=refill_min, devices=devices, tasks=tasks,
                         say=progress_bar.lines(progress), bar=bar, on_chunk=on_chunk,
                         stall_timeout=stall_timeout, precision=precision, buckets=buckets,
                         block_steps=block_steps)
    finally:
        bar.close()


def _simulate(algorithm, instances, key, n_reps, max_steps, *, lanes, chunk_size, record_pulls, refill_min,
              devices, tasks, say, bar, on_chunk, stall_timeout, precision, buckets, block_steps) -> Results:
    """The body of :func:`simulate`, on checked arguments."""
    if devices is None:
        devices = jax.local_devices() if distributed.process_count() > 1 else jax.devices()
    devices = list(devices)
    K_real, M_real = instances.num_arms, instances.num_items
    bucket = None
    if buckets is not None and algorithm.supports_padding and not instances.is_padded:
        bucket = buckets.shape_for(instances)
        instances = pad_to(instances, *bucket)
    stall_timeout = timeout_for(devices, stall_timeout)
    inst, t_prep, prep_compile = _prepare(algorithm, instances, stall_timeout)
    J = inst.batch_shape[0]
    all_tasks = _task_list(tasks, J * int(n_reps))

    key = jnp.asarray(key)
    _, dynamic = algorithm.split_dynamic()
    n_reps_arr = jnp.asarray(int(n_reps), jnp.int32)
    # steps are int32: validation.check_simulate refuses a cap beyond 2**31 - 1
    max_steps_arr = jnp.asarray(int(max_steps), jnp.int32)
    bar.status("compiling")
    compiled, layout, compile_time = _plan_and_compile(
        algorithm, inst, key, dynamic, n_reps_arr, max_steps_arr, devices, lanes, chunk_size, refill_min,
        record_pulls, block_steps, all_tasks.size)
    D, L, chunk_per_dev = layout.devices, layout.lanes, layout.chunk_per_device

    got = _Collected(J * int(n_reps), inst.num_arms, inst.num_items, record_pulls)
    per_call = D * chunk_per_dev
    lane_steps = 0
    t_start = time.perf_counter()
    done_count = 0
    bar.set_total(all_tasks.size, status="")
    for c0 in range(0, all_tasks.size, per_call):
        ids = all_tasks[c0:c0 + per_call]
        # Spread a short last chunk evenly over devices so no device idles on padding alone.
        padded = np.full((D, chunk_per_dev), -1, np.int32)
        for dev, part in enumerate(np.array_split(ids, D)):
            padded[dev, :part.size] = part
        dispatched: list = []

        def call(*args):
            out = compiled(*args)
            dispatched.append(out)
            return out

        try:
            out, iters = run_guarded(call, jnp.asarray(padded.reshape(-1)), inst, key, dynamic, max_steps_arr,
                                     n_reps_arr, stall_timeout=stall_timeout, what=f"chunk at task {c0}",
                                     fetch=lambda o: jax.tree.map(np.array, o))
        except KeyboardInterrupt:
            for o in dispatched:
                programs.note_interrupted(o)
            raise
        flat = padded.reshape(-1)
        sel = flat >= 0
        tid = flat[sel]
        got.add(tid, out, sel)
        lane_steps += int(np.sum(np.asarray(iters))) * L
        done_count += tid.size
        if bucket is not None:
            _check_padding(out, sel, K_real, M_real, record_pulls)
        if on_chunk is not None:
            on_chunk(tid, dict(samples=got.samples[tid], steps=got.steps[tid], correct=got.correct[tid],
                               stopped=got.stopped[tid], answer=got.answer[tid, :M_real]))
        bar.update(tid.size)
        if say is not None:
            el = time.perf_counter() - t_start
            rate = done_count / el if el > 0 else float("inf")
            left = (all_tasks.size - done_count) / rate if rate > 0 else float("nan")
            say(f"  {done_count}/{all_tasks.size} replications, {rate:.1f}/s, ~{left:.0f}s left")
    wall = time.perf_counter() - t_start + t_prep
    if distributed.process_count() > 1:
        got.gather()
        lane_steps = int(distributed.gather_sum(lane_steps))
    useful = int(got.steps[got.ran].sum())
    shape = (J, int(n_reps))
    return Results(
        samples=got.samples.reshape(shape), steps=got.steps.reshape(shape), correct=got.correct.reshape(shape),
        stopped=got.stopped.reshape(shape), answer=got.answer[:, :M_real].reshape(shape + (M_real,)),
        pulls=None if got.pulls is None else got.pulls[:, :K_real].reshape(shape + (K_real,)),
        ran=got.ran.reshape(shape), efficiency=useful / lane_steps if lane_steps else float("nan"),
        wall_time=wall, compile_time=compile_time + prep_compile, lane_steps=lane_steps, useful_steps=useful,
        devices=D, lanes=L, chunk_size=per_call, error_defined=not algorithm.correct_by_construction,
        layout=layout, num_arms=K_real, num_items=M_real, bucket=bucket,
        converged=got.converged.reshape(shape),
    )


def _check_padding(out, sel, K: int, M: int, record_pulls: bool) -> None:
    """Padded arms are never pulled and padded items never returned: a violation is a kernel bug
    (``supports_padding`` declared wrongly), never silently sliced away."""
    if np.any(out.answer[sel][:, M:]):
        raise RuntimeError("a padded item was returned: the algorithm does not respect item_mask")
    if record_pulls and np.any(out.pulls[sel][:, K:]):
        raise RuntimeError("a padded arm was pulled: the algorithm does not respect arm_mask")
