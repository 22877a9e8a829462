"""The layout policy: how many lanes per device, how many replications per compiled call, how
design solves are served, chosen from the backend, the shapes and memory."""
from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jaxbandits import batching
from jaxbandits.algorithms.base import Algorithm, with_batching
from jaxbandits.engine.lanes import instance_at
from jaxbandits.instances.base import Instance


def _default_lanes(instances: Instance) -> int:
    """CPU lanes: ``CPU_LANES``, down to 16 where one lane-batch of per-arm arrays (K x d floats) would
    outgrow a few MiB, well inside the L3 cache (docs/design.md, scale: batches whose per-step
    arrays outgrow the L3 got slower per step).  Depends on the shapes only, never on the number of
    replications: a run's program must not change with ``n_reps`` or a resumed task list."""
    K, d = instances.arms.shape[-2:]
    M = instances.items.shape[-2]
    per_lane = 8 * (K * d + M * d + K + M + d * d) * 4
    return _pow2_floor(int(np.clip(2**22 // max(per_lane, 1), 16, CPU_LANES)))


def _pow2_ceil(n: int) -> int:
    """Smallest power of two >= n (n >= 1)."""
    return 1 << (max(1, int(n)) - 1).bit_length()


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
#: accelerator lanes when the backend does not report its free memory
UNKNOWN_MEMORY_LANES = 1 << 12
#: on an accelerator, lanes follow the tasks per device in powers of two, with about this many
#: replications per lane (refilled lanes keep busy until the chunk's tail)
TASKS_PER_LANE = 4
#: steps per block on a CPU, where the loop's per-step test costs no host round trip.  Measured on 2
#: shared cores (uniform GLR, m-LinGapE, LT&S on small instances, best of 3 runs each, S = 1, 2,
#: 8, 16, 32): rep-steps/s within run-to-run noise of each other (0.2-1.1 M), no S consistently
#: ahead; 1 wastes no masked steps
CPU_BLOCK_STEPS = 1
#: steps per block on an accelerator: each block ends in one host round trip (the "any lane
#: running" test and the refill decision), amortised over this many steps; lanes finishing inside a
#: block idle for half a block on average, small next to replications of hundreds of steps
ACCELERATOR_BLOCK_STEPS = 32
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


def lane_bytes(algorithm: Algorithm, instances: Instance, platform: str = "cpu") -> int:
    """Bytes one lane carries on ``platform``: the algorithm state (from its shapes,
    ``jax.eval_shape`` under the platform's solve policy, as the engine traces it: a state may
    depend on it, e.g. LT&S's paused Frank-Wolfe runs; nothing is computed), the lane's
    bookkeeping, and, with several instances, the instance a lane gathers each step.  Instances
    themselves are shared by all lanes, never copied per lane."""
    one = instance_at(instances, jnp.zeros((), jnp.int32))
    configured = with_batching(algorithm, batching.solve_for(platform, 1))  # as the engine traces it
    st = jax.eval_shape(configured.init, jax.random.key(0), one)
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
      devices: number of devices.
      lanes: replications stepped together per device.
      chunk_per_device: replications per compiled call per device.
      refill_min: free lanes that trigger a refill.
      batched_solve: whether :func:`jaxbandits.batching.solve_where` serves the lanes batched
        (accelerators) or one lane at a time (CPU).
      solve_capacity: lanes gathered per round of the solves (None: every lane of the batch).
      bytes_per_lane: carried bytes per lane (:func:`lane_bytes`).
      free_bytes: free device memory seen when the layout was chosen (None: unknown).
      program_bytes: the compiled program's temporary + argument + output bytes when the backend
        reports them.
      block_steps: steps every lane takes between two checks for finished lanes and refills
        (:func:`choose_block_steps`).
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
    block_steps: int = 1


def choose_block_steps(platform: str, steps_bound: int | None = None) -> int:
    """Default steps per block (the lane loop's compile-time trip count between two checks for
    finished lanes): ``CPU_BLOCK_STEPS`` on a CPU, ``ACCELERATOR_BLOCK_STEPS`` elsewhere, where
    every check is a copy to the host and a wait.

    ``steps_bound``: the most steps a replication can take, where known before the run (the
    ``max_steps`` cap, and :meth:`~jaxbandits.algorithms.base.StepsNeeded.steps_needed` of a
    fixed-budget algorithm).  On an accelerator a block is then no longer than the power of two at
    or above it: a replication of a few steps (GSE's and OD-LinBAI's stages, Peace's epochs) would
    otherwise be followed by a block's worth of masked steps, each as costly as a real one (a
    design solve on every lane).  Rounded up to a power of two, so that budgets that set the
    bound share a few programs.
    """
    if platform == "cpu":
        return CPU_BLOCK_STEPS
    if steps_bound is None or steps_bound >= ACCELERATOR_BLOCK_STEPS:
        return ACCELERATOR_BLOCK_STEPS
    return 1 << max(0, int(steps_bound) - 1).bit_length()


def choose_lanes(platform: str, bytes_per_lane: int, free: int | None, instances: Instance,
                 tasks: int | None = None) -> int:
    """Default lanes per device: a pure function of the backend, the bytes a lane carries, the free
    memory, the shapes (CPU) and the number of tasks per device (accelerators).

    CPU: sized for the L3 cache (:func:`_default_lanes`), never more than memory allows, and never
    dependent on the number of tasks (so ``n_reps``, resumed task lists and chunk counts reuse one
    program; a CPU step is cheap to mask).
    Accelerator: as many lanes as ``MEMORY_FRACTION`` of the free memory holds at
    ``WORKING_SET_FACTOR`` times the carried bytes per lane (a GPU step costs kernel launches
    whatever its width, so it pays off only with many lanes; ``UNKNOWN_MEMORY_LANES`` when the
    backend does not report its memory), and no more than the power of two at or above
    ``tasks / TASKS_PER_LANE``, so that a small run is not one mostly masked chunk while task counts
    share a few programs (one per power of two, never one per ``n_reps``).
    Rounded down to a power of two.
    """
    per_lane = max(1, WORKING_SET_FACTOR * bytes_per_lane)
    if platform == "cpu":
        by_memory = CPU_LANES if free is None else max(1, int(MEMORY_FRACTION * free) // per_lane)
        return _pow2_floor(min(_default_lanes(instances), by_memory))
    by_memory = UNKNOWN_MEMORY_LANES if free is None else max(1, int(MEMORY_FRACTION * free) // per_lane)
    lanes = by_memory
    if tasks is not None:
        lanes = min(lanes, _pow2_ceil(-(-max(1, int(tasks)) // TASKS_PER_LANE)))
    return _pow2_floor(lanes)
