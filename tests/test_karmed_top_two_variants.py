"""EB-TCI (the transportation-cost challenger penalized by log N_a) and information-directed
selection (IDS, You et al., ICML 2023) of :class:`jaxbandits.rules.karmed.TopTwo`, each two-sided
against the independent NumPy implementation ``benchmarks/karmed_reference.py`` (:func:`eb_top_two`),
delta-correct (binomial test), with a mutation of each that the two-sided check catches."""
from __future__ import annotations

import dataclasses
import math

import jax.numpy as jnp
import numpy as np
import pytest

import jaxbandits  # noqa: F401
from benchmarks.karmed_reference import eb_top_two
from jaxbandits.algorithms import KArmedTopTwo
from jaxbandits.engine import simulate
from jaxbandits.instances import k_armed
from jaxbandits.rules import compose, sampling
from jaxbandits.rules.karmed import ChernoffGLR, TopTwo, ids_coin, tc_challenger
from jaxbandits.stats import binomial_test_upper

MU, DELTA = (0.7, 0.5, 0.4), 0.1
N_JAX, N_REF = 300, 2000


@dataclasses.dataclass(frozen=True)
class FlippedPenalty(TopTwo):
    """A mutation: the TCI challenger with -log N_a (favours the most pulled arms)."""

    def challenger_penalty(self, counts):
        return -jnp.log(counts)


@dataclasses.dataclass(frozen=True)
class InvertedCoin(TopTwo):
    """A mutation: the leader pulled with probability 1 - h."""

    def leader_probability(self, *args):
        return 1.0 - super().leader_probability(*args)


def _run(alg, n, all_stop=True, max_steps=200_000):
    res = simulate(alg, k_armed(MU), 0, n_reps=n, max_steps=max_steps)
    assert bool(np.asarray(res.stopped).all()) or not all_stop
    return np.asarray(res.samples, float).ravel(), int(np.sum(~np.asarray(res.correct).ravel()))


def _z(samples, ref):
    se = math.hypot(samples.std(ddof=1) / math.sqrt(samples.size), ref.std(ddof=1) / math.sqrt(ref.size))
    return (samples.mean() - ref.mean()) / se


def _composed(rule):
    return compose(sampling.Initial(rule, first="all"), ChernoffGLR(), delta=DELTA)


@pytest.mark.parametrize("challenger, selection, mutant", [
    ("TCI", "fixed", FlippedPenalty(challenger="TCI")),
    ("TC", "ids", InvertedCoin(selection="ids")),
    ("TCI", "ids", None),
])
def test_variant_matches_the_numpy_reference(challenger, selection, mutant):
    """300 runs on Bernoulli (0.7, 0.5, 0.4), delta = 0.1, against 2,000 runs of the NumPy
    implementation: the mean stopping time two-sided within 3.5 combined SE, the errors not above
    delta (binomial test at level 1e-3).  Measured (key 0, NumPy seed 2026): EB-TCI 219.9 +- 8.7
    against 202.9 +- 3.2 (z = +1.84, 0 errors; reference 1 error in 2,000); EB-TC-IDS 208.3 +- 9.2
    against 203.5 +- 3.6 (z = +0.48, 0 errors); EB-TCI-IDS 214.0 +- 8.9 against 204.6 +- 3.2
    (z = +0.98, 0 errors).  Mutations: -log N_a in TCI, mean 385 (z = +7.1); the coin 1 - h,
    mean about 25,700 (z = +8.3)."""
    ref, best = eb_top_two(np.random.default_rng(2026), MU, DELTA, N_REF, challenger=challenger, selection=selection)
    assert np.mean(best != 0) < DELTA
    samples, errors = _run(KArmedTopTwo(delta=DELTA, challenger=challenger, selection=selection), N_JAX)
    assert binomial_test_upper(errors, samples.size, DELTA) > 1e-3, errors
    z = _z(samples, ref)
    assert abs(z) < 3.5, (samples.mean(), ref.mean(), z)
    if mutant is not None:
        # the inverted coin's runs may reach the cap (its capped mean is still far above the band)
        bad, _ = _run(_composed(mutant), 100, all_stop=False, max_steps=20_000)
        assert abs(_z(bad, ref)) > 3.5, (bad.mean(), ref.mean())


def test_the_challenger_and_the_coin_by_hand():
    """TCI's argmin of W + log N (the first of the minima) and the IDS coin against hand values."""
    mu = jnp.array([0.7, 0.5, 0.6])
    counts = jnp.array([10.0, 1.0, 30.0])
    valid = jnp.ones(3, bool)
    # Gaussian sigma = 1: W(0, a) = N_0 N_a / (N_0 + N_a) (mu_0 - mu_a)^2 / 2
    w = np.array([np.inf, 10 / 11 * 0.04 / 2, 300 / 40 * 0.01 / 2])
    assert int(tc_challenger("gaussian", mu, counts, 0, valid, 1.0)) == int(np.argmin(w))
    pen = w + np.log(np.asarray(counts))
    assert int(tc_challenger("gaussian", mu, counts, 0, valid, 1.0, jnp.log(counts))) == int(np.argmin(pen))
    m = (10 * 0.7 + 30 * 0.6) / 40
    h = 10 * (0.7 - m) ** 2 / (10 * (0.7 - m) ** 2 + 30 * (0.6 - m) ** 2)
    assert float(ids_coin("gaussian", mu, counts, 0, 2, 1.0)) == pytest.approx(h, rel=1e-6)
    assert float(ids_coin("gaussian", jnp.array([0.5, 0.5]), jnp.array([3.0, 4.0]), 0, 1, 1.0)) == 0.0


def test_refusals_name_the_option():
    with pytest.raises(ValueError, match="selection must be one of"):
        KArmedTopTwo(selection="tracking")
    with pytest.raises(ValueError, match="leader must be 'EB'"):
        KArmedTopTwo(leader="TS", challenger="TCI")
    with pytest.raises(ValueError, match="variances must be None"):
        TopTwo(selection="ids", variances="empirical")
    with pytest.raises(ValueError, match="challenger must be one of"):
        KArmedTopTwo(challenger="TCε")
