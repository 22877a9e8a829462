"""Test-wide settings.

Memory mappings: XLA:CPU keeps about 1,000 memory mappings per loaded program and the kernel
allows 65,530 per process (``vm.max_map_count``).  The engine drops its compiled programs before
compiling once a process is past half its limit (:mod:`jaxbandits.programs`); as a margin for the
programs the tests compile outside the engine (design solvers, lower bounds), a process past half
the limit also drops them between test modules.

Compiled programs: the tests never read or write a persistent compilation cache (the user's own,
``~/.cache/jaxbandits/xla``, would otherwise be turned on by the experiments' entry point for the
rest of a test process): ``JAXBANDITS_COMPILATION_CACHE=off`` for every test process and the
subprocesses the tests start, unless set already.  (A cache shared by the test processes was
tried twice: it found 103 of the 4,124 programs looked up, too few to pay for storing them all; and,
storing only the programs that took at least 1 s to compile, 3 of the 162 stored over three
quarters of the suite: the test files share almost no program.)
"""
import os
import platform
import subprocess
import sys

import pytest

#: XLA:CPU options of every test process and of the subprocesses the tests start, on x86-64: the
#: older (non-MLIR) fusion emitters, no LLVM optimisation, and no instruction set past AVX.  The
#: suite's time is mostly compilation (about two thirds of its test-seconds, measured) of programs
#: that then run for milliseconds.  Measured on the engine programs of XY-static, LT&S, RAGE, ALBA
#: and LinGame (Soare d = 2): 36-39 s of compile in all with the defaults, 18-21 s with these
#: options (24-28 s at LLVM level 1), with the same samples, answers and pull counts; the suite went
#: from 1,110-1,170 s to 631 s on 2 cores (837 s at level 1).  The AVX cap
#: leaves out fused multiply-adds: without it, at level 0 LLVM contracts a multiply and an add in
#: some programs and not in others, so two code paths that the tests require to give the same states
#: bit for bit (the fixed-trip Frank-Wolfe and its while loop, GIFA's two stopping pairs) differed in
#: the last place; with it every program rounds every sum alike.  Options the user set already are
#: kept; other machines, and a jaxlib that does not know an option (XLA aborts on an unknown one),
#: run the suite with XLA's defaults.
FAST_COMPILE_FLAGS = ("--xla_cpu_use_fusion_emitters=false", "--xla_backend_optimization_level=0",
                      "--xla_cpu_max_isa=AVX")


def _add_fast_compile_flags():
    """Adds :data:`FAST_COMPILE_FLAGS` to ``XLA_FLAGS`` (inherited by the test processes xdist
    starts, which then find them set) if a child process starts JAX with them."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return
    flags = os.environ.get("XLA_FLAGS", "").split()
    names = {flag.split("=")[0] for flag in flags}
    new = [flag for flag in FAST_COMPILE_FLAGS if flag.split("=")[0] not in names]
    if not new:
        return
    value = " ".join(flags + new)
    probe = subprocess.run([sys.executable, "-c", "import jax; jax.devices('cpu')"],
                           env=dict(os.environ, XLA_FLAGS=value), capture_output=True, timeout=120)
    if probe.returncode == 0:
        os.environ["XLA_FLAGS"] = value


_add_fast_compile_flags()

from jaxbandits import precision  # noqa: E402  (after XLA_FLAGS: the backend reads them once)

# The tests' own JAX code runs in float64, as the experiments' does; the library's entry points
# would enable it inside themselves anyway (tests/test_precision.py checks that importing the
# package alone changes nothing).
precision.enable_globally()


#: The test files that take longest on 2 cores, longest first (seconds of one worker, measured with
#: ``-n 2``): pyproject runs the suite with ``--dist loadfile --no-loadscope-reorder``, so the two
#: workers take whole files in this order, longest first, and the files not listed after them in
#: their usual order.  xdist's own order (most tests first) would leave the files with few but slow
#: tests (the README examples, the main job) for the end, with one core idle meanwhile.
LONGEST_FIRST = (
    "test_engine.py",              # 70
    "test_gifa.py",                # 63
    "test_readme.py",              # 59
    "test_xy.py",                  # 59
    "test_design_grad.py",         # 59
    "test_samplers.py",            # 58
    "test_oracle_sphere.py",       # 51
    "test_elimination_rules.py",   # 49
    "test_buckets.py",             # 46
    "test_contract.py",            # 45
    "test_track_and_stop.py",      # 44
    "test_fixed_budget.py",        # 43
    "test_dynamic_fields.py",      # 43
    "test_main_job.py",            # 41
    "test_tirinzoni_degenne.py",   # 41
    "test_watchdog.py",            # 35
    "test_byo.py",                 # 35
    "test_rage.py",                # 35
    "test_calibration.py",         # 33
    "test_design.py",              # 31
    "test_fws_toptwo.py",          # 26
    "test_lingame.py",             # 24
    "test_gse.py",                 # 21
    "test_step_structure.py",      # 21
    "test_precision.py",           # 20
)


def pytest_collection_modifyitems(session, config, items):
    """Longest files first (:data:`LONGEST_FIRST`); a stable sort, so every file's tests stay
    together and in their order."""
    from pathlib import Path

    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(Path(str(item.fspath)).name, len(rank)))


def pytest_configure(config):
    from jaxbandits import compilation_cache

    os.environ.setdefault(compilation_cache.ENV, "off")


@pytest.fixture(autouse=True, scope="module")
def _release_programs_when_mappings_run_high():
    yield
    from jaxbandits import programs

    programs.release_if_high()
