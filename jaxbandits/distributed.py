"""Multi-process runs on JAX's own runtime (``jax.distributed``).

Replications are independent, so :func:`jaxbandits.engine.simulate` spreads them over the processes
of a ``jax.distributed`` run without any cross-process work while they run: process p takes the
p-th contiguous share of the task ids (:func:`process_share`) and runs it on its own local devices
(``jax.local_devices()``, one loop per device as on one host), then every process exchanges its
per-task results with ``multihost_utils.process_allgather`` (:func:`gather_results`), so every
process, process 0 included, returns the whole :class:`~jaxbandits.engine.Results`.  A replication
depends only on its key and its task id, so the result equals a one-process run's (tested in
``tests/test_distributed.py`` with 2 local CPU processes and a local coordinator).

Usage: call ``jax.distributed.initialize(coordinator_address=..., num_processes=..., process_id=...)``
in every process, then the same ``simulate(...)`` call in every process.
"""
from __future__ import annotations

import jax
import numpy as np


def process_count() -> int:
    return jax.process_count()


def process_share(tasks: np.ndarray) -> np.ndarray:
    """This process's contiguous share of ``tasks`` (all of them in a one-process run)."""
    P = jax.process_count()
    if P == 1:
        return tasks
    return np.array_split(tasks, P)[jax.process_index()]


def gather_results(arrays: dict[str, np.ndarray], ran: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Merge per-task arrays ([T, ...], filled where ``ran``; None passes through) over the
    processes: each task ran in exactly one process, whose values are kept.  A no-op in a
    one-process run."""
    if jax.process_count() == 1:
        return arrays, ran
    from jax.experimental import multihost_utils

    with jax.enable_x64(True):  # int64 / float64 buffers cross processes unchanged
        all_ran = np.asarray(multihost_utils.process_allgather(ran))           # [P, T]
        owner = np.argmax(all_ran, axis=0)                                      # [T]
        out = {}
        for name, a in arrays.items():
            if a is None:
                out[name] = None
                continue
            g = np.asarray(multihost_utils.process_allgather(a))                # [P, T, ...]
            out[name] = np.take_along_axis(g, owner.reshape((1, -1) + (1,) * (a.ndim - 1)), axis=0)[0]
    return out, all_ran.any(axis=0)


def gather_sum(value: float) -> float:
    """Sum of a scalar over the processes (lane-steps, for the efficiency)."""
    if jax.process_count() == 1:
        return value
    from jax.experimental import multihost_utils

    with jax.enable_x64(True):
        return float(np.sum(np.asarray(multihost_utils.process_allgather(np.asarray(value, np.float64)))))
