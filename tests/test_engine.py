"""The engine: reproducibility under any batching (lanes, chunks, refills, blocks of steps, n_reps,
task lists, devices), correctness, caps, refills, compilation."""
import dataclasses
import os
import subprocess
import sys
import textwrap
from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbandits as jb
from jaxbandits import engine
from jaxbandits.algorithms.base import Algorithm, Outcome, answer_mask
from jaxbandits.algorithms.fixed_confidence.uniform import UniformGLR
from jaxbandits.engine import simulate
from jaxbandits.stats import binomial_test_upper


def small_instance(theta=(1.0, 0.0), sigma=1.0):
    X = jnp.array([[1.0, 0.0], [0.0, 1.0], [np.cos(0.5), np.sin(0.5)]])
    return jb.make_instance(X, jnp.array(theta), sigma)


def two_instances():
    return jb.stack([small_instance((1.0, 0.0)), small_instance((0.0, 1.0), 0.5)])


# (lanes, chunk_size, refill_min, block_steps): lane counts of 32, 7 and 4, one chunk of 120 tasks
# or five of 25 (the last one short), refills as soon as one lane is free or only when all are,
# and blocks of S = 1, 7 (dividing nothing) and 32 steps; one program each.  The default layout
# (the program of test_answers_follow_each_instance and of the one-device run in
# test_results_identical_on_two_devices) is compared too.
LAYOUTS = {"eager": (32, 120, 1, 1), "all-free": (32, 120, 32, 1), "S7": (7, 25, None, 7), "S32": (4, None, None, 32)}
LAYOUT_REPS = 60
SHORT_CAP = 50  # most replications reach it, inside a block for S = 7 and 32


def _layout_run(name, max_steps, n_reps=LAYOUT_REPS, key=3, **kw):
    """UniformGLR on two_instances() in the named layout, on one CPU device (also on a machine with
    an accelerator: one backend for every layout)."""
    alg, inst, cpu = UniformGLR(delta=0.1), two_instances(), jax.devices("cpu")[:1]
    if name == "default":
        return simulate(alg, inst, jax.random.key(key), n_reps, max_steps, devices=cpu, **kw)
    lanes, chunk, refill, S = LAYOUTS[name]
    kw = dict(dict(lanes=lanes, chunk_size=chunk, refill_min=refill, block_steps=S), **kw)
    return simulate(alg, inst, jax.random.key(key), n_reps, max_steps, devices=cpu, **kw)


def test_results_independent_of_lanes_chunks_and_refills():
    """Replication (j, i) is the same whatever the lanes, the chunk, the refill policy and the
    block size S, for runs that stop by themselves and for runs that reach a cap inside a block
    (2 devices in blocks of 7: test_results_identical_on_two_devices); a capped lane is never
    stepped past the cap, and lane-steps are counted in whole blocks.  Refilling as soon as one lane
    is free wastes fewer lane-steps than waiting until every lane is free."""
    runs = {name: (_layout_run(name, 10**5), _layout_run(name, SHORT_CAP)) for name in ("default", *LAYOUTS)}
    ref_long, ref_short = runs["default"]
    assert ref_long.stopped.all() and not ref_short.stopped.all()
    for name, (long, short) in runs.items():
        if name != "default":
            assert long.layout.block_steps == LAYOUTS[name][3] and long.lanes == LAYOUTS[name][0]
        for a, b in ((ref_long, long), (ref_short, short)):
            for f in ("samples", "steps", "stopped", "answer", "pulls"):
                np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f"{name} {f}")
        capped = ~short.stopped
        assert capped.any()
        # a lane reaching max_steps inside a block is masked, never stepped past the cap
        assert (short.steps[capped] == SHORT_CAP).all() and (short.steps <= SHORT_CAP).all(), name
        # lane-steps are counted per block: whole blocks of S steps on every lane
        assert short.lane_steps % (short.layout.block_steps * short.lanes) == 0, name
    eager, all_free = runs["eager"][0], runs["all-free"][0]
    assert (eager.layout.refill_min, all_free.layout.refill_min) == (1, 32)
    assert eager.useful_steps == all_free.useful_steps and eager.lane_steps < all_free.lane_steps
    # out-of-range requests are clamped to [1, lanes] (here to all-free's layout: its program runs it)
    n = engine.programs_compiled()
    assert _layout_run("all-free", 10**5, n_reps=4, refill_min=10**6).layout.refill_min == 32
    assert engine.programs_compiled() == n


def test_n_reps_resume_and_chunks_never_recompile():
    """A change of n_reps, a resumed task list, more chunks and another key reuse the program of a
    fixed layout (one chunk of 120 tasks: the eager layout above), and the default layout does not
    follow the task count; replication (j, i) is the same whatever n_reps, chunk or task list it
    ran in."""
    full = _layout_run("eager", 10**5)
    n = engine.programs_compiled()
    more = _layout_run("eager", 10**5, n_reps=LAYOUT_REPS + 1)
    assert engine.programs_compiled() == n  # n_reps 60 -> 61 (two chunks)
    # tasks j * n_reps + i: replications 70-79 of instance 0 and 0-9 of instance 1
    resumed = _layout_run("eager", 10**5, n_reps=80, tasks=np.arange(70, 90))
    assert engine.programs_compiled() == n  # a resumed task list
    many = _layout_run("eager", 10**5, n_reps=(3 * full.chunk_size) // 2 + 1)
    assert engine.programs_compiled() == n  # four chunks instead of one
    _layout_run("eager", 10**5, key=5)
    assert engine.programs_compiled() == n  # another key
    default = _layout_run("default", 10**5)
    n = engine.programs_compiled()
    _layout_run("default", 10**5, n_reps=LAYOUT_REPS + 1)
    _layout_run("default", 10**5, n_reps=80, tasks=np.arange(70, 90))
    assert engine.programs_compiled() == n  # the default layout does not follow the task count
    np.testing.assert_array_equal(default.samples, full.samples)
    assert full.chunk_size == 120 and full.lanes == more.lanes == resumed.lanes == many.lanes
    np.testing.assert_array_equal(more.samples[:, :LAYOUT_REPS], full.samples)
    np.testing.assert_array_equal(many.samples[:, :LAYOUT_REPS + 1], more.samples)
    np.testing.assert_array_equal(resumed.samples[0, 70:80], many.samples[0, 70:80])
    np.testing.assert_array_equal(resumed.samples[1, :10], full.samples[1, :10])
    assert resumed.ran.sum() == 20 and resumed.ran[0, 70:80].all() and resumed.ran[1, :10].all()


@dataclasses.dataclass(frozen=True)
class Doubling(Algorithm):
    """Never stops; its sample count doubles at every step, as a phase schedule ceil(gamma^t)
    does when a capped run goes on, until float64 overflows to inf."""

    needs_span: ClassVar[bool] = False

    class State(NamedTuple):
        samples: jax.Array

    def init(self, key, instance):
        return self.State(jnp.ones((), instance.arms.dtype))

    def step(self, key, state, instance):
        return self.State(2.0 * state.samples)

    def done(self, state):
        return jnp.asarray(False)

    def outcome(self, state, instance):
        return Outcome(answer_mask(0, instance.num_items), state.samples,
                       jnp.zeros(instance.num_arms, jnp.int32))


def test_counts_saturate_instead_of_wrapping():
    inst = small_instance()
    fits = simulate(Doubling(), inst, jax.random.key(0), 2, 40)
    assert np.all(fits.samples == 2**40) and not fits.stopped.any()
    huge = simulate(Doubling(), inst, jax.random.key(0), 2, 1100)  # 2^1100 = inf in float64
    assert np.all(huge.samples == engine.COUNT_LIMIT) and np.all(huge.steps == 1100)


def test_results_identical_on_two_devices(tmp_path):
    script = textwrap.dedent("""
        import os, sys
        os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
        os.environ["JAX_PLATFORMS"] = "cpu"  # host devices, also on a machine with an accelerator
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import jax, numpy as np
        from test_engine import two_instances
        from jaxbandits.algorithms.fixed_confidence.uniform import UniformGLR
        from jaxbandits.engine import simulate
        assert len(jax.devices("cpu")) == 2
        # in blocks of 7 steps (the parent runs 1 per block): neither changes a replication
        r = simulate(UniformGLR(delta=0.1), two_instances(), jax.random.key(3), 60, 10**5, lanes=9,
                     block_steps=7, devices=jax.devices("cpu"))
        assert r.devices == 2 and r.layout.block_steps == 7
        np.save(sys.argv[1], r.samples)
        np.save(sys.argv[3], r.answer)
        from test_engine import xy_adaptive_run
        np.save(sys.argv[2], xy_adaptive_run(jax.devices("cpu")).samples)
    """)
    path = os.path.join(os.path.dirname(__file__), "_two_devices_script.py")
    with open(path, "w") as f:
        f.write(script)
    try:
        out, out_xy, out_answer = tmp_path / "s.npy", tmp_path / "xy.npy", tmp_path / "a.npy"
        subprocess.run([sys.executable, path, str(out), str(out_xy), str(out_answer)], check=True, timeout=300)
    finally:
        os.remove(path)
    # the same backend (XLA:CPU) in this process, whatever the default device is
    one = simulate(UniformGLR(delta=0.1), two_instances(), jax.random.key(3), 60, 10**5,
                   devices=jax.devices("cpu")[:1])
    assert one.layout.block_steps == 1
    np.testing.assert_array_equal(np.load(out), one.samples)
    np.testing.assert_array_equal(np.load(out_answer), one.answer)
    # XY-adaptive: greedy ties among symmetric arms, decided up to a few ulps (docs/design.md 7.3)
    np.testing.assert_array_equal(np.load(out_xy), xy_adaptive_run(jax.devices("cpu")[:1]).samples)


def xy_adaptive_run(devices):
    """XY-adaptive on a small Soare instance (d = 3: e_1, e_2, e_3 tie at every phase start)."""
    from jaxbandits.algorithms.fixed_confidence.xy import XYAdaptive
    from jaxbandits.instances import seeds

    inst = seeds.soare_benchmark(3, omega=0.3, theta_scale=1.0)
    return simulate(XYAdaptive(), inst, jax.random.key(3), 60, 10**6, record_pulls=False, devices=devices)


def test_uniform_glr_is_delta_correct():
    """Empirical error over 2000 replications is not significantly above delta (level 0.01)."""
    delta = 0.1
    inst = small_instance()
    res = simulate(UniformGLR(delta=delta), inst, jax.random.key(0), 2000, 10**6)
    s = res.summary()
    assert s["frac_capped"] == 0.0
    errors = int((~res.correct).sum())
    assert binomial_test_upper(errors, 2000, delta) > 0.01
    assert 0.5 < s["efficiency"] <= 1.0
    # every replication pulled the arms in turn: counts differ by at most one
    assert np.all(res.pulls.max(-1) - res.pulls.min(-1) <= 1)
    np.testing.assert_array_equal(res.pulls.sum(-1), res.samples)


def test_answers_follow_each_instance():
    inst = two_instances()
    res = simulate(UniformGLR(delta=0.05), inst, jax.random.key(1), 50, 10**5)
    best = np.asarray(inst.best_item())
    assert res.correct.mean() > 0.95
    assert np.all(res.answer[0, :, best[0]][res.correct[0]])
    assert np.all(res.answer[1, :, best[1]][res.correct[1]])


def test_capped_runs_are_not_stops():
    res = simulate(UniformGLR(delta=0.05), small_instance(), jax.random.key(0), 40, 5)
    assert not res.stopped.any()
    assert np.all(res.steps == 5)
    s = res.summary()
    assert s["frac_capped"] == 1.0 and s["stopped"] == 0


@pytest.mark.parametrize("bad, match", [
    (dict(delta=1.5), "delta"),
    (dict(delta=0.0), "delta"),
])
def test_bad_delta(bad, match):
    with pytest.raises(ValueError, match=match):
        simulate(UniformGLR(**bad), small_instance(), jax.random.key(0), 2, 10)


def test_input_errors():
    alg = UniformGLR()
    with pytest.raises(ValueError, match="max_steps"):
        simulate(alg, small_instance(), jax.random.key(0), 2, 0)
    with pytest.raises(ValueError, match="NaN"):
        simulate(alg, small_instance(theta=(np.nan, 0.0)), jax.random.key(0), 2, 10)
    X = jnp.array([[1.0, 0.0]])
    with pytest.raises(ValueError, match="at least 2 arms"):
        simulate(alg, jb.make_instance(X, jnp.array([1.0, 0.0])), jax.random.key(0), 2, 10)
    X = jnp.array([[1.0, 0.0], [2.0, 0.0]])
    with pytest.raises(ValueError, match="span"):
        simulate(alg, jb.make_instance(X, jnp.array([1.0, 0.0])), jax.random.key(0), 2, 10)
    bad = jb.Instance(arms=jnp.eye(3), items=jnp.eye(3), theta=jnp.ones(2), noise=jnp.ones(()))
    with pytest.raises(ValueError, match="shape"):
        simulate(alg, bad, jax.random.key(0), 2, 10)
    with pytest.raises(ValueError, match="n_reps"):
        simulate(alg, small_instance(), jax.random.key(0), 0, 10)


def test_default_layout_and_summary():
    res = simulate(UniformGLR(delta=0.1), small_instance(), jax.random.key(2), 100, 10**5)
    s = res.summary()
    for k in ("mean", "std", "se", "median", "q05", "q95", "error_rate", "error_lo", "error_hi",
              "frac_capped", "wall_time", "efficiency"):
        assert k in s
    assert s["error_lo"] <= s["error_rate"] <= s["error_hi"]
    assert abs(s["se"] - s["std"] / 10) < 1e-9
    assert len(res.rows()) == 100
