"""Keep each test process clear of the kernel's limit on memory mappings.

XLA:CPU keeps about 750 memory mappings per compiled program and the kernel allows 65,530 per
process (``vm.max_map_count``); the whole suite in one process passed 58,000 and then crashed.
The suite runs in two processes (``-n 2`` in pyproject.toml; peak measured 46,000 in one of them),
and, as a margin, a process past half the limit drops JAX's and the engine's compiled programs
between test modules (which returns about a fifth of their mappings).
"""
import gc

import pytest

from jaxbandits import precision

# The tests' own JAX code runs in float64, as the experiments' does; the library's entry points
# would enable it inside themselves anyway (tests/test_precision.py checks that importing the
# package alone changes nothing).
precision.enable_globally()


@pytest.fixture(autouse=True, scope="module")
def _release_programs_when_mappings_run_high():
    yield
    from experiments._runner import mapping_usage

    use = mapping_usage()
    if use is not None and use[0] > 0.5 * use[1]:
        import jax

        from jaxbandits import engine

        engine._RUNNERS.clear()
        jax.clear_caches()
        gc.collect()
