"""The unrolled small-dimension linear algebra of ``algorithms.common`` and ``rules.thresholds``
(d <= ``design.core.SMALL_DIM``): the library's values to rounding, and no solver call under vmap.

Under ``vmap`` a batched library factorisation, triangular solve, eigendecomposition or LU is a
solver call of its own on a GPU, far costlier there than the step's other kernels; the unrolled
forms fuse into the step's elementwise kernels."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxbandits.algorithms import common
from jaxbandits.design.core import SMALL_DIM
from jaxbandits.rules import thresholds

jax.config.update("jax_enable_x64", True)


def _spd(rng, d, cond=1e3):
    Q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    ev = np.geomspace(1.0, cond, d) * rng.uniform(0.5, 2.0)
    return jnp.asarray((Q * ev) @ Q.T)


@pytest.mark.parametrize("d", [2, 3, 5, SMALL_DIM, SMALL_DIM + 1])
def test_small_paths_agree_with_the_library(d):
    rng = np.random.default_rng(d)
    for _ in range(20):
        A = _spd(rng, d)
        b = jnp.asarray(rng.normal(size=d))
        V = jnp.asarray(rng.normal(size=(7, d)))
        L = common.safe_cholesky(A)
        L_lib = jnp.linalg.cholesky(A + 1e-12 * (jnp.trace(A) / d + 1e-30) * jnp.eye(d))
        np.testing.assert_allclose(np.asarray(L), np.asarray(L_lib), rtol=1e-12, atol=1e-12)
        assert float(jnp.max(jnp.abs(jnp.triu(L, 1)))) == 0.0
        stats = common.LinearStats(jnp.zeros(d), jnp.zeros(d), A, b)
        theta, L2 = common.least_squares(stats)
        sol = np.linalg.solve(np.asarray(A), np.asarray(b))
        np.testing.assert_allclose(np.asarray(theta), sol, rtol=0, atol=1e-9 * np.abs(sol).max())
        np.testing.assert_array_equal(np.asarray(L2), np.asarray(L))
        inv = np.linalg.inv(np.asarray(A))
        np.testing.assert_allclose(np.asarray(common.inverse_from_cholesky(L)), inv, rtol=0,
                                   atol=1e-9 * np.abs(inv).max())
        W = common.whiten(L, V)
        np.testing.assert_allclose(np.asarray(jnp.sum(W * W, axis=0)),
                                   np.einsum("nd,de,ne->n", V, np.linalg.inv(np.asarray(A)), V), rtol=1e-9)
        scale = float(rng.uniform(0.5, 3.0))
        np.testing.assert_allclose(float(thresholds.log_det_ratio(A, scale)),
                                   np.linalg.slogdet(np.asarray(A) / scale + np.eye(d))[1], rtol=1e-12)


def test_the_unrolled_bounds_agree():
    assert thresholds.UNROLLED_MAX_DIM == SMALL_DIM


def test_small_paths_make_no_solver_call_under_vmap():
    d, lanes = 5, 4
    rng = np.random.default_rng(0)
    A = jnp.stack([_spd(rng, d) for _ in range(lanes)])
    b = jnp.asarray(rng.normal(size=(lanes, d)))

    def step(A, b):
        stats = common.LinearStats(jnp.zeros(d), jnp.zeros(d), A, b)
        theta, L = common.least_squares(stats)
        W = common.whiten(L, jnp.eye(d))
        return theta, common.inverse_from_cholesky(L), W, thresholds.log_det_ratio(A, 1.0)

    text = str(jax.make_jaxpr(jax.vmap(step))(A, b))
    for prim in ("cholesky", "triangular_solve", "eigh", "lu"):
        assert f" {prim}[" not in text and f"= {prim}" not in text, prim
    big = str(jax.make_jaxpr(jax.vmap(lambda A: common.safe_cholesky(A)))(
        jnp.stack([_spd(rng, SMALL_DIM + 1) for _ in range(2)])))
    assert "cholesky" in big   # above SMALL_DIM: the library factorisation


def test_span_test_by_pivots_agrees_with_the_eigenvalues():
    """xy.spans for d <= SMALL_DIM tests the pivots of the pulled arms' Gram matrix
    (design.core.small_pivots_exceed) instead of its eigenvalues: the same verdict on full-rank
    sets, on rank-deficient ones (repeated and collinear arms, fewer arms than d, a zero
    coordinate) and on none; and no eigendecomposition under vmap."""
    from jaxbandits.algorithms.fixed_confidence import xy
    from jaxbandits.design.core import small_pivots_exceed
    from jaxbandits.instances import seeds

    def by_eigenvalues(X, counts, rtol=1e-9):
        A = np.asarray((X.T * (counts > 0)) @ X)
        ev = np.linalg.eigvalsh(A)
        return ev[0] > rtol * max(ev[-1], 1e-300)

    rng = np.random.default_rng(0)
    cases = []
    for d in (2, 3, 5, SMALL_DIM):
        X = rng.normal(size=(3 * d, d))
        X[d + 1] = 2.5 * X[0]                      # a collinear arm
        X[d + 2, 0] = 0.0
        for _ in range(40):
            counts = (rng.random(3 * d) < rng.uniform(0.05, 0.6)).astype(float)
            cases.append((X, counts))
        cases.append((X, np.zeros(3 * d)))         # nothing pulled
        cases.append((X, np.eye(3 * d)[0] + np.eye(3 * d)[d + 1]))  # two collinear arms
        Z = X.copy()
        Z[:, -1] = 0.0                             # every arm in a hyperplane
        cases.append((Z, np.ones(3 * d)))
    soare = np.asarray(seeds.soare_benchmark(d=5, omega=0.1).arms)
    for k in range(1, 7):
        cases.append((soare, (np.arange(6) < k).astype(float)))
    verdicts = set()
    for X, counts in cases:
        want = by_eigenvalues(X, counts)
        got = bool(xy.spans(jnp.asarray(X), jnp.asarray(counts)))
        assert got == want, (X.shape, counts)
        verdicts.add(want)
    assert verdicts == {True, False}
    # a PSD matrix with a pivot exactly at the tolerance does not pass; above it, it does
    A = jnp.diag(jnp.array([1.0, 0.25, 4.0]))
    assert not bool(small_pivots_exceed(A, 0.25)) and bool(small_pivots_exceed(A, 0.2499))
    X = jnp.asarray(rng.normal(size=(4, 12, 5)))
    c = jnp.asarray(rng.random((4, 12)) < 0.5)
    text = str(jax.make_jaxpr(jax.vmap(xy.spans))(X, c))
    assert "eigh" not in text
    big = str(jax.make_jaxpr(jax.vmap(xy.spans))(jnp.asarray(rng.normal(size=(2, 12, SMALL_DIM + 1))),
                                                 jnp.ones((2, 12), bool)))
    assert "eigh" in big


def test_whitened_items_agree_with_the_library():
    from jaxbandits.algorithms.elimination import whiten_items

    rng = np.random.default_rng(1)
    for d in (2, 5, SMALL_DIM, SMALL_DIM + 1):
        L = jnp.linalg.cholesky(_spd(rng, d))
        V = jnp.asarray(rng.normal(size=(9, d)))
        want = np.linalg.solve(np.asarray(L), np.asarray(V).T)
        np.testing.assert_allclose(np.asarray(whiten_items(L, V)), want, rtol=0, atol=1e-10 * np.abs(want).max())
        text = str(jax.make_jaxpr(jax.vmap(whiten_items, in_axes=(0, None)))(L[None], V))
        assert ("triangular_solve" in text) == (d > SMALL_DIM)


def test_covers_settles_the_tie_and_agrees_with_the_eigenvalues_elsewhere():
    """common.covers(A, c): A >= c I up to a relative 1e-12, by the pivots of A - c (1 - 1e-12) I
    for d <= SMALL_DIM.  With a basis among the arms A_t = I + v v^T after a round, lambda_min = c
    exactly: covered, in every program (alone, vmapped over 1 or 7 lanes); away from the tie the
    eigenvalues' verdict; no eigendecomposition under vmap."""
    rng = np.random.default_rng(3)
    for d in (2, 3, 5, SMALL_DIM, SMALL_DIM + 1):
        v = rng.normal(size=d)
        A = jnp.asarray(np.eye(d) + np.outer(v, v))
        assert bool(common.covers(A, 1.0))
        for lanes in (1, 7):
            assert bool(jnp.all(jax.vmap(common.covers, in_axes=(0, None))(jnp.stack([A] * lanes), 1.0)))
        assert not bool(common.covers(A, 1.0 + 1e-9))
        for _ in range(30):
            S = _spd(rng, d, cond=50.0)
            lmin = float(np.linalg.eigvalsh(np.asarray(S))[0])
            for factor in (0.5, 0.999, 1.001, 2.0):
                assert bool(common.covers(S, factor * lmin)) == (factor < 1.0), (d, factor)
    X = jnp.stack([_spd(rng, 5) for _ in range(3)])
    assert "eigh" not in str(jax.make_jaxpr(jax.vmap(common.covers, in_axes=(0, None)))(X, 1.0))
    big = jnp.stack([_spd(rng, SMALL_DIM + 1) for _ in range(2)])
    assert "eigh" in str(jax.make_jaxpr(jax.vmap(common.covers, in_axes=(0, None)))(big, 1.0))


def test_app_f_inverse_and_factorable_test_agree_with_the_library():
    """App F's refresh (``app_f.exact_inverse``) and its cutoff's invertibility test
    (``app_f.factorable``) for d <= SMALL_DIM, unrolled: the inverse within 1e-11 relative of
    LAPACK's on random designs (d = 2 .. 8, condition numbers up to 1e8), the same verdict as
    ``jnp.isfinite(jnp.linalg.cholesky(A))`` on positive-definite, singular and indefinite
    matrices, and no solver call under ``vmap``."""
    from jaxbandits.design import app_f
    from jaxbandits.design.core import add_jitter

    rng = np.random.default_rng(3)
    for d in range(2, SMALL_DIM + 1):
        for _ in range(20):
            Q, _ = np.linalg.qr(rng.normal(size=(d, d)))
            ev = 10.0 ** rng.uniform(-8, 0, d)
            A = jnp.asarray((Q * ev) @ Q.T)
            ours = np.asarray(app_f.exact_inverse(A))
            lapack = np.linalg.inv(np.asarray(add_jitter(A)))
            np.testing.assert_allclose(ours, lapack, rtol=1e-11 * ev.max() / ev.min(), atol=0)
            assert bool(app_f.factorable(A))
            x = rng.normal(size=d)
            for other in (np.outer(x, x), np.outer(x, x) + 1e-3 * np.eye(d), (Q * np.r_[-1.0, ev[1:]]) @ Q.T):
                other = jnp.asarray(other)
                assert bool(app_f.factorable(other)) == bool(jnp.all(jnp.isfinite(jnp.linalg.cholesky(other))))
        for bad in (np.diag(np.r_[np.ones(d - 1), 0.0]), np.diag(np.r_[0.0, np.ones(d - 1)]),
                    np.diag(np.r_[np.ones(d - 1), -1.0])):
            assert not bool(app_f.factorable(jnp.asarray(bad)))
            assert not bool(jnp.all(jnp.isfinite(jnp.linalg.cholesky(jnp.asarray(bad)))))
    A = jnp.broadcast_to(jnp.eye(5), (3, 5, 5))
    jaxpr = str(jax.make_jaxpr(jax.vmap(lambda a: (app_f.exact_inverse(a), app_f.factorable(a))))(A))
    assert "cholesky" not in jaxpr and "triangular_solve" not in jaxpr
