"""ALBA with Y-ElimTil (Tao et al. 2018, as seed 001 App F ran it)."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbandits  # noqa: F401  (float64)
from jaxbandits import design
from jaxbandits.algorithms.alba import ALBA, span_mask
from jaxbandits.engine import simulate
from jaxbandits.instances import seeds
from jaxbandits.instances.base import make_instance
from jaxbandits.stats import binomial_test_upper


def test_alba_delta_correct_and_lower_bound():
    inst = seeds.soare_benchmark(3, omega=0.5)
    delta = 0.1
    res = simulate(ALBA(delta=delta), inst, jax.random.key(0), 400, 200)
    s = res.summary()
    assert s["frac_capped"] == 0.0
    errors = int(np.sum(~res.correct))
    assert binomial_test_upper(errors, res.correct.size, delta) > 0.01
    assert s["mean"] >= float(design.lower_bound(inst, delta)) - 3 * s["se"]


def test_span_mask():
    X = jnp.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    m = span_mask(X, jnp.array([True, True, False, False]))
    assert np.array_equal(np.asarray(m), [True, True, True, False])


def test_rounds_and_validation():
    inst = seeds.soare_benchmark(4, omega=0.3)
    alg = ALBA()
    st = alg.init(jax.random.key(0), inst)
    # K = 5 > p_0 = floor(d / 2^0) = 4: round 0, iteration 1, n_0 = 5.
    assert (int(st.round), int(st.iteration), int(st.round_active)) == (0, 1, 5)
    X = jnp.eye(2)
    with pytest.raises(ValueError):
        ALBA().validate(make_instance(X, jnp.ones(2), 1.0, items=2.0 * X))
