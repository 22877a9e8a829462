"""Fixed-confidence Peace (Katz-Samuels et al. 2020): the argument checks, the closed-form gradient
of the Gaussian width against the released code's route (Sylvester equation), delta-correctness
(binomial test) with a mutation that shows the test's power, and the mean number of samples
two-sided against the independent NumPy implementation of ``benchmarks/fc_peace_reference.py``,
with a mutation of the log term that the comparison catches."""
from __future__ import annotations

import importlib.util
import math
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxbandits.algorithms import FixedConfidencePeace
from jaxbandits.algorithms.fixed_confidence.peace import inverse_sqrt_and_grad_weights
from jaxbandits.engine import simulate
from jaxbandits.instances import seeds
from jaxbandits.stats import binomial_test_upper

_spec = importlib.util.spec_from_file_location(
    "fc_peace_reference", pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "fc_peace_reference.py")
ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ref)

#: Soare et al.'s instance at d = 3, omega = 0.3, theta = 2 e_1, unit noise, delta = 0.05, and the
#: reference's bands (mean, standard error of the mean):
#: ``python benchmarks/fc_peace_reference.py 3000 99 3 0.3 0.05 rho 2`` -> 4460.891 +- 52.504
#: (sd 2875.74, 3000 runs, 0 errors); ``... 1000 2027 3 0.3 0.05 rho 1`` -> 3120.837 +- 19.943
#: (sd 630.66, 1000 runs, 0 errors); ``... 400 2028 3 0.3 0.05 mixed 2`` -> 4999.070 +- 137.482
#: (sd 2749.64, 400 runs, 0 errors)
D, OMEGA, DELTA = 3, 0.3, 0.05
RHO_BAND = (4460.891, 52.504)
RHO_LOG1_BAND = (3120.837, 19.943)
MIXED_BAND = (4999.070, 137.482)
Z_CRIT = 3.29  # two-sided 0.001


def _instance():
    return seeds.soare_benchmark(d=D, omega=OMEGA, theta_scale=2.0)


def _run(alg, n, key):
    res = simulate(alg, _instance(), key, n_reps=n, max_steps=60)
    assert bool(np.asarray(res.stopped).all())
    return np.asarray(res.samples, float).ravel(), int(np.sum(~np.asarray(res.correct).ravel()))


def _z(samples, band):
    return (samples.mean() - band[0]) / math.hypot(samples.std(ddof=1) / math.sqrt(samples.size), band[1])


def test_arguments_are_checked():
    with pytest.raises(ValueError, match="complexity must be one of .*'gamma'"):
        FixedConfidencePeace(complexity="gamma")
    with pytest.raises(ValueError, match="gap_scale must be None .* got -1.0"):
        FixedConfidencePeace(gap_scale=-1.0)
    inst = _instance()
    for kw, field in ((dict(delta=1.5), "delta"), (dict(log_factor=0.5), "log_factor"),
                      (dict(rounding_eps=0.0), "rounding_eps"), (dict(gamma_iters=0), "gamma_iters")):
        with pytest.raises(ValueError, match=field):
            FixedConfidencePeace(**kw).validate(inst)
    with pytest.raises(ValueError, match="sigma"):
        FixedConfidencePeace(sigma=-1.0).validate(inst)


def test_width_gradient_is_the_released_codes():
    """d(y^T A^{-1/2} eta)/d lambda in closed form (Daleckii-Krein) equals the released code's chain
    (inverse, then scipy's sqrtm differentiated through a Sylvester equation), also at the uniform
    design of Soare et al.'s arms, whose A has repeated eigenvalues."""
    X, _ = ref.soare(5, 0.1)
    rng = np.random.default_rng(0)
    for lam in (np.full(6, 1 / 6), rng.dirichlet(np.ones(6))):
        y, eta = rng.standard_normal(5), rng.standard_normal(5)
        A = X.T @ (lam[:, None] * X)
        R, U, Dd = (np.asarray(a) for a in inverse_sqrt_and_grad_weights(jnp.asarray(A)))
        C = 0.5 * (np.outer(y, eta) + np.outer(eta, y))
        ours = np.einsum("ij,jk,ik->i", X, U @ (Dd * (U.T @ C @ U)) @ U.T, X)
        S = ref._inv_sqrt(A)
        gB = ref.scipy.linalg.solve_sylvester(S, S, np.outer(eta, y))
        gA = -np.linalg.inv(A) @ gB @ np.linalg.inv(A)
        theirs = np.einsum("ij,jk,ik->i", X, gA, X)
        np.testing.assert_allclose(R, S, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(ours, theirs, rtol=1e-8, atol=1e-10)


def test_delta_correct_and_the_test_has_power():
    """No more errors than delta (binomial test); the noise scale under-stated 32-fold (every N_k
    / 1024, the same compiled program) fails it."""
    n = 600
    _, errors = _run(FixedConfidencePeace(delta=DELTA, complexity="rho"), n, 1)
    assert binomial_test_upper(errors, n, DELTA) > 1e-3, errors
    _, starved = _run(FixedConfidencePeace(delta=DELTA, complexity="rho", sigma=1 / 32), n, 1)
    assert binomial_test_upper(starved, n, DELTA) < 1e-3, starved


def test_samples_match_reference_and_log_term_mutation_is_caught():
    """Two-sided z-test of the mean number of samples against the NumPy reference; with the log
    term log(k^2 / delta) instead of the released log(2 k^2 / delta) the comparison fails (and
    agrees with the reference run the same way)."""
    samples, errors = _run(FixedConfidencePeace(delta=DELTA, complexity="rho"), 1500, 2)
    z = _z(samples, RHO_BAND)
    assert abs(z) < Z_CRIT, (samples.mean(), z)
    mutant, _ = _run(FixedConfidencePeace(delta=DELTA, complexity="rho", log_factor=1.0), 1500, 3)
    z_mut = _z(mutant, RHO_BAND)
    assert abs(z_mut) > 2 * Z_CRIT, (mutant.mean(), z_mut)
    assert abs(_z(mutant, RHO_LOG1_BAND)) < Z_CRIT, mutant.mean()


def test_accelerator_policy_plans_the_same_epochs():
    """Under the accelerator policy (the rho design's Frank-Wolfe as loops of a fixed trip count,
    the rounding's fixed trips) every epoch's plan equals the CPU one's (while loops)."""
    from jaxbandits.algorithms.base import with_batching
    from jaxbandits.batching import SolvePolicy, policy

    inst = _instance()
    rng = np.random.default_rng(3)
    base = FixedConfidencePeace(complexity="rho")
    st = base.init(jax.random.PRNGKey(0), inst)
    M = inst.num_items
    actives = jnp.asarray([rng.permutation(np.r_[np.ones(m, bool), np.zeros(M - m, bool)]) for m in (4, 3, 2, 2, 1)])
    thetas = jnp.asarray(rng.standard_normal((5, D)))
    epochs = jnp.asarray([1, 2, 5, 9, 3], jnp.int32)
    scale = jnp.asarray([np.nan, 3.0, 40.0, 7.5, 2.0])
    plans = []
    for pol in (SolvePolicy(batched=False, capacity=1), SolvePolicy(batched=True, capacity=None)):
        alg = with_batching(base, pol)
        with policy(pol):
            plans.append(jax.jit(jax.vmap(lambda a, t, k, b: alg.plan(
                jax.random.PRNGKey(1), st._replace(active=a, theta=t, epoch=k, scale=b), inst)))(
                    actives, thetas, epochs, scale))
    for cpu, acc in zip(*plans):
        np.testing.assert_allclose(np.asarray(acc), np.asarray(cpu), rtol=1e-12, atol=1e-12)


def test_released_mixed_design_matches_reference():
    """The released configuration (the Gaussian-width and rho designs mixed) against the reference,
    two-sided."""
    samples, errors = _run(FixedConfidencePeace(delta=DELTA), 300, 4)
    assert errors == 0
    z = _z(samples, MIXED_BAND)
    assert abs(z) < Z_CRIT, (samples.mean(), z)
