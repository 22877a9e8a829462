"""The batched runner: many replications of an algorithm on many instances, on every device.

Modules: :mod:`~jaxbandits.engine.lanes` (the lane loop a device runs),
:mod:`~jaxbandits.engine.layout` (lanes, chunks and solve batching from the backend and memory),
:mod:`~jaxbandits.engine.results` (:class:`Results`) and :mod:`~jaxbandits.engine.runner`
(:func:`simulate`); compiled programs are cached in :mod:`jaxbandits.programs`.

``simulate(algorithm, instances, key, n_reps, max_steps)`` runs replication i of instance j for
every (j, i) and returns per-replication results.  How (docs/design.md, section 7):

* **Lane refilling.**  A device runs a fixed number of *lanes* (vmapped replications) inside one
  ``lax.while_loop``, which advances them in blocks of ``block_steps`` steps (a loop with a trip
  count fixed at compile time: no host round trip per step on an accelerator).  When a lane's
  replication stops (``algorithm.done``) or hits ``max_steps``, the lane is masked until the block
  ends; then its outcome is written to the output buffer and the lane is re-initialised with the
  next pending replication of the chunk, inside the same compiled loop.  A lane therefore idles
  only for the rest of a block and at the very end of a chunk; ``Results.efficiency`` (useful
  replication-steps / lane-steps executed) reports how close to 1 that keeps the work.  The
  refill (``init`` of new replications and the scatter of finished outcomes) sits behind a
  ``lax.cond`` on "any lane finished": outside the vmap, so blocks where no lane finished do not
  pay for it.
* **Reproducibility independent of batching.**  The key of replication i of instance j is
  ``fold_in(fold_in(key, j), i)``; its step keys are ``fold_in(run_key, t)`` with t the step
  index of that replication.  Nothing depends on the lane a replication ran in, the chunk size,
  the number of lanes or devices, the steps per block, or the order of refills (tested).
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
key, and on a CPU the default lanes and chunk size depend on the shapes and memory but never on
the number of tasks, so a sweep over those fields, another ``n_reps``, a resumed task list or a
longer run all reuse one program (on an accelerator, lanes follow the number of tasks in powers of
two: a few programs, never one per ``n_reps``).
"""
from __future__ import annotations

from jaxbandits.algorithms.base import Algorithm
from jaxbandits.engine.lanes import final_states, instance_at, replication_key
from jaxbandits.engine.layout import Layout
from jaxbandits.engine.results import COUNT_LIMIT, RESULTS, Results
from jaxbandits.engine.runner import simulate
from jaxbandits.programs import RUNNERS as _RUNNERS
from jaxbandits.programs import compile_seconds, program_bytes, programs_compiled

# the layout policy's tuning constants and functions (lanes, chunks, memory) stay in
# jaxbandits.engine.layout: they are how the engine chooses, not what a user calls
__all__ = [
    "simulate", "Results", "RESULTS", "Layout", "replication_key", "final_states", "instance_at", "programs_compiled",
    "compile_seconds", "program_bytes", "COUNT_LIMIT",
]


def __dir__():
    # the public names and the engine's modules, not the names imported to build them
    return sorted(set(__all__) | {"lanes", "layout", "results", "runner"})
