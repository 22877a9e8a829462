"""Gradients of design values (envelope theorem) against central finite differences, under jit,
vmap, grad and jvp; and the optax design solver (issue 6).  float64 throughout; tolerances: relative
1e-4 of the gradient's scale (finite-difference step 1e-6, solver tolerance 1e-10)."""
import numpy as np

import jax
import jax.numpy as jnp

import jaxbandits  # noqa: F401
from jaxbandits.design import xy_allocation
from jaxbandits.design.differentiable import g_value, optax_design, psi_star, rho, t_star

TOL = dict(tol=1e-10, max_iters=20_000)
RHO = jax.jit(lambda x, z: rho(x, z, **TOL))
RHO_GRAD = jax.jit(jax.grad(lambda x, z: rho(x, z, **TOL), argnums=(0, 1)))


def fd(f, x, eps=1e-6):
    x = np.asarray(x, float)
    out = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[idx] = eps
        out[idx] = (float(f(x + e)) - float(f(x - e))) / (2 * eps)
    return out


def close(g, ref, rel=1e-4):
    g, ref = np.asarray(g), np.asarray(ref)
    assert np.max(np.abs(g - ref)) <= rel * max(1.0, np.max(np.abs(ref))), (g, ref)


def test_rho_and_psi_gradients_vs_finite_differences():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6, 3))
    Z = rng.normal(size=(5, 3))
    th = np.array([1.0, 0.4, -0.3])
    gX, gZ = RHO_GRAD(X, Z)
    close(gX, fd(lambda x: RHO(x, Z), X))
    close(gZ, fd(lambda z: RHO(X, z), Z))
    f_psi = jax.jit(lambda x, z, t: psi_star(x, z, t, **TOL))
    gX, gZ, gt = jax.grad(f_psi, argnums=(0, 1, 2))(jnp.asarray(X), jnp.asarray(Z), jnp.asarray(th))
    close(gX, fd(lambda x: f_psi(x, Z, th), X))
    close(gZ, fd(lambda z: f_psi(X, z, th), Z))
    close(gt, fd(lambda t: f_psi(X, Z, t), th))
    # jvp agrees with grad . v
    v = rng.normal(size=3)
    _, tang = jax.jvp(lambda t: f_psi(jnp.asarray(X), jnp.asarray(Z), t), (jnp.asarray(th),), (jnp.asarray(v),))
    assert abs(float(tang) - float(gt @ v)) <= 1e-8 * max(1.0, abs(float(tang)))


def test_soare_dTstar_domega():
    """d T*/d omega on the Soare instance (seed 001 Fig 1a, d = 3, theta = 2 e1) vs finite differences."""
    def tstar(w):
        x = jnp.array([[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0]])
        X = jnp.vstack([x, jnp.stack([jnp.cos(w), jnp.sin(w), 0.0])[None]])
        return t_star(X, X, jnp.array([2.0, 0, 0]), **TOL)

    f = jax.jit(tstar)
    for w in [0.1, 0.3]:
        g = float(jax.grad(f)(w))
        ref = float(fd(lambda a: f(a[0]), np.array([w]), 1e-7)[0])
        assert abs(g - ref) <= 1e-4 * abs(ref)
        assert g < 0  # a larger angle makes the instance easier


def test_grad_under_vmap_and_g_value_zero_gradient():
    rng = np.random.default_rng(1)
    Xb = rng.normal(size=(2, 6, 3))
    Z = rng.normal(size=(5, 3))
    gb = jax.jit(jax.vmap(lambda x: RHO_GRAD(x, Z)[0]))(jnp.asarray(Xb))
    for i in range(2):
        close(gb[i], RHO_GRAD(Xb[i], Z)[0], rel=1e-6)  # batched = unbatched (checked against FD above)
    gg = jax.grad(lambda x: g_value(x))(jnp.asarray(Xb[0]))
    assert np.max(np.abs(gg)) < 1e-6  # Kiefer-Wolfowitz: the G-value is d for every X


def test_optax_solver_certified_and_close_to_frank_wolfe():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(6, 3))
    fw = xy_allocation(X, tol=1e-10, max_iters=20_000)
    op = optax_design(X, kind="xy", steps=400)
    v, gap = float(op.value), float(op.gap)
    assert abs(float(np.sum(op.allocation)) - 1) < 1e-12
    assert v >= float(fw.value) * (1 - 1e-9)          # never below the optimum
    assert v - gap <= float(fw.value) * (1 + 1e-9)    # its certificate is valid
    assert v <= 1.05 * float(fw.value)                # and it gets close
