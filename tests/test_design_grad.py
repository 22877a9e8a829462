"""Gradients of design values (envelope theorem) against central finite differences, under jit,
vmap, grad and jvp, including a kink where the inner max is not unique (subgradient); and the optax design
solver.  float64 throughout; tolerances: relative 1e-4 of the gradient's scale
(finite-difference step 1e-6, solver tolerance 1e-10).  Finite differences are directional (along
random directions, the same compiled function giving value and gradient) to keep compiles and
solver calls few: a gradient error is missed only if orthogonal to every random direction
(probability 0)."""
import numpy as np

import jax
import jax.numpy as jnp

import jaxbandits  # noqa: F401
from jaxbandits.design import xy_allocation
from jaxbandits.design.differentiable import g_value, optax_design, psi_star, rho, t_star

TOL = dict(tol=1e-10, max_iters=20_000)
RHO_VG = jax.jit(jax.value_and_grad(lambda x, z: rho(x, z, **TOL), argnums=(0, 1)))


def close(g, ref, rel=1e-4):
    g, ref = np.asarray(g), np.asarray(ref)
    assert np.max(np.abs(g - ref)) <= rel * max(1.0, np.max(np.abs(ref))), (g, ref)


def dir_fd(vg, args, i, v, eps=1e-6):
    """Central finite difference of the value of ``vg`` (value_and_grad) at args along v in argument i."""
    up = list(args)
    dn = list(args)
    up[i] = args[i] + eps * v
    dn[i] = args[i] - eps * v
    return (float(vg(*up)[0]) - float(vg(*dn)[0])) / (2 * eps)


def check_directional(vg, args, rng, n_dirs=2, rel=1e-4):
    val, grads = vg(*args)
    for i, g in enumerate(grads):
        for _ in range(n_dirs):
            v = jnp.asarray(rng.normal(size=np.shape(args[i])))
            ref = dir_fd(vg, args, i, v)
            got = float(jnp.sum(g * v))
            assert abs(got - ref) <= rel * max(1.0, abs(ref), float(jnp.linalg.norm(g))), (i, got, ref)
    return val, grads


def test_rho_and_psi_gradients_vs_finite_differences():
    rng = np.random.default_rng(0)
    X = jnp.asarray(rng.normal(size=(6, 3)))
    Z = jnp.asarray(rng.normal(size=(5, 3)))
    th = jnp.asarray([1.0, 0.4, -0.3])
    check_directional(RHO_VG, (X, Z), rng)
    f_psi = lambda x, z, t: psi_star(x, z, t, **TOL)
    _, (gX, gZ, gt) = check_directional(jax.jit(jax.value_and_grad(f_psi, argnums=(0, 1, 2))), (X, Z, th), rng)
    # jvp agrees with grad . v
    v = jnp.asarray(rng.normal(size=3))
    _, tang = jax.jit(lambda t, v: jax.jvp(lambda t: f_psi(X, Z, t), (t,), (v,)))(th, v)
    assert abs(float(tang) - float(gt @ v)) <= 1e-8 * max(1.0, abs(float(tang)))


def test_soare_dTstar_domega():
    """d T*/d omega on the Soare instance (seed 001 Fig 1a, d = 3, theta = 2 e1) vs finite differences."""
    def tstar(w):
        x = jnp.array([[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0]])
        X = jnp.vstack([x, jnp.stack([jnp.cos(w), jnp.sin(w), 0.0])[None]])
        return t_star(X, X, jnp.array([2.0, 0, 0]), **TOL)

    vg = jax.jit(jax.value_and_grad(tstar))
    for w in [0.1, 0.3]:
        g = float(vg(w)[1])
        ref = (float(vg(w + 1e-7)[0]) - float(vg(w - 1e-7)[0])) / 2e-7
        assert abs(g - ref) <= 1e-4 * abs(ref)
        assert g < 0  # a larger angle makes the instance easier


def test_grad_under_vmap_and_g_value_zero_gradient():
    rng = np.random.default_rng(1)
    Xb = rng.normal(size=(2, 6, 3))
    Z = rng.normal(size=(5, 3))
    gb = jax.jit(jax.vmap(lambda x: RHO_VG(x, Z)[1][0]))(jnp.asarray(Xb))
    for i in range(2):
        close(gb[i], RHO_VG(jnp.asarray(Xb[i]), jnp.asarray(Z))[1][0], rel=1e-6)  # batched = unbatched (checked against FD above)
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


def test_subgradient_where_the_inner_max_is_not_unique():
    """Two cases with several maximising directions at the optimum (module doc of differentiable).

    (a) Non-smooth value: one effective arm (d = 1, two copies of x = 1), so A(lambda) = 1 for
    every lambda and rho({a, b}) = max(a^2, b^2).  At a = b = 1 the value has a kink; the returned
    gradient must be a subgradient: (2 mu, 2 (1 - mu)) with mu in [0, 1], hence the subgradient
    inequality f(Y + h) >= f(Y) + <g, h> for every h (a gradient of one branch only, or their
    sum, fails it).  (b) Tied but smooth: psi* with X = Z = I_3, theta = (1, .5, .5): both
    directions (e1 - e2)/0.5 and (e1 - e3)/0.5 are active, the saddle point is unique and the
    value is differentiable; the mu*-weighted gradient must match finite differences.
    """
    from jaxbandits.design import minimax_design

    X1 = jnp.ones((2, 1))
    vg = jax.jit(jax.value_and_grad(lambda y: minimax_design(X1, y, tol=1e-10, max_iters=2_000).value))
    Y = jnp.array([[1.0], [1.0]])
    f0, g = vg(Y)
    g = np.asarray(g).ravel()
    assert abs(float(f0) - 1.0) < 1e-9
    assert np.all(g >= -1e-9) and abs(g.sum() - 2.0) < 1e-8, g
    rng = np.random.default_rng(3)
    for h in rng.normal(scale=1e-2, size=(4, 2, 1)):
        assert float(vg(Y + h)[0]) >= float(f0) + float(np.sum(g * h.ravel())) - 1e-10
    # one-sided derivatives bracket it: 0 = D-_a f <= g_a <= D+_a f = 2
    e = np.array([[1e-6], [0.0]])
    assert (float(vg(Y - e)[0]) - 1.0) / -1e-6 <= g[0] + 1e-6 and g[0] <= (float(vg(Y + e)[0]) - 1.0) / 1e-6 + 1e-6

    vp = jax.jit(jax.value_and_grad(lambda t: psi_star(jnp.eye(3), jnp.eye(3), t, **TOL)))
    check_directional(lambda t: (lambda r: (r[0], (r[1],)))(vp(t)), (jnp.array([1.0, 0.5, 0.5]),), rng, n_dirs=3)


def test_jvp_under_jit_and_vmap():
    """Forward mode through the envelope value, batched (one compile): for every instance the
    tangent equals the central finite difference of the primal along the tangent direction."""
    rng = np.random.default_rng(4)
    X = jnp.asarray(rng.normal(size=(6, 3)))
    thetas = jnp.asarray(rng.normal(size=(3, 3)))
    vs = jnp.asarray(rng.normal(size=(3, 3)))
    ts = lambda t: t_star(X, X, t, **TOL)
    F = jax.jit(jax.vmap(lambda t, v: jax.jvp(ts, (t,), (v,))))
    _, tang = F(thetas, vs)
    up, _ = F(thetas + 1e-6 * vs, vs)
    dn, _ = F(thetas - 1e-6 * vs, vs)
    fdv = (np.asarray(up) - np.asarray(dn)) / 2e-6
    np.testing.assert_allclose(np.asarray(tang), fdv, rtol=1e-4, atol=1e-8)


def test_short_solves_bracket_psi_star_and_screening_finds_the_sample_maximum():
    """The hardest-theta random search (experiments/design_hardest_theta.py) screens thetas with
    one capped solve each and keeps only those whose upper bound reaches the best lower bound:
    valid only if every capped solve brackets the true value, converged or not.  Checked against
    long solves on the same random thetas of a random sphere arm set (their brackets must
    overlap, and where the long solve converged to 1e-9 its value must lie in the short bracket),
    and the screen-then-refine maximum against the brute-force maximum over the same thetas."""
    from experiments.design_hardest_theta import map_hardness, random_search

    rng = np.random.default_rng(5)
    X = rng.normal(size=(8, 3))
    X = jnp.asarray(X / np.linalg.norm(X, axis=1, keepdims=True))
    n = 64
    key = jax.random.key(7)
    best, _, best_lb, _, _, _, _, thetas, lb, ub = random_search(X, key, n, lambda f, *a: jax.device_get(f(*a)))
    # the long solves reuse the search's compiled refinement (same shapes: 64 lanes)
    h, h_lb, _ = map(np.asarray, map_hardness(64)(X, jnp.asarray(thetas), jnp.full((n, 8), 1.0 / 8), 1e-9, 4_000))
    assert np.all(lb <= h * (1 + 1e-9)) and np.all(h_lb <= ub * (1 + 1e-9))
    conv = h - h_lb <= 1e-9 * h
    assert conv.mean() > 0.8
    assert np.all(lb[conv] <= h[conv] * (1 + 1e-9)) and np.all(h[conv] <= ub[conv] * (1 + 1e-9))
    assert np.any((ub - lb) / ub > 1e-3)  # some short solves stopped unconverged: the check has teeth
    assert best_lb <= h.max() * (1 + 1e-9) and h_lb.max() <= best * (1 + 1e-9)
    assert abs(best - h.max()) <= 1e-3 * h.max()
