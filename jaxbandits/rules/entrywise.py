"""Rules' steps entry by entry: the accelerator program's form of LinGame's game
(:class:`jaxbandits.rules.sampling.Game`, :func:`game_update`) and GLR test
(:class:`jaxbandits.rules.stopping.GameGLR`, :func:`game_glr_decide`), and of seed 000's GLR test
(:class:`jaxbandits.rules.stopping.GLR`, :func:`glr_decide`), on small problems.

Under ``vmap`` over hundreds of thousands of lanes the array form of such a step is a chain of
tens of kernels on a GPU: every small matrix product, reduction over the arms or items, gather of
a learner's losses and scatter into the learner table is a kernel of its own, and each reads and
writes its lane's arrays in device memory.  Here every quantity of the step is a scalar per entry
(the arms, the items and the d x d matrices unrolled, as :func:`jaxbandits.design.copt._tiny_solve`
unrolls Top Two's design), so the step is elementwise over the lanes: a few
:func:`jaxbandits.batching.fused_entries` kernels, which the accelerator policy runs as Triton
kernels (a block of lanes a program, a lane a thread) and the CPU as XLA operations.

The arithmetic is the array form's, in the same order where the array form fixes one: the
inverses of :func:`jaxbandits.algorithms.common.inverse_gram` and
:func:`~jaxbandits.algorithms.common.inverse_from_cholesky` (jitter, symmetrised Cholesky, forward
and back substitution of the identity's columns), the statistics of
:func:`jaxbandits.algorithms.common.glr_pair_statistics` and :func:`~jaxbandits.algorithms.common.glr_row`,
AdaHedge's (:func:`jaxbandits.design.games.hedge_weights`, :func:`~jaxbandits.design.games.hedge_update`)
and first-index argmaxes (:func:`jaxbandits.batching.argmax_fast`).  Sums that the array form
leaves to XLA (matrix products, ``jnp.sum``) are added in index order, so the two forms can differ
in the last bits of a product's sum.

Used under the accelerator policy (:func:`jaxbandits.batching.current_policy`) in a step (not at a
replication's start), with d <= :data:`jaxbandits.design.core.SMALL_DIM`: LinGame for best-arm
identification (m = 1) with at most :data:`MAX_ARMS` arms and items and a learner table of at most
:data:`MAX_TABLE` entries (:func:`applies`), seed 000's GLR with at most :data:`MAX_ITEMS` items
(:func:`glr_applies`).
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from jaxbandits.batching import current_policy, entries_int32, fused_entries
from jaxbandits.design.core import SMALL_DIM, Entries, ordered_sum, small_backward, small_cholesky, small_forward
from jaxbandits.design.games import SMALL_GAME, hedge_loop

#: most arms, and most items, for which a LinGame step is unrolled
MAX_ARMS = 16
#: most entries (learner slots x arms) of the AdaHedge table the unrolled step carries
MAX_TABLE = 64
#: most items for which seed 000's GLR test is unrolled
MAX_ITEMS = 64


def applies(instance, m: int, slots: int = 1) -> bool:
    """Whether the entry form runs: the accelerator policy, in a step (not at a replication's
    start, which runs the array form: it runs once, and the kernels would only add compile
    time), m = 1, small d, K, M and learner table."""
    K, d = instance.arms.shape[-2:]
    M = instance.items.shape[-2]
    pol = current_policy()
    return (pol.batched and pol.per_step and int(m) == 1 and d <= SMALL_DIM and K <= MAX_ARMS and M <= MAX_ARMS
            and int(slots) * K <= MAX_TABLE)


def glr_applies(instance) -> bool:
    """Whether seed 000's GLR test runs entry by entry: the accelerator policy, in a step, small d
    and at most :data:`MAX_ITEMS` items."""
    pol = current_policy()
    return (pol.batched and pol.per_step and instance.arms.shape[-1] <= SMALL_DIM
            and instance.items.shape[-2] <= MAX_ITEMS)


def inverse(A):
    """A^-1 of a symmetric PSD matrix given as nested lists (``A[i][j]``, both halves) as
    :func:`jaxbandits.algorithms.common.inverse_gram` computes it for 2 < d <= SMALL_DIM: a jitter
    of 1e-12 of the mean diagonal, the symmetrised Cholesky factor, and the identity's columns
    solved by forward and back substitution.  Nested lists, both halves."""
    d = len(A)
    cols = _inverse_columns(*_factor(A, _jitter(A)))
    return [[cols[c][i] for c in range(d)] for i in range(d)]


def _jitter(A):
    """1e-12 of the mean diagonal of A (nested lists), the jitter of
    :func:`jaxbandits.algorithms.common.safe_cholesky`."""
    d = len(A)
    return 1e-12 * (ordered_sum([A[i][i] for i in range(d)]) / d + 1e-30)


def _factor(A, jit):
    """(L, r): :func:`jaxbandits.design.core.small_cholesky` of A + jit I, symmetrised first (as
    :func:`jaxbandits.algorithms.common.safe_cholesky` factors it)."""
    d = len(A)
    S = [[(A[i][j] + jit if i == j else A[i][j]) for j in range(d)] for i in range(d)]
    S = [[0.5 * (S[i][j] + S[j][i]) for j in range(d)] for i in range(d)]
    return small_cholesky(Entries(S))


def _inverse_columns(L, r):
    """The columns of A^-1 from A's factor: the identity's columns solved by forward and back
    substitution (:func:`jaxbandits.algorithms.common.cho_solve` of the identity)."""
    d = len(r)
    cols = []
    for c in range(d):
        e = [jnp.asarray(1.0 if i == c else 0.0, r[0].dtype) for i in range(d)]
        cols.append(small_backward(L, r, small_forward(L, r, e)))
    return cols


def _symmetrised(cols):
    """0.5 (A + A^T) of A given by its columns, nested lists by rows
    (:func:`jaxbandits.algorithms.common.inverse_from_cholesky`)."""
    d = len(cols)
    return [[0.5 * (cols[c][i] + cols[i][c]) for c in range(d)] for i in range(d)]


def _all_zero(v):
    """Whether every entry of the list ``v`` is 0 (as ``jnp.all(v == 0)``)."""
    out = v[0] == 0
    for x in v[1:]:
        out = out & (x == 0)
    return out


def matvec(A, v):
    """A v (nested lists), each entry a sum in index order."""
    return [ordered_sum([A[i][k] * v[k] for k in range(len(v))]) for i in range(len(A))]


def argmax_first(values):
    """(max, first index reaching it) of a list of scalars, as :func:`jaxbandits.batching.max_argmax`
    (the max propagates NaN; with a NaN no entry reaches it and the index is the list's length)."""
    top = values[0]
    for v in values[1:]:
        top = jnp.maximum(top, v)
    idx = jnp.asarray(len(values), jnp.int32)
    for k in reversed(range(len(values))):
        idx = jnp.where(values[k] == top, jnp.int32(k), idx)
    return top, idx


def pick(rows, j):
    """rows[j] for a traced j (a list of scalars or of lists), an out-of-range j taking the last
    row as a gather clamps it: a chain of selects."""
    out = rows[-1]
    for k in reversed(range(len(rows) - 1)):
        hit = j == k
        out = jax.tree.map(lambda a, b, hit=hit: jax.lax.select(hit, *jnp.broadcast_arrays(a, b)), rows[k], out)
    return out


def _row_piece(theta, Ainv, Z, best, active):
    """:func:`jaxbandits.rules.alternative._row_piece` in entries: the index j of the closest piece
    {lambda^T (z_j - z_best) >= 0} among the ``active`` items (int32 flags)."""
    M, d = len(Z), len(theta)
    values = [ordered_sum([Z[j][a] * theta[a] for a in range(d)]) for j in range(M)]
    zb, vb = pick(Z, best), pick(values, best)
    z = []
    for j in range(M):
        diff = [zb[a] - Z[j][a] for a in range(d)]
        norm = ordered_sum([ordered_sum([diff[a] * Ainv[a][c] for a in range(d)]) * diff[c] for c in range(d)])
        same = _all_zero(diff)
        gap = vb - values[j]
        z.append(jnp.where((active[j] != 0) & ~same, gap * gap / (2.0 * jnp.maximum(norm, 1e-300)), jnp.inf))
    return argmax_first([-zj for zj in z])[1]


def _hedge_weights(L, gap):
    """:func:`jaxbandits.design.games.hedge_weights` in entries."""
    eta = math.log(len(L)) / gap
    lo = L[0]
    for x in L[1:]:
        lo = jnp.minimum(lo, x)
    u = [jnp.exp(-eta * (x - lo)) for x in L]
    s = ordered_sum(u)
    return [x / s for x in u]


def _mix_loss(L, eta):
    lo = L[0]
    for x in L[1:]:
        lo = jnp.minimum(lo, x)
    return lo - jnp.log(ordered_sum([jnp.exp(-eta * (x - lo)) for x in L]) / len(L)) / eta


def _ridge(G, bs, reg):
    """(V_t^-1, theta_hat) from the entries of A_t and b_t: the regularised inverse and the estimate."""
    d = len(bs)
    Vinv = inverse([[G[i][j] + reg if i == j else G[i][j] for j in range(d)] for i in range(d)])
    return Vinv, matvec(Vinv, bs)


def _square(flat, d):
    return [flat[i * d:(i + 1) * d] for i in range(d)]


def game_update(rule, X, Z, gram, b, counts, W, keys, used, losses, gap, t, start, answer, active, sigma, akey,
                live=None):
    """One step of :meth:`jaxbandits.rules.sampling.Game.update` in entries (the module docstring):
    (arm, W, keys, used, losses, gap) from the rule's state and the belief's statistics.  ``start``:
    the pulls made before the game (an int; at t = start its allocations start at the counts);
    ``answer``: the recommended item; ``active``: [M] bool; ``akey``: the learner's key (an integer
    array, or a NumPy constant).  What the kernels can compute from these (t as a float, whether
    this is the first step, the key as int64) they compute, so that no XLA kernel prepares their
    operands.  ``live`` (a bool, or None:
    every lane): where False the last kernel returns the state as it was, bit for bit, so that no
    select of it follows (:meth:`jaxbandits.rules.sampling.Game.in_place`).

    Four kernels: the estimate, the learner's play, nature's best response, the gains and the
    learner's update.  Triton's compile time of a kernel grows as its loads and stores times its
    length (its coalescing pass walks the whole program from each load and store of the lanes'
    arrays), so one kernel of the whole step took XLA:GPU about a minute to compile (H100, without
    a device), where these four take a few seconds."""
    K, d = X.shape
    M, S = Z.shape[0], keys.shape[0]
    dt = X.dtype
    kernels = current_policy().kernels
    f = lambda v: jnp.asarray(v, dt)  # noqa: E731
    key = ("game", rule.best_response, rule.width, rule.optimism, rule.clip, rule.tracking)

    def estimate(G, bs, Xs, reg):
        Vinv, theta = _ridge(_square(G, d), bs, reg[0])
        q = []
        for k in range(K):  # ||x_k||^2_{V_t^-1}
            x = Xs[k * d:(k + 1) * d]
            XV = [ordered_sum([x[i] * Vinv[i][c] for i in range(d)]) for c in range(d)]
            q.append(jnp.maximum(ordered_sum([XV[c] * x[c] for c in range(d)]), 0.0))
        return theta, q

    theta, q = fused_entries(estimate, (gram, b, X, f(rule.reg)), ((d,), (K,)), kernels, name="lingame_estimate",
                             key=key)

    def learner(ks, us, Ls, gs, delta0, key):
        key = key[0].astype(jnp.int64)
        found, hit = jnp.zeros((), bool), jnp.asarray(S, jnp.int32)
        for s in reversed(range(S)):
            found = found | (ks[s] == key)
            hit = jnp.where(ks[s] == key, jnp.int32(s), hit)
        lru = argmax_first([-jnp.where(ks[s] < 0, -1, us[s]) for s in range(S)])[1]
        slot = jnp.where(found, hit, lru)
        L = [jnp.where(found, x, 0.0) for x in pick([Ls[s * K:(s + 1) * K] for s in range(S)], slot)]
        g0 = jnp.where(found, pick(gs, slot), delta0[0])
        return [slot], L, [g0], _hedge_weights(L, g0)

    akey = entries_int32(akey)
    slot, L, g0, w = fused_entries(learner, (keys, used, losses, gap, f(rule.hedge_delta0), akey),
                                   ((), (K,), (), (K,)), kernels, name="lingame_learner", key=key)

    def nature(Xs, Zs, ws, th, ans, act, *G):
        ans = ans[0]
        Xs, Zs = [Xs[k * d:(k + 1) * d] for k in range(K)], [Zs[j * d:(j + 1) * d] for j in range(M)]
        if rule.best_response == "agent":
            Vw = [[ordered_sum([(Xs[k][i] * ws[k]) * Xs[k][j] for k in range(K)]) for j in range(d)]
                  for i in range(d)]
        else:
            Vw = _square(G[0], d)
        Ainv = inverse(Vw)
        j = _row_piece(th, Ainv, Zs, ans, [act[k] | (ans == k).astype(jnp.int32) for k in range(M)])
        zi, zj = pick(Zs, ans), pick(Zs, j)
        y = [zj[a] - zi[a] for a in range(d)]
        yA = [ordered_sum([y[a] * Ainv[a][c] for a in range(d)]) for c in range(d)]
        coef = ordered_sum([y[a] * th[a] for a in range(d)]) / jnp.maximum(
            ordered_sum([yA[c] * y[c] for c in range(d)]), 1e-300)
        Ay = matvec(Ainv, y)
        diff = [th[a] - (th[a] - coef * Ay[a]) for a in range(d)]  # theta - lambda_t
        return ([ordered_sum([x[a] * diff[a] for a in range(d)]) for x in Xs],)  # x_k^T (theta - lambda_t)

    u, = fused_entries(nature, (X, Z, w, theta, entries_int32(answer), entries_int32(active))
                       + ((gram,) if rule.best_response != "agent" else ()),
                       ((K,),), kernels, name="lingame_nature", key=key)

    def gains_update(q, u, ws, L, g0, sig, start_, slot, t_, Ns, Ws, ks, us, Ls, gs, key, *lv):
        g0, sig, slot, t_, key = g0[0], sig[0], slot[0], t_[0], key[0].astype(jnp.int64)
        tf, first = t_.astype(dt), t_ == start_[0]
        h = jnp.log(tf) if rule.optimism else jnp.zeros((), dt)
        gains = []
        for k in range(K):
            wid = jnp.sqrt(2.0 * h * (q[k] if rule.width == "squared" else jnp.sqrt(q[k])))
            g = 0.5 * (jnp.abs(u[k]) / sig + wid) ** 2
            gains.append(jnp.minimum(g, jnp.log(tf)) if rule.clip else g)
        eta = math.log(K) / g0
        newL = [L[k] - gains[k] for k in range(K)]
        mix = _mix_loss(newL, eta) - _mix_loss(L, eta)
        g1 = g0 + jnp.maximum(ordered_sum([ws[k] * -gains[k] for k in range(K)]) - mix, 0.0)
        Wn = [jnp.where(first, Ns[k], Ws[k]) + ws[k] for k in range(K)]
        target = Wn if rule.tracking == "C" else [tf * ws[k] for k in range(K)]
        arm = argmax_first([target[k] - Ns[k] for k in range(K)])[1]
        at = [slot == s for s in range(S)]
        if lv:  # a held lane writes its state back as it was
            at = [a & (lv[0][0] != 0) for a in at]
            Wn = [jnp.where(lv[0][0] != 0, Wn[k], Ws[k]) for k in range(K)]
        return ([arm], Wn, [jnp.where(at[s], key, ks[s]) for s in range(S)],
                [jnp.where(at[s], t_ + 1, us[s]) for s in range(S)],
                [jnp.where(at[s], newL[k], Ls[s * K + k]) for s in range(S) for k in range(K)],
                [jnp.where(at[s], g1, gs[s]) for s in range(S)])

    inputs = (q, u, w, L, g0, f(sigma), entries_int32(start), slot, entries_int32(t), counts)
    state = (W, keys, used, losses, gap)  # outputs 1 to 5; in place where the kernel takes live
    return fused_entries(
        gains_update, inputs + state + (akey,) + (() if live is None else (entries_int32(live),)),
        ((), (K,), (S,), (S,), (S, K), (S,)), kernels, name="lingame_gains", key=key,
        alias=None if live is None else {len(inputs) + i: 1 + i for i in range(len(state))})


def game_glr_decide(Z, gram, b, reg, sigma, heuristic: bool):
    """(answer, Z(t) / sigma^2) of :meth:`jaxbandits.rules.stopping.GameGLR.decide` (m = 1) in
    entries: the empirical best item of the ridge estimate and the GLR statistic
    min_j (theta^T (z_best - z_j))^2 / (2 ||z_best - z_j||^2_{A^-1}) (A = V_{N_t} for the
    heuristic threshold, else the ridge matrix), as :func:`jaxbandits.algorithms.common.glr_statistic_inv`."""
    M, d = Z.shape
    dt = Z.dtype
    kernels = current_policy().kernels

    def estimate(Zs, G, bs, reg):
        _, theta = _ridge(_square(G, d), bs, reg[0])
        values = [ordered_sum([Zs[j * d + a] * theta[a] for a in range(d)]) for j in range(M)]
        top, best = argmax_first(values)
        return values, [top], [best]

    values, top, best = fused_entries(estimate, (Z, gram, b, jnp.asarray(reg, dt)), ((M,), (), ()), kernels,
                                      name="lingame_glr_estimate", key=("glr", heuristic))

    def statistic(Zs, G, Vs, top, best, sig, *bs):
        Zs, G, top, best = [Zs[j * d:(j + 1) * d] for j in range(M)], _square(G, d), top[0], best[0]
        A = inverse(G) if heuristic else _ridge(G, bs[0], bs[1][0])[0]
        zb = pick(Zs, best)
        z = None
        for j in range(M):
            diff = [zb[a] - Zs[j][a] for a in range(d)]
            norm = jnp.zeros((), dt)
            sq = jnp.zeros((), dt)
            for p in range(d):
                sq = sq + diff[p] * diff[p]
                norm = norm + A[p][p] * (diff[p] * diff[p])
                for q in range(p + 1, d):
                    norm = norm + (A[p][q] + A[q][p]) * (diff[p] * diff[q])
            gp = top - Vs[j]
            zj = jnp.where(sq == 0, jnp.inf, gp * gp / (2.0 * jnp.maximum(norm, 1e-300)))
            z = zj if z is None else jnp.minimum(z, zj)
        return [z / sig[0] ** 2],

    z, = fused_entries(statistic, (Z, gram, values, top, best, jnp.asarray(sigma, dt))
                       + (() if heuristic else (b, jnp.asarray(reg, dt))), ((),), kernels, name="lingame_glr",
                       key=("glr", heuristic))
    return best, z


def glr_decide(Z, gram, b, item_mask=None):
    """(Z(t), the empirical best item) of :meth:`jaxbandits.rules.stopping.GLR.decide` in entries:
    the least-squares estimate from the jittered, symmetrised Cholesky factor of A_t
    (:func:`jaxbandits.algorithms.common.least_squares`), A_t^-1 from that factor, symmetrised
    (:func:`~jaxbandits.algorithms.common.inverse_from_cholesky`), and the row of seed 000 Lemma 7's
    statistics against the empirical best item, Z_b = gap_b |gap_b| / (2 ||z_best - z_b||^2_{A^-1}),
    +inf for items identical to it or masked (:func:`~jaxbandits.algorithms.common.glr_row`); its
    minimum.  One kernel."""
    M, d = Z.shape

    def fn(Zs, G, bs, *mask):
        Zs, G = [Zs[j * d:(j + 1) * d] for j in range(M)], _square(G, d)
        L, r = _factor(G, _jitter(G))
        theta = small_backward(L, r, small_forward(L, r, bs))
        A = _symmetrised(_inverse_columns(L, r))
        values = [ordered_sum([Zs[j][a] * theta[a] for a in range(d)]) for j in range(M)]
        ok = [mask[0][j] != 0 for j in range(M)] if mask else [None] * M
        masked = [jnp.where(ok[j], values[j], -jnp.inf) if mask else values[j] for j in range(M)]
        top, best = argmax_first(masked)
        zb, vb = pick(Zs, best), pick(values, best)
        z = None
        for j in range(M):
            diff = [zb[a] - Zs[j][a] for a in range(d)]
            norm = ordered_sum([ordered_sum([diff[a] * A[a][c] for a in range(d)]) * diff[c] for c in range(d)])
            gap = vb - values[j]
            same = _all_zero(diff)
            if mask:
                same = same | ~ok[j]
            zj = jnp.where(same, jnp.inf, gap * jnp.abs(gap) / (2.0 * jnp.maximum(norm, 1e-300)))
            z = zj if z is None else jnp.minimum(z, zj)
        return [z], [best]

    args = (Z, gram, b) + (() if item_mask is None else (jnp.asarray(item_mask).astype(jnp.int32),))
    z, best = fused_entries(fn, args, ((), ()), current_policy().kernels, name="glr_test",
                            key=("glr000", item_mask is None))
    return z, best


#: most item pairs times d^2 (the products of the transportation costs) for which the GLR of
#: :class:`jaxbandits.rules.stopping.TransportGLR` is unrolled: Triton's compile time grows as a
#: kernel's length times its loads and stores (see :func:`game_update`)
MAX_PAIR_WORK = 2048


def pairs_apply(instance) -> bool:
    """Whether a GLR over the items (M rows of d^2 products, :class:`jaxbandits.rules.stopping.
    EmpiricalGLR`) runs entry by entry: the accelerator policy, in a step, small d, at most
    :data:`MAX_ARMS` items."""
    M, d = instance.items.shape[-2:]
    pol = current_policy()
    return pol.batched and pol.per_step and d <= SMALL_DIM and M <= MAX_ARMS


def transport_applies(instance, candidates: int | None) -> bool:
    """Whether :class:`jaxbandits.rules.stopping.TransportGLR`'s test and Top Two's challenger run
    entry by entry: the accelerator policy, in a step, small d, at most :data:`MAX_ARMS` items,
    M^2 d^2 <= :data:`MAX_PAIR_WORK`, and (furthest answer) every item a candidate
    (``candidates`` >= M; None: the empirical best item)."""
    M, d = instance.items.shape[-2:]
    pol = current_policy()
    return (pol.batched and pol.per_step and d <= SMALL_DIM and M <= MAX_ARMS and M * M * d * d <= MAX_PAIR_WORK
            and (candidates is None or int(candidates) >= M))


def _inverse_from_gram(G, reg):
    """:func:`jaxbandits.algorithms.common.inverse_from_cholesky` of
    :func:`~jaxbandits.algorithms.common.safe_cholesky` of A + reg I (:func:`~jaxbandits.algorithms.
    common.regularized_gram`), in entries: the ridge, the jitter of 1e-12 of the mean diagonal, the
    symmetrised Cholesky factor, the identity's columns solved, the result symmetrised.  Nested
    lists, both halves."""
    d = len(G)
    R = [[G[i][j] + reg if i == j else G[i][j] for j in range(d)] for i in range(d)]
    return _symmetrised(_inverse_columns(*_factor(R, _jitter(R))))


def _transport_row(Z, theta, A, i, eps):
    """W^eps_{i,j} for every item j (:func:`jaxbandits.algorithms.glr.transport_costs` in
    entries, the same order of operations): +inf where z_j = z_i."""
    d = len(theta)
    zi = Z[i] if isinstance(i, int) else pick(Z, i)
    W = []
    for z in Z:
        D = [zi[a] - z[a] for a in range(d)]
        gap = ordered_sum([D[a] * theta[a] for a in range(d)])
        DA = [ordered_sum([D[a] * A[a][c] for a in range(d)]) for c in range(d)]
        norm = ordered_sum([DA[c] * D[c] for c in range(d)])
        num = jnp.maximum(gap + eps, 0.0)
        same = _all_zero(D)
        W.append(jnp.where(same, jnp.inf, num * num / (2.0 * jnp.maximum(norm, 1e-300))))
    return W


def _transport_table(Z, theta, A, eps):
    """W^eps_{i,j} for every pair (rows i), as :func:`_transport_row` gives each row: z_j - z_i is
    exactly -(z_i - z_j), and so are its products and sums, so the gap and the norm of a pair are
    computed once, for i < j (half the program of the rows one by one, and half its compile)."""
    M, d = len(Z), len(theta)
    W = [[None] * M for _ in range(M)]
    for i in range(M):
        W[i][i] = jnp.asarray(jnp.inf, theta[0].dtype)  # z_i - z_i = 0: the item itself
        for j in range(i + 1, M):
            D = [Z[i][a] - Z[j][a] for a in range(d)]
            gap = ordered_sum([D[a] * theta[a] for a in range(d)])
            DA = [ordered_sum([D[a] * A[a][c] for a in range(d)]) for c in range(d)]
            norm = jnp.maximum(ordered_sum([DA[c] * D[c] for c in range(d)]), 1e-300)
            same = _all_zero(D)
            for g, (p, q) in ((gap, (i, j)), (-gap, (j, i))):
                num = jnp.maximum(g + eps, 0.0)
                W[p][q] = jnp.where(same, jnp.inf, num * num / (2.0 * norm))
    return W


def _min(values):
    out = values[0]
    for v in values[1:]:
        out = jnp.minimum(out, v)
    return out


def ridge_estimate(gram, b, reg):
    """(theta_hat = V^-1 b_t, V^-1 = (A_t + reg I)^-1) in entries, one kernel: V^-1 from the
    jittered Cholesky factor of A_t + reg I, symmetrised (:func:`_inverse_from_gram`), as
    :class:`jaxbandits.rules.stopping.TransportGLR` and :class:`~jaxbandits.rules.stopping.EmpiricalGLR`
    compute them."""
    d = b.shape[-1]
    dt = b.dtype

    def estimate(G, bs, reg):
        A = _inverse_from_gram(_square(G, d), reg[0])
        return matvec(A, bs), [x for row in A for x in row]

    return fused_entries(estimate, (gram, b, jnp.asarray(reg, dt)), ((d,), (d, d)), current_policy().kernels,
                         name="ridge_estimate", key=("ridge_estimate",))


def empirical_glr_decide(Z, gram, b, reg, envelope: bool):
    """(theta_hat, V^-1, the empirical best item, Z(t)) of
    :meth:`jaxbandits.rules.stopping.EmpiricalGLR.decide` in entries, two kernels (the estimate,
    :func:`ridge_estimate`; the statistic): the released FWS code's envelope GLR
    (:func:`jaxbandits.rules.stopping.envelope_glr`) or the ridge GLR row
    (:func:`jaxbandits.algorithms.glr.ridge_glr_row`), their minimum over the items."""
    M, d = Z.shape
    theta, W = ridge_estimate(gram, b, reg)

    def statistic(Zs, th, Ws, *G):
        Zs, Ws = [Zs[j * d:(j + 1) * d] for j in range(M)], _square(Ws, d)
        values = [ordered_sum([z[a] * th[a] for a in range(d)]) for z in Zs]
        best = argmax_first(values)[1]
        zb = pick(Zs, best)
        out = []
        for z in Zs:
            D = [zb[a] - z[a] for a in range(d)]
            gap = jnp.maximum(ordered_sum([D[a] * th[a] for a in range(d)]), 0.0)
            U = [ordered_sum([D[a] * Ws[a][c] for a in range(d)]) for c in range(d)]
            q = ordered_sum([U[c] * D[c] for c in range(d)])
            if envelope:
                Gs = _square(G[0], d)
                UG = [ordered_sum([U[a] * Gs[a][c] for a in range(d)]) for c in range(d)]
                sv = ordered_sum([UG[c] * U[c] for c in range(d)])
                v = gap * gap * sv / (2.0 * jnp.maximum(q * q, 1e-300))
            else:
                v = gap * gap / (2.0 * jnp.maximum(q, 1e-300))
            same = _all_zero(D)
            out.append(jnp.where(same, jnp.inf, v))
        return [best], [_min(out)]

    best, z = fused_entries(statistic, (Z, theta, W) + ((gram,) if envelope else ()), ((), ()),
                            current_policy().kernels, name="empirical_glr", key=("empirical_glr", envelope))
    return theta, W, best, z


def transport_decide(Z, gram, b, reg, epsilon, furthest: bool):
    """(theta_hat, V^-1, answer, GLR statistic) of :meth:`jaxbandits.rules.stopping.TransportGLR.decide`
    in entries, two kernels (the estimate; the answer and its statistic: one kernel of both
    compiled 1.5 times as long): V^-1 from the jittered Cholesky factor of A_t + reg I,
    symmetrised; theta_hat = V^-1 b_t; the answer of :func:`jaxbandits.rules.recommend.answer_glr`
    (the furthest answer argmax_i min_j W^eps_{i,j} over every item, ties to the item of larger
    value, then of smaller index, as ``top_k``'s order ranks them; or the empirical best item) and
    its min_j W^eps_{answer,j}."""
    M, d = Z.shape
    dt = Z.dtype
    kernels = current_policy().kernels

    theta, Ainv = ridge_estimate(gram, b, reg)

    def answer(Zs, theta, A, eps):
        Zs, A, eps = [Zs[j * d:(j + 1) * d] for j in range(M)], _square(A, d), eps[0]
        values = [ordered_sum([z[a] * theta[a] for a in range(d)]) for z in Zs]
        if not furthest:
            best = argmax_first(values)[1]
            return [best], [_min(_transport_row(Zs, theta, A, best, eps))]
        Wmin = [_min(row) for row in _transport_table(Zs, theta, A, eps)]
        # the position of item i in top_k's order: larger values first, ties to the smaller index
        pos = [ordered_sum([(values[j] > values[i]).astype(jnp.int32) for j in range(M)]
                           + [(values[j] == values[i]).astype(jnp.int32) for j in range(i)]) for i in range(M)]
        top = Wmin[0]
        for w in Wmin[1:]:
            top = jnp.maximum(top, w)  # NaN-propagating, as jnp.max
        # argmax_fast over the candidates in top_k's order: the first position reaching the max;
        # none (a NaN) gives the out-of-range position, which the gather clamps to the last
        at = jnp.asarray(M, jnp.int32)
        for i in range(M):
            at = jnp.where(Wmin[i] == top, jnp.minimum(at, pos[i]), at)
        at = jnp.minimum(at, M - 1)
        ans, z = jnp.asarray(0, jnp.int32), Wmin[0]
        for i in range(M):
            hit = pos[i] == at
            ans, z = jnp.where(hit, jnp.int32(i), ans), jnp.where(hit, Wmin[i], z)
        return [ans], [z]

    ans, z = fused_entries(answer, (Z, theta, Ainv, jnp.asarray(epsilon, dt)), ((), ()), kernels,
                           name="transport_glr", key=("transport", furthest))
    return theta, Ainv, ans, z


def tc_challenger(Z, theta, Ainv, leader, active, epsilon):
    """(argmin_{j active} W^eps_{leader,j}, z_leader - z_challenger) of
    :func:`jaxbandits.rules.sampling.tc_challenger` in entries, one kernel."""
    M, d = Z.shape
    dt = Z.dtype

    def fn(Zs, th, A, lead, act, eps):
        Zs, A, lead, eps = [Zs[j * d:(j + 1) * d] for j in range(M)], _square(A, d), lead[0], eps[0]
        W = _transport_row(Zs, th, A, lead, eps)
        chal = argmax_first([-jnp.where(act[j] != 0, W[j], jnp.inf) for j in range(M)])[1]
        zl, zc = pick(Zs, lead), pick(Zs, chal)
        return [chal], [zl[a] - zc[a] for a in range(d)]

    chal, y = fused_entries(fn, (Z, theta, Ainv, entries_int32(leader), entries_int32(active), jnp.asarray(epsilon, dt)), ((), (d,)),
                            current_policy().kernels, name="tc_challenger", key=("tc",))
    return chal, y


def _inverse_gram(A):
    """:func:`jaxbandits.algorithms.common.inverse_gram` in entries: the closed form for d = 2,
    :func:`inverse` above."""
    if len(A) != 2:
        return inverse(A)
    jit = 1e-12 * (0.5 * (A[0][0] + A[1][1]) + 1e-30)
    a, b, c = A[0][0] + jit, 0.5 * (A[0][1] + A[1][0]), A[1][1] + jit
    det = a * c - b * b
    return [[c / det, -b / det], [-b / det, a / det]]


def fw_applies(instance, max_active: int, game: str) -> bool:
    """Whether Frank-Wolfe Sampling's step (:class:`jaxbandits.rules.sampling.FrankWolfe`) runs
    entry by entry: the accelerator policy, in a step, small d, at most :data:`MAX_ARMS` arms,
    every item among the pieces the game may take (M <= ``max_active``), and Hedge's game
    (``game="hedge"``) of at most :data:`jaxbandits.design.games.SMALL_GAME` entries."""
    K, d = instance.arms.shape[-2:]
    M = instance.items.shape[-2]
    pol = current_policy()
    return (pol.batched and pol.per_step and d <= SMALL_DIM and K <= MAX_ARMS and M <= int(max_active)
            and game == "hedge" and M * K <= SMALL_GAME)


def fw_step(X, Z, x, counts, theta, best, active, t, sigma, r, square, iters: int):
    """One step of :meth:`jaxbandits.rules.sampling.FrankWolfe.update` with Hedge's game in entries
    (:meth:`~jaxbandits.rules.sampling.FrankWolfe.direction`, the same quantities): (arm, x(t + 1),
    forced, whether a game was played).  With every item among the pieces (M <= ``max_active``,
    :func:`fw_applies`) the game's rows are the items in their own order: the array form takes the
    P = M pieces in ``top_k``'s order (smallest f_j first), which changes the game only by the
    order of Hedge's sums over the rows (its rounding; the array form's softmax and products are
    summed in XLA's order anyway), and the r-active rows are those with f_j < min_j f_j + r_t.
    Three kernels, each with few memory accesses for its length (Triton's compile time grows as
    the two's product; the rows sorted as ``top_k`` orders them, a chain of selects per entry,
    took 12 s of an H100 compile against 5.5): V_x^-1 (as
    :func:`jaxbandits.algorithms.common.inverse_gram`); the f_j, the r-active rows, their payoffs
    <e_k - x, grad f_j> and Hedge's step; the game (Hedge's loop as
    :func:`jaxbandits.design.games._hedge_entries` runs it), the Frank-Wolfe update and tracking.
    ``r``: r_t; ``square``: the forced-exploration schedule's flag at t."""
    K, d = X.shape
    M = Z.shape[0]
    dt = X.dtype
    kernels = current_policy().kernels

    def design_inverse(Xs, xs):
        Xs = [Xs[k * d:(k + 1) * d] for k in range(K)]
        V = [[ordered_sum([(Xs[k][i] * xs[k]) * Xs[k][j] for k in range(K)]) for j in range(d)] for i in range(d)]
        return [v for row in _inverse_gram(V) for v in row],

    Vinv, = fused_entries(design_inverse, (X, x), ((d, d),), kernels, name="fws_design_inverse", key=("fws",))

    def payoffs(Xs, Zs, Vinv, th, bst, act, sig, r):
        Xs, Zs, Vinv, bst, sig, r = ([Xs[k * d:(k + 1) * d] for k in range(K)], [Zs[j * d:(j + 1) * d] for j in range(M)],
                                     _square(Vinv, d), bst[0], sig[0], r[0])
        zb = pick(Zs, bst)
        D = [[zb[a] - z[a] for a in range(d)] for z in Zs]
        gaps = [ordered_sum([Dj[a] * th[a] for a in range(d)]) for Dj in D]
        same = [_all_zero(Dj) for Dj in D]
        amb = jnp.asarray(False)
        for j in range(M):
            amb = amb | (~same[j] & (gaps[j] <= 0.0))
        U = [[ordered_sum([Dj[a] * Vinv[a][c] for a in range(d)]) for c in range(d)] for Dj in D]
        q = [ordered_sum([U[j][c] * D[j][c] for c in range(d)]) for j in range(M)]
        f = [jnp.where(~same[j] & (act[j] != 0), gaps[j] * gaps[j] / (2.0 * sig**2 * jnp.maximum(q[j], 1e-300)),
                       jnp.inf) for j in range(M)]
        fmin = _min(f)
        rows = [jnp.isfinite(f[j]) & (f[j] < fmin + r) for j in range(M)]
        coef = [gaps[j] ** 2 / (2.0 * sig**2 * jnp.maximum(q[j] ** 2, 1e-300)) for j in range(M)]
        H = [[ordered_sum([Xs[k][a] * U[j][a] for a in range(d)]) for j in range(M)] for k in range(K)]
        G = [[coef[j] * (H[k][j] * H[k][j]) - jnp.where(rows[j], f[j], 0.0) for k in range(K)] for j in range(M)]
        # Hedge's setup (games._hedge_setup): the active rows' payoffs, the step
        hi, lo = -jnp.inf, jnp.inf
        for j in range(M):
            for k in range(K):
                hi = jnp.maximum(hi, jnp.where(rows[j], G[j][k], -jnp.inf))
                lo = jnp.minimum(lo, jnp.where(rows[j], G[j][k], jnp.inf))
        n_on = ordered_sum([rw.astype(jnp.int32) for rw in rows])
        eta = jnp.sqrt(8.0 * jnp.log(jnp.maximum(n_on, 2).astype(dt)) / iters) / jnp.maximum(hi - lo, 1e-300)
        Gm = [jnp.where(rows[j], G[j][k], 0.0) for j in range(M) for k in range(K)]
        return Gm, [rw.astype(jnp.int32) for rw in rows], [eta], [amb.astype(jnp.int32)], [n_on]

    Gm, rows, eta, amb, n_on = fused_entries(
        payoffs, (X, Z, Vinv, theta, entries_int32(best), entries_int32(active), jnp.asarray(sigma, dt), jnp.asarray(r, dt)),
        ((M, K), (M,), (), (), ()), kernels, name="fws_payoffs", key=("fws", int(iters)))  # Hedge's step reads iters

    def play(Gm, rows, eta, amb, sq, xs, Ns, tf):
        counts_ = hedge_loop(Gm, rows, eta[0], M, K, iters, False)[0]
        forced = (amb[0] != 0) | (sq[0] != 0)
        z = [jnp.where(forced, 1.0 / K, c / iters) for c in counts_]
        tf = tf[0]
        xn = [xs[k] * ((tf - 1.0) / tf) + z[k] / tf for k in range(K)]
        arm = argmax_first([xn[k] / jnp.maximum(Ns[k], 1e-300) for k in range(K)])[1]
        return [arm], xn, [forced.astype(jnp.int32)]

    tf = jnp.maximum(jnp.asarray(t).astype(dt), 1.0)
    arm, x1, forced = fused_entries(play, (Gm, rows, eta, amb, entries_int32(square), x, counts, tf), ((), (K,), ()), kernels,
                                    name="fws_play", key=("fws", int(iters)))
    return arm, x1, forced != 0, n_on > 1
