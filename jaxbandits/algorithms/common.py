"""Pieces shared by the linear algorithms: least-squares statistics, GLR statistic, the
closed-form small-d linear algebra of the per-pull algorithms, the random spanning set of forced
exploration, and top-m selection.

Numerics (docs/design.md, section 9): the design matrix A_t = sum_s x_s x_s^T (+ lambda I) is kept as exact
sufficient statistics (per-arm counts and reward sums, from which A_t and b_t are rebuilt, or
accumulated in float64), and every solve goes through a fresh Cholesky factorisation.  There is no
Sherman-Morrison drift to correct: with float64 statistics the estimate and the quadratic forms
match a direct float64 solve to ~1e-12 after millions of pulls (tested in
``tests/test_environment_stats.py::test_least_squares_stats_match_direct_solve_after_many_pulls``).
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxbandits.batching import argmax_fast, columns_dot, current_policy, max_argmax  # noqa: F401 (also used from here)
from jaxbandits.design.core import SMALL_DIM, small_backward, small_cholesky, small_forward, small_pivots_exceed
from jaxbandits.instances.base import Instance
from jaxbandits.rules.thresholds import anytime_delta, log_det_ratio  # noqa: F401 (also used from here)
from jaxbandits.rules.thresholds import prop2 as glr_threshold  # noqa: F401 (its old name and home)
from jaxbandits.rules.thresholds import prop2_small as glr_threshold_small  # noqa: F401 (its old name and home)


class LinearStats(NamedTuple):
    """Sufficient statistics of the observations of a linear bandit.

    Attributes:
      counts: [K] number of pulls of each arm (float, exact integers up to 2^53).
      sums: [K] sum of the rewards of each arm.
      gram: [d, d] A_t = sum_k counts_k x_k x_k^T (without regulariser).
      b: [d] sum_s x_s r_s = X^T sums.
    """

    counts: jax.Array
    sums: jax.Array
    gram: jax.Array
    b: jax.Array

    @property
    def t(self) -> jax.Array:
        return jnp.sum(self.counts)


def noise_scale(sigma, instance: Instance) -> jax.Array:
    """Sub-Gaussian scale sigma of the rewards, used wherever a paper's widths, phase sizes and
    thresholds have sigma: ``sigma`` if given (an explicit option of every algorithm), else the
    instance's Gaussian noise scale, or 1/2 for Bernoulli/logistic rewards (rewards in [0, 1] are
    1/2-sub-Gaussian).  Uses ``jnp`` only, so ``sigma`` may be a traced (dynamic) field; a NaN
    ``sigma`` means None (the engine passes ``sigma=None`` as a traced NaN, so that the default and
    an explicit value share one program: ``Algorithm.none_traced``)."""
    dtype = instance.arms.dtype
    default = jnp.asarray(instance.noise if instance.model == "gaussian" else 0.5, dtype)
    if sigma is None:
        return default
    sigma = jnp.asarray(sigma, dtype)
    return jnp.where(jnp.isnan(sigma), default, sigma)


def require_linear_rewards(instance: Instance, name: str,
                           hint: str = "use GSE with estimator='logistic' or a GLM algorithm") -> None:
    """Refuse (``ValueError``) a reward model whose mean is not x^T theta.

    The least-squares algorithms (seed 000 Sec 2, seed 001 Sec 1.1, seed 003 Sec 2) assume
    r = x^T theta + eta with eta zero-mean sub-Gaussian.  Gaussian rewards satisfy it; Bernoulli
    rewards do when every arm's mean x^T theta lies in [0, 1] (then eta is bounded,
    1/2-sub-Gaussian); the logistic model (mean sigmoid(x^T theta)) and Bernoulli arms whose
    x^T theta is clipped do not.  Host-side (``validate``), before anything is compiled.
    """
    import numpy as np

    if instance.model == "logistic":
        raise ValueError(
            f"{name} assumes linear rewards r = x^T theta + sub-Gaussian noise; the logistic model's mean "
            f"sigmoid(x^T theta) is not linear in theta ({hint})")
    if instance.model == "bernoulli":
        means = np.asarray(instance.arm_means())
        if np.any(means < 0.0) or np.any(means > 1.0):
            raise ValueError(
                f"{name} assumes linear rewards; with Bernoulli rewards every arm mean x^T theta must "
                f"lie in [0, 1] (got range [{means.min():.3g}, {means.max():.3g}], which the "
                "environment clips, so the mean is no longer linear in theta)")


def check_sigma(sigma) -> None:
    """Refuse a non-positive or non-finite ``sigma`` option (None = the instance's noise scale).
    A traced sigma (a dynamic field) is not checked."""
    import numpy as np

    if sigma is None or isinstance(sigma, jax.core.Tracer):
        return
    s = np.asarray(sigma)
    if s.shape != () or not np.isfinite(s) or not s > 0:
        raise ValueError(f"sigma must be a positive finite scalar (or None), got {sigma!r}")


def init_stats(instance: Instance) -> LinearStats:
    K, d = instance.arms.shape
    dt = instance.arms.dtype
    return LinearStats(jnp.zeros(K, dt), jnp.zeros(K, dt), jnp.zeros((d, d), dt), jnp.zeros(d, dt))


#: most arms for which :func:`add_pull` adds a one-hot vector under the accelerator policy (many
#: arms: a scatter of one entry moves fewer bytes than an add over all of them)
ONE_HOT_ARMS = 64


def add_pull(stats: LinearStats, instance: Instance, arm: jax.Array, reward: jax.Array, counted=None) -> LinearStats:
    """Record one reward of ``arm``: O(d^2).  A part that a rule does not keep (empty: the per-arm
    reward sums of :class:`jaxbandits.rules.lazy.SpanningGLR`, A_t and b_t of
    :class:`jaxbandits.rules.gap.GapIndices`) stays empty.  ``counted`` (a bool; None: True): where
    False the per-arm counts and sums are left as they are (0 added: the same bits), and the
    rest is the caller's to discard: a lane that the caller holds keeps its [K] arrays in place."""
    x = instance.arms[arm]
    kept = lambda a: a.shape[0] > 0
    one = 1.0 if counted is None else jnp.where(counted, 1.0, 0.0)
    if current_policy().batched and stats.counts.shape[0] <= ONE_HOT_ARMS:
        # the accelerator program: an elementwise add of a one-hot vector (the same bits: x + 0 = x),
        # which fuses with what reads the counts, where a scatter is a kernel of its own on a GPU
        hit = jnp.arange(stats.counts.shape[0]) == arm
        if counted is not None:
            hit = hit & counted
        counts = stats.counts + jnp.where(hit, 1.0, 0.0).astype(stats.counts.dtype)
        sums = stats.sums + jnp.where(hit, reward, 0.0).astype(stats.sums.dtype) if kept(stats.sums) else stats.sums
    else:
        counts = stats.counts.at[arm].add(one)
        r = reward if counted is None else jnp.where(counted, reward, 0.0)
        sums = stats.sums.at[arm].add(r) if kept(stats.sums) else stats.sums
    return LinearStats(
        counts,
        sums,
        stats.gram + jnp.outer(x, x) if kept(stats.gram) else stats.gram,
        stats.b + reward * x if kept(stats.b) else stats.b,
    )


def add_counts(stats: LinearStats, instance: Instance, counts: jax.Array, sums: jax.Array) -> LinearStats:
    """Record a whole phase: ``counts[k]`` pulls of arm k whose rewards sum to ``sums[k]`` (an empty
    part stays empty, as in :func:`add_pull`)."""
    X = instance.arms
    counts = counts.astype(X.dtype)
    kept = lambda a: a.shape[0] > 0
    return LinearStats(
        stats.counts + counts,
        stats.sums + sums if kept(stats.sums) else stats.sums,
        stats.gram + (X.T * counts) @ X if kept(stats.gram) else stats.gram,
        stats.b + X.T @ sums if kept(stats.b) else stats.b,
    )


def regularized_gram(stats: LinearStats, reg: float | jax.Array = 0.0) -> jax.Array:
    d = stats.gram.shape[0]
    return stats.gram + reg * jnp.eye(d, dtype=stats.gram.dtype)


def _jittered(A: jax.Array) -> jax.Array:
    d = A.shape[0]
    jitter = 1e-12 * (jnp.trace(A) / d + 1e-30)
    return A + jitter * jnp.eye(d, dtype=A.dtype)


def _small_factor(A: jax.Array):
    """:func:`jaxbandits.design.core.small_cholesky` of the symmetrised A (as
    ``jnp.linalg.cholesky`` symmetrises its input)."""
    return small_cholesky(0.5 * (A + A.T))


def _lower(L, d: int, dtype) -> jax.Array:
    """The [d, d] array of a small factor's nested lists (zeros above the diagonal)."""
    zero = jnp.zeros((), dtype)
    return jnp.stack([jnp.stack([L[i][j] if j <= i else zero for j in range(d)]) for i in range(d)])


def _factor_lists(L: jax.Array):
    """The nested lists and reciprocals of a small factor given as an array."""
    d = L.shape[0]
    Ls = [[L[i, j] for j in range(i + 1)] for i in range(d)]
    return Ls, [1.0 / L[j, j] for j in range(d)]


def safe_cholesky(A: jax.Array) -> jax.Array:
    """Cholesky factor of a PSD matrix, with a tiny relative jitter so singular A stays finite.

    The jitter (1e-12 of the trace, i.e. far below any gap that matters in float64) only matters
    before the arms pulled span R^d; algorithms never stop in that regime (they check
    lambda_min(A_t) or pull a spanning set first).  For d <= :data:`jaxbandits.design.core.SMALL_DIM`
    the factor is unrolled scalar arithmetic (:func:`jaxbandits.design.core.small_cholesky`): under
    ``vmap`` it fuses into the step's kernels, where a batched library factorisation is a solver call
    of its own (on a GPU far costlier than the step's other kernels).
    """
    d = A.shape[0]
    if d <= SMALL_DIM:
        return _lower(_small_factor(_jittered(A))[0], d, A.dtype)
    return jnp.linalg.cholesky(_jittered(A))


def cholesky(A: jax.Array) -> jax.Array:
    """The lower Cholesky factor of a symmetric positive-definite A (``jnp.linalg.cholesky``, no
    jitter); unrolled for d <= SMALL_DIM (as :func:`safe_cholesky`)."""
    d = A.shape[0]
    if d <= SMALL_DIM:
        return _lower(_small_factor(A)[0], d, A.dtype)
    return jnp.linalg.cholesky(A)


def cho_solve(L: jax.Array, b: jax.Array) -> jax.Array:
    """A^{-1} b from the lower Cholesky factor L of A (b [d] or [d, n]); unrolled substitutions for
    d <= SMALL_DIM (as :func:`safe_cholesky`)."""
    d = L.shape[0]
    if d <= SMALL_DIM:
        Ls, r = _factor_lists(L)
        return jnp.stack(small_backward(Ls, r, small_forward(Ls, r, [b[i] for i in range(d)])))
    return jax.scipy.linalg.cho_solve((L, True), b)


def least_squares(stats: LinearStats, reg: float | jax.Array = 0.0):
    """Regularised least-squares estimate theta_hat = (A_t + reg I)^{-1} b_t and the Cholesky factor.

    Seed 000 Sec 3.2 (reg = 0), seed 003 Sec 2 (reg = lambda).
    """
    A = regularized_gram(stats, reg)
    d = A.shape[0]
    if d <= SMALL_DIM:
        Ls, r = _small_factor(_jittered(A))
        theta = jnp.stack(small_backward(Ls, r, small_forward(Ls, r, [stats.b[i] for i in range(d)])))
        return theta, _lower(Ls, d, A.dtype)
    L = safe_cholesky(A)
    theta = jax.scipy.linalg.cho_solve((L, True), stats.b)
    return theta, L


def whiten(L: jax.Array, V: jax.Array) -> jax.Array:
    """W = L^{-1} V^T [d, n] so that ||v_i||^2_{A^{-1}} = ||W[:, i]||^2 and v_i^T A^{-1} v_j = W_i . W_j."""
    d = L.shape[0]
    if d <= SMALL_DIM:
        Ls, r = _factor_lists(L)
        return jnp.stack(small_forward(Ls, r, [V[:, i] for i in range(d)]))
    return jax.scipy.linalg.solve_triangular(L, V.T, lower=True)


def inverse_from_cholesky(L: jax.Array) -> jax.Array:
    """A^{-1} (d x d, symmetrised) from the Cholesky factor of A."""
    d = L.shape[0]
    Ainv = cho_solve(L, jnp.eye(d, dtype=L.dtype))
    return 0.5 * (Ainv + Ainv.T)


def matrix_norms(L: jax.Array, V: jax.Array) -> jax.Array:
    """Squared norms ||v||^2_{A^{-1}} of the rows of V [n, d], given the Cholesky factor of A.

    Goes through the explicit d x d inverse and one matrix product: under vmap on CPU a batched
    triangular solve against n right-hand sides was ~100x slower (95 ms vs 0.9 ms for 32 lanes x
    1000 items, measured in the LT&S work), and in float64 the two agree to ~1e-12 relative.
    """
    Ainv = inverse_from_cholesky(L)
    return jnp.sum((V @ Ainv) * V, axis=-1)


def round_robin_arm(instance: Instance, t: jax.Array) -> jax.Array:
    """Arm pulled at time t by round-robin sampling: t mod K, over the real arms of a padded
    instance (the (t mod K_real)-th arm of ``arm_mask``)."""
    if instance.arm_mask is None:
        return t % instance.num_arms
    mask = instance.arm_mask
    i = t % jnp.sum(mask)
    return argmax_fast(jnp.cumsum(mask) == i + 1)


def glr_row(theta_hat: jax.Array, L: jax.Array, items: jax.Array, item_mask: jax.Array | None = None):
    """The row Z_{ihat,b}(t), b = 1..M, of the GLR statistics against the empirical best item ihat.

    Z_{a,b}(t) = sgn(theta^T (a - b)) (theta^T (a - b))^2 / (2 ||a - b||^2_{A_t^{-1}}) (seed 000
    Lemma 7, epsilon = 0): the GLR of the half-space {lambda : lambda^T (b - a) >= 0} (the piece of
    the alternative where b beats a).  Items identical to ihat (ihat itself) get +inf, and so do the
    padded items of a padded instance (``item_mask``: never the best nor a b).

    Returns: (row [M], index of the empirical best item).
    """
    values = items @ theta_hat
    best = jnp.argmax(values if item_mask is None else jnp.where(item_mask, values, -jnp.inf))
    diffs = items[best][None, :] - items  # [M, d]
    gaps = values[best] - values
    norms = matrix_norms(L, diffs)
    z = gaps * jnp.abs(gaps) / (2.0 * jnp.maximum(norms, 1e-300))
    same = jnp.all(diffs == 0, axis=-1)
    if item_mask is not None:
        same = same | ~item_mask
    return jnp.where(same, jnp.inf, z), best


def glr_statistic(theta_hat: jax.Array, L: jax.Array, items: jax.Array, item_mask: jax.Array | None = None):
    """Chernoff/GLR statistic Z(t) = max_a min_{b != a} Z_{a,b}(t) and the empirical best item.

    The max over a is attained at the empirical best item (Z_{a,b} >= 0 iff a is an empirical
    argmax), so only that row (:func:`glr_row`) is computed: O(M d^2).

    Returns: (Z(t), index of the empirical best item).
    """
    row, best = glr_row(theta_hat, L, items, item_mask)
    return jnp.min(row), best


def lambda_min(A: jax.Array) -> jax.Array:
    """Smallest eigenvalue of a symmetric matrix."""
    return jnp.linalg.eigvalsh(A)[0]


def inverse_gram(gram: jax.Array) -> jax.Array:
    """A_t^{-1} of the float64 sufficient statistic A_t (tiny relative jitter while A_t is
    singular, as :func:`safe_cholesky`).  d = 2: the closed form (elementwise, so it fuses
    under vmap; batched LAPACK calls on 2 x 2 matrices cost more than the rest of a round);
    otherwise a fresh Cholesky factorisation.  The M quadratic forms are then plain elementwise
    sums (a batched triangular solve over M right-hand sides is ~100x slower under vmap on CPU)."""
    d = gram.shape[0]
    if d == 2:
        jit = 1e-12 * (0.5 * (gram[0, 0] + gram[1, 1]) + 1e-30)
        a, b, c = gram[0, 0] + jit, 0.5 * (gram[0, 1] + gram[1, 0]), gram[1, 1] + jit
        det = a * c - b * b
        return jnp.stack([jnp.stack([c, -b]), jnp.stack([-b, a])]) / det
    L = safe_cholesky(gram)
    return cho_solve(L, jnp.eye(d, dtype=gram.dtype))


#: relative slack of :func:`covers`: A >= c (1 - COVER_RTOL) I is read as A >= c I
COVER_RTOL = 1e-12


def covers(A: jax.Array, c) -> jax.Array:
    """Whether A >= c I (lambda_min(A) >= c, A symmetric), up to a relative ``COVER_RTOL``:
    A - c (1 - COVER_RTOL) I positive definite.

    The slack settles exact ties: with a basis among the arms, A_t reaches lambda_min = c exactly
    after a round, and without it the verdict would follow the last bit of whatever computed
    lambda_min (fused arithmetic rounds per program: XLA contracts a * b + c where a fusion
    allows).  For d <= :data:`jaxbandits.design.core.SMALL_DIM` the test is on the pivots of the
    elimination (:func:`jaxbandits.design.core.small_pivots_exceed`; Sylvester's criterion), which
    fuses into the step's kernels where ``eigvalsh`` is a solver call on a GPU; above, ``eigvalsh``."""
    d = A.shape[0]
    shift = c * (1.0 - COVER_RTOL)
    if d <= SMALL_DIM:
        return small_pivots_exceed(A - shift * jnp.eye(d, dtype=A.dtype), 0.0)
    return lambda_min(A) > shift


def lambda_min_small(A: jax.Array) -> jax.Array:
    """lambda_min of a symmetric matrix: closed form for d = 2 (fuses under vmap), else
    ``eigvalsh``."""
    if A.shape[0] == 2:
        h = 0.5 * (A[0, 0] + A[1, 1])
        q = 0.5 * (A[0, 0] - A[1, 1])
        b = 0.5 * (A[0, 1] + A[1, 0])
        return h - jnp.sqrt(q * q + b * b)
    return lambda_min(A)


def glr_statistic_inv(theta_hat: jax.Array, Ainv: jax.Array, items: jax.Array, item_mask=None):
    """Z(t) = max_a min_{b != a} Z_{a,b}(t) of seed 000 Lemma 7 (epsilon = 0) and the empirical best
    item, from A_t^{-1}: the same quantity as :func:`glr_statistic`, in O(M d^2) elementwise
    work after the O(d^3) inverse.  The products over the d coordinates are unrolled (d is static):
    under vmap on CPU, [M, d] x [d, d] batched matrix products were ~4x slower than these fused
    elementwise sums at (M, d) = (1000, 2).  Items identical to the empirical best are skipped, and
    so are masked (padded) items, which are never the best."""
    values, top, best = empirical_best(theta_hat, items, item_mask)
    return jnp.min(glr_pair_statistics(Ainv, items, values, top, items[best], item_mask)), best


def empirical_best(theta_hat: jax.Array, items: jax.Array, item_mask=None):
    """(z^T theta_hat for every item (-inf where masked), their max, the first item reaching it)."""
    values = columns_dot(items, theta_hat)
    if item_mask is not None:
        values = jnp.where(item_mask, values, -jnp.inf)
    top, best = max_argmax(values)
    return values, top, best


def glr_pair_statistics(Ainv: jax.Array, items: jax.Array, values: jax.Array, top, zb, item_mask=None):
    """Z_{a,b}(t) = (theta_hat^T (z_a - z_b))^2 / (2 ||z_a - z_b||^2_{A_t^{-1}}) of seed 000 Lemma 7
    for a = the empirical best ``zb`` (value ``top``) and every row b of ``items`` (values
    ``values``), +inf where b is skipped (identical to z_a, or masked).  Elementwise in the rows:
    a row gives the same bits whether computed alone or with the others."""
    d = items.shape[1]
    cols = [items[:, a] for a in range(d)]
    diffs = [zb[a] - cols[a] for a in range(d)]
    norms = jnp.zeros_like(values)
    sq = jnp.zeros_like(values)
    for a in range(d):
        sq = sq + diffs[a] * diffs[a]
        norms = norms + Ainv[a, a] * (diffs[a] * diffs[a])
        for b in range(a + 1, d):
            norms = norms + (Ainv[a, b] + Ainv[b, a]) * (diffs[a] * diffs[b])
    gaps = top - values
    z = gaps * gaps / (2.0 * jnp.maximum(norms, 1e-300))
    skip = sq == 0 if item_mask is None else (sq == 0) | ~item_mask
    return jnp.where(skip, jnp.inf, z)


def random_spanning_set(key: jax.Array, X: jax.Array, rtol: float = 1e-9, arm_mask=None) -> jax.Array:
    """d arm indices, drawn at random one at a time among the arms that increase the rank
    (seed 000 Lemma 5 / Sec 5: "the initial exploration matrix A_0 is chosen at random", as the
    released code: uniform among the arms not in the span of those already chosen).  O(K d^2).
    Masked (padded) arms are never chosen; the Gumbel draw of arm k does not depend on K, so a
    padded instance draws the same set."""
    K, d = X.shape
    norms = jnp.sqrt(jnp.sum(X * X, axis=-1))
    Q = jnp.zeros((d, d), X.dtype)
    idx = jnp.zeros((d,), jnp.int32)
    for r in range(d):
        resid = X - (X @ Q.T) @ Q
        rn = jnp.sqrt(jnp.sum(resid * resid, axis=-1))
        ok = rn > rtol * jnp.maximum(norms, 1e-300)
        if arm_mask is not None:
            ok = ok & arm_mask
        g = jax.random.gumbel(jax.random.fold_in(key, r), (K,), X.dtype)
        i = argmax_fast(jnp.where(ok, g, -jnp.inf)).astype(jnp.int32)
        q = resid[i] / jnp.maximum(rn[i], 1e-300)
        Q = Q.at[r].set(q)
        idx = idx.at[r].set(i)
    return idx


TOPK_ITERATIVE_MAX = 8


def top_values(v: jax.Array, k: int) -> jax.Array:
    """The k largest values along the last axis, in decreasing order (repeated values repeated).

    For k <= ``TOPK_ITERATIVE_MAX``: k passes of max-and-remove-one (fixed shapes); under vmap on
    CPU this was 50x faster than ``lax.top_k`` (a sort) at K = 4 and 2x+ at K = 100.
    """
    if k > TOPK_ITERATIVE_MAX:
        return jax.lax.top_k(v, k)[0]
    K = v.shape[-1]
    ar = jnp.arange(K)
    out = []
    for n in range(k):
        mx = jnp.max(v, axis=-1, keepdims=True)
        out.append(mx)
        if n + 1 < k:
            first = jnp.min(jnp.where(v == mx, ar, K), axis=-1, keepdims=True)
            v = jnp.where(ar == first, -jnp.inf, v)
    return jnp.concatenate(out, axis=-1)


def mth_largest(v: jax.Array, m: int, axis: int = -1) -> jax.Array:
    """max^m: the m-th largest value along ``axis`` (fixed shapes)."""
    v = jnp.moveaxis(v, axis, -1)
    return top_values(v, m)[..., m - 1]


def topm_mask(v: jax.Array, m: int) -> jax.Array:
    """argmax^[m] as a bool mask: the m largest entries of ``v`` (ties: lowest index).

    From the m-th largest value t: entries above t, then the first (m - #above) entries equal to
    t; no scatter of the top-k indices (per-lane scatters are slow under vmap on CPU).
    """
    t = mth_largest(v, m)
    above = v > t
    eq = v == t
    return above | (eq & (jnp.cumsum(eq) <= m - jnp.sum(above)))


#: most entries for which :func:`top_indices` unrolls the entries (elementwise under ``vmap``)
SMALL_TOP = 16


def _top_indices_unrolled(v: jax.Array, m: int) -> jax.Array:
    """:func:`top_indices` for a short vector, the entries unrolled: each pass's max and first
    index are chains of elementwise maxima and selects (the same indices: max is exact in any order
    and NaN propagates as in ``jnp.max``), so under ``vmap`` no reduction over a [lanes, K] array is
    left, whose fusion XLA:GPU's compiler searches for long at hundreds of thousands of lanes
    (top-m LUCB, K = 4, 262,144 lanes: 31 -> 6 CPU s of compile)."""
    K = v.shape[-1]
    vals = [v[k] for k in range(K)]
    taken = [jnp.zeros((), bool)] * K
    out = []
    for n in range(m):
        masked = [jnp.where(t, -jnp.inf, x) for t, x in zip(taken, vals)]
        mx = functools.reduce(jnp.maximum, masked)
        first = jnp.asarray(K, jnp.int32)
        for k in reversed(range(K)):
            first = jnp.where((vals[k] == mx) & ~taken[k], k, first)
        out.append(first)
        if n + 1 < m:
            taken = [t | (first == k) for k, t in enumerate(taken)]
    return jnp.stack(out).astype(jnp.int32)


def top_indices(v: jax.Array, m: int) -> jax.Array:
    """[m] indices of the m largest entries of ``v`` (the set :func:`topm_mask` marks: ties to the
    lowest index), in decreasing value; m passes of max-and-remove, no sort or scatter."""
    K = v.shape[-1]
    if v.ndim == 1 and K <= SMALL_TOP:
        return _top_indices_unrolled(v, m)
    ar = jnp.arange(K)
    taken = jnp.zeros(K, bool)
    out = []
    for n in range(m):
        mx = jnp.max(jnp.where(taken, -jnp.inf, v))
        first = jnp.min(jnp.where((v == mx) & ~taken, ar, K))
        out.append(first)
        if n + 1 < m:
            taken = taken | (ar == first)
    return jnp.stack(out).astype(jnp.int32)
