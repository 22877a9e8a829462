"""LUCB1 and lil'UCB on K-armed bandits: delta-correctness (binomial test), the mean stopping time
two-sided against the independent NumPy implementations of ``benchmarks/karmed_reference.py``
(written from the papers), and mutations of the confidence level that the band check catches."""
from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np
import pytest

from jaxbandits.algorithms import KArmedLilUCB, KArmedLUCB1
from jaxbandits.algorithms.base import hyperparameter
from jaxbandits.engine import simulate
from jaxbandits.instances import k_armed
from jaxbandits.rules import compose, sampling
from jaxbandits.rules.karmed import LilUCB, LilUCBStop, LUCB1, LUCB1Stop
from jaxbandits.stats import binomial_test_upper
from karmed_support import ref, stopped_samples, two_sample_z


GAUSS_MU, SIGMA = (1.0, 0.5, 0.25), 0.5
BERN_MU = (0.7, 0.5, 0.4)
DELTA = 0.1


_run, _z = stopped_samples, two_sample_z


# -- mutations: the confidence level times a factor ------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class ScaledLUCB1(LUCB1):
    factor: float = hyperparameter(1.0, low=0.0, traced=True)

    def level(self, t, ctx):
        return super().level(t, ctx) * self.factor


@dataclasses.dataclass(frozen=True)
class ScaledLUCB1Stop(LUCB1Stop):
    factor: float = hyperparameter(1.0, low=0.0, traced=True)

    def level(self, t, ctx):
        return super().level(t, ctx) * self.factor


@dataclasses.dataclass(frozen=True)
class ScaledLilUCB(LilUCB):
    """The log-log term of the width times ``factor`` (the width times sqrt(factor))."""

    factor: float = hyperparameter(1.0, low=0.0, traced=True)

    def width(self, counts, ctx):
        return super().width(counts, ctx) * jnp.sqrt(self.factor)


def test_lucb1_is_delta_correct_and_matches_the_paper():
    """LUCB1 on Gaussian arms (sigma = 1/2, means (1, 0.5, 0.25), delta = 0.1), 300 runs: error
    rate not above delta (binomial test at level 1e-3), mean stopping time two-sided within 3.5
    combined SE of the NumPy implementation of the paper (4,000 runs; measured 452.4 +- 5.6 against
    457.5 +- 1.5, z = -0.9; mutants 279.7 and 730.3, z = -31 and +32), stops only at the end of a round; on Bernoulli arms the bounds use
    sigma = 1/2 (the paper's rewards in [0, 1]; measured 3809 +- 40 against 3773 +- 29 on 2,000
    runs).  Mutations: beta / 1.5 and beta x 1.5 leave the band."""
    inst = k_armed(GAUSS_MU, "gaussian", noise=SIGMA)
    samples, errors = _run(KArmedLUCB1(delta=DELTA), inst, 300)
    assert binomial_test_upper(errors, samples.size, DELTA) > 1e-3, errors
    assert np.all((samples - len(GAUSS_MU)) % 2 == 0)
    rng = np.random.default_rng(0)
    tau, best = ref.lucb1(rng, GAUSS_MU, DELTA, 4000, gaussian=True, sigma=SIGMA)
    assert np.mean(best != 0) < DELTA
    assert abs(_z(samples, tau)) < 3.5, (samples.mean(), tau.mean(), _z(samples, tau))
    mutant = lambda f: compose(sampling.Initial(ScaledLUCB1(factor=f)), ScaledLUCB1Stop(factor=f),  # noqa: E731
                               delta=DELTA)
    low, _ = _run(mutant(1 / 1.5), inst, 200)
    high, _ = _run(mutant(1.5), inst, 200)
    assert _z(low, tau) < -3.5, (low.mean(), _z(low, tau))
    assert _z(high, tau) > 3.5, (high.mean(), _z(high, tau))
    # Bernoulli arms: sigma = 1/2 in the Hoeffding bounds
    bern, errors = _run(KArmedLUCB1(delta=DELTA), k_armed(BERN_MU), 150)
    tau_b, _ = ref.lucb1(rng, BERN_MU, DELTA, 1000)
    assert binomial_test_upper(errors, bern.size, DELTA) > 1e-3
    assert abs(_z(bern, tau_b)) < 3.5, (bern.mean(), tau_b.mean())


@pytest.mark.parametrize("preset", ["paper", "heuristic"])
def test_lil_ucb_is_delta_correct_and_matches_the_paper(preset):
    """lil'UCB (300 runs, delta = 0.1): the paper's constants on Gaussian arms (sigma = 1/2, means
    (1, 0.5, 0.25); measured 245.7 +- 6.3 against the NumPy implementation's 246.5 +- 1.7,
    z = -0.1; mutants 115.5 and 562.3) and the heuristic's on Bernoulli arms (0.7, 0.5, 0.4)
    (measured 465.8 +- 15.1 against 448.7 +- 4.0, z = 1.1; mutants 212.7 and 956.8): error rate
    not above delta (binomial test at level 1e-3), mean stopping time
    two-sided within 3.5 combined SE of the NumPy implementation (4,000 runs).  Mutations: the
    log-log term / 2 and x 2 leave the band."""
    if preset == "paper":
        inst, mu, kw = k_armed(GAUSS_MU, "gaussian", noise=SIGMA), GAUSS_MU, dict(gaussian=True, sigma=SIGMA)
    else:
        inst, mu, kw = k_armed(BERN_MU), BERN_MU, dict(sigma=0.5)
    alg = KArmedLilUCB(delta=DELTA, preset=preset)
    c = alg.constants()
    K = len(mu)
    lam = c["lam"] + c["lam_per_arm"] / K
    samples, errors = _run(alg, inst, 300)
    assert binomial_test_upper(errors, samples.size, DELTA) > 1e-3, errors
    rng = np.random.default_rng(1)
    tau, best = ref.lil_ucb(rng, mu, c["delta_factor"] * DELTA, 4000, eps=c["eps"], beta=c["beta"], lam=lam, **kw)
    assert np.mean(best != 0) < DELTA
    assert abs(_z(samples, tau)) < 3.5, (samples.mean(), tau.mean(), _z(samples, tau))
    comp = alg.rules()
    mutant = lambda f: compose(  # noqa: E731
        sampling.Initial(ScaledLilUCB(eps=c["eps"], beta=c["beta"], delta_factor=c["delta_factor"], factor=f)),
        comp.stopping, delta=DELTA)
    low, _ = _run(mutant(0.5), inst, 200)
    high, _ = _run(mutant(2.0), inst, 200)
    assert _z(low, tau) < -3.5, (low.mean(), _z(low, tau))
    assert _z(high, tau) > 3.5, (high.mean(), _z(high, tau))


def test_named_algorithms_are_their_compositions_and_refuse_bad_arguments():
    lucb = KArmedLUCB1(delta=DELTA).rules()
    assert isinstance(lucb.sampling.then, LUCB1) and isinstance(lucb.stopping, LUCB1Stop)
    lil = KArmedLilUCB(delta=DELTA).rules()
    assert isinstance(lil.sampling.then, LilUCB) and isinstance(lil.stopping, LilUCBStop)
    assert lil.stopping.lam == 9.0 and lil.sampling.then.eps == 0.01 and lil.sampling.then.beta == 1.0
    heur = KArmedLilUCB(delta=DELTA, preset="heuristic").rules()
    assert (heur.stopping.lam, heur.stopping.lam_per_arm, heur.sampling.then.delta_factor) == (1.0, 10.0, 0.2)
    assert KArmedLilUCB(beta=0.5).constants()["lam"] == 25.0
    inst = k_armed(BERN_MU)
    with pytest.raises(ValueError, match="threshold must be one of"):
        KArmedLUCB1(threshold="gk16")
    with pytest.raises(ValueError, match="preset must be one of"):
        KArmedLilUCB(preset="theory")
    for bad, field in ((KArmedLilUCB(eps=-0.1), "eps"), (KArmedLilUCB(beta=0.0), "beta"),
                       (KArmedLilUCB(lam=-1.0), "lam"), (KArmedLUCB1(delta=1.5), "delta"),
                       (KArmedLilUCB(delta=0.0), "delta")):
        with pytest.raises(ValueError, match=field):
            simulate(bad, inst, 0, n_reps=2, max_steps=10)
    from jaxbandits.instances.base import make_instance

    linear = make_instance(jnp.array([[1.0, 0.0], [0.0, 1.0], [0.7, 0.7]]), jnp.array([1.0, 0.5]))
    for alg in (KArmedLUCB1(), KArmedLilUCB()):
        with pytest.raises(ValueError, match="K-armed bandits"):
            alg.validate(linear)


def test_bounded_beta_sampler_has_the_beta_law_and_serves_the_thompson_leader():
    """The fixed-trip Beta sampler (Marsaglia & Tsang with 8 proposals per Gamma draw): 40,000
    draws of each of Beta(1, 1), Beta(3, 8), Beta(40, 2) and Beta(1000, 700) pass a
    Kolmogorov-Smirnov test against scipy's law (p > 1e-3) with no failed draw; T3C on Bernoulli
    arms with it is delta-correct (150 runs, binomial test) and reports convergence."""
    import jax
    from scipy import stats as sps

    from jaxbandits.algorithms import KArmedTopTwo
    from jaxbandits.rules.karmed import beta_bounded

    for i, (a, b) in enumerate([(1.0, 1.0), (3.0, 8.0), (40.0, 2.0), (1000.0, 700.0)]):
        x, ok = beta_bounded(jax.random.key(i), jnp.full((40_000,), a), jnp.full((40_000,), b))
        assert bool(np.all(np.asarray(ok)))
        p = sps.kstest(np.asarray(x, float), sps.beta(a, b).cdf).pvalue
        assert p > 1e-3, (a, b, p)
    res = simulate(KArmedTopTwo(delta=DELTA, leader="TS", beta_sampler="bounded"), k_armed(BERN_MU), 0,
                   n_reps=150, max_steps=200_000)
    errors = int(np.sum(~np.asarray(res.correct)))
    assert bool(np.asarray(res.stopped).all()) and bool(np.asarray(res.converged).all())
    assert binomial_test_upper(errors, 150, DELTA) > 1e-3, errors
    with pytest.raises(ValueError, match="beta_sampler must be one of"):
        KArmedTopTwo(beta_sampler="inverse")
