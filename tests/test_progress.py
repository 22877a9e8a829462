"""Progress bars: shown on request or on a terminal once the work lasts, silent otherwise.

A terminal is faked with a real pseudo-terminal (:class:`Terminal`): ``sys.stderr`` is its slave
end, left at the size a fresh pseudo-terminal has (0 x 0, as under many job runners and editors),
and what is drawn on it is read from its master end with the time it came.  The delay before a
bar appears and the time between its redraws are shortened, so each test lasts about a second
beyond the one program it compiles; a slow step (compilation, drawing instances, a benchmark's
grid point) is slowed on purpose so that the bar must show while no unit has finished.
"""
from __future__ import annotations

import io
import os
import pty
import select
import sys
import threading
import time

import pandas as pd
import pytest

import jaxbandits as jb
from jaxbandits import progress
from jaxbandits.algorithms import UniformGLR
from jaxbandits.instances import seeds

DELAY = 0.2    # seconds before a bar appears, in these tests
SLOW = 1.0     # seconds a slowed step lasts: well past DELAY


class Terminal:
    """A pseudo-terminal standing for the user's: ``sys.stderr`` writes to it while the test
    runs; :meth:`text` is what reached it, :meth:`when` the time since the start at which a string
    first did."""

    def __init__(self):
        self.master, self.slave = pty.openpty()
        self.file = open(self.slave, "w", buffering=1, encoding="utf-8", closefd=False)
        self.chunks: list[tuple[float, str]] = []
        self.t0 = time.perf_counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self):
        while not self._stop.is_set():
            ready, _, _ = select.select([self.master], [], [], 0.02)
            if ready:
                try:
                    data = os.read(self.master, 65536)
                except OSError:
                    return
                self.chunks.append((time.perf_counter() - self.t0, data.decode("utf-8", "replace")))

    def text(self) -> str:
        time.sleep(0.1)  # what is in flight in the pseudo-terminal
        return "".join(c for _, c in self.chunks)

    def when(self, needle: str) -> float | None:
        seen = ""
        for t, c in list(self.chunks):
            seen += c
            if needle in seen:
                return t
        return None

    def close(self):
        self.file.flush()
        time.sleep(0.1)
        self._stop.set()
        self._thread.join()
        self.file.close()
        os.close(self.slave)
        os.close(self.master)


@pytest.fixture
def terminal(monkeypatch):
    """A terminal on ``sys.stderr`` (set by the test itself: pytest puts its own stream back
    between a fixture and the test) and short bar delays."""
    monkeypatch.setattr(progress, "DELAY", DELAY)
    monkeypatch.setattr(progress, "REFRESH", 0.1)
    monkeypatch.delenv("COLUMNS", raising=False)
    term = Terminal()
    term.attach = lambda: monkeypatch.setattr(sys, "stderr", term.file)
    yield term
    monkeypatch.undo()
    term.close()
    assert not progress._OPEN  # every bar closed


@pytest.fixture
def off_terminal(monkeypatch):
    """Standard error a file (a log, a pipe; set by the test) and short bar delays: nothing may
    appear on it."""
    monkeypatch.setattr(progress, "DELAY", 0.05)
    monkeypatch.setattr(progress, "REFRESH", 0.05)
    log = io.StringIO()
    log.attach = lambda: monkeypatch.setattr(sys, "stderr", log)
    yield log
    assert not progress._OPEN


def _slow(monkeypatch, module, name):
    """Make the first call of ``module.name`` take SLOW seconds more."""
    fn = getattr(module, name)
    calls = []

    def slowed(*a, **k):
        if not calls:
            time.sleep(SLOW)
        calls.append(1)
        return fn(*a, **k)

    monkeypatch.setattr(module, name, slowed)


def _slow_compile(monkeypatch):
    from jaxbandits.engine import runner

    _slow(monkeypatch, runner, "_plan_and_compile")


def _soare(key, d):
    return seeds.soare_benchmark(d, omega=0.3, theta_scale=1.0)


def _slow_soare(key, d):
    time.sleep(SLOW)
    return _soare(key, d)


def _sweep(out, gen_fn=_soare, **kw):
    gen = jb.Generator("soare", gen_fn, {"d": [2]}, n_instances=1)
    return jb.sweep({"uniform": UniformGLR(delta=0.2)}, gen, n_reps=4, key=0, max_steps=2000, out=out,
                    lower_bound=False, buckets=None, **kw)


# -- the bar itself --------------------------------------------------------------------------------
def test_bar_reports_count_rate_and_total(capsys):
    bar = progress.Bar(None, desc="run", unit="rep", enabled=True, delay=0.0, status="compiling")
    bar.set_total(3, status="")
    for _ in range(3):
        time.sleep(0.01)
        bar.update(1)
    bar.close()
    err = capsys.readouterr().err
    assert "3/3" in err and "rep/s" in err


def test_silent_when_short_or_disabled(capsys):
    for bar in (progress.Bar(5, desc="x", unit="rep", enabled=False),
                progress.Bar(5, desc="x", unit="rep", enabled=True, delay=3600.0)):
        bar.update(5)
        bar.close()
    assert capsys.readouterr().err.strip() == ""


def test_wanted():
    assert progress.wanted(True) and not progress.wanted(False)
    assert not progress.wanted(print)       # a callable gets lines, not a bar
    assert not progress.wanted(None)        # pytest's captured stderr is not a terminal


def test_bar_shows_its_status_before_any_unit_and_keeps_its_clock_running(terminal):
    terminal.attach()
    # a 0 x 0 pseudo-terminal: tqdm alone draws nothing at 0 columns
    assert os.get_terminal_size(terminal.slave).columns == 0
    assert progress.wanted(None)
    bar = progress.Bar(4, desc="sweep", unit="config", enabled=progress.wanted(None), status="compiling")
    time.sleep(DELAY + 0.6)          # no unit finishes
    bar.close()
    shown = terminal.when("compiling")
    assert shown is not None and shown < DELAY + 0.3, terminal.chunks
    # redrawn while nothing happens: the clock moves on, several times
    draws = terminal.text().count("sweep:")
    assert draws >= 4, terminal.text()


def test_nested_bars_take_a_line_each_and_the_inner_one_is_cleared(terminal, capsys):
    terminal.attach()
    outer = progress.Bar(2, desc="outer", unit="config", enabled=True, status="preparing")
    time.sleep(DELAY + 0.1)
    progress.write("a line above the bars")
    inner = progress.Bar(None, desc="inner", unit="rep", enabled=True, status="compiling")
    time.sleep(DELAY + 0.2)
    inner.close()
    outer.update(1)
    outer.close()
    text = terminal.text()
    # the line: on standard output, the bar blanked before it and drawn again after it
    assert capsys.readouterr().out.startswith("a line above the bars\n")
    assert "preparing]\r" + " " * 20 in text
    # the inner bar is drawn one line down (newline, bar, cursor back up) ...
    assert "\n\rinner:" in text and "\x1b[A" in text
    # ... and blanked when it closes (its line drawn empty), while the outer one stays
    after = text[text.rindex("inner:"):]
    assert "\n\r" + " " * 10 in after or "\n\r\x1b[K" in after
    assert text.rstrip().endswith("]") and "outer:  50%" in text


# -- every long job on a terminal ------------------------------------------------------------------
def test_simulate_shows_a_bar_while_compiling(terminal, monkeypatch):
    terminal.attach()
    _slow_compile(monkeypatch)
    inst = _soare(None, 2)
    start = time.perf_counter() - terminal.t0
    res = jb.engine.simulate(UniformGLR(delta=0.2), inst, 0, n_reps=4, max_steps=2000, record_pulls=False)
    assert res.samples.shape == (1, 4)
    # drawn during the (slowed) compilation: the status says so, before any replication finished;
    # the checks of the arguments before it take a second or two in a fresh process
    shown = terminal.when("compiling")
    assert shown is not None and shown - start < DELAY + 2.5, terminal.chunks
    assert "UniformGLR:" in terminal.text()


def test_sweep_says_what_it_is_doing_before_its_first_configuration(terminal, monkeypatch, tmp_path):
    terminal.attach()
    _slow_compile(monkeypatch)
    drawn = []

    def slow_soare(key, d):  # the draw's end, on the terminal's clock
        out = _slow_soare(key, d)
        drawn.append(time.perf_counter() - terminal.t0)
        return out

    df = _sweep(tmp_path, gen_fn=slow_soare)
    assert len(df) == 4
    # drawn while the (slowed) instances are drawn (SLOW seconds, well past the bar's DELAY),
    # before the draw ended: timed against the draw itself, not against the test's start, which a
    # loaded machine's setup (a first compile in a fresh worker) can push back by a second
    drawing = terminal.when("drawing 1 instance(s): soare d=2")
    assert drawing is not None and drawing < drawn[0], (drawn, terminal.chunks)
    # then the configuration, and under it its run, compiling
    text = terminal.text()
    assert "uniform | soare d=2" in text and "\n\rUniformGLR: 0rep" in text and "compiling" in text
    assert "sweep: 100%" in text


def test_experiment_shows_its_bar_and_its_runs(terminal, monkeypatch, tmp_path):
    from experiments._runner import Context

    terminal.attach()
    _slow_compile(monkeypatch)
    ctx = Context("tiny", None, 0, tmp_path, quick=True)
    ctx._config_bar()
    time.sleep(DELAY + 0.3)
    ctx.simulate({"algorithm": "uniform", "d": 2}, UniformGLR(delta=0.2), _soare(None, 2), 4, 2000,
                 record_pulls=False)
    ctx.close_bar()
    assert terminal.when("preparing") < DELAY + 0.3, terminal.chunks
    text = terminal.text()
    assert "tiny:" in text and "algorithm=uniform, d=2" in text and "\n\rUniformGLR: 0rep" in text
    # on a terminal the runs have a bar, not a line per chunk
    assert "replications," not in text


def test_calibrate_shows_its_grid_and_runs(terminal, monkeypatch):
    from jaxbandits import calibration

    terminal.attach()
    _slow_compile(monkeypatch)
    monkeypatch.setattr(calibration, "lower_bound", lambda name, delta: 1.0)  # T*: not what is tested here
    start = time.perf_counter() - terminal.t0
    df = jb.calibrate(UniformGLR(), n_reps=2, max_steps=300)
    assert len(df) == 6
    # drawn during the first configuration's (slowed) compilation
    shown = terminal.when("UniformGLR, delta=0.05 | calibration sigma=0.5")
    assert shown is not None and shown - start < DELAY + SLOW, terminal.chunks
    assert "\n\rUniformGLR: 0rep" in terminal.text() and "sweep: 100%" in terminal.text()


def _fake_sweep(means, sleep=0.0):
    """A stand-in for jaxbandits.sweep inside benchmark: rows with the given mean stopping time per
    algorithm (no program compiled)."""
    def sweep(algs, gen, *, n_reps, progress=None, **_):
        time.sleep(sleep)
        (name,) = algs
        (params,) = gen.points()
        return pd.DataFrame([dict(algorithm=name, generator=gen.name, **params, delta=0.05, instance=j, rep=i,
                                  samples=means[name] + (i % 3 - 1), steps=1, correct=True, stopped=True,
                                  answer="0", lower_bound=10.0)
                             for j in range(gen.n_instances) for i in range(n_reps)])
    return sweep


def _tiny_suite():
    import dataclasses

    from jaxbandits import benchmarking as bm

    s = bm.SUITES["fixed-confidence"]
    return dataclasses.replace(s, name="tiny-progress", sets=(dataclasses.replace(s.sets[0], quick_grid={"d": [2]},
                                                                                  n_reps=(4, 4)),),
                               quick_baselines=("UniformGLR",))


def test_benchmark_shows_a_bar_from_its_first_grid_point(terminal, monkeypatch, tmp_path):
    from jaxbandits import sweeps

    terminal.attach()
    monkeypatch.setattr(sweeps, "sweep", _fake_sweep({"mine": 10, "UniformGLR": 20}, sleep=SLOW))
    start = time.perf_counter() - terminal.t0
    rep = jb.benchmark({"mine": UniformGLR()}, _tiny_suite(), out=tmp_path, figures=False)
    assert len(rep.table) == 2
    # drawn during the first grid point (each lasts SLOW seconds), with what is at work
    shown = terminal.when("0/2 [00:00<?, ?point/s, mine | soare d=2]")
    assert shown is not None and shown - start < DELAY + SLOW + 2.0, terminal.chunks
    assert "benchmark tiny-progress-v2-quick: 100%" in terminal.text()


# -- nothing off a terminal ------------------------------------------------------------------------
def test_nothing_is_drawn_off_a_terminal(off_terminal, monkeypatch, tmp_path, capsys):
    from experiments._runner import Context
    from jaxbandits import sweeps

    off_terminal.attach()
    _slow_compile(monkeypatch)
    assert not progress.wanted(None)
    jb.engine.simulate(UniformGLR(delta=0.2), _soare(None, 2), 0, n_reps=4, max_steps=2000, record_pulls=False)
    _sweep(tmp_path / "sweep", gen_fn=_slow_soare)
    ctx = Context("tiny", None, 0, tmp_path / "exp", quick=True)
    ctx._config_bar()
    ctx.simulate({"algorithm": "uniform"}, UniformGLR(delta=0.2), _soare(None, 2), 4, 2000, record_pulls=False)
    ctx.close_bar()
    monkeypatch.setattr(sweeps, "sweep", _fake_sweep({"mine": 10, "UniformGLR": 20}, sleep=0.2))
    jb.benchmark({"mine": UniformGLR()}, _tiny_suite(), out=tmp_path / "bench", figures=False)
    assert off_terminal.getvalue() == ""
    # the experiment's log lines go on as before: one per configuration and per chunk
    out = capsys.readouterr().out
    assert "[tiny]" in out and "replications," in out
