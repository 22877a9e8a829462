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

import pytest

from jaxbandits import precision

# The tests' own JAX code runs in float64, as the experiments' does; the library's entry points
# would enable it inside themselves anyway (tests/test_precision.py checks that importing the
# package alone changes nothing).
precision.enable_globally()


def pytest_configure(config):
    from jaxbandits import compilation_cache

    os.environ.setdefault(compilation_cache.ENV, "off")


@pytest.fixture(autouse=True, scope="module")
def _release_programs_when_mappings_run_high():
    yield
    from jaxbandits import programs

    programs.release_if_high()
