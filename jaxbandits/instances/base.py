"""The problem-instance pytree shared by every layer, its validation and batching helpers.

An instance of a (transductive) linear bandit is

* ``arms``  X [K, d]: what can be measured (pulled),
* ``items`` Z [M, d]: the candidate answers (Z = X for plain linear best-arm identification),
* ``theta`` [d]: the unknown parameter,
* ``noise``  []: the noise scale (standard deviation sigma of Gaussian rewards; ignored by the
  Bernoulli and logistic reward models, whose variance is set by the mean),
* ``arm_noise`` [K] (optional, None by default): per-arm standard deviations sigma_k of Gaussian
  rewards (heteroscedastic arms, :func:`jaxbandits.instances.k_armed` with ``noise`` of the
  means' shape); ``noise`` then holds max_k sigma_k, a sub-Gaussian scale of every arm.  Only the
  algorithms that declare ``supports_arm_noise`` accept such an instance,
* ``model`` (static, not a leaf): the reward model, one of ``"gaussian"``, ``"bernoulli"``,
  ``"logistic"`` (see :mod:`jaxbandits.environment`),
* ``arm_mask`` [K], ``item_mask`` [M] (optional bool leaves, None by default): which arms and items
  are real.  :func:`pad_to` appends zero arms and items (masked out) so that instances of
  different sizes share one compiled program (shape buckets, :func:`bucket_size`); algorithms
  that declare ``supports_padding`` never pull a masked arm and never return, compare against or
  eliminate with a masked item (docs/design.md, "Shape buckets").

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
    arm_mask: jax.Array | None = None
    item_mask: jax.Array | None = None
    arm_noise: jax.Array | None = None

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
    def heteroscedastic(self) -> bool:
        """Whether the arms have their own noise scales (``arm_noise``)."""
        return self.arm_noise is not None

    def arm_sigmas(self) -> jax.Array:
        """[..., K] the standard deviation of every arm's Gaussian noise: ``arm_noise``, or
        ``noise`` on every arm."""
        if self.arm_noise is not None:
            return self.arm_noise
        return jnp.broadcast_to(jnp.asarray(self.noise)[..., None], self.arms.shape[:-1])

    @property
    def is_padded(self) -> bool:
        """Whether the instance carries validity masks (:func:`pad_to`)."""
        return self.arm_mask is not None or self.item_mask is not None

    def valid_arms(self) -> jax.Array:
        """[..., K] bool: the real arms (all True unless padded).  A constant when unpadded, so
        masked code costs nothing there."""
        if self.arm_mask is not None:
            return self.arm_mask
        return jnp.ones(self.arms.shape[:-1], bool)

    def valid_items(self) -> jax.Array:
        """[..., M] bool: the real items (all True unless padded)."""
        if self.item_mask is not None:
            return self.item_mask
        return jnp.ones(self.items.shape[:-1], bool)

    def true_num_arms(self):
        """Number of real arms: the static K when unpadded, else a (traceable) count."""
        return self.num_arms if self.arm_mask is None else jnp.sum(self.arm_mask, axis=-1)

    def true_num_items(self):
        """Number of real items |Z|: the static M when unpadded, else a (traceable) count."""
        return self.num_items if self.item_mask is None else jnp.sum(self.item_mask, axis=-1)

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

    def masked_item_values(self) -> jax.Array:
        """:meth:`item_values` with -inf on padded items (never the best, never in a top-m)."""
        v = self.item_values()
        return v if self.item_mask is None else jnp.where(self.item_mask, v, -jnp.inf)

    def best_item(self) -> jax.Array:
        """Index of the best item z* = argmax_z z^T theta over the real items [...]."""
        return jnp.argmax(self.masked_item_values(), axis=-1)

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


def _show(value: Any) -> str:
    r = repr(value)
    return r if len(r) <= 80 else r[:77] + "..."


def _is_tracer(value) -> bool:
    return isinstance(value, jax.core.Tracer)


def check_instance_shapes(arms, items, theta, noise, model: str = "gaussian") -> None:
    """Shapes given to :func:`jaxbandits.make_instance`: arms [..., K, d], items [..., M, d],
    theta [..., d] with the same d and batch shape, noise broadcastable to the batch shape."""
    for name, a in (("arms", arms), ("items", items), ("theta", theta), ("noise", noise)):
        if _is_tracer(a):
            continue
        v = np.asarray(a)
        if v.dtype.kind not in "biufV":  # V: bfloat16 and other ml_dtypes
            raise TypeError(f"{name} must be an array of numbers, got {_show(a)} (dtype {v.dtype})")
        bad = ~np.isfinite(v)
        if np.any(bad):
            at = tuple(int(i) for i in np.argwhere(bad)[0])
            raise ValueError(f"{name} must be finite, got {int(bad.sum())} NaN or inf value(s) (e.g. "
                             f"{v[at] if at else v.item()} at index {at})")
    X, Z, th = np.shape(arms), np.shape(items), np.shape(theta)
    if len(X) < 2:
        raise ValueError(f"arms must be an array [K, d] (or [batch, K, d]), got shape {X}")
    if len(th) < 1:
        raise ValueError(f"theta must be an array [d] (or [batch, d]), got shape {th}")
    if th[-1] != X[-1]:
        raise ValueError(f"theta must have the arms' dimension d = {X[-1]}, got shape {th} (arms {X})")
    if X[:-2] != th[:-1]:
        raise ValueError(f"theta's batch shape {th[:-1]} must match the arms' {X[:-2]} (arms {X}, theta {th})")
    if len(Z) < 2 or Z[-1] != X[-1] or Z[:-2] != X[:-2]:
        raise ValueError(f"items must be an array [M, d] with the arms' d = {X[-1]} and batch shape {X[:-2]}, "
                         f"got shape {Z}")
    if X[-2] == 0 or Z[-2] == 0:
        which = "arms" if X[-2] == 0 else "items"
        raise ValueError(f"{which} must hold at least one row, got shape {X if which == 'arms' else Z}")
    try:
        np.broadcast_shapes(np.shape(noise), th[:-1])
    except ValueError:
        raise ValueError(f"noise must be a scalar or broadcast to the batch shape {th[:-1]}, got shape "
                         f"{np.shape(noise)}") from None
    if model == "gaussian" and not _is_tracer(noise):
        nz = np.asarray(noise)
        if np.issubdtype(nz.dtype, np.number) and np.any(~np.isfinite(nz) | (nz <= 0)):
            raise ValueError(f"noise must be > 0 (the reward noise's standard deviation), got {_show(noise)}")


def check_bernoulli_means(instances, name: str = "instances") -> None:
    """Bernoulli rewards need every real arm's mean x^T theta in [0, 1]."""
    if instances.model != "bernoulli" or _is_tracer(instances.theta):
        return
    mu = np.asarray(instances.arm_means())
    mu = np.where(np.asarray(instances.valid_arms()), mu, 0.5)
    if np.any((mu < 0) | (mu > 1)):
        bad = mu[(mu < 0) | (mu > 1)]
        raise ValueError(f"{name}: Bernoulli rewards need arm means x^T theta in [0, 1] (outside, they are clipped), got "
                         f"{bad.size} outside (e.g. {float(bad.flat[0]):g}); use model='gaussian' or "
                         "rescale theta")


@float64_entry
def make_instance(arms, theta, noise=1.0, items=None, model: str = "gaussian", dtype=None,
                  arm_noise=None) -> Instance:
    """Build an :class:`Instance` from array-likes (items default to the arms: Z = X).

    ``arm_noise`` (optional, [..., K]): per-arm Gaussian standard deviations (``Instance.arm_noise``).

    Broadcasts ``noise`` to the batch shape of ``theta`` and converts everything to one float
    dtype: float64 unless ``dtype`` says otherwise (it runs under x64 whatever the global setting,
    :mod:`jaxbandits.precision`).
    """
    if model not in REWARD_MODELS:
        raise ValueError(f"model must be one of {REWARD_MODELS}, got {_show(model)}")
    check_instance_shapes(arms, arms if items is None else items, theta, noise, model)
    dtype = dtype or jnp.result_type(float)
    arms = jnp.asarray(arms, dtype)
    theta = jnp.asarray(theta, dtype)
    items = arms if items is None else jnp.asarray(items, dtype)
    noise = jnp.broadcast_to(jnp.asarray(noise, dtype), theta.shape[:-1])
    # Bernoulli means outside [0, 1] are allowed here (the environment clips them; algorithms that
    # need them in [0, 1] say so in validate) and refused by simulate (jaxbandits.validation)
    if arm_noise is None:
        return Instance(arms=arms, items=items, theta=theta, noise=noise, model=model)
    arm_noise = jnp.broadcast_to(jnp.asarray(arm_noise, dtype), arms.shape[:-1])
    return Instance(arms=arms, items=items, theta=theta, noise=noise, model=model, arm_noise=arm_noise)


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


# ------------------------------------------------------------------------------------------------
# shape buckets
# ------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Buckets:
    """The bucket policy: a size n is padded to the smallest ``smallest * factor**k >= n``.

    ``factor=2`` (default) pads by less than 2x (K in {10, 12, 14, 16} share the bucket 16; 10, 20,
    50, 100, ... fall in 16, 32, 64, 128, ...); ``factor=4`` halves the number of programs again at
    up to 4x the per-step work.  ``arms`` / ``items``: pad K / M (d is never padded: a zero
    coordinate would make every design singular).
    """

    factor: int = 2
    smallest: int = 8
    arms: bool = True
    items: bool = True

    def __post_init__(self):
        if int(self.factor) < 2 or int(self.smallest) < 1:
            raise ValueError(f"need factor >= 2 and smallest >= 1, got {self.factor}, {self.smallest}")

    def size(self, n: int) -> int:
        return bucket_size(n, self.factor, self.smallest)

    def shape_for(self, instance: "Instance") -> tuple[int, int]:
        """(K, M) of the bucket ``instance`` goes to."""
        K, M = instance.num_arms, instance.num_items
        return (self.size(K) if self.arms else K), (self.size(M) if self.items else M)


def bucket_size(n: int, factor: int = 2, smallest: int = 8) -> int:
    """The smallest ``smallest * factor**k`` (k >= 0) that is >= n."""
    b = int(smallest)
    while b < n:
        b *= int(factor)
    return b


def pad_to(instance: Instance, num_arms: int, num_items: int) -> Instance:
    """``instance`` (or a batch) with zero arms appended up to ``num_arms`` and zero items up to
    ``num_items``, and the masks ``arm_mask`` / ``item_mask`` marking the real ones (always set,
    even when nothing is appended, so every instance of a bucket has one pytree structure).

    The real arms and items keep their indices (0 .. K - 1, 0 .. M - 1), so per-arm results are
    read back with ``[..., :K]``.  Masks already present are extended.  A zero arm adds nothing to
    any Gram matrix and has mean reward 0; but only the masks make it safe: an algorithm that does
    not declare ``supports_padding`` must not be run on a padded instance.
    """
    K, M = instance.num_arms, instance.num_items
    if num_arms < K or num_items < M:
        raise ValueError(f"cannot pad (K, M) = ({K}, {M}) down to ({num_arms}, {num_items})")
    lead = instance.batch_shape

    def grow(a, n, axis_len):
        pad = [(0, 0)] * a.ndim
        pad[len(lead)] = (0, n - axis_len)
        return jnp.pad(a, pad)

    am, im = instance.valid_arms(), instance.valid_items()
    extra = {}
    if instance.arm_noise is not None:  # padded arms: unit noise (never pulled)
        pad = [(0, 0)] * instance.arm_noise.ndim
        pad[len(lead)] = (0, num_arms - K)
        extra["arm_noise"] = jnp.pad(instance.arm_noise, pad, constant_values=1.0)
    return instance.replace(arms=grow(instance.arms, num_arms, K), items=grow(instance.items, num_items, M),
                            arm_mask=grow(jnp.asarray(am, bool), num_arms, K),
                            item_mask=grow(jnp.asarray(im, bool), num_items, M), **extra)


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
    for name, mask, n in (("arm_mask", instance.arm_mask, X.shape[-2]), ("item_mask", instance.item_mask, Z.shape[-2]),
                          ("arm_noise", instance.arm_noise, X.shape[-2])):
        if mask is not None and np.shape(mask) != batch + (n,):
            raise ValueError(f"{name} shape {np.shape(mask)} does not match {batch + (n,)}")
    if instance.arm_noise is not None:
        an = np.asarray(instance.arm_noise)
        if instance.model != "gaussian":
            raise ValueError(f"arm_noise (per-arm standard deviations) needs Gaussian rewards, got model={instance.model!r}")
        real = np.asarray(instance.valid_arms())
        if np.any(real & ~(np.isfinite(an) & (an > 0))):
            raise ValueError(f"arm_noise must be positive and finite on every arm, got {_show(an.tolist())}")
    n_arms = int(np.min(np.sum(np.asarray(instance.valid_arms()), axis=-1)))
    if n_arms < min_arms:
        raise ValueError(f"need at least {min_arms} arms, got K = {n_arms}")
    if int(np.min(np.sum(np.asarray(instance.valid_items()), axis=-1))) < 1:
        raise ValueError("need at least one item")
    if instance.model == "gaussian" and np.any(nz <= 0):
        raise ValueError("Gaussian rewards need a positive noise scale")
    if instance.model not in REWARD_MODELS:
        raise ValueError(f"unknown reward model {instance.model!r}")
    if need_span:
        # padded arms are zero rows: they never change the rank
        ranks = np.linalg.matrix_rank(X.reshape((-1,) + X.shape[-2:]))
        if np.any(ranks < d):
            raise ValueError(f"the arms do not span R^{d} (rank {int(np.min(ranks))}); "
                             "this algorithm needs them to (least squares would be undetermined)")
