"""The wedge guard of jaxbandits.watchdog: a pending computation with no CPU progress is
re-dispatched, a healthy one is waited for, and repeated wedges raise."""
import warnings

import jax.numpy as jnp
import pytest

from jaxbandits.watchdog import StalledComputation, run_guarded, wait_ready


class _Pending:
    """An output that never becomes ready (what a wedged XLA execution looks like)."""

    def is_ready(self):
        return False


def test_wait_ready_detects_no_cpu_progress():
    t = iter(range(10**6))
    assert not wait_ready([_Pending()], 5.0, clock=lambda: float(next(t)), cpu=lambda: 0.0)


def test_wait_ready_keeps_waiting_while_cpu_advances():
    # CPU advances as fast as the clock: a slow but healthy computation, never declared wedged;
    # the output becomes ready after a while.
    calls = {"n": 0}

    class Slow:
        def is_ready(self):
            calls["n"] += 1
            return calls["n"] > 12

    t = iter(range(10**6))
    c = iter(range(10**6))
    assert wait_ready([Slow()], 3.0, clock=lambda: float(next(t)), cpu=lambda: float(next(c)))
    assert calls["n"] > 12


def test_run_guarded_redispatches_then_returns_the_real_result():
    calls = []

    def fn(x):
        calls.append(x)
        return [_Pending()] if len(calls) == 1 else jnp.asarray(x) * 2

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = run_guarded(fn, 21, stall_timeout=0.2, retries=1)
    assert int(out) == 42 and len(calls) == 2
    assert any("re-dispatching" in str(x.message) for x in w)


def test_run_guarded_raises_after_repeated_wedges():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(StalledComputation):
            run_guarded(lambda: [_Pending()], stall_timeout=0.1, retries=2)


def test_run_guarded_raises_by_default_on_a_wedge():
    with pytest.raises(StalledComputation, match="rerun"):
        run_guarded(lambda: [_Pending()], stall_timeout=0.1)


def test_run_guarded_disabled_is_a_plain_call():
    assert int(run_guarded(lambda: jnp.asarray(3), stall_timeout=0)) == 3


def test_run_guarded_redispatches_a_wedged_host_copy():
    # the wedge seen in practice: outputs report ready, the host copy never returns
    import threading

    import numpy as np

    never = threading.Event()
    fetches = []

    def fetch(o):
        fetches.append(1)
        if len(fetches) == 1:
            never.wait()  # blocks forever (daemon thread, abandoned)
        return np.asarray(o)

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = run_guarded(lambda: jnp.arange(3), stall_timeout=0.5, fetch=fetch, retries=1)
    assert out.tolist() == [0, 1, 2] and len(fetches) == 2
    assert any("re-dispatching" in str(x.message) for x in w)


def test_guard_only_on_xla_cpu():
    """On an accelerator the host idles while a chunk runs: no stall guard there by default."""
    from jaxbandits.watchdog import DEFAULT_STALL_TIMEOUT, timeout_for

    class Dev:
        def __init__(self, platform):
            self.platform = platform

    assert timeout_for([Dev("cpu"), Dev("cpu")]) == DEFAULT_STALL_TIMEOUT
    assert timeout_for([Dev("gpu")]) == 0.0
    assert timeout_for([Dev("tpu")]) == 0.0
    assert timeout_for([Dev("gpu")], 12.0) == 12.0  # an explicit timeout wins
