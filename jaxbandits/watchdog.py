"""Run a compiled computation and re-dispatch it if the XLA:CPU runtime wedges.

Cause (found after this module was written, ``benchmarks/xla_cpu_stall.py``): in jaxlib 0.10.x
batched LAPACK kernels split their batch over XLA's CPU thread pool and block the calling pool
thread until the pieces finish; when every pool thread is such a caller (one device per core, each
in a batched solve) nothing runs the pieces: a deadlock, reproduced every time with 2 host devices
on 2 cores and never with 1 device or with jaxlib <= 0.9.2.  The engine therefore uses one XLA:CPU
device by default; the guard below stays for what remains unexplained (an LT&S stall at K = 1000
on one device, seen once before).

Why this exists.  On this project's 2-core CPU machines (jax/jaxlib 0.10.2), long batched runs
occasionally never finish: every XLA worker thread sits idle in ``Eigen::ThreadPool::WaitForWork``,
the main thread waits forever in ``tsl::BlockUntilReady`` under ``PyArray_bf_getbuffer`` (the
host copy of an output, ``np.asarray``), and the process burns no CPU at all (native stacks taken
with ``gdb -p``; seen with LT&S at K = 1000 with 300-1000 vmapped lanes, GSE on 2 host devices,
LinUCB with an LU solve).  In one stall the outputs had already reported ``is_ready()``: the
lost wake-up is in the runtime's buffer hand-over, not in a slow program.
``--xla_cpu_multi_thread_eigen=false`` and turning off the XNNPACK / YNNPACK fusions did not
avoid it, and the same program with the same inputs completes on a rerun (it is timing
dependent).  A computation or copy that makes progress always uses CPU time, so the symptom is
detectable from outside: the process's CPU time stops advancing while a result is pending.

:func:`run_guarded` polls the outputs (``jax.Array.is_ready``, pauses of 2 % of the time waited,
at most 0.25 s, so a healthy call is seen at most ~2 % late), then copies them to the host in a
helper thread; when the process has used less than 1 % of one core for ``stall_timeout``
seconds while waiting for either, it raises :class:`StalledComputation` instead of hanging forever.  Re-dispatching
the same pure computation in the same process (``retries``) was tried on a real wedge and did
not recover (all three re-dispatches wedged too: the runtime stays broken), so the default is no
retry; the experiment runner (``python -m experiments``) catches the error and restarts the
process, which resumes from the results already on disk and loses only the chunk in flight.
"""
from __future__ import annotations

import os
import threading
import time
import warnings
from typing import Any, Callable

import jax

#: seconds without CPU progress before a pending computation is declared wedged
DEFAULT_STALL_TIMEOUT = float(os.environ.get("JAXBANDITS_STALL_TIMEOUT", "30"))


class StalledComputation(RuntimeError):
    """Raised when a computation wedged on every retry."""


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


def timeout_for(devices, stall_timeout: float | None = None) -> float:
    """The stall timeout to use on ``devices``: the guard belongs to XLA:CPU only.

    It judges a stall by the host's CPU time, which is right on XLA:CPU (the host threads *are*
    the device) and wrong on an accelerator, where the host idles by design while a long chunk
    runs: there a chunk simply completes, however long it takes.  An explicit ``stall_timeout``
    wins; otherwise 0 (off) when any device is not a CPU, else the default.
    """
    if stall_timeout is not None:
        return float(stall_timeout)
    if any(getattr(d, "platform", "cpu") != "cpu" for d in devices):
        return 0.0
    return DEFAULT_STALL_TIMEOUT


def run_guarded(fn: Callable, *args, stall_timeout: float | None = None, retries: int = 0,
                what: str = "computation", fetch: Callable[[Any], Any] | None = None, **kwargs):
    """``fn(*args, **kwargs)`` brought to completion, or :class:`StalledComputation` if it wedges
    (after ``retries`` re-dispatches; see the module docstring for why the default is none).

    ``fn`` must be pure and dispatch asynchronously (a jitted or AOT-compiled JAX function).
    With ``fetch`` (e.g. ``jax.device_get``), the result is also brought to the host under the
    guard, in a helper thread: the wedge has been seen *after* the outputs reported ready, with
    the host copy (``np.asarray`` on the output) blocking forever in the runtime; a wedged fetch
    is abandoned with its thread.  ``stall_timeout``
    defaults to ``JAXBANDITS_STALL_TIMEOUT`` (30 s); 0 or less disables the guard (plain call,
    blocking).
    """
    timeout = DEFAULT_STALL_TIMEOUT if stall_timeout is None else float(stall_timeout)
    if timeout <= 0:
        out = jax.block_until_ready(fn(*args, **kwargs))
        return fetch(out) if fetch is not None else out
    for attempt in range(retries + 1):
        out = fn(*args, **kwargs)
        if wait_ready(out, timeout):
            if fetch is None:
                return out
            th, box = _fetch_in_thread(out, fetch)
            if wait_until(lambda: not th.is_alive(), timeout):
                if "error" in box:
                    raise box["error"]
                return box["value"]
        if attempt < retries:
            warnings.warn(f"jaxbandits: {what} made no CPU progress for {timeout:.0f} s (XLA:CPU runtime "
                          f"wedged, see jaxbandits.watchdog); re-dispatching (retry {attempt + 1}/{retries})",
                          RuntimeWarning, stacklevel=2)
    raise StalledComputation(f"{what} made no CPU progress for {timeout:.0f} s ({retries + 1} "
                             f"dispatch(es)): the XLA:CPU runtime wedged (see jaxbandits.watchdog); "
                             f"rerun: experiments resume from disk")
