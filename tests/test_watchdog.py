"""The XLA:CPU deadlock of jaxlib 0.10.x and its guard (jaxbandits.watchdog): the installed runtime
does not deadlock (the plain reproducer finishes), the default path is unguarded, and where the
guard is on, a wedge is reported and the process still exits.  Every algorithm at d = 5, 20 and 50
on one and two devices (LinGame on Tirinzoni & Degenne's d = 20 instance, which jaxlib 0.10.2 wedged
3 times out of 3, included): ``python benchmarks/cpu_stall_stress.py``."""
import subprocess
import sys
import textwrap
from pathlib import Path

import jax.numpy as jnp
import pytest

from jaxbandits import watchdog
from jaxbandits.watchdog import StalledComputation, run_guarded, timeout_for, wait_ready

ROOT = Path(__file__).resolve().parents[1]


class _Pending:
    """An output that never becomes ready (what a wedged XLA execution looks like)."""

    def is_ready(self):
        return False


class _Dev:
    def __init__(self, platform):
        self.platform = platform


def _child(code: str, timeout: float, **env):
    import os

    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT), **env))


# --- the runtime ------------------------------------------------------------------------------

def test_installed_jaxlib_has_no_batch_parallel_lapack():
    """The requirement jaxlib != 0.10.* holds where the tests run: its _lapack.so has no
    ParallelBatchMap, the code path that deadlocks."""
    assert not watchdog.lapack_can_deadlock()


def test_two_concurrent_batched_inverses_finish():
    """The plain-JAX reproducer: two independent batched Cholesky inverses per lane at 256 lanes,
    d = 20 (jaxlib 0.10.2 deadlocks here on one device, every time; 0.9.2: ~10 s)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from xla_cpu_lapack_deadlock import run

    finished, msg = run(sys.executable, lanes=256, d=20, iters=100, timeout=150)
    assert finished, msg


# --- the guard ------------------------------------------------------------------------------

def test_default_path_is_unguarded_on_a_supported_runtime(monkeypatch):
    monkeypatch.delenv("JAXBANDITS_STALL_TIMEOUT", raising=False)
    monkeypatch.setattr(watchdog, "lapack_can_deadlock", lambda: False)
    assert timeout_for([_Dev("cpu")]) == 0.0
    monkeypatch.setattr(watchdog, "lapack_can_deadlock", lambda: True)
    with pytest.warns(RuntimeWarning, match="jaxlib"):
        monkeypatch.setattr(watchdog, "_warned", False)
        assert timeout_for([_Dev("cpu"), _Dev("cpu")]) == watchdog.DEFAULT_STALL_TIMEOUT
    assert timeout_for([_Dev("gpu")]) == 0.0  # the host idles while an accelerator computes
    assert timeout_for([_Dev("gpu")], 12.0) == 12.0  # an explicit timeout wins
    monkeypatch.setenv("JAXBANDITS_STALL_TIMEOUT", "7")
    monkeypatch.setattr(watchdog, "lapack_can_deadlock", lambda: False)
    assert timeout_for([_Dev("cpu")]) == watchdog.DEFAULT_STALL_TIMEOUT  # as is the environment's


def test_wait_ready_detects_no_cpu_progress():
    t = iter(range(10**6))
    assert not wait_ready([_Pending()], 5.0, clock=lambda: float(next(t)), cpu=lambda: 0.0)


def test_wait_ready_keeps_waiting_while_cpu_advances():
    # CPU advances as fast as the clock: a slow but healthy computation, never declared wedged
    calls = {"n": 0}

    class Slow:
        def is_ready(self):
            calls["n"] += 1
            return calls["n"] > 12

    t = iter(range(10**6))
    c = iter(range(10**6))
    assert wait_ready([Slow()], 3.0, clock=lambda: float(next(t)), cpu=lambda: float(next(c)))
    assert calls["n"] > 12


def test_run_guarded_unguarded_is_a_plain_call():
    assert int(run_guarded(lambda: jnp.asarray(3), stall_timeout=0)) == 3
    assert run_guarded(lambda: jnp.arange(3), stall_timeout=5, fetch=lambda o: o.tolist()) == [0, 1, 2]


_WEDGED_CHILD = """
    import threading
    from jaxbandits import watchdog

    class Pending:  # a chunk whose outputs never become ready, with no CPU used
        def is_ready(self):
            return False

    class Runtime:  # a runtime whose shutdown waits forever, as XLA:CPU's does for its wedged threads
        def __del__(self):
            threading.Event().wait()

    runtime = Runtime()
    {mutation}
    try:
        watchdog.run_guarded(lambda: [Pending()], stall_timeout=1, what="chunk at task 0")
    except watchdog.StalledComputation as e:
        print("raised:", e, flush=True)
    """


def test_a_wedge_is_reported_and_the_process_exits():
    """A chunk with no CPU progress raises StalledComputation naming it, and the process then exits
    with the wedge status instead of hanging in the runtime's shutdown."""
    p = _child(_WEDGED_CHILD.format(mutation=""), timeout=60)
    assert "raised: chunk at task 0 made no CPU progress for 1 s" in p.stdout
    assert p.returncode == watchdog.WEDGED_EXIT_STATUS
    assert "without the XLA:CPU runtime's shutdown" in p.stderr
    # the check can fail: without the exit handler the same process hangs at exit
    with pytest.raises(subprocess.TimeoutExpired):
        _child(_WEDGED_CHILD.format(mutation="watchdog.exit_without_runtime_shutdown = lambda: None"), timeout=10)


def test_wedge_message_says_how_to_resume_and_sets_the_exit(monkeypatch):
    calls = []
    monkeypatch.setattr(watchdog, "exit_without_runtime_shutdown", lambda: calls.append(1))
    with pytest.raises(StalledComputation, match="resume from disk"):
        run_guarded(lambda: [_Pending()], stall_timeout=0.1)
    assert calls == [1]
