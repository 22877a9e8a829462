"""Tests of the design solvers (jaxbandits.design): parity with NumPy/SciPy references, closed
forms, Kiefer-Wolfowitz, rounding guarantee, masks, warm starts, jit/vmap, gradients."""
import numpy as np
import pytest

import jax
import jax.numpy as jnp

import jaxbandits  # noqa: F401
from jaxbandits.design import (characteristic_time, fwg, g_optimal, greedy_allocation, kl_bernoulli, lower_bound,
                               minimax_design, oracle_allocation, round_design, rounding_efficiency,
                               rounding_min_samples, wynn, xy_allocation)
from jaxbandits.design.reference import (np_g_optimal, np_greedy, np_minimax_slsqp, np_minimax_values, np_round,
                                         oracle_directions, pair_differences)
from jaxbandits.instances.base import make_instance, pad_to


ALL6, ALL7 = np.ones(6, bool), np.ones(7, bool)


def soare(d=5, w=0.01, scale=2.0):
    X = np.vstack([np.eye(d), [np.cos(w), np.sin(w)] + [0.0] * (d - 2)])
    return X, scale * np.eye(d)[0]


# ---------------------------------------------------------------------------- G-optimal
# Every G-optimal solve below is on 20 arms in R^4, with an arm mask (smaller arm sets are padded
# with masked random rows): one compiled program for all of them, one more for vmap and one for a
# warm start.
GK, GD = 20, 4


def g_padded(X):
    """(20 x 4 arms, mask): X's rows first (X zero-padded to 4 columns), masked random rows after."""
    X = np.asarray(X, float)
    out = np.random.default_rng(99).normal(size=(GK, GD))
    out[: X.shape[0]] = 0.0
    out[: X.shape[0], : X.shape[1]] = X
    return out, np.arange(GK) < X.shape[0]


def test_g_optimal_kiefer_wolfowitz_and_numpy_parity():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(GK, GD))
    s = g_optimal(X, arm_mask=np.ones(GK, bool), tol=1e-8)
    d = GD
    assert bool(s.converged)
    assert abs(float(s.value) - d) <= 1e-7 * d  # Kiefer-Wolfowitz: G-value = d
    assert float(s.gap) <= 1e-7 * d
    lam_np, v_np, _ = np_g_optimal(X, tol=1e-5, max_iters=20_000)
    assert abs(v_np - float(s.value)) <= 1e-5 * d + 1e-7
    # D-optimal designs are unique in A(lambda): compare the information matrices
    A = X.T @ (X * np.asarray(s.allocation)[:, None])
    A_np = X.T @ (X * lam_np[:, None])
    np.testing.assert_allclose(A, A_np, atol=2e-2)
    assert np.all(np.asarray(s.allocation) >= 0) and abs(float(np.sum(s.allocation)) - 1) < 1e-12


def test_g_optimal_closed_forms():
    X, m = g_padded(np.eye(4))
    s = g_optimal(X, arm_mask=m)
    np.testing.assert_allclose(s.allocation[:4], np.full(4, 0.25), atol=1e-12)
    assert np.all(np.asarray(s.allocation)[4:] == 0)
    assert abs(float(s.value) - 4) < 1e-9
    # arms spanning a 2-dim subspace of R^4: value = r = 2 (KW on the span)
    X, m = g_padded(np.array([[1.0, 0, 0, 0], [0, 1.0, 0, 0], [1.0, 1.0, 0, 0]]))
    s = g_optimal(X, arm_mask=m, tol=1e-9)
    assert abs(float(s.value) - 2) < 1e-7
    # e1, e2 and 2 e2 (in the plane of R^4 they span)
    X, m = g_padded(np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 2.0]]))
    s = g_optimal(X, arm_mask=m, tol=1e-10)
    # the optimal design puts 1/2 on e1 and 1/2 on 2 e2 (which dominates e2)
    np.testing.assert_allclose(s.allocation[:3], [0.5, 0.0, 0.5], atol=1e-6)


def test_g_optimal_mask_warm_start_vmap_and_no_recompile():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(GK, GD))
    full = np.ones(GK, bool)
    mask = np.arange(GK) < 10
    s = g_optimal(X, arm_mask=mask)
    assert np.all(np.asarray(s.allocation)[~mask] == 0)
    _, v_np, _ = np_g_optimal(X[mask])
    assert abs(float(s.value) - 4) < 1e-5 and abs(v_np - 4) < 1e-5
    s_cold = g_optimal(X, arm_mask=full, tol=1e-9)
    s_warm = g_optimal(X, arm_mask=full, init=s_cold.allocation, tol=1e-9)
    assert int(s_warm.iterations) < int(s_cold.iterations)
    Xb = rng.normal(size=(6, GK, GD))
    sb = jax.jit(jax.vmap(lambda x: g_optimal(x, arm_mask=full)))(Xb)
    for i in range(6):
        assert abs(float(sb.value[i]) - float(g_optimal(Xb[i], arm_mask=full).value)) < 1e-5
    before = g_optimal._cache_size()
    g_optimal(rng.normal(size=(GK, GD)), arm_mask=full)
    assert g_optimal._cache_size() == before


def test_wynn_fwg_greedy_are_valid_g_designs():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(15, 3))
    sw = wynn(X, max_iters=2000)
    assert 3 <= float(sw.value) < 3.3
    assert float(sw.gap) == pytest.approx(float(sw.value) - 3, abs=1e-9)
    sf = fwg(X, max_iters=50)
    assert float(sf.value) >= 3 - 1e-9 and np.isfinite(float(sf.value))
    counts = greedy_allocation(X, 60)
    assert int(np.sum(counts)) == 60 and np.all(np.asarray(counts) >= 0)
    lam = np.asarray(counts) / 60.0
    Ainv = np.linalg.inv(X.T @ (X * lam[:, None]))
    assert np.max(np.einsum("kd,de,ke->k", X, Ainv, X)) < 3 * 3  # greedy is only roughly G-optimal
    np.testing.assert_array_equal(np.asarray(greedy_allocation(X, 20)), np_greedy(X, 20))


# ---------------------------------------------------------------------------- minimax / XY
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_xy_allocation_parity_with_slsqp(seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(7, 3))
    Z = rng.normal(size=(6, 3))
    Y = pair_differences(Z)
    _, v_ref = np_minimax_slsqp(X, Y)
    s = xy_allocation(X, Z, tol=1e-4, item_mask=ALL6, arm_mask=ALL7)
    s2 = minimax_design(X, Y, tol=1e-4, y_mask=np.ones(15, bool), arm_mask=ALL7)
    for sol in (s, s2):
        v = float(sol.value)
        # the certificate is valid: value - gap <= optimum <= value
        assert v - float(sol.gap) <= v_ref * (1 + 1e-7)
        assert v >= v_ref * (1 - 1e-7)
        assert abs(v - v_ref) <= 2e-3 * v_ref
        # the reported value is the objective at the reported allocation
        assert v == pytest.approx(np.max(np_minimax_values(X, Y, np.asarray(sol.allocation))), rel=1e-9)


def test_minimax_with_y_equal_x_is_g_optimal():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(7, 3))
    Y = np.vstack([X, np.zeros((8, 3))])
    s = minimax_design(X, Y, tol=1e-4, y_mask=np.arange(15) < 7, arm_mask=ALL7)
    assert abs(float(s.value) - 3) < 3e-3
    assert float(s.value) - float(s.gap) <= 3 + 1e-9


def test_xy_closed_form_orthonormal_basis():
    # X = Z = e_1..e_d: differences e_i - e_j, ||.||^2 = 1/l_i + 1/l_j, optimum uniform, rho = 2d
    d = 3
    X = np.vstack([np.eye(d), np.ones((4, d))])  # extra arms masked out
    Z = np.vstack([np.eye(d), np.ones((3, d))])
    s = xy_allocation(X, Z, tol=1e-6, item_mask=np.arange(6) < 3, arm_mask=np.arange(7) < 3)
    assert float(s.value) == pytest.approx(2 * d, rel=1e-5)
    np.testing.assert_allclose(s.allocation, np.r_[np.full(d, 1 / d), np.zeros(4)], atol=1e-3)


def test_xy_masks_and_paper_mode():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(7, 3))
    Z = rng.normal(size=(6, 3))
    im = np.array([1, 1, 0, 1, 1, 1], bool)
    am = np.array([1, 1, 1, 1, 0, 1, 1], bool)
    s = xy_allocation(X, Z, item_mask=im, arm_mask=am, tol=1e-4)
    _, v_ref = np_minimax_slsqp(X[am], pair_differences(Z[im]))
    assert float(s.value) == pytest.approx(v_ref, rel=2e-3)
    assert np.all(np.asarray(s.allocation)[~am] == 0)
    sp = xy_allocation(X, Z, item_mask=im, arm_mask=am, method="paper")
    assert float(sp.value) >= v_ref * (1 - 1e-9)
    assert float(sp.value) - float(sp.gap) <= v_ref * (1 + 1e-9)
    lam = np.asarray(sp.allocation)
    assert np.all((lam == 0) | (lam >= 1e-5)) and abs(lam.sum() - 1) < 1e-12


# ---------------------------------------------------------------------------- oracle, T*, lower bound
def test_oracle_soare_instance_and_lower_bound():
    # the instance carries (all-true) masks, as the two-arm case below: the oracle solves of both
    # tests, T* and the lower bound share one compiled program
    X, theta = soare(d=3, w=0.1, scale=1.0)
    inst = pad_to(make_instance(X, theta, noise=2.0), 4, 4)
    s = oracle_allocation(X, X, theta, tol=1e-5, item_mask=inst.item_mask, arm_mask=inst.arm_mask)
    _, v_ref = np_minimax_slsqp(X, oracle_directions(X, theta))
    assert float(s.value) == pytest.approx(v_ref, rel=1e-4)
    T = float(characteristic_time(inst, tol=1e-5))
    assert T == pytest.approx(2 * float(s.value), rel=1e-4)  # seed 000 convention: T* = 2 psi*
    lb = float(lower_bound(inst, 0.05, tol=1e-5))
    assert lb == pytest.approx(4.0 * T * float(kl_bernoulli(0.05, 0.95)), rel=1e-9)


def test_oracle_two_arm_closed_form():
    # X = Z = {e1, e2} (other rows masked), theta = (1, 0.5, 0): one direction y = (e1 - e2)/0.5,
    # ||y||^2 = 4 (1/l1 + 1/l2), optimum 16 at (1/2, 1/2)
    X, _ = soare(d=3, w=0.1, scale=1.0)
    m = np.array([1, 1, 0, 0], bool)
    s = oracle_allocation(X, X, np.array([1.0, 0.5, 0.0]), tol=1e-7, item_mask=jnp.asarray(m), arm_mask=jnp.asarray(m))
    assert float(s.value) == pytest.approx(16.0, rel=1e-6)
    np.testing.assert_allclose(s.allocation, [0.5, 0.5, 0, 0], atol=1e-3)


# ---------------------------------------------------------------------------- rounding
def test_round_design_matches_reference_and_guarantee():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(7, 3))
    Z = rng.normal(size=(6, 3))
    s = xy_allocation(X, Z, tol=1e-4, item_mask=ALL6, arm_mask=ALL7)
    lam = np.asarray(s.allocation)
    p = int(np.sum(lam > 0))
    Y = pair_differences(Z)
    for n in [2 * p, 3 * p + 1, 100, 1001]:
        c = np.asarray(round_design(lam, n))
        assert c.sum() == n
        np.testing.assert_array_equal(c, np_round(lam, n))
        eff = float(rounding_efficiency(c, lam))
        assert eff >= 1 - p / n - 1e-12  # Pukelsheim Lemma 12.8
        v = np.max(np_minimax_values(X, Y, c / n))
        assert v <= (1 + 2 * p / n) * float(s.value) + 1e-9  # seed 001 Prop 2
    assert int(rounding_min_samples(lam, 0.1)) == int(np.ceil(2 * p / 0.1))
    # traced n under jit and vmap
    cs = jax.vmap(lambda n: round_design(lam, n))(jnp.array([50, 77, 120]))
    np.testing.assert_array_equal(np.asarray(cs).sum(1), [50, 77, 120])


# ---------------------------------------------------------------------------- batching, gradients
def test_xy_vmap_matches_single():
    rng = np.random.default_rng(6)
    Xb = rng.normal(size=(3, 7, 3))
    Z = rng.normal(size=(6, 3))
    sb = jax.vmap(lambda x: xy_allocation(x, Z, tol=1e-4, item_mask=ALL6, arm_mask=ALL7))(Xb)
    for i in range(3):
        s = xy_allocation(Xb[i], Z, tol=1e-4, item_mask=ALL6, arm_mask=ALL7)
        assert float(sb.value[i]) == pytest.approx(float(s.value), rel=2e-3)
        assert float(sb.value[i]) - float(sb.gap[i]) <= float(s.value) * (1 + 1e-9)


def test_oracle_sphere_polish_enters_missing_arm():
    """Regression (seed 001 Fig. 1c, unit sphere, K = 50, d = 9): the Newton polish used to stall at
    the optimum restricted to a support missing one arm, the certified gap stuck at 0.6% and every
    solve ran to max_iters.  Candidate arms are now ranked by the KKT condition and may enter."""
    from jaxbandits.instances import seeds

    inst = seeds.sphere_rage(jax.random.fold_in(jax.random.PRNGKey(0), 3), 50)
    s = oracle_allocation(inst.arms, inst.items, inst.theta, tol=1e-4, max_iters=1500)
    assert bool(s.converged) and int(s.iterations) < 1500
    Y = oracle_directions(np.asarray(inst.items), np.asarray(inst.theta))
    _, ref = np_minimax_slsqp(np.asarray(inst.arms), Y, x0=np.asarray(s.allocation))
    v, gap = float(s.value), float(s.gap)
    assert v - gap <= ref * (1 + 1e-9) and v >= ref * (1 - 1e-9)  # certified bracket
    assert v == pytest.approx(ref, rel=1e-4)
