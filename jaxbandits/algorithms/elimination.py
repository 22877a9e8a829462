"""Elimination pieces shared by the fixed-confidence family (RAGE, the XY family, ALBA, the Oracle).

* :func:`compacted_xy_design`, :func:`threshold_design`: the XY design over the active items,
  compacted into the buffer sizes of :func:`jaxbandits.batching.item_buckets` so that shrinking
  active sets reuse programs;
* :func:`gram_from_counts`, :func:`whiten_items`, :func:`pairwise_gaps_and_widths`,
  :func:`eliminate`, :func:`eliminate_all_pairs`, :func:`single_answer`: the discard rule of
  seed 001 Algorithm 1, step 6 (and Soare et al. 2014's for XY-adaptive), blocked over pairs.

The per-instance caches that ``prepare`` computes once per run (:func:`~jaxbandits.algorithms.base.with_cache`,
:func:`~jaxbandits.algorithms.base.map_instances`) are part of the contract, in :mod:`jaxbandits.algorithms.base`.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxbandits import design
from jaxbandits.batching import in_smallest_bucket, item_buckets
from jaxbandits.design import app_f
from jaxbandits.algorithms.common import whiten
from jaxbandits.design.core import SMALL_DIM, pair_table
from jaxbandits.instances.base import Instance

def compacted_xy_design(X, Z, active, init, *, tol, max_iters, method, buckets=None, arm_mask=None,
                        fixed_trips: bool = False, kernels: str = "xla"):
    """(lambda, rho) of the XY design over Y(Z_active) (:func:`jaxbandits.design.xy_allocation`),
    solved on the active items gathered into the smallest buffer of :func:`item_buckets` that
    holds them.

    The design over the pairs of active items does not depend on the inactive ones, and the
    gather keeps the items' order (so the pair order and the solver's argmax tie-breaking), so the
    result is that of the full masked solve; but each Frank-Wolfe iteration costs O(B^2 d) for a
    buffer of B items instead of O(M^2 d).  Under ``vmap`` every bucket goes through
    :func:`jaxbandits.batching.solve_where`, so a lane pays only for its own
    bucket, each lane's solve runs its own number of iterations, and a bucket no lane needs costs
    nothing.  ``arm_mask``: the real arms of a padded instance (padded ones get weight 0).
    ``fixed_trips``: App F's runs as loops of trip counts known at compile time (the caller's
    accelerator policy, :attr:`jaxbandits.batching.SolvePolicy.batched`), the same designs;
    ``kernels`` (the policy's :attr:`~jaxbandits.batching.SolvePolicy.kernels`): with fused
    kernels (GPUs) each lane's App F run is one kernel (:func:`_paper_bucket`).
    """
    from jaxbandits.batching import solve_where

    M = Z.shape[0]
    buckets = buckets or item_buckets(M)
    count = jnp.sum(active)
    dt = X.dtype
    out = (jnp.zeros_like(init), jnp.zeros((), dt))
    lo = 0
    for B in buckets:
        if method == "paper" and B <= BATCHED_FW_MAX_ITEMS:
            out = _paper_bucket(X, Z, active, init, B, (count > lo) & (count <= B), max_iters, arm_mask, out,
                                fixed_trips, kernels)
            lo = B
            continue

        def solve(X, Z, active, init, arm_mask, B=B):
            idx = jnp.nonzero(active, size=B, fill_value=0)[0]
            sol = design.xy_allocation(X, Z[idx], item_mask=jnp.arange(B) < jnp.sum(active), arm_mask=arm_mask,
                                       init=init, tol=tol, max_iters=max_iters, method=method)
            return sol.allocation.astype(dt), sol.value.astype(dt)

        # everything the solve reads is an argument: solve_where's batching rule cannot see
        # batched values closed over
        out = solve_where((count > lo) & (count <= B), solve, (X, Z, active, init, arm_mask), out)
        lo = B
    return out


#: App F Frank-Wolfe iterations run batched over every lane before the lanes still running
#: continue alone (:func:`_paper_bucket`), and the largest item buffer where that pays
BATCHED_FW_ITERS = 32
BATCHED_FW_MAX_ITEMS = 64


def _paper_bucket(X, Z, active, init, B, here, max_iters, arm_mask, out, fixed: bool, kernels: str = "xla"):
    """(lambda, rho) of App F's Frank-Wolfe over the active items gathered into a buffer of B,
    where ``here``, else ``out``: the XY design of :func:`compacted_xy_design` with
    ``method="paper"``, whose iteration count depends on the data.

    Solved in two parts, with the iterates of one uninterrupted run
    (:func:`jaxbandits.design.minimax.xy_paper_iterate`): first at most ``BATCHED_FW_ITERS``
    iterations in plain code, i.e. batched over every lane under ``vmap`` (a lane that stops
    early, or has no solve here, is frozen: it costs the other lanes' iterations, not a serial
    solve of its own); then :func:`jaxbandits.batching.solve_where` continues only the lanes whose
    run has not stopped (on a CPU one after another, each to its own iteration count).  On the
    seed 001 benchmark most rounds after the first have two active items and stop within ~12
    iterations, so the serial part is rare; a small buffer keeps the lanes' batched iterations
    cheap (``BATCHED_FW_MAX_ITEMS``).  Only the design and its value are computed (RAGE reads no
    certificate; :func:`jaxbandits.design.minimax.xy_paper_value`).  With ``fixed`` (the accelerator
    policy) both parts are loops of a trip count known at compile time: ``BATCHED_FW_ITERS`` iterations, then the continuation to the iteration by which
    the run has surely stopped (:func:`jaxbandits.design.app_f.trip_bound`), the
    iterations after the stop leaving the design unchanged: the same designs.  With fused kernels
    (``kernels`` "triton" on GPUs, d <= 8) the whole run is one kernel over every lane instead
    (:func:`jaxbandits.design.minimax.xy_paper_run_fused`: a lane with no solve here runs none,
    the others each to their own stop, at most that bound), with no ``solve_where``.
    """
    from jaxbandits.batching import solve_where
    from jaxbandits.design import minimax

    first = min(int(max_iters), BATCHED_FW_ITERS)
    rest = min(int(max_iters), app_f.trip_bound(X.shape[0])) - first

    idx = jnp.nonzero(active, size=B, fill_value=0)[0]
    Zb = Z[idx]
    im = jnp.arange(B) < jnp.sum(active)
    st = minimax.xy_paper_start(X, Zb, item_mask=im, arm_mask=arm_mask, init=init)
    st = st._replace(rel=jnp.where(here, st.rel, 0.0))     # no solve in this bucket: stopped
    if kernels != "xla" and app_f.fused_trips_supported(X.shape[1]):
        st = minimax.xy_paper_run_fused(X, Zb, st, here, item_mask=im, arm_mask=arm_mask, max_iters=max_iters,
                                        trips=first + rest, kernels=kernels)
        lam, rho = minimax.xy_paper_value(X, Zb, st, item_mask=im, arm_mask=arm_mask)
        return jnp.where(here, lam.astype(X.dtype), out[0]), jnp.where(here, rho.astype(X.dtype), out[1])
    st = minimax.xy_paper_iterate(X, Zb, st, item_mask=im, arm_mask=arm_mask, max_iters=first,
                                  trips=first if fixed else None)

    def more(X, Zb, im, arm_mask, st):
        return minimax.xy_paper_iterate(X, Zb, st, item_mask=im, arm_mask=arm_mask, max_iters=max_iters,
                                        trips=max(rest, 1) if fixed else None)

    st = solve_where(here & app_f.paper_fw_running(st, max_iters), more, (X, Zb, im, arm_mask, st), st)
    lam, rho = minimax.xy_paper_value(X, Zb, st, item_mask=im, arm_mask=arm_mask)
    return jnp.where(here, lam.astype(X.dtype), out[0]), jnp.where(here, rho.astype(X.dtype), out[1])


def threshold_design(lam: jax.Array, cutoff: float = 1e-5) -> jax.Array:
    """Set design weights below ``cutoff`` to 0 and renormalise (seed 001 App F)."""
    kept = jnp.where(lam >= cutoff, lam, 0.0)
    s = jnp.sum(kept)
    return jnp.where(s > 0, kept / jnp.where(s > 0, s, 1.0), lam)


def whiten_items(L: jax.Array, V: jax.Array) -> jax.Array:
    """W = L^{-1} V^T [d, n], through the explicit [d, d] inverse of the triangular factor: a
    matrix product, where a triangular solve with n right-hand sides is slow on XLA:CPU (measured
    ~25x slower under vmap at n = 1000, d = 2).  For d <= SMALL_DIM the inverse is unrolled forward
    substitution (:func:`jaxbandits.algorithms.common.whiten` of the identity), no solver call."""
    eye = jnp.eye(L.shape[0], dtype=L.dtype)
    if L.shape[0] <= SMALL_DIM:
        return whiten(L, eye) @ V.T
    return jax.scipy.linalg.solve_triangular(L, eye, lower=True) @ V.T


def gram_from_counts(X: jax.Array, counts: jax.Array) -> jax.Array:
    """A = sum_k counts_k x_k x_k^T [d, d]."""
    return (X.T * counts.astype(X.dtype)) @ X


def pair_gaps_widths(Wr, Zr, Wc, Zc, theta_hat):
    """(gaps, sq) [R, C]: (z_r - z_c)^T theta_hat and ||z_r - z_c||^2_{A^-1} from whitened items
    W = L^-1 Z^T and the items Z^T (coordinates first, [d, R] and [d, C]).

    Both from differences: the squared norm as ||W_r - W_c||^2, the gap as (Z_r - Z_c)^T theta.
    In float32 the Gram form ||W_r||^2 + ||W_c||^2 - 2 W_r.W_c lost the Soare instance's near pair
    (e_1, x'; ||y||^2 ~ 1e-4 of ||W||^2) to cancellation; the gap as a difference of values
    z^T theta ~ 2 lost ~0.2 % of its 1e-4.
    """
    sq = pair_table([Wr], [Wc], lambda u, k: u[0] * u[0])
    gaps = pair_table([Zr], [Zc], lambda u, k: u[0] * theta_hat[k])
    return gaps, sq


def pairwise_gaps_and_widths(items: jax.Array, theta_hat: jax.Array, L: jax.Array):
    """(gaps, sq_norms) [M, M]: gaps[i, j] = (z_i - z_j)^T theta_hat and
    sq_norms[i, j] = ||z_i - z_j||^2_{A^-1}, given the Cholesky factor L of A (whitened
    coordinates W = L^{-1} Z^T; O(M^2 d) time, O(M^2) memory; :func:`pair_gaps_widths`).
    """
    W = whiten_items(L, items)                 # [d, M]
    return pair_gaps_widths(W, items.T, W, items.T, theta_hat)


def _beaten(Wr, Zr, valid_r, Wc, Zc, valid_c, theta_hat, log_term, block: int = 64):
    """[C] bool: whether some valid row item z' beats the column item z,
    ||z' - z||_{A^-1} sqrt(2 log_term) < (z' - z)^T theta_hat, from whitened items W = L^-1 Z^T
    and the items Z^T (rows [d, R], columns [d, C]; :func:`pair_gaps_widths`).

    The [R, C] tables are built ``block`` rows at a time so that they stay in cache (under vmap
    the lanes multiply their size).  A column's answer does not depend on the block size or on
    the other columns (elementwise, fixed order).
    """
    R, C = Wr.shape[1], Wc.shape[1]
    blk = min(R, max(block, (1 << 14) // max(C, 1)))
    nb = -(-R // blk)
    pad = nb * blk - R
    Wp, Zp = jnp.pad(Wr, ((0, 0), (0, pad))), jnp.pad(Zr, ((0, 0), (0, pad)))
    okp = jnp.pad(valid_r, (0, pad))

    def body(b, beaten):
        s = b * blk
        rows = lambda a: jax.lax.dynamic_slice_in_dim(a, s, blk, axis=a.ndim - 1)  # noqa: E731
        gaps, sq = pair_gaps_widths(rows(Wp), rows(Zp), Wc, Zc, theta_hat)
        ok = rows(okp)[:, None] & valid_c[None, :]
        return beaten | jnp.any((jnp.sqrt(2.0 * log_term * sq) < gaps) & ok, axis=0)

    return jax.lax.fori_loop(0, nb, body, jnp.zeros((C,), bool))


def eliminate(active: jax.Array, items: jax.Array, theta_hat: jax.Array, L: jax.Array,
              log_term: jax.Array, sigma: float | jax.Array = 1.0) -> jax.Array:
    """The elimination rule of seed 001 Algorithm 1: the new active mask [M].

    z is removed if some active z' has sigma ||z' - z||_{A^-1} sqrt(2 log_term) < (z' - z)^T
    theta_hat (sigma: the sub-Gaussian scale of the noise; seed 001 has sigma = 1).
    The empirical best active item is never removed (its gaps to every z' are <= 0).

    Exact, in two passes (same removed set as comparing every pair): first every z against the
    empirical best z' (O(M d)); then only the items that survived it (gathered, in order, into the
    smallest buffer of :func:`item_buckets` that holds them) against every active z'
    (O(M |survivors| d) instead of O(M^2 d)).  Under ``vmap`` the buffer is the one holding every
    lane's survivors (a ``custom_vmap`` rule takes the largest count over the lanes, so the
    branch taken is a real one, not a select over every bucket).
    """
    M = items.shape[0]
    buckets = item_buckets(M)
    # sigma ||y|| sqrt(2 log_term) = ||y|| sqrt(2 sigma^2 log_term): the width's sigma enters here
    log_term = jnp.asarray(sigma, theta_hat.dtype) ** 2 * jnp.asarray(log_term, theta_hat.dtype)
    W = whiten_items(L, items)                             # [d, M]
    Zt = items.T                                           # [d, M]
    best = single_answer(active, items @ theta_hat)
    by_best = _beaten(W[:, best][:, None], Zt[:, best][:, None], jnp.ones((1,), bool),
                      W, Zt, active, theta_hat, log_term)
    surv = active & ~by_best

    def branch(B):
        def f(surv, active, W, Zt, theta_hat, log_term):
            if B == M:
                return surv & ~_beaten(W, Zt, active, W, Zt, surv, theta_hat, log_term)
            idx = jnp.nonzero(surv, size=B, fill_value=0)[0]
            valid = jnp.arange(B) < jnp.sum(surv)
            hit = _beaten(W, Zt, active, W[:, idx], Zt[:, idx], valid, theta_hat, log_term)
            drop = jnp.where(valid & hit, idx, M)          # M is out of bounds: dropped
            return surv.at[drop].set(False, mode="drop")
        return f

    return in_smallest_bucket(jnp.sum(surv), buckets, branch, surv, active, W, Zt, theta_hat, log_term)


def eliminate_all_pairs(active, items, theta_hat, L, log_term, sigma=1.0):
    """Reference form of :func:`eliminate`: every pair at once (O(M^2) memory)."""
    gaps, sq = pairwise_gaps_and_widths(items, theta_hat, L)
    beats = (sigma * jnp.sqrt(2.0 * log_term * sq) < gaps) & active[:, None] & active[None, :]
    return active & ~jnp.any(beats, axis=0)


def single_answer(active: jax.Array, values: jax.Array) -> jax.Array:
    """Index of the returned item: the best (by ``values``) of the active items."""
    v = jnp.where(active, values, -jnp.inf)
    m = jnp.max(v)
    return jnp.min(jnp.where(v == m, jnp.arange(v.shape[0]), v.shape[0]))
