"""Reward models: draw rewards of one arm, or exact per-arm reward sums for a vector of counts.

Three models, chosen by ``instance.model``:

* ``"gaussian"``: r = x^T theta + sigma * N(0, 1) (seeds 000, 001, 003; seed 002 Sec 8.1-8.3),
* ``"bernoulli"``: r ~ Bernoulli(clip(x^T theta, 0, 1)) (linear-mean Bernoulli rewards),
* ``"logistic"``: r ~ Bernoulli(sigmoid(x^T theta)) (the GLM of seed 002 Sec 5 and 8.4).

``pull_counts`` returns the *exact* distribution of the sum of n_k independent rewards of each
arm in one draw per arm (a sum of n Gaussians is one Gaussian with variance n sigma^2; a sum of n
Bernoullis is one binomial), so a phase of N pulls costs O(K), not O(N).  Both functions are pure
and jit/vmap safe; the model is static (it is the instance's static metadata).
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxbandits.instances.base import Instance


def mean_reward(instance: Instance, mean_linear: jax.Array) -> jax.Array:
    """The expected reward given the linear predictor x^T theta, under the instance's model."""
    if instance.model == "gaussian":
        return mean_linear
    if instance.model == "bernoulli":
        return jnp.clip(mean_linear, 0.0, 1.0)
    if instance.model == "logistic":
        return jax.nn.sigmoid(mean_linear)
    raise ValueError(f"unknown reward model {instance.model!r}")


def arm_mean_rewards(instance: Instance) -> jax.Array:
    """Expected reward of every arm [..., K]."""
    return mean_reward(instance, instance.arm_means())


def pull(key: jax.Array, instance: Instance, arm: jax.Array) -> jax.Array:
    """One reward of arm ``arm`` (an integer index) of one (unbatched) instance."""
    mu = mean_reward(instance, instance.arms[arm] @ instance.theta)
    if instance.model == "gaussian":
        return mu + instance.noise * jax.random.normal(key, (), mu.dtype)
    return jax.random.bernoulli(key, mu).astype(mu.dtype)


def pull_counts(key: jax.Array, instance: Instance, counts: jax.Array) -> jax.Array:
    """Per-arm sums of ``counts[k]`` independent rewards of arm k, drawn exactly in O(K) [K].

    ``counts`` is a non-negative integer (or integer-valued float) vector of shape [K]; arms with
    count 0 get a sum of exactly 0.
    """
    mu = mean_reward(instance, instance.arm_means())
    n = jnp.asarray(counts).astype(mu.dtype)
    if instance.model == "gaussian":
        return n * mu + instance.noise * jnp.sqrt(n) * normal_where(key, n > 0, mu.dtype)
    return jax.random.binomial(key, n, mu, dtype=mu.dtype)


def _normal_at(key: jax.Array, idx: jax.Array, dtype) -> jax.Array:
    """``jax.random.normal(key, (K,), dtype)[idx]`` for a 1-D draw, computing only those entries.

    With ``jax_threefry_partitionable`` (JAX's default), entry i of a 1-D draw is a function of the
    key and i alone: the threefry2x32 hash of the counter (0, i), its two words joined (64-bit) or
    xor-ed (32-bit), mapped to [nextafter(-1, 0), 1) by the mantissa bits and to a normal by
    sqrt(2) erfinv.  This is JAX's own sequence of operations (``jax._src.random``), checked
    against ``jax.random.normal`` once per dtype (:func:`_normal_at_exact`) before it is used.
    """
    from jax.extend.random import threefry2x32_p

    dtype = jnp.dtype(dtype)
    kd = jax.random.key_data(key)
    lo_count = idx.astype(jnp.uint32)
    b1, b2 = threefry2x32_p.bind(kd[0], kd[1], jnp.zeros_like(lo_count), lo_count)
    finfo = jnp.finfo(dtype)
    nbits, nmant = finfo.bits, finfo.nmant
    if nbits == 64:
        u64 = jnp.uint64
        bits = jax.lax.shift_left(b1.astype(u64), jnp.asarray(32, u64)) | b2.astype(u64)
        udt = u64
    else:
        bits, udt = b1 ^ b2, jnp.uint32
    fb = jax.lax.shift_right_logical(bits, jnp.asarray(nbits - nmant, udt))
    fb = jax.lax.bitwise_or(fb, jnp.asarray(np.array(1.0, dtype).view(udt), udt))
    floats = jax.lax.bitcast_convert_type(fb, dtype) - jnp.array(1.0, dtype)
    lo = jnp.asarray(np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype), dtype=dtype))
    hi = jnp.asarray(np.array(1.0, dtype))
    u = jax.lax.max(lo, floats * (hi - lo) + lo)
    return jax.lax.mul(jnp.asarray(np.sqrt(2), dtype), jax.lax.erf_inv(u))


@functools.cache
def _normal_at_exact(dtype_name: str) -> bool:
    """Whether :func:`_normal_at` reproduces ``jax.random.normal`` bit for bit in this JAX (its
    key implementation and partitionable threefry), checked on a few keys and entries."""
    if not jax.config.jax_threefry_partitionable:
        return False
    dtype = jnp.dtype(dtype_name)
    try:
        with jax.ensure_compile_time_eval():
            idx = jnp.asarray([0, 1, 7, 300, 999, 4095])
            for seed in (0, 1, 12345):
                key = jax.random.fold_in(jax.random.key(seed), 3)
                full = jax.random.normal(key, (4096,), dtype)[idx]
                if not bool(jnp.all(full == _normal_at(key, idx, dtype))):
                    return False
    except Exception:  # a key implementation without threefry key data, or a changed primitive
        return False
    return True


def normal_where(key: jax.Array, where: jax.Array, dtype) -> jax.Array:
    """``jax.random.normal(key, where.shape, dtype)`` on the entries where ``where`` holds, 0
    elsewhere ([K]), computing only those entries: the entries are gathered into the smallest
    buffer of 16, 64, 256, ... that holds them (under ``vmap`` the one holding every lane's) and
    drawn there by :func:`_normal_at`, bit for bit the values of the full draw.  Falls back to the
    full draw where that identity does not hold (:func:`_normal_at_exact`)."""
    from jaxbandits.batching import in_smallest_bucket, item_buckets

    K = where.shape[0]
    if K <= 16 or not _normal_at_exact(jnp.dtype(dtype).name):
        return jnp.where(where, jax.random.normal(key, (K,), dtype), 0.0)

    def make(B):
        def draw(key, where):
            if B == K:
                return jnp.where(where, jax.random.normal(key, (K,), dtype), 0.0)
            idx = jnp.nonzero(where, size=B, fill_value=K)[0]
            z = _normal_at(key, jnp.minimum(idx, K - 1), dtype)
            return jnp.zeros((K,), dtype).at[idx].set(z, mode="drop")
        return draw

    return in_smallest_bucket(jnp.sum(where), item_buckets(K), make, key, where)
