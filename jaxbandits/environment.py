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

import jax
import jax.numpy as jnp

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
        return n * mu + instance.noise * jnp.sqrt(n) * jax.random.normal(key, mu.shape, mu.dtype)
    return jax.random.binomial(key, n, mu, dtype=mu.dtype)
