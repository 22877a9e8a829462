"""Fast calibration tests: the checks of :mod:`jaxbandits.calibration` pass on the
algorithms as they are and FAIL when a width or threshold is 3x too small or sigma is ignored.

Setting: the hard Top-1 instance (seed 003 Fig. 1(b), gap 0.005 at sigma = 1/2) on the noise grid
of :mod:`jaxbandits.calibration`: at sigma = 3 the instance has theta scaled by 6, the same problem
as the sigma = 1 grid point in units of sigma, so a sigma-aware algorithm's stopping time has the
same distribution at both, and the sigma = 1 run (independent key) is the reference.  The
mutations go through the algorithm's ``sigma`` option, at noise 3:

* ``sigma=1`` ("sigma ignored"): widths 3x too small, sigma^2 thresholds 9x too small;
* ``sigma=sqrt(3)``: a sigma^2 threshold 3x too small (GIFA: widths C sigma ||x|| sqrt(3)x too
  small, i.e. their square 3x).

Power, measured with these keys and counts (40 runs per configuration, level 1e-3 per check;
LT&S / uniform GLR on hard Top-1 / m-LinGapE greedy on the classic Top-m instance):

* unmutated: mean ratio to the sigma = 1 run 0.95 / 0.96 / 1.01, combined scaling p 0.46 / 1.0 / 1.0:
  pass;
* threshold / 3: ratio 0.30 / 0.27 / 0.29, Welch p 2e-78 / 2e-32 / 1e-61, KS p <= 3e-16: FAIL;
* sigma ignored: ratio 0.070 / 0.031 / 0.098, Welch p 1e-169 / 3e-71 / 2e-115: FAIL.

The weakest detection (uniform GLR, threshold / 3) is about 12 standard errors away, so
20 runs would already do.  The error-rate check alone is weaker, because the paper thresholds
are conservative (LT&S's mean is 24x the lower bound sigma^2 T* kl(delta, 1-delta) = 583 pulls,
LinGapE's 7x): with sigma ignored, the uniform GLR errs 25 times in 200 runs at delta = 0.05 (rate
0.125, Clopper-Pearson [0.083, 0.179], binomial p = 2.6e-5 < 1e-3; measured with this key), which
:func:`test_error_check_has_power` asserts; with 40 runs the same mutation gave 7/40 (p = 0.003),
not enough at level 1e-3.

Deterministic: every key is fixed, so each assertion is about one fixed set of runs.
"""
from __future__ import annotations

import math
import zlib

import jax
import numpy as np
import pytest

from jaxbandits import calibration as cal
from jaxbandits.engine import simulate

REPS = 40
KEY = jax.random.key(20261123)


def _run(case, sigma, delta, reps=REPS, option=None, max_steps=None):
    alg = case.algorithm(delta, sigma=option)
    tag = f"{case.label}|{case.instance}|{sigma}|{delta}|{option}"
    key = jax.random.fold_in(KEY, zlib.crc32(tag.encode()) & 0x7FFFFFFF)  # independent per config
    res = simulate(alg, cal.calibration_instance(case.instance, sigma), key, reps,
                   max_steps or case.max_steps, record_pulls=False)
    return res.samples.ravel(), res.correct.ravel(), res.stopped.ravel()


def _case(label, instance="hard_top1"):
    return next(c for c in cal.cases() if c.label == label and c.instance == instance)


def _row(case, delta, option=None, reps=REPS, unit=None):
    unit = unit if unit is not None else _run(case, 1.0, delta, reps)
    s, c, st = _run(case, 3.0, delta, reps, option=option)
    return cal.calibration_row(case, 3.0, delta, s, c, st, unit_samples=unit[0], unit_capped=not unit[2].all(),
                               lower_bound=cal.lower_bound(case.instance, delta),
                               option="" if option is None else f"sigma={option:.4g}")


SIGMA_AWARE = [("LT&S", "hard_top1"), ("UniformGLR", "hard_top1"), ("m-LinGapE (greedy)", "classic_topm"),
               ("Track-and-Stop (D) [K-armed]", "k_armed")]


@pytest.mark.parametrize("label,instance", SIGMA_AWARE)
def test_unmutated_passes_and_mutations_fail(label, instance):
    case = _case(label, instance)
    delta = 0.05
    unit = _run(case, 1.0, delta)
    plain = _row(case, delta, unit=unit)
    assert plain["verdict"] == "pass", plain
    assert 0.8 < plain["ratio_to_unit"] < 1.25
    for option, expected_ratio in ((math.sqrt(3.0), 0.5), (1.0, 0.25)):  # threshold / 3; sigma ignored
        row = _row(case, delta, option=option, unit=unit)
        assert row["verdict"].startswith("FAIL") and "scaling" in row["verdict"], row
        assert row["p_scaling"] < 1e-10 and row["ratio_to_unit"] < expected_ratio, row


def test_error_check_has_power():
    """Sigma ignored at noise 3 (widths 3x too small): the error rate itself exceeds delta."""
    case = _case("UniformGLR")
    s, c, st = _run(case, 3.0, 0.05, reps=200, option=1.0)
    e = cal.error_check(c, st, 0.05)
    assert e["p_error"] < cal.ALPHA, e
    row = cal.calibration_row(case, 3.0, 0.05, s, c, st, lower_bound=cal.lower_bound("hard_top1", 0.05))
    assert "error" in row["verdict"], row


def test_capped_runs_fail_and_are_counted():
    case = _case("LT&S")
    s, c, st = _run(case, 1.0, 0.05, max_steps=500)  # LT&S needs ~14k pulls here
    assert not st.any()
    row = cal.calibration_row(case, 1.0, 0.05, s, c, st)
    assert row["capped"] == REPS and row["error_rate"] == 1.0 and row["mean_is_lower_bound"]
    assert "capped" in row["verdict"] and "error" in row["verdict"]


def test_oracle_true_best_error_is_na():
    case = _case("Oracle (true_best)")
    row = cal.calibration_row(case, 1.0, 0.05, np.full(5, 100.0), np.ones(5, bool), np.ones(5, bool))
    assert row["error_rate"] == "n/a" and row["p_error"] == "n/a" and row["verdict"] == "pass"


def test_grid_instances_are_one_problem():
    for name in cal.INSTANCES:
        base = cal.calibration_instance(name, 1.0)
        for s in cal.SIGMAS:
            inst = cal.calibration_instance(name, s)
            np.testing.assert_allclose(np.asarray(inst.theta) / s, np.asarray(base.theta))
            assert float(inst.noise) == s
    # the seeds' instances at sigma_0 = 1/2
    from jaxbandits.instances.seeds import topm_classic, topm_hard_top1
    np.testing.assert_allclose(cal.calibration_instance("hard_top1", 0.5).theta, topm_hard_top1().theta)
    np.testing.assert_allclose(cal.calibration_instance("classic_topm", 0.5).theta, topm_classic(4, 2).theta)


def test_statistics_against_scipy():
    import scipy.stats as stats

    from jaxbandits.stats import welch_test

    rng = np.random.default_rng(0)
    a, b = rng.exponential(1.0, 150), rng.exponential(1.3, 120)
    D, p = cal.ks_two_sample(a, b)
    ref = stats.ks_2samp(a, b)
    assert abs(D - ref.statistic) < 1e-12
    assert abs(p - ref.pvalue) < 1e-12
    assert cal.ks_two_sample(a, a)[1] == 1.0
    ref_t = stats.ttest_ind(a, b, equal_var=False)
    p = welch_test(a.mean(), a.std(ddof=1), a.size, b.mean(), b.std(ddof=1), b.size)
    assert p == pytest.approx(ref_t.pvalue, rel=1e-10) and p < 0.1
    # the scaling check's Welch p-value is that test on the two samples
    assert cal.scaling_check(a, b)["p_welch"] == pytest.approx(ref_t.pvalue, rel=1e-10)
    # a mean against a published (mean, sd, n): equal means give 1; two samples without spread
    assert welch_test(10.0, 3.0, 40, 10.0, 4.0, 500) == 1.0
    assert welch_test(5.0, 0.0, 10, 5.0, 0.0, 10) == 1.0 and welch_test(5.0, 0.0, 10, 6.0, 0.0, 10) == 0.0


def test_published_check_has_power():
    """m-LinGapE with the released code's switches against seed 003's released 500-run mean (classic
    Top-m, sigma = 1/2): passes as is, FAILS with a sigma^2 threshold 3x too small (sigma / sqrt 3).
    Measured with these keys (40 runs): 2945 +- 138 against 2942 +- 37 (p = 0.98, pass); mutated
    859 +- 89 (p = 1e-103, FAIL).  With 300 runs: 3014 +- 50 (p = 0.25)."""
    case = _case("m-LinGapE (greedy) [released code]", "classic_topm")
    ref = cal.PUBLISHED[case.reference]
    for option, ok in ((None, True), (cal.SIGMA0 / math.sqrt(3.0), False)):
        s, c, st = _run(case, cal.SIGMA0, 0.05, option=option)
        row = cal.calibration_row(case, cal.SIGMA0, 0.05, s, c, st, published=ref)
        assert (row["verdict"] == "pass") == ok, row
        if not ok:
            assert "published" in row["verdict"] and row["p_published"] < 1e-10, row
