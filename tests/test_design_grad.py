"""Gradients of design values (envelope theorem) against central finite differences, under jit,
vmap, grad and jvp, including a kink where the inner max is not unique (subgradient); and the optax design
solver.  float64 throughout; tolerances: relative 1e-4 of the gradient's scale
(finite-difference step 1e-6, solver tolerance 1e-10).  Finite differences are directional (along
random directions, the same compiled function giving value and gradient) to keep compiles and
solver calls few: a gradient error is missed only if orthogonal to every random direction
(probability 0).  The psi* checks share one compiled value-and-gradient (``PSI_VG``: 6 arms, 5
items, d = 3, masks as arguments): smaller arm and item sets are padded and masked."""
import numpy as np

import jax
import jax.numpy as jnp

import jaxbandits  # noqa: F401
from jaxbandits.design import xy_allocation
from jaxbandits.design.differentiable import g_value, optax_design, psi_star, rho, t_star

TOL = dict(tol=1e-10, max_iters=20_000)
# rho's value and gradient under vmap over the arm sets (the same items): lanes [B], [B, 6, 3], [B, 5, 3]
RHO_VG = jax.jit(jax.vmap(jax.value_and_grad(lambda x, z: rho(x, z, **TOL), argnums=(0, 1)), in_axes=(0, None)))
PSI_VG = jax.jit(jax.value_and_grad(lambda x, z, t, am, im: psi_star(x, z, t, arm_mask=am, item_mask=im, **TOL),
                                    argnums=(0, 1, 2)))
K_PAD, M_PAD = 6, 5


def padded(X, Z):
    """(X, Z, arm mask, item mask) padded with rows of ones to PSI_VG's shapes (6 x 3, 5 x 3)."""
    X, Z = jnp.asarray(X), jnp.asarray(Z)
    am = jnp.arange(K_PAD) < X.shape[0]
    im = jnp.arange(M_PAD) < Z.shape[0]
    X = jnp.vstack([X, jnp.ones((K_PAD - X.shape[0], X.shape[1]))])
    Z = jnp.vstack([Z, jnp.ones((M_PAD - Z.shape[0], Z.shape[1]))])
    return X, Z, am, im


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


def test_rho_and_psi_gradients_and_jvp_vs_finite_differences():
    """rho's gradients under vmap (two arm sets, the same items) and psi*'s gradients in every
    argument against directional finite differences; a lane's rho and gradient do not depend on
    the other lane.  Then forward mode through the envelope value, batched (jit of vmap of jvp of
    T* = 2 psi*, one compile): for every theta the tangent equals the central finite difference
    of the primal along the tangent direction, and at the first theta it equals 2 (grad psi*) . v."""
    rng = np.random.default_rng(0)
    X = jnp.asarray(rng.normal(size=(6, 3)))
    Z = jnp.asarray(rng.normal(size=(5, 3)))
    th = jnp.asarray([1.0, 0.4, -0.3])
    am, im = jnp.ones(6, bool), jnp.ones(5, bool)
    Xb = jnp.stack([X, jnp.asarray(rng.normal(size=(6, 3)))])
    # the sum of the lanes' values: its gradient is (lane gradients in X, sum of those in Z)
    rho_sum = lambda xb, z: (lambda v, g: (jnp.sum(v), (g[0], jnp.sum(g[1], 0))))(*RHO_VG(xb, z))
    check_directional(rho_sum, (Xb, Z), rng)
    v2, (gX2, gZ2) = RHO_VG(Xb[::-1], Z)
    v1, (gX1, gZ1) = RHO_VG(Xb[jnp.array([1, 1])], Z)
    close(v1[0], v2[0], rel=1e-9)
    close(gX1[0], gX2[0], rel=1e-6)
    close(gZ1[0], gZ2[0], rel=1e-6)
    psi_vg = lambda x, z, t: PSI_VG(x, z, t, am, im)
    _, (gX, gZ, gt) = check_directional(psi_vg, (X, Z, th), rng)
    # jvp under jit and vmap, against finite differences and against grad . v
    thetas = jnp.vstack([th[None], jnp.asarray(rng.normal(size=(2, 3)))])
    vs = jnp.asarray(rng.normal(size=(3, 3)))
    ts = lambda t: t_star(X, Z, t, arm_mask=am, item_mask=im, **TOL)   # psi* as PSI_VG solves it
    F = jax.jit(jax.vmap(lambda t, v: jax.jvp(ts, (t,), (v,))))
    _, tang = F(thetas, vs)
    up, _ = F(thetas + 1e-6 * vs, vs)
    dn, _ = F(thetas - 1e-6 * vs, vs)
    fdv = (np.asarray(up) - np.asarray(dn)) / 2e-6
    np.testing.assert_allclose(np.asarray(tang), fdv, rtol=1e-4, atol=1e-8)
    t0, g0 = float(tang[0]), 2.0 * float(gt @ vs[0])
    assert abs(t0 - g0) <= 1e-8 * max(1.0, abs(t0)), (t0, g0)


def test_soare_dTstar_domega():
    """d T*/d omega on the Soare instance (seed 001 Fig 1a, d = 3, theta = 2 e1) vs finite
    differences: T* = 2 psi*(X(omega), X(omega)), differentiated through its gradients in X and Z
    (chain rule along d x'/d omega = (-sin omega, cos omega, 0), x' = row 3 of both)."""
    def parts(w):
        x = jnp.array([[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0]])
        X = jnp.vstack([x, jnp.stack([jnp.cos(w), jnp.sin(w), 0.0])[None]])
        v, (gX, gZ, _) = PSI_VG(*padded(X, X)[:2], jnp.array([2.0, 0, 0]), *padded(X, X)[2:])
        dx = jnp.array([-jnp.sin(w), jnp.cos(w), 0.0])
        return 2.0 * float(v), 2.0 * float((gX[3] + gZ[3]) @ dx)

    for w in [0.1, 0.3]:
        g = parts(w)[1]
        ref = (parts(w + 1e-7)[0] - parts(w - 1e-7)[0]) / 2e-7
        assert abs(g - ref) <= 1e-4 * abs(ref)
        assert g < 0  # a larger angle makes the instance easier


def test_g_value_zero_gradient():
    rng = np.random.default_rng(1)
    gg = jax.grad(lambda x: g_value(x))(jnp.asarray(rng.normal(size=(6, 3))))
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
    value is differentiable; the mu*-weighted gradient must match finite differences (X and Z
    padded to ``PSI_VG``'s shapes, the padding masked).
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

    Xp, Zp, am, im = padded(jnp.eye(3), jnp.eye(3))   # PSI_VG's program, 3 arms and 3 items unmasked
    check_directional(lambda t: (lambda r: (r[0], (r[1][2],)))(PSI_VG(Xp, Zp, t, am, im)),
                      (jnp.array([1.0, 0.5, 0.5]),), rng, n_dirs=3)


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
