"""Test-wide settings.

Memory mappings: XLA:CPU keeps about 1,000 memory mappings per loaded program and the kernel
allows 65,530 per process (``vm.max_map_count``).  The engine drops its compiled programs before
compiling once a process is past half its limit (:mod:`jaxbandits.programs`); as a margin for the
programs the tests compile outside the engine (design solvers, lower bounds), a process past half
the limit also drops them between test modules.

Compiled programs: every test process (the xdist workers and the subprocesses the tests start)
shares one persistent compilation cache (:mod:`jaxbandits.compilation_cache`) in a folder made for
this run and removed after it, so a program compiled by one process is loaded by the others, and
the suite never reads or writes the user's own cache (``~/.cache/jaxbandits/xla``), which the
experiments' entry point would otherwise turn on for the rest of a test process.
"""
import os
import shutil
import tempfile

import pytest

from jaxbandits import precision

# The tests' own JAX code runs in float64, as the experiments' does; the library's entry points
# would enable it inside themselves anyway (tests/test_precision.py checks that importing the
# package alone changes nothing).
precision.enable_globally()

_OWN_CACHE = []


def pytest_configure(config):
    from jaxbandits import compilation_cache

    if not hasattr(config, "workerinput") and not os.environ.get(compilation_cache.ENV):
        # the controller (or a run without xdist): one folder for this run, inherited by the
        # workers and by every subprocess through the environment
        folder = tempfile.mkdtemp(prefix="jaxbandits-tests-xla-")
        _OWN_CACHE.append(folder)
        os.environ[compilation_cache.ENV] = folder
    if not compilation_cache.disabled_by_env():
        compilation_cache.enable()


def pytest_unconfigure(config):
    for folder in _OWN_CACHE:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(autouse=True, scope="module")
def _release_programs_when_mappings_run_high():
    yield
    from jaxbandits import programs

    programs.release_if_high()
