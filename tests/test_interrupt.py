"""Ctrl-C during an experiment: one line saying what was saved and how to resume, status "interrupted";
Ctrl-C during a ``simulate`` run: the process stops within a second or two, whether it was compiling or
running a chunk."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ctrl_c_ends_cleanly(tmp_path, monkeypatch, capsys):
    import experiments.seed002_static as mod
    from experiments._runner import main

    def run(ctx):
        (ctx.csv_path).write_text("label,seed,instance,rep,samples,steps,correct,stopped,answer\n"
                                  'x,0,0,0,5,5,1,1,0\nx,0,0,1,6,6,1,1,0\n')
        raise KeyboardInterrupt

    monkeypatch.setattr(mod, "run", run)
    assert main(["seed002_static", "--out", str(tmp_path), "--quiet"]) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "interrupted" in err[0] and "2 replication(s) saved" in err[0] and "resume" in err[0]
    assert json.loads((tmp_path / "metadata.json").read_text())["status"] == "interrupted"


#: a run whose chunk lasts minutes (a gap of 1e-3: about 10^7 pulls a replication), and one whose
#: program takes seconds to compile (LT&S); the script prints a marker when it reaches that phase
SCRIPT = textwrap.dedent("""
    import signal
    # SIGINT deliverable, as in a terminal: a child inherits its parent thread's signal mask and
    # ignored signals, and a test process may have either (a pytest-xdist worker, a thread that
    # blocked SIGINT for itself)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.default_int_handler)
    import sys
    import jax
    import numpy as np
    import jaxbandits as jb
    import jaxbandits.engine.runner as runner
    from jaxbandits.algorithms import LazyTrackAndStop, UniformGLR
    from jaxbandits.engine import simulate
    from jaxbandits.instances import seeds

    phase = sys.argv[1]
    if phase == "chunk":
        guarded = runner.run_guarded
        def marked(fn, *a, **k):
            if k.get("what", "").startswith("chunk"):
                print("MARK", flush=True)
            return guarded(fn, *a, **k)
        runner.run_guarded = marked
        simulate(UniformGLR(delta=0.05), jb.make_instance(np.eye(2), [1.0, 0.999]), 0, 64, 10**9, progress=False)
    else:
        compile_ = jax.stages.Lowered.compile
        def marked(self, *a, **k):
            print("MARK", flush=True)
            return compile_(self, *a, **k)
        jax.stages.Lowered.compile = marked
        simulate(LazyTrackAndStop(), seeds.soare_benchmark(3, omega=0.3), 0, 4, 10**5, progress=False)
""")


@pytest.mark.parametrize("phase", ["chunk", "compile"])
def test_ctrl_c_stops_simulate_promptly(phase, tmp_path):
    """XLA cannot cancel a compile or a running program: Ctrl-C used to wait for the compile to end,
    and the process's exit for the chunk in flight (a whole chunk, here minutes).  Now it stops at
    once: the compile runs in a helper thread, and an exit with interrupted work still running ends
    the process (status 130) instead of waiting for it."""
    script = tmp_path / "run.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if phase == "compile":  # XLA's default options: a compile of seconds (conftest's fast ones take ~1 s)
        fast = ("--xla_cpu_use_fusion_emitters", "--xla_backend_optimization_level", "--xla_cpu_max_isa")
        env["XLA_FLAGS"] = " ".join(f for f in env.get("XLA_FLAGS", "").split() if f.split("=")[0] not in fast)
    proc = subprocess.Popen([sys.executable, str(script), phase], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    try:
        assert proc.stdout.readline().strip() == "MARK", proc.stderr.read()
        time.sleep(0.5 if phase == "chunk" else 0.2)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
        took = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = proc.stderr.read()
    assert "KeyboardInterrupt" in err, err[-2000:]
    assert took < 3.0, f"{took:.1f} s from Ctrl-C to the end of the process"
    assert proc.returncode == 130, (proc.returncode, err[-2000:])
