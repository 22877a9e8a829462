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
