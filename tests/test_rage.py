"""RAGE (seed 001 Algorithm 1): delta-correctness, lower bound, phase sizes, noiseless elimination,
and seed 000 Table 1 (K = 1000, authors' code instance)."""
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbandits  # noqa: F401  (float64)
from jaxbandits import design
from jaxbandits.algorithms.rage import RAGE, rage_phase_size
from jaxbandits.engine import simulate
from jaxbandits.instances import seeds
from jaxbandits.instances.base import make_instance
from jaxbandits.design.reference import np_minimax_slsqp, pair_differences
from jaxbandits.stats import binomial_test_upper


def small_instance(noise=1.0):
    """Transductive, X != Z, with a small gap (0.3 -> most replications need several rounds)."""
    X = jnp.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.6, 0.6, 0.0]])
    Z = jnp.array([[1.0, 0.0, 0.0], [0.8, 0.45, 0.0], [0.0, 1.0, 0.0], [0.5, 0.0, 0.8]])
    return make_instance(X, jnp.array([1.0, 0.3, 0.2]), noise, items=Z)


def test_delta_correct_and_lower_bound():
    inst = small_instance()
    delta = 0.1
    res = simulate(RAGE(delta=delta), inst, jax.random.key(1), 600, 60)
    s = res.summary()
    assert s["frac_capped"] == 0.0
    errors = int(np.sum(~res.correct))
    # H0: error rate <= delta is not rejected at level 0.01 (600 reps: power ~0.9 against 2 delta).
    assert binomial_test_upper(errors, res.correct.size, delta) > 0.01
    lb = float(design.lower_bound(inst, delta))
    assert s["mean"] >= lb - 3 * s["se"]


def test_phase_sizes_match_formula_and_no_recompile():
    inst = small_instance()
    alg = RAGE(delta=0.05)
    st = alg.init(jax.random.key(0), inst)
    step = jax.jit(alg.step)
    M = inst.num_items
    Z = np.asarray(inst.items)
    phases = 0
    for t in range(1, 5):
        if bool(alg.done(st)):
            break
        active = np.asarray(st.active)
        before = float(st.samples)
        st = step(jax.random.key(t), st, inst)
        phases += 1
        # rho(Y(Z_t)) against an independent NumPy/SciPy solve on the active items' differences.
        _, rho_ref = np_minimax_slsqp(np.asarray(inst.arms), pair_differences(Z[active]))
        # The App F Frank-Wolfe (the default solver) stops on a 1% change of lambda: its value is
        # that of a feasible design, so it is >= the optimum, and close to it.
        assert rho_ref * (1 - 1e-6) <= float(st.last_rho) <= 1.1 * rho_ref
        p = int(np.sum(np.asarray(st.design) > 0))
        rho = float(st.last_rho)
        want = max(math.ceil(2 * 4.0**t * rho * 1.1 * math.log(M**2 * t**2 / 0.05)), math.ceil(20 * p))
        assert int(st.phase) == t + 1
        assert int(st.last_n) == want
        assert float(st.samples) - before == want      # the rounding allocates exactly N_t pulls
    assert phases >= 2
    assert step._cache_size() == 1                      # one compilation for every round
    with pytest.raises(ValueError):
        RAGE(delta=1.5).validate(inst)


def test_noiseless_never_eliminates_best():
    # With (almost) no noise every round's estimate is exact: z* is never eliminated, so the
    # returned item (the last active one) is z* in every replication.  Same shapes and algorithm
    # as test_delta_correct_and_lower_bound, so the compiled runner is reused.
    inst = small_instance(noise=1e-9)
    res = simulate(RAGE(delta=0.1), inst, jax.random.key(5), 600, 60)
    assert res.stopped.all() and res.correct.all()
