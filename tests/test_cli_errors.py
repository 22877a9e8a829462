"""Command-line errors: one line naming the argument, the value and what is allowed (the names a
file defines, the suites, the baselines, the cores), exit status 2, no traceback, before anything
is compiled; and the usages of ``jaxbandits --help`` / ``jaxbandits suites --help``."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from experiments import _runner
from jaxbandits import cli

ROOT = Path(__file__).resolve().parent.parent
TUTORIAL = str(ROOT / "docs" / "examples" / "gopt_tracking.py")


def _error(capsys, fn, *argv) -> str:
    """The one line a refused command prints (exit status 2, nothing on stdout)."""
    with pytest.raises(SystemExit) as e:
        fn(list(argv))
    assert e.value.code == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and not out.strip(), (out, err)
    assert "Traceback" not in err
    return lines[0]


# -- --devices -------------------------------------------------------------------------------------
def test_more_cpu_devices_than_cores_are_refused_before_jax_is_told(capsys, monkeypatch, tmp_path):
    import experiments.seed002_static as mod

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    told = []
    monkeypatch.setattr(_runner, "_set_cpu_devices", told.append)
    ran = []
    monkeypatch.setattr(mod, "run", ran.append)
    line = _error(capsys, _runner.main, "seed002_static", "--quick", "--devices", "64", "--quiet")
    assert "--devices" in line and "64" in line and "2 CPU core(s)" in line and "--oversubscribe" in line
    assert told == [] and ran == []  # the count never reached JAX, nothing ran
    # at most the cores: accepted; beyond them only when asked, and said what it costs in --help
    assert _runner.main(["seed002_static", "--quick", "--devices", "2", "--quiet", "--out", str(tmp_path)]) == 0
    assert _runner.main(["seed002_static", "--quick", "--devices", "64", "--oversubscribe", "--quiet",
                         "--out", str(tmp_path)]) == 0
    assert told == [2, 64] and len(ran) == 2
    with pytest.raises(SystemExit):
        _runner.main(["--help"])
    assert "--oversubscribe" in capsys.readouterr().out


# -- FILE.py:NAME ----------------------------------------------------------------------------------
def test_a_misspelt_algorithm_name_lists_the_names_the_file_defines(capsys):
    line = _error(capsys, cli.main, "calibrate", f"{TUTORIAL}:GOptTrackin", "--quick")
    assert "argument algorithm" in line and "'GOptTrackin'" in line
    assert "did you mean 'GOptTracking'" in line and "defines: GOptTracking" in line
    # what the file imports is not listed (Algorithm, Outcome, ...)
    assert "Outcome" not in line and "Algorithm," not in line


def test_a_missing_or_broken_file_is_one_line(capsys, tmp_path):
    line = _error(capsys, cli.main, "calibrate", f"{tmp_path / 'nope.py'}:Mine")
    assert "argument algorithm" in line and "nope.py" in line and "no file" in line
    bad = tmp_path / "bad.py"
    bad.write_text("import math\n\n\ndef helper():\n    raise RuntimeError('boom')\n\n\nhelper()\n")
    line = _error(capsys, cli.main, "benchmark", f"{bad}:Mine", "--quick")
    assert "argument algorithms" in line and "could not be imported" in line and "RuntimeError: boom" in line
    assert "(line 5)" in line
    (tmp_path / "syntax.py").write_text("def f(:\n")
    line = _error(capsys, cli.main, "calibrate", f"{tmp_path / 'syntax.py'}:f")
    assert "SyntaxError" in line and "(line 1)" in line
    line = _error(capsys, cli.main, "calibrate", "no_such_package.mod:X")
    assert "no module 'no_such_package.mod'" in line


def test_param_suite_and_baseline_errors_name_what_is_allowed(capsys):
    line = _error(capsys, cli.main, "calibrate", f"{TUTORIAL}:GOptTracking", "--param", "delt=0.1")
    assert "argument --param" in line and "'delt'" in line and "its fields: delta, sigma" in line
    line = _error(capsys, cli.main, "calibrate", f"{TUTORIAL}:GOptTracking", "--param", "delta")
    assert "argument --param" in line and "FIELD=VALUE" in line and "'delta'" in line
    line = _error(capsys, cli.main, "benchmark", f"{TUTORIAL}:GOptTracking", "--suite", "fixed-confidenc")
    assert "argument --suite" in line and "'fixed-confidenc'" in line and "fixed-confidence, top-m, fixed-budget" in line
    line = _error(capsys, cli.main, "benchmark", f"{TUTORIAL}:GOptTracking", "--baselines", "RAGE,Nope")
    assert "argument --baselines" in line and "'Nope'" in line and "UniformGLR" in line


# -- --out ------------------------------------------------------------------------------------------
def _unwritable(tmp_path) -> str:
    """A folder this process cannot make or write in, even as root: under /proc; else a folder
    without write permission (skipped where the permission does not bind, as for root)."""
    if Path("/proc/self").is_dir():
        return "/proc/jaxbandits-out/sub"
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    if os.access(ro, os.W_OK):
        pytest.skip("this process can write in a read-only folder (root)")
    return str(ro / "sub")


@pytest.mark.parametrize("command", ["experiments", "calibrate", "benchmark"])
def test_an_out_folder_that_cannot_be_written_is_refused_up_front(capsys, tmp_path, command):
    out = _unwritable(tmp_path)
    if command == "experiments":
        line = _error(capsys, _runner.main, "seed002_static", "--quick", "--out", out)
    else:
        line = _error(capsys, cli.main, command, f"{TUTORIAL}:GOptTracking", "--quick", "--out", out)
    assert "argument --out" in line and repr(out) in line and "write" in line


# -- usages -----------------------------------------------------------------------------------------
def test_jaxbandits_help_lists_every_subcommand(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    for what in ("jaxbandits calibrate", "jaxbandits benchmark", "jaxbandits suites", "jaxbandits EXPERIMENT",
                 "python -m experiments"):
        assert what in out, what
    assert "usage: python -m experiments" not in out
    with pytest.raises(SystemExit) as e:
        cli.main(["suites", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "usage: jaxbandits suites" in out and "fixed-confidence v" not in out


def test_ctrl_c_in_calibrate_or_benchmark_is_one_line_naming_the_folder(capsys, monkeypatch, tmp_path):
    from jaxbandits import benchmarking, byo

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(byo, "calibrate", interrupted)
    monkeypatch.setattr(benchmarking, "benchmark", interrupted)
    for command in ("calibrate", "benchmark"):
        try:
            rc = cli.main([command, f"{TUTORIAL}:GOptTracking", "--quick", "--out", str(tmp_path),
                           "--no-compile-cache"])
        except KeyboardInterrupt:
            pytest.fail(f"jaxbandits {command}: Ctrl-C ended in a traceback")
        assert rc == 130
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"under {tmp_path}/" in err[0] and "rows.csv" in err[0] and "resume" in err[0]


def test_an_algorithm_the_command_cannot_run_is_one_line(capsys, tmp_path):
    # a fixed-budget algorithm given to calibrate; a best-arm algorithm given to the Top-m suite
    line = _error(capsys, cli.main, "calibrate", "jaxbandits.algorithms:GSE", "--param", "budget=100", "--quick",
                  "--out", str(tmp_path), "--no-compile-cache")
    assert "argument algorithm" in line and "GSE is a fixed-budget algorithm" in line and "suite='fixed-budget'" in line
    line = _error(capsys, cli.main, "benchmark", f"{TUTORIAL}:GOptTracking", "--suite", "top-m", "--quick",
                  "--baselines", "none", "--out", str(tmp_path), "--no-compile-cache")
    assert "argument algorithms" in line and "GOptTracking returns 1 item(s)" in line and "m = 2" in line
