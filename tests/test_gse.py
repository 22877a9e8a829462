"""GSE (seed 002 Algorithm 1): schedule, designs, rounding, IRLS, accuracy and Theorem 4.1."""
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbandits  # noqa: F401
from jaxbandits.algorithms.glm import logistic_mle
from jaxbandits.algorithms.fixed_budget.gse import (GSE, halving_schedule, projected_least_squares, round_allocation,
                                       stage_budgets, theorem_4_1_bound, design_counts)
from jaxbandits.design.core import inverse_design, null_projector, quad_norms
from jaxbandits.engine import simulate
from jaxbandits.instances import seeds
from jaxbandits.instances.base import make_instance, stack
from jaxbandits.stats import binomial_test_upper


def test_schedule_and_budgets():
    assert halving_schedule(16) == [16, 8, 4, 2, 1]
    assert halving_schedule(17) == [17, 9, 5, 3, 2, 1]  # ceil(log2 17) = 5 stages
    assert halving_schedule(27, 3) == [27, 9, 3, 1]
    for K in range(2, 70):
        assert len(halving_schedule(K)) - 1 == math.ceil(math.log2(K))
    n = stage_budgets(103, 4)
    assert n.sum() == 103 and list(n) == [25, 26, 26, 26]


def test_budget_below_K_raises():
    inst = seeds.static_basis(0.5, d=8)
    with pytest.raises(ValueError, match="at least K = 8"):
        GSE(budget=7).validate(inst)
    GSE(budget=8).validate(inst)
    with pytest.raises(ValueError, match="unknown design"):
        GSE(budget=10, design="nope")
    with pytest.raises(ValueError, match=r"GSE.budget must be a number > 0"):
        GSE(budget=0).validate(inst)


def test_fwg_reaches_kiefer_wolfowitz_and_rounding_sums_to_stage_budget():
    """G-optimal value = d (Kiefer-Wolfowitz), or r on a rank-r subset (projection); rounding of
    the design gives exactly n pulls on the surviving arms, for traced n (jit + vmap)."""
    key = jax.random.key(0)
    K, d = 40, 6
    X = jax.random.normal(key, (K, d))
    X = X / jnp.linalg.norm(X, axis=1, keepdims=True)
    # a rank-3 surviving set: 5 arms in span(e1, e2, e3)
    Xr = X.at[:5, 3:].set(0.0)
    alive_full = jnp.ones(K, bool)
    alive_sub = jnp.arange(K) < 5

    @jax.jit
    @jax.vmap
    def one(Xs, alive, n):
        counts = design_counts("fwg", jax.random.key(1), Xs, alive, n, 0, design_iters=2000, design_tol=1e-4)
        from jaxbandits.design.gopt import g_optimal
        sol = g_optimal(Xs, arm_mask=alive, tol=1e-4, max_iters=2000)
        perp, r = null_projector(Xs, alive)
        g = jnp.max(jnp.where(alive, quad_norms(Xs, inverse_design(sol.allocation, Xs, perp)), -jnp.inf))
        return counts, g, r

    Xb = jnp.stack([X, Xr, X])
    ab = jnp.stack([alive_full, alive_sub, alive_full])
    nb = jnp.array([97.0, 13.0, 1000.0])
    counts, g, r = one(Xb, ab, nb)
    assert list(np.asarray(r)) == [d, 3, d]
    np.testing.assert_allclose(np.asarray(g), [d, 3, d], rtol=2e-4)
    np.testing.assert_array_equal(np.asarray(counts.sum(axis=1)), np.asarray(nb))
    assert np.all(np.asarray(counts) >= 0) and np.all(np.asarray(counts) == np.round(np.asarray(counts)))
    assert np.all(np.asarray(counts[1])[5:] == 0)  # only surviving arms are pulled
    # rounding of an arbitrary design, n smaller and larger than the support
    lam = jnp.array([0.5, 0.25, 0.125, 0.125, 0.0])
    for n in (1, 3, 7, 50):
        c = np.asarray(round_allocation(lam, n, jnp.ones(5, bool)))
        assert c.sum() == n and c[4] == 0


def test_projection_equals_pseudo_inverse_on_the_span():
    key = jax.random.key(3)
    X = jax.random.normal(key, (6, 4)).at[:, 3].set(0.0).at[:, 2].set(0.0)  # rank 2
    counts = jnp.array([3.0, 1.0, 2.0, 5.0, 0.0, 4.0])
    sums = jax.random.normal(jax.random.key(4), (6,)) * counts
    alive = jnp.ones(6, bool)
    a = projected_least_squares(X, counts, sums, alive, "span")
    b = projected_least_squares(X, counts, sums, alive, "pinv")
    np.testing.assert_allclose(np.asarray(X @ a), np.asarray(X @ b), atol=1e-9)


def _numpy_newton(X, n, s, reg):
    th = np.zeros(X.shape[1])
    f = lambda t: np.sum(n * np.logaddexp(0.0, X @ t) - s * (X @ t)) + 0.5 * reg * t @ t
    for _ in range(200):
        p = 1.0 / (1.0 + np.exp(-(X @ th)))
        g = X.T @ (n * p - s) + reg * th
        H = (X.T * (n * p * (1 - p))) @ X + reg * np.eye(X.shape[1])
        step = np.linalg.solve(H, g)
        a = 1.0
        while f(th - a * step) > f(th) and a > 1e-8:
            a /= 2
        th = th - a * step
        if np.max(np.abs(g)) < 1e-11:
            break
    return th


def test_irls_matches_reference_fit():
    rng = np.random.default_rng(0)
    B, K, d = 6, 12, 4
    X = rng.uniform(-1, 1, (B, K, d))
    theta = rng.normal(0, 1.5, (B, d))
    n = rng.integers(3, 60, (B, K)).astype(float)
    s = rng.binomial(n.astype(int), 1 / (1 + np.exp(-np.einsum("bkd,bd->bk", X, theta)))).astype(float)
    fit = jax.jit(jax.vmap(lambda x, c, y: logistic_mle(x, c, y, reg=1e-6)))(X, n, s)
    assert np.all(np.asarray(fit.converged))
    for b in range(B):
        ref = _numpy_newton(X[b], n[b], s[b], 1e-6)
        np.testing.assert_allclose(np.asarray(fit.theta[b]), ref, rtol=1e-6, atol=1e-7)
    scipy_opt = pytest.importorskip("scipy.optimize")
    f = lambda t: np.sum(n[0] * np.logaddexp(0.0, X[0] @ t) - s[0] * (X[0] @ t)) + 0.5e-6 * t @ t
    r = scipy_opt.minimize(f, np.zeros(d), method="BFGS", options=dict(gtol=1e-10))
    np.testing.assert_allclose(np.asarray(fit.theta[0]), r.x, atol=1e-4)
    # separable data: no MLE; the ridge guard keeps the estimate finite
    sep = np.where(np.einsum("kd,d->k", X[0], theta[0]) > 0, n[0], 0.0)
    fit2 = logistic_mle(jnp.asarray(X[0]), jnp.asarray(n[0]), jnp.asarray(sep), reg=1e-6, max_iters=100)
    assert np.all(np.isfinite(np.asarray(fit2.theta)))


@pytest.fixture(scope="module")
def sphere_run():
    """GSE-Lin-FWG, B = 20000, on 24 random sphere instances (K = 16, d = 10, sigma = 1)."""
    keys = jax.random.split(jax.random.key(7), 24)
    inst = stack([seeds.unit_sphere(k, 16, 10, alpha=0.0, noise=1.0) for k in keys])
    alg = GSE(budget=20000, design="fwg")
    res = simulate(alg, inst, jax.random.key(11), 100, max_steps=alg.steps_needed(16))
    vals = np.asarray(inst.arm_means())
    top = np.sort(vals, axis=1)
    gaps = top[:, -1] - top[:, -2]
    bound = theorem_4_1_bound(gaps, 20000, 16, 10, 1.0)
    return alg, inst, res, bound


def test_huge_budget_accuracy_one(sphere_run):
    """Where Theorem 4.1 bounds the error by 1e-4, 100 replications must all be correct (a
    failure would have probability <= 1e-2 under the theorem)."""
    alg, inst, res, bound = sphere_run
    sure = bound <= 1e-4
    assert sure.sum() >= 5
    assert np.all(res.correct[sure])
    assert np.all(res.samples == 20000) and np.all(res.stopped)
    assert np.all(res.steps == 4)


def test_theorem_4_1_bound_holds_empirically(sphere_run):
    """Pooled error over instances with a non-trivial bound <= mean bound (one-sided binomial
    test at level 1e-3; the pooled count of independent Bernoullis is less spread than a
    binomial with the mean probability, so the test is conservative)."""
    alg, inst, res, bound = sphere_run
    informative = bound < 1.0
    assert informative.sum() >= 8
    errors = int((~res.correct[informative]).sum())
    n = int(res.correct[informative].size)
    p0 = float(np.mean(bound[informative]))
    assert binomial_test_upper(errors, n, p0) > 1e-3, (errors, n, p0)


def test_logistic_gse_beats_linear_gse_on_logistic_instance():
    """Clearly logistic instances: seed 002 Sec 8.4 draws for which the noiseless least-squares
    fit of the Bernoulli means under the uniform design (the linear model's best approximation)
    ranks a wrong arm first.  GSE-Log-FWG must be more accurate than GSE-Lin-FWG (one-sided
    two-proportion z-test, z > 3.1, p < 1e-3)."""
    chosen = []
    for k in jax.random.split(jax.random.key(5), 60):
        b = seeds.logistic_gse(k, 8, 5)
        X, th = np.asarray(b.arms), np.asarray(b.theta)
        lin = np.linalg.solve(X.T @ X, X.T @ (1 / (1 + np.exp(-X @ th))))
        if np.argmax(X @ lin) != np.argmax(X @ th):
            chosen.append(b)
    insts = stack(chosen[:10])
    res = {}
    for est in ("logistic", "linear"):
        alg = GSE(budget=8 * 100, design="fwg", estimator=est)
        res[est] = simulate(alg, insts, jax.random.key(2), 40, max_steps=alg.steps_needed(8))
    p1, p2 = res["logistic"].correct.mean(), res["linear"].correct.mean()
    n = res["linear"].correct.size
    p = 0.5 * (p1 + p2)
    z = (p1 - p2) / math.sqrt(2 * p * (1 - p) / n)
    assert z > 3.1, (p1, p2, z)


def test_descending_rank_matches_stable_sort_with_ties():
    """keep_top / uniform_allocation rank by pairwise comparisons for K <= 128 (under the
    accelerator policy added column by column) and by a sort above: each must equal the inverse
    of a stable descending argsort (ties, -inf for dead arms)."""
    from jaxbandits import batching
    from jaxbandits.algorithms.fixed_budget.gse import descending_rank, keep_top
    rng = np.random.default_rng(0)
    for K in (5, 16, 64, 200):
        for _ in range(10):
            s = rng.integers(0, 5, K).astype(float)
            s[rng.random(K) < 0.3] = -np.inf
            order = np.argsort(-s, kind="stable")
            ref = np.empty(K, int)
            ref[order] = np.arange(K)
            np.testing.assert_array_equal(np.asarray(descending_rank(jnp.asarray(s))), ref)
            with batching.policy(batching.solve_for("gpu", 8)):
                np.testing.assert_array_equal(np.asarray(descending_rank(jnp.asarray(s))), ref)
    alive = jnp.array([True, True, False, True, True])
    kept = keep_top(jnp.array([1.0, 3.0, 9.0, 3.0, 0.0]), alive, 2)
    np.testing.assert_array_equal(np.asarray(kept), [False, True, False, True, False])


def test_greedy_allocation_round_robin_on_orthogonal_arms():
    """Soare et al.'s greedy G-allocation must not pile pulls on one arm when the max-variance
    criterion ties (orthogonal arms: every candidate leaves another arm at the maximum)."""
    from jaxbandits.design.gopt import greedy_allocation
    from jaxbandits.design.reference import np_greedy

    counts = np.asarray(greedy_allocation(jnp.eye(8), 40))
    np.testing.assert_array_equal(counts, np.full(8, 5))
    X = np.vstack([np.eye(6), [np.cos(0.1), np.sin(0.1), 0, 0, 0, 0]])  # Soare et al.'s instance
    alive = np.array([True] * 4 + [False] * 2 + [True])
    c = np.asarray(greedy_allocation(jnp.asarray(X), jnp.asarray(37.0), arm_mask=jnp.asarray(alive)))
    assert c.sum() == 37 and np.all(c[~alive] == 0) and c[:4].max() - c[:4].min() <= 2
    np.testing.assert_array_equal(np.asarray(greedy_allocation(jnp.asarray(X), 30)), np_greedy(X, 30))
