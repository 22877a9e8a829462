"""Compiled programs: the engine's program cache, its counters, and the kernel's limit on memory
mappings (XLA:CPU).

The engine's chunk runners are compiled ahead of time and kept in :data:`RUNNERS`, keyed on
everything that changes the program (:func:`compiled`); :func:`programs_compiled` and
:func:`compile_seconds` count the misses.  This module imports nothing from the engine or the
algorithms, which import it.

XLA:CPU loads every kernel of a compiled program into its own executable, read-only and writable
pages: about 1,000 memory mappings per engine program here (jaxlib 0.10.2; measured with
``/proc/self/maps``: ~330 kernels x 3 mappings of 4-12 KiB).  Linux allows a process
``vm.max_map_count`` mappings (65,530 by default); past it, the next compilation dies with
"LLVM ERROR: Unable to allocate section memory".

The mappings are not leaked: they belong to the loaded executables, which live as long as
something references them.  Two caches did: the engine's own program cache and JAX's internal
caches (the compiled executables of every ``jax.jit`` function called so far, design solvers
and lower bounds included).  Measured on three engine programs: 1,004 mappings before, 4,059
after; dropping the engine's cache alone gave back 2,100, dropping JAX's caches too gave back
all of them (1,021).

So a long job never has to restart its process: before compiling a program, the engine calls
:func:`release_if_high`, which drops both caches once the process holds more than
:data:`RELEASE_FRACTION` of its limit.  A program needed again after a release is recompiled, or
loaded from the persistent compilation cache (:mod:`jaxbandits.compilation_cache`, about a
quarter of a compile).  Off Linux (no ``/proc``) nothing is counted and nothing is released.
"""
from __future__ import annotations

import gc
import os
import time
from typing import Any, Callable, Hashable

#: fraction of ``vm.max_map_count`` above which compiled programs are dropped before the next
#: compilation (about 30 programs' worth of room is left above it)
RELEASE_FRACTION = 0.5

#: compiled per-instance ``prepare`` programs (``algorithms.base.map_instances``), by (static
#: configuration, method, shapes), and the seconds spent compiling them (the engine reports them
#: as compile time)
PREPARED: dict = {}
PREPARE_COMPILE_SECONDS = [0.0]

#: the engine's compiled chunk runners, by signature (:func:`compiled`)
RUNNERS: dict = {}
#: bound on the number of cached runners where the mapping count is unknown (off Linux)
MAX_RUNNERS = 64
_COMPILES = [0]
_COMPILE_SECONDS = [0.0]

_RELEASES = [0]
_PEAK = [0]


def mapping_usage() -> tuple[int, int] | None:
    """(memory mappings of this process, the per-process limit), or None off Linux.
    ``JAXBANDITS_MAX_MAP_COUNT`` overrides the limit (tests)."""
    try:
        with open("/proc/self/maps") as f:
            n = sum(1 for _ in f)
        limit = os.environ.get("JAXBANDITS_MAX_MAP_COUNT")
        if limit is None:
            with open("/proc/sys/vm/max_map_count") as f:
                limit = f.read()
        n, limit = n, int(limit)
    except (OSError, ValueError):
        return None
    _PEAK[0] = max(_PEAK[0], n)
    return n, limit


def peak_mappings() -> int | None:
    """Most memory mappings seen by :func:`mapping_usage` in this process (None off Linux)."""
    return _PEAK[0] if mapping_usage() is not None else None


def releases() -> int:
    """How many times :func:`release_if_high` dropped the compiled programs in this process."""
    return _RELEASES[0]


def release() -> None:
    """Drop every compiled program this process holds (the engine's cache and JAX's caches), so
    that their memory and memory mappings go back to the system.  Programs still referenced by
    the caller stay valid."""
    import jax

    RUNNERS.clear()
    PREPARED.clear()
    jax.clear_caches()
    gc.collect()
    _RELEASES[0] += 1


def release_if_high(fraction: float = RELEASE_FRACTION) -> bool:
    """:func:`release` when the process holds more than ``fraction`` of its mapping limit;
    returns whether it did."""
    use = mapping_usage()
    if use is None or use[0] <= fraction * use[1]:
        return False
    release()
    return True


def programs_compiled() -> int:
    """Number of engine programs compiled so far in this process (a cache miss of
    :func:`jaxbandits.engine.simulate`): tests and experiments count recompilations with it instead
    of timing them.  A program loaded from the persistent compilation cache
    (:mod:`jaxbandits.compilation_cache`) counts too: it is traced and lowered again, only XLA's
    compilation is skipped."""
    return _COMPILES[0]


def compile_seconds() -> float:
    """Seconds this process spent tracing, lowering and compiling (or loading from the persistent
    cache) engine programs."""
    return _COMPILE_SECONDS[0]


def program_bytes(compiled_program) -> int | None:
    """Temporary + argument + output bytes of a compiled program, when the backend reports them."""
    try:
        m = compiled_program.memory_analysis()
        return int(m.temp_size_in_bytes + m.argument_size_in_bytes + m.output_size_in_bytes)
    except Exception:  # not every backend implements it
        return None


def compiled(signature: Hashable, build: Callable[[], Any]) -> tuple[Any, float]:
    """The program cached under ``signature``, or ``build()`` (which traces, lowers and compiles
    it) cached and counted; returns (program, seconds spent compiling: 0 on a hit).

    Near the kernel's limit on memory mappings, the compiled programs are dropped first
    (:func:`release_if_high`), so a long job never dies at the limit nor restarts.
    """
    if signature in RUNNERS:
        return RUNNERS[signature], 0.0
    if not release_if_high() and len(RUNNERS) >= MAX_RUNNERS:  # off Linux: a bound on the count
        release()
    t0 = time.perf_counter()
    program = build()
    _COMPILES[0] += 1
    mapping_usage()  # records the peak (right after a compile)
    seconds = time.perf_counter() - t0
    _COMPILE_SECONDS[0] += seconds
    RUNNERS[signature] = program
    return program, seconds
