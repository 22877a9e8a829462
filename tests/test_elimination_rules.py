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
"""
import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbandits  # noqa: F401  (float64)
from jaxbandits import engine
from jaxbandits.algorithms import RAGE, Eliminate, LazyTrackAndStop, MLinGapE, UniformGLR
from jaxbandits.algorithms.fixed_confidence.track_and_stop import plug_in_allocation
from jaxbandits.engine import simulate
from jaxbandits.instances.base import make_instance
from jaxbandits.stats import binomial_test_upper, clopper_pearson

KEY = jax.random.key(20261123)
ALPHA = 1e-3


def fan(sigma=1.0, scale=1.0):
    ang = np.array([0.0, math.pi / 2, 0.15, 0.2, 0.25, -0.2]) * np.array([1, 1, scale, scale, scale, scale])
    X = np.stack([np.cos(ang), np.sin(ang)], -1)
    return make_instance(X, np.array([1.0, 0.0]) * sigma, sigma)


def _run(alg, inst, n, key=KEY, cap=400_000):
    r = simulate(alg, inst, key, n, cap, record_pulls=True)
    return (np.asarray(r.samples).ravel(), np.asarray(r.correct).ravel().astype(bool),
            np.asarray(r.stopped).ravel().astype(bool), np.asarray(r.pulls).reshape(n, -1))


def _final_states(alg, inst, n, key=KEY, cap=200_000):
    """Final states of ``n`` runs, stepped as the engine does (replication key i -> (init, run))."""
    return engine.final_states(alg, inst, key, n, cap)


@pytest.mark.parametrize("base", [LazyTrackAndStop(delta=0.1), UniformGLR(delta=0.1)], ids=["LT&S", "uniform"])
def test_step_is_step_masked_with_everything_active(base):
    inst = fan()
    M = inst.num_items
    s = base.init(KEY, inst)
    s1 = jax.jit(lambda k, s: base.step(k, s, inst))
    s2 = jax.jit(lambda k, s: base.step_masked(k, s, inst, jnp.ones((M,), bool)))
    a = b = s
    for j in range(70):  # past the lazy updates at t = 2, 4, ..., 64
        k = jax.random.fold_in(KEY, j)
        a, b = s1(k, a), s2(k, b)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_masked_allocation_is_the_allocation_of_the_active_items():
    """Elimination at sampling (Sec 4): the plug-in allocation of LT&S with a mask equals the
    allocation of the instance that only has the masked items (z* always kept)."""
    inst = fan()
    X, Z, th = inst.arms, inst.items, inst.theta
    mask = jnp.array([True, False, False, True, False, True])  # z* = e_1 and two competitors
    w_mask = plug_in_allocation(X, Z, th, None, method="paper", tol=1e-6, max_iters=5000, item_mask=mask)
    w_sub = plug_in_allocation(X, Z[np.asarray(mask)], th, None, method="paper", tol=1e-6, max_iters=5000)
    w_all = plug_in_allocation(X, Z, th, None, method="paper", tol=1e-6, max_iters=5000)
    np.testing.assert_allclose(w_mask, w_sub, atol=1e-12)
    assert float(jnp.abs(w_mask - w_all).sum()) > 0.05  # the restriction changes the allocation


def test_elimination_at_stopping_never_later_than_the_base_on_the_same_keys():
    """Same keys, same sampling: the wrapped run stops at or before the base's (Sec 3), with the
    same answer when it stops at the same time, and strictly earlier in some runs."""
    inst = fan(3.0, scale=2.0)
    base = UniformGLR(delta=0.1)
    sb, cb, stb, _ = _run(base, inst, 60)
    se, ce, ste, _ = _run(Eliminate(base), inst, 60)
    assert stb.all() and ste.all()
    assert np.all(se <= sb)
    assert np.sum(se < sb) >= 1
    same = se == sb
    np.testing.assert_array_equal(ce[same], cb[same])
    # the statistical rule eliminates a superset: never later than the computational one
    ss, _, sts, _ = _run(Eliminate(base, rule="statistical"), inst, 60)
    assert sts.all() and np.all(ss <= se)


def test_at_stopping_false_is_the_base():
    inst = fan(3.0, scale=2.0)
    base = UniformGLR(delta=0.1)
    sb, cb, _, pb = _run(base, inst, 8)
    s0, c0, _, p0 = _run(Eliminate(base, at_stopping=False), inst, 8)
    np.testing.assert_array_equal(sb, s0)
    np.testing.assert_array_equal(pb, p0)


def test_sampling_restriction_changes_lts_sampling():
    """At a lazy update round, LT&S's ``step_masked`` sets w(t) to the plug-in allocation over the
    active items (plus z*), warm-started from w(t - 1), and not to the full one (Sec 4)."""
    inst = fan(scale=2.0)
    alg = LazyTrackAndStop(delta=0.1)
    M = inst.num_items
    s = alg.init(KEY, inst)
    step = jax.jit(lambda k, s, a: alg.step_masked(k, s, inst, a))
    full = jnp.ones((M,), bool)
    j = 0
    while int(s.t) + 1 != 64:                       # 64 is in the exponential schedule {2, 4, 8, ...}
        s = step(jax.random.fold_in(KEY, j), s, full)
        j += 1
    k = jax.random.fold_in(KEY, j)
    mask = jnp.array([False, False, True, False, False, False])  # one competitor left
    sm, sf = step(k, s, mask), step(k, s, full)
    assert int(sm.n_updates) == int(s.n_updates) + 1
    theta = jnp.linalg.solve(sm.stats.gram, sm.stats.b)
    best = int(jnp.argmax(inst.items @ theta))
    want = plug_in_allocation(inst.arms, inst.items, theta, s.w, method="paper", tol=alg.tol,
                              max_iters=alg.max_iters, item_mask=mask.at[best].set(True))
    np.testing.assert_allclose(sm.w, want, atol=1e-8)
    assert float(jnp.abs(sm.w - sf.w).sum()) > 0.05
    np.testing.assert_array_equal(np.asarray(sm.stats.counts), np.asarray(sf.stats.counts))  # same pull


def _error_pvalue(alg, inst, n, delta):
    s, c, st, _ = _run(alg, inst, n)
    errors = int(np.sum(~c | ~st))
    return errors, binomial_test_upper(errors, n, delta)


@pytest.mark.parametrize("make, at_sampling, mutant_sigma", [
    (lambda d: UniformGLR(delta=d), False, 1.0),
    (lambda d: UniformGLR(delta=d), True, 1.0),
    (lambda d: LazyTrackAndStop(delta=d), True, 0.5),
], ids=["uniform-at-stopping", "uniform-at-sampling", "lts-at-sampling"])
def test_wrapped_is_delta_correct_and_the_check_has_power(make, at_sampling, mutant_sigma):
    """H0 "error rate <= delta" (exact binomial, level 1e-3) at noise 3: passes with the
    sigma-aware threshold, fails with the mutant sigma.  Uniform GLR: sigma = 1 (sigma ignored,
    threshold 9x too small).  LT&S's threshold (u = 1, delta_t = 6 delta / (pi^2 t^2)) is
    conservative: with sigma = 1 (beta / 9) the wrapped LT&S erred 6/60 (not detectable by the error
    rate; the calibration suite's scaling check catches it), so its mutant is sigma = 1/2 (beta / 36):
    32/60 errors (p ~ 1e-13)."""
    delta, n = 0.1, 60
    inst = fan(3.0, scale=2.0)
    errors, p = _error_pvalue(Eliminate(make(delta), at_sampling=at_sampling), inst, n, delta)
    assert p > ALPHA, (errors, clopper_pearson(errors, n))
    errors_m, p_m = _error_pvalue(Eliminate(make(delta), at_sampling=at_sampling, sigma=mutant_sigma), inst, n,
                                  delta)
    assert p_m < ALPHA, (errors_m, clopper_pearson(errors_m, n))


def test_true_best_never_eliminated_beyond_delta():
    """Easy instance (angles x2, gaps 0.04-0.12): the competitors are eliminated along the way, the
    true best item (index 0) in at most a delta fraction of the runs; with the threshold 9x too
    small (sigma ignored) it is eliminated far more often."""
    delta, n = 0.1, 40
    inst = fan(3.0, scale=2.0)
    alg = Eliminate(UniformGLR(delta=delta), at_sampling=True)
    st = _final_states(alg, inst, n)
    et = np.asarray(st.elim_time)
    assert np.all(et[:, 1:].max(axis=1) > 0)          # something was eliminated in every run
    lost = int(np.sum(et[:, 0] > 0))
    assert binomial_test_upper(lost, n, delta) > ALPHA, lost
    st_m = _final_states(dataclasses.replace(alg, sigma=1.0), inst, n)
    lost_m = int(np.sum(np.asarray(st_m.elim_time)[:, 0] > 0))
    assert binomial_test_upper(lost_m, n, delta) < ALPHA, lost_m


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


@pytest.mark.parametrize("name", ["FWS", "TopTwo", "LinGame"])
def test_modern_algorithms_wrapped_on_the_engine(name):
    """LinGame, FWS and Top Two implement the protocol: wrapped at sampling (their own
    ``step_masked``) they run and stay correct on the easy fan; wrapped at stopping (the wrapper's
    generic rule on their statistics, the same code for every base: checked on FWS) they never
    stop later than themselves on the same keys."""
    import jaxbandits.algorithms as A

    base = getattr(A, name)(delta=0.1)
    inst = fan(3.0, scale=2.0)
    ss, cs, sts, _ = _run(Eliminate(base, at_sampling=True), inst, 16)
    assert sts.all() and cs.all()
    if name == "FWS":
        sb, cb, stb, _ = _run(base, inst, 16)
        se, ce, ste, _ = _run(Eliminate(base), inst, 16)
        assert stb.all() and ste.all() and ce.all()
        assert np.all(se <= sb)
