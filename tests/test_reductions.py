"""The folded max / first-index reductions of ``common.max_argmax`` (the CPU policy's path) give
the same index and value as one ``max`` (the accelerator policy's path) and as numpy's argmax."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxbandits import batching
from jaxbandits.algorithms import common

ACCELERATOR = batching.SolvePolicy(batched=True, capacity=None)

# odd lengths (the tail entry of a halving), lengths that need padded rows, several halvings
SIZES = [33, 34, 63, 65, 100, 999, 1000, 1025, 2049, 5001]


def _vector(kind, n, rng):
    if kind == "float":
        return rng.standard_normal(n)
    if kind == "ties":  # the max reached at several places: the first one must win
        return rng.integers(0, 3, n).astype(float)
    if kind == "last":  # the max only in the last entry (the odd tail of a halving)
        v = rng.random(n)
        v[-1] = 2.0
        return v
    if kind == "masked":  # mostly -inf, as a masked argmax
        return np.where(rng.random(n) < 0.95, -np.inf, rng.random(n))
    if kind == "int":
        return rng.integers(-5, 5, n)
    if kind == "bool":
        return rng.random(n) < 0.02
    raise ValueError(kind)


@pytest.mark.parametrize("kind", ["float", "ties", "last", "masked", "int", "bool"])
def test_folded_max_argmax_is_exact(kind):
    rng = np.random.default_rng(7)
    vs = [jnp.asarray(_vector(kind, n, rng)) for n in SIZES]
    cpu = jax.jit(lambda v: common.max_argmax(v))
    with batching.policy(ACCELERATOR):
        acc = jax.jit(lambda v: common.max_argmax(v))  # a separate function: its own trace
        acc_out = [acc(v) for v in vs]
    for n, v, (m_acc, i_acc) in zip(SIZES, vs, acc_out):
        m, i = cpu(v)
        ref = np.asarray(v)
        assert int(i) == int(np.argmax(ref)) == int(i_acc), (kind, n)
        assert m == ref.max() and m == m_acc, (kind, n)
        # under vmap (the engine's lanes), rows of a batch keep their own index
        batch = jnp.stack([v, v[::-1], jnp.roll(v, n // 3)])
        idx = jax.jit(jax.vmap(common.argmax_fast))(batch)
        np.testing.assert_array_equal(np.asarray(idx), np.argmax(np.asarray(batch), axis=1))


def test_folded_argmax_propagates_nan_as_a_single_max():
    """A NaN makes both paths give the same (out-of-range) index, as one ``max`` does."""
    v = jnp.asarray(np.r_[np.random.default_rng(1).random(1000), np.nan])
    with batching.policy(ACCELERATOR):
        acc = jax.jit(lambda v: common.argmax_fast(v) + 0)(v)
    assert int(jax.jit(common.argmax_fast)(v)) == int(acc)
