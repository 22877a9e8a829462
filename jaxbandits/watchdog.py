"""Guard against the XLA:CPU batched-LAPACK deadlock of jaxlib 0.10.x, where that runtime is installed.

The cause.  jaxlib 0.10.0-0.10.2 run a batched LAPACK call (Cholesky ``potrf``, triangular solve
``trsm``, LU ``getrf``, symmetric eigendecomposition ``syevd``, ...) on CPU by splitting its batch
over XLA:CPU's intra-op thread pool (``jax::ParallelBatchMap`` in ``jaxlib/cpu/_lapack.so``) and
blocking the calling pool thread in ``absl::BlockingCounter::Wait`` until the pieces are done.  The
pool has one thread per core.  When every pool thread is such a caller, nothing is left to run the
pieces, and the process deadlocks with 0 % CPU.  Every pool thread becomes a caller whenever a
program holds as many independent batched LAPACK calls as there are cores and XLA:CPU runs them
concurrently: on one device, LinGame's step (two independent Gram inverses) with 32 lanes at
d = 20 on a 2-core machine; with one device per core, any two devices that enter a batched solve
together.  Native stacks of a wedged ``simulate(LinGame(delta=0.01), <d = 20, K = 50>, ...)``
(``gdb -p``): both ``tf_XLAEigen`` pool threads in ``BlockingCounter::Wait`` <- ``ParallelBatchMap``
<- ``TriMatrixEquationSolver::Kernel`` <- ``lapack_dtrsm_ffi``, the Python thread in
``tsl::BlockUntilReady``, every other thread idle.  The same process then never exits: the
runtime's destructor (``PjRtCpuClient::~PjRtCpuClient`` -> ``ThreadPool::~ThreadPool``) joins the
wedged threads forever.  ``benchmarks/xla_cpu_lapack_deadlock.py`` reproduces it in plain JAX;
``docs/investigations/xla_cpu_stall.md`` has the full investigation; jaxlib <= 0.9.2 has no such
code path (no ``ParallelBatchMap`` in its ``_lapack.so``) and never wedged.

The fix is the version: jaxbandits requires a jaxlib outside 0.10.x (``pyproject.toml``), so on a
supported install nothing here runs.  :func:`lapack_can_deadlock` looks for the batch-parallel code
in the installed ``_lapack.so`` (it does not trust version numbers), and only where it is present
(a jaxlib forced past the requirement) does :func:`timeout_for` turn the guard on: :func:`run_guarded`
then polls the outputs (``jax.Array.is_ready``; pauses of 2 % of the time waited), copies them to the
host in a helper thread, and raises :class:`StalledComputation` when the process has used less than
1 % of one core for ``stall_timeout`` seconds while a result is pending.  A wedged runtime stays
wedged in its process (re-dispatching was tried: every re-dispatch wedged too), so the error is
final: the experiment runner restarts the command in a fresh process, which resumes from disk, and
a process that saw a wedge exits at its end without the runtime's shutdown
(:func:`exit_without_runtime_shutdown`), which would otherwise hang.
"""
from __future__ import annotations

import atexit
import functools
import importlib.util
import os
import sys
import threading
import time
import warnings
from typing import Any, Callable

import jax

from jaxbandits import compilation_cache

#: seconds without CPU progress before a pending computation is declared wedged (where guarded)
DEFAULT_STALL_TIMEOUT = float(os.environ.get("JAXBANDITS_STALL_TIMEOUT", "30"))
#: exit status of a process that saw a wedge (its runtime cannot shut down)
WEDGED_EXIT_STATUS = 3


class StalledComputation(RuntimeError):
    """A pending computation made no CPU progress: the XLA:CPU runtime wedged."""


@functools.cache
def lapack_can_deadlock() -> bool:
    """Whether the installed jaxlib splits batched CPU LAPACK calls over XLA:CPU's thread pool (the
    deadlock above): read from its ``_lapack.so`` (the ``ParallelBatchMap`` symbol), or, if that
    file cannot be read, from the version (0.10.x)."""
    try:
        spec = importlib.util.find_spec("jaxlib.cpu._lapack")
        with open(spec.origin, "rb") as f:
            return b"ParallelBatchMap" in f.read()
    except (ImportError, AttributeError, TypeError, OSError):
        import jaxlib

        return jaxlib.__version__.startswith("0.10.")


_warned = False


def _warn_affected_runtime() -> None:
    global _warned
    if not _warned:
        _warned = True
        import jaxlib

        warnings.warn(f"jaxlib {jaxlib.__version__} splits batched CPU LAPACK calls over XLA:CPU's "
                      "thread pool and can deadlock (see jaxbandits.watchdog); jaxbandits requires "
                      "a jaxlib outside 0.10.x (pip install 'jaxlib!=0.10.*' 'jax!=0.10.*'). "
                      f"Runs are guarded: a wedge raises StalledComputation after "
                      f"{DEFAULT_STALL_TIMEOUT:.0f} s without CPU progress.", RuntimeWarning, stacklevel=3)


_exit_registered = False


def exit_without_runtime_shutdown() -> None:
    """Make this process end without the XLA:CPU runtime's shutdown.

    After a wedge the runtime's destructor waits forever for the wedged pool threads, so a process
    that has raised :class:`StalledComputation` would hang at exit.  This registers an exit handler
    (run before JAX's own, which were registered earlier) that flushes the standard streams and
    ends the process with :data:`WEDGED_EXIT_STATUS` at once."""
    global _exit_registered
    if _exit_registered:
        return
    _exit_registered = True

    def _exit():
        try:
            compilation_cache.restore_stderr()   # os._exit would lose what its filter holds
            sys.stdout.flush()
            print("jaxbandits: a computation wedged in this process (StalledComputation); exiting "
                  f"with status {WEDGED_EXIT_STATUS} without the XLA:CPU runtime's shutdown, which "
                  "would wait forever for the wedged threads", file=sys.stderr, flush=True)
        finally:
            os._exit(WEDGED_EXIT_STATUS)

    atexit.register(_exit)


def _cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system


def wait_until(is_done: Callable[[], bool], stall_timeout: float, *,
               clock: Callable[[], float] = time.monotonic, cpu: Callable[[], float] = _cpu_seconds) -> bool:
    """Poll ``is_done`` until it holds: True; or False when the process used less than 1 % of a
    core during a window of ``stall_timeout`` seconds (a wedged runtime).

    The pause between polls is 2 % of the time waited so far (between 0.1 ms and 0.25 s), so a
    result is seen at most ~2 % after it is ready.  (A pause doubling up to 0.25 s overshot by up
    to 0.25 s per call: 10-25 % of a one-second chunk.)"""
    pause = 1e-4
    first = w_start = clock()
    c_start = cpu()
    while not is_done():
        time.sleep(pause)
        now = clock()
        pause = min(max(0.02 * (now - first), 1e-4), 0.25)
        if now - w_start >= stall_timeout:
            if cpu() - c_start < 0.01 * (now - w_start):
                return False
            w_start, c_start = now, cpu()
    return True


def wait_ready(outputs: Any, stall_timeout: float, **kw) -> bool:
    """:func:`wait_until` every array leaf of ``outputs`` is ready."""
    leaves = [x for x in jax.tree.leaves(outputs) if hasattr(x, "is_ready")]
    return wait_until(lambda: all(x.is_ready() for x in leaves), stall_timeout, **kw)


def _fetch_in_thread(out: Any, fetch: Callable[[Any], Any]):
    """Start ``fetch(out)`` in a daemon thread; returns (thread, result box)."""
    box: dict = {}

    def work():
        try:
            box["value"] = fetch(out)
        except BaseException as e:  # re-raised in the caller's thread
            box["error"] = e

    th = threading.Thread(target=work, name="jaxbandits-fetch", daemon=True)
    th.start()
    return th, box


def timeout_for(devices=None, stall_timeout: float | None = None) -> float:
    """The stall timeout to use on ``devices`` (default: ``jax.devices()``); 0 means unguarded.

    An explicit ``stall_timeout`` wins, and so does ``JAXBANDITS_STALL_TIMEOUT`` in the
    environment.  Otherwise the guard is on only where the deadlock can happen: XLA:CPU devices
    with a jaxlib whose LAPACK kernels split batches over the thread pool
    (:func:`lapack_can_deadlock`; a supported install has none, so the default path is a plain
    blocking call).  Without either, it is never on for accelerators, whose host idles by design
    while a chunk runs: CPU time says nothing about their progress (an explicit value guards them
    too).
    """
    if stall_timeout is not None:
        return float(stall_timeout)
    if "JAXBANDITS_STALL_TIMEOUT" in os.environ:
        return DEFAULT_STALL_TIMEOUT
    devices = jax.devices() if devices is None else devices
    if any(getattr(d, "platform", "cpu") != "cpu" for d in devices) or not lapack_can_deadlock():
        return 0.0
    _warn_affected_runtime()
    return DEFAULT_STALL_TIMEOUT


def run_guarded(fn: Callable, *args, stall_timeout: float | None = None, what: str = "computation",
                fetch: Callable[[Any], Any] | None = None, **kwargs):
    """``fn(*args, **kwargs)`` brought to completion (and to the host with ``fetch``, e.g.
    ``jax.device_get``), or :class:`StalledComputation` if it wedges.

    ``fn`` must dispatch asynchronously (a jitted or AOT-compiled JAX function).  ``stall_timeout``
    defaults to :func:`timeout_for` on the default devices; 0 or less is a plain blocking call.
    Guarded, the outputs are polled and then fetched in a helper thread (a wedge has been seen in
    the host copy of outputs that had reported ready; a wedged fetch is abandoned with its daemon
    thread).  On a wedge the error is final for the process (a wedged runtime stays wedged), and
    the process is set to exit without the runtime's shutdown
    (:func:`exit_without_runtime_shutdown`).
    """
    timeout = timeout_for(None, stall_timeout)
    if timeout <= 0:
        out = jax.block_until_ready(fn(*args, **kwargs))
        return fetch(out) if fetch is not None else out
    out = fn(*args, **kwargs)
    if wait_ready(out, timeout):
        if fetch is None:
            return out
        th, box = _fetch_in_thread(out, fetch)
        if wait_until(lambda: not th.is_alive(), timeout):
            if "error" in box:
                raise box["error"]
            return box["value"]
    exit_without_runtime_shutdown()
    raise StalledComputation(f"{what} made no CPU progress for {timeout:.0f} s: the XLA:CPU runtime "
                             "wedged (see jaxbandits.watchdog) and cannot recover in this process; "
                             "rerun in a new process (experiments resume from disk)")


#: fresh processes a command may start after a wedge (:func:`restart_in_fresh_process`)
MAX_RESTARTS = 5


def restart_in_fresh_process(err: Exception, module: str, argv: list[str], tag: str) -> None:
    """Replace this process with ``python -m module *argv`` after a :class:`StalledComputation`:
    a wedged runtime stays wedged in its process, and a command that stores its results as it goes
    (the experiments, ``jaxbandits benchmark``) resumes from disk, recomputing only the chunk in
    flight, identically (replications depend only on their keys).  At most :data:`MAX_RESTARTS`
    times (counted in ``JAXBANDITS_RESTARTS``); after that ``err`` is raised."""
    n = int(os.environ.get("JAXBANDITS_RESTARTS", "0"))
    if n >= MAX_RESTARTS:
        raise err
    print(f"[{tag}] {err}\n[{tag}] restarting in a fresh process ({n + 1}/{MAX_RESTARTS}); finished "
          "replications are read back from disk", file=sys.stderr, flush=True)
    os.environ["JAXBANDITS_RESTARTS"] = str(n + 1)
    compilation_cache.restore_stderr()   # the new program has no reader for the filter's pipe
    os.execv(sys.executable, [sys.executable, "-m", module, *argv])
