"""Successive Rejects (Audibert & Bubeck 2010) and Sequential Halving (Karnin et al. 2013) on
K-armed Bernoulli bandits: the schedules of the papers, the budget, and the error rates against a
plain NumPy implementation of each algorithm (a two-sided two-proportion test)."""
import math

import numpy as np
import pytest

import jaxbandits  # noqa: F401
from jaxbandits.algorithms import SequentialHalving, SuccessiveRejects
from jaxbandits.algorithms.fixed_budget.karmed import halving_sizes, log_bar
from jaxbandits.engine import simulate
from jaxbandits.instances import k_armed
from karmed_support import ref

#: Audibert & Bubeck 2010, Sec 5, experiment 4 (6 arms in three groups), Bernoulli
MU = np.array([0.5, 0.42, 0.4, 0.4, 0.35, 0.35])


def _two_proportions_z(k1, n1, k2, n2):
    p = (k1 + k2) / (n1 + n2)
    se = math.sqrt(max(p * (1 - p), 1e-12) * (1 / n1 + 1 / n2))
    return (k1 / n1 - k2 / n2) / se


@pytest.mark.parametrize("algorithm,reference,budget", [(SuccessiveRejects, ref.successive_rejects, 600),
                                                        (SequentialHalving, ref.sequential_halving, 600)])
def test_error_rate_matches_the_numpy_algorithm(algorithm, reference, budget):
    inst = k_armed(MU)
    alg = algorithm(budget=budget)
    n = 3000
    res = simulate(alg, inst, 0, n_reps=n, max_steps=alg.steps_needed(inst))
    errors = int(np.sum(~np.asarray(res.correct)))
    pulls = np.asarray(res.pulls).reshape(n, -1) if res.pulls is not None else None
    assert np.asarray(res.samples).max() <= budget
    ref, N = reference(np.random.default_rng(1), MU, budget, 40_000)
    ref_errors = int(np.sum(ref != 0))
    z = _two_proportions_z(errors, n, ref_errors, ref.size)
    assert abs(z) < 3.5, (errors / n, ref_errors / ref.size, z)
    # the schedule is the paper's: the budget used is the reference's, replication for replication
    assert int(np.asarray(res.samples).ravel()[0]) == int(N[0].sum())
    del pulls


def test_schedules_and_refusals():
    K = 6
    # Successive Rejects: n_k = ceil((n - K) / (log-bar(K) (K + 1 - k))), total <= n
    n = 600
    nk = [math.ceil((n - K) / (log_bar(K) * (K + 1 - k))) for k in range(1, K)]
    assert sum(nk) + nk[-1] <= n
    res = simulate(SuccessiveRejects(budget=n), k_armed(MU), 0, n_reps=4, max_steps=K - 1)
    assert int(np.asarray(res.samples).ravel()[0]) == sum(nk) + nk[-1]
    assert halving_sizes(6) == [6, 3, 2, 1] and halving_sizes(8) == [8, 4, 2, 1]
    with pytest.raises(ValueError, match="budget > K"):
        SuccessiveRejects(budget=6).validate(k_armed(MU))
    with pytest.raises(ValueError, match="K ceil"):
        SequentialHalving(budget=10).validate(k_armed(MU))
    from jaxbandits.instances.base import make_instance
    import jax.numpy as jnp
    with pytest.raises(ValueError, match="K-armed"):
        SequentialHalving(budget=100).validate(make_instance(jnp.array([[1.0, 0.0], [0.0, 1.0], [0.7, 0.7]]),
                                                             jnp.array([0.5, 0.2]), model="bernoulli"))


def test_k_armed_suites():
    """The K-armed benchmark suites: complete, and the fixed-confidence suite's lower bound (the
    sweep's sigma^2 T*(theta) of the Gaussian linear model) is the K-armed Gaussian T*(mu) kl(delta,
    1 - delta) of Garivier & Kaufmann 2016 on its instances."""
    import jax
    import jax.numpy as jnp
    from jaxbandits import benchmarking as bm
    from jaxbandits.design import characteristic_time, karmed
    from jaxbandits.instances import random_k_armed

    for name, kind in (("k-armed", "fixed-confidence"), ("k-armed-bernoulli", "fixed-confidence"),
                       ("k-armed-budget", "fixed-budget")):
        s = bm.SUITES[name]
        assert s.kind == kind and s.version and set(s.quick_baselines) <= set(s.baselines)
        for iset in s.sets:
            assert iset.points("quick") and iset.points("full")
    inst = random_k_armed(jax.random.key(3), 6, noise=0.5)
    linear = float(inst.noise) ** 2 * float(characteristic_time(inst, tol=1e-9))
    family = float(karmed.characteristic_time(inst.theta, "gaussian", sigma=0.5))
    np.testing.assert_allclose(linear, family, rtol=1e-6)
    assert float(inst.theta[0]) == 0.9 and float(jnp.max(inst.theta[1:])) <= 0.7


def test_the_accelerator_program_draws_the_cpu_program_s_sums_with_no_loop():
    """Under the accelerator policy Successive Elimination's rounds (one pull of each alive arm)
    draw their Bernoulli rewards by inversion in two fixed iterations, and the phases of Successive
    Rejects and Sequential Halving (hundreds of pulls of an arm: JAX's BTRS) in the fixed iterations
    of :func:`jaxbandits.environment.binomial`: no loop whose trip count depends on data in a step,
    and the states of 64 lanes are the CPU program's, bit for bit, round by round."""
    import jax
    import jax.numpy as jnp

    from jaxbandits import batching
    from jaxbandits.algorithms import SuccessiveElimination
    from jaxbandits.algorithms.base import with_batching
    from jaxbandits.instances import garivier_kaufmann_2016

    inst = garivier_kaufmann_2016(1)
    keys = jax.random.split(jax.random.key(11), 64)
    for alg, steps in ((SuccessiveRejects(budget=3000), 3), (SequentialHalving(budget=3000), 2),
                       (SuccessiveElimination(delta=0.1), 40)):
        def run(a):
            st = jax.vmap(lambda k: a.init(k, inst))(keys)
            step = jax.vmap(lambda k, s: a.step(k, s, inst))
            return jax.lax.scan(lambda s, t: (step(jax.vmap(lambda k: jax.random.fold_in(k, t))(keys), s), None),
                                st, jnp.arange(steps))[0]

        gpu = with_batching(alg, batching.solve_for("gpu", 64))
        st = jax.vmap(lambda k: gpu.init(k, inst))(keys)
        loops = str(jax.make_jaxpr(jax.vmap(lambda k, s: gpu.step(k, s, inst)))(keys, st)).count("while[")
        assert loops == 0
        cpu_state, gpu_state = jax.jit(lambda: run(alg))(), jax.jit(lambda: run(gpu))()
        for a, b in zip(cpu_state, gpu_state):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        assert float(jnp.max(gpu_state.pulls)) >= steps


def test_an_unfinished_bernoulli_sum_is_reported():
    """A draw left unfinished by the fixed iterations is reported (``finished`` False), never
    silently replaced; a run with one is marked not converged in its Outcome (Successive
    Elimination)."""
    import jax
    import jax.numpy as jnp

    from jaxbandits import batching
    from jaxbandits.algorithms.base import with_batching
    from jaxbandits.environment import pull_counts, pull_counts_fixed
    from jaxbandits.instances import garivier_kaufmann_2016

    inst = garivier_kaufmann_2016(1)
    counts = jnp.full((inst.num_arms,), 5000.0)
    key = jax.random.key(2)
    with batching.policy(batching.solve_for("gpu", 1)):
        sums, ok = pull_counts_fixed(key, inst, counts)
        _, ok1 = pull_counts_fixed(key, inst, counts, tries=1)   # BTRS: some candidate is rejected once
        _, ok_small = pull_counts_fixed(key, inst, jnp.full((inst.num_arms,), 3.0), tries=1)
    np.testing.assert_array_equal(np.asarray(sums), np.asarray(pull_counts(key, inst, counts)))
    assert bool(ok) and not bool(ok1) and not bool(ok_small)   # inversion needs X + 1 iterations
    from jaxbandits.algorithms import SuccessiveElimination

    for alg in (SuccessiveElimination(), SuccessiveRejects(budget=3000), SequentialHalving(budget=3000)):
        alg = with_batching(alg, batching.solve_for("gpu", 1))
        st = alg.init(key, inst)
        assert bool(alg.outcome(st, inst).converged)
        assert not bool(alg.outcome(st._replace(unfinished=jnp.ones((), jnp.int32)), inst).converged)


def test_the_binomial_with_a_static_bound_on_the_count_is_jax_s_draw():
    """``max_count`` (counts known to be at most 1, ..., 20): inversion alone, max_count + 1 tries,
    JAX's draws bit for bit and every draw finished; a count above the bound is reported."""
    import jax
    import jax.numpy as jnp

    from jaxbandits.environment import binomial

    rng = np.random.default_rng(0)
    for m in (1, 3, 20):
        n = jnp.asarray(rng.integers(0, m + 1, size=4000)).astype(jnp.float64)
        p = jnp.asarray(rng.uniform(0, 1, size=4000))
        key = jax.random.key(m)
        ref = jax.random.binomial(key, n, p, dtype=jnp.float64)
        got, ok = binomial(key, n, p, fixed=True, max_count=m)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(ref))
        assert bool(jnp.all(ok))
    _, ok = binomial(jax.random.key(0), jnp.asarray([2.0, 1.0]), jnp.asarray([0.3, 0.3]), fixed=True, max_count=1)
    assert not bool(ok[0]) and bool(ok[1])
    for bad in (-1, 1.5, True, "1"):
        with pytest.raises(ValueError, match="max_count"):
            binomial(jax.random.key(0), jnp.asarray([1.0]), jnp.asarray([0.3]), fixed=True, max_count=bad)
