"""Game solvers: matrix games (Hedge against best responses, with or without its duality-gap
certificate, and the exact simplex solve) and the AdaHedge learner.

* :func:`matrix_game`, :func:`matrix_game_certified`, :func:`matrix_game_exact` (the simplex
  method, :mod:`jaxbandits.design.simplex`):
  max_{z in simplex} min_{j in rows} (G z)_j, the r-subdifferential step of Frank-Wolfe Sampling
  (Wang, Tzeng & Proutiere, NeurIPS 2021, eq. (7)-(8); :class:`jaxbandits.rules.sampling.FrankWolfe`).
* :func:`hedge_weights`, :func:`hedge_update`: AdaHedge (de Rooij, van Erven, Grunwald & Koolen,
  JMLR 2014), the agent's learner of LinGame (Degenne, Menard, Shang & Valko, ICML 2020).
"""
from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp

from jaxbandits.batching import argmax_fast, current_policy, fused_entries
from jaxbandits.design.core import first_max, ordered_sum
from jaxbandits.design.simplex import matrix_game_exact  # noqa: F401 (the exact game, by the simplex method)


# -- matrix games ---------------------------------------------------------------------------------
#: largest relative duality gap of ``game="exact"`` counted as solved (the simplex's optimum is
#: certified to about 1e-14 of the payoff range; a larger gap means the pivot cap was reached)
EXACT_GAME_GAP = 1e-9


def _hedge_setup(G: jax.Array, rows: jax.Array, iters: int):
    """The payoffs of the active rows (others zeroed), Hedge's step sqrt(8 log P / iters) / payoff
    range, and that range: shared by :func:`matrix_game` and :func:`matrix_game_certified`."""
    Gm = jnp.where(rows[:, None], G, 0.0)
    span = jnp.max(jnp.where(rows[:, None], G, -jnp.inf)) - jnp.min(jnp.where(rows[:, None], G, jnp.inf))
    n_rows = jnp.maximum(jnp.sum(rows), 2).astype(G.dtype)
    return Gm, jnp.sqrt(8.0 * jnp.log(n_rows) / iters) / jnp.maximum(span, 1e-300), span


def matrix_game(G: jax.Array, rows: jax.Array, iters: int) -> jax.Array:
    """Approximate maximiser z [K] of max_{z in simplex} min_{j in rows} (G z)_j, G [P, K].

    Hedge (multiplicative weights, step sqrt(8 log P / iters) / range) for the minimising row
    player against best responses of the column player; z is the empirical distribution of the
    best responses.  With one active row it is the vertex argmax_k G[j, k].  Fixed cost
    O(iters P K); under the accelerator policy a small game runs entry by entry
    (:func:`_hedge_entries`)."""
    P, K = G.shape
    dt = G.dtype
    Gm, eta, _ = _hedge_setup(G, rows, iters)
    if P * K <= SMALL_GAME and current_policy().batched:
        return _hedge_entries(Gm, rows, eta, iters, False)[0] / iters

    def body(_, carry):
        loss, counts = carry
        logits = jnp.where(rows, -eta * (loss - jnp.min(jnp.where(rows, loss, jnp.inf))), -jnp.inf)
        q = jax.nn.softmax(logits)
        k = argmax_fast(q @ Gm)
        return loss + Gm[:, k], counts + (jnp.arange(K) == k).astype(dt)

    _, counts = jax.lax.fori_loop(0, iters, body, (jnp.zeros((P,), dt), jnp.zeros((K,), dt)), unroll=8)
    return counts / iters


def matrix_game_certified(G: jax.Array, rows: jax.Array, iters: int):
    """(z [K], gap): :func:`matrix_game`'s maximiser and its duality-gap certificate
    max_k (q^T G)_k - min_{j in rows} (G z)_j >= 0, q the minimising player's average Hedge strategy
    (weak duality: z's value is within ``gap`` of the game's value), relative to the payoff range
    of the active rows.  Zero when a single row is active (the vertex is exact)."""
    P, K = G.shape
    dt = G.dtype
    Gm, eta, span = _hedge_setup(G, rows, iters)
    if P * K <= SMALL_GAME and current_policy().batched:
        counts, qsum = _hedge_entries(Gm, rows, eta, iters, True)
    else:
        def body(_, carry):
            loss, counts, qsum = carry
            logits = jnp.where(rows, -eta * (loss - jnp.min(jnp.where(rows, loss, jnp.inf))), -jnp.inf)
            q = jax.nn.softmax(logits)
            k = argmax_fast(q @ Gm)
            return loss + Gm[:, k], counts + (jnp.arange(K) == k).astype(dt), qsum + q

        _, counts, qsum = jax.lax.fori_loop(0, iters, body, (jnp.zeros((P,), dt), jnp.zeros((K,), dt),
                                                             jnp.zeros((P,), dt)), unroll=8)
    z = counts / iters
    upper = jnp.max((qsum / iters) @ Gm)
    lower = jnp.min(jnp.where(rows, G @ z, jnp.inf))
    single = jnp.sum(rows) <= 1
    z = jnp.where(single, jax.nn.one_hot(argmax_fast(jnp.where(rows[:, None], G, -jnp.inf).max(0)), K, dtype=dt), z)
    gap = jnp.where(single, 0.0, jnp.maximum(upper - lower, 0.0) / jnp.maximum(span, 1e-300))
    return z, gap


#: largest game (rows x columns) whose Hedge iterations :func:`_hedge_entries` runs entry by entry
SMALL_GAME = 64


def hedge_loop(g, rows, eta, P: int, K: int, iters: int, with_q: bool):
    """``iters`` Hedge iterations on the masked payoffs as scalars (``g`` the P x K entries in
    row-major order, ``rows`` P integer flags, ``eta`` the step): (column counts, sums of the row
    player's strategies or None), lists of scalars.  The body of :func:`_hedge_entries`, for
    programs traced on scalars (:func:`jaxbandits.batching.fused_entries`)."""
    g = [list(g[p * K:(p + 1) * K]) for p in range(P)]
    on = [c != 0 for c in rows]
    dt = jnp.asarray(g[0][0]).dtype

    def body(_, carry):
        loss, counts, qsum = carry[:P], carry[P:P + K], carry[P + K:]
        low = functools.reduce(jnp.minimum, [jnp.where(on[p], loss[p], jnp.inf) for p in range(P)])
        logits = [jnp.where(on[p], -eta * (loss[p] - low), -jnp.inf) for p in range(P)]
        top = functools.reduce(jnp.maximum, logits, jnp.asarray(-jnp.inf, dt))
        e = [jnp.where(on[p], jnp.exp(logits[p] - top), 0.0) for p in range(P)]
        total = ordered_sum(e)
        q = [jnp.where(on[p], e[p] / total, 0.0) for p in range(P)]
        v = [ordered_sum([q[p] * g[p][k] for p in range(P)]) for k in range(K)]
        j, _ = first_max(v)
        loss = tuple(loss[p] + functools.reduce(lambda a, k: jnp.where(j == k, g[p][k], a), range(K - 2, -1, -1),
                                                  g[p][K - 1]) for p in range(P))
        counts = tuple(counts[k] + (j == k).astype(dt) for k in range(K))
        if with_q:
            qsum = tuple(qsum[p] + q[p] for p in range(P))
        return loss + counts + qsum

    zero = jnp.zeros((), dt)
    out = jax.lax.fori_loop(0, int(iters), body, (zero,) * (P + K + (P if with_q else 0)), unroll=8)
    return list(out[P:P + K]), (list(out[P + K:]) if with_q else None)


def _hedge_entries(Gm, rows, eta, iters: int, with_q: bool):
    """(column counts [K], sum of the row player's strategies [P] or None) after ``iters`` Hedge
    iterations on the masked payoffs ``Gm`` [P, K], every quantity a scalar per entry: the
    softmax's normaliser and the column payoffs q^T G are sums in row order, the best response
    the first largest (a chain of compares), its column a chain of selects (:func:`hedge_loop`).
    Under ``vmap`` an iteration is elementwise over the lanes; on a GPU the whole loop is one
    fused kernel (:func:`jaxbandits.batching.fused_entries`, the arrays loaded as they are), where
    XLA launched about 40 kernels for FWS's 64 iterations on Soare's d = 5 instance (H100 model,
    16,384 lanes: FWS 95.7 -> 54.7 kernels a step); the sums' order is fixed rather than left to
    XLA.  The accelerator program's form (for games of at most :data:`SMALL_GAME` entries); on a
    CPU the array form is about 8x faster and picks the same best responses but at ties to
    rounding."""
    P, K = Gm.shape
    dt = Gm.dtype

    def fn(g, on, eta):
        counts, qsum = hedge_loop(g, on, eta[0], P, K, iters, with_q)
        return (counts, qsum) if with_q else (counts,)

    out = fused_entries(fn, (Gm, rows.astype(jnp.int32), jnp.asarray(eta, dt)), ((K,), (P,)) if with_q else ((K,),),
                        current_policy().kernels, name="hedge", key=("hedge", int(iters), with_q))
    return out[0], (out[1] if with_q else None)


# -- AdaHedge (de Rooij, van Erven, Grunwald, Koolen 2014), LinGame's learner ------------------
def hedge_weights(losses: jax.Array, gap: jax.Array) -> jax.Array:
    """AdaHedge's play: w proportional to exp(-eta (L - min L)), eta = log K / Delta."""
    eta = math.log(losses.shape[-1]) / gap
    u = jnp.exp(-eta * (losses - jnp.min(losses)))
    return u / jnp.sum(u)


def _mix_loss(losses, eta):
    lo = jnp.min(losses)
    return lo - jnp.log(jnp.mean(jnp.exp(-eta * (losses - lo)))) / eta


def hedge_update(losses: jax.Array, gap: jax.Array, loss: jax.Array):
    """AdaHedge after incurring ``loss`` [K]: (L + loss, Delta + hedge loss - mix loss)."""
    w = hedge_weights(losses, gap)
    eta = math.log(losses.shape[-1]) / gap
    new = losses + loss
    mix = _mix_loss(new, eta) - _mix_loss(losses, eta)
    return new, gap + jnp.maximum(jnp.dot(w, loss) - mix, 0.0)


def is_square(n: jax.Array) -> jax.Array:
    """n is a perfect square (n >= 0 integer array), robust to float sqrt rounding."""
    p = jnp.floor(jnp.sqrt(n.astype(jnp.float32))).astype(n.dtype)
    return (p * p == n) | ((p + 1) * (p + 1) == n)
