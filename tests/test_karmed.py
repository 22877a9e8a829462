"""K-armed bandits in one-parameter exponential families: the divergences, the certified solver of
w*(mu) and T*(mu) (Garivier & Kaufmann 2016, Lemma 3 / Theorem 5) against a NumPy / scipy
reference, and the K-armed instances."""
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import brentq

import jaxbandits  # noqa: F401
from jaxbandits.design import karmed
from jaxbandits.instances import GARIVIER_KAUFMANN_2016, garivier_kaufmann_2016, k_armed
from karmed_support import ref, two_sample_z


# -- a plain NumPy / scipy reference: Garivier & Kaufmann 2016, Lemma 3 and Theorem 5 ----------------
def d_ref(family, x, y, sigma=1.0):
    if family == "gaussian":
        return (x - y) ** 2 / (2 * sigma**2)
    e = 1e-15
    x, y = min(max(x, e), 1 - e), min(max(y, e), 1 - e)
    return x * math.log(x / y) + (1 - x) * math.log((1 - x) / (1 - y))


def reference(mu, family="bernoulli", sigma=1.0):
    """(w*, T*) by nested brentq, the arms sorted as in the paper (best first)."""
    mu = np.asarray(mu, float)
    order = np.argsort(-mu)
    m = mu[order]

    def g(a, x):
        mid = (m[0] + x * m[a]) / (1 + x)
        return d_ref(family, m[0], mid, sigma) + x * d_ref(family, m[a], mid, sigma)

    def x_of_y(a, y):
        hi = 1.0
        while g(a, hi) < y:
            hi *= 2
        return brentq(lambda x: g(a, x) - y, 0.0, hi, xtol=1e-15, rtol=1e-15)

    def F(y):
        tot = 0.0
        for a in range(1, len(m)):
            x = x_of_y(a, y)
            mid = (m[0] + x * m[a]) / (1 + x)
            tot += d_ref(family, m[0], mid, sigma) / d_ref(family, m[a], mid, sigma)
        return tot - 1.0

    ymax = d_ref(family, m[0], m[1], sigma)
    hi = 0.5 * ymax
    while F(hi) < 0:
        hi = 0.5 * (hi + ymax)
    y = brentq(F, 1e-14 * ymax, hi, xtol=1e-16, rtol=1e-15)
    x = np.array([1.0] + [x_of_y(a, y) for a in range(1, len(m))])
    w = x / x.sum()
    out = np.empty_like(w)
    out[order] = w
    return out, 1.0 / (w[0] * y)


CASES = [("bernoulli", GARIVIER_KAUFMANN_2016[1], 1.0), ("bernoulli", GARIVIER_KAUFMANN_2016[2], 1.0),
         ("bernoulli", (0.05, 0.9, 0.6, 0.89, 0.2, 0.001), 1.0), ("bernoulli", (0.999, 0.5), 1.0),
         ("gaussian", (1.0, 0.8, 0.5, 0.2, 0.0), 1.0), ("gaussian", (-0.3, 0.4, 0.35, 2.0), 0.5)]


@pytest.mark.parametrize("family,mu,sigma", CASES)
def test_optimal_weights_match_the_scipy_reference(family, mu, sigma):
    sol = karmed.optimal_weights(jnp.asarray(mu), family, sigma=sigma)
    w_ref, T_ref = reference(mu, family, sigma)
    np.testing.assert_allclose(np.asarray(sol.allocation), w_ref, atol=1e-7)
    np.testing.assert_allclose(float(sol.value), T_ref, rtol=1e-7)
    assert bool(sol.converged)
    # the certificate brackets the reference: T*(w) - gap <= T* <= T*(w)
    assert float(sol.value) - float(sol.gap) <= T_ref * (1 + 1e-9) and T_ref <= float(sol.value) * (1 + 1e-9)


def test_the_paper_s_optimal_proportions():
    """Garivier & Kaufmann 2016, Sec 6: w*(mu1) = [0.417 0.390 0.136 0.057],
    w*(mu2) = [0.336 0.251 0.177 0.132 0.104]."""
    for scenario, published in ((1, [0.417, 0.390, 0.136, 0.057]), (2, [0.336, 0.251, 0.177, 0.132, 0.104])):
        w = karmed.optimal_weights(jnp.asarray(GARIVIER_KAUFMANN_2016[scenario])).allocation
        np.testing.assert_allclose(np.asarray(w), published, atol=5e-4 + 1e-12)


def test_gaussian_two_arms_closed_form_and_sigma_scaling():
    """K = 2, Gaussian: w* = (1/2, 1/2) and T* = 8 sigma^2 / Delta^2."""
    for sigma, gap in ((1.0, 0.5), (2.0, 0.1), (0.3, 1.7)):
        sol = karmed.optimal_weights(jnp.array([gap, 0.0]), "gaussian", sigma=sigma)
        np.testing.assert_allclose(np.asarray(sol.allocation), [0.5, 0.5], atol=1e-12)
        np.testing.assert_allclose(float(sol.value), 8 * sigma**2 / gap**2, rtol=1e-10)


def test_the_certificate_is_a_duality_gap():
    """At a perturbed allocation the primal value falls below the dual bound: the gap shows it;
    at the solution both meet (module docstring of jaxbandits.design.karmed)."""
    mu = jnp.asarray(GARIVIER_KAUFMANN_2016[2])
    sol = karmed.optimal_weights(mu)
    others = jnp.arange(5) > 0
    L, U = karmed.certificate("bernoulli", mu, sol.allocation, 0, others)
    np.testing.assert_allclose(float(L), float(U), rtol=1e-9)
    w_bad = jnp.full((5,), 0.2)
    L2, U2 = karmed.certificate("bernoulli", mu, w_bad, 0, others)
    assert float(L2) < float(L) < float(U2)          # weak duality, strict away from the optimum


def test_ties_masks_and_batches():
    sol = karmed.optimal_weights(jnp.array([0.5, 0.2, 0.5, 0.1]))
    assert math.isinf(float(sol.value)) and bool(sol.converged)
    np.testing.assert_allclose(np.asarray(sol.allocation), [0.5, 0, 0.5, 0])
    # a padded arm gets no weight and changes nothing
    mu = jnp.asarray(GARIVIER_KAUFMANN_2016[1] + (0.99,))
    masked = karmed.optimal_weights(mu, mask=jnp.array([True] * 4 + [False]))
    plain = karmed.optimal_weights(jnp.asarray(GARIVIER_KAUFMANN_2016[1]))
    np.testing.assert_allclose(np.asarray(masked.allocation[:4]), np.asarray(plain.allocation), atol=1e-12)
    assert float(masked.allocation[4]) == 0.0
    # jit + vmap over a batch: the single solves, and no recompilation on a second batch
    batch = jax.random.uniform(jax.random.key(0), (64, 6), jnp.float64, 0.05, 0.95)
    solve = jax.jit(jax.vmap(lambda m: karmed.optimal_weights(m)))
    out = solve(batch)
    for i in (0, 17, 63):
        one = karmed.optimal_weights(batch[i])
        np.testing.assert_allclose(np.asarray(out.allocation[i]), np.asarray(one.allocation), atol=1e-12)
    assert bool(jnp.mean(out.converged) >= 0.95)
    solve(batch[::-1])
    assert solve._cache_size() == 1
    before = karmed.optimal_weights._cache_size()
    karmed.optimal_weights(batch[5])                  # the public entry is compiled once per shape
    assert karmed.optimal_weights._cache_size() == before


def test_lower_bound_and_characteristic_time():
    mu = jnp.asarray([GARIVIER_KAUFMANN_2016[1], (0.6, 0.45, 0.43, 0.4)])
    T = karmed.characteristic_time(mu)
    assert T.shape == (2,) and float(T[1]) < float(T[0])
    kl = 0.1 * math.log(0.1 / 0.9) + 0.9 * math.log(0.9 / 0.1)
    np.testing.assert_allclose(float(karmed.lower_bound(mu[0], 0.1)), float(T[0]) * kl, rtol=1e-12)


def test_epsilon_projection_is_the_linf_projection():
    w = jnp.array([0.7, 0.25, 0.05, 0.0])
    v = karmed.epsilon_projection(w, 0.1)
    np.testing.assert_allclose(float(jnp.sum(v)), 1.0, rtol=1e-12)
    assert float(jnp.min(v)) >= 0.1 - 1e-12
    # the L-infinity distance is the smallest possible: max(eps - min w, h) (docstring)
    dist = float(jnp.max(jnp.abs(v - w)))
    assert dist <= 0.1 + 1e-9
    np.testing.assert_allclose(np.asarray(karmed.epsilon_projection(jnp.array([0.4, 0.3, 0.3]), 0.1)), [0.4, 0.3, 0.3],
                               atol=1e-12)


def test_k_armed_instances():
    inst = garivier_kaufmann_2016(2)
    assert inst.model == "bernoulli" and inst.num_arms == 5 and inst.dim == 5
    np.testing.assert_allclose(np.asarray(inst.arm_means()), GARIVIER_KAUFMANN_2016[2])
    g = k_armed([1.0, 0.0, 0.5], "gaussian", noise=2.0)
    assert g.model == "gaussian" and float(g.noise) == 2.0
    assert k_armed(np.full((3, 4), 0.5), "bernoulli").batch_shape == (3,)
    with pytest.raises(ValueError, match="Bernoulli means must lie in"):
        k_armed([0.5, 1.2])
    with pytest.raises(ValueError, match="model must be one of"):
        k_armed([0.5, 0.2], "poisson")
    with pytest.raises(ValueError, match="scenario must be one of"):
        garivier_kaufmann_2016(3)


# -- Track-and-Stop with Chernoff's stopping rule ---------------------------------------------------
import dataclasses  # noqa: E402

from jaxbandits.algorithms import KArmedTrackAndStop  # noqa: E402
from jaxbandits.algorithms.base import hyperparameter  # noqa: E402
from jaxbandits.engine import simulate  # noqa: E402
from jaxbandits.rules import compose, sampling  # noqa: E402
from jaxbandits.rules.karmed import ChernoffGLR, TrackAndStop  # noqa: E402
from jaxbandits.stats import binomial_test_upper  # noqa: E402

#: the band of the independent NumPy implementation of the authors' Track-and-Stop (D-tracking,
#: beta = log((log t + 1) / delta)) on Bernoulli mu = [0.7, 0.5, 0.4], delta = 0.1:
#: ``python benchmarks/karmed_reference.py 700 2026`` -> mean 201.619 +- 5.557 (sd 147.02, 700 runs,
#: 1 error)
REFERENCE_MU, REFERENCE_DELTA = (0.7, 0.5, 0.4), 0.1
REFERENCE_BAND = (201.619, 5.557)


@dataclasses.dataclass(frozen=True)
class ShrunkChernoff(ChernoffGLR):
    """Chernoff's stopping rule with its threshold divided by ``factor`` (a mutation)."""

    factor: float = hyperparameter(10.0, low=0.0, traced=True)

    def beta(self, stats, t, ctx):
        b, ready = super().beta(stats, t, ctx)
        return b / self.factor, ready

    def decide(self, stats, t, ctx):
        d = super().decide(stats, t, ctx)
        return d._replace(beta=d.beta / self.factor)


def _run(alg, inst, n, key=0, **kw):
    res = simulate(alg, inst, key, n_reps=n, max_steps=200_000, **kw)
    samples = np.asarray(res.samples, float).ravel()
    errors = int(np.sum(~np.asarray(res.correct).ravel()))
    assert bool(np.asarray(res.stopped).all())
    return samples, errors, res


def _band_z(samples):
    ref_mean, ref_se = REFERENCE_BAND
    return (samples.mean() - ref_mean) / math.hypot(samples.std(ddof=1) / math.sqrt(samples.size), ref_se)


def test_track_and_stop_is_delta_correct_and_in_the_reference_band():
    """D-tracking Track-and-Stop (the paper's experiments' algorithm), 400 runs at delta = 0.1:
    the error rate is not above delta (binomial test at level 1e-3) and the mean stopping time is
    two-sided within 3.5 combined SE of the independent NumPy implementation's (REFERENCE_BAND).
    The checks have power: with the threshold divided by 10 the runs err too often, divided or
    multiplied by 1.5 the mean leaves the band."""
    inst, delta = k_armed(REFERENCE_MU), REFERENCE_DELTA
    samples, errors, res = _run(KArmedTrackAndStop(delta=delta), inst, 400)
    assert binomial_test_upper(errors, samples.size, delta) > 1e-3, errors
    z = _band_z(samples)
    assert abs(z) < 3.5, (samples.mean(), z)
    assert bool(np.asarray(res.converged).all())
    # every run is above the lower bound on average (Theorem 1)
    assert samples.mean() > float(karmed.lower_bound(jnp.asarray(REFERENCE_MU), delta))
    # mutations, one compiled program for every factor (a traced field): threshold / 10 errs too
    # often (measured: 174 errors in 400 runs); threshold / 1.5 and x 1.5 leave the band (measured:
    # means 53 and 486 against 202, z = -23 and +23 with 400 runs)
    shrunk = lambda f: compose(sampling.Initial(TrackAndStop()), ShrunkChernoff(factor=f), delta=delta)  # noqa: E731
    s10, e10, _ = _run(shrunk(10.0), inst, 200)
    assert binomial_test_upper(e10, s10.size, delta) < 1e-3, e10
    low, _, _ = _run(shrunk(1.5), inst, 200)
    assert _band_z(low) < -3.5, (low.mean(), _band_z(low))
    high, _, _ = _run(shrunk(1 / 1.5), inst, 200)
    assert _band_z(high) > 3.5, (high.mean(), _band_z(high))


def test_the_named_algorithm_is_its_composition():
    alg = KArmedTrackAndStop(delta=REFERENCE_DELTA)
    comp = alg.rules()
    assert isinstance(comp.sampling.then, TrackAndStop) and comp.sampling.first == "all"
    assert isinstance(comp.stopping, ChernoffGLR) and comp.stopping.threshold == "heuristic"
    inst = k_armed(REFERENCE_MU)
    a = simulate(alg, inst, 3, n_reps=4, max_steps=100_000)
    b = simulate(comp, inst, 3, n_reps=4, max_steps=100_000)
    np.testing.assert_array_equal(np.asarray(a.samples), np.asarray(b.samples))


def test_c_tracking_and_gaussian_arms():
    """C-tracking errs no more than delta (150 runs); on Gaussian arms the stopping time scales
    with sigma^2 (T* = sigma^2 T*_1): sigma = 0.5 on means (1, 0.5, 0.25) stops like sigma = 1 on
    (2, 1, 0.5) (the same instance in units of sigma), replication for replication."""
    delta = 0.1
    inst = k_armed(REFERENCE_MU)
    samples, errors, _ = _run(KArmedTrackAndStop(delta=delta, tracking="C"), inst, 150)
    assert binomial_test_upper(errors, samples.size, delta) > 1e-3, errors
    small = k_armed([1.0, 0.5, 0.25], "gaussian", noise=0.5)
    unit = k_armed([2.0, 1.0, 0.5], "gaussian", noise=1.0)
    a, ea, _ = _run(KArmedTrackAndStop(delta=delta), small, 60)
    b, eb, _ = _run(KArmedTrackAndStop(delta=delta), unit, 60)
    np.testing.assert_allclose(a, b, rtol=0.02)
    assert binomial_test_upper(ea, a.size, delta) > 1e-3
    assert a.mean() > float(karmed.lower_bound(jnp.array([1.0, 0.5, 0.25]), delta, "gaussian", sigma=0.5))


def test_refusals_name_the_argument():
    from jaxbandits.instances.base import make_instance

    linear = make_instance(jnp.array([[1.0, 0.0], [0.0, 1.0], [0.7, 0.7]]), jnp.array([1.0, 0.5]))
    with pytest.raises(ValueError, match="K-armed bandits"):
        KArmedTrackAndStop().validate(linear)
    with pytest.raises(ValueError, match="threshold='gk16'"):
        KArmedTrackAndStop(threshold="gk16").validate(k_armed([1.0, 0.0], "gaussian"))
    with pytest.raises(ValueError, match="tracking must be one of"):
        KArmedTrackAndStop(tracking="E")
    with pytest.raises(ValueError, match="threshold must be one of"):
        KArmedTrackAndStop(threshold="lts")
    with pytest.raises(ValueError, match="delta"):
        simulate(KArmedTrackAndStop(delta=1.5), k_armed(REFERENCE_MU), 0, n_reps=2, max_steps=10)
    with pytest.raises((ValueError, TypeError), match="outer"):
        simulate(KArmedTrackAndStop(outer=0), k_armed(REFERENCE_MU), 0, n_reps=2, max_steps=10)


@pytest.mark.parametrize("leader", ["EB", "TS"])
def test_top_two_is_delta_correct(leader):
    """EB-TC and T3C with Chernoff's stopping rule (200 runs, delta = 0.1): the error rate is not
    above delta (binomial test at level 1e-3), the mean is above the lower bound, and the rule
    samples as Top Two does: the leader about half the time (beta = 1/2), so the best arm gets
    about half of the pulls, near w*_1 = 0.453 on this instance.  T3C's mean is two-sided within
    3.5 combined SE of the independent NumPy implementation (``benchmarks/karmed_reference.py``,
    :func:`thompson_top_two`, 2,000 runs)."""
    from jaxbandits.algorithms import KArmedTopTwo

    inst, delta = k_armed(REFERENCE_MU), REFERENCE_DELTA
    samples, errors, res = _run(KArmedTopTwo(delta=delta, leader=leader), inst, 200, record_pulls=True)
    assert binomial_test_upper(errors, samples.size, delta) > 1e-3, errors
    assert samples.mean() > float(karmed.lower_bound(jnp.asarray(REFERENCE_MU), delta))
    pulls = np.asarray(res.pulls).reshape(200, -1)
    share = pulls[:, 0].sum() / pulls.sum()
    assert 0.4 < share < 0.56, share
    if leader == "TS":
        theirs, _ = ref.thompson_top_two(np.random.default_rng(1), np.asarray(REFERENCE_MU), delta, 2000)
        assert abs(two_sample_z(samples, theirs)) < 3.5, (samples.mean(), theirs.mean())


def test_kl_lucb_is_delta_correct_and_pulls_in_pairs():
    """KL-LUCB (Kaufmann & Kalyanakrishnan 2013) with the bounds at log((log t + 1)/delta), 200
    runs: error rate not above delta (binomial test at level 1e-3), mean above the lower bound, and
    it stops only at the end of a round of two pulls after the K initial ones; the mean is two-sided
    within 3.5 combined SE of the independent NumPy implementation (:func:`kl_lucb`, 2,000 runs),
    and the bounds' level x 1.5 leaves that band."""
    from jaxbandits.algorithms import KArmedKLLUCB

    inst, delta = k_armed(REFERENCE_MU), REFERENCE_DELTA
    samples, errors, _ = _run(KArmedKLLUCB(delta=delta), inst, 200)
    assert binomial_test_upper(errors, samples.size, delta) > 1e-3, errors
    assert samples.mean() > float(karmed.lower_bound(jnp.asarray(REFERENCE_MU), delta))
    assert np.all((samples - len(REFERENCE_MU)) % 2 == 0)
    theirs, _ = ref.kl_lucb(np.random.default_rng(1), np.asarray(REFERENCE_MU), delta, 2000)
    assert abs(two_sample_z(samples, theirs)) < 3.5, (samples.mean(), theirs.mean())
    # delta^1.5 raises log(1/delta) by half: the mutation leaves the band
    mutant, _ = ref.kl_lucb(np.random.default_rng(2), np.asarray(REFERENCE_MU), delta**1.5, 2000)
    assert abs(two_sample_z(samples, mutant)) > 3.5, (samples.mean(), mutant.mean())


def test_the_vectorised_reference_w_star_is_brentq_s():
    """``benchmarks/karmed_reference.py``: the w* of its vectorised Track-and-Stop (bisection on
    log s, Illinois on log(F + 1)) equals the nested-brentq w* of the per-replication reference to
    1e-9 on 200 random Bernoulli mean vectors whose top two are at least 0.01 apart."""
    rng = np.random.default_rng(5)
    M = rng.uniform(0.02, 0.98, (400, 5))
    top2 = np.sort(M, axis=1)[:, -2:]
    M = M[top2[:, 1] - top2[:, 0] > 0.01][:200]
    W = ref.optimal_weights_bisection(M)
    exact = np.array([ref.optimal_weights(m) for m in M])
    np.testing.assert_allclose(W, exact, atol=1e-9)


def test_successive_elimination_matches_the_numpy_algorithm():
    """Successive Elimination (200 runs) against a NumPy implementation of the paper's Algorithm 3
    (4,000 runs): the mean number of samples two-sided within 3.5 combined SE, no error (delta-correct
    by construction, binomial test); the paper's alpha_t for rewards in [0, 1] is ours at sigma = 1/2."""
    from jaxbandits.algorithms import SuccessiveElimination

    inst, delta = k_armed(REFERENCE_MU), REFERENCE_DELTA
    samples, errors, _ = _run(SuccessiveElimination(delta=delta), inst, 200)
    theirs, best = ref.successive_elimination(np.random.default_rng(0), np.asarray(REFERENCE_MU), delta, 4000)
    z = two_sample_z(samples, theirs)
    assert abs(z) < 3.5, (samples.mean(), theirs.mean(), z)
    assert binomial_test_upper(errors, samples.size, delta) > 1e-3
    assert np.mean(best != 0) < delta


def test_ttts_challenger_law_and_delta_correctness():
    """TTTS's challenger is drawn from the posterior law of the best arm conditioned on not being
    the leader: the quadrature of those probabilities matches a Monte Carlo estimate (Beta and
    normal posteriors), and TTTS on Gaussian arms is delta-correct (150 runs, binomial test)."""
    from jaxbandits.algorithms import KArmedTopTwo, common
    from jaxbandits.rules.karmed import posterior_argmax_logprob

    rng = np.random.default_rng(0)
    counts, sums = np.array([20.0, 30.0, 10.0]), np.array([14.0, 15.0, 4.0])
    stats = common.LinearStats(jnp.asarray(counts), jnp.asarray(sums), None, None)
    draws = {"bernoulli": rng.beta(1 + sums, 1 + counts - sums, size=(200_000, 3)),
             "gaussian": sums / counts + 0.5 / np.sqrt(counts) * rng.standard_normal((200_000, 3))}
    for family, d in draws.items():
        p = np.exp(np.asarray(posterior_argmax_logprob(family, stats, 0.5, jnp.ones(3, bool))))
        mc = np.bincount(d.argmax(axis=1), minlength=3) / d.shape[0]
        tol = 4 * np.sqrt(mc * (1 - mc) / d.shape[0]) + 1e-4
        assert np.all(np.abs(p - mc) <= tol), (family, p, mc)
        np.testing.assert_allclose(p.sum(), 1.0, atol=1e-5)
    inst, delta = k_armed([1.0, 0.5, 0.25], "gaussian", noise=0.5), REFERENCE_DELTA
    samples, errors, res = _run(KArmedTopTwo(delta=delta, leader="TS", challenger="TS"), inst, 150)
    assert binomial_test_upper(errors, samples.size, delta) > 1e-3, errors
    assert bool(np.asarray(res.converged).all())
