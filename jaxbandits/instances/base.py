"""The problem-instance pytree shared by every layer, its validation and batching helpers.

An instance of a (transductive) linear bandit is

* ``arms``  X [K, d]: what can be measured (pulled),
* ``items`` Z [M, d]: the candidate answers (Z = X for plain linear best-arm identification),
* ``theta`` [d]: the unknown parameter,
* ``noise``  []: the noise scale (standard deviation sigma of Gaussian rewards; ignored by the
  Bernoulli and logistic reward models, whose variance is set by the mean),
* ``model`` (static, not a leaf): the reward model, one of ``"gaussian"``, ``"bernoulli"``,
  ``"logistic"`` (see :mod:`jaxbandits.environment`).

A batch of instances is the same pytree with a leading axis on every leaf.  All leaves are
arrays, so instances go through ``jit``/``vmap`` and ``jax.tree.map`` like any pytree; ``model``
is static metadata (it changes the compiled program).
"""
from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxbandits.precision import float64_entry

REWARD_MODELS = ("gaussian", "bernoulli", "logistic")


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Instance:
    """A linear bandit instance (or a batch of them, with a leading axis on every leaf)."""

    arms: jax.Array
    items: jax.Array
    theta: jax.Array
    noise: jax.Array
    model: str = dataclasses.field(default="gaussian", metadata=dict(static=True))

    # -- shapes -------------------------------------------------------------------------------
    @property
    def num_arms(self) -> int:
        return self.arms.shape[-2]

    @property
    def num_items(self) -> int:
        return self.items.shape[-2]

    @property
    def dim(self) -> int:
        return self.arms.shape[-1]

    @property
    def batch_shape(self) -> tuple[int, ...]:
        return tuple(self.theta.shape[:-1])

    @property
    def is_batched(self) -> bool:
        return len(self.batch_shape) > 0

    # -- derived quantities --------------------------------------------------------------------
    def arm_means(self) -> jax.Array:
        """Linear predictor x^T theta of every arm [..., K] (the mean reward for linear models)."""
        return jnp.einsum("...kd,...d->...k", self.arms, self.theta)

    def item_values(self) -> jax.Array:
        """Values z^T theta of every item [..., M]; the answer is the best (or top-m) item."""
        return jnp.einsum("...md,...d->...m", self.items, self.theta)

    def best_item(self) -> jax.Array:
        """Index of the best item z* = argmax_z z^T theta [...]."""
        return jnp.argmax(self.item_values(), axis=-1)

    def replace(self, **kw: Any) -> "Instance":
        return dataclasses.replace(self, **kw)

    def __getitem__(self, idx) -> "Instance":
        """Index the batch axis: ``batch[3]`` is one instance, ``batch[:10]`` a smaller batch."""
        if not self.is_batched:
            raise IndexError("indexing an unbatched Instance")
        return jax.tree.map(lambda a: a[idx], self)

    def __len__(self) -> int:
        if not self.is_batched:
            raise TypeError("len() of an unbatched Instance")
        return self.batch_shape[0]


@float64_entry
def make_instance(arms, theta, noise=1.0, items=None, model: str = "gaussian", dtype=None) -> Instance:
    """Build an :class:`Instance` from array-likes (items default to the arms: Z = X).

    Broadcasts ``noise`` to the batch shape of ``theta`` and converts everything to one float
    dtype: float64 unless ``dtype`` says otherwise (it runs under x64 whatever the global setting,
    :mod:`jaxbandits.precision`).
    """
    if model not in REWARD_MODELS:
        raise ValueError(f"unknown reward model {model!r}; expected one of {REWARD_MODELS}")
    dtype = dtype or jnp.result_type(float)
    arms = jnp.asarray(arms, dtype)
    theta = jnp.asarray(theta, dtype)
    items = arms if items is None else jnp.asarray(items, dtype)
    noise = jnp.broadcast_to(jnp.asarray(noise, dtype), theta.shape[:-1])
    return Instance(arms=arms, items=items, theta=theta, noise=noise, model=model)


@float64_entry
def stack(instances) -> Instance:
    """Stack a list of same-shape instances into a batch (leading axis)."""
    models = {i.model for i in instances}
    if len(models) != 1:
        raise ValueError(f"cannot stack instances with different reward models {models}")
    return jax.tree.map(lambda *a: jnp.stack(a), *instances)


@float64_entry
def as_batch(instance: Instance) -> Instance:
    """Return ``instance`` with exactly one leading batch axis (adds one if unbatched)."""
    if instance.is_batched:
        if len(instance.batch_shape) != 1:
            raise ValueError(f"expected one batch axis, got batch shape {instance.batch_shape}")
        return instance
    return jax.tree.map(lambda a: a[None], instance)


def validate_instance(instance: Instance, *, need_span: bool = False, min_arms: int = 2) -> None:
    """Raise a clear ``ValueError`` for malformed instances, before anything is compiled.

    Checks shapes (X [..., K, d], Z [..., M, d], theta [..., d], noise [...]), finiteness of arms,
    items and theta, K >= ``min_arms``, a positive noise scale for Gaussian rewards and, when
    ``need_span``, that the arms span R^d (the least-squares estimator needs it).
    """
    X, Z, th, nz = (np.asarray(a) for a in (instance.arms, instance.items, instance.theta, instance.noise))
    if X.ndim < 2 or Z.ndim < 2 or th.ndim < 1:
        raise ValueError(f"arms must be [..., K, d], items [..., M, d], theta [..., d]; got shapes "
                         f"{X.shape}, {Z.shape}, {th.shape}")
    batch = th.shape[:-1]
    d = th.shape[-1]
    if X.shape[:-2] != batch or X.shape[-1] != d:
        raise ValueError(f"arms shape {X.shape} does not match theta shape {th.shape} (expected {batch + ('K', d)})")
    if Z.shape[:-2] != batch or Z.shape[-1] != d:
        raise ValueError(f"items shape {Z.shape} does not match theta shape {th.shape} (expected {batch + ('M', d)})")
    if nz.shape != batch:
        raise ValueError(f"noise shape {nz.shape} does not match the batch shape {batch}")
    for name, a in (("arms", X), ("items", Z), ("theta", th), ("noise", nz)):
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{name} contains NaN or inf")
    if X.shape[-2] < min_arms:
        raise ValueError(f"need at least {min_arms} arms, got K = {X.shape[-2]}")
    if Z.shape[-2] < 1:
        raise ValueError("need at least one item")
    if instance.model == "gaussian" and np.any(nz <= 0):
        raise ValueError("Gaussian rewards need a positive noise scale")
    if instance.model not in REWARD_MODELS:
        raise ValueError(f"unknown reward model {instance.model!r}")
    if need_span:
        ranks = np.linalg.matrix_rank(X.reshape((-1,) + X.shape[-2:]))
        if np.any(ranks < d):
            raise ValueError(f"the arms do not span R^{d} (rank {int(np.min(ranks))}); "
                             "this algorithm needs them to (least squares would be undetermined)")
