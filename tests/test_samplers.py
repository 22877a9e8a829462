"""The fixed-trip binomial and multinomial draws of :mod:`jaxbandits.environment`.

They must give ``jax.random.binomial`` / ``jax.random.multinomial``'s values bit for bit (so no
random stream of any run changes), follow the binomial law (a chi-square test against scipy's
pmf, with a mutation it must catch), keep their stated failure bound (the one-try acceptance of
the rejection branch), and report a draw that did not finish.
"""
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jaxbandits.environment import binomial, multinomial

jax.config.update("jax_enable_x64", True)


def test_binomial_is_jax_random_binomial_bit_for_bit():
    ns = np.array([0, 1, 7, 25, 40, 1000, 12345, 3e7])
    ps = np.array([0.0, 1e-5, 0.01, 0.3, 0.5, 0.7, 0.99, 1.0])
    N, P = (a.ravel() for a in np.meshgrid(ns, ps))
    keys = jax.random.split(jax.random.key(1), 64)
    ref = jax.jit(jax.vmap(lambda k: jax.vmap(lambda n, p: jax.random.binomial(k, n, p))(N, P)))(keys)
    got, ok = jax.jit(jax.vmap(lambda k: jax.vmap(lambda n, p: binomial(k, n, p, fixed=True))(N, P)))(keys)
    assert bool(ok.all())
    np.testing.assert_array_equal(np.asarray(got), np.asarray(ref))
    # one call over a vector (JAX's loops then run until every entry is drawn)
    n, p = jnp.array([3.0, 50.0, 1000.0, 20.0, 0.0, 1e5]), jnp.array([0.2, 0.5, 0.1, 0.9, 0.3, 0.4])
    ref = jax.jit(jax.vmap(lambda k: jax.random.binomial(k, n, p)))(keys)
    got, ok = jax.jit(jax.vmap(lambda k: binomial(k, n, p, fixed=True)))(keys)
    assert bool(ok.all())
    np.testing.assert_array_equal(np.asarray(got), np.asarray(ref))


def test_multinomial_is_jax_random_multinomial_bit_for_bit():
    p = jnp.array([0.1, 0.0, 0.3, 0.25, 0.35])
    keys = jax.random.split(jax.random.key(2), 64)
    ref = jax.jit(jax.vmap(lambda k: jax.random.multinomial(k, 1234.0, p)))(keys)
    got, bad = jax.jit(jax.vmap(lambda k: multinomial(k, 1234.0, p, fixed=True)))(keys)
    assert int(bad.sum()) == 0
    np.testing.assert_array_equal(np.asarray(got), np.asarray(ref))


def _chi2_pvalue(draws, n, p):
    """Chi-square goodness of fit of integer draws to Bin(n, p), cells pooled to expected >= 5."""
    k = np.arange(n + 1)
    expected = stats.binom.pmf(k, n, p) * len(draws)
    observed = np.bincount(draws.astype(int), minlength=n + 1)[: n + 1]
    cells, e_acc, o_acc = [], 0.0, 0
    for e, o in zip(expected, observed):
        e_acc, o_acc = e_acc + e, o_acc + o
        if e_acc >= 5:
            cells.append((e_acc, o_acc))
            e_acc, o_acc = 0.0, 0
    cells[-1] = (cells[-1][0] + e_acc, cells[-1][1] + o_acc)
    e, o = np.array(cells).T
    return stats.chisquare(o, e).pvalue


_draws = jax.jit(jax.vmap(lambda k, n, q: binomial(k, n, q, fixed=True)[0], in_axes=(0, None, None)))


@pytest.mark.parametrize("n,p", [(30, 0.3), (200, 0.4), (200, 0.85)])  # inversion; rejection; 1 - p
def test_binomial_law_chi_square_and_a_mutation_it_catches(n, p):
    keys = jax.random.split(jax.random.key(7), 20_000)
    assert _chi2_pvalue(np.asarray(_draws(keys, float(n), p)), n, p) > 1e-3
    # power: the draws of p + 0.01 are told apart from Bin(n, p)
    assert _chi2_pvalue(np.asarray(_draws(keys, float(n), p + 0.01)), n, p) < 1e-3


def test_binomial_follows_the_policy():
    """Plain jax.random.binomial on a CPU policy; no data-dependent loop under the accelerator's."""
    from jaxbandits import batching

    key = jax.random.key(0)
    assert "while" in str(jax.make_jaxpr(lambda k: binomial(k, 50.0, 0.3))(key))
    with batching.policy(dataclasses.replace(batching.solve_for("gpu", 8), kernels="xla")):
        assert "while" not in str(jax.make_jaxpr(lambda k: binomial(k, 50.0, 0.3))(key))
    with batching.policy(batching.solve_for("gpu", 8)):   # the loops run inside one fused kernel
        from test_entrywise_kernels import _primitives

        names = _primitives(jax.make_jaxpr(jax.vmap(lambda k: binomial(k, 50.0, 0.3)))(jax.random.split(key, 8)).jaxpr,
                            enter_kernels=False)
        assert "pallas_call" in names and "while" not in names



_EDGE_P = (0.0, 1.0, 0.5, 1e-4, 0.999, 0.3, float("nan"), -0.1)


@pytest.mark.parametrize("tries", [64, 2])
def test_fused_binomial_is_jax_binomial(tries):
    """The GPU's binomial kernel (interpreted) gives jax.random.binomial's draws bit for bit on
    counts and probabilities of both of its branches (inversion: n min(p, 1 - p) <= 10; BTRS
    beyond), edge probabilities and invalid inputs included, and with 2 tries the same draws and
    unfinished flags as the fixed-trip XLA form."""
    from jaxbandits import batching

    rng = np.random.default_rng(1)
    L = 1024
    n = np.concatenate([rng.integers(0, 30, L // 4), rng.integers(0, 5000, L // 4), rng.integers(0, 100, L // 4),
                        np.full(L // 4, 7)]).astype(float)
    p = np.concatenate([rng.random(L // 4), rng.random(L // 4), rng.choice(_EDGE_P, L // 4), rng.random(L // 4)])
    n[::97] = -1.0
    keys = jax.random.split(jax.random.key(5), L)
    run = lambda: jax.jit(jax.vmap(lambda k, n, p: binomial(k, n, p, tries=tries)))(keys, n, p)  # noqa: E731
    with batching.policy(dataclasses.replace(batching.solve_for("gpu", L), kernels="xla")):
        xla, xla_ok = run()
    with batching.policy(dataclasses.replace(batching.solve_for("gpu", L), kernels="interpret")):
        fused, fused_ok = run()
    np.testing.assert_array_equal(np.asarray(fused), np.asarray(xla))
    np.testing.assert_array_equal(np.asarray(fused_ok), np.asarray(xla_ok))
    if tries == 64:
        ref = jax.vmap(lambda k, n, p: jax.random.binomial(k, n, p, dtype=jnp.float64))(keys, n, p)
        np.testing.assert_array_equal(np.asarray(fused), np.asarray(ref))
        assert bool(jnp.all(fused_ok))
    else:
        assert not bool(jnp.all(fused_ok))   # 2 tries leave some draws unfinished


# one try, 4000 lanes: (draws, finished); shared by the two tests below
_one_try = jax.jit(jax.vmap(lambda k, n, q: binomial(k, n, q, tries=1, fixed=True), in_axes=(0, None, None)))


def test_rejection_branch_accepts_often_enough_for_the_stated_bound():
    """binomial's docstring bounds an unfinished draw by 0.35^64: one try accepts with probability
    >= 0.65 wherever the rejection branch is used (n min(p, 1 - p) > 10)."""
    keys = jax.random.split(jax.random.key(3), 4000)
    rates = [float(_one_try(keys, np.ceil(m / q), q)[1].mean())
             for q in (1e-3, 0.05, 0.3, 0.5) for m in (10.01, 12.0, 40.0, 1e4)]
    assert min(rates) >= 0.65, rates


def test_unfinished_draws_are_reported():
    # 1 try: the inversion needs X + 1 <= 1 iterations, X ~ Bin(40, 0.2) is 0 with probability 1e-4
    d, ok = _one_try(jax.random.split(jax.random.key(4), 4000), np.float64(40.0), 0.2)  # the program above
    assert not bool(ok.all()) and bool(jnp.all((d >= 0) & (d <= 40)))
    keys = jax.random.split(jax.random.key(4), 200)
    _, bad = jax.jit(jax.vmap(lambda k: multinomial(k, 40.0, jnp.array([0.2, 0.3, 0.5]), tries=3, fixed=True)))(keys)
    assert int(bad.sum()) > 0
