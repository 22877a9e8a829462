"""Reward models: draw rewards of one arm, or exact per-arm reward sums for a vector of counts.

Three models, chosen by ``instance.model``:

* ``"gaussian"``: r = x^T theta + sigma * N(0, 1) (seeds 000, 001, 003; seed 002 Sec 8.1-8.3),
  sigma = ``noise``, or arm k's own ``arm_noise[k]`` on a heteroscedastic instance,
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
        sd = instance.noise if instance.arm_noise is None else instance.arm_noise[arm]
        return mu + sd * jax.random.normal(key, (), mu.dtype)
    return jax.random.bernoulli(key, mu).astype(mu.dtype)


def pull_counts(key: jax.Array, instance: Instance, counts: jax.Array) -> jax.Array:
    """Per-arm sums of ``counts[k]`` independent rewards of arm k, drawn exactly in O(K) [K].

    ``counts`` is a non-negative integer (or integer-valued float) vector of shape [K]; arms with
    count 0 get a sum of exactly 0.
    """
    from jaxbandits.batching import current_policy

    # Under the accelerator policy the draw ends its kernel (an optimisation barrier, no change to
    # any value): XLA:GPU otherwise fuses the normal draws' erf_inv into what reads the sums (a
    # max over the arms), one Triton reduction over a tile of lanes x K, which spilled 20 KB a
    # thread and took ptxas 3.9 of UGapE's compile seconds (top-m K = 4, 262,144 lanes).
    fence = jax.lax.optimization_barrier if current_policy().batched else (lambda a: a)
    mu = mean_reward(instance, instance.arm_means())
    n = jnp.asarray(counts).astype(mu.dtype)
    if instance.model == "gaussian":
        sd = instance.noise if instance.arm_noise is None else instance.arm_noise
        return fence(n * mu + sd * jnp.sqrt(n) * normal_where(key, n > 0, mu.dtype))
    return jax.random.binomial(key, n, mu, dtype=mu.dtype)


def _unit_at(key: jax.Array, idx: jax.Array, dtype) -> jax.Array:
    """Entries ``idx`` (flat indices) of the floats in [0, 1) that ``jax.random.uniform`` and
    ``jax.random.normal`` start from, computing only those entries.

    With ``jax_threefry_partitionable`` (JAX's default) the entry at flat index i is a function of
    the key and i alone: the threefry2x32 hash of the counter (0, i), its two words joined (64-bit)
    or xor-ed (32-bit), its mantissa bits placed in [1, 2) and 1 subtracted: JAX's own sequence of
    operations (``jax._src.random``), checked against JAX's draws once per dtype
    (:func:`draws_at_exact`) before it is used.
    """
    from jax.extend.random import threefry2x32_p

    kd = jax.random.key_data(key)
    lo_count = idx.astype(jnp.uint32)
    b1, b2 = threefry2x32_p.bind(kd[0], kd[1], jnp.zeros_like(lo_count), lo_count)
    return unit_from_words(b1, b2, dtype)


#: threefry2x32's rotations (Salmon et al. 2011, Threefry-2x32 with 20 rounds, as JAX runs it)
_THREEFRY_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def threefry2x32(k0, k1, x0, x1):
    """JAX's threefry2x32 hash of the counter words (x0, x1) under the key words (k0, k1), written
    out in uint32 arithmetic (adds, rotations, xors) so that it runs where JAX's primitive has no
    lowering (a Pallas kernel); bit for bit the primitive's (``tests/test_fused_kernels.py``)."""
    u32 = jnp.uint32
    k0, k1, x0, x1 = (jnp.asarray(v).astype(u32) for v in (k0, k1, x0, x1))
    ks = (k0, k1, k0 ^ k1 ^ jnp.asarray(0x1BD11BDA, u32))
    x0, x1 = x0 + ks[0], x1 + ks[1]
    for i in range(5):
        for r in _THREEFRY_ROTATIONS[i % 2]:
            x0 = x0 + x1
            x1 = jax.lax.shift_left(x1, jnp.asarray(r, u32)) | jax.lax.shift_right_logical(x1, jnp.asarray(32 - r, u32))
            x1 = x0 ^ x1
        x0 = x0 + ks[(i + 1) % 3]
        x1 = x1 + ks[(i + 2) % 3] + jnp.asarray(i + 1, u32)
    return x0, x1


def unit_from_words(b1, b2, dtype) -> jax.Array:
    """:func:`_unit_at`'s float in [0, 1) from threefry's two output words."""
    dtype = jnp.dtype(dtype)
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
    return jax.lax.bitcast_convert_type(fb, dtype) - jnp.array(1.0, dtype)


def uniform_at_words(k0, k1, idx, dtype) -> jax.Array:
    """:func:`uniform_at` from the key's two words, by :func:`threefry2x32` written out: the same
    bits, in code a Pallas kernel can hold."""
    dtype = jnp.dtype(dtype)
    idx = jnp.asarray(idx).astype(jnp.uint32)
    b1, b2 = threefry2x32(k0, k1, jnp.zeros_like(idx), idx)
    floats = unit_from_words(b1, b2, dtype)
    lo, hi = jnp.zeros((), dtype), jnp.ones((), dtype)
    return jax.lax.max(lo, floats * (hi - lo) + lo)


def uniform_at(key: jax.Array, idx: jax.Array, dtype) -> jax.Array:
    """Entries ``idx`` (flat indices) of ``jax.random.uniform(key, shape, dtype)``, for any shape,
    computing only those entries (:func:`_unit_at`; bit for bit where :func:`draws_at_exact`
    holds)."""
    dtype = jnp.dtype(dtype)
    floats = _unit_at(key, idx, dtype)
    lo, hi = jnp.zeros((), dtype), jnp.ones((), dtype)
    return jax.lax.max(lo, floats * (hi - lo) + lo)


def _normal_at(key: jax.Array, idx: jax.Array, dtype) -> jax.Array:
    """``jax.random.normal(key, (K,), dtype)[idx]`` for a 1-D draw, computing only those entries:
    :func:`_unit_at` mapped to [nextafter(-1, 0), 1) and to a normal by sqrt(2) erfinv, as JAX
    does."""
    dtype = jnp.dtype(dtype)
    floats = _unit_at(key, idx, dtype)
    lo = jnp.asarray(np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype), dtype=dtype))
    hi = jnp.asarray(np.array(1.0, dtype))
    u = jax.lax.max(lo, floats * (hi - lo) + lo)
    return jax.lax.mul(jnp.asarray(np.sqrt(2), dtype), jax.lax.erf_inv(u))


@functools.cache
def draws_at_exact(kind: str, dtype_name: str) -> bool:
    """Whether the entry-wise draws (``kind``: "uniform", :func:`uniform_at`; "normal",
    :func:`_normal_at`) reproduce ``jax.random.uniform`` / ``jax.random.normal`` bit for bit in this
    JAX (its key implementation and partitionable threefry), checked on a few keys and entries."""
    if not jax.config.jax_threefry_partitionable:
        return False
    dtype = jnp.dtype(dtype_name)
    try:
        with jax.ensure_compile_time_eval():
            idx = jnp.asarray([0, 1, 5, 7, 63, 64, 300, 383, 999, 4095])
            for seed in (0, 1, 12345):
                key = jax.random.fold_in(jax.random.key(seed), 3)
                if kind == "normal":
                    full, got = jax.random.normal(key, (4096,), dtype)[idx], _normal_at(key, idx, dtype)
                else:
                    full, got = jax.random.uniform(key, (64, 64), dtype).ravel()[idx], uniform_at(key, idx, dtype)
                if not bool(jnp.all(full == got)):
                    return False
    except Exception:  # a key implementation without threefry key data, or a changed primitive
        return False
    return True


def normal_where(key: jax.Array, where: jax.Array, dtype) -> jax.Array:
    """``jax.random.normal(key, where.shape, dtype)`` on the entries where ``where`` holds, 0
    elsewhere ([K]), computing only those entries: the entries are gathered into the smallest
    buffer of 16, 64, 256, ... that holds them (under ``vmap`` the one holding every lane's) and
    drawn there by :func:`_normal_at`, bit for bit the values of the full draw.  Falls back to the
    full draw where that identity does not hold (:func:`draws_at_exact`)."""
    from jaxbandits.batching import in_smallest_bucket, item_buckets

    K = where.shape[0]
    if K <= 16 or not draws_at_exact("normal", jnp.dtype(dtype).name):
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


#: candidate draws per binomial of :func:`binomial` (the iterations of JAX's loops that are
#: evaluated, all at once); a draw that needs more is reported as unfinished
BINOMIAL_TRIES = 64


#: log k! - Stirling's approximation of it for k = 0, ..., 9 (``jax.random.binomial``'s table)
_STIRLING_TABLE = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509,
                   0.0166446911898211, 0.0138761288230707, 0.0118967099458917, 0.0104112652619720,
                   0.00925546218271273, 0.00833056343336287)


def _stirling_tail(k: jax.Array) -> jax.Array:
    """log k! - Stirling's approximation of it, the correction of the BTRS bound (Hormann 1993;
    tabulated for k <= 9, series beyond), as ``jax.random.binomial`` computes it."""
    table = jnp.array(_STIRLING_TABLE, dtype=k.dtype)
    small = k <= 9
    kc = jnp.clip(k, 0.0, 9.0)
    kp1sq = (kc + 1) * (kc + 1)
    approx = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (kc + 1)
    return jnp.where(small, table[jnp.floor(kc).astype(jnp.int32)], approx)


def _uniforms(key: jax.Array, tries: int, parts: int, shape, dtype) -> list[jax.Array]:
    """The uniforms iteration i = 0 .. tries - 1 of JAX's binomial loops draws, stacked [tries,
    *shape]: the inversion loop splits its key into (sub, next) and draws from sub (parts = 2);
    the BTRS loop splits it into (next, sub_0, sub_1) and draws from sub_0 and sub_1 (parts = 3).
    The keys of the chain come in blocks (:func:`jaxbandits.batching.split_chain`), bit for bit
    those of the loop, which unrolled made most of an H100 compile of the programs that draw a
    binomial (XY-static: 45 -> 11 CPU seconds)."""
    from jaxbandits.batching import split_chain

    subs = split_chain(key, tries, parts, carry=1 if parts == 2 else 0)
    return [jax.vmap(lambda k: jax.random.uniform(k, shape, dtype))(s) for s in subs]


#: the largest static bound on the count for which :func:`binomial` draws by inversion alone
#: (n min(p, 1 - p) <= n / 2 <= 10: JAX's BTRS branch is never taken)
INVERSION_MAX_COUNT = 20


def _binomial_inputs(count, prob):
    """``jax.random.binomial``'s preparation of a draw, in its order of operations: (count
    floored, q = min(p, 1 - p) with 0.01 where p is invalid, p < 1/2, count NaN or negative, count
    infinite, q NaN, q negative, whether the inversion draws)."""
    p_lt_half = prob < 0.5
    q = jnp.where(p_lt_half, prob, 1.0 - prob)
    count_bad = jnp.isnan(count) | (count < 0.0)
    count_inf = jnp.isinf(count)
    q_nan = jnp.isnan(q)
    q_neg = q < 0.0
    q = jnp.where(q_nan | q_neg, jnp.full_like(q, 0.01), q)
    use_inversion = count_bad | (count * q <= 10.0)
    return jnp.floor(count), q, p_lt_half, count_bad, count_inf, q_nan, q_neg, use_inversion


def _btrs_setup(use_inversion, count, q):
    """The constants of Hormann's BTRS as ``jax.random.binomial`` computes them (count 1e4 and
    q = 1/2 where the inversion draws instead): (count, q, a, b, c, v_r, r, alpha, m)."""
    c_b = jnp.where(use_inversion, 1e4, count)
    q_b = jnp.where(use_inversion, 0.5, q)
    stddev = jnp.sqrt(c_b * q_b * (1 - q_b))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * q_b
    c = c_b * q_b + 0.5
    v_r = 0.92 - 4.2 / b
    r = q_b / (1 - q_b)
    alpha = (2.83 + 5.1 / b) * stddev
    m = jnp.floor((c_b + 1) * q_b)
    return c_b, q_b, a, b, c, v_r, r, alpha, m


def _btrs_candidate(u, v, setup, stirling):
    """(candidate, accepted) of one BTRS iteration from its two uniforms, as
    ``jax.random.binomial`` computes them; ``stirling``: :func:`_stirling_tail` or its select
    form."""
    c_b, _, a, b, c, v_r, r, alpha, m = setup
    u = u - 0.5
    us = 0.5 - jnp.abs(u)
    accept1 = (us >= 0.07) & (v <= v_r)
    k = jnp.floor((2 * a / us + b) * u + c)
    reject = (k < 0) | (k > c_b)
    v = jnp.log(v * alpha / (a / (us * us) + b))
    ub = ((m + 0.5) * jnp.log((m + 1) / (r * (c_b - m + 1)))
          + (c_b + 1) * jnp.log((c_b - m + 1) / (c_b - k + 1))
          + (k + 0.5) * jnp.log(r * (c_b - k + 1) / (k + 1))
          + stirling(m) + stirling(c_b - m) - stirling(k) - stirling(c_b - k))
    return k, accept1 | (~reject & (v <= ub))


def binomial(key: jax.Array, n: jax.Array, p: jax.Array, dtype=None,
             tries: int = BINOMIAL_TRIES, fixed: bool | None = None,
             max_count: int | None = None) -> tuple[jax.Array, jax.Array]:
    """(draw, finished): ``jax.random.binomial(key, n, p, dtype=dtype)`` with a trip count fixed
    when the program is compiled.

    ``jax.random.binomial`` (the algorithm of TensorFlow) draws by inversion through a sum of
    geometric waiting times when n min(p, 1 - p) <= 10 and by the transformed rejection BTRS of
    Hormann (1993) otherwise, each a ``while`` loop that runs until its draw is found: on an
    accelerator its predicate goes to the host every iteration.  Here the first ``tries``
    iterations of both loops are computed at once, from the very keys JAX's loops would use, and
    the draw is the one the loop stops at: bit for bit ``jax.random.binomial``'s value wherever the
    loop stops within ``tries`` iterations (tested), so streams are unchanged.  ``finished`` is
    False where it does not: the inversion needs X + 1 iterations (X ~ Bin(n, q), n q <= 10, so
    P(X >= 64) <= e^-10 (10 e / 64)^64 < 1e-28 by the Chernoff bound), BTRS one iteration per
    candidate (accepted with probability at least 0.65 on every (n, q) with n q > 10, measured in
    the tests: P(64 rejections) < 0.35^64 < 1e-29).  An unfinished draw returns the mode floor((n + 1) p)
    and must be counted by the caller; it has never been seen.

    ``fixed``: use the fixed trip count (default: under an accelerator policy,
    :func:`jaxbandits.batching.current_policy`); otherwise ``jax.random.binomial`` itself, whose
    loops cost nothing extra on a CPU, and ``finished`` is True.

    Under a policy with fused kernels (GPUs, :func:`jaxbandits.batching.solve_for`) a scalar draw
    is one kernel (:func:`_binomial_lanes`) that runs JAX's loops as written, each until its draw
    is found or for ``tries`` iterations: the same draws and ``finished`` as the form above, in one
    launch instead of about 200 (ALBA's multinomial on Soare's d = 5 instance, H100 model) and a
    fraction of its compile time.

    ``max_count``: a bound on ``n`` known when the program is compiled (a round that pulls each
    arm at most once: 1).  Up to :data:`INVERSION_MAX_COUNT` every draw is an inversion, which
    stops within n + 1 iterations: ``max_count + 1`` tries are computed (not ``tries``), BTRS is
    not, and every draw finishes.  A count above it is the caller's error; it is reported as
    unfinished.
    """
    from jaxbandits.batching import current_policy

    if max_count is not None and (isinstance(max_count, bool) or not isinstance(max_count, int) or max_count < 0):
        raise ValueError(f"binomial: max_count must be None or a non-negative int (a bound known when the "
                         f"program is compiled), got {max_count!r}")
    if not (current_policy().batched if fixed is None else fixed):
        draw = jax.random.binomial(key, n, p, dtype=dtype)
        return draw, jnp.ones(jnp.shape(draw), bool)
    p = jnp.asarray(p)
    if not jnp.issubdtype(p.dtype, jnp.floating):
        p = p.astype(jnp.result_type(float))
    dtype = p.dtype if dtype is None else jnp.dtype(dtype)
    shape = jnp.broadcast_shapes(jnp.shape(n), jnp.shape(p))
    kernels = current_policy().kernels
    if kernels != "xla" and shape == () and max_count is None:
        # one fused kernel: JAX's loops themselves, each stopping at its draw (at most `tries`)
        from jaxbandits.batching import fused_elementwise

        kd = jax.random.key_data(key)
        draw, finished = fused_elementwise(
            lambda k0, k1, n_, p_: _binomial_lanes(k0, k1, n_, p_, int(tries), p.dtype),
            (kd[0], kd[1], jnp.asarray(n).astype(p.dtype), p), kernels, name="binomial")
        return draw.astype(dtype), finished != 0
    prob = jnp.broadcast_to(p, shape)
    count, q, p_lt_half, count_bad, count_inf, q_nan, q_neg, use_inversion = _binomial_inputs(
        jnp.broadcast_to(jnp.asarray(n).astype(p.dtype), shape), prob)
    inversion_only = max_count is not None and max_count <= INVERSION_MAX_COUNT
    if inversion_only:
        tries = int(max_count) + 1

    # inversion: the count of partial sums of geometric waiting times that stay <= n
    c_inv = jnp.where(use_inversion, count, 0.0)
    (u,) = _uniforms(key, tries, 2, shape, prob.dtype)
    geom = jnp.ceil(jnp.log(u) / jnp.log1p(-q))
    sums = jnp.cumsum(geom, axis=0)
    k_inv = jnp.sum(sums <= c_inv, axis=0).astype(prob.dtype)
    done_inv = sums[-1] > c_inv
    if inversion_only:
        finished = use_inversion & done_inv & (count <= max_count)
        draw = jnp.where(finished, k_inv, jnp.floor((count + 1) * q))
        return _binomial_finish(draw, finished, count, p_lt_half, q_neg, q_nan, count_bad, count_inf, dtype)

    # BTRS: the first accepted candidate (JAX's loop over an array keeps the last candidate
    # accepted before every entry has one; for one draw, the first)
    u, v = _uniforms(key, tries, 3, shape, prob.dtype)
    k, accept = _btrs_candidate(u, v, _btrs_setup(use_inversion, count, q), _stirling_tail)
    it = jnp.arange(tries).reshape((tries,) + (1,) * len(shape))
    first = jnp.min(jnp.where(accept, it, tries), axis=0)
    ran = jnp.max(first)
    last = jnp.max(jnp.where(accept & (it <= ran), it, -1), axis=0)
    k_btrs = jnp.take_along_axis(k, jnp.maximum(last, 0)[None], axis=0)[0]
    done_btrs = last >= 0

    finished = jnp.where(use_inversion, done_inv, done_btrs)
    draw = jnp.where(use_inversion, k_inv, k_btrs)
    draw = jnp.where(finished, draw, jnp.floor((count + 1) * q))
    return _binomial_finish(draw, finished, count, p_lt_half, q_neg, q_nan, count_bad, count_inf, dtype)


def _binomial_lanes(k0, k1, n, p, tries: int, dtype):
    """(draw, finished) of :func:`binomial` for scalars, elementwise (the body of its fused kernel,
    :func:`jaxbandits.batching.fused_elementwise`): ``jax.random.binomial``'s two loops as
    it writes them, from the key's words ``k0``, ``k1`` (the keys of its chain and its uniforms by
    :func:`threefry2x32`, as ``jax.random.split`` and ``jax.random.uniform`` compute them), each
    stopping when its draw is found or after ``tries`` iterations.  Over a block of lanes a loop
    runs until the block's last lane is done; a lane that is done keeps its values, as under
    ``vmap`` of JAX's loop."""
    count, q, p_lt_half, count_bad, count_inf, q_nan, q_neg, use_inversion = _binomial_inputs(
        n.astype(dtype), p.astype(dtype))
    u32 = jnp.uint32
    zero, one, two = (jnp.zeros_like(k0, u32) + u32(i) for i in (0, 1, 2))
    any_ = lambda b: jnp.max(b.astype(jnp.int32)) > 0  # noqa: E731 (no reduce_or in Triton)

    # inversion: `subkey, key = split(key)`, then a geometric waiting time from uniform(subkey)
    c_inv = jnp.where(use_inversion, count, 0.0)
    log1minusprob = jnp.log1p(-q)

    def inv_body(c):
        i, num, total, a0, a1 = c
        live = total <= c_inv
        s0, s1 = threefry2x32(a0, a1, zero, zero)
        n0, n1 = threefry2x32(a0, a1, zero, one)
        geom = jnp.ceil(jnp.log(uniform_at_words(s0, s1, zero, dtype)) / log1minusprob)
        return (i + 1, jnp.where(live, num + 1.0, num), jnp.where(live, total + geom, total),
                jnp.where(live, n0, a0), jnp.where(live, n1, a1))

    zf = jnp.zeros_like(q)
    _, num, total, _, _ = jax.lax.while_loop(lambda c: (c[0] < tries) & any_(c[2] <= c_inv), inv_body,
                                             (jnp.zeros((), jnp.int32), zf, zf, k0, k1))
    k_inv = num - 1.0
    done_inv = total > c_inv

    # BTRS: `key, subkey_0, subkey_1 = split(key, 3)`, a candidate from uniform(subkey_0) and
    # uniform(subkey_1), the first accepted one kept
    setup = _btrs_setup(use_inversion, count, q)

    def btrs_body(c):
        i, k_out, accepted, a0, a1 = c
        live = (accepted == 0) & ~use_inversion
        n0, n1 = threefry2x32(a0, a1, zero, zero)
        s0, s1 = threefry2x32(a0, a1, zero, one)
        t0, t1 = threefry2x32(a0, a1, zero, two)
        k, accept = _btrs_candidate(uniform_at_words(s0, s1, zero, dtype), uniform_at_words(t0, t1, zero, dtype),
                                    setup, _stirling_tail_select)
        accept = live & accept
        return (i + 1, jnp.where(accept, k, k_out), jnp.where(accept, 1, accepted),
                jnp.where(live, n0, a0), jnp.where(live, n1, a1))

    _, k_btrs, accepted, _, _ = jax.lax.while_loop(
        lambda c: (c[0] < tries) & any_((c[2] == 0) & ~use_inversion), btrs_body,
        (jnp.zeros((), jnp.int32), jnp.zeros_like(q) - 1.0, jnp.zeros_like(k0, jnp.int32), k0, k1))

    finished = jnp.where(use_inversion, done_inv, accepted != 0)
    draw = jnp.where(use_inversion, k_inv, k_btrs)
    draw = jnp.where(finished, draw, jnp.floor((count + 1) * q))
    draw, finished = _binomial_finish(draw, finished, count, p_lt_half, q_neg, q_nan, count_bad, count_inf, dtype)
    return draw, finished.astype(jnp.int32)


def _stirling_tail_select(k: jax.Array) -> jax.Array:
    """:func:`_stirling_tail` with its table read by selects (a kernel has no gather)."""
    kc = jnp.clip(k, 0.0, 9.0)
    kp1sq = (kc + 1) * (kc + 1)
    approx = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (kc + 1)
    idx = jnp.floor(kc).astype(jnp.int32)
    tab = jnp.zeros_like(k)
    for i, t in enumerate(_STIRLING_TABLE):
        tab = jnp.where(idx == i, jnp.asarray(t, k.dtype), tab)
    return jnp.where(k <= 9, tab, approx)


def _binomial_finish(draw, finished, count, p_lt_half, q_neg, q_nan, count_bad, count_inf, dtype):
    """:func:`binomial`'s invalid inputs (NaN), infinite counts and the reflection for p >= 1/2."""
    invalid = q_neg | q_nan | count_bad
    draw = jnp.where(invalid, jnp.nan, draw)
    draw = jnp.where(count_inf & ~invalid, jnp.inf, draw)
    draw = jnp.where(p_lt_half | count_bad | q_nan | count_inf, draw, count - draw)
    return draw.astype(dtype), finished | invalid | count_inf


def pull_counts_fixed(key: jax.Array, instance: Instance, counts: jax.Array,
                      tries: int = BINOMIAL_TRIES, max_count: int | None = None) -> tuple[jax.Array, jax.Array]:
    """(sums, finished): :func:`pull_counts` with no data-dependent loop under an accelerator policy.

    Bernoulli sums are drawn by :func:`binomial`, which under an accelerator policy
    (:func:`jaxbandits.batching.current_policy`) computes a fixed number of the iterations of
    ``jax.random.binomial``'s loops: the same sums, bit for bit, wherever every draw finishes within
    them, and ``finished`` (a bool scalar) False where one did not (probability below 1e-28 a draw;
    the caller reports the run through :attr:`jaxbandits.algorithms.base.Outcome.converged`).  On a
    CPU, and for Gaussian rewards, the sums are :func:`pull_counts`'s and ``finished`` is True.
    ``tries``, ``max_count``: the iterations computed and a static bound on the counts
    (:func:`binomial`).
    """
    mu = mean_reward(instance, instance.arm_means())
    if instance.model == "gaussian":
        return pull_counts(key, instance, counts), jnp.ones((), bool)
    n = jnp.asarray(counts).astype(mu.dtype)
    draw, finished = binomial(key, n, mu, dtype=mu.dtype, tries=tries, max_count=max_count)
    return draw, jnp.all(finished)


def multinomial(key: jax.Array, n: jax.Array, p: jax.Array, dtype=None,
                tries: int = BINOMIAL_TRIES, fixed: bool | None = None) -> tuple[jax.Array, jax.Array]:
    """(counts [K], unfinished): ``jax.random.multinomial(key, n, p, dtype=dtype)`` for one
    probability vector, its conditional binomials drawn by :func:`binomial` (bit for bit the same
    counts wherever every binomial finishes); ``unfinished`` counts the binomials that did not.
    ``fixed`` as in :func:`binomial`."""
    p = jnp.asarray(p)
    if not jnp.issubdtype(p.dtype, jnp.floating):
        p = p.astype(jnp.result_type(float))
    dtype = p.dtype if dtype is None else jnp.dtype(dtype)
    rest = jax.lax.cumsum(p, 0, reverse=True)
    ratios = p / jnp.where(rest == 0, 1, rest)
    keys = jax.random.split(key, p.shape[0])

    def f(carry, rk):
        rem, bad = carry
        ratio, k = rk
        cnt, ok = binomial(k, rem, jnp.clip(ratio, 0, 1), dtype=rem.dtype, tries=tries, fixed=fixed)
        return (rem - cnt, bad + (~ok).astype(jnp.int32)), cnt

    (_, bad), counts = jax.lax.scan(f, (jnp.asarray(n, p.dtype), jnp.zeros((), jnp.int32)), (ratios, keys))
    return counts.astype(dtype), bad
