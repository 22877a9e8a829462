"""The alternative Alt(answer) of best-arm and Top-m identification in linear bandits as a union of
half-spaces, and its closest piece: the GLR statistic and nature's best response of LinGame.

Alt(S) (S the answer: one item, or the m items of a Top-m answer, seed 003 Sec 2) is the union of
the half-spaces {lambda : lambda^T (z_j - z_i) >= 0}, i in S, j not in S.  In a norm ||.||_A the
distance of theta to one of them is (y^T theta)^2 / (2 ||y||^2_{A^-1}), y = z_j - z_i (Degenne,
Menard, Shang & Valko 2020, Sec 3; seed 000 Lemma 7): with A = V_{N_t} it is the GLR statistic
of the pair, with A = V_w nature's best response to the allocation w.  Answers are keyed by
:func:`answer_rank` (LinGame's one learner per answer).
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from jaxbandits.algorithms import common


def closest_piece(theta: jax.Array, Ainv: jax.Array, items: jax.Array, answer: jax.Array,
                  active: jax.Array, m: int):
    """min over the pieces {lambda : lambda^T (z_j - z_i) >= 0} of Alt(answer) (i in the answer, j
    not in it and ``active``) of (y^T theta)^2 / (2 ||y||^2_{A^-1}), y = z_j - z_i, and the
    minimising (i, j): the GLR statistic (A = V_{N_t}) or nature's best response (A = V_w).

    m = 1: the row of the answer item, O(M d^2).  Top-m: all pairs through G = Z A^-1 Z^T,
    O(M^2 d).  Items identical to an answer item are skipped.
    """
    values = items @ theta
    if m == 1:
        return _row_piece(values, Ainv, items, common.argmax_fast(answer), active)
    return _pieces(values, Ainv, items, answer, active)


def _pieces(values, Ainv, items, answer, active):
    M = items.shape[0]
    G = items @ Ainv @ items.T
    g = jnp.diagonal(G)
    norms = g[:, None] + g[None, :] - 2.0 * G
    gaps = values[:, None] - values[None, :]
    valid = answer[:, None] & ~answer[None, :] & active[None, :] & (norms > 1e-12 * (g[:, None] + g[None, :]))
    z = jnp.where(valid, gaps * gaps / (2.0 * jnp.maximum(norms, 1e-300)), jnp.inf)
    flat = common.argmax_fast(-z.reshape(-1))
    return z.reshape(-1)[flat], flat // M, flat % M


def _row_piece(values, Ainv, items, best, active):
    """The single-answer case of :func:`closest_piece`: O(M d^2)."""
    diffs = items[best][None, :] - items
    norms = jnp.sum((diffs @ Ainv) * diffs, axis=-1)
    gaps = values[best] - values
    same = jnp.all(diffs == 0, axis=-1)
    z = jnp.where(active & ~same, gaps * gaps / (2.0 * jnp.maximum(norms, 1e-300)), jnp.inf)
    j = common.argmax_fast(-z)
    return z[j], best, j


def answer_rank(answer: jax.Array, m: int) -> jax.Array:
    """Rank of an m-subset (bool mask [M]) in the combinatorial number system,
    sum_k C(p_k, k + 1) over its sorted positions p_0 < p_1 < ...: a distinct key per answer."""
    M = answer.shape[0]
    table = np.array([[math.comb(p, k) for k in range(m + 1)] for p in range(M)], np.int64)
    order = jnp.cumsum(answer.astype(jnp.int32))  # k + 1 at the (k+1)-th member
    vals = jnp.take_along_axis(jnp.asarray(table), jnp.clip(order, 0, m)[:, None], axis=1)[:, 0]
    return jnp.sum(jnp.where(answer, vals, 0))
