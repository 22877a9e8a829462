"""The device-aware layout: lanes from the backend and memory, solves batched per the device's
policy, instances shared by lanes (never copied), and the choices reported in Results."""
import re

import jax
import jax.numpy as jnp
import numpy as np

import jaxbandits as jb
from jaxbandits import batching, engine
from jaxbandits.engine import layout
from jaxbandits.algorithms import LazyTrackAndStop, MLinGapE, UniformGLR
from jaxbandits.batching import SolvePolicy, solve_where
from jaxbandits.instances import seeds
from jaxbandits.instances.base import as_batch


def test_solve_where_follows_the_traced_policy():
    """With no explicit capacity, the policy active at trace time decides (CPU: one lane at a
    time; accelerator: all lanes batched), and every policy gives the cond result."""
    def fn(x, k):  # a while loop (a fori_loop with static bounds would itself be a scan)
        return jax.lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, jnp.sin(c[1]) + k), (0, x))[1]

    preds = jnp.array([True, False, True, True, False, False, True])
    xs, olds = jnp.linspace(0.0, 1.0, 7), -jnp.arange(7.0)
    ref = jax.vmap(lambda p, x, o: jax.lax.cond(p, lambda: fn(x, 0.5), lambda: o))(preds, xs, olds)
    for pol in (batching.solve_for("cpu", 7), batching.solve_for("gpu", 7), SolvePolicy(True, None)):
        # a fresh function per policy: JAX caches traces by function, and the policy is read
        # while tracing (the engine traces a fresh program per layout)
        f = jax.vmap(lambda p, x, o: solve_where(p, fn, (x, 0.5), o))
        with batching.policy(pol):
            jaxpr = str(jax.make_jaxpr(f)(preds, xs, olds))
            got = jax.jit(f)(preds, xs, olds)
        np.testing.assert_allclose(got, ref, rtol=1e-14)
        # only the CPU policy runs the solver unbatched (one lane after another: a scalar sin);
        # the accelerator policies vmap it over a buffer of lanes
        assert (re.search(r":f64\[\] = sin", jaxpr) is not None) == (not pol.batched)
    assert batching.current_policy() == SolvePolicy()


def test_lanes_from_memory_on_an_accelerator():
    inst = as_batch(seeds.topm_classic())
    bpl = layout.lane_bytes(MLinGapE(m=2), inst)
    assert bpl > 0
    per_lane = bpl * layout.WORKING_SET_FACTOR
    # a big GPU and many tasks: as many lanes as half the memory holds (no fixed cap), a power of two
    big = layout.choose_lanes("gpu", bpl, 60 * 2**30, inst, tasks=10**8)
    assert big == 1 << (int(0.5 * 60 * 2**30) // per_lane).bit_length() - 1
    assert big > 2**16
    # little memory: lanes shrink with it (to a power of two), never below 1
    assert layout.choose_lanes("gpu", bpl, 64 * per_lane, inst) == 32
    assert layout.choose_lanes("gpu", bpl, 70 * per_lane, inst) == 32
    assert layout.choose_lanes("gpu", bpl, 10, inst) == 1
    # memory not reported: a fixed default
    assert layout.choose_lanes("gpu", bpl, None, inst) == layout.UNKNOWN_MEMORY_LANES
    # CPU: cache-sized, at most CPU_LANES, and the number of tasks changes nothing
    cpu = layout.choose_lanes("cpu", bpl, 2**34, inst)
    assert 16 <= cpu <= layout.CPU_LANES
    assert all(layout.choose_lanes("cpu", bpl, 2**34, inst, tasks=t) == cpu for t in (1, 12, 1000, 10**7))


def test_accelerator_lanes_follow_the_tasks_in_power_of_two_buckets():
    inst = as_batch(seeds.topm_classic())
    bpl = layout.lane_bytes(MLinGapE(m=2), inst)
    lanes = {t: layout.choose_lanes("gpu", bpl, 80 * 2**30, inst, tasks=t) for t in range(1, 5001)}
    # about TASKS_PER_LANE replications per lane, rounded up to a power of two: a 1,000-replication
    # run is not one mostly masked chunk of a huge lane count
    assert lanes[1000] == 256 and lanes[1] == 1 and lanes[4] == 1 and lanes[5] == 2
    assert all(v & (v - 1) == 0 for v in lanes.values())
    # few programs: one per power of two, never one per task count
    assert len(set(lanes.values())) == 12
    assert all(lanes[t] <= lanes[t + 1] for t in range(1, 5000))
    assert all(lanes[t] * layout.TASKS_PER_LANE >= t for t in lanes)
    # memory still bounds it
    tight = layout.choose_lanes("gpu", bpl, 64 * bpl * layout.WORKING_SET_FACTOR, inst, tasks=10**6)
    assert tight == 32


def test_lane_bytes_count_state_not_instances():
    """A lane carries its state and an instance index: a batch of instances adds only the one
    instance a lane gathers, not the batch."""
    inst = seeds.soare_benchmark(d=2, omega=0.3, theta_scale=1.0)  # the instance of the test below
    one, many = as_batch(inst), jb.stack([inst] * 40)
    b1, b40 = layout.lane_bytes(UniformGLR(), one), layout.lane_bytes(UniformGLR(), many)
    per_instance = sum(a[0].nbytes for a in jax.tree.leaves(many))
    assert b40 - b1 == per_instance


def test_results_report_the_layout_and_match_across_policies():
    inst = seeds.soare_benchmark(d=2, omega=0.3, theta_scale=1.0)
    alg = LazyTrackAndStop(delta=0.1)
    r = engine.simulate(alg, inst, jax.random.key(0), 12, 20_000)
    lay = r.layout
    assert lay.platform == jax.devices()[0].platform and lay.lanes == r.lanes
    assert lay.batched_solve == (lay.platform != "cpu") and lay.bytes_per_lane > 0
    # the same replications with the solves batched (the accelerator policy) give the same run
    r2 = engine.simulate(LazyTrackAndStop(delta=0.1, solve_capacity=4), inst, jax.random.key(0), 12, 20_000)
    np.testing.assert_array_equal(r.samples, r2.samples)
    np.testing.assert_array_equal(r.answer, r2.answer)


def test_batched_solve_serves_every_flag_count_in_one_pass_without_a_loop():
    """The accelerator policy: one pass on the smallest buffer holding the flagged lanes (0, 1, 8,
    64, ... lanes), no data-dependent loop, the cond result for any number of flagged lanes."""
    def fn(x, k):
        return jnp.sin(x) * k + x ** 2

    n = 70
    xs, olds = jnp.linspace(0.0, 1.0, n), -jnp.arange(float(n))
    f = jax.jit(jax.vmap(lambda p, x, o: solve_where(p, fn, (x, 0.5), o)))
    # the reference: one compiled program for every count (a fresh cond per count would compile anew)
    cond = jax.jit(jax.vmap(lambda p, x, o: jax.lax.cond(p, lambda: fn(x, 0.5), lambda: o)))
    for count in (0, 1, 5, 8, 9, 64, 65, n):
        # exactly `count` flagged lanes, spread out (3 is prime to n); built on the host, so that
        # no count compiles a program of its own
        preds = np.zeros((n,), bool)
        preds[np.arange(count) * 3 % n] = True
        assert preds.sum() == count
        preds = jnp.asarray(preds)
        ref = cond(preds, xs, olds)
        with batching.policy(batching.solve_for("gpu", n)):
            got = f(preds, xs, olds)
            jaxpr = str(jax.make_jaxpr(jax.vmap(lambda p, x, o: solve_where(p, fn, (x, 0.5), o)))(preds, xs, olds))
        np.testing.assert_allclose(got, ref, rtol=1e-14)
        assert "while" not in jaxpr


def test_accelerator_blocks_no_longer_than_a_replication():
    """On an accelerator a block holds at most the power of two at or above the most steps a
    replication takes (a fixed-budget algorithm's stages), so a run of a few steps is not followed
    by a block of masked steps; a CPU keeps its one-step blocks, and an unknown bound the default."""
    S = layout.ACCELERATOR_BLOCK_STEPS
    assert layout.choose_block_steps("gpu") == S
    assert layout.choose_block_steps("gpu", None) == S
    for bound, want in [(1, 1), (2, 2), (3, 4), (4, 4), (5, 8), (S - 1, S), (S, S), (10**7, S)]:
        assert layout.choose_block_steps("gpu", bound) == want, bound
        assert layout.choose_block_steps("cpu", bound) == layout.CPU_BLOCK_STEPS

    from jaxbandits.algorithms import GSE, ODLinBAI
    from jaxbandits.engine.runner import steps_bound

    inst = as_batch(seeds.static_basis(0.3, d=16))
    gse = GSE(budget=320)
    assert steps_bound(gse, inst, 10**7) == gse.steps_needed(inst) == 4
    assert steps_bound(gse, inst, 3) == 3  # the cap, where smaller
    assert steps_bound(ODLinBAI(budget=320), inst, 10**7) == ODLinBAI(budget=320).steps_needed(inst)
    assert steps_bound(UniformGLR(delta=0.1), inst, 5000) == 5000  # fixed confidence: the cap


def test_every_fixed_budget_algorithm_bounds_its_steps_on_a_prepared_batch():
    """What the engine asks on an accelerator before it compiles (``steps_bound`` on the prepared
    batch of instances): every fixed-budget algorithm answers, at least one step, at most the cap."""
    import math

    import jaxbandits.algorithms as A
    from jaxbandits.algorithms.base import StepsNeeded
    from jaxbandits.engine.runner import steps_bound
    from jaxbandits.instances import garivier_kaufmann_2016

    static = seeds.static_basis(0.3, d=4, noise=math.sqrt(10.0))
    logistic = seeds.logistic_gse(jax.random.key(0), 6, 3)
    bernoulli = garivier_kaufmann_2016(1)
    cases = [(A.GSE(budget=40), static), (A.ODLinBAI(budget=40), static), (A.Peace(budget=40), static),
             (A.HalvingPeace(budget=40), static), (A.BayesGap(budget=40), static), (A.LinUCB(budget=40), static),
             (A.UCBGLM(budget=40), logistic), (A.BudgetCapped(A.LinGapE(), 40), static),
             (A.SuccessiveRejects(budget=300), bernoulli), (A.SequentialHalving(budget=300), bernoulli)]
    for alg, inst in cases:
        assert isinstance(alg, StepsNeeded), type(alg).__name__
        batch = alg.prepare(as_batch(inst))
        bound = steps_bound(alg, batch, 10**7)
        assert 1 <= bound == alg.steps_needed(batch) <= 10**7, (type(alg).__name__, bound)
        assert steps_bound(alg, batch, 2) == min(2, bound)


def test_gse_replications_do_not_depend_on_the_block():
    """GSE's replications are the same in blocks of its 4 stages as in the accelerator's default
    blocks of 32 steps (and one step, the CPU's)."""
    from jaxbandits.algorithms import GSE

    inst = seeds.static_basis(0.3, d=8)
    runs = [jb.simulate(GSE(budget=160), inst, 3, 24, 100, lanes=8, block_steps=S) for S in (1, 4, 32)]
    for r in runs[1:]:
        np.testing.assert_array_equal(r.samples, runs[0].samples)
        np.testing.assert_array_equal(r.pulls, runs[0].pulls)
        np.testing.assert_array_equal(r.answer, runs[0].answer)
