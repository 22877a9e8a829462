"""Precision policy (jaxbandits.precision): importing the package sets no JAX
option; the entry points run in float64 whatever the caller's setting; float32 is refused unless
asked for an algorithm validated in float32, and there it keeps float64's distribution."""
import functools
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats as sps

from jaxbandits import design, make_instance
from jaxbandits.algorithms.fixed_confidence.rage import RAGE
from jaxbandits.algorithms.fixed_confidence.xy import XYStatic
from jaxbandits.engine import simulate
from jaxbandits.instances import seeds
from jaxbandits.stats import binomial_test_upper, clopper_pearson


def test_import_sets_no_jax_option():
    code = ("import jax; before = jax.config.jax_enable_x64\n"
            "import jaxbandits, jaxbandits.engine, jaxbandits.algorithms, jaxbandits.design, jaxbandits.sweeps\n"
            "import jaxbandits.calibration, jaxbandits.instances\n"
            "print(before, jax.config.jax_enable_x64)")
    env = {"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env,
                         cwd=str(__import__("pathlib").Path(__file__).parents[1]), timeout=120)
    assert out.stdout.split() == ["False", "False"]


#: RAGE on Soare et al.'s benchmark at d = 3 (seed 001 Fig 1a's instance family): the algorithm
#: validated in float32, on the smallest instance with the near pair (e_1, x') whose norm float32
#: must keep
D = 3


@functools.lru_cache(maxsize=None)
def _rage_runs(precision):
    """600 replications of RAGE per precision (one compiled program each, shared by the tests)."""
    return simulate(RAGE(), seeds.soare_benchmark(D), jax.random.key(0), 600, 10**4, record_pulls=False,
                    precision=precision)


def test_entry_points_are_float64_with_x64_off():
    with jax.enable_x64(False):
        inst = seeds.soare_benchmark(D)
        assert inst.arms.dtype == jnp.float64 and inst.theta.dtype == jnp.float64
        assert make_instance(np.eye(2), [1.0, 0.0]).arms.dtype == jnp.float64
        sol = design.xy_allocation(inst.arms, inst.items)
        assert sol.allocation.dtype == jnp.float64
        lo, hi = clopper_pearson(3, 100)
        assert 0.006 < lo < 0.0086 and 0.085 < hi < 0.086  # the exact interval needs float64
        r = simulate(RAGE(), inst, jax.random.key(0), 40, 10**4, record_pulls=False)
        assert r.precision == "float64"
        assert not jax.config.jax_enable_x64  # the caller's setting is left alone
    # the same replications as with x64 on (replication i depends on the key and i only)
    ref = _rage_runs("float64")
    np.testing.assert_array_equal(r.samples.ravel(), ref.samples.ravel()[:40])


def test_float32_refused_unless_validated_and_asked():
    inst = seeds.soare_benchmark(D)
    inst32 = jax.tree.map(lambda a: a.astype(jnp.float32), inst)
    with pytest.raises(ValueError, match="pass precision='float32'"):
        simulate(RAGE(), inst32, jax.random.key(0), 4, 100)
    with pytest.raises(ValueError, match="not validated in float32"):
        simulate(XYStatic(), inst32, jax.random.key(0), 4, 100)
    with pytest.raises(ValueError, match="not validated in float32"):
        simulate(XYStatic(), inst, jax.random.key(0), 4, 100, precision="float32")
    with pytest.raises(ValueError, match="precision must be"):
        simulate(RAGE(), inst, jax.random.key(0), 4, 100, precision="bfloat16")
    # an explicit float64 request upcasts a float32 instance (the float64 runs' program)
    r = simulate(RAGE(), inst32, jax.random.key(0), 4, 10**4, record_pulls=False, precision="float64")
    assert r.precision == "float64"


def test_rage_float32_keeps_the_float64_distribution():
    """RAGE on Soare d = 3 (seed 001 Fig 1a's benchmark), 600 replications per precision, different
    streams (float32 normals are other numbers).  RAGE's sample complexity is a function of its
    elimination path: the rounds it takes (a discrete law, chi-square) and the round sizes N_t (from
    rho_t).  Before the pair norms were computed from differences (design._pairs, elimination),
    float32 put rho_t 4 % high on Soare d = 5 (the atoms at 217,727 / 1,072,520 instead of 233,877 /
    945,175, 13 rounds in 442 runs instead of 248 per 1000).  The error came from the near pair
    (e_1, x'), which every d has; the per-round check below (the same sample complexity for the
    same number of rounds, to 1e-4) fails on any such rho_t bias, whatever the law of the rounds."""
    r64, r32 = _rage_runs("float64"), _rage_runs("float32")
    assert r32.precision == "float32" and r32.stopped.all() and r64.stopped.all()
    s64, s32 = r64.samples.ravel().astype(float), r32.samples.ravel().astype(float)
    assert sps.ttest_ind(s64, s32, equal_var=False).pvalue > 0.01
    k = int(max(r64.steps.max(), r32.steps.max())) + 1
    tab = np.array([np.bincount(r64.steps.ravel(), minlength=k), np.bincount(r32.steps.ravel(), minlength=k)])
    tab = tab[:, tab.sum(0) > 0]
    assert tab.shape[1] >= 2, tab   # the number of rounds varies: its law can differ
    assert sps.chi2_contingency(tab).pvalue > 0.01
    # the round sizes: the same sample complexity for the same number of rounds, to 1e-4
    common = np.intersect1d(r64.steps, r32.steps)
    assert len(common) >= 2, common
    for r in common:
        m64, m32 = np.median(s64[r64.steps.ravel() == r]), np.median(s32[r32.steps.ravel() == r])
        assert abs(m32 / m64 - 1) < 1e-4, (r, m64, m32)
    errors = int(np.sum(~r32.correct))
    assert binomial_test_upper(errors, r32.correct.size, 0.05) > 0.01


def test_pair_table_is_bitwise_independent_of_batching():
    """design.core.pair_table: an entry does not depend on the table's size, on a gather of its
    columns or on vmap's batch size (what makes elimination results independent of lanes and
    devices; docs/design.md 7.3), and it keeps a near pair's squared norm where the Gram form
    cancels."""
    from jaxbandits.design.core import pair_table

    rng = np.random.default_rng(0)
    A = jnp.asarray(rng.normal(size=(5, 40)) * 30.0)
    sq = lambda r, c: pair_table([r], [c], lambda u, k: u[0] * u[0])  # noqa: E731
    full = np.asarray(jax.jit(sq)(A, A))
    idx = jnp.array([3, 17, 39, 0])
    sub = np.asarray(jax.jit(sq)(A[:, :7], A[:, idx]))
    np.testing.assert_array_equal(sub, full[:7][:, np.asarray(idx)])
    for lanes in (1, 3, 32):
        batch = jnp.broadcast_to(A, (lanes,) + A.shape)
        np.testing.assert_array_equal(np.asarray(jax.jit(jax.vmap(sq))(batch, batch))[-1], full)
    # near pair in float32: ||a - b||^2 = 1e-4 next to ||a||^2 ~ 400
    with jax.enable_x64(False):
        a = jnp.array([[20.0], [0.0]], jnp.float32)
        b = jnp.array([[20.0], [0.01]], jnp.float32)
        assert abs(float(sq(a, b)[0, 0]) / 1e-4 - 1) < 1e-3
        gram = float(jnp.sum(a * a) + jnp.sum(b * b) - 2 * jnp.sum(a * b))
        assert abs(gram / 1e-4 - 1) > 0.05  # the form it replaced
