"""Elimination at stopping / at sampling (Tirinzoni & Degenne 2022): the wrapper
:class:`jaxbandits.algorithms.Eliminate` on LT&S and the uniform GLR.

Instance "fan" (d = 2): e_1 (best), e_2, and four unit arms at angles 0.15, 0.2, 0.25, -0.2 (gaps
1 - cos: 0.011, 0.020, 0.031, 0.020), theta = e_1 * sigma, noise sigma (the same problem at every
sigma, in units of sigma).  Several competitors of similar gaps: the pieces of the alternative
cross the threshold at different times, so elimination at stopping can stop before the base.

Measured (uniform GLR, delta = 0.1, noise 3; the tests use the angles x2, "scale=2"): at scale 1,
100 runs, base 48.9k pulls, elimination at stopping earlier in 6/100 runs, later in none, 0
errors; with sigma ignored (sigma = 1 at noise 3: threshold 9x too small) the wrapped algorithm
errs 95/200 (the base 62/200); with sigma = sqrt(3) (threshold / 3) 11/200 (base 9/200), which an
error check cannot see at delta = 0.1.  At scale 2 (7.8k pulls): earlier in 4/60 runs, later in
none; sigma ignored: 12/40 errors.

Every simulation runs on the one instance ``fan(3, scale=2)`` (the step-level checks on the same
shapes), and the noise scale is passed explicitly (``sigma=3``, what the instance's noise gives):
sigma is a traced field of the engine's program, so a correct run and its mutant (another sigma)
share one compiled program, and so do the tests that wrap the same base the same way.
"""
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbandits  # noqa: F401  (float64)
from jaxbandits import engine
from jaxbandits.algorithms import RAGE, Eliminate, LazyTrackAndStop, MLinGapE, UniformGLR
from jaxbandits.algorithms.base import is_correct
from jaxbandits.algorithms.fixed_confidence.track_and_stop import plug_in_allocation
from jaxbandits.engine import simulate
from jaxbandits.instances.base import make_instance
from jaxbandits.stats import binomial_test_upper, clopper_pearson

KEY = jax.random.key(20261123)
ALPHA = 1e-3
NOISE = 3.0  # the simulations' noise scale (fan(NOISE, scale=2))


def fan(sigma=1.0, scale=1.0):
    ang = np.array([0.0, math.pi / 2, 0.15, 0.2, 0.25, -0.2]) * np.array([1, 1, scale, scale, scale, scale])
    X = np.stack([np.cos(ang), np.sin(ang)], -1)
    return make_instance(X, np.array([1.0, 0.0]) * sigma, sigma)


@functools.lru_cache(maxsize=None)
def _run(alg, n):
    """``n`` replications of ``alg`` on fan(3, scale=2) from KEY (cached: several tests read a run)."""
    r = simulate(alg, fan(NOISE, scale=2.0), KEY, n, 400_000, record_pulls=True)
    return (np.asarray(r.samples).ravel(), np.asarray(r.correct).ravel().astype(bool),
            np.asarray(r.stopped).ravel().astype(bool), np.asarray(r.pulls).reshape(n, -1))


@functools.partial(jax.jit, static_argnums=(0, 3))
def _final(static, dynamic, inst, n):
    """(final states, correct, stopped) of ``n`` runs of ``static.with_dynamic(dynamic)``, stepped
    as the engine does (:func:`engine.final_states`); the dynamic fields are traced, so one program
    serves every sigma."""
    alg = static.with_dynamic(dynamic)
    st = engine.final_states(alg, inst, KEY, n, 200_000)
    answer = jax.vmap(lambda s: alg.outcome(s, inst).answer)(st)
    return st, jax.vmap(lambda a: is_correct(a, inst))(answer), jax.vmap(alg.done)(st)


def _final_states(alg, inst, n):
    return _final(*alg.split_dynamic(), inst, n)


@functools.partial(jax.jit, static_argnums=0)
def _init(alg, key, inst):
    return alg.init(key, inst)


@functools.partial(jax.jit, static_argnums=0)
def _steps(alg, key, s_plain, s_masked, inst, active):
    """(``step`` from ``s_plain``, ``step_masked`` from ``s_masked`` with ``active``), one program."""
    return alg.step(key, s_plain, inst), alg.step_masked(key, s_masked, inst, active)


@jax.jit
def _alloc(X, Z, theta, init, item_mask):
    """LT&S's plug-in allocation (the paper's Frank-Wolfe, LT&S's default cap of 1000 iterations)."""
    return plug_in_allocation(X, Z, theta, init, method="paper", tol=1e-3, max_iters=1000, item_mask=item_mask)


@pytest.mark.parametrize("base", [LazyTrackAndStop(delta=0.1), UniformGLR(delta=0.1)], ids=["LT&S", "uniform"])
def test_step_is_step_masked_with_everything_active(base):
    inst = fan()
    M = inst.num_items
    a = b = _init(base, KEY, inst)
    full = jnp.ones((M,), bool)
    for j in range(70):  # past the lazy updates at t = 2, 4, ..., 64
        a, b = _steps(base, jax.random.fold_in(KEY, j), a, b, inst, full)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_masked_allocation_is_the_allocation_of_the_active_items():
    """Elimination at sampling (Sec 4): the plug-in allocation of LT&S with a mask equals the
    allocation of the instance that only has the masked items (z* always kept)."""
    inst = fan()
    X, Z, th = inst.arms, inst.items, inst.theta
    uniform = jnp.full((X.shape[0],), 1.0 / X.shape[0])
    mask = jnp.array([True, False, False, True, False, True])  # z* = e_1 and two competitors
    w_mask = _alloc(X, Z, th, uniform, mask)
    w_sub = _alloc(X, Z[np.asarray(mask)], th, uniform, jnp.ones((3,), bool))
    w_all = _alloc(X, Z, th, uniform, jnp.ones_like(mask))
    np.testing.assert_allclose(w_mask, w_sub, atol=1e-12)
    assert float(jnp.abs(w_mask - w_all).sum()) > 0.05  # the restriction changes the allocation


def test_elimination_at_stopping_never_later_than_the_base_on_the_same_keys():
    """Same keys, same sampling: the wrapped run stops at or before the base's (Sec 3), with the
    same answer when it stops at the same time, and strictly earlier in some runs.  With
    ``at_stopping=False`` the wrapper is the base: the same stopping times and pulls."""
    base = UniformGLR(delta=0.1, sigma=NOISE)
    sb, cb, stb, pb = _run(base, 60)
    se, ce, ste, _ = _run(Eliminate(base, sigma=NOISE), 60)
    assert stb.all() and ste.all()
    assert np.all(se <= sb)
    assert np.sum(se < sb) >= 1
    same = se == sb
    np.testing.assert_array_equal(ce[same], cb[same])
    # the statistical rule eliminates a superset: never later than the computational one
    ss, _, sts, _ = _run(Eliminate(base, rule="statistical", sigma=NOISE), 60)
    assert sts.all() and np.all(ss <= se)
    # replication i depends on the key and i only: the first 16 of the base's runs
    s0, _, _, p0 = _run(Eliminate(base, at_stopping=False, sigma=NOISE), 16)
    np.testing.assert_array_equal(sb[:16], s0)
    np.testing.assert_array_equal(pb[:16], p0)


def test_sampling_restriction_changes_lts_sampling():
    """After a lazy update round, LT&S's ``step_masked`` sets w(t) to the plug-in allocation over
    the active items (plus z*), warm-started from w(t - 1), and not to the full one (Sec 4).  The
    update after round t is made at the start of the next step, before its pull."""
    inst = fan(scale=2.0)
    alg = LazyTrackAndStop(delta=0.1)
    M = inst.num_items
    s = _init(alg, KEY, inst)
    full = jnp.ones((M,), bool)
    j = 0
    while int(s.t) != 64:                           # 64 is in the exponential schedule {2, 4, 8, ...}
        s = _steps(alg, jax.random.fold_in(KEY, j), s, s, inst, full)[1]
        j += 1
    k = jax.random.fold_in(KEY, j)
    mask = jnp.array([False, False, True, False, False, False])  # one competitor left
    sf, sm = _steps(alg, k, s, s, inst, mask)       # step (the full allocation; = step_masked, all active)
    assert int(sm.sampling.n_updates) == int(s.sampling.n_updates) + 1
    theta = jnp.linalg.solve(s.stats.gram, s.stats.b)   # mu_hat after round 64
    best = int(jnp.argmax(inst.items @ theta))
    assert alg.method == "paper" and alg.max_iters == 1000   # _alloc's solver
    want = _alloc(inst.arms, inst.items, theta, s.sampling.w, mask.at[best].set(True))
    np.testing.assert_allclose(sm.sampling.w, want, atol=1e-8)
    assert float(jnp.abs(sm.sampling.w - sf.sampling.w).sum()) > 0.05


def _error_pvalue(alg, n, delta):
    s, c, st, _ = _run(alg, n)
    errors = int(np.sum(~c | ~st))
    return errors, binomial_test_upper(errors, n, delta)


@pytest.mark.parametrize("make, mutant_sigma", [
    (lambda d, s: Eliminate(UniformGLR(delta=d), sigma=s), 1.0),
    (lambda d, s: Eliminate(LazyTrackAndStop(delta=d), at_sampling=True, sigma=s), 0.5),
], ids=["uniform-at-stopping", "lts-at-sampling"])
def test_wrapped_is_delta_correct_and_the_check_has_power(make, mutant_sigma):
    """H0 "error rate <= delta" (exact binomial, level 1e-3) at noise 3: passes with the
    sigma-aware threshold (sigma = 3), fails with the mutant sigma.  Uniform GLR: sigma = 1 (sigma
    ignored, threshold 9x too small).  LT&S's threshold (u = 1, delta_t = 6 delta / (pi^2 t^2)) is
    conservative: with sigma = 1 (beta / 9) the wrapped LT&S erred 6/60 (not detectable by the error
    rate; the calibration suite's scaling check catches it), so its mutant is sigma = 1/2 (beta / 36):
    32/60 errors (p ~ 1e-13).  The uniform GLR wrapped at sampling: ``test_true_best_never_
    eliminated_beyond_delta``."""
    delta, n = 0.1, 60
    errors, p = _error_pvalue(make(delta, NOISE), n, delta)
    assert p > ALPHA, (errors, clopper_pearson(errors, n))
    errors_m, p_m = _error_pvalue(make(delta, mutant_sigma), n, delta)
    assert p_m < ALPHA, (errors_m, clopper_pearson(errors_m, n))


def test_true_best_never_eliminated_beyond_delta():
    """The uniform GLR wrapped at sampling, on the easy instance (angles x2, gaps 0.04-0.12): the
    competitors are eliminated along the way, the true best item (index 0) in at most a delta
    fraction of the runs, and the error rate is at most delta (exact binomial, level 1e-3); with
    the threshold 9x too small (sigma = 1: sigma ignored) the best item is eliminated and the
    answer wrong far more often (both checks fail)."""
    delta, n = 0.1, 60
    inst = fan(NOISE, scale=2.0)
    alg = Eliminate(UniformGLR(delta=delta), at_sampling=True, sigma=NOISE)
    st, correct, stopped = _final_states(alg, inst, n)
    et = np.asarray(st.elim_time)
    assert np.all(et[:, 1:].max(axis=1) > 0)          # something was eliminated in every run
    lost = int(np.sum(et[:, 0] > 0))
    assert binomial_test_upper(lost, n, delta) > ALPHA, lost
    errors = int(np.sum(~np.asarray(correct) | ~np.asarray(stopped)))
    assert binomial_test_upper(errors, n, delta) > ALPHA, (errors, clopper_pearson(errors, n))
    st_m, correct_m, stopped_m = _final_states(Eliminate(UniformGLR(delta=delta), at_sampling=True, sigma=1.0), inst, n)
    lost_m = int(np.sum(np.asarray(st_m.elim_time)[:, 0] > 0))
    assert binomial_test_upper(lost_m, n, delta) < ALPHA, lost_m
    errors_m = int(np.sum(~np.asarray(correct_m) | ~np.asarray(stopped_m)))
    assert binomial_test_upper(errors_m, n, delta) < ALPHA, (errors_m, clopper_pearson(errors_m, n))


def test_sigma_passes_to_the_base_and_validation():
    w = Eliminate(LazyTrackAndStop(delta=0.05), sigma=2.0)
    assert w.base.sigma == 2.0 and w.delta == 0.05
    inst = fan()
    with pytest.raises(ValueError):
        Eliminate(MLinGapE(2, 0.05)).validate(make_instance(np.eye(3), [1.0, 0.5, 0.0], 1.0))
    with pytest.raises(TypeError):
        Eliminate(RAGE(delta=0.05), at_sampling=True).validate(inst)
    with pytest.raises(ValueError):
        Eliminate(UniformGLR(), rule="nope")


def test_wrapped_at_stopping_with_a_ridge_estimate():
    """Elimination at stopping on a base with a ridge regulariser and a threshold of its own (FWS):
    the wrapper's generic rule (the same code for every base) uses the base's ``reg`` in its
    estimate; on the same keys the wrapped run is correct and never stops later than FWS.

    Every base implementing the protocol (FWS, Top Two, LinGame) wrapped at sampling, on the
    engine: ``benchmarks/elimination_rules_modern.py``; their ``step_masked`` is tested in
    ``tests/test_fws_toptwo.py`` and ``tests/test_lingame.py``, and LinGame wrapped at sampling in
    ``tests/test_tirinzoni_degenne.py``."""
    from jaxbandits.algorithms import FWS

    base = FWS(delta=0.1)
    assert base.reg > 0
    sb, cb, stb, _ = _run(base, 16)
    se, ce, ste, _ = _run(Eliminate(base), 16)
    assert stb.all() and ste.all() and ce.all()
    assert np.all(se <= sb)
