"""Argument checks of the public entry points, run on the host before anything is compiled.

Every check raises ``TypeError`` (wrong kind of value) or ``ValueError`` (right kind, value not
allowed) with a message that starts with the argument's name, then its value, then what is
allowed, e.g. ``n_reps must be an integer >= 1, got -3``.  :func:`jaxbandits.engine.simulate`,
:func:`jaxbandits.sweep`, :class:`jaxbandits.Generator`, :func:`jaxbandits.make_instance` and the
command line (``python -m experiments``) call these functions first, so a mistake costs no
compilation.
"""
from __future__ import annotations

import dataclasses
import math
import numbers
from pathlib import Path
from typing import Any

import numpy as np

# the checks of make_instance live beside it (instances.base imports nothing from here: no cycle)
from jaxbandits.instances.base import check_bernoulli_means, check_instance_shapes  # noqa: F401

#: relative gap under which two item values count as tied (float64 rounding of z^T theta)
TIE_RTOL = 1e-12

# the scalar checks and the hyperparameter checks live below the algorithms (the contract's
# ``validate`` runs them); re-exported here, where every entry point's checks are
from jaxbandits.arguments import (BUDGET_WHY, CONVENTIONS, INT32_MAX, INT32_WHY, as_count, as_int,  # noqa: F401
                                  as_real, check_fields)
from jaxbandits.arguments import is_tracer as _is_tracer, limit as _limit, show as _show  # noqa: F401


def as_key(value: Any, name: str = "key"):
    """A PRNG key from an int seed or a key: ``jax.random.key(seed)`` for an int, a typed key
    unchanged, a raw ``uint32[2]`` key wrapped as a typed key (the same bits, so the same draws)."""
    import jax
    import jax.numpy as jnp

    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an int seed or a PRNG key (jax.random.key(seed)), got {value!r}")
    if isinstance(value, numbers.Integral):
        v = int(value)
        if not -(2**63) <= v < 2**63:  # jax.random.key takes a 64-bit signed seed
            raise ValueError(f"{name} must be an int seed in [-2**63, 2**63) or a PRNG key, got {v}")
        return jax.random.key(v)
    if isinstance(value, jax.Array) or isinstance(value, np.ndarray):
        if jnp.issubdtype(value.dtype, jax.dtypes.prng_key):
            if value.shape != ():
                raise ValueError(f"{name} must be a single PRNG key (shape ()), got a key array of shape "
                                 f"{value.shape}")
            return value
        if value.dtype == np.uint32 and value.shape == (2,):
            return jax.random.wrap_key_data(jnp.asarray(value))
        raise TypeError(f"{name} must be an int seed or a PRNG key (jax.random.key(seed)), got an array of "
                        f"shape {value.shape} and dtype {value.dtype}")
    raise TypeError(f"{name} must be an int seed or a PRNG key (jax.random.key(seed)), got {_show(value)} "
                    f"({type(value).__name__})")


# ------------------------------------------------------------------------------------------------
# algorithms
# ------------------------------------------------------------------------------------------------
def check_algorithm(algorithm: Any, name: str = "algorithm", *, fields: bool = True) -> None:
    """``algorithm`` is a configured :class:`~jaxbandits.algorithms.base.Algorithm` whose numeric
    hyperparameters are numbers in their ranges: the range each field declares beside itself
    (:func:`~jaxbandits.algorithms.base.hyperparameter`), else the contract's conventions for
    ``delta``, ``sigma``, ``epsilon``, ``budget`` and ``m`` (:data:`CONVENTIONS`), else a number
    for a dynamic field; wrapped
    algorithms and the rules of a composition are checked too.  Every integer hyperparameter (a budget, m, an iteration count, a size, a period) is at
    most :data:`INT32_MAX`: the compiled programs hold them, and the counts they bound, in 32-bit
    integers."""
    from jaxbandits.algorithms.base import Algorithm

    if isinstance(algorithm, type) and issubclass(algorithm, Algorithm):
        raise TypeError(f"{name} must be a configured algorithm, got the class {algorithm.__name__}; "
                        f"call it: {algorithm.__name__}()")
    if not isinstance(algorithm, Algorithm):
        raise TypeError(f"{name} must be an Algorithm (e.g. jaxbandits.algorithms.RAGE()), got "
                        f"{_show(algorithm)} ({type(algorithm).__name__})")
    if fields:  # simulate leaves them to the algorithm's validate: one check per run
        check_fields(algorithm, name, nested=True)


def check_instances(instances: Any, name: str = "instances") -> None:
    """``instances`` is an :class:`~jaxbandits.instances.base.Instance` (or a batch); its shapes,
    finiteness and noise are checked by the algorithm's ``validate``."""
    from jaxbandits.instances.base import Instance

    if not isinstance(instances, Instance):
        raise TypeError(f"{name} must be an Instance or a batch of them (jaxbandits.make_instance, "
                        f"jaxbandits.instances.seeds), got {_show(instances)} ({type(instances).__name__})")


def tied_instances(instances, m: int = 1) -> np.ndarray:
    """Indices (in the batch) of the instances whose m-th and (m+1)-th best item values tie: the
    best item (or the top-m set) is then not unique."""
    from jaxbandits.instances.base import as_batch

    b = as_batch(instances)
    v = np.asarray(b.masked_item_values(), np.float64)
    if v.shape[-1] <= m:
        return np.zeros(0, np.int64)
    s = -np.sort(-v, axis=-1)
    a, c = s[:, m - 1], s[:, m]
    scale = np.maximum(np.abs(a), 1.0)
    return np.flatnonzero(np.isfinite(c) & (a - c <= TIE_RTOL * scale))


def check_ties(algorithm, instances, allow_ties: bool, name: str = "instances") -> None:
    """Refuse instances whose answer is not unique (the best item, or the top-m set at its
    boundary, tied) unless ``allow_ties``: an exact-identification run cannot stop there, and
    which answer counts as correct is a convention.  Tolerated epsilon > 0 makes ties harmless."""
    if allow_ties:
        return
    slack = algorithm.slack
    if not _is_tracer(slack) and float(slack) > 0:
        return
    m = algorithm.top_m
    tied = tied_instances(instances, m)
    if tied.size:
        what = "best items" if m == 1 else f"items ranked {m} and {m + 1}"
        where = "" if not instances.is_batched else f" (instance(s) {', '.join(map(str, tied[:5]))}" + \
            (" ..." if tied.size > 5 else "") + " of the batch)"
        raise ValueError(f"{name}: the {what} have tied values{where}, so the answer is not unique and an "
                         "exact-identification run may never stop; pass allow_ties=True to run it anyway "
                         "(tied items all count as correct)")


def check_simulate(algorithm, instances, n_reps, max_steps, *, lanes=None, chunk_size=None, refill_min=None,
                   devices=None, tasks=None, progress=None, stall_timeout=None, buckets=None,
                   record_pulls=True, allow_ties=False) -> None:
    """Every argument of :func:`jaxbandits.engine.simulate`, checked before anything runs, each once
    (the algorithm's hyperparameters by its ``validate``, last)."""
    from jaxbandits.instances.base import Buckets

    check_algorithm(algorithm, fields=False)
    check_instances(instances)
    as_count("n_reps", n_reps, why="replications are numbered by 32-bit task ids")
    as_count("max_steps", max_steps, why="steps are counted in 32-bit integers")
    J = instances.batch_shape[0] if instances.is_batched else 1
    if J * int(n_reps) > INT32_MAX:
        raise ValueError(f"n_reps must be at most {INT32_MAX // J} with {J} instances (n_instances * n_reps = "
                         f"{J * int(n_reps)} replications, past the {_limit(INT32_MAX)} that 32-bit task ids "
                         f"number), got {int(n_reps)}; split the run (tasks=...)")
    as_count("lanes", lanes, allow_none=True)
    as_count("chunk_size", chunk_size, allow_none=True)
    as_count("refill_min", refill_min, allow_none=True)
    if devices is not None:
        check_devices(devices)
    if tasks is not None:
        t = np.asarray(tasks)
        if t.ndim != 1 or not (t.size == 0 or np.issubdtype(t.dtype, np.integer)):
            raise TypeError(f"tasks must be a 1-d array of integer task ids, got {_show(tasks)}")
        check_task_range(np.sort(t), J * int(n_reps))
    if not (progress is None or isinstance(progress, (bool, np.bool_)) or callable(progress)):
        raise TypeError(f"progress must be True, False, None (a bar when stderr is a terminal) or a "
                        f"callable receiving a line, got {_show(progress)}")
    if stall_timeout is not None:
        as_real("stall_timeout", stall_timeout, low=0.0, low_open=False)
    if buckets is not None and not isinstance(buckets, Buckets):
        raise TypeError(f"buckets must be a jaxbandits.Buckets or None, got {_show(buckets)}")
    if not isinstance(record_pulls, (bool, np.bool_)):
        raise TypeError(f"record_pulls must be True or False, got {_show(record_pulls)}")
    if not isinstance(allow_ties, (bool, np.bool_)):
        raise TypeError(f"allow_ties must be True or False, got {_show(allow_ties)}")
    check_bernoulli_means(instances)  # the instances' own fault first, named as such
    algorithm.validate(instances)
    check_ties(algorithm, instances, bool(allow_ties))


def available_cores() -> int:
    """The CPU cores this process may run on (``os.sched_getaffinity``, where the platform has it:
    a container or ``taskset`` limit counts; else ``os.cpu_count()``)."""
    import os

    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def check_devices(devices, name: str = "devices") -> list:
    """``devices`` is a non-empty list of distinct JAX devices (:func:`jaxbandits.engine.simulate`
    lays one loop on each: a device listed twice would be given two shares of one run)."""
    if isinstance(devices, (str, bytes)) or not hasattr(devices, "__len__") or len(devices) == 0:
        raise ValueError(f"{name} must be a non-empty list of JAX devices (e.g. jax.devices()) or None, "
                         f"got {_show(devices)}")
    devices = list(devices)
    if not all(hasattr(d, "platform") for d in devices):
        raise TypeError(f"{name} must hold JAX devices (jax.devices()), got {_show(devices)}")
    seen, repeated = set(), []
    for d in devices:
        if d in seen and d not in repeated:
            repeated.append(d)
        seen.add(d)
    if repeated:
        raise ValueError(f"{name} must list each device once, got {len(devices)} entries for {len(seen)} "
                         f"distinct device(s) ({', '.join(map(repr, repeated[:4]))} repeated); to run more loops "
                         f"on a CPU, expose more CPU devices instead (python -m experiments NAME --devices N, or "
                         f"jax.config.update('jax_num_cpu_devices', N) before JAX starts)")
    return devices


#: what running more XLA CPU devices than cores costs, measured: an experiment configuration that
#: takes 7 s on one device ran 270 s (nothing printed meanwhile) with 64 devices on 2 cores
OVERSUBSCRIBE_COST = ("each XLA CPU device runs its own loop on its own thread and the program is compiled for "
                      "every device, so devices beyond the cores only share them and multiply the compile time "
                      "(measured: 270 s with 64 devices on 2 cores for a run that takes 7 s on one device)")


def check_cpu_device_count(n: Any, name: str = "--devices", override: str | None = None) -> int:
    """``n`` XLA CPU devices to expose: an integer in [1, :func:`available_cores`].  The message
    names the cores available and :data:`OVERSUBSCRIBE_COST`; ``override`` (e.g. "pass
    --oversubscribe to run it anyway"), when given, is appended to it."""
    v = as_int(name, n, minimum=1)
    cores = available_cores()
    if v > cores:
        raise ValueError(f"{name} must be at most the {cores} CPU core(s) this process may use, got {v}: "
                         f"{OVERSUBSCRIBE_COST}" + (f"; {override}" if override else ""))
    return v


def check_task_range(tasks: np.ndarray, total: int) -> None:
    if tasks.size and (tasks[0] < 0 or tasks[-1] >= total):
        raise ValueError(f"tasks must be task ids in [0, n_instances * n_reps) = [0, {total}), got ids from "
                         f"{int(tasks[0])} to {int(tasks[-1])}")


# ------------------------------------------------------------------------------------------------
# sweeps
# ------------------------------------------------------------------------------------------------
def check_generator(gen) -> None:
    """A :class:`jaxbandits.Generator`'s fields."""
    if not isinstance(gen.name, str) or not gen.name:
        raise TypeError(f"Generator.name must be a non-empty string, got {_show(gen.name)}")
    if not callable(gen.fn):
        raise TypeError(f"Generator.fn must be a callable fn(key, **params) -> Instance, got {_show(gen.fn)}")
    as_int("Generator.n_instances", gen.n_instances, minimum=1)
    if not hasattr(gen.grid, "items"):
        raise TypeError(f"Generator.grid must be a dict parameter -> list of values, got {_show(gen.grid)}")
    for k, vals in gen.grid.items():
        if isinstance(vals, (str, bytes)) or not hasattr(vals, "__iter__"):
            raise TypeError(f"Generator.grid[{k!r}] must be a list of values to sweep, got {_show(vals)}")
        if len(list(vals)) == 0:
            raise ValueError(f"Generator.grid[{k!r}] must hold at least one value, got {_show(vals)}")


def check_sweep(algorithms, generators, *, deltas, n_reps, max_steps, out, progress, generator_type, where=None,
                flags=None) -> None:
    """Every argument of :func:`jaxbandits.sweep`, checked before anything runs (``generator_type``:
    :class:`jaxbandits.Generator`, passed in so that this module does not import the sweeps)."""
    from jaxbandits.algorithms.base import Algorithm

    Generator = generator_type

    if not hasattr(algorithms, "items") or len(algorithms) == 0:
        raise TypeError(f"algorithms must be a non-empty dict name -> algorithm (or factory delta -> algorithm), "
                        f"got {_show(algorithms)}")
    for k, a in algorithms.items():
        if isinstance(a, Algorithm):
            check_algorithm(a, f"algorithms[{k!r}]")
        elif isinstance(a, type) or not callable(a):
            raise TypeError(f"algorithms[{k!r}] must be a configured algorithm or a factory delta -> algorithm, "
                            f"got {_show(a)}")
    gens = [generators] if isinstance(generators, Generator) else generators
    if isinstance(gens, (str, bytes)) or not hasattr(gens, "__iter__"):
        raise TypeError(f"generators must be a Generator or a list of them, got {_show(generators)}")
    gens = list(gens)
    if not gens or not all(isinstance(g, Generator) for g in gens):
        raise TypeError(f"generators must be a Generator or a non-empty list of them, got {_show(generators)}")
    if isinstance(deltas, (str, bytes)) or not hasattr(deltas, "__iter__"):
        raise TypeError(f"deltas must be a list of confidence levels in (0, 1) (or [None]), got {_show(deltas)}")
    deltas = list(deltas)
    if not deltas:
        raise ValueError("deltas must hold at least one confidence level (or None), got []")
    for d in deltas:
        as_real("deltas", d, low=0.0, high=1.0, allow_none=True)
    as_count("n_reps", n_reps, why="replications are numbered by 32-bit task ids")
    if not callable(max_steps):
        as_count("max_steps", max_steps, why="steps are counted in 32-bit integers")
    if out is not None:
        check_out_dir(out, "out")
    if not isinstance(progress, (bool, np.bool_)) and progress is not None:
        raise TypeError(f"progress must be True, False or None (a bar when stderr is a terminal), got "
                        f"{_show(progress)}")
    if where is not None and not callable(where):
        raise TypeError(f"where must be None or a callable where(algorithm_name, params) -> bool, got {_show(where)}")
    for flag, v in (flags or {}).items():
        if not isinstance(v, (bool, np.bool_)):
            raise TypeError(f"{flag} must be True or False, got {_show(v)}")


def check_out_dir(out, name: str = "out") -> Path:
    """A folder that exists or can be made (not a file, not under a file)."""
    if not isinstance(out, (str, Path)) or str(out) == "":
        raise TypeError(f"{name} must be a folder path (str or pathlib.Path), got {_show(out)}")
    p = Path(out)
    for q in (p, *p.parents):
        if q.exists():
            if not q.is_dir():
                raise ValueError(f"{name} must be a folder, but {str(q)!r} is a file")
            break
    return p


# ------------------------------------------------------------------------------------------------
# command line
# ------------------------------------------------------------------------------------------------
def _cli_int(text: str, minimum: int, below: int | None = None) -> int:
    """argparse type body: an integer >= ``minimum`` (and < ``below`` when given)."""
    import argparse

    top = {2**63: "2**63", 2**31: "2**31"}.get(below, below)
    allowed = f"an integer >= {minimum}" if below is None else f"an integer in [{minimum}, {top})"
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {allowed}, got {text!r}") from None
    if v < minimum or (below is not None and v >= below):
        raise argparse.ArgumentTypeError(f"must be {allowed}, got {v}")
    return v


def cli_positive_int(text: str) -> int:
    """argparse type: an integer in [1, 2**31) (--reps, --devices, --max-steps: the compiled
    programs count replications and steps in 32-bit integers)."""
    return _cli_int(text, 1, 2**31)


def cli_seed(text: str) -> int:
    """argparse type: a seed, an integer in [0, 2**63) (jax.random.key's 64-bit signed seed)."""
    return _cli_int(text, 0, 2**63)


def cli_out_dir(text: str) -> str:
    """argparse type: a folder that exists or can be made, and that this process can write in
    (tried with a temporary file in the folder, or in its nearest existing parent, removed at once:
    a permission, a read-only file system or a full disk is reported here, not as a traceback
    half-way through a run)."""
    import argparse
    import tempfile

    try:
        p = check_out_dir(text, "--out")
    except (TypeError, ValueError) as e:
        raise argparse.ArgumentTypeError(str(e).replace("--out must be", "must be")) from None
    q = next(q for q in (p, *p.parents, Path(".")) if q.exists())
    try:
        with tempfile.TemporaryFile(dir=q):
            pass
    except OSError as e:
        what = "" if q == p else f" (it does not exist and cannot be made in {str(q)!r})"
        raise argparse.ArgumentTypeError(f"must be a folder this process can write in, got {text!r}{what}: "
                                         f"writing a file there fails with {e.strerror or e!s}") from None
    return text
