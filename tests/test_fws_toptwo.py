"""FWS (Wang et al. 2021) and Top Two for linear bandits (Jourdan et al. 2022; Jourdan & Degenne 2022).

Delta-correctness setting: the calibration instance hard_top1 at noise sigma = 3 (seed 003 Fig.
1(b), theta scaled by 6: gap 0.03, 3 arms in R^2), delta = 0.05, 100 runs.  Measured with these
keys (200 runs, scripts of the calibration rows): FWS 0/200 errors (mean 1024 pulls, 1.76 x the
lower bound), Top Two 0/200 (1030, 1.77 x); with the sigma option 1 at noise 3 (sigma ignored: a
threshold 9x too small and, for FWS, f_j and r_t in the wrong units) FWS errs 67/200 and Top Two
56/200 (binomial p 1e-36 and 2e-26): the binomial test below has power against that mutation.
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbandits  # noqa: F401  (float64)
from jaxbandits import calibration as cal
from jaxbandits.algorithms import FWS, TopTwo
from jaxbandits.algorithms.fixed_confidence.fws import is_square, matrix_game
from jaxbandits.algorithms.fixed_confidence.top_two import answer_glr
from jaxbandits.design.copt import c_optimal
from jaxbandits.engine import simulate
from jaxbandits.instances.base import make_instance
from jaxbandits.stats import binomial_test_upper

N, MAX_STEPS = 100, 200_000  # one (n_reps, cap) for every run, so the compiled programs are shared
ALGS = [FWS(), TopTwo()]  # delta is a dynamic field: the runs at other deltas reuse the programs


_JITTED = {}


def _jit(alg, method):
    """``jax.jit(alg.<method>)``, one per (configuration, method) for the module: the contract,
    masking and step_masked tests step the same configurations on the same shapes, so they share
    the compiled step."""
    key = (alg, method)
    if key not in _JITTED:
        _JITTED[key] = jax.jit(getattr(alg, method))
    return _JITTED[key]


def _soare(omega=0.1, noise=1.0):
    X = np.array([[1.0, 0.0], [0.0, 1.0], [math.cos(omega), math.sin(omega)]])
    return make_instance(X, [2.0, 0.0], noise)


# -- contract --------------------------------------------------------------------------------------
@pytest.mark.parametrize("alg", ALGS, ids=lambda a: type(a).__name__)
def test_contract_and_validation(alg):
    inst = _soare()
    hash(alg)
    st = alg.init(jax.random.PRNGKey(0), inst)
    st2 = _jit(alg, "step")(jax.random.PRNGKey(1), st, inst)
    assert int(st2.t) == 1 and not bool(alg.done(st2))
    out = alg.outcome(st2, inst)
    assert out.answer.shape == (3,) and out.pulls.shape == (3,) and int(out.samples) == 1
    assert set(alg.dynamic_fields) <= {f for f in alg.__dataclass_fields__}
    static, dyn = alg.split_dynamic()
    assert all(getattr(static, k) is None for k in dyn)
    with pytest.raises(ValueError):
        alg.validate(make_instance(inst.arms, inst.theta, 1.0, model="logistic"))
    with pytest.raises(ValueError):
        type(alg)(sigma=-1.0).validate(inst)
    with pytest.raises(ValueError):
        type(alg)(threshold="nope")
    assert type(alg.linear_stats(st2)).__name__ == "LinearStats"


@pytest.mark.parametrize("alg", ALGS + [TopTwo(leader="TS", initial="spanning")], ids=["FWS", "TopTwo", "TopTwo-TS-span"])
def test_step_is_step_masked_all_true(alg):
    inst = _soare()
    st = alg.init(jax.random.PRNGKey(0), inst)
    step = _jit(alg, "step")
    masked = _jit(alg, "step_masked")
    for i in range(12):  # past the K initial pulls into the sampling rule
        k = jax.random.PRNGKey(100 + i)
        a = step(k, st, inst)
        if i == 1 and getattr(alg, "initial", "all") == "spanning":  # d = 2 initial arms spanning R^2
            assert abs(float(jnp.linalg.det(a.stats.gram))) > 1e-6
        b = masked(k, st, inst, jnp.ones(3, bool))
        for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
        st = a


def test_masks_restrict_the_challenger_and_the_pieces():
    """Masking the closest piece changes Top Two's challenger; FWS's masked Frank-Wolfe direction
    is the one of the instance whose masked item duplicates an active one (its piece is gone)."""
    inst = _soare()
    for alg in ALGS:
        st = alg.init(jax.random.PRNGKey(0), inst)
        step = _jit(alg, "step")
        for i in range(40):
            st = step(jax.random.PRNGKey(i), st, inst)
        if isinstance(alg, TopTwo):
            lc = jax.jit(alg.leader_challenger)
            lead, chal = lc(jax.random.PRNGKey(0), st, inst, jnp.ones(3, bool))
            other = 3 - int(lead) - int(chal)
            assert int(lead) != int(chal)
            _, chal2 = lc(jax.random.PRNGKey(0), st, inst, jnp.arange(3) != chal)
            assert int(chal2) == other
        else:
            st = st._replace(belief=st.belief._replace(t=jnp.asarray(7, jnp.int32)))  # floor(7 / 3) = 2: no forced step
            fw = jax.jit(alg.frank_wolfe_direction)
            b = int(st.belief.answer)
            j, k = [i for i in range(3) if i != b]
            z, forced, _ = fw(st, inst, jnp.arange(3) != j)
            dup = inst.replace(items=inst.items.at[j].set(inst.items[k]))
            z_dup, forced_dup, _ = fw(st, dup, jnp.ones(3, bool))
            assert not bool(forced) and not bool(forced_dup)
            np.testing.assert_allclose(np.asarray(z), np.asarray(z_dup))
            z_all, _, _ = fw(st, inst, jnp.ones(3, bool))
            assert np.abs(np.asarray(z_all) - np.asarray(z)).max() > 0.1  # the masked piece mattered


# -- pieces ------------------------------------------------------------------------------------------
def test_matrix_game_against_linprog():
    opt = pytest.importorskip("scipy.optimize")
    rng = np.random.default_rng(0)
    game = jax.jit(matrix_game, static_argnums=2)  # one program per shape (op by op: dozens)
    for P, K in ((1, 5), (2, 6), (4, 7)):
        G = rng.normal(size=(P, K))
        z = np.asarray(game(jnp.asarray(G), jnp.ones(P, bool), 4000))
        # LP: max w s.t. G z >= w, z in simplex
        res = opt.linprog(np.r_[np.zeros(K), -1.0], A_ub=np.c_[-G, np.ones(P)], b_ub=np.zeros(P),
                          A_eq=np.r_[np.ones(K), 0.0][None], b_eq=[1.0], bounds=[(0, None)] * K + [(None, None)])
        value = -res.fun
        got = (G @ z).min()
        assert abs(z.sum() - 1) < 1e-12 and got <= value + 1e-9
        assert value - got < 0.03 * np.ptp(G), (P, K, got, value)
    # masked rows are ignored
    G = np.array([[1.0, 0.0], [-5.0, 3.0]])
    z = np.asarray(game(jnp.asarray(G), jnp.array([True, False]), 10))
    np.testing.assert_allclose(z, [1.0, 0.0])
    assert [bool(is_square(jnp.asarray(n))) for n in (0, 1, 2, 4, 8, 9, 10**6, 10**6 + 1)] == \
        [True, True, False, True, False, True, True, False]


def test_c_optimal_against_elfving_lp():
    """Elfving: min_w ||y||^2_{A(w)^-1} = (min {||s||_1 : X^T s = y})^2, an LP."""
    opt = pytest.importorskip("scipy.optimize")
    rng = np.random.default_rng(1)
    X = rng.normal(size=(12, 3))
    solve = jax.jit(lambda X, y: c_optimal(X, y, iters=400))
    for _ in range(3):
        y = rng.normal(size=3)
        res = opt.linprog(np.ones(24), A_eq=np.c_[X.T, -X.T], b_eq=y, bounds=[(0, None)] * 24)
        ref = res.fun**2
        sol = solve(jnp.asarray(X), jnp.asarray(y))
        assert ref * (1 - 1e-6) <= float(sol.value) <= ref * 1.01
        assert float(sol.value - sol.gap) <= ref * (1 + 1e-6)  # certified lower bound
    # the unstructured pair direction: 1/2 on each arm (Top Two's beta = 1/2); plain Frank-Wolfe
    # (no away steps) leaves O(1/k) mass on the arms of the uniform start
    w = solve(jnp.eye(4), jnp.array([1.0, 0.0, -1.0, 0.0])).allocation
    np.testing.assert_allclose(np.asarray(w), [0.5, 0.0, 0.5, 0.0], atol=3e-3)


def _exact_quadratic(lam, X, y):
    """y^T (A + 1e-13 tr(A) / d I)^-1 y with A = sum_k lam_k x_k x_k^T, in exact rationals."""
    from fractions import Fraction as F
    d = X.shape[1]
    A = [[sum(F(float(lam[k])) * F(float(X[k, i])) * F(float(X[k, j])) for k in range(len(lam))) for j in range(d)]
         for i in range(d)]
    jitter = F(1e-13) * sum(A[i][i] for i in range(d)) / d
    M = [A[i][:] + [F(float(y[i]))] for i in range(d)]
    for i in range(d):
        M[i][i] += jitter
    for c in range(d):  # Gauss-Jordan
        p = next(r for r in range(c, d) if M[r][c] != 0)
        M[c], M[p] = M[p], M[c]
        for r in range(d):
            if r != c and M[r][c] != 0:
                f = M[r][c] / M[c][c]
                M[r] = [a - f * b for a, b in zip(M[r], M[c])]
    return float(sum(F(float(y[i])) * M[i][d] / M[i][i] for i in range(d)))


def test_small_cholesky_and_c_optimal_small_path():
    """The unrolled factor and solves of design.core (d <= SMALL_DIM) against NumPy, and
    c_optimal's unrolled path against its library path (both d <= 8 and d > 8 run through the
    same Frank-Wolfe): the same designs to rounding, on spanning and on rank-deficient optima."""
    from jaxbandits.design import copt, core
    rng = np.random.default_rng(4)
    for d in range(1, core.SMALL_DIM + 1):
        B = rng.normal(size=(d, d))
        A = B @ B.T + 0.05 * np.eye(d)
        L, r = core.small_cholesky(jnp.asarray(A))
        dense = np.array([[float(L[i][j]) if j <= i else 0.0 for j in range(d)] for i in range(d)])
        np.testing.assert_allclose(dense, np.linalg.cholesky(A), rtol=1e-12, atol=1e-13)
        y = rng.normal(size=d)
        u = core.small_backward(L, r, core.small_forward(L, r, jnp.asarray(y)))
        np.testing.assert_allclose([float(v) for v in u], np.linalg.solve(A, y), rtol=1e-10, atol=1e-12)
    mask = jnp.ones((12,), bool)
    for d in (2, 5, 8):
        X = jnp.asarray(rng.normal(size=(12, d)))
        for y in (rng.normal(size=d), np.asarray(X[3])):   # X[3]: the optimum is the single arm 3
            y = jnp.asarray(y)
            lam0 = jnp.full((12,), 1.0 / 12)
            small = copt._small_solve(X, y, mask, lam0, 40)
            library = copt._library_solve(X, y, mask, lam0, 40)
            np.testing.assert_allclose(np.asarray(small[0]), np.asarray(library[0]), atol=1e-9)
            # the value y^T (A + eps I)^-1 y at the final design, in exact rational arithmetic: the
            # unrolled path is exact to rounding even where A is singular but for the jitter (the
            # library path's explicit inverse L^-T L^-1 loses up to 2e-3 there)
            exact = _exact_quadratic(np.asarray(small[0]), np.asarray(X), np.asarray(y))
            np.testing.assert_allclose(float(small[1]), exact, rtol=1e-12)
    L, _ = core.small_cholesky(jnp.asarray([[1.0, 2.0], [2.0, 1.0]]))  # indefinite: NaN, as jnp.linalg.cholesky
    assert np.isnan(float(L[1][1]))


def test_furthest_answer():
    """eps = 0: the furthest answer is the empirical best; eps > 0: the answer of largest GLR."""
    rng = np.random.default_rng(2)
    Z = rng.normal(size=(10, 3))
    A = rng.normal(size=(3, 3))
    Ainv = np.linalg.inv(A @ A.T + np.eye(3))
    glr = jax.jit(answer_glr, static_argnums=(4, 5))  # epsilon traced: one program per rule
    for _ in range(5):
        theta = rng.normal(size=3)
        z0, i0 = glr(theta, Ainv, Z, 0.0, 10, True)
        zb, ib = glr(theta, Ainv, Z, 0.0, 10, False)
        assert int(i0) == int(ib) == int(np.argmax(Z @ theta)) and float(z0) == float(zb)
        ze, ie = glr(theta, Ainv, Z, 0.5, 10, True)
        for i in range(10):  # brute force (NumPy)
            D = Z[i] - Z
            with np.errstate(divide="ignore", invalid="ignore"):  # the i == i entry is 0 / 0, masked below
                W = np.maximum(D @ theta + 0.5, 0) ** 2 / (2 * np.sum((D @ Ainv) * D, -1))
            assert float(np.min(np.where(np.arange(10) == i, np.inf, W))) <= float(ze) + 1e-12


# -- statistics --------------------------------------------------------------------------------------
@pytest.mark.parametrize("alg", ALGS, ids=lambda a: type(a).__name__)
def test_easy_instance(alg):
    inst = _soare(omega=0.6)
    r = simulate(alg, inst, jax.random.PRNGKey(3), N, MAX_STEPS, record_pulls=False)  # same program as below
    assert r.stopped.all() and r.correct.all()
    assert r.samples.mean() < 200


@pytest.mark.parametrize("make", [lambda **k: FWS(delta=0.05, **k), lambda **k: TopTwo(delta=0.05, **k)],
                         ids=["FWS", "TopTwo"])
def test_delta_correct_and_mutation_has_power(make):
    inst = cal.calibration_instance("hard_top1", 3.0)
    n = N
    plain = simulate(make(), inst, jax.random.PRNGKey(5), n, MAX_STEPS, record_pulls=False)
    errors = int((~plain.correct).sum())
    assert plain.stopped.all()
    assert binomial_test_upper(errors, n, 0.05) > 1e-3, errors
    lb = cal.lower_bound("hard_top1", 0.05)
    s = plain.samples.ravel()
    # E[tau] / LB measured with these keys: FWS 1.77, TopTwo 1.96 (a threshold 3x too small or sigma ignored moves it about 3x)
    ratio = {"FWS": 1.77, "TopTwo": 1.96}[type(make()).__name__]
    assert 0.75 * ratio < s.mean() / lb < ratio / 0.75, (s.mean() / lb, ratio)
    mutated = simulate(make(sigma=1.0), inst, jax.random.PRNGKey(6), n, MAX_STEPS, record_pulls=False)
    bad = int((~mutated.correct).sum()) + int((~mutated.stopped).sum())
    assert binomial_test_upper(bad, n, 0.05) < 1e-3, bad


def test_epsilon_best_answer():
    """Two eps-good items (gap 0.01 < eps = 0.1): Top Two with the furthest answer stops far earlier
    than exact identification and every answer is eps-good."""
    inst = _soare(omega=0.1)  # theta = 2 e_1: values 2, 0, 2 cos 0.1 (gap 0.01)
    exact = simulate(TopTwo(delta=0.05), inst, jax.random.PRNGKey(8), N, MAX_STEPS, record_pulls=False)
    slack = simulate(TopTwo(delta=0.05, epsilon=0.1), inst, jax.random.PRNGKey(9), N, MAX_STEPS, record_pulls=False)
    assert slack.stopped.all() and slack.correct.all()  # correct = eps-good (engine reads ``slack``)
    assert slack.samples.mean() < 0.2 * exact.samples.mean()
