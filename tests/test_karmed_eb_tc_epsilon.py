"""EB-TCε (Jourdan, Degenne & Kaufmann, NeurIPS 2023; :class:`jaxbandits.algorithms.KArmedEBTCEpsilon`):
a NumPy loop written from the paper's algorithm description, fed the rewards of the engine's own
replications, gives the same pulls, stopping time, answer and tracking state; the epsilon-GLR at
eps = 0 is Chernoff's statistic; T_eps against the closed form; epsilon-correctness by a binomial
test with a mutation that the test catches; refusals; the public entry points."""
from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbandits as jb
from jaxbandits import precision
from jaxbandits.algorithms import KArmedEBTCEpsilon, KArmedTopTwo
from jaxbandits.algorithms.base import answer_mask
from jaxbandits.design import karmed as dk
from jaxbandits.engine import final_states, replication_key, simulate
from jaxbandits.instances import garivier_kaufmann_2016, k_armed
from jaxbandits.rules import compose, sampling
from jaxbandits.rules.core import Context
from jaxbandits.rules.karmed import (ChernoffGLR, EBTCEpsilon, chernoff_statistic, epsilon_glr_statistic,
                                     ids_coin, ids_gaussian_coin)
from jaxbandits.stats import binomial_test_upper, kl_bernoulli


# -- the NumPy reference: one replication, from the paper's algorithm description ------------------
def numpy_eb_tc_epsilon(mu, z, delta, eps, eps0, selection, beta=0.5, sigma=1.0):
    """(tau, answer, counts, leader rounds or cumulative beta, leader self-pulls) of one run of
    EB-TCε whose t-th reward is mu[arm] + sigma z[t]; heuristic threshold log((1 + log t) / delta)."""
    mu = np.asarray(mu, float)
    K = mu.size
    N, S = np.zeros(K), np.zeros(K)
    rounds, own = np.zeros(K), np.zeros(K)
    for t in range(z.size):
        if t < K:
            arm = t
        else:
            m = S / N
            B = int(np.argmax(m))
            ratio = (m[B] - m + eps0) / np.sqrt(1.0 / N[B] + 1.0 / N)
            ratio[B] = np.inf
            C = int(np.argmin(ratio))
            if selection == "ids":
                rounds[B] += N[C] / (N[B] + N[C])
                target = rounds[B]
            else:
                rounds[B] += 1.0
                target = beta * rounds[B]
            if own[B] <= target:
                arm = B
                own[B] += 1.0
            else:
                arm = C
        N[arm] += 1.0
        S[arm] += mu[arm] + sigma * z[t]
        n = t + 1
        if n >= K:
            m = S / N
            b = int(np.argmax(m))
            x = m[b] - m + eps
            Z = np.sign(x) * x * x / (2.0 * sigma**2 * (1.0 / N[b] + 1.0 / N))
            Z[b] = np.inf
            if Z.min() > math.log((1.0 + math.log(n)) / delta):
                return n, b, N, rounds, own
    raise AssertionError("the reference did not stop within the rewards given")


def engine_noise(key, rep: int, steps: int) -> np.ndarray:
    """The standard normal draws behind the rewards of replication ``rep`` of ``simulate(alg, inst,
    key)`` for a deterministic one-pull rule: pull t uses the step's key fold_in(run_key, t)
    (:func:`jaxbandits.engine.replication_key`, ``Composition.step_masked``,
    :func:`jaxbandits.environment.pull`)."""
    _, k_run = jax.random.split(replication_key(key, 0, rep))
    keys = jax.vmap(lambda t: jax.random.fold_in(k_run, t))(jnp.arange(steps))
    return np.asarray(jax.vmap(lambda k: jax.random.normal(k, (), jnp.float64))(keys))


REPLAY_MU = (1.0, 0.9, 0.6, 0.5)


@pytest.mark.parametrize("selection, eps0", [("fixed", 0.0), ("fixed", 0.1), ("ids", 0.0), ("ids", 0.1)])
def test_same_rewards_same_run_as_the_numpy_reference(selection, eps0):
    """Eight replications per configuration (Gaussian (1, 0.9, 0.6, 0.5), sigma = 1, eps = 0.1,
    delta = 0.1): the engine's replications and the NumPy loop fed their rewards agree on the stopping
    time, the answer, every arm's pull count and both tracking arrays."""
    n, delta, eps = 8, 0.1, 0.1
    alg = KArmedEBTCEpsilon(delta=delta, epsilon=eps, epsilon0=eps0, selection=selection)
    inst = k_armed(REPLAY_MU, "gaussian", noise=1.0)
    key = jax.random.key(11)
    res = simulate(alg, inst, key, n_reps=n, max_steps=100_000, record_pulls=True)
    assert bool(np.asarray(res.stopped).all())
    with precision.context("float64"):
        states = final_states(alg, precision.cast_instance(inst, "float64"), jax.random.fold_in(key, 0), n, 100_000)
        for i in range(n):
            tau = int(np.asarray(res.samples).ravel()[i])
            z = engine_noise(key, i, tau)
            t_ref, b_ref, N_ref, rounds_ref, own_ref = numpy_eb_tc_epsilon(REPLAY_MU, z, delta, eps, eps0, selection)
            assert t_ref == tau
            assert int(np.argmax(np.asarray(res.answer)[0, i])) == b_ref
            np.testing.assert_array_equal(np.asarray(res.pulls)[0, i], N_ref)
            np.testing.assert_array_equal(np.asarray(states.belief.stats.counts[i]), N_ref)
            np.testing.assert_allclose(np.asarray(states.sampling.then.rounds[i]), rounds_ref, rtol=1e-12)
            np.testing.assert_array_equal(np.asarray(states.sampling.then.own[i]), own_ref)


# -- the epsilon-GLR at eps = 0 is Chernoff's -------------------------------------------------------
def test_epsilon_glr_at_zero_is_chernoffs_statistic():
    """On 2,000 random Gaussian data sets (K = 5, counts 1..50): the statistic and the recommended
    arm of :func:`epsilon_glr_statistic` at eps = 0 equal :func:`chernoff_statistic`'s bit for bit, so
    every stopping decision is the same; at eps > 0 the statistic is larger."""
    rng = np.random.default_rng(3)
    mu = jnp.asarray(rng.normal(size=(2000, 5)))
    counts = jnp.asarray(rng.integers(1, 51, size=(2000, 5)).astype(float))
    valid = jnp.ones(5, bool)
    with precision.context("float64"):
        ze, be = jax.vmap(lambda m, c: epsilon_glr_statistic(m, c, valid, 0.7, 0.0))(mu, counts)
        zc, bc = jax.vmap(lambda m, c: chernoff_statistic("gaussian", m, c, valid, 0.7))(mu, counts)
        zp, _ = jax.vmap(lambda m, c: epsilon_glr_statistic(m, c, valid, 0.7, 0.1))(mu, counts)
    np.testing.assert_array_equal(np.asarray(ze), np.asarray(zc))
    np.testing.assert_array_equal(np.asarray(be), np.asarray(bc))
    assert bool(jnp.all(zp > ze))
    # the closed form (x^2 / (2 sigma^2 (1/N_b + 1/N_a)))
    m, c = np.asarray(mu[0]), np.asarray(counts[0])
    b = int(np.argmax(m))
    x = m[b] - m + 0.1
    ref = x * x / (2 * 0.49 * (1 / c[b] + 1 / c))
    ref[b] = np.inf
    assert float(zp[0]) == pytest.approx(ref.min(), rel=1e-12)


def test_eps_zero_stops_as_chernoff_glr_with_the_same_sampling():
    """KArmedEBTCEpsilon with epsilon = 0 (eps0 = 0.1) is the sampling rule with Chernoff's
    best-arm stopping rule: the same replications as that composition built by hand."""
    inst = k_armed((0.5, 0.3, 0.2), "gaussian", noise=0.5)
    a = KArmedEBTCEpsilon(delta=0.05, epsilon=0.0, epsilon0=0.1)
    b = compose(sampling.Initial(EBTCEpsilon(epsilon0=0.1), first="all"), ChernoffGLR(), delta=0.05)
    ra, rb = (simulate(x, inst, 5, n_reps=50, max_steps=100_000, record_pulls=True) for x in (a, b))
    np.testing.assert_array_equal(ra.samples, rb.samples)
    np.testing.assert_array_equal(ra.pulls, rb.pulls)
    np.testing.assert_array_equal(ra.answer, rb.answer)


def test_ids_gaussian_coin_is_ids_coin():
    mu = jnp.array([0.7, 0.5, 0.6])
    counts = jnp.array([10.0, 3.0, 30.0])
    for c in (1, 2):
        assert float(ids_gaussian_coin(counts, 0, c)) == pytest.approx(
            float(ids_coin("gaussian", mu, counts, 0, c, 1.3)), rel=1e-12)


# -- T_eps --------------------------------------------------------------------------------------------
def test_epsilon_characteristic_time():
    """T_eps is T* of the shifted instance, decreases in eps, is T* at eps = 0, and on two Gaussian
    arms is 8 sigma^2 / (gap + eps)^2 (w* = (1/2, 1/2))."""
    with precision.context("float64"):
        mu = jnp.array([1.0, 0.95, 0.5, 0.4])
        Ts = [float(dk.epsilon_characteristic_time(mu, e, sigma=0.8)) for e in (0.0, 0.05, 0.1, 0.3)]
        assert Ts[0] == pytest.approx(float(dk.characteristic_time(mu, "gaussian", sigma=0.8)), rel=1e-12)
        assert all(a > b for a, b in zip(Ts, Ts[1:]))
        shifted = jnp.array([1.0, 0.85, 0.4, 0.3])
        assert Ts[2] == pytest.approx(float(dk.characteristic_time(shifted, "gaussian", sigma=0.8)), rel=1e-12)
        for gap, eps, sigma in ((0.2, 0.1, 1.0), (0.05, 0.3, 0.5)):
            sol = dk.epsilon_optimal_weights(jnp.array([0.3, 0.3 - gap]), eps, sigma=sigma)
            np.testing.assert_allclose(np.asarray(sol.allocation), [0.5, 0.5], atol=1e-9)
            assert float(sol.value) == pytest.approx(8 * sigma**2 / (gap + eps) ** 2, rel=1e-9)
            lb = float(dk.epsilon_lower_bound(jnp.array([0.3, 0.3 - gap]), 0.01, eps, sigma=sigma))
            assert lb == pytest.approx(8 * sigma**2 / (gap + eps) ** 2 * kl_bernoulli(0.01, 0.99), rel=1e-9)
        # the best arm need not come first
        assert float(dk.epsilon_characteristic_time(jnp.array([0.2, 0.5]), 0.1)) == pytest.approx(8 / 0.4**2)


# -- epsilon-correctness, with power ------------------------------------------------------------------
CORRECT_MU, CORRECT_EPS, CORRECT_DELTA = (1.0, 0.95, 0.5, 0.4), 0.1, 0.1


@dataclasses.dataclass(frozen=True)
class ThresholdOver10(ChernoffGLR):
    """A mutation: the threshold divided by 10."""

    def beta(self, stats, t, ctx: Context):
        beta, ready = super().beta(stats, t, ctx)
        return beta / 10.0, ready


def _errors(alg, n=300):
    inst = k_armed(CORRECT_MU, "gaussian", noise=1.0)
    res = simulate(alg, inst, 2023, n_reps=n, max_steps=200_000)
    assert bool(np.asarray(res.stopped).all())
    return int(np.sum(~np.asarray(res.correct).ravel())), n


def test_epsilon_correct_and_the_check_has_power():
    """300 runs on Gaussian (1, 0.95, 0.5, 0.4), sigma = 1, eps = 0.1, delta = 0.1 (arms 0 and 1
    epsilon-good, each answered in some runs): answers that are not epsilon-good are not more frequent
    than delta (one-sided exact binomial test at level 1e-3).  The threshold divided by 10 fails
    that test.  (The sign of the slack cannot serve as a mutation: with the empirical best arm as
    the answer, mu_b - mu_a + eps >= 0 always.)  Measured (key 2023): 0 errors in 300 (answers
    243 x arm 0, 57 x arm 1; mean 1,063 pulls); mutated 115 errors in 600 (binomial p = 1e-11)."""
    alg = KArmedEBTCEpsilon(delta=CORRECT_DELTA, epsilon=CORRECT_EPS)
    k, n = _errors(alg)
    assert binomial_test_upper(k, n, CORRECT_DELTA) > 1e-3, k
    mutant = dataclasses.replace(alg.rules(), stopping=ThresholdOver10())
    km, nm = _errors(mutant, 600)
    assert binomial_test_upper(km, nm, CORRECT_DELTA) < 1e-3, km


def test_engine_counts_epsilon_good_answers_as_correct():
    """The slack reaches the engine's correctness check (``Algorithm.slack``): an answer within
    epsilon of the best counts, one further away does not."""
    inst = k_armed((1.0, 0.95, 0.5), "gaussian", noise=1.0)
    alg = KArmedEBTCEpsilon(epsilon=0.1)
    assert alg.slack == 0.1
    ok = [bool(jb.algorithms.is_correct(answer_mask(jnp.int32(a), 3), inst, 1, alg.slack)) for a in range(3)]
    assert ok == [True, True, False]


# -- refusals -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, shown", [
    (dict(epsilon=-0.1), "KArmedEBTCEpsilon.epsilon must be"),
    (dict(epsilon0=-0.2), "epsilon0 must be"),
    (dict(selection="fixed", beta=1.0), "beta must be a number in (0, 1), got 1.0"),
    (dict(beta=0.0), "beta must be a number in (0, 1), got 0.0"),
])
def test_bad_numbers_refused_before_compiling(kwargs, shown):
    inst = k_armed(REPLAY_MU, "gaussian")
    with pytest.raises(ValueError) as e:
        simulate(KArmedEBTCEpsilon(**kwargs), inst, 0, n_reps=2, max_steps=10)
    assert shown in str(e.value), str(e.value)


def test_bad_options_and_instances_refused():
    with pytest.raises(ValueError, match=r"selection must be one of \('fixed', 'ids'\), got 'coin'"):
        KArmedEBTCEpsilon(selection="coin")
    with pytest.raises(ValueError, match=r"threshold must be one of .*'heuristic'.*got 'gk16'"):
        KArmedEBTCEpsilon(threshold="gk16")
    with pytest.raises(ValueError, match="selection must be one of"):
        EBTCEpsilon(selection="tracking")
    with pytest.raises(ValueError, match=r"KArmedEBTCEpsilon \(EB-TCε\) is for Gaussian arms.*'bernoulli'"):
        simulate(KArmedEBTCEpsilon(), garivier_kaufmann_2016(1), 0, n_reps=2, max_steps=10)
    # a composition with a slack on Bernoulli arms: ChernoffGLR refuses it
    bern = compose(sampling.Initial(KArmedTopTwo().rules().sampling.then, first="all"), ChernoffGLR(), epsilon=0.1)
    with pytest.raises(ValueError, match=r"ChernoffGLR: epsilon = 0.1 .* Gaussian arms only"):
        simulate(bern, garivier_kaufmann_2016(1), 0, n_reps=2, max_steps=10)


# -- the public entry points ----------------------------------------------------------------------------
def test_public_entry_points(tmp_path):
    """simulate, sweep (over epsilon: the slack of each row reaches its correctness check), the
    calibration suite's case (epsilon scaled with the grid, the T_eps lower bound) and the K-armed
    benchmark's registry entry."""
    from jaxbandits import benchmarking as bm
    from jaxbandits import calibration as cal

    assert jb.algorithms.KArmedEBTCEpsilon is KArmedEBTCEpsilon
    gen = jb.Generator("near-optimal", lambda key: k_armed((1.0, 0.95, 0.5, 0.4), "gaussian", noise=0.5))
    df = jb.sweep({"EB-TCε": KArmedEBTCEpsilon()}, gen, deltas=[0.1], n_reps=20, key=0, max_steps=100_000,
                  progress=False)
    assert len(df) == 20 and bool(df["stopped"].all())
    # every answer is arm 0 or arm 1; arm 1 (gap 0.05) counts as correct
    assert bool(df["correct"].all())

    case = cal.case_by_label("EB-TCε (IDS) [K-armed]")
    assert case.algorithm(0.05, noise=3.0).epsilon == pytest.approx(cal.EPSILON_K_ARMED * 6.0)
    assert case.algorithm(0.05, sigma=1.0, noise=3.0).sigma == 1.0
    lb = cal.lower_bound("k_armed", 0.05, case.epsilon)
    assert lb < cal.lower_bound("k_armed", 0.05)
    res = simulate(case.algorithm(0.05, noise=3.0), cal.calibration_instance("k_armed", 3.0), 1, n_reps=40,
                   max_steps=case.max_steps)
    row = cal.calibration_row(case, 3.0, 0.05, res.samples.ravel(), res.correct.ravel(), res.stopped.ravel(),
                              lower_bound=lb)
    assert row["verdict"] == "pass", row
    assert row["ratio_LB"] > 1.0

    make = bm.SUITES["k-armed"].baselines["EB-TC-epsilon (IDS)"]
    assert isinstance(make(0.1), KArmedEBTCEpsilon)
    assert "EB-TC-epsilon (IDS)" not in bm.SUITES["k-armed-bernoulli"].baselines
    rep = jb.benchmark({"mine": KArmedEBTCEpsilon()}, "k-armed", size="quick", out=tmp_path, baselines=False,
                       progress=False, figures=False)
    assert len(rep.table) > 0
