"""The Lambert W function (both real branches) against scipy; the calibrated thresholds of
Gaussian arms with unknown variances (Jourdan, Degenne & Kaufmann, ALT 2023, as the C port of the
authors' code writes them): the factor against a scipy reference, the first valid count, the
options' errors, delta-correctness, the direction of the stopping times against the heuristic
threshold, round robin with the calibrated EV-GLR against the NumPy implementation with threshold
mutations; Kaufmann & Koolen's threshold of Gaussian arms: C_G against scipy, the same checks."""
from __future__ import annotations

import dataclasses
import math
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import lambertw

from jaxbandits.algorithms import KArmedTopTwo, KArmedTrackAndStop
from jaxbandits.algorithms.base import hyperparameter
from jaxbandits.engine import simulate
from jaxbandits.instances import k_armed
from jaxbandits.precision import float64_entry
from jaxbandits.rules import compose, thresholds
from jaxbandits.rules.karmed import ChernoffGLR, GaussianGLR, InitialRounds, TrackAndStop, UnknownVarianceGLR
from jaxbandits.rules.sampling import RoundRobin
from jaxbandits.stats import binomial_test_upper
from karmed_support import ref, stopped_samples, two_sample_z


MU, SD = (1.0, 0.5, 0.3), (0.8, 0.5, 1.2)
E = math.e


# -- Lambert W ---------------------------------------------------------------------------------------
def _lambert_checks():
    jit = jax.jit(thresholds.lambert_w, static_argnums=(1,))
    x0 = np.concatenate([-1 / E + np.logspace(-8, -0.5, 60), np.linspace(-0.3, 5, 300), np.logspace(0.7, 300, 200)])
    w0 = np.asarray(jit(jnp.asarray(x0), 0))
    np.testing.assert_allclose(w0, lambertw(x0, 0).real, rtol=1e-12, atol=0)
    x1 = np.concatenate([-1 / E + np.logspace(-8, -0.5, 60), -np.logspace(-300, math.log10(0.3), 300)])
    w1 = np.asarray(jit(jnp.asarray(x1), -1))
    np.testing.assert_allclose(w1, lambertw(x1, -1).real, rtol=1e-12, atol=0)
    # within 1e-8 of the branch point scipy's W_{-1} is off (residual ~ 1e-10); ours solves w e^w = x
    # to round-off there too
    xb = -1 / E + np.logspace(-12, -8, 20)
    for b in (0, -1):
        w = np.asarray(thresholds.lambert_w(jnp.asarray(xb), b)).astype(np.longdouble)
        assert np.max(np.abs(w * np.exp(w) - xb)) < 1e-16
        assert np.all(w >= -1) if b == 0 else np.all(w <= -1)
    # edges, domain, vmap
    assert float(thresholds.lambert_w(-1 / E, 0)) == -1.0 and float(thresholds.lambert_w(-1 / E, -1)) == -1.0
    assert float(thresholds.lambert_w(0.0, 0)) == 0.0 and float(thresholds.lambert_w(0.0, -1)) == -np.inf
    assert np.isnan(float(thresholds.lambert_w(-0.4, 0))) and np.isnan(float(thresholds.lambert_w(0.1, -1)))
    v = jax.vmap(lambda x: thresholds.lambert_w(x, 0))(jnp.asarray(x0[:50]))
    np.testing.assert_array_equal(np.asarray(v), w0[:50])
    # W-bar: z - log z = x on both sides of 1
    x = jnp.asarray(np.linspace(1.0, 60.0, 200))
    for b in (0, -1):
        z = np.asarray(thresholds.lambert_w_bar(x, b))
        np.testing.assert_allclose(z - np.log(z), np.asarray(x), rtol=1e-13)
        assert np.all(z <= 1 + 1e-12) if b == 0 else np.all(z >= 1 - 1e-12)


def test_lambert_w_matches_scipy_on_both_branches():
    """W_0 and W_{-1} (fixed Halley steps, jitted and vmapped) against scipy.special.lambertw to
    1e-12 relative; at 1e-12..1e-8 from -1/e, where scipy's W_{-1} is off, the residual w e^w - x
    is at round-off; edges, NaN outside the domain, W-bar_k(x) solving z - log z = x."""
    float64_entry(_lambert_checks)()
    with pytest.raises(ValueError, match="branch must be 0 or -1, got 1"):
        thresholds.lambert_w(0.5, 1)


# -- the calibrated thresholds ---------------------------------------------------------------------
def _calibrated_checks():
    n = np.arange(1.0, 3001.0)
    for delta, K in ((0.01, 3), (0.1, 5), (1e-4, 20)):
        valid = np.asarray(thresholds.uv_valid_count(jnp.asarray(n), delta, float(K)))
        r = np.asarray(thresholds.uv_ratio(jnp.asarray(n), delta, float(K)))
        want_valid, per_arm = ref.uv_calibrated(n, delta, K, "plug-in")
        np.testing.assert_array_equal(valid, want_valid)
        np.testing.assert_allclose((0.5 * n * r)[valid], per_arm[valid], rtol=1e-12)
        # the first valid count is exactly where the factor's denominator turns positive
        assert np.all((r > 0) == valid), (delta, K)
        glr = np.asarray(thresholds.uv_pair_threshold(jnp.asarray(n), jnp.asarray(n), delta, float(K), "glr"))
        _, per_arm_glr = ref.uv_calibrated(n, delta, K, "glr")
        np.testing.assert_allclose(glr[valid], 2 * per_arm_glr[valid], rtol=1e-12)


def test_calibrated_thresholds_match_the_scipy_reference():
    """r(n) and the first valid count of the calibrated thresholds against a scipy implementation
    (scipy.special.lambertw, zeta) of the same formulas, n = 1..3000 at three (delta, K): equal
    validity, 1e-12 relative; the valid counts are exactly those with a positive factor."""
    float64_entry(_calibrated_checks)()


def test_calibrated_option_errors():
    """threshold='calibrated' needs the empirical variances; every bad value is named."""
    with pytest.raises(ValueError, match="threshold='calibrated'.*variances='empirical', got variances='known'"):
        KArmedTrackAndStop(variances="known", threshold="calibrated")
    with pytest.raises(ValueError, match="threshold must be one of .*'calibrated'.*got 'calibrate'"):
        KArmedTopTwo(variances="empirical", threshold="calibrate")
    with pytest.raises(ValueError,
                       match=r"threshold must be one of \('heuristic', 'gk16', 'log_t', 'kaufmann_koolen'\), "
                             "got 'calibrated'"):
        KArmedTopTwo(threshold="calibrated")
    with pytest.raises(ValueError, match="GaussianGLR: threshold='calibrated'"):
        GaussianGLR("known", "calibrated")
    UnknownVarianceGLR(threshold="calibrated")
    with pytest.raises(ValueError, match="statistic must be 'ev_glr' or 'glr', got 'x'"):
        thresholds.uv_pair_threshold(10.0, 10.0, 0.1, 3.0, "x")


_run, _z = stopped_samples, two_sample_z


# -- round robin with the calibrated EV-GLR against the NumPy implementation, with mutations -------------
@dataclasses.dataclass(frozen=True)
class _RoundRobin(RoundRobin):
    supports_arm_noise: ClassVar[bool] = True   # round robin reads no noise scale


@dataclasses.dataclass(frozen=True)
class _ScaledCalibrated(GaussianGLR):
    factor: float = hyperparameter(1.0, low=0.0, traced=True)

    def calibrated_thresholds(self, counts, b, valid, ctx):
        return super().calibrated_thresholds(counts, b, valid, ctx) * self.factor


#: ``ref.uniform_calibrated_ev_glr(np.random.default_rng(0), MU, SD, 0.1, 2000, scale=1.0)``: mean and
#: standard error of the stopping time (2,000 runs, no error; 20 s, so recorded here)
REF_UNIFORM_CALIBRATED = (908.4135, 3.540082463841824)


def test_calibrated_ev_glr_matches_the_reference_and_mutations_leave_the_band():
    """Round robin with the EV-GLR at the calibrated thresholds, mu = (1, 0.5, 0.3), sigma = (0.8,
    0.5, 1.2), delta = 0.1: 200 runs against the NumPy/scipy implementation's 2,000
    (:data:`REF_UNIFORM_CALIBRATED`), two-sided within 3.5 combined SE (measured 908.1 +- 11.2
    against 908.4 +- 3.5, z = -0.03); the thresholds x 1.5 and / 1.5 leave the band (measured
    1263.0 +- 14.1 and 667.6 +- 9.3, z = +24 and -21; the reference's mutants 1259.2 +- 4.3 and
    666.6 +- 2.9)."""
    inst = k_armed(MU, "gaussian", noise=SD)
    ref_mean, ref_se = REF_UNIFORM_CALIBRATED

    def z_of(factor):
        alg = compose(InitialRounds(_RoundRobin(), 2), _ScaledCalibrated("empirical", "calibrated", factor=factor),
                      delta=0.1)
        tau, errors = _run(alg, inst, 200)
        return (tau.mean() - ref_mean) / math.hypot(tau.std(ddof=1) / math.sqrt(tau.size), ref_se), tau

    z, _ = z_of(1.0)
    assert abs(z) < 3.5, z
    for factor in (1.5, 1 / 1.5):
        zm, tau = z_of(factor)
        assert abs(zm) > 3.5, (factor, tau.mean(), zm)


# -- delta-correctness and the direction of the stopping times ----------------------------------------------
def test_calibrated_thresholds_are_delta_correct_where_the_heuristic_errs():
    """Track-and-Stop (D), empirical variances, mu = (1, 0.5, 0.3), sigma = (0.8, 0.5, 1.2), delta =
    0.01, 200 runs at the heuristic threshold, 120 at the calibrated ones: the EV-GLR at the
    heuristic threshold errs more often than delta (binomial p-value < 0.05: the instance shows
    errors; measured 8 / 200, p = 0.001), at the calibrated thresholds it does not (p > 0.01;
    measured 0), nor does the GLR at its calibrated thresholds (0); the calibrated thresholds stop
    later than the heuristic one (two-sided z > 5 for both statistics; measured about 987 against
    98 (EV-GLR) and 136 (GLR) pulls, z ~ 76 with 200 runs each)."""
    inst = k_armed(MU, "gaussian", noise=SD)
    delta = 0.01
    out = {}
    for statistic in ("plug-in", "glr"):
        for threshold in ("heuristic", "calibrated"):
            alg = KArmedTrackAndStop(delta=delta, variances="empirical", statistic=statistic, threshold=threshold)
            out[statistic, threshold] = _run(alg, inst, 200 if threshold == "heuristic" else 120)
    heur_tau, heur_err = out["plug-in", "heuristic"]
    assert binomial_test_upper(heur_err, heur_tau.size, delta) < 0.05, heur_err
    for statistic in ("plug-in", "glr"):
        tau, err = out[statistic, "calibrated"]
        assert binomial_test_upper(err, tau.size, delta) > 0.01, (statistic, err)
        heuristic = out[statistic, "heuristic"][0]
        assert _z(tau, heuristic) > 5, (statistic, tau.mean(), heuristic.mean())


# -- Kaufmann & Koolen's threshold of Gaussian arms ----------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class _ScaledChernoff(ChernoffGLR):
    factor: float = hyperparameter(1.0, low=0.0, traced=True)

    def _beta_kl(self, t, ctx):
        return super()._beta_kl(t, ctx) * self.factor


def _cg_checks():
    xs = np.array([0.01, 0.1, 0.5, 1.0, 2.0, math.log(20.0) / 2, 5.0, 10.0, 20.0, 50.0, 200.0])
    got = np.asarray(jax.jit(thresholds.calibration_gaussian)(jnp.asarray(xs)))
    want = np.array([ref.calibration_gaussian(x) for x in xs])
    np.testing.assert_allclose(got, want, rtol=1e-12)
    c = float(thresholds.kaufmann_koolen(1000.0, 0.1, 5.0))
    assert abs(c - (2 * ref.calibration_gaussian(math.log(4 / 0.1) / 2) + 4 * math.log(4 + math.log(500.0)))) < 1e-10


def test_calibration_gaussian_matches_scipy():
    """C_G(x) (grid + fixed golden-section steps, jitted) against a 200,001-point grid refined by
    scipy's bounded minimisation, x from 0.01 to 200, to 1e-12 relative; c(t, delta) assembled
    from it."""
    float64_entry(_cg_checks)()


def test_kaufmann_koolen_option_errors():
    """threshold='kaufmann_koolen' is for the Gaussian GLR: Bernoulli arms and KL-LUCB's per-arm
    bounds are refused, by name."""
    from jaxbandits.algorithms import KArmedKLLUCB

    with pytest.raises(ValueError, match="threshold='kaufmann_koolen'.*Gaussian.*got model='bernoulli'"):
        KArmedTrackAndStop(threshold="kaufmann_koolen").validate(k_armed((0.5, 0.4), "bernoulli"))
    with pytest.raises(ValueError, match="KArmedKLLUCB: threshold='kaufmann_koolen'.*allowed"):
        KArmedKLLUCB(threshold="kaufmann_koolen")
    with pytest.raises(ValueError, match="threshold must be one of .*'kaufmann_koolen'.*got 'kk'"):
        KArmedTopTwo(threshold="kk")


def test_kaufmann_koolen_matches_the_reference_mutations_leave_the_band_and_it_stops_later():
    """Round robin with Chernoff's GLR at c(t, delta) = 2 C_G(log((K - 1) / delta) / 2) + 4 log(4 +
    log(t / 2)), mu = (1, 0.5, 0.3), sigma = 1, delta = 0.1: 200 runs against 2,000 of the NumPy /
    scipy implementation (measured 714.3 +- 18.5 against 717.3 +- 5.9, z = -0.16); the threshold
    x 1.5 and / 1.5 leave the band (1097.9 +- 23.6 and 474.8 +- 15.3, z = +15.7 and -14.8); it
    stops later than the heuristic log((1 + log t) / delta) (188.0 +- 9.5, z = +25)."""
    inst = k_armed(MU, "gaussian", noise=1.0)
    tau_ref, best = ref.uniform_glr_kaufmann_koolen(np.random.default_rng(0), MU, 1.0, 0.1, 2000)
    assert np.all(best == 0)

    def run(threshold, factor):
        alg = compose(InitialRounds(RoundRobin(), 1), _ScaledChernoff(threshold, factor=factor), delta=0.1)
        return _run(alg, inst, 200)[0]

    ours = run("kaufmann_koolen", 1.0)
    assert abs(_z(ours, tau_ref)) < 3.5, (ours.mean(), tau_ref.mean(), _z(ours, tau_ref))
    for factor in (1.5, 1 / 1.5):
        mutant = run("kaufmann_koolen", factor)
        assert abs(_z(mutant, tau_ref)) > 3.5, (factor, mutant.mean(), _z(mutant, tau_ref))
    heuristic = run("heuristic", 1.0)
    assert _z(ours, heuristic) > 5, (ours.mean(), heuristic.mean())


def test_kaufmann_koolen_is_delta_correct_on_a_near_tie():
    """Track-and-Stop (D) on two Gaussian arms 0.005 apart (sigma = 1), delta = 0.1, 200 runs capped
    at 2,000 pulls, counting the runs that stopped on the wrong arm: with c(t, delta) not above
    delta (binomial p > 0.01; measured 0 / 200, none stopped); the threshold x 0.15 (about
    log(1 / delta), a fixed-time level) errs far more often than delta there (p < 1e-3; measured
    100 stopped, 50 on the wrong arm, p = 9e-10), so the instance shows a threshold that is too
    small."""
    inst = k_armed((0.005, 0.0), "gaussian", noise=1.0)

    def wrong(factor):
        alg = compose(InitialRounds(TrackAndStop(), 1), _ScaledChernoff("kaufmann_koolen", factor=factor), delta=0.1)
        res = simulate(alg, inst, 0, n_reps=200, max_steps=2000)
        return int(np.sum(np.asarray(res.stopped).ravel() & ~np.asarray(res.correct).ravel()))

    named = simulate(KArmedTrackAndStop(delta=0.1, threshold="kaufmann_koolen"), inst, 0, n_reps=200, max_steps=2000)
    errors = int(np.sum(np.asarray(named.stopped).ravel() & ~np.asarray(named.correct).ravel()))
    assert binomial_test_upper(errors, 200, 0.1) > 0.01, errors
    too_small = wrong(0.15)
    assert binomial_test_upper(too_small, 200, 0.1) < 1e-3, too_small
