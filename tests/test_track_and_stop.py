"""LT&S (seed 000 Algorithm 1): solve_where, delta-correctness, lower bound, tracking of w*."""
import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbandits  # noqa: F401  (float64)
from jaxbandits.algorithms.track_and_stop import (LazyTrackAndStop, glr_statistic_inv, inverse_gram,
                                                  random_spanning_set, solve_where)
from jaxbandits.algorithms import common
from jaxbandits.design import lower_bound, oracle_allocation
from jaxbandits.engine import programs_compiled, simulate
from jaxbandits.instances.base import make_instance
from jaxbandits.stats import binomial_test_upper


def small_instance():
    """d = 2, K = 4: e1 (best), the informative arm (cos 3pi/4, sin 3pi/4), two arms near pi/4."""
    ang = np.array([0.0, 3 * np.pi / 4, 0.7, 0.9])
    X = np.stack([np.cos(ang), np.sin(ang)], -1)
    return make_instance(X, [1.0, 0.0], 1.0)


def test_solve_where_matches_cond_under_vmap_and_jit():
    def fn(x, k):
        return jax.lax.fori_loop(0, 5, lambda i, v: jnp.sin(v) + k, x)

    preds = jnp.array([True, False, True, True, False, False, True])
    xs = jnp.linspace(0.0, 1.0, 7)
    olds = -jnp.arange(7.0)
    ref = jax.vmap(lambda p, x, o: jax.lax.cond(p, lambda: fn(x, 0.5), lambda: o))(preds, xs, olds)
    for cap, batched in [(1, False), (2, True), (3, False), (8, True)]:
        got = jax.jit(jax.vmap(lambda p, x, o: solve_where(p, fn, (x, 0.5), o, cap, batched)))(preds, xs, olds)
        np.testing.assert_allclose(got, ref, rtol=1e-14)
    # unbatched and nested vmap
    assert float(solve_where(jnp.array(False), fn, (xs[0], 0.5), olds[0])) == float(olds[0])
    got = jax.vmap(jax.vmap(lambda p, x, o: solve_where(p, fn, (x, 0.5), o)))(
        preds[:6].reshape(2, 3), xs[:6].reshape(2, 3), olds[:6].reshape(2, 3))
    np.testing.assert_allclose(got.reshape(-1), ref[:6], rtol=1e-14)


def test_glr_statistic_inv_matches_common():
    key = jax.random.PRNGKey(3)
    Z = jax.random.normal(key, (30, 4))
    G = jax.random.normal(jax.random.fold_in(key, 1), (50, 4))
    A = G.T @ G
    th = jax.random.normal(jax.random.fold_in(key, 2), (4,))
    z1, b1 = glr_statistic_inv(th, inverse_gram(A), Z)
    z2, b2 = common.glr_statistic(th, jnp.linalg.cholesky(A), Z)
    assert int(b1) == int(b2)
    np.testing.assert_allclose(z1, z2, rtol=1e-10)


def test_random_spanning_set_spans():
    inst = small_instance()
    for s in range(5):
        idx = random_spanning_set(jax.random.PRNGKey(s), inst.arms)
        XA = inst.arms[idx]
        assert float(jnp.linalg.eigvalsh(XA.T @ XA)[0]) > 1e-6


def test_config_validation():
    with pytest.raises(ValueError):
        LazyTrackAndStop(schedule="weekly")
    with pytest.raises(ValueError):
        LazyTrackAndStop(method="magic")
    with pytest.raises(ValueError):
        LazyTrackAndStop(delta=1.5).validate(small_instance())


def test_delta_correct_and_above_lower_bound():
    """Empirical error vs delta (one-sided binomial test, level 0.01) and mean tau >= LB - 3 SE.

    delta = 0.2 so that the test has power: 400 replications detect an error rate of 0.27."""
    inst = small_instance()
    delta = 0.2
    alg = LazyTrackAndStop(delta=delta, averaging=False, method="smooth", tol=1e-2, max_iters=200)
    r = simulate(alg, inst, jax.random.PRNGKey(0), 400, 50_000)
    assert r.stopped.all()
    errors = int((~r.correct).sum())
    assert binomial_test_upper(errors, r.correct.size, delta) > 0.01, errors
    lb = float(lower_bound(inst, delta))
    s = r.samples.ravel()
    assert s.mean() >= lb - 3 * s.std(ddof=1) / math.sqrt(s.size), (s.mean(), lb)
    # the same configuration again: the engine reuses the compiled program
    programs = programs_compiled()
    r2 = simulate(alg, inst, jax.random.PRNGKey(0), 400, 50_000)
    assert programs_compiled() == programs
    np.testing.assert_array_equal(r.samples, r2.samples)


@partial(jax.jit, static_argnums=0)
def _run_fixed(alg, inst, keys, n_steps):
    """Own harness: jit(vmap(fori_loop(step))) for a fixed number of rounds (no stopping)."""
    def one(k):
        st = alg.init(jax.random.fold_in(k, 0), inst)
        return jax.lax.fori_loop(0, n_steps, lambda t, s: alg.step(jax.random.fold_in(k, t + 1), s, inst), st)
    return jax.vmap(one)(keys)


def test_proportions_approach_optimal_allocation():
    """Seed 000 Prop 1: N_a(t)/t -> C*(mu); the l_inf distance to w* shrinks with t."""
    inst = small_instance()
    w_star = oracle_allocation(inst.arms, inst.items, inst.theta, tol=1e-8).allocation
    alg = LazyTrackAndStop(delta=1e-300, averaging=True, method="smooth", tol=1e-4)
    key = jax.random.PRNGKey(7)
    dists = []
    for n in (100, 3000):
        st = _run_fixed(alg, inst, jax.random.split(key, 16), n)
        prop = st.stats.counts / n
        dists.append(np.asarray(jnp.max(jnp.abs(prop - w_star[None]), axis=1)))
    d_small, d_large = dists
    assert d_large.mean() < 0.5 * d_small.mean(), (d_small.mean(), d_large.mean())
    assert d_large.mean() < 0.05, d_large.mean()


def test_paper_frank_wolfe_matches_general_solver():
    """The fast Frank-Wolfe of LT&S gives the iterates of oracle_allocation(method="paper")
    (same stopping iteration, same thresholded allocation) from a warm start, d = 3."""
    from jaxbandits.algorithms.track_and_stop import paper_frank_wolfe
    key = jax.random.PRNGKey(3)
    K, d = 40, 3
    X = jax.random.normal(key, (K, d))
    th = jax.random.normal(jax.random.fold_in(key, 1), (d,))
    warm = jax.random.dirichlet(jax.random.fold_in(key, 2), 0.3 * jnp.ones(K))
    ref = oracle_allocation(X, X, th, init=warm, max_iters=500, method="paper")
    got = jax.jit(paper_frank_wolfe, static_argnums=4)(X, X, th, warm, 500)
    assert int(ref.iterations) > 20  # a non-trivial run of the step-2/(k+2) iteration
    np.testing.assert_allclose(got, ref.allocation, atol=1e-10)
    assert abs(float(jnp.sum(got)) - 1.0) < 1e-12
