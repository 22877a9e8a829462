"""Rounding a design to integer pulls: efficient design apportionment (Pukelsheim 2006, Ch. 12),
as described in seed 001 App B and used by RAGE / XY-static (seed 001 Sec 2.3, Alg 1, App F).
"""
from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from jaxbandits.batching import fixed_trip_while
from jaxbandits.design.core import as_float, full_mask


@partial(jax.jit, static_argnames=("fixed_trips",))
def round_design(allocation, n, *, arm_mask=None, fixed_trips: bool = False) -> jax.Array:
    """Efficient apportionment of n pulls to a design lambda (seed 001 App B, Pukelsheim Ch. 12).

    1. On the support (lambda > 0, on ``arm_mask``) of size p: N_i = ceil((n - p/2) lambda_i).
    2. While sum N != n: if short, increment an N_j with N_j / lambda_j minimal; if over,
       decrement an N_j with (N_j - 1) / lambda_j maximal.
    Jit-safe with fixed shapes (n may be traced); returns integer counts [K] (int64 under x64)
    summing exactly to n (at most 2**62)
    (for n >= p; smaller n can leave support arms at 0).  Guarantee (Pukelsheim Lemma 12.8, seed
    001 Prop 2): the efficiency min_i (N_i / n) / lambda_i >= 1 - p / n, hence for every direction
    set Y, max_y ||y||^2_{(sum N_i x_i x_i^T)^-1} <= rho(Y) / (n (1 - p/n)) <= (1 + 2p/n) rho(Y) / n
    when n >= 2p.  ``fixed_trips``: step 2 as a loop of K // 2 + 2 iterations known at compile
    time (the discrepancy bound below), those after the sum is n leaving the counts unchanged:
    the same counts, with no loop whose trip count depends on data.
    """
    lam = as_float(allocation)
    K = lam.shape[0]
    mask = full_mask(arm_mask, K)
    supp = mask & (lam > 0)
    lam = jnp.where(supp, lam, 0.0)
    lam = lam / jnp.sum(lam)
    p = jnp.sum(supp)
    # counts in the default integer type, int64 under x64: in int32 a phase of 2**31 pulls or more
    # was cut to 2**31 - 1 without a word.  n is capped at 2**62 (engine.COUNT_LIMIT, where the
    # engine reports a count as lost) so that the counts and their sum cannot overflow.
    itype = jnp.result_type(int)
    n = jnp.asarray(n)
    if jnp.issubdtype(n.dtype, jnp.integer):
        n = n.astype(itype)
    else:
        n = jnp.minimum(n, 2.0**62 if jnp.iinfo(itype).bits == 64 else 2.0**31 - 1).astype(itype)
    counts = jnp.where(supp, jnp.ceil((n - 0.5 * p) * lam), 0.0).astype(itype)
    counts = jnp.maximum(counts, 0)
    safe = jnp.where(supp, lam, 1.0)
    idx = jnp.arange(K)

    def first(v, cond_mask, largest):
        v = jnp.where(cond_mask, v, -jnp.inf if largest else jnp.inf)
        m = jnp.max(v) if largest else jnp.min(v)
        return jnp.min(jnp.where(v == m, idx, K))

    def body(c):
        total = jnp.sum(c)
        cf = c.astype(lam.dtype)
        up = first(cf / safe, supp, largest=False)
        down = first((cf - 1.0) / safe, supp & (c > 0), largest=True)
        return jnp.where(total < n, c.at[up].add(1), c.at[down].add(-1))

    # The discrepancy after step 1 is at most p/2 + 1 in absolute value (each ceil adds < 1 and
    # p/2 was removed), so the loop is bounded by about K iterations.
    if fixed_trips:
        return fixed_trip_while(lambda c: jnp.sum(c) != n, body, counts, K // 2 + 2)
    return jax.lax.while_loop(lambda c: jnp.sum(c) != n, body, counts)


def rounding_min_samples(allocation, epsilon, *, arm_mask=None) -> jax.Array:
    """r(epsilon) = ceil(2 p / epsilon), p = support size: with n >= r(epsilon) the rounded design
    is (1 + epsilon)-efficient (seed 001 App B Prop 2, the r(.) of RAGE, Alg 1)."""
    lam = jnp.asarray(allocation)
    supp = full_mask(arm_mask, lam.shape[0]) & (lam > 0)
    return jnp.ceil(2.0 * jnp.sum(supp) / epsilon).astype(jnp.int32)


def rounding_efficiency(counts, allocation, *, arm_mask=None) -> jax.Array:
    """min over the support of (N_i / n) / lambda_i (Pukelsheim's efficiency of the apportionment)."""
    lam = as_float(allocation)
    supp = full_mask(arm_mask, lam.shape[0]) & (lam > 0)
    c = jnp.asarray(counts, lam.dtype)
    ratio = jnp.where(supp, (c / jnp.sum(c)) / jnp.where(supp, lam / jnp.sum(jnp.where(supp, lam, 0)), 1.0), jnp.inf)
    return jnp.min(ratio)
