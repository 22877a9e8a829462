"""Stage schedules, integer rounding of a design and the projected least-squares estimate shared
by the phase-based fixed-budget algorithms (GSE, OD-LinBAI, Peace; seed 002); the epoch estimate
also by fixed-confidence Peace."""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from jaxbandits.batching import current_policy
from jaxbandits.design.core import null_projector


def halving_schedule(num_arms: int, eta: float = 2.0) -> list[int]:
    """Survivor counts |A_1| = K, |A_{t+1}| = ceil(|A_t| / eta), ..., 1 (seed 002 Alg 1 line 5).

    Its length minus one is the number of stages s (= ceil(log_eta K) for integer eta).
    """
    if eta <= 1:
        raise ValueError(f"eta must be > 1, got {eta}")
    sizes = [int(num_arms)]
    while sizes[-1] > 1:
        sizes.append(int(math.ceil(sizes[-1] / eta - 1e-12)))
    return sizes


def stage_budgets(budget: int, stages: int) -> np.ndarray:
    """n_t = floor(B / s), with the B mod s left-over pulls added to the last stages."""
    n = np.full(stages, budget // stages, dtype=np.int64)
    extra = budget % stages
    if extra:
        n[-extra:] += 1
    return n


def stage_budget(budget, stages: int, t) -> jax.Array:
    """n_t of stage t (0-based) of :func:`stage_budgets`, for a budget that may be traced.

    floor(B / s), plus one for the last B mod s stages (integer arithmetic, so it equals
    ``stage_budgets(B, s)[t]`` exactly).
    """
    B = jnp.asarray(budget)
    extra = B % stages
    return B // stages + (jnp.asarray(t) >= stages - extra).astype(B.dtype)


def round_allocation(lam: jax.Array, n: jax.Array, mask: jax.Array, kernels: str = "xla") -> jax.Array:
    """Integer allocation of n pulls from a design lam (efficient apportionment, Pukelsheim 2006).

    m_i = ceil((n - p/2) lam_i) on the support (size p), then single pulls are added to
    argmin m_i / lam_i or removed from argmax (m_i - 1) / lam_i until the total is n (at most p
    corrections).  Seed 002 Alg 2 line 9 (ROUND); seed 001 App B uses the same procedure.
    Returns float counts [K] summing to n (jit/vmap safe, n may be traced).

    ``kernels`` (the policy's :attr:`jaxbandits.batching.SolvePolicy.kernels`): "xla", a
    ``while_loop`` of the corrections; a fused form (GPUs), the K passes as one kernel a lane
    (:func:`jaxbandits.design.kernels.fused_fori_loop`), a pass once the total is n changing
    nothing.  Its sums add integers and its choices compare the same quotients, so both forms
    give the same counts, bit for bit.
    """
    dt = lam.dtype
    lam = jnp.where(mask, jnp.maximum(lam, 0.0), 0.0)
    lam = lam / jnp.maximum(jnp.sum(lam), 1e-300)
    supp = lam > 0
    p = jnp.sum(supp).astype(dt)
    n = jnp.asarray(n, dt)
    m = jnp.where(supp, jnp.maximum(jnp.ceil((n - p / 2.0) * lam), 0.0), 0.0)
    K = lam.shape[0]
    safe = jnp.where(supp, lam, 1.0)
    idx = jnp.arange(K)

    def fix(c):
        m, k = c
        tot = jnp.sum(m)
        up = jnp.where(supp, m / safe, jnp.inf)
        down = jnp.where(supp & (m > 0), (m - 1.0) / safe, -jnp.inf)
        i_up = jnp.argmin(up)
        i_dn = jnp.argmax(down)
        # one-hot adds instead of scatters: elementwise, far cheaper under vmap on CPU
        m = m + jnp.where((tot < n) & (idx == i_up), 1.0, 0.0) - jnp.where((tot > n) & (idx == i_dn), 1.0, 0.0)
        return m, k + 1

    if kernels != "xla":
        return _round_fused(m, n, supp, safe, kernels)
    # sum(m) starts within p/2 of n, so at most ~p/2 corrections: loop until the total is n
    # (bounded by K) instead of always K times -- the same result, p/2 << K passes at large K.
    return jax.lax.while_loop(lambda c: (jnp.sum(c[0]) != n) & (c[1] < K), fix, (m, 0))[0]


def _round_fused(m, n, supp, safe, kernels: str):
    """:func:`round_allocation`'s corrections as one fused kernel of K passes (arrays padded to a
    power of two with entries off the support, which are never chosen): ``jnp.argmin`` /
    ``jnp.argmax`` as the first index of the extreme value (of a NaN first, as they pick)."""
    from jaxbandits.design.kernels import fused_fori_loop, iota, power_of_two

    K = m.shape[0]
    Kp = power_of_two(K)
    pad = lambda v, fill: jnp.full((Kp,), fill, v.dtype).at[:K].set(v)  # noqa: E731

    def first(v, best):
        return jnp.min(jnp.where((v == best) | jnp.isnan(v), iota(Kp), Kp))

    def body(_, c, on, safe, n):
        (m,) = c
        idx = iota(Kp)
        tot = jnp.sum(m)
        up = jnp.where(on != 0, m / safe, jnp.inf)
        down = jnp.where((on != 0) & (m > 0), (m - 1.0) / safe, -jnp.inf)
        i_up = jnp.minimum(first(up, jnp.min(up)), K - 1)
        i_dn = jnp.minimum(first(down, jnp.max(down)), K - 1)
        return (m + jnp.where((tot < n) & (idx == i_up), 1.0, 0.0) - jnp.where((tot > n) & (idx == i_dn), 1.0, 0.0),)

    (out,) = fused_fori_loop(K, body, (pad(m, 0.0),), (pad(supp.astype(jnp.int32), 0), pad(safe, 1.0), n),
                             kernels=kernels)
    return out[:K]


_PAIRWISE_RANK_MAX_K = 128  # below this, O(K^2) comparisons beat a vmapped sort on CPU


def descending_rank(s: jax.Array) -> jax.Array:
    """Position of every entry in the stable descending order of s (ties: smaller index first).

    Same as inverting ``argsort(-s, stable=True)``; for K <= 128 computed by pairwise comparisons
    (one fused elementwise pass, much cheaper than a sort under vmap on CPU).

    Under the accelerator policy (:func:`jaxbandits.batching.current_policy`) the comparisons are
    added one column at a time, K elementwise passes that fuse into one kernel: XLA:GPU emits the
    [K, K] table's reduction as one Triton reduction over a tile of lanes x K x K, which at
    K = 16 and 262,144 lanes spilled 49 KB a thread and took ptxas 5.6 of GSE's 14 compile
    seconds.  The counts are integers, so both forms give the same ranks.
    """
    K = s.shape[0]
    if K > _PAIRWISE_RANK_MAX_K:
        order = jnp.argsort(-s, stable=True)
        return jnp.zeros_like(order).at[order].set(jnp.arange(K))
    idx = jnp.arange(K)
    if current_policy().batched:
        rank = jnp.zeros((K,), jnp.int32)
        for j in range(K):
            rank = rank + ((s[j] > s) | ((s[j] == s) & (j < idx))).astype(jnp.int32)
        return rank
    before = (s[None, :] > s[:, None]) | ((s[None, :] == s[:, None]) & (idx[None, :] < idx[:, None]))
    return jnp.sum(before, axis=1, dtype=jnp.int32)


def keep_top(scores: jax.Array, alive: jax.Array, keep: jax.Array) -> jax.Array:
    """Mask of the ``keep`` surviving arms of largest score (ties towards the smaller index)."""
    rank = descending_rank(jnp.where(alive, scores, -jnp.inf))
    return alive & (rank < keep)


def projected_least_squares(X: jax.Array, counts: jax.Array, sums: jax.Array, alive: jax.Array,
                            projection: str = "span") -> jax.Array:
    """theta_t from one stage's per-arm counts and reward sums (seed 002 Eq. 1).

    ``"span"``: (V_t + P_perp)^{-1} b_t, V_t = sum_k n_k x_k x_k^T, P_perp the projector onto
    span(A_t)^perp (the projection step, Sec 4 footnote 1).  ``"pinv"``: V_t^+ b_t (the released
    Peace codes' estimate, fixed budget and fixed confidence; ``alive`` is not read).
    """
    V = (X.T * counts) @ X
    b = X.T @ sums
    if projection == "pinv":
        return jnp.linalg.pinv(V, hermitian=True) @ b
    perp, _ = null_projector(X, alive)
    A = V + perp
    d = A.shape[0]
    A = A + (1e-12 * jnp.trace(A) / d) * jnp.eye(d, dtype=A.dtype)
    L = jnp.linalg.cholesky(A)
    return jax.scipy.linalg.cho_solve((L, True), b)
