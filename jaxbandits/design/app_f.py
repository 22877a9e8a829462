"""Seed 001 App F's Frank-Wolfe for minimax designs (used by seed 000 App A.3 and the released
codes of both papers): one rule, written once, and two ways to iterate it.

The rule (:func:`step_size`, :func:`running`, :func:`finish`): from lambda_0, move towards the
vertex e_j of the arm j maximising (x_j^T A(lambda)^-1 y)^2, y the direction of largest
||y||^2_{A(lambda)^-1} (a Danskin subgradient of max_y ||y||^2_{A^-1}), with step
gamma_k = 2 / (k + 3) (the reference code counts iterations from 1); stop once
||lambda_{k+1} - lambda_k||_2 / ||lambda_k||_2 < 0.01 or after ``max_iters`` iterations; then set
the weights below 1e-5 to zero and renormalise, unless that loses invertibility.

* :func:`dense_solve` (any finite set of directions, arms that need not span R^d: A^-1 through
  the null-space projector, recomputed every iteration): the ``method="paper"`` of
  :func:`jaxbandits.design.minimax_design`, :func:`~jaxbandits.design.xy_allocation` and
  :func:`~jaxbandits.design.oracle_allocation`;
* :func:`paper_frank_wolfe` (the oracle directions (z* - z) / Delta_z of a parameter, arms that
  span R^d): the same iterates in O(K d + M d^2) per iteration, A^-1 carried by Sherman-Morrison
  and the next vertex computed at the end of the previous iteration: Lazy Track-and-Stop's
  allocation solver (:mod:`jaxbandits.algorithms.fixed_confidence.track_and_stop`), parity with
  the dense form tested in ``tests/test_fixed_trips.py``.

Both run as a ``while_loop`` (CPU) or as loops of trip counts known at compile time
(:func:`jaxbandits.batching.fixed_trip_while`, :func:`jaxbandits.batching.solve_where`: the
accelerator policy), with the same iterates.
"""
from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxbandits.batching import argmax_fast, columns_dot, current_policy, fixed_trip_while, solve_where
from jaxbandits.design import kernels as kern
from jaxbandits.design.core import (SMALL_DIM, Entries, add_jitter, design_matrix, initial_design, inverse_design,
                                   masked_argmax, oracle_directions, small_cholesky, small_forward, small_inverse_factor)


# -- the rule -------------------------------------------------------------------------------------
def step_size(k: jax.Array, dtype) -> jax.Array:
    """gamma_k = 2 / (k + 3) for iteration k = 0, 1, ... (App F's 2 / (k + 2), k counted from 1)."""
    return 2.0 / (k.astype(dtype) + 3.0)


def running(k: jax.Array, rel: jax.Array, max_iters) -> jax.Array:
    """App F's continuation rule: fewer than ``max_iters`` iterations and a relative change of
    the design of at least 1 % (``rel`` is inf before the first iteration)."""
    return (k < max_iters) & (rel >= 0.01)


def trip_bound(num_arms: int) -> int:
    """Iterations after which App F's Frank-Wolfe has surely stopped, whatever the data: the
    relative change of iteration k is ||gamma (e_j - lambda)|| / ||lambda|| <= gamma sqrt(2) /
    (1 / sqrt(K)) with gamma = 2 / (k + 3), below App F's 1 % once k + 3 > 200 sqrt(2 K)."""
    return int(math.ceil(200.0 * math.sqrt(2.0 * num_arms)))


def finish(X, lam, perp=None, gram=design_matrix):
    """App F's cutoff: lambda < 1e-5 set to 0 and renormalised, unless the thresholded design lost
    invertibility (the paper's pinv would then give a design that cannot estimate every
    direction; the unthresholded one is kept instead).  ``perp``: the null-space projector of
    arms that do not span R^d (None: they do); ``gram``: how A(lambda) is summed
    (:func:`gram_sum` in the fused program)."""
    thr = jnp.where(lam < 1e-5, 0.0, lam)
    thr = thr / jnp.sum(thr)
    A = gram(thr, X)
    if perp is not None:
        A = A + perp
    return jnp.where(factorable(A), thr, lam)


def gram_sum(lam, X):
    """A(lambda) = sum_x lambda_x x x^T as one reduction over the arms: under ``vmap`` on a GPU one
    kernel reading X and lambda, where :func:`jaxbandits.design.core.design_matrix`'s product is
    a transposed copy of lambda_x x and a batched matrix product.  The same matrix up to the
    order of its sums (the fused program's solves use A(lambda) only in decisions: whether it
    factorises, the Frank-Wolfe's argmaxes and stopping tests)."""
    return jnp.sum(lam[:, None, None] * (X[:, :, None] * X[:, None, :]), axis=0)


def factorable(A):
    """Whether the Cholesky factor of A is finite (A positive definite to working precision): for
    d <= SMALL_DIM by :func:`jaxbandits.design.core.small_cholesky`'s unrolled scalar arithmetic
    (its factor and pivots' reciprocals: no solver call under ``vmap``), above by
    ``jnp.linalg.cholesky``."""
    d = A.shape[0]
    if d <= SMALL_DIM:
        L, r = small_cholesky(0.5 * (A + A.T))
        return jnp.all(jnp.isfinite(jnp.stack([L[i][j] for i in range(d) for j in range(i + 1)] + r)))
    return jnp.all(jnp.isfinite(jnp.linalg.cholesky(A)))


# -- the dense form: any directions, A^-1 recomputed every iteration ------------------------------
class PaperFW(NamedTuple):
    """Iterate of App F's Frank-Wolfe (:func:`dense_solve`): design, iterations run, last relative
    change of the design (inf before the first iteration)."""

    lam: jax.Array
    k: jax.Array
    rel: jax.Array


def dense_iteration(X, mask, perp, dirs, state: PaperFW) -> PaperFW:
    """One iteration of App F's Frank-Wolfe (step 2/(k+2), Danskin gradient of the max direction)."""
    dtype = X.dtype
    lam, k, _ = state
    Ainv = inverse_design(lam, X, perp)
    if dirs.best is not None:
        _, ymax = dirs.best(Ainv)
        y = dirs.rows(ymax[None])[0]
        v = X @ (Ainv @ y)
        h = v * v  # minus the gradient: (x^T A^-1 y_max)^2
    else:
        g = dirs.norms(Ainv)
        ymax = jnp.argmax(g)
        mu = jax.nn.one_hot(ymax, g.shape[0], dtype=dtype)
        B = dirs.bmat(mu)
        W = X @ Ainv
        h = jnp.sum((W @ B) * W, axis=-1)
    j = masked_argmax(h, mask)
    gam = step_size(k, dtype)
    lam_new = (1.0 - gam) * lam
    lam_new = lam_new.at[j].add(gam)
    rel = jnp.linalg.norm(lam_new - lam) / jnp.linalg.norm(lam)
    return PaperFW(lam_new, k + 1, rel)


def paper_fw_running(state: PaperFW, max_iters) -> jax.Array:
    """:func:`running` on a :class:`PaperFW` state."""
    return running(state.k, state.rel, max_iters)


def dense_iterate(X, mask, perp, dirs, state: PaperFW, max_iters, trips: int | None = None) -> PaperFW:
    """App F's iterations while :func:`paper_fw_running`; with ``trips`` (a Python int at least
    the iterations the run can still make) as a loop of exactly that many iterations, the ones
    after the stop leaving the state unchanged: the same iterate, with no loop whose trip count
    depends on data (:func:`jaxbandits.batching.fixed_trip_while`)."""
    cond = lambda st: paper_fw_running(st, max_iters)  # noqa: E731
    body = lambda st: dense_iteration(X, mask, perp, dirs, st)  # noqa: E731
    if trips is not None:
        return fixed_trip_while(cond, body, state, int(trips))
    return jax.lax.while_loop(cond, body, state)


def dense_solve(X, mask, lam0, perp, dirs, max_iters, trips: int | None = None):
    """Seed 001 App F: Frank-Wolfe with step 2/(k+2) on f, Danskin gradient of the max direction,
    stop when ||lambda_{k+1} - lambda_k||_2 / ||lambda_k||_2 < 0.01 or after 5000 iterations, then
    set lambda < 1e-5 to 0 and renormalise.  ``trips``: as :func:`dense_iterate`."""
    start = PaperFW(lam0, jnp.array(0, jnp.int32), jnp.asarray(jnp.inf, X.dtype))
    st = dense_iterate(X, mask, perp, dirs, start, max_iters, trips)
    return finish(X, st.lam, perp), st.k



# -- the incremental form: oracle directions, spanning arms, A^-1 by Sherman-Morrison ------------
REFACTOR = 32  # Frank-Wolfe iterations between exact refactorisations of A(lambda)^-1

#: Frank-Wolfe iterations every solve of ``paper_frank_wolfe(fixed_trips=True)`` (its default under
#: the accelerator policy, outside LT&S's step, which pauses instead) runs before the runs still
#: going continue on the lanes that need them (a multiple of ``REFACTOR``).  On the many-arms instance
#: of the released code (``seeds.many_arms_code``) at K = 1000, 4,096 solves from uniform at
#: plug-in parameters of rounds 2 to 512 stopped after 112 / 208 / 229 / 247 iterations (median /
#: p99 / p99.9 / max)
FIXED_FW_TRIPS = 256


def paper_frank_wolfe(X, Z, theta, init, max_iters: int, arm_mask=None, item_mask=None, *,
                      fixed_trips: bool | None = None, first_trips: int = FIXED_FW_TRIPS):
    """The Frank-Wolfe of seed 001 App F (used by seed 000, App A.3) for the oracle allocation of
    ``theta``: the iterates of ``oracle_allocation(X, Z, theta, init=init, method="paper")``
    (same directions (z* - z) / Delta_z, step 2 / (k + 3) counted from the start of each solve,
    stop when ||lambda_{k+1} - lambda_k||_2 / ||lambda_k||_2 < 0.01 or after ``max_iters``,
    weights < 1e-5 set to 0 and renormalised unless that loses invertibility), computed in
    O(K d + M d^2) per iteration with no O(K) copy:

    * lambda_{k+1} = (1 - g) lambda_k + g e_j changes A(lambda) = sum lambda_x x x^T by a scaled
      rank-one term, so A^-1 follows by Sherman-Morrison (float64), refactorised exactly from the
      incrementally kept A every ``REFACTOR`` iterations;
    * lambda is stored as c * v (scale c, raw weights v): the update touches one entry;
    * ||lambda||^2, hence the stopping test, is updated in O(1):
      ||lambda_{k+1} - lambda_k||^2 = g^2 (||lambda_k||^2 - 2 lambda_kj + 1);
    * the quadratic forms y^T A^-1 y over the M directions are one [M, d(d+1)/2] matrix-vector
      product with the precomputed products y_a y_b;
    * the Danskin gradient of the max direction y is -(x^T A^-1 y)^2: one [K, d] product.

    ``fixed_trips`` (None: the :func:`jaxbandits.batching.current_policy` traced under, True under
    the accelerator policy) runs the iterations with trip counts known at compile time instead of
    a ``while_loop`` (:func:`_fixed_trip_run`): the same iterates, with no loop that asks the host
    for its predicate.  ``first_trips``: the iterations every solve runs there before the runs
    still going continue.

    Requires arms spanning R^d (``LazyTrackAndStop.validate`` checks it: ``needs_span``), so the
    null-space projector of the general solver is zero and is left out.  Masked (padded) arms
    get weight 0 and are never the Frank-Wolfe vertex; masked items give no direction.
    """
    X = jnp.asarray(X)
    Y, Yq, ym = oracle_fw_directions(Z, theta, item_mask, X.dtype)
    st0 = incremental_start(X, init, arm_mask)
    fixed = current_policy().batched if fixed_trips is None else bool(fixed_trips)
    if fixed:
        v, c, *_ = _fixed_trip_run(X, Y, Yq, ym, arm_mask, st0, int(max_iters), int(first_trips))
    else:
        v, c, *_ = _fw_while(X, Y, Yq, ym, arm_mask, st0, max_iters)
    return incremental_allocation(X, v, c)


def oracle_fw_directions(Z, theta, item_mask, dtype):
    """(Y, Yq, ym): the directions z* - z of ``theta`` scaled by their gaps, their products
    y_a y_b over the upper triangle (off-diagonal doubled), and the items that give one."""
    item_mask = jnp.ones((Z.shape[0],), bool) if item_mask is None else item_mask
    Y, ym = oracle_directions(Z, theta, item_mask)
    ia, ib = np.triu_indices(Y.shape[1])
    Yq = Y[:, ia] * Y[:, ib] * jnp.asarray(np.where(ia == ib, 1.0, 2.0), dtype)
    return Y, Yq, ym


def incremental_start(X, init, arm_mask, gram=design_matrix):
    """The Frank-Wolfe state (v, c, ||lambda||^2, A, A^-1, k, relative change) at ``init`` (None:
    uniform over the unmasked arms); ``gram`` as in :func:`finish`."""
    dtype = X.dtype
    mask = jnp.ones((X.shape[0],), bool) if arm_mask is None else arm_mask
    lam0 = initial_design(mask, init, dtype)
    A0 = gram(lam0, X)
    return (lam0, jnp.ones((), dtype), jnp.sum(lam0 * lam0), A0, exact_inverse(A0), jnp.zeros((), jnp.int32),
            jnp.asarray(jnp.inf, dtype))


def incremental_allocation(X, v, c, gram=design_matrix):
    """:func:`finish` of the incremental state's weights lambda = c v."""
    return finish(X, c * v, gram=gram)


def exact_inverse(A):
    """(A + eps I)^-1 via Cholesky, eps as in :func:`jaxbandits.design.core.add_jitter`; for
    d <= SMALL_DIM by :func:`jaxbandits.design.core.small_inverse_factor` (unrolled: no solver call
    under ``vmap``)."""
    d = A.shape[0]
    A = add_jitter(A)
    if d <= SMALL_DIM:
        Linv = small_inverse_factor(A)
    else:
        L = jnp.linalg.cholesky(A)
        Linv = jax.scipy.linalg.solve_triangular(L, jnp.eye(d, dtype=A.dtype), lower=True)
    return Linv.T @ Linv


def incremental_running(st, max_iters):
    """:func:`running` on the incremental state (v, c, ||lambda||^2, A, A^-1, k, relative change)."""
    return running(st[5], st[6], max_iters)


def _fw_while(X, Y, Yq, ym, arm_mask, st, max_iters: int):
    """App F's run from ``st`` as a ``while_loop`` of :func:`_fw_body`'s iterates that carries the
    next iteration's u = A^-1 y (:func:`_fw_vertex`, computed at the end of the previous one).

    The [K] pass of :func:`_fw_step` then reads u from a buffer of the loop.  Computed in the same
    iteration, u is fused into that pass, and XLA:CPU recomputes it for every arm (a gather by
    the data-dependent argmax, which LLVM cannot hoist, so the pass stays scalar code): at K = M =
    1000, d = 2 an iteration took 5.6 us that way, 3.5 us this way (the same iterates).  The run
    computes one vertex more than it uses (after its last iteration)."""
    def body(carry):
        st, u = carry
        st = _fw_step(X, arm_mask, st, u, None, loop_max_iters=max_iters)
        return st, _fw_vertex(X, Y, Yq, ym, st[4])

    st, _ = jax.lax.while_loop(lambda carry: incremental_running(carry[0], max_iters), body,
                               (st, _fw_vertex(X, Y, Yq, ym, st[4])))
    return st


def _fw_body(X, Y, Yq, ym, arm_mask, st, refactor, go=None):
    """One iteration of :func:`paper_frank_wolfe` on the state (v, c, ||lambda||^2, A, A^-1, k,
    relative change): :func:`_fw_step` at the vertex :func:`_fw_vertex` of the state's A^-1."""
    return _fw_step(X, arm_mask, st, _fw_vertex(X, Y, Yq, ym, st[4]), refactor, go)


def _fw_vertex(X, Y, Yq, ym, Ainv):
    """u = A^-1 y for the direction y that maximises y^T A^-1 y (the max direction of App F's
    iteration; the first maximiser)."""
    # the [M, d(d+1)/2] and [K, d] matrix-vector products as sums over their static columns: each
    # then fuses with its argmax into one pass (1.5 -> 0.9 ms per solve at K = M = 1000, d = 2 on
    # CPU, the same iterates); the upper triangle by static indices (a traced ``triu_indices``
    # costs XLA:CPU eight small kernels an iteration)
    g = columns_dot(Yq, jnp.stack([Ainv[a, b] for a, b in zip(*np.triu_indices(X.shape[1]))]))
    g = jnp.where(ym, g, -jnp.inf)
    return columns_dot(Ainv, Y[argmax_fast(g)])


def _fw_step(X, arm_mask, st, u, refactor, go=None, loop_max_iters: int | None = None):
    """The rest of App F's iteration at u = :func:`_fw_vertex`: the arm maximising (x^T u)^2 gets
    step 2 / (k + 3).  ``refactor``: refactorise A^-1 exactly after it (None: when k + 1 is a
    multiple of ``REFACTOR``, a ``cond``; a Python bool where the caller knows).  ``go``: where
    False, the weights v are returned unchanged (their one-entry update adds 0), so a masked
    caller selects only the small fields, not the [K] weights.

    ``loop_max_iters`` (inside a ``while_loop`` on :func:`incremental_running` with that ``max_iters``):
    the O(d^2) updates of the small fields run as a ``cond`` on the loop's own predicate, true
    there.  XLA:CPU runs the branch as one nested thunk sequence whose buffers are all small, in
    order, instead of as a dozen nodes of the iteration's dependency graph: 3.4 -> 3.2 us an
    iteration at K = M = 1000, d = 2, the same values.  Not under the accelerator policy, where a
    ``cond`` asks the host for its predicate."""
    v, c, n2, A, Ainv, k, rel = st
    h = columns_dot(X, u)
    h = h * h
    if arm_mask is not None:
        h = jnp.where(arm_mask, h, -jnp.inf)
    j = argmax_fast(h)
    if loop_max_iters is None:
        gam, c_new, n2, A, Ainv, k1, rel = _fw_small(c, n2, A, Ainv, k, v[j], X[j], refactor)
    else:
        gam, c_new, n2, A, Ainv, k1, rel = jax.lax.cond(
            incremental_running(st, loop_max_iters), lambda *a: _fw_small(*a, refactor),
            lambda c, n2, A, Ainv, k, vj, x: (jnp.zeros_like(c), c, n2, A, Ainv, k, rel),
            c, n2, A, Ainv, k, v[j], X[j])
    v = v.at[j].add(gam / c_new if go is None else jnp.where(go, gam / c_new, 0.0))
    return v, c_new, n2, A, Ainv, k1, rel


def _fw_small(c, n2, A, Ainv, k, vj, x, refactor):
    """App F's step gamma = 2 / (k + 3) towards the arm x (weight c vj) on the small fields of
    :func:`_fw_step`: (gamma, c, ||lambda||^2, A, A^-1, k + 1, relative change)."""
    dtype = c.dtype
    gam = step_size(k, dtype)
    lj = c * vj
    rel = gam * jnp.sqrt(jnp.maximum(n2 - 2.0 * lj + 1.0, 0.0)) / jnp.sqrt(n2)
    c_new = c * (1.0 - gam)
    n2 = (1.0 - gam) ** 2 * n2 + 2.0 * gam * (1.0 - gam) * lj + gam * gam
    A = (1.0 - gam) * A + gam * jnp.outer(x, x)
    # ((1 - g) A + g x x^T)^-1 = (A^-1 - r u u^T / (1 + r x^T u)) / (1 - g), u = A^-1 x, r = g / (1 - g)
    ux = columns_dot(Ainv, x)
    r = gam / (1.0 - gam)
    xux = columns_dot(x[None, :], ux)[0]  # x^T A^-1 x
    sm = (Ainv - (r / (1.0 + r * xux)) * jnp.outer(ux, ux)) / (1.0 - gam)
    k1 = k + 1
    if refactor is None:
        Ainv = jax.lax.cond(k1 % REFACTOR == 0, exact_inverse, lambda _: 0.5 * (sm + sm.T), A)
    else:
        Ainv = exact_inverse(A) if refactor else 0.5 * (sm + sm.T)
    return gam, c_new, n2, A, Ainv, k1, rel


def _fw_blocks(X, Y, Yq, ym, arm_mask, st, max_iters: int, blocks: int):
    """``blocks`` x ``REFACTOR`` iterations of :func:`_fw_body`, those after App F's stop leaving
    the state unchanged; the state's k must be a multiple of ``REFACTOR`` (or the run stopped),
    so the exact refactorisation is the last iteration of each block, as in the ``while_loop``."""
    def block(_, st):
        st = jax.lax.fori_loop(0, REFACTOR - 1, lambda _, s: _fw_masked(X, Y, Yq, ym, arm_mask, s, max_iters,
                                                                          False), st)
        return _fw_masked(X, Y, Yq, ym, arm_mask, st, max_iters, True)

    return jax.lax.fori_loop(0, blocks, block, st)


def _fw_masked(X, Y, Yq, ym, arm_mask, st, max_iters: int, refactor):
    """One iteration of :func:`_fw_body` where App F's run goes on, the state unchanged after its
    stop (the [K] weights receive a zero update rather than a select)."""
    go = incremental_running(st, max_iters)
    new = _fw_body(X, Y, Yq, ym, arm_mask, st, refactor, go)
    return (new[0],) + tuple(jnp.where(go, a, b) for a, b in zip(new[1:], st[1:]))


def incremental_trips(X, Y, Yq, ym, arm_mask, st, max_iters: int, trips: int):
    """``trips`` iterations of App F's run from ``st`` (k a multiple of ``trips``), the state
    unchanged after its stop: whole blocks of :func:`_fw_blocks` when ``trips`` is a multiple of
    ``REFACTOR``; for a divisor of it, masked iterations that refactorise A^-1 exactly where the
    ``while_loop`` does (k + 1 a multiple of ``REFACTOR``: a per-lane select under ``vmap``)."""
    if trips % REFACTOR == 0:
        return _fw_blocks(X, Y, Yq, ym, arm_mask, st, max_iters, trips // REFACTOR)
    return jax.lax.fori_loop(0, trips, lambda _, s: _fw_masked(X, Y, Yq, ym, arm_mask, s, max_iters, None), st)


def _fixed_trip_run(X, Y, Yq, ym, arm_mask, st, max_iters: int, first_trips: int):
    """App F's run as loops of trip counts known at compile time, with the ``while_loop``'s
    iterates: min(first_trips, max_iters) iterations on every lane, then, in stages that double
    the iterations run (first_trips, 2 first_trips, 4 first_trips, ..., ``max_iters``), the next
    stage's iterations on the lanes whose run is still going, each stage through
    :func:`solve_where` (under the accelerator policy one pass on the smallest buffer holding
    them; none when no run is left).  Stages are whole blocks of ``REFACTOR`` iterations, and
    ``max_iters`` bounds every run, so none is cut short."""
    bounds = [max(1, -(-min(int(first_trips), max_iters) // REFACTOR)) * REFACTOR]
    while bounds[-1] < max_iters:
        bounds.append(min(2 * bounds[-1], -(-max_iters // REFACTOR) * REFACTOR))
    st = _fw_blocks(X, Y, Yq, ym, arm_mask, st, max_iters, bounds[0] // REFACTOR)
    for lo, hi in zip(bounds, bounds[1:]):
        def more(X, Y, Yq, ym, arm_mask, st, blocks=(hi - lo) // REFACTOR):  # no closed-over tracers
            return _fw_blocks(X, Y, Yq, ym, arm_mask, st, max_iters, blocks)
        st = solve_where(incremental_running(st, max_iters), more, (X, Y, Yq, ym, arm_mask, st), st)
    return st


# -- the incremental form as one fused kernel a step (GPUs) ---------------------------------------
def fused_trips_supported(d: int) -> bool:
    """Whether :func:`incremental_trips_fused` takes arms of dimension ``d``: its exact
    refactorisation is :func:`exact_inverse`'s unrolled Cholesky (d <= ``SMALL_DIM``)."""
    return int(d) <= SMALL_DIM


def _pad(a, *shape):
    """``a`` padded with zeros at the end of each axis to ``shape``."""
    return jnp.pad(a, [(0, n - m) for n, m in zip(shape, a.shape)])


def _fused_operands(X, Z, theta, item_mask, arm_mask, kernels: str):
    """The dimensions (K, d, M, and their powers of two Kp, dp, Mp, the dtype) and the padded
    operands (X, Z, theta, item mask, arm mask; masks as integers) of the fused App F kernels."""
    if kernels not in ("triton", "interpret"):
        raise ValueError(f"kernels must be 'triton' or 'interpret' for the fused form, got {kernels!r}")
    X, Z = jnp.asarray(X), jnp.asarray(Z)
    (K, d), M = X.shape, Z.shape[0]
    if not fused_trips_supported(d):
        raise ValueError(f"the fused App F iterations need d <= {SMALL_DIM}, got d = {d}")
    dtype = X.dtype
    Kp, Mp, dp = kern.power_of_two(K), kern.power_of_two(M), kern.power_of_two(d)
    arm_mask = jnp.ones((K,), bool) if arm_mask is None else arm_mask
    item_mask = jnp.ones((M,), bool) if item_mask is None else item_mask
    consts = (_pad(X, Kp, dp), _pad(Z, Mp, dp), _pad(theta.astype(dtype), dp),
              _pad(item_mask.astype(jnp.int32), Mp), _pad(arm_mask.astype(jnp.int32), Kp))
    return (K, d, M, Kp, Mp, dp, dtype), consts


def incremental_trips_fused(X, Z, theta, item_mask, arm_mask, st, go, max_iters: int, trips: int, kernels: str):
    """:func:`incremental_trips` on the directions of ``theta`` (:func:`oracle_fw_directions` of
    ``Z``, ``item_mask``), computed as one fused kernel (:mod:`jaxbandits.design.kernels`): under
    ``vmap`` one program a lane, which does nothing where ``go`` is False and otherwise forms the
    directions and makes the ``trips`` iterations in registers, each skipped after App F's stop,
    A^-1 refactorised exactly where k + 1 is a multiple of ``REFACTOR`` (as in the
    ``while_loop``).  ``st``: the state (v, c, ||lambda||^2, A, A^-1, k, relative change) the
    lane continues from; returns the state after the trips (``st`` itself where ``go`` is False).

    The iterates are those of :func:`incremental_trips` on every lane whose argmaxes and stopping
    tests decide alike.  The directions, A, A^-1 and ||lambda||^2 enter the run only through
    those decisions (the max direction, the arm given the step, whether the relative change is
    below 1 %), and the weights v and the scale c are computed from the decisions alone, by the
    same operations: so v and c are the XLA loop's bit for bit unless a decision falls within
    rounding of a tie.  The kernel sums in index order and does not contract ``a * b + c`` into
    a fused multiply-add (Triton; XLA:CPU does), so A and A^-1 can differ from the XLA loop's in
    their last bits.  For d <= ``SMALL_DIM`` (:func:`fused_trips_supported`); ``kernels``:
    "triton" (GPUs) or "interpret" (the same kernel run by Pallas's interpreter)."""
    (K, d, M, Kp, Mp, dp, dtype), consts = _fused_operands(X, Z, theta, item_mask, arm_mask, kernels)
    v, c, n2, A, Ainv, k, rel = st
    carry = (_pad(v, Kp), c, n2, _pad(A, dp, dp), _pad(Ainv, dp, dp), k, rel)
    run = _trips_program(d, dp, Mp, dtype, max_iters, trips)
    v, c, n2, A, Ainv, k, rel = kern.gated_kernel(run, carry, consts, go, kernels=kernels,
                                                  num_warps=max(1, min(8, max(Kp, Mp) * dp // 256)))
    return v[:K], c, n2, A[:d, :d], Ainv[:d, :d], k, rel


def paused_update_in_place(X, Z, theta, item_mask, answer, arm_mask, held, go, start, counted, elapsed,
                           max_iters: int, trips: int, kernels: str, warm_start: bool):
    """LT&S's allocation update held over steps (:meth:`jaxbandits.rules.lazy.LazyTracking.holds`)
    as one kernel that updates the lane's state in place (:func:`kernels.gated_kernel` with
    ``in_place``): where ``go`` is False it reads and writes nothing, so a step moves memory only
    for the lanes that solve, where :func:`incremental_trips_fused` and the update around it read
    and write every lane's [K] arrays every step.  Where ``go`` holds, in one program:

    * where ``start`` holds, the run's first state (:func:`incremental_start` at w, uniform
      without ``warm_start``, with A(lambda) summed as :func:`gram_sum` does);
    * ``trips`` iterations (:func:`incremental_trips_fused`);
    * where the run has ended, the new allocation (:func:`finish` of lambda = c v, kept only if
      it is finite with a positive sum, else w), and w, sum_{s <= t - 1} w(s) (``base``, w times
      ``elapsed`` added) and the sum of the allocation shifts (``shift``, |new - w| summed where
      ``counted``) updated as the one-step update does.

    ``item_mask`` ([M] bool or None: all) and ``answer`` (an index) give the items of psi's min:
    those of the mask and the answer, joined inside the kernel (a mask shared by the lanes then
    stays one array, where the joined one is an [M] array a lane).
    ``held``: (w, base, v, c, ||lambda||^2, A, A^-1, k, relative change, shift), held padded (w,
    base, v: [Kp]; A, A^-1: [dp, dp], powers of two above K and d, zero in the padding; base None
    where the state keeps no sum); returns the same after the step.  The sums run in the kernel's
    order, so the allocation can differ from the XLA program's in its last bits (the iterates'
    decisions are the same but within rounding of a tie, :func:`incremental_trips_fused`)."""
    (K, d, M, Kp, Mp, dp, dtype), consts = _fused_operands(X, Z, theta, item_mask, arm_mask, kernels)
    w, base, *fw, shift = held
    if w.shape != (Kp,) or fw[0].shape != (Kp,) or fw[3].shape != (dp, dp):
        raise ValueError(f"paused_update_in_place holds w and v as [{Kp}] and A as [{dp}, {dp}], got "
                         f"{w.shape}, {fw[0].shape} and {fw[3].shape}")
    has_base = base is not None
    carry = (w,) + ((base,) if has_base else ()) + tuple(fw) + (shift,)
    consts = consts + (jnp.asarray(start).astype(jnp.int32), jnp.asarray(counted).astype(jnp.int32),
                       jnp.asarray(elapsed, dtype), jnp.asarray(answer, jnp.int32))
    trips_run = _trips_program(d, dp, Mp, dtype, max_iters, trips)
    pairs = [(a, b) for a, b in zip(*np.triu_indices(d))]

    def sums(lam, xs):
        """sum_k lam_k x_k x_k^T as d(d + 1)/2 sums (:func:`gram_sum`'s products)."""
        return {(a, b): jnp.sum(lam * (xs[a] * xs[b])) for a, b in pairs}

    def tile(s):
        ii, jj = kern.iota(dp)[:, None], kern.iota(dp)[None, :]
        out = jnp.zeros((dp, dp), dtype)
        for (a, b), v in s.items():
            out = out + jnp.where(((ii == a) & (jj == b)) | ((ii == b) & (jj == a)), v, 0.0)
        return out

    def finite(v):
        return jnp.abs(v) < jnp.inf   # False for NaN and +-inf

    def run(*args):
        w, rest = args[0], args[1:]
        base, rest = (rest[0], rest[1:]) if has_base else (None, rest)
        fw, shift = rest[:7], rest[7]
        Xv, Zv, th, im, am, st, cnt, el, ans = rest[8:]
        im = jnp.where(kern.iota(Mp) == ans, 1, im)   # the answer joins the items
        xs = [kern.column(Xv, i) for i in range(d)]
        mask = am != 0
        # the run's first state (:func:`incremental_start`, :func:`jaxbandits.design.core.initial_design`)
        uniform = jnp.where(mask, 1.0, 0.0).astype(dtype) / jnp.maximum(jnp.sum(jnp.where(mask, 1.0, 0.0)), 1.0)
        if warm_start:
            lam = jnp.where(mask, jnp.maximum(w, 0.0), 0.0)
            s = jnp.sum(lam)
            ok = finite(s) & (s > 0)
            lam = jnp.where(ok, lam / jnp.where(ok, s, 1.0), uniform)
            lam0 = jnp.where(ok, 0.999 * lam + 0.001 * uniform, uniform)
        else:
            lam0 = uniform
        A0 = tile(sums(lam0, xs))
        fresh = (lam0, jnp.ones((), dtype), jnp.sum(lam0 * lam0), A0, kernel_exact_inverse(A0, d),
                 jnp.zeros((), jnp.int32), jnp.asarray(jnp.inf, dtype))
        fw = tuple(jnp.where(st != 0, a, b) for a, b in zip(fresh, fw))
        fw = trips_run(*fw, Xv, Zv, th, im, am)
        v, c, k, rel = fw[0], fw[1], fw[5], fw[6]
        fin = ~((k < max_iters) & (rel >= 0.01))   # :func:`running`
        # :func:`finish` of lambda = c v
        lam = c * v
        thr = jnp.where(lam < 1e-5, 0.0, lam)
        thr = thr / jnp.sum(thr)
        g = sums(thr, xs)
        L, r = small_cholesky(Entries([[0.5 * (g[min(i, j), max(i, j)] + g[min(i, j), max(i, j)])
                                         for j in range(d)] for i in range(d)]))
        fact = functools.reduce(lambda a, b: a & b, [finite(L[i][j]) for i in range(d) for j in range(i + 1)]
                                + [finite(x) for x in r])
        new = jnp.where(fact, thr, lam)
        # a failed solve keeps the previous allocation
        good = (jnp.max(jnp.where(finite(new), 0.0, 1.0)) == 0.0) & (jnp.sum(new) > 0)
        new = jnp.where(good, new, w)
        shift = jnp.where(fin, shift + jnp.where(cnt != 0, jnp.sum(jnp.abs(new - w)), 0.0), shift)
        out = (jnp.where(fin, new, w),)
        if has_base:
            out += (jnp.where(fin, base + el * w, base),)
        return out + tuple(fw) + (shift,)

    out = kern.gated_kernel(run, carry, consts, go, kernels=kernels, in_place=True,
                            num_warps=max(1, min(8, max(Kp, Mp) * dp // 256)))
    w, out = out[0], out[1:]
    base, out = (out[0], out[1:]) if has_base else (None, out)
    return (w, base) + tuple(out)


def _trips_program(d: int, dp: int, Mp: int, dtype, max_iters: int, trips: int):
    """The body of :func:`incremental_trips_fused`'s kernel: ``run(v, c, n2, A, Ainv, k, rel, X, Z,
    theta, item_mask, arm_mask)`` (padded, inside one program) forms the directions of ``theta`` and
    makes ``trips`` iterations of App F's Frank-Wolfe from the state, each skipped after App F's
    stop; returns the state after them."""
    pairs = [(a, b) for a, b in zip(*np.triu_indices(d))]
    cols = lambda B: [kern.column(B, i) for i in range(d)]  # noqa: E731  the first d columns

    def iteration(carry, xs, ys, ym, am):
        v, c, n2, A, Ainv, k, rel = carry
        # the vertex (:func:`_fw_vertex`): the max direction's u = A^-1 y
        g = kern.dot_columns([ys[a] * ys[b] * (1.0 if a == b else 2.0) for a, b in pairs],
                             [kern.element(Ainv, a, b) for a, b in pairs])
        y = kern.pick_row(ys, kern.first_argmax(g, ym != 0), dp)
        u = kern.dot_columns(cols(Ainv), y)
        # the step (:func:`_fw_step`, :func:`_fw_small`)
        h = kern.dot_columns(xs, u)
        j = kern.first_argmax(h * h, am != 0)
        x, vj = kern.pick_row(xs, j, dp), kern.entry(v, j)
        gam = step_size(k, dtype)
        lj = c * vj
        rel = gam * jnp.sqrt(jnp.maximum(n2 - 2.0 * lj + 1.0, 0.0)) / jnp.sqrt(n2)
        c_new = c * (1.0 - gam)
        n2 = (1.0 - gam) ** 2 * n2 + 2.0 * gam * (1.0 - gam) * lj + gam * gam
        A = (1.0 - gam) * A + gam * (x[:, None] * x[None, :])
        ux = kern.dot_columns(cols(Ainv), x)
        r = gam / (1.0 - gam)
        xux = kern.dot_columns([kern.entry(x, i) for i in range(d)], ux)  # x^T A^-1 x, in index order
        sm = (Ainv - (r / (1.0 + r * xux)) * (ux[:, None] * ux[None, :])) / (1.0 - gam)
        k1 = k + 1
        Ainv = jnp.where(k1 % REFACTOR == 0, kernel_exact_inverse(A, d), 0.5 * (sm + sm.T))
        v = jnp.where(kern.iota(v.shape[0]) == j, v + gam / c_new, v)
        return v, c_new, n2, A, Ainv, k1, rel

    def run(v, c, n2, A, Ainv, k, rel, Xv, Zv, th, im, am):
        # the directions (:func:`oracle_fw_directions`): (z* - z) / (z* - z)^T theta
        star = kern.first_argmax(kern.dot_columns(cols(Zv), th), im != 0)
        diff = kern.row(Zv, star)[None, :] - Zv
        gaps = kern.dot_columns(cols(diff), th)
        ym = (im != 0) & (kern.iota(Mp) != star)
        safe = jnp.where(ym & (gaps > 0), gaps, 1.0)
        Y = diff / safe[:, None]
        Y = jnp.where((ym & (gaps <= 0))[:, None], diff * 1e150, Y)
        xs, ys = cols(Xv), cols(Y)  # the columns, once: an iteration reads no matrix

        def trip(_, s):
            on = (s[5] < max_iters) & (s[6] >= 0.01)  # :func:`running`
            return jax.lax.cond(on, lambda s: iteration(s, xs, ys, ym, am), lambda s: s, s)

        return jax.lax.fori_loop(0, int(trips), trip, (v, c, n2, A, Ainv, k, rel))

    return run


# -- the exact refactorisation inside a fused kernel (LT&S's and RAGE's App F runs) -------------
def kernel_exact_inverse(A, d: int):
    """:func:`exact_inverse` of the leading d x d block of A [dp, dp] inside a fused kernel:
    (A + eps I)^-1 (eps = 1e-13 tr(A) / d), symmetrised, by :func:`small_cholesky`'s unrolled factor
    and forward substitution, as L^-T L^-1 summed row by row; zero outside the block."""
    dp = A.shape[0]
    tr = kern.element(A, 0, 0)
    for i in range(1, d):
        tr = tr + kern.element(A, i, i)
    eps = 1e-13 * tr / d
    aj = lambda i, j: kern.element(A, i, j) + (eps if i == j else 0.0)  # noqa: E731
    S = [[0.5 * (aj(i, j) + aj(j, i)) for j in range(d)] for i in range(d)]
    L, r = small_cholesky(Entries(S))
    ids = kern.iota(dp)
    z = small_forward(L, r, [jnp.where(ids == i, 1.0, 0.0).astype(A.dtype) for i in range(d)])
    out = z[0][:, None] * z[0][None, :]
    for zi in z[1:]:
        out = out + zi[:, None] * zi[None, :]
    return out
