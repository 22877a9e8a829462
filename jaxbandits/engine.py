"""The batched runner: many replications of an algorithm on many instances, on every device.

``simulate(algorithm, instances, key, n_reps, max_steps)`` runs replication i of instance j for
every (j, i) and returns per-replication results.  How (DESIGN.md, "two hard problems"):

* **Lane refilling.**  A device runs a fixed number of *lanes* (vmapped replications) inside one
  ``lax.while_loop``.  When a lane's replication stops (``algorithm.done``) or hits ``max_steps``,
  its outcome is written to the output buffer and the lane is re-initialised with the next pending
  replication of the chunk, inside the same compiled loop.  A lane therefore idles only at the
  very end of a chunk; ``Results.efficiency`` (useful replication-steps / lane-steps executed)
  reports how close to 1 that keeps the work.  The refill (``init`` of new replications and the
  scatter of finished outcomes) sits behind a ``lax.cond`` on "any lane finished": outside the
  vmap, so iterations where no lane finished do not pay for it.
* **Reproducibility independent of batching.**  The key of replication i of instance j is
  ``fold_in(fold_in(key, j), i)``; its step keys are ``fold_in(run_key, t)`` with t the step
  index of that replication.  Nothing depends on the lane a replication ran in, the chunk size,
  the number of lanes or devices, or the order of refills (tested).
* **Chunks** bound memory (output buffers hold ``chunk_size`` replications), give the progress
  report and the ``on_chunk`` hook (experiments write results as they go), and let a run resume:
  pass ``tasks`` to run only the replications not yet on disk.
* **Devices.**  Every visible device runs its own loop on its share of the chunk
  (``jax.shard_map``; each device has its own "any lane running" test, so no cross-device
  reduction per iteration).  On a CPU-only machine, set
  ``XLA_FLAGS=--xla_force_host_platform_device_count=<cores>`` before importing jax to use all
  cores (`python -m experiments NAME --devices 2` does this).

* **Shape buckets.**  With ``buckets`` (a :class:`jaxbandits.instances.base.Buckets` policy), an
  algorithm that declares ``supports_padding`` runs on its instances padded to the bucket
  (:func:`jaxbandits.instances.base.pad_to`: zero arms and items, masked out), so sizes that
  share a bucket share one program; results are read back at the real K and M (a pull of a
  padded arm or a padded item returned raises: it would be a kernel bug).

Everything is compiled once per (static algorithm configuration, shapes, lanes, chunk size): all
chunks share one executable, and ``compile_time`` is reported apart from the run's wall time.
``max_steps``, ``n_reps`` and the algorithm's ``dynamic_fields`` (delta, epsilon, sigma, budgets,
tolerances, ...; docs/design.md section 5) are traced arguments of that executable, not part of its
key, and the default lanes and chunk size depend on the backend, shapes and memory but never on the
number of tasks, so a sweep over those fields, another ``n_reps``, a resumed task list or a longer
run all reuse one program.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import time
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, PartitionSpec as P

from jaxbandits import batching, distributed, programs, validation
from jaxbandits import progress as progress_bar
from jaxbandits import precision as precision_policy
from jaxbandits.algorithms.base import Algorithm, is_correct
from jaxbandits.instances.base import Buckets, Instance, as_batch, pad_to
from jaxbandits.stats import summarize
from jaxbandits.watchdog import run_guarded, timeout_for


class _Lane(NamedTuple):
    slot: jax.Array      # index in the chunk's task list (>= C: no task)
    active: jax.Array    # running a replication
    finished: jax.Array  # replication over, outcome not yet written to the output buffer
    steps: jax.Array     # steps taken by this replication
    key: jax.Array       # the replication's run key
    state: Any           # the algorithm state
    inst: jax.Array      # index of the replication's instance in the shared batch


class _Out(NamedTuple):
    answer: jax.Array    # [C, M] bool
    samples: jax.Array   # [C]
    steps: jax.Array     # [C]
    stopped: jax.Array   # [C] bool
    correct: jax.Array   # [C] bool
    pulls: jax.Array     # [C, K] (or [C, 0] when not recorded)


@dataclasses.dataclass
class Results:
    """Per-replication results of :func:`simulate`, arrays with leading axes [n_instances, n_reps].

    Attributes:
      samples: number of pulls used (stopping time, or budget spent); for runs that hit the cap,
        the pulls made so far (a lower bound: ``stopped`` is False).
      steps: number of ``step`` calls (decisions or phases).
      correct: the answer is (epsilon, m)-correct.
      stopped: the algorithm stopped by itself before ``max_steps``.
      answer: [.., M] bool mask of the returned items.
      pulls: [.., K] per-arm pulls (None unless ``record_pulls``).
      ran: which replications this call ran (all, unless ``tasks`` restricted it).
      efficiency: useful replication-steps / lane-steps executed (1 = no idle lanes).
      wall_time: seconds spent running (compilation excluded), compile_time: seconds compiling
        (the chunk runner, and the per-instance programs of ``prepare``).
      lane_steps: lane-steps executed; useful_steps: replication-steps done.
      devices, lanes, chunk_size: how the run was laid out.
      layout: the :class:`Layout` chosen (platform, lanes, chunk, solve batching, memory).
      error_defined: False when the algorithm's answer is correct by construction
        (``Algorithm.correct_by_construction``); summaries then report the error rate as n/a.
      precision: "float64" or "float32" (:mod:`jaxbandits.precision`).
      num_arms, num_items: the real K and M (of the instances given); bucket: (K, M) of the
        padded instances the program ran on (shape buckets), None when not padded.
    """

    samples: np.ndarray
    steps: np.ndarray
    correct: np.ndarray
    stopped: np.ndarray
    answer: np.ndarray
    pulls: np.ndarray | None
    ran: np.ndarray
    efficiency: float
    wall_time: float
    compile_time: float
    lane_steps: int
    useful_steps: int
    devices: int
    lanes: int
    chunk_size: int
    error_defined: bool = True
    layout: Layout | None = None
    precision: str = "float64"
    num_arms: int | None = None
    num_items: int | None = None
    bucket: tuple[int, int] | None = None

    @property
    def n_instances(self) -> int:
        return self.samples.shape[0]

    @property
    def n_reps(self) -> int:
        return self.samples.shape[1]

    def summary(self, level: float = 0.95) -> dict:
        """Sample-complexity statistics, error rate with Clopper-Pearson interval, capped
        fraction, wall time and lane efficiency over the replications that ran."""
        r = self.ran
        out = summarize(self.samples[r], self.correct[r], self.stopped[r], level,
                        error_defined=self.error_defined)
        out.update(wall_time=self.wall_time, compile_time=self.compile_time,
                   efficiency=self.efficiency,
                   steps_per_second=self.useful_steps / self.wall_time if self.wall_time > 0 else float("nan"))
        return out

    def rows(self) -> list[dict]:
        """One dict per replication that ran (instance, rep, samples, steps, correct, stopped,
        answer as the index list of returned items)."""
        out = []
        J, R = self.samples.shape
        for j in range(J):
            for i in range(R):
                if not self.ran[j, i]:
                    continue
                out.append(dict(instance=j, rep=i, samples=int(self.samples[j, i]),
                                steps=int(self.steps[j, i]), correct=bool(self.correct[j, i]),
                                stopped=bool(self.stopped[j, i]),
                                answer=" ".join(map(str, np.flatnonzero(self.answer[j, i])))))
        return out


def replication_key(key: jax.Array, instance_index, rep_index) -> jax.Array:
    """Key of replication ``rep_index`` on instance ``instance_index``: depends on nothing else."""
    return jax.random.fold_in(jax.random.fold_in(key, instance_index), rep_index)


def _select(mask, new, old):
    """Per-lane select over a pytree of [L, ...] leaves."""
    def sel(a, b):
        m = mask.reshape(mask.shape + (1,) * (a.ndim - 1))
        return jnp.where(m, a, b)
    return jax.tree.map(sel, new, old)


def _default_lanes(instances: Instance) -> int:
    """CPU lanes: ``CPU_LANES``, down to 16 where one lane-batch of per-arm arrays (K x d floats) would
    outgrow a few MiB, well inside the L3 cache (docs/design.md, scale: batches whose per-step
    arrays outgrow the L3 got slower per step).  Depends on the shapes only, never on the number of
    replications: a run's program must not change with ``n_reps`` or a resumed task list."""
    K, d = instances.arms.shape[-2:]
    M = instances.items.shape[-2]
    per_lane = 8 * (K * d + M * d + K + M + d * d) * 4
    return _pow2_floor(int(np.clip(2**22 // max(per_lane, 1), 16, CPU_LANES)))


def _pow2_floor(n: int) -> int:
    """Largest power of two <= n (n >= 1): memory-derived sizes land on a few values, so a small
    change in free memory between two runs does not change the program."""
    return 1 << (max(1, int(n)).bit_length() - 1)


#: lanes per CPU device.  Fixed (not scaled with the task count), so that n_reps, a resumed task
#: list or the number of chunks never changes the compiled program; lanes past the last task are
#: masked, and still stepped.  Measured on 2 shared cores (XY-static, uniform GLR and RAGE on
#: small instances): a 12-replication run costs 0.1-0.7 s at 8 to 64 lanes against 9-23 s of
#: compilation, so masked lanes are cheap next to a recompile; 200 replications of the uniform
#: GLR ran at lane efficiency 0.89 / 0.77 / 0.61 with 16 / 32 / 64 lanes (the idle tail at the end
#: of a chunk grows with the lanes; m-LinGapE, 1000 reps: 64 lanes 0.94 against 512 lanes 0.59).
CPU_LANES = 32
#: replications per chunk and device, in lanes (output buffers hold a chunk)
CHUNK_LANES = 16
#: lanes never exceed this on an accelerator (a step's launch cost is amortised long before; a
#: fixed value rather than the task count, see ``CPU_LANES``)
MAX_ACCELERATOR_LANES = 1 << 12
#: fraction of a device's free memory a run may plan to use
MEMORY_FRACTION = 0.5
#: working-set multiple of a lane's carried bytes (the loop carry, its selected copy, the step's
#: temporaries); the compiled program's own memory analysis is checked afterwards
WORKING_SET_FACTOR = 6


def free_memory(device) -> int | None:
    """Bytes free on ``device``: the allocator's limit minus its use on an accelerator, the
    host's available memory on a CPU (None when unknown)."""
    if getattr(device, "platform", "cpu") != "cpu":
        try:
            st = device.memory_stats() or {}
        except Exception:  # backends without memory statistics
            st = {}
        if "bytes_limit" in st:
            return int(st["bytes_limit"]) - int(st.get("bytes_in_use", 0))
        return None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def lane_bytes(algorithm: Algorithm, instances: Instance) -> int:
    """Bytes one lane carries: the algorithm state (from its shapes, ``jax.eval_shape``, nothing
    is computed), the lane's bookkeeping, and, with several instances, the instance a lane gathers
    each step.  Instances themselves are shared by all lanes, never copied per lane."""
    one = instance_at(instances, jnp.zeros((), jnp.int32))
    st = jax.eval_shape(algorithm.init, jax.random.key(0), one)
    nbytes = sum(int(np.prod(a.shape)) * a.dtype.itemsize for a in jax.tree.leaves(st))
    K, M = instances.num_arms, instances.num_items
    nbytes += 8 * (K + M) + 64
    if instances.batch_shape[0] > 1:
        nbytes += sum(int(np.prod(a.shape[1:])) * a.dtype.itemsize for a in jax.tree.leaves(instances))
    return nbytes


@dataclasses.dataclass(frozen=True)
class Layout:
    """How :func:`simulate` laid a run out on the devices, chosen from the backend and memory
    unless the caller fixed it; reported in :class:`Results` and the experiments' metadata.

    Attributes:
      platform: device platform ("cpu", "gpu", "tpu").
      devices: number of devices; lanes: replications stepped together per device;
      chunk_per_device: replications per compiled call per device; refill_min: free lanes that
      trigger a refill.
      batched_solve, solve_capacity: how :func:`jaxbandits.batching.solve_where` serves lanes.
      bytes_per_lane: carried bytes per lane (:func:`lane_bytes`); free_bytes: free device memory
      seen when the layout was chosen (None: unknown); program_bytes: the compiled program's
      temporary + argument + output bytes when the backend reports them.
    """

    platform: str
    devices: int
    lanes: int
    chunk_per_device: int
    refill_min: int
    batched_solve: bool
    solve_capacity: int | None
    bytes_per_lane: int
    free_bytes: int | None
    program_bytes: int | None = None


def choose_lanes(platform: str, bytes_per_lane: int, free: int | None, instances: Instance) -> int:
    """Default lanes per device, from the backend, the shapes and memory only (never the number of
    tasks, so ``n_reps``, resumed task lists and chunk counts reuse one program).

    CPU: sized for the L3 cache (:func:`_default_lanes`), and never more than memory allows.
    Accelerator: as many lanes as ``MEMORY_FRACTION`` of the free memory holds at
    ``WORKING_SET_FACTOR`` times the carried bytes per lane (a GPU step costs kernel launches
    whatever its width, so it pays off only with many lanes), capped at ``MAX_ACCELERATOR_LANES``.
    Rounded down to a power of two.
    """
    per_lane = max(1, WORKING_SET_FACTOR * bytes_per_lane)
    by_memory = MAX_ACCELERATOR_LANES if free is None else max(1, int(MEMORY_FRACTION * free) // per_lane)
    if platform == "cpu":
        lanes = min(_default_lanes(instances), by_memory)
    else:
        lanes = min(by_memory, MAX_ACCELERATOR_LANES)
    return _pow2_floor(lanes)


def instance_at(instances: Instance, j: jax.Array) -> Instance:
    """Instance ``j`` of the shared batch, as the kernels see it.

    Lanes hold an instance *index*, never a copy of the instance.  With a single instance (the
    common Monte Carlo study) the index is ignored and the kernels get the one instance
    unbatched: under ``vmap`` its arms, items and caches stay one shared array, and products such
    as ``X @ v`` over the lanes become one matrix product instead of per-lane copies.  With a batch,
    each lane gathers its instance's leaves where it reads them.
    """
    if instances.batch_shape[0] == 1:
        return jax.tree.map(lambda a: a[0], instances)
    return jax.tree.map(lambda a: a[j], instances)


def _make_chunk_runner(static_algorithm: Algorithm, lanes: int,
                       chunk: int, record_pulls: bool, refill_min: int):
    """Per-device loop over one chunk of ``chunk`` task ids with ``lanes`` refilled lanes.

    Finished lanes wait (idle) until ``refill_min`` lanes are free, then all are written out and
    refilled in one batched ``init``: algorithms whose ``init`` is expensive (a design solve) do
    not pay a full-width ``init`` every iteration.  The returned ``run`` takes the algorithm's
    dynamic field values, ``max_steps`` and ``n_reps`` as traced arguments.
    """
    L, C = lanes, chunk

    def lane_for(algorithm, n_reps, slot, task_ids, instances, key):
        valid = slot < C
        tid = task_ids[jnp.minimum(slot, C - 1)]
        valid = valid & (tid >= 0)
        tid = jnp.maximum(tid, 0)
        j, i = tid // n_reps, tid % n_reps
        k_init, k_run = jax.random.split(replication_key(key, j, i))
        state = algorithm.init(k_init, instance_at(instances, j))
        return _Lane(slot, valid, jnp.zeros((), bool), jnp.zeros((), jnp.int32), k_run, state, j.astype(jnp.int32))

    def run(task_ids, instances, key, dynamic, max_steps, n_reps):
        algorithm = static_algorithm.with_dynamic(dynamic)
        lane_init = jax.vmap(functools.partial(lane_for, algorithm, n_reps), in_axes=(0, None, None, None))
        lanes0 = lane_init(jnp.arange(L), task_ids, instances, key)
        M = instances.items.shape[-2]
        K = instances.arms.shape[-2]
        outcome = jax.vmap(lambda st, j: algorithm.outcome(st, instance_at(instances, j)))
        proto = jax.eval_shape(lambda l: outcome(l.state, l.inst), lanes0)
        out0 = _Out(
            answer=jnp.zeros((C, M), bool),
            samples=jnp.zeros((C,), proto.samples.dtype),
            steps=jnp.zeros((C,), jnp.int32),
            stopped=jnp.zeros((C,), bool),
            correct=jnp.zeros((C,), bool),
            pulls=jnp.zeros((C, K if record_pulls else 0), proto.pulls.dtype),
        )
        m, eps = algorithm.top_m, algorithm.slack

        def step_lane(lane: _Lane):
            k = jax.random.fold_in(lane.key, lane.steps)
            return algorithm.step(k, lane.state, instance_at(instances, lane.inst))

        def cond(carry):
            lanes_, _, _, _ = carry
            return jnp.any(lanes_.active | lanes_.finished)

        def refill(args):
            lanes_, nxt, out = args
            fin = lanes_.finished
            oc = outcome(lanes_.state, lanes_.inst)
            corr = jax.vmap(lambda a, j: is_correct(a, instance_at(instances, j), m, eps))(oc.answer, lanes_.inst)
            idx = jnp.where(fin, lanes_.slot, C)  # C is out of bounds: dropped
            upd = lambda buf, val: buf.at[idx].set(val, mode="drop")
            out = _Out(
                answer=upd(out.answer, oc.answer),
                samples=upd(out.samples, oc.samples),
                steps=upd(out.steps, lanes_.steps),
                stopped=upd(out.stopped, jax.vmap(algorithm.done)(lanes_.state)),
                correct=upd(out.correct, corr),
                pulls=upd(out.pulls, oc.pulls) if record_pulls else out.pulls,
            )
            free = ~lanes_.active
            new_slots = nxt + jnp.cumsum(free, dtype=nxt.dtype) - 1
            fresh = lane_init(jnp.where(free, new_slots, C), task_ids, instances, key)
            lanes_ = _select(free, fresh, lanes_)
            return lanes_, jnp.minimum(nxt + jnp.sum(free, dtype=nxt.dtype), C), out

        def body(carry):
            lanes_, nxt, out, iters = carry
            new_state = jax.vmap(step_lane)(lanes_)
            state = _select(lanes_.active, new_state, lanes_.state)
            steps = lanes_.steps + lanes_.active.astype(jnp.int32)
            stop = jax.vmap(algorithm.done)(state)
            fin = lanes_.active & (stop | (steps >= max_steps))
            lanes_ = lanes_._replace(state=state, steps=steps, active=lanes_.active & ~fin,
                                     finished=lanes_.finished | fin)
            n_free = jnp.sum(~lanes_.active)
            trigger = jnp.any(lanes_.finished) & (
                ((n_free >= refill_min) & (nxt < C)) | ~jnp.any(lanes_.active))
            lanes_, nxt, out = jax.lax.cond(trigger, refill, lambda a: a, (lanes_, nxt, out))
            return lanes_, nxt, out, iters + 1

        carry = (lanes0, jnp.asarray(L, jnp.int32), out0, jnp.zeros((), jnp.result_type(int)))
        _, _, out, iters = jax.lax.while_loop(cond, body, carry)
        return out, iters[None]

    return run


#: where recorded counts saturate: a phase-based algorithm that never stops (a capped run) can
#: reach ceil(gamma^t) ~ 1e49 samples or inf in float, which an int64 cast would wrap to -2^63
COUNT_LIMIT = 2**62


def _counts(x) -> np.ndarray:
    """Sample / pull counts (floats in the algorithms' states) as int64, saturated at
    :data:`COUNT_LIMIT` (NaN too: only a run that lost its count can have one)."""
    x = np.asarray(x, np.float64)
    return np.where(np.isfinite(x) & (x < COUNT_LIMIT), np.maximum(x, 0.0), COUNT_LIMIT).astype(np.int64)


_RUNNERS: dict = {}
_COMPILES = [0]
_COMPILE_SECONDS = [0.0]


def programs_compiled() -> int:
    """Number of engine programs compiled so far in this process (a cache miss of
    :func:`simulate`): tests and experiments count recompilations with it instead of timing them.
    A program loaded from the persistent compilation cache (:mod:`jaxbandits.compilation_cache`)
    counts too: it is traced and lowered again, only XLA's compilation is skipped."""
    return _COMPILES[0]


def compile_seconds() -> float:
    """Seconds this process spent tracing, lowering and compiling (or loading from the persistent
    cache) engine programs."""
    return _COMPILE_SECONDS[0]


def program_bytes(compiled) -> int | None:
    """Temporary + argument + output bytes of a compiled program, when the backend reports them."""
    try:
        m = compiled.memory_analysis()
        return int(m.temp_size_in_bytes + m.argument_size_in_bytes + m.output_size_in_bytes)
    except Exception:  # not every backend implements it
        return None


def _compiled_runner(static_algorithm, dynamic, instances, key, n_reps, max_steps, lanes, chunk_per_dev,
                     record_pulls, devices, refill_min, solve=batching.SolvePolicy()):
    """Compile (once per configuration and shapes) the multi-device chunk runner.

    The key leaves out ``max_steps``, ``n_reps`` and the values of the algorithm's dynamic fields
    (their shapes and dtypes are in it): those are arguments of the executable.
    """
    D = len(devices)
    sig = (static_algorithm, lanes, chunk_per_dev, record_pulls, tuple(devices), refill_min, solve,
           jax.tree.map(lambda a: (a.shape, a.dtype), instances), instances.model,
           jax.tree.structure(dynamic), tuple((v.shape, v.dtype) for v in jax.tree.leaves(dynamic)))
    if sig in _RUNNERS:
        return _RUNNERS[sig], 0.0
    # near the kernel's limit on memory mappings, drop the compiled programs first (their
    # mappings go back; jaxbandits.programs): a long job never dies at the limit nor restarts
    if not programs.release_if_high() and len(_RUNNERS) >= 64:  # off Linux: a bound on the count
        programs.release()
    run = _make_chunk_runner(static_algorithm, lanes, chunk_per_dev, record_pulls, refill_min)
    if D > 1:
        mesh = Mesh(np.asarray(devices), ("d",))
        run = jax.shard_map(run, mesh=mesh, in_specs=(P("d"), P(), P(), P(), P(), P()), out_specs=(P("d"), P("d")),
                            check_vma=False)
    fn = jax.jit(run)
    t0 = time.perf_counter()
    tasks_proto = jnp.zeros((D * chunk_per_dev,), jnp.int32)
    with batching.policy(solve):  # solve_where reads it while the kernels are traced
        compiled = fn.lower(tasks_proto, instances, key, dynamic, max_steps, n_reps).compile()
    _COMPILES[0] += 1
    programs.mapping_usage()  # records the peak (right after a compile)
    ct = time.perf_counter() - t0
    _COMPILE_SECONDS[0] += ct
    _RUNNERS[sig] = compiled
    return compiled, ct


def _with_precision(fn):
    """Run :func:`simulate` under its precision (:mod:`jaxbandits.precision`): float64 unless
    ``precision="float32"`` was asked for an algorithm validated in float32; the instances are cast
    to that dtype, and a float32 instance without the request is refused.  The caller's global
    x64 setting is left as it was."""

    @functools.wraps(fn)
    def wrapper(algorithm, instances, *args, precision: str | None = None, **kwargs):
        validation.check_algorithm(algorithm)  # input checks (jaxbandits.validation) before any cast
        validation.check_instances(instances)
        prec = precision_policy.resolve(precision, algorithm, instances)
        with precision_policy.context(prec):
            if isinstance(instances, Instance):
                instances = precision_policy.cast_instance(instances, prec)
            res = fn(algorithm, instances, *args, precision=prec, **kwargs)
        return dataclasses.replace(res, precision=prec)

    return wrapper


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
      lanes: replications stepped together per device (default: :func:`choose_lanes`, from the
        backend, shapes and memory, never from the number of tasks: ``CPU_LANES`` on a CPU, as many
        as memory holds on an accelerator, where a program too large for the free memory is
        recompiled with half the lanes; lanes without a task are masked).  Results never depend
        on it.
      chunk_size: replications per compiled call over all devices (bounds memory; default
        ``CHUNK_LANES`` lanes' worth per device, with output buffers within a tenth of free
        memory).  Results never depend on it.
      record_pulls: keep per-arm pull counts [.., K].
      refill_min: refill finished lanes once at least this many lanes are free (default
        ``max(1, lanes // 16)``: each refill is one batched ``init`` over all lanes, so waiting for
        a few free lanes amortises expensive inits at the price of a few idle lane-steps).
      devices: devices to spread over (default: all of ``jax.devices()``).
      tasks: flat task ids ``j * n_reps + i`` to run (default all): resume support.
      progress: a progress bar of replications (done, rate, time left; :mod:`jaxbandits.progress`)
        when the run lasts more than a few seconds: None (default) shows it when stderr is a
        terminal, True always, False never; a callable receives one line after every chunk instead.
      on_chunk: called after every chunk with (task ids, dict of flat per-task arrays).
      stall_timeout: if the process makes no CPU progress for this many seconds while a chunk
        is pending, raise :class:`jaxbandits.watchdog.StalledComputation` instead of hanging
        (XLA:CPU runtime wedge, see :mod:`jaxbandits.watchdog`; default 30 s or
        ``JAXBANDITS_STALL_TIMEOUT`` on CPU devices, off on accelerators, where the host idles
        while a long chunk runs; 0 disables).  Chunks already done reached ``on_chunk``.
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
    key = validation.as_key(key)
    # -- progress bar (jaxbandits.progress): shown once the run lasts a few seconds -------------
    bar = progress_bar.Bar(None, desc=type(algorithm).__name__, unit="rep",
                           enabled=progress_bar.wanted(progress), status="preparing")
    try:
        return _simulate(algorithm, instances, key, n_reps, max_steps, lanes=lanes, chunk_size=chunk_size,
                         record_pulls=record_pulls, refill_min=refill_min, devices=devices, tasks=tasks,
                         say=progress_bar.lines(progress), bar=bar, on_chunk=on_chunk,
                         stall_timeout=stall_timeout, precision=precision, buckets=buckets)
    finally:
        bar.close()


def _simulate(algorithm, instances, key, n_reps, max_steps, *, lanes, chunk_size, record_pulls, refill_min,
              devices, tasks, say, bar, on_chunk, stall_timeout, precision, buckets) -> Results:
    """The body of :func:`simulate`, on checked arguments."""
    if devices is None:  # in a jax.distributed run, this process's devices (jaxbandits.distributed)
        devices = jax.local_devices() if distributed.process_count() > 1 else jax.devices()
    devices = list(devices)
    K_real, M_real = instances.num_arms, instances.num_items
    bucket = None
    if buckets is not None and algorithm.supports_padding and not instances.is_padded:
        bucket = buckets.shape_for(instances)
        instances = pad_to(instances, *bucket)
    devices = list(devices) if devices is not None else jax.devices()
    stall_timeout = timeout_for(devices, stall_timeout)
    c_prep = programs.PREPARE_COMPILE_SECONDS[0]
    t_prep = time.perf_counter()
    # per-instance precomputation (counted as run time; the compilation of its programs, ahead of
    # time in map_instances, as compile time), guarded like the chunks
    inst = run_guarded(algorithm.prepare, as_batch(instances), stall_timeout=stall_timeout, what="prepare")
    t_prep = time.perf_counter() - t_prep
    prep_compile = min(programs.PREPARE_COMPILE_SECONDS[0] - c_prep, t_prep)
    t_prep -= prep_compile
    J = inst.batch_shape[0]
    T = J * int(n_reps)
    all_tasks = np.arange(T, dtype=np.int64) if tasks is None else np.unique(np.asarray(tasks, np.int64))
    validation.check_task_range(all_tasks, T)
    all_tasks = distributed.process_share(all_tasks)  # this process's share (all of them on one host)
    D = len(devices)
    platform = getattr(devices[0], "platform", "cpu")
    free = free_memory(devices[0])
    bpl = lane_bytes(algorithm, inst)
    # The layout depends on the backend, the shapes and memory, never on the number of tasks:
    # lanes and chunks past the last task are masked (task id -1), so n_reps, a resumed task list
    # and the number of chunks all reuse one program.
    L = int(lanes) if lanes else choose_lanes(platform, bpl, free, inst)
    # per-task output buffers ([C, M] answers, [C, K] pulls) stay within a tenth of free memory
    out_bytes = inst.num_items + (8 * inst.num_arms if record_pulls else 0) + 32
    max_chunk = CHUNK_LANES * L if free is None else _pow2_floor(max(1, int(0.1 * free) // out_bytes))
    if chunk_size is None:
        chunk_per_dev = max(1, min(CHUNK_LANES * L, max_chunk))
    else:
        chunk_per_dev = max(1, math.ceil(int(chunk_size) / D))
    L = min(L, chunk_per_dev)
    if T >= 2**31:
        raise ValueError("too many replications for int32 task ids; split the run")

    M, K = inst.num_items, inst.num_arms
    samples = np.zeros((T,), np.int64)
    steps = np.zeros((T,), np.int64)
    correct = np.zeros((T,), bool)
    stopped = np.zeros((T,), bool)
    answer = np.zeros((T, M), bool)
    pulls = np.zeros((T, K), np.int64) if record_pulls else None
    ran = np.zeros((T,), bool)

    key = jnp.asarray(key)
    static_algorithm, dynamic = algorithm.split_dynamic()
    n_reps_arr = jnp.asarray(int(n_reps), jnp.int32)
    # steps are int32; a larger cap is never reached
    max_steps_arr = jnp.asarray(min(int(max_steps), 2**31 - 1), jnp.int32)
    compile_time = prep_compile
    bar.status("compiling")
    while True:
        rmin = max(1, min(L, int(refill_min) if refill_min is not None else L // 16))
        solve = batching.solve_for(platform, L)
        compiled, ct = _compiled_runner(static_algorithm, dynamic, inst, key, n_reps_arr, max_steps_arr, L,
                                        chunk_per_dev, record_pulls, devices, rmin, solve)
        compile_time += ct
        need = program_bytes(compiled)
        # on an accelerator, a program that would not fit shrinks its lanes instead of failing
        if (platform == "cpu" or lanes or free is None or need is None or need <= 0.9 * free or L == 1):
            break
        L = max(1, L // 2)
    refill_min = rmin
    layout = Layout(platform=platform, devices=D, lanes=L, chunk_per_device=chunk_per_dev, refill_min=refill_min,
                    batched_solve=solve.batched, solve_capacity=solve.capacity, bytes_per_lane=bpl,
                    free_bytes=free, program_bytes=need)
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
        out, iters = run_guarded(compiled, jnp.asarray(padded.reshape(-1)), inst, key, dynamic, max_steps_arr, n_reps_arr,
                                 stall_timeout=stall_timeout, what=f"chunk at task {c0}",
                                 fetch=lambda o: jax.tree.map(np.array, o))
        flat = padded.reshape(-1)
        sel = flat >= 0
        tid = flat[sel]
        samples[tid] = _counts(out.samples[sel])
        steps[tid] = out.steps[sel]
        correct[tid] = out.correct[sel]
        stopped[tid] = out.stopped[sel]
        answer[tid] = out.answer[sel]
        if record_pulls:
            pulls[tid] = _counts(out.pulls[sel])
        ran[tid] = True
        lane_steps += int(np.sum(np.asarray(iters))) * L
        done_count += tid.size
        if bucket is not None:
            _check_padding(out, sel, K_real, M_real, record_pulls)
        if on_chunk is not None:
            on_chunk(tid, dict(samples=samples[tid], steps=steps[tid], correct=correct[tid],
                               stopped=stopped[tid], answer=answer[tid, :M_real]))
        bar.update(tid.size)
        if say is not None:
            el = time.perf_counter() - t_start
            rate = done_count / el if el > 0 else float("inf")
            left = (all_tasks.size - done_count) / rate if rate > 0 else float("nan")
            say(f"  {done_count}/{all_tasks.size} replications, {rate:.1f}/s, ~{left:.0f}s left")
    wall = time.perf_counter() - t_start + t_prep
    if distributed.process_count() > 1:  # every process gets every process's replications
        merged, ran = distributed.gather_results(dict(samples=samples, steps=steps, correct=correct,
                                                      stopped=stopped, answer=answer, pulls=pulls), ran)
        samples, steps, correct, stopped, answer = (merged[k] for k in ("samples", "steps", "correct",
                                                                       "stopped", "answer"))
        pulls = merged["pulls"]
        lane_steps = int(distributed.gather_sum(lane_steps))
    useful = int(steps[ran].sum())
    shape = (J, int(n_reps))
    return Results(
        samples=samples.reshape(shape), steps=steps.reshape(shape), correct=correct.reshape(shape),
        stopped=stopped.reshape(shape), answer=answer[:, :M_real].reshape(shape + (M_real,)),
        pulls=None if pulls is None else pulls[:, :K_real].reshape(shape + (K_real,)), ran=ran.reshape(shape),
        efficiency=useful / lane_steps if lane_steps else float("nan"), wall_time=wall,
        compile_time=compile_time, lane_steps=lane_steps, useful_steps=useful, devices=D, lanes=L,
        chunk_size=per_call, error_defined=not algorithm.correct_by_construction, layout=layout,
        num_arms=K_real, num_items=M_real, bucket=bucket,
    )


def _check_padding(out, sel, K: int, M: int, record_pulls: bool) -> None:
    """Padded arms are never pulled and padded items never returned: a violation is a kernel bug
    (``supports_padding`` declared wrongly), never silently sliced away."""
    if np.any(out.answer[sel][:, M:]):
        raise RuntimeError("a padded item was returned: the algorithm does not respect item_mask")
    if record_pulls and np.any(out.pulls[sel][:, K:]):
        raise RuntimeError("a padded arm was pulled: the algorithm does not respect arm_mask")
