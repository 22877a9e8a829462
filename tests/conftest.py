"""Test-wide settings.

Memory mappings: XLA:CPU keeps about 1,000 memory mappings per loaded program and the kernel
allows 65,530 per process (``vm.max_map_count``).  The engine drops its compiled programs before
compiling once a process is past half its limit (:mod:`jaxbandits.programs`); as a margin for the
programs the tests compile outside the engine (design solvers, lower bounds), a process past half
the limit also drops them between test modules.
"""
import pytest

from jaxbandits import precision

# The tests' own JAX code runs in float64, as the experiments' does; the library's entry points
# would enable it inside themselves anyway (tests/test_precision.py checks that importing the
# package alone changes nothing).
precision.enable_globally()


@pytest.fixture(autouse=True, scope="module")
def _release_programs_when_mappings_run_high():
    yield
    from jaxbandits import programs

    programs.release_if_high()
