"""Lanes advance in blocks of S steps (a compile-time trip count), checking for finished lanes once
per block: a replication's result never depends on S, the lanes, the chunk or the devices (two
devices in blocks of 7 steps against one device in blocks of 1: tests/test_engine.py's two-device
run)."""
import os
import sys

import jax
import numpy as np
import pytest

from jaxbandits.algorithms.fixed_confidence.uniform import UniformGLR
from jaxbandits.engine import simulate

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_engine import two_instances  # noqa: E402

N_REPS = 24
LAYOUTS = [  # (block_steps, lanes, chunk_size): S of 1, 7 (dividing nothing) and 32, lanes of 4 and 16,
    # a chunk smaller than the lanes; one program each
    (1, 4, None), (7, 16, 10), (32, 4, None),
]


def _run(S, lanes, chunk, max_steps, devices=None):
    return simulate(UniformGLR(delta=0.1), two_instances(), jax.random.key(5), N_REPS, max_steps,
                    lanes=lanes, chunk_size=chunk, block_steps=S, devices=devices or jax.devices("cpu")[:1])


@pytest.fixture(scope="module")
def runs():
    # a long cap (every run stops by itself) and a short one that most runs hit inside a block
    return {lay: (_run(*lay, 10**5), _run(*lay, 50)) for lay in LAYOUTS}


def test_results_identical_for_every_block_size_lane_count_and_chunk(runs):
    ref_long, ref_short = runs[LAYOUTS[0]]
    assert ref_long.stopped.all() and not ref_short.stopped.all()
    for lay, (long, short) in runs.items():
        assert long.layout.block_steps == lay[0]
        for a, b in ((ref_long, long), (ref_short, short)):
            np.testing.assert_array_equal(a.samples, b.samples, err_msg=str(lay))
            np.testing.assert_array_equal(a.steps, b.steps, err_msg=str(lay))
            np.testing.assert_array_equal(a.stopped, b.stopped, err_msg=str(lay))
            np.testing.assert_array_equal(a.answer, b.answer, err_msg=str(lay))
            np.testing.assert_array_equal(a.pulls, b.pulls, err_msg=str(lay))


def test_a_capped_run_stops_at_the_cap_inside_a_block(runs):
    for lay, (_, short) in runs.items():
        capped = ~short.stopped
        assert capped.any()
        # a lane reaching max_steps inside a block is masked, never stepped past the cap
        assert (short.steps[capped] == 50).all() and (short.steps <= 50).all(), lay
        # lane-steps are counted per block: whole blocks of S steps on every lane
        assert short.lane_steps % (lay[0] * short.lanes) == 0, lay

