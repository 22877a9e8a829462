"""K-armed (unstructured) bandits as linear instances, and the named K-armed instances of the
best-arm-identification papers.

A K-armed bandit with means mu is the linear instance with arms = items = the canonical basis
e_1, ..., e_K of R^K and theta = mu (the mean of arm k is e_k^T mu = mu_k), so every algorithm,
rule and engine of the library runs on it unchanged; the K-armed algorithms
(:mod:`jaxbandits.algorithms.karmed`) read the per-arm counts and sums of the statistics directly.

Reward models: ``"gaussian"`` (N(mu_k, sigma_k^2): one sigma = ``noise`` for every arm, or per-arm
sigma_k when ``noise`` has the means' shape, stored as ``Instance.arm_noise``) and ``"bernoulli"``
(mu_k in [0, 1]); the divergences, T*(mu) and w*(mu) are in :mod:`jaxbandits.design.karmed`.
"""
from __future__ import annotations

import numpy as np

from jaxbandits.instances.base import Instance, make_instance

MODELS = ("gaussian", "bernoulli")

#: the Bernoulli instances of Garivier & Kaufmann (COLT 2016), Sec 6 (Table 1), with the optimal
#: proportions the paper states beside them: w*(mu1) = [0.417, 0.390, 0.136, 0.057],
#: w*(mu2) = [0.336, 0.251, 0.177, 0.132, 0.104]
GARIVIER_KAUFMANN_2016 = {
    1: (0.5, 0.45, 0.43, 0.4),
    2: (0.3, 0.21, 0.2, 0.19, 0.18),
}


def k_armed(mu, model: str = "bernoulli", *, noise=1.0) -> Instance:
    """The K-armed bandit with means ``mu`` [K] (or a batch [n, K]) as a linear instance
    (module docstring): arms = items = I_K, theta = mu.

    Args:
      mu: the arms' means; in [0, 1] for Bernoulli rewards.
      model: "gaussian" or "bernoulli".
      noise: the Gaussian standard deviation: a scalar (or one per instance of a batch, [n]) for
        arms of one noise scale sigma, or an array of the shape of ``mu`` ([K] or [n, K]) for
        per-arm standard deviations sigma_k (heteroscedastic arms: ``Instance.arm_noise``, and
        ``noise`` = max_k sigma_k).  Ignored by Bernoulli rewards.
    """
    if model not in MODELS:
        raise ValueError(f"model must be one of {MODELS}, got {model!r}")
    mu = np.asarray(mu, dtype=np.float64)
    if mu.ndim not in (1, 2) or mu.shape[-1] < 2:
        raise ValueError(f"mu must be an array [K] or [n, K] with K >= 2, got shape {mu.shape}")
    if model == "bernoulli" and np.any((mu < 0) | (mu > 1)):
        raise ValueError(f"Bernoulli means must lie in [0, 1], got {mu.min():g} .. {mu.max():g}")
    K = mu.shape[-1]
    arms = np.broadcast_to(np.eye(K), mu.shape[:-1] + (K, K))
    nz = np.asarray(noise, dtype=np.float64)
    if model == "gaussian" and nz.ndim >= 1 and nz.shape == mu.shape:
        if not np.all(np.isfinite(nz) & (nz > 0)):
            raise ValueError(f"noise: per-arm standard deviations must be positive and finite, got {nz.tolist()}")
        return make_instance(arms, mu, nz.max(axis=-1), model=model, arm_noise=nz)
    return make_instance(arms, mu, noise, model=model)


def garivier_kaufmann_2016(scenario: int = 1) -> Instance:
    """The Bernoulli instances of Garivier & Kaufmann, "Optimal Best Arm Identification with Fixed
    Confidence", COLT 2016, Sec 6 (Table 1): scenario 1, mu1 = [0.5, 0.45, 0.43, 0.4]; scenario 2,
    mu2 = [0.3, 0.21, 0.2, 0.19, 0.18] (:data:`GARIVIER_KAUFMANN_2016`); the best arm is arm 0."""
    if scenario not in GARIVIER_KAUFMANN_2016:
        raise ValueError(f"scenario must be one of {tuple(GARIVIER_KAUFMANN_2016)}, got {scenario!r}")
    return k_armed(GARIVIER_KAUFMANN_2016[scenario], "bernoulli")


def random_k_armed(key, num_arms: int, *, gap: float = 0.2, model: str = "gaussian", noise: float = 0.5) -> Instance:
    """A random K-armed bandit with a unique best arm at least ``gap`` above the others: arm 0 has
    mean 0.9, the others means uniform in [0.1, 0.9 - gap] (all in [0, 1], so the same means serve
    Bernoulli and Gaussian arms).  jit- and vmap-safe (``jaxbandits.instances.seeds.batch``).

    Args:
      key: PRNG key.
      num_arms: K (static).
      gap: the smallest gap between the best arm and the others, in (0, 0.8).
      model: "gaussian" (standard deviation ``noise``) or "bernoulli".
    """
    import jax
    import jax.numpy as jnp

    if model not in MODELS:
        raise ValueError(f"model must be one of {MODELS}, got {model!r}")
    if not 0.0 < gap < 0.8:
        raise ValueError(f"gap must be in (0, 0.8), got {gap!r}")
    dt = jnp.result_type(float)
    rest = jax.random.uniform(key, (num_arms - 1,), dt, 0.1, 0.9 - gap)
    mu = jnp.concatenate([jnp.full((1,), 0.9, dt), rest])
    eye = jnp.eye(num_arms, dtype=dt)
    return make_instance(eye, mu, noise, model=model)
