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

import atexit
import gc
import io
import os
import signal
import sys
import threading
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


# -- Ctrl-C ------------------------------------------------------------------------------------------
# XLA cannot cancel a compilation or a running program, and Python delivers Ctrl-C to the main
# thread only between bytecodes: a compile (seconds to minutes) held Ctrl-C until it ended, and the
# process's exit then waited in the runtime's shutdown for the chunk still running (a whole chunk:
# up to tens of seconds).  So programs are compiled in a helper thread that the main thread waits
# for in short sleeps (Ctrl-C ends the wait at once), and work an interrupt leaves running is
# noted, so that the process's exit does not wait for it.
_IN_FLIGHT: list = []          # what an interrupt left running: threading.Events (unset while a
#                                compile runs) and the outputs of a program still computing
_EXIT_HOOKED = [False]
#: exit status of a process that ends with interrupted work still running (128 + SIGINT, a shell's)
INTERRUPTED_EXIT_STATUS = 130


def compile_interruptibly(lowered) -> Any:
    """``lowered.compile()`` (a ``jax.stages.Lowered``), in a daemon thread that the calling thread
    waits for in short sleeps, so that Ctrl-C interrupts the wait at once; the compile, which
    cannot be stopped, is left to end (:func:`note_interrupted`).  The calling thread's x64 setting
    is the helper's too (JAX keeps it per thread), and the helper blocks SIGINT so that the signal
    reaches the waiting thread."""
    import jax

    x64 = bool(jax.config.jax_enable_x64)
    box: dict = {}
    done = threading.Event()  # not Thread.is_alive: a join cut by Ctrl-C can mark a running thread stopped

    def work():
        try:
            if hasattr(signal, "pthread_sigmask"):
                signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            with jax.enable_x64(x64):
                box["value"] = lowered.compile()
        except BaseException as e:  # re-raised in the caller's thread
            box["error"] = e
        finally:
            done.set()

    threading.Thread(target=work, name="jaxbandits-compile", daemon=True).start()
    try:
        pause = 1e-4
        while not done.is_set():
            time.sleep(pause)
            pause = min(2 * pause, 0.05)
    except KeyboardInterrupt:
        note_interrupted(done)
        raise
    if "error" in box:
        raise box["error"]
    return box["value"]


def note_interrupted(work) -> None:
    """Remember work that Ctrl-C left running (the ``threading.Event`` of a compile, or a program's
    outputs), and make the process's exit not wait for it (:func:`_exit_if_still_running`)."""
    _IN_FLIGHT.append(work)
    if not _EXIT_HOOKED[0]:
        _EXIT_HOOKED[0] = True
        atexit.register(_exit_if_still_running)  # registered after JAX's exit handlers: runs before them


def interrupted_work_running() -> bool:
    """Whether work that an interrupt left behind (:func:`note_interrupted`) is still running."""
    import jax

    for w in _IN_FLIGHT:
        if isinstance(w, threading.Event):
            if not w.is_set():
                return True
        elif not all(x.is_ready() for x in jax.tree.leaves(w) if hasattr(x, "is_ready")):
            return True
    return False


def _exit_if_still_running() -> None:
    """At exit: if work an interrupt left behind is still running, end the process now with
    :data:`INTERRUPTED_EXIT_STATUS` instead of letting the runtime's shutdown wait for it (its
    results are discarded anyway).  Buffered files and the standard streams are flushed first,
    since ``os._exit`` skips the interpreter's own clean-up.  When that work has ended, nothing is
    done: the usual shutdown is then quick."""
    if not interrupted_work_running():
        return
    try:
        import logging

        logging.shutdown()
        buffered = (io.TextIOWrapper, io.BufferedWriter, io.BufferedRandom)  # what holds unwritten data
        for obj in gc.get_objects():
            if type(obj) in buffered:
                try:
                    if not obj.closed:
                        obj.flush()
                except Exception:  # a stream that cannot be flushed any more: nothing to save
                    pass
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        from jaxbandits import compilation_cache

        compilation_cache.restore_stderr()   # pass on what its log filter still holds
    finally:
        os._exit(INTERRUPTED_EXIT_STATUS)
