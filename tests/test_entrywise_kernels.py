"""The accelerator programs' entry-by-entry forms of three inner loops: Top Two's c-optimal
Frank-Wolfe (arms and dimensions unrolled), FWS's Hedge on small games, XY-adaptive's greedy
pulls (H held as its rows).  Each is checked against the array form it replaces, and the
algorithms' accelerator programs (the accelerator policy traced on the CPU) against their CPU
programs, replication by replication.
"""
from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbandits  # noqa: F401  (float64)
from jaxbandits import batching
from jaxbandits.design import copt, games
from jaxbandits.design.core import initial_design
from test_fws_toptwo import _exact_quadratic  # exact rational y^T (A + eps I)^-1 y

GPU = lambda lanes: batching.SolvePolicy(batched=True, capacity=lanes)  # noqa: E731


def _primitives(jaxpr, enter_kernels: bool = True) -> set:
    """Primitive names of a jaxpr and of every jaxpr nested in its equations (``enter_kernels``
    False: not those inside a ``pallas_call``'s kernel)."""
    out = set()
    for eqn in jaxpr.eqns:
        out.add(eqn.primitive.name)
        if eqn.primitive.name == "pallas_call" and not enter_kernels:
            continue
        for v in eqn.params.values():
            for sub in (v if isinstance(v, (tuple, list)) else (v,)):
                inner = getattr(sub, "jaxpr", None)
                if inner is not None:
                    out |= _primitives(getattr(inner, "jaxpr", inner), enter_kernels)
    return out


def _loop_primitives(closed) -> set:
    """Primitives inside the loops (scan / while bodies) of a closed jaxpr."""
    out = set()
    for eqn in closed.jaxpr.eqns:
        if eqn.primitive.name in ("scan", "while"):
            for key in ("jaxpr", "body_jaxpr"):
                if key in eqn.params:
                    out |= _primitives(eqn.params[key].jaxpr)
    return out


def c_opt(X, y, m, lam):
    return copt.c_optimal(X, y, arm_mask=m, init=lam, iters=16)


def test_c_optimal_arms_unrolled_is_the_small_path():
    """Under the accelerator policy c_optimal unrolls the arms too (K <= SMALL_ARMS, d <= SMALL_DIM):
    the same Frank-Wolfe iterates as the CPU's small path to rounding (A(lambda) summed in arm order
    instead of XLA's), its value exact against rational arithmetic, masks honoured, and no
    reduction, gather or matrix product left in the loop."""
    rng = np.random.default_rng(3)
    L = 24
    for K, d in ((6, 5), (16, 8)):
        X = jnp.asarray(rng.normal(size=(L, K, d)))
        y = jnp.asarray(rng.normal(size=(L, d)))
        mask = jnp.asarray(rng.random((L, K)) < 0.8).at[:, :d].set(True)   # the active arms span
        lam0 = jax.vmap(lambda m: initial_design(m, None, jnp.float64))(mask)
        cpu = jax.jit(jax.vmap(lambda X, y, m, l: c_opt(X, y, m, l)))(X, y, mask, lam0)
        with batching.policy(GPU(L)):
            fn = jax.vmap(lambda X, y, m, l: c_opt(X, y, m, l))
            acc = jax.jit(fn)(X, y, mask, lam0)
            inner = _loop_primitives(jax.make_jaxpr(fn)(X, y, mask, lam0))
        assert inner and not inner & {"reduce_sum", "reduce_max", "argmax", "gather", "dot_general", "cholesky"}, inner
        np.testing.assert_allclose(np.asarray(acc.allocation), np.asarray(cpu.allocation), atol=1e-9)
        np.testing.assert_allclose(np.asarray(acc.value), np.asarray(cpu.value), rtol=1e-9)
        assert not np.asarray(acc.allocation)[~np.asarray(mask)].any()
        for lane in range(3):
            exact = _exact_quadratic(np.asarray(acc.allocation[lane]), np.asarray(X[lane]), np.asarray(y[lane]))
            np.testing.assert_allclose(float(acc.value[lane]), exact, rtol=1e-11)


def test_hedge_entrywise_is_the_array_hedge():
    """Under the accelerator policy Hedge on a small game (P K <= SMALL_GAME) runs entry by entry:
    on random games with masked rows the same best responses as the array form (the softmax's sum
    and q^T G in row order change their rounding only; a flip needs a tie to 1e-16), the
    certificate to rounding, and no reduction or gather in the loop."""
    rng = np.random.default_rng(5)
    L = 256
    for P, K in ((6, 6),):
        G = jnp.asarray(rng.normal(size=(L, P, K)))
        rows = jnp.asarray(rng.random((L, P)) < 0.7).at[:, 0].set(True)
        plain = lambda g, r: games.matrix_game(g, r, 64)  # noqa: E731
        cert = lambda g, r: games.matrix_game_certified(g, r, 64)  # noqa: E731
        z_cpu = jax.jit(jax.vmap(plain))(G, rows)
        zc_cpu, gap_cpu = jax.jit(jax.vmap(cert))(G, rows)
        with batching.policy(GPU(L)):
            z_acc = jax.jit(jax.vmap(plain))(G, rows)
            zc_acc, gap_acc = jax.jit(jax.vmap(cert))(G, rows)
            inner = _loop_primitives(jax.make_jaxpr(jax.vmap(cert))(G, rows))
        assert inner and not inner & {"reduce_sum", "reduce_max", "reduce_min", "argmax", "gather", "dot_general"}, inner
        same = np.all(np.asarray(z_acc) == np.asarray(z_cpu), axis=1)
        assert same.mean() >= 0.99, same.mean()
        np.testing.assert_array_equal(np.asarray(zc_acc), np.asarray(z_acc))
        ok = np.all(np.asarray(zc_acc) == np.asarray(zc_cpu), axis=1)
        np.testing.assert_allclose(np.asarray(gap_acc)[ok], np.asarray(gap_cpu)[ok], rtol=1e-9, atol=1e-15)
        # z is the empirical distribution of 64 best responses
        np.testing.assert_allclose(np.asarray(z_acc).sum(1), 1.0, atol=1e-12)
        assert np.all(np.round(np.asarray(z_acc) * 64) == np.asarray(z_acc) * 64)


def test_xy_adaptive_pulls_by_rows_are_the_array_pulls():
    """XY-adaptive's greedy pulls with H held as its rows (K <= ROWS_K): bit for bit the array
    form's counts, pulls made, rho and phase flag, on H built from random designs (ties included:
    a design proportional to I makes symmetric arms tie)."""
    from jaxbandits.algorithms.fixed_confidence import xy

    rng = np.random.default_rng(8)
    L, S = 32, 24
    for K, M, d in ((6, 6, 5), (4, 5, 3)):
        X = rng.normal(size=(L, K, d))
        X[:L // 2] = np.eye(K, d)[None]                     # symmetric arms: ties
        Z = rng.normal(size=(M, d))
        pi, pj = np.triu_indices(M, 1)
        Y = Z[pi] - Z[pj]
        counts = rng.integers(0, 5, size=(L, K)).astype(float)
        Ainv = np.linalg.inv(np.eye(d) + np.einsum("lk,lki,lkj->lij", counts, X, X))
        G = np.einsum("lki,lij,lmj->lkm", X, Ainv, X)
        C = np.einsum("lki,lij,pj->lkp", X, Ainv, Y)
        yn = np.einsum("pi,lij,pj->lp", Y, Ainv, Y)
        G = np.where(np.arange(K)[:, None] <= np.arange(K)[None, :], G, np.swapaxes(G, 1, 2))
        H = np.concatenate([np.concatenate([G, C], 2),
                            np.concatenate([np.diagonal(G, axis1=1, axis2=2)[:, None], yn[:, None]], 2)], 1)
        pair_on = rng.random((L, len(pi))) < 0.6
        pair_on[:, 0] = True
        arm_ok = np.ones((L, K), bool)
        arm_ok[::5, -1] = False
        n = counts.sum(1) + 1.0
        carry = (jnp.asarray(counts), jnp.asarray(n), jnp.asarray(rng.random(L) * 0.1), jnp.ones((L,), bool))
        bar = jnp.asarray(rng.random(L) * 1e-3)
        keys = jax.random.split(jax.random.key(1), L)

        def array_form(H, on, b, ok, c, key):
            def pick(i, cand, tb):
                return xy._tie_draw(key, i, cand, S, H.dtype), tb
            return xy._greedy_pulls(H, on, b, ok, c, pick, (), S)

        def rows_form(H, on, b, ok, c, key):
            return xy._greedy_pulls_rows(H, on, b, ok, c, key, S)

        args = (jnp.asarray(H), jnp.asarray(pair_on), bar, jnp.asarray(arm_ok), carry, keys)
        a = jax.jit(jax.vmap(array_form))(*args)
        b = jax.jit(jax.vmap(rows_form))(*args)
        for u, v in zip(a, b):
            np.testing.assert_array_equal(np.asarray(u), np.asarray(v))
        assert float(jnp.sum(a[0] - carry[0])) > L   # pulls were made


@pytest.mark.parametrize("name", ["FWS", "TopTwo", "XYAdaptive", "ALBA", "XYStatic", "LinGame", "UniformGLR"])
def test_accelerator_program_gives_the_cpu_program_s_replications(name, monkeypatch):
    """The accelerator program (the accelerator policy traced on the CPU: the entry-by-entry
    forms above, as the GPU's fused kernels interpreted on Soare's d = 5 instance (omega = 0.1),
    as XLA loops for Top Two on 12 random unit arms in R^5 and for XY-adaptive; ALBA with its
    fused G-optimal solve and binomial draws, XY-static with its fused binomial draws) against
    the CPU program, through simulate: every replication's samples and answer equal.  LinGame:
    its whole step and GLR test as entry-by-entry kernels (:mod:`jaxbandits.rules.entrywise`);
    uniform + GLR: seed 000's GLR test as one (20 random unit arms in R^5)."""
    from jaxbandits import algorithms as A
    from jaxbandits.engine import simulate
    from jaxbandits.instances import seeds
    from jaxbandits.instances.base import make_instance

    alg = {"FWS": A.FWS(delta=0.05), "TopTwo": A.TopTwo(delta=0.05), "XYAdaptive": A.XYAdaptive(delta=0.05),
           "ALBA": A.ALBA(delta=0.05), "XYStatic": A.XYStatic(delta=0.05), "LinGame": A.LinGame(delta=0.05),
           "UniformGLR": A.UniformGLR(delta=0.05)}[name]
    instances = [seeds.soare_benchmark(5, omega=0.1)]
    if name == "UniformGLR":  # 20 random unit arms in R^5, a clear best: a few hundred rounds
        rng = np.random.default_rng(4)
        X = rng.normal(size=(20, 5))
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        instances = [make_instance(jnp.asarray(X), jnp.asarray(2.0 * X[3]))]
    if name == "TopTwo":
        rng = np.random.default_rng(7)
        X = rng.normal(size=(12, 5))
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        instances.append(make_instance(jnp.asarray(X), jnp.asarray(X[0] + 0.1 * rng.normal(size=5))))
    n = 8 if name == "FWS" else 12
    for i, inst in enumerate(instances):
        cpu = simulate(alg, inst, jax.random.key(11), n, 10**6, record_pulls=False)
        # the loops as the GPU's fused kernels, interpreted (FWS, Top Two on Soare's instance), and as
        # XLA operations (TPUs; XY-adaptive's fused pulls: tests/test_xy.py)
        kernels = "interpret" if (i == 0 and name != "XYAdaptive") else "xla"
        with monkeypatch.context() as mp:
            mp.setattr(batching, "solve_for", lambda platform, lanes: batching.SolvePolicy(
                batched=True, capacity=max(1, int(lanes)), kernels=kernels))
            acc = simulate(alg, inst, jax.random.key(11), n, 10**6, record_pulls=False)
            assert acc.layout.batched_solve and not cpu.layout.batched_solve
        np.testing.assert_array_equal(acc.samples, cpu.samples)
        np.testing.assert_array_equal(acc.answer, cpu.answer)
        assert cpu.stopped.all()


def test_top_indices_unrolled_is_the_reduction_form(monkeypatch):
    """:func:`jaxbandits.algorithms.common.top_indices` on short vectors (entries unrolled) gives
    the reduction form's indices, ties to the lowest index, NaN and -inf entries included."""
    from jaxbandits.algorithms import common

    rng = np.random.default_rng(0)
    for K in (1, 4, 7, 16):
        for m in sorted({1, 2, K}):
            v = rng.integers(0, 3, size=(64, K)).astype(float)   # many ties
            v[::7, 0] = np.nan
            v[::5] = -np.inf
            short = jax.jit(jax.vmap(lambda x: common.top_indices(x, m)))(jnp.asarray(v))
            assert "reduce_max" not in str(jax.make_jaxpr(jax.vmap(lambda x: common.top_indices(x, m)))(jnp.asarray(v)))
            with monkeypatch.context() as mp:
                mp.setattr(common, "SMALL_TOP", 0)
                long = jax.jit(jax.vmap(lambda x: common.top_indices(x, m)))(jnp.asarray(v))
            np.testing.assert_array_equal(np.asarray(short), np.asarray(long))


def _game_states(rng, L, K, d, S, M=None):
    """L random states of LinGame's game after its first pulls: counts, statistics, allocations,
    a learner table with some slots filled (losses whose AdaHedge weights spread over the arms, so
    that V_w is well conditioned and the two forms' rounding stays at its own size), an answer and
    an active mask."""
    from jaxbandits.algorithms import common
    from jaxbandits.instances.base import make_instance
    from jaxbandits.rules.core import Belief

    X = rng.normal(size=(K, d))
    inst = make_instance(jnp.asarray(X), jnp.asarray(rng.normal(size=d)))
    counts = rng.integers(1, 30, size=(L, K)).astype(float)
    gram = np.einsum("lk,ki,kj->lij", counts, X, X)
    b = np.einsum("ki,lk->li", X, counts * rng.normal(size=(L, K)))
    stats = common.LinearStats(jnp.asarray(counts), jnp.zeros((L, 0)), jnp.asarray(gram), jnp.asarray(b))
    t = jnp.asarray(counts.sum(1), jnp.int32)
    keys = np.where(rng.random((L, S)) < 0.6, rng.integers(0, K, size=(L, S)), -1)
    belief = Belief(stats, t, None, None, None, jnp.asarray(rng.integers(0, K, size=L), jnp.int32))
    from jaxbandits.rules.sampling import GameState
    state = GameState(jnp.asarray(counts + rng.random((L, K))), jnp.asarray(keys, jnp.int64),
                      jnp.asarray(rng.integers(0, 50, size=(L, S)), jnp.int32),
                      jnp.asarray(0.3 * rng.normal(size=(L, S, K))), jnp.asarray(1.0 + rng.random((L, S))))
    active = jnp.asarray(rng.random((L, K)) < 0.8)
    return inst, belief, state, active


@pytest.mark.parametrize("config", [dict(), dict(tracking="D", best_response="counts", width="norm",
                                                 learners="single", clip=False)], ids=["paper", "variants"])
def test_lingame_step_entrywise_is_the_array_step(config):
    """LinGame's game step (:class:`jaxbandits.rules.sampling.Game`) and GLR test
    (:class:`jaxbandits.rules.stopping.GameGLR`) in their entry-by-entry form (the accelerator
    program, its kernels interpreted) against the array form, on random states of 6 lanes (d = 4,
    K = 7, learner slots found and new, some answers inactive): the same arm, allocations and
    learner keys, the losses, gaps and statistics to 1e-9 relative; and the GLR's answer."""
    from jaxbandits.rules import entrywise, sampling, stopping
    from jaxbandits.rules.core import Context

    rng = np.random.default_rng(5)
    L, K, d = 6, 7, 4
    rule = sampling.Game(learner_slots=5, **config)
    inst, belief, state, active = _game_states(rng, L, K, d, 5)
    glr = stopping.GameGLR(threshold="heuristic")

    def run(belief, state, active):
        ctx = Context(inst, jnp.asarray(0.05), jnp.asarray(0.0), jnp.asarray(0.7), active, start=K)
        arm, new = rule.update(None, state, belief, ctx)
        dec = glr.decide(belief.stats, belief.t, ctx)
        return arm, new, dec.belief.answer, dec.statistic

    out = {}
    for form, pol in (("array", batching.SolvePolicy()), ("entries", batching.SolvePolicy(
            batched=True, capacity=L, kernels="interpret"))):
        with batching.policy(pol):
            assert entrywise.applies(inst, 1, 5) == (form == "entries")
            out[form] = jax.jit(jax.vmap(run))(belief, state, active)
    (a0, s0, ans0, z0), (a1, s1, ans1, z1) = out["array"], out["entries"]
    np.testing.assert_array_equal(a1, a0)
    np.testing.assert_array_equal(s1.keys, s0.keys)
    np.testing.assert_array_equal(s1.used, s0.used)
    np.testing.assert_array_equal(ans1, ans0)
    for u, v in ((s1.W, s0.W), (s1.losses, s0.losses), (s1.gap, s0.gap), (z1, z0)):
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-9, atol=1e-12)
    assert len(set(np.asarray(a0).tolist())) > 1  # the lanes pull different arms


def test_fused_entries_interpreted_is_the_xla_form():
    """:func:`jaxbandits.batching.fused_entries` under vmap over 130 lanes (two blocks, padded):
    batched and shared arrays of several shapes in, several shapes out, the interpreted kernel's
    bits equal to the XLA form's; the unbatched call; bad calls refused."""
    rng = np.random.default_rng(0)
    L = 130
    A, v, c = jnp.asarray(rng.normal(size=(L, 3, 2))), jnp.asarray(rng.normal(size=(L,))), jnp.asarray([2.0, -1.0, 0.5])
    n = jnp.asarray(rng.integers(0, 3, size=L), jnp.int32)

    def fn(A, v, c, n):
        rows = [A[2 * i] * c[0] + A[2 * i + 1] * c[1] for i in range(3)]
        pick = jnp.where(n[0] == 0, rows[0], jnp.where(n[0] == 1, rows[1], rows[2]))
        return [r * v[0] + c[2] for r in rows], [pick, jnp.sqrt(jnp.abs(pick))], [n[0] + 1]

    def call(kern):
        return jax.jit(jax.vmap(lambda A, v, n: batching.fused_entries(
            fn, (A, v, c, n), ((3,), (2,), ()), kern, name="toy")))(A, v, n)

    for a, b in zip(call("xla"), call("interpret")):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    one = batching.fused_entries(fn, (A[0], v[0], c, n[0]), ((3,), (2,), ()), "interpret", name="toy")
    np.testing.assert_array_equal(np.asarray(one[0]), np.asarray(call("xla")[0][0]))
    with pytest.raises(TypeError, match="boolean arrays are not supported"):
        batching.fused_entries(fn, (A[0], v[0], c, jnp.ones(1, bool)), ((3,), (2,), ()), "interpret")
    with pytest.raises(ValueError, match="needs 3 entries, fn gave 2"):
        batching.fused_entries(fn, (A[0], v[0], c, n[0]), ((3,), (3,), ()), "xla")
    with pytest.raises(ValueError, match="kernels must be one of"):
        batching.fused_entries(fn, (A[0], v[0], c, n[0]), ((3,), (2,), ()), "cuda")
    # an output written into its argument's buffer: the same bits, on whole and padded blocks
    B = jnp.asarray(rng.normal(size=(L, 2)))

    def upd(B, v):
        return [B[0] + v[0], B[1] * v[0]], [B[0] - B[1]]

    for lanes in (128, L):
        outs = {kern: jax.jit(jax.vmap(lambda B, v, kern=kern: batching.fused_entries(
            upd, (B, v), ((2,), ()), kern, name="toy_alias", alias=({0: 0} if kern == "interpret" else None))))(
            B[:lanes], v[:lanes]) for kern in ("xla", "interpret")}
        for a, b in zip(outs["xla"], outs["interpret"]):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    with pytest.raises(ValueError, match="alias 1 -> 0 needs an argument and an output of one shape and dtype"):
        batching.fused_entries(upd, (B[0], v[0]), ((2,), ()), "interpret", name="toy_alias", alias={1: 0})
    # a NumPy argument enters the kernel as literals: the same bits, one operand fewer
    cn = np.asarray([2.0, -1.0, 0.5])
    for kern in ("xla", "interpret"):
        f = lambda A, v, n, c, kern=kern: batching.fused_entries(fn, (A, v, c, n), ((3,), (2,), ()), kern,  # noqa: E731
                                                                  name="toy", key=("toy",))
        host = jax.jit(jax.vmap(lambda A, v, n: f(A, v, n, cn)))(A, v, n)
        for a, b in zip(host, call("xla")):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        if kern == "interpret":
            jaxpr = jax.make_jaxpr(jax.vmap(lambda A, v, n: f(A, v, n, cn)))(A, v, n)
            calls = [e for e in jaxpr.jaxpr.eqns if e.primitive.name == "pallas_call"]
            assert [len(e.invars) for e in calls] == [3]   # A, v and n; c is in the program
    with pytest.raises(ValueError, match="a host constant .* cannot be aliased"):
        batching.fused_entries(upd, (np.asarray(B[0]), v[0]), ((2,), ()), "interpret", name="toy_alias", alias={0: 0})


def test_lingame_held_lanes_keep_their_state_bit_for_bit():
    """Under the accelerator policy's entry form LinGame keeps a held lane's state in place
    (:meth:`jaxbandits.rules.sampling.Game.in_place`: the last kernel of the game writes the
    learner table and the allocations back as they were, into their own buffers): ``step_where``
    returns a held lane's state bit for bit and a live lane's step, with an evicting learner
    table, and with the entry form as XLA operations (a TPU's program); on a CPU, and for Top-m,
    the engine selects."""
    from jaxbandits.algorithms import LinGame
    from jaxbandits.algorithms.base import with_batching
    from jaxbandits.instances import seeds

    lanes = 6
    inst = seeds.soare_benchmark(5, omega=0.1)
    acc = lambda kernels: batching.SolvePolicy(batched=True, capacity=lanes, kernels=kernels)  # noqa: E731
    # an evicting learner table with the kernels interpreted (the GPU's program), and the entry
    # form as XLA operations
    for base, kernels in ((LinGame(learner_slots=2), "interpret"), (LinGame(), "xla")):
        with batching.policy(batching.SolvePolicy()):
            assert not with_batching(base, batching.SolvePolicy()).holds_in_place(inst)
        pol = acc(kernels)
        alg = with_batching(base, pol)
        with batching.policy(pol):
            assert alg.holds_in_place(inst)
            assert not with_batching(LinGame(m=2), pol).holds_in_place(inst)
            keys = jax.random.split(jax.random.key(2), lanes)
            state = jax.vmap(lambda k: alg.init(k, inst))(keys)
            both = jax.jit(lambda ks, st, live: (jax.vmap(alg.step, in_axes=(0, 0, None))(ks, st, inst),
                                                 jax.vmap(alg.step_where, in_axes=(0, 0, None, 0))(ks, st, inst, live)))
        for t in range(8):
            live = (jnp.arange(lanes) + t) % 3 != 0
            ks = jax.vmap(lambda k: jax.random.fold_in(k, t))(keys)
            with batching.policy(pol):
                new, part = both(ks, state, live)
            changed = 0
            for a, b, c in zip(jax.tree.leaves(part), jax.tree.leaves(new), jax.tree.leaves(state)):
                a, b, c = np.asarray(a), np.asarray(b), np.asarray(c)
                np.testing.assert_array_equal(a[np.asarray(live)], b[np.asarray(live)])
                np.testing.assert_array_equal(a[~np.asarray(live)], c[~np.asarray(live)])
                changed += int(np.any(b[~np.asarray(live)] != c[~np.asarray(live)]))
            assert changed > 0   # the held lanes' step would have changed their state
            state = new


def test_add_pull_one_hot_is_the_scatter():
    """Under the accelerator policy ``common.add_pull`` adds a one-hot vector to the counts and
    reward sums (K <= ONE_HOT_ARMS): the scatter's bits, under vmap, empty parts kept empty; above
    ONE_HOT_ARMS arms the scatter stays; a replication's start is traced with ``per_step`` off."""
    from jaxbandits.algorithms import common
    from jaxbandits.instances.base import make_instance

    rng = np.random.default_rng(2)
    for K, empty in ((7, False), (7, True), (common.ONE_HOT_ARMS + 1, False)):
        inst = make_instance(jnp.asarray(rng.normal(size=(K, 3))), jnp.asarray(rng.normal(size=3)))
        L = 16
        stats = common.LinearStats(jnp.asarray(rng.integers(0, 9, size=(L, K)), float),
                                   jnp.zeros((L, 0)) if empty else jnp.asarray(rng.normal(size=(L, K))),
                                   jnp.asarray(rng.normal(size=(L, 3, 3))), jnp.asarray(rng.normal(size=(L, 3))))
        arm, reward = jnp.asarray(rng.integers(0, K, size=L)), jnp.asarray(rng.normal(size=L))
        out = {}
        for form, pol in (("scatter", batching.SolvePolicy()), ("one-hot", GPU(L))):
            with batching.policy(pol):
                f = jax.jit(jax.vmap(lambda s, a, r: common.add_pull(s, inst, a, r)))
                out[form] = f(stats, arm, reward)
                ops = _primitives(jax.make_jaxpr(f)(stats, arm, reward).jaxpr)
                assert ("scatter-add" in ops) == (form == "scatter" or K > common.ONE_HOT_ARMS)
        for a, b in zip(out["scatter"], out["one-hot"]):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    with batching.policy(GPU(8)):
        assert batching.current_policy().per_step
        with batching.once_per_replication():
            assert not batching.current_policy().per_step and batching.current_policy().batched
        assert batching.current_policy().per_step


def _both_forms(run, args, applies, lanes):
    """(array form's results, entry form's) of ``jit(vmap(run))(*args)``: under the CPU policy,
    then the accelerator policy with its kernels interpreted; ``applies()`` (the entry form's
    test) must hold under the second only."""
    out = []
    for pol in (batching.SolvePolicy(), batching.SolvePolicy(batched=True, capacity=lanes, kernels="interpret")):
        with batching.policy(pol):
            assert applies() == pol.batched
            out.append(jax.jit(jax.vmap(run))(*args))
    return out


@pytest.mark.parametrize("masked", [False, True])
def test_glr_test_entrywise_is_the_array_test(masked):
    """Seed 000's GLR test (:class:`jaxbandits.rules.stopping.GLR`) in its entry-by-entry form
    (the accelerator program, its kernel interpreted) against the array form on 6 random states
    (d = 4, 9 items, some masked): the same empirical best item and readiness, Z(t) and beta to
    1e-9 relative."""
    from jaxbandits.rules import entrywise, stopping
    from jaxbandits.rules.core import Context

    rng = np.random.default_rng(8)
    L, K, d = 6, 9, 4
    inst, belief, _, _ = _game_states(rng, L, K, d, 1)
    if masked:
        inst = dataclasses.replace(inst, item_mask=jnp.asarray(np.arange(K) < K - 2))
    rule = stopping.GLR()

    def run(belief):
        ctx = Context(inst, jnp.asarray(0.05), jnp.asarray(0.0), jnp.asarray(0.7), jnp.ones(K, bool))
        dec = rule.decide(belief.stats, belief.t, ctx)
        return dec.belief.answer, dec.statistic, dec.beta, dec.ready

    (b0, z0, beta0, r0), (b1, z1, beta1, r1) = _both_forms(run, (belief,), lambda: entrywise.glr_applies(inst), L)
    np.testing.assert_array_equal(b1, b0)
    np.testing.assert_array_equal(r1, r0)
    np.testing.assert_allclose(np.asarray(z1), np.asarray(z0), rtol=1e-9)
    np.testing.assert_allclose(np.asarray(beta1), np.asarray(beta0), rtol=1e-12)
    if masked:
        assert np.all(np.asarray(b0) < K - 2)


@pytest.mark.parametrize("answer,epsilon", [("furthest", 0.0), ("furthest", 1.0), ("best", 0.1)])
def test_transport_glr_and_challenger_entrywise_are_the_array_forms(answer, epsilon):
    """The GLR of :class:`jaxbandits.rules.stopping.TransportGLR` (furthest answer or empirical
    best, epsilon-good answers) and Top Two's transportation-cost challenger in their entry-by-entry
    form (the accelerator program, kernels interpreted) against the array forms on random states
    of 16 lanes (d = 4, 7 items, two of them equal, some inactive, a ridge): the same answers and
    challengers, the statistic, the estimate and V^-1 to 1e-9 relative.  With epsilon > 0 several
    items have min_j W^eps_{i,j} > 0, so the furthest answer is not the empirical best one."""
    from jaxbandits.algorithms import glr
    from jaxbandits.rules import entrywise, recommend, sampling, stopping
    from jaxbandits.rules.core import Context

    rng = np.random.default_rng(12)
    L, K, d = 16, 7, 4
    inst, belief, _, active = _game_states(rng, L, K, d, 1)
    X = np.asarray(inst.arms).copy()
    X[5] = X[2]  # two equal items: W = +inf between them
    inst = dataclasses.replace(inst, arms=jnp.asarray(X), items=jnp.asarray(X))
    rec = recommend.FurthestAnswer() if answer == "furthest" else recommend.EmpiricalBest()
    rule = stopping.TransportGLR(reg=0.5, recommend=rec)
    tt = sampling.TopTwo(allocation=sampling.GreedyPair())

    def run(belief, active):
        ctx = Context(inst, jnp.asarray(0.05), jnp.asarray(epsilon), jnp.asarray(0.7), active)
        dec = rule.decide(belief.stats, belief.t, ctx)
        b = dec.belief
        lead = b.answer
        Ainv = b.inverse()
        W, _, _ = jax.vmap(lambda i: glr.transport_costs(b.theta, Ainv, inst.items, i, epsilon))(jnp.arange(K))
        if entrywise.transport_applies(inst, None):
            chal, y = entrywise.tc_challenger(inst.items, b.theta, Ainv, lead, active, epsilon)
        else:
            chal = sampling.tc_challenger(lead, b, ctx)
            y = inst.items[lead] - inst.items[chal]
        arm, _ = tt.update((jax.random.key(0), jax.random.key(1)), (), b, ctx)
        return b.answer, dec.statistic, dec.beta, b.theta, Ainv, chal, y, arm, jnp.min(W, axis=1)

    a, e = _both_forms(run, (belief, active),
                       lambda: entrywise.transport_applies(inst, getattr(rec, "candidates", None)), L)
    for i in (0, 5, 7):  # answer, challenger, arm
        np.testing.assert_array_equal(e[i], a[i])
    for i in (1, 2, 3, 4, 6):
        np.testing.assert_allclose(np.asarray(e[i]), np.asarray(a[i]), rtol=1e-9, atol=1e-12)
    wmin = np.asarray(a[8])
    if answer == "furthest" and epsilon > 0:  # the furthest answer differs from the best somewhere
        values = np.einsum("kd,ld->lk", X, np.asarray(a[3]))
        assert np.any(np.asarray(a[0]) != values.argmax(1))
        assert np.mean(np.sum(wmin > 0, axis=1) >= 2) > 0.5  # ties at the max are rare: positions decide few
    assert np.all(np.isinf(np.asarray(a[4])) == False)  # noqa: E712


def test_fused_entries_runs_a_fori_loop_in_the_kernel():
    """A ``fori_loop`` inside ``fused_entries``' program (the c-optimal design's Frank-Wolfe) runs
    inside the kernel: interpreted, the loop over a block of lanes gives the XLA form's values."""
    rng = np.random.default_rng(3)
    L = 5
    x = jnp.asarray(rng.random((L, 3)))
    c = jnp.asarray(rng.random(3))

    def fn(xs, cs):
        out = jax.lax.fori_loop(0, 7, lambda i, v: tuple(v[k] * cs[k] + xs[(k + 1) % 3] for k in range(3)),
                                tuple(xs))
        return list(out), [out[0] + out[2]]

    res = {k: jax.jit(jax.vmap(lambda x: batching.fused_entries(fn, (x, c), ((3,), ()), k, name="loop")))(x)
           for k in ("xla", "interpret")}
    for u, v in zip(res["xla"], res["interpret"]):
        np.testing.assert_array_equal(np.asarray(u), np.asarray(v))


@pytest.mark.parametrize("form", ["envelope", "ridge"])
def test_empirical_glr_entrywise_is_the_array_test(form):
    """FWS's GLR (:class:`jaxbandits.rules.stopping.EmpiricalGLR`, the released code's envelope
    form and the ridge form) entry by entry (kernels interpreted) against the array form on 16
    random states (d = 4, 7 items, two equal): the same empirical best item, the statistic, the
    estimate and V^-1 to 1e-9 relative."""
    from jaxbandits.rules import entrywise, stopping
    from jaxbandits.rules.core import Context

    rng = np.random.default_rng(21)
    L, K, d = 16, 7, 4
    inst, belief, _, _ = _game_states(rng, L, K, d, 1)
    X = np.asarray(inst.arms).copy()
    X[4] = X[1]
    inst = dataclasses.replace(inst, arms=jnp.asarray(X), items=jnp.asarray(X))
    rule = stopping.EmpiricalGLR(form=form)

    def run(belief):
        ctx = Context(inst, jnp.asarray(0.05), jnp.asarray(0.0), jnp.asarray(0.7), jnp.ones(K, bool))
        dec = rule.decide(belief.stats, belief.t, ctx)
        return dec.belief.answer, dec.statistic, dec.beta, dec.belief.theta, dec.belief.inverse()

    a, e = _both_forms(run, (belief,), lambda: entrywise.pairs_apply(inst), L)
    np.testing.assert_array_equal(e[0], a[0])
    for i in (1, 2, 3, 4):
        np.testing.assert_allclose(np.asarray(e[i]), np.asarray(a[i]), rtol=1e-9, atol=1e-12)
    assert np.all(np.isfinite(np.asarray(a[1])))


def test_frank_wolfe_step_entrywise_is_the_array_step():
    """Frank-Wolfe Sampling's step (:class:`jaxbandits.rules.sampling.FrankWolfe`, Hedge's game)
    entry by entry (kernels interpreted) against the array form on 64 random states (d = 4, 6 arms
    = items, random allocations, some items inactive, rounds that force exploration and rounds
    that do not): the same arm, forced flag and game flag in every lane but at rare rounding ties
    of Hedge's best responses (the rows in the items' order instead of ``top_k``'s), and x(t + 1)
    to 1e-12 where the arm agrees."""
    from jaxbandits.rules import entrywise, sampling
    from jaxbandits.rules.core import Context

    rng = np.random.default_rng(31)
    L, K, d = 64, 6, 4
    inst, belief, _, active = _game_states(rng, L, K, d, 1)
    from jaxbandits.algorithms import common

    theta = jax.vmap(lambda s: common.least_squares(s)[0])(belief.stats)
    belief = belief._replace(theta=theta, answer=jnp.argmax(jnp.einsum("kd,ld->lk", inst.items, theta), axis=1)
                             .astype(jnp.int32))
    x = rng.random((L, K))
    state = sampling.FrankWolfeState(jnp.asarray(x / x.sum(1, keepdims=True)), jnp.zeros(L, jnp.int32),
                                     jnp.zeros(L, jnp.int32), jnp.zeros(L))
    rule = sampling.FrankWolfe()

    def run(state, belief, active):
        ctx = Context(inst, jnp.asarray(0.05), jnp.asarray(0.0), jnp.asarray(0.7), active)
        arm, new = rule.update((jax.random.key(0),), state, belief, ctx)
        return arm, new.x, new.n_forced, new.n_game

    a, e = [[np.asarray(v) for v in o] for o in _both_forms(
        run, (state, belief, active), lambda: entrywise.fw_applies(inst, rule.max_active, rule.game), L)]
    same = e[0] == a[0]
    assert same.mean() >= 0.95, same.mean()
    np.testing.assert_array_equal(e[2], a[2])
    np.testing.assert_array_equal(e[3], a[3])
    np.testing.assert_allclose(e[1][same], a[1][same], rtol=1e-12, atol=1e-15)
    assert 0 < a[2].sum() < L and a[3].sum() > 0  # both kinds of rounds, and games played


def test_frank_wolfe_kernels_are_traced_per_game_length():
    """``fused_entries`` reuses a kernel's trace under its key: Hedge's step, computed in the
    payoffs kernel, reads the game's iterations, so two game lengths in one process must not
    share a trace.  Interpreted kernels against the XLA form, 64 then 8 iterations."""
    from jaxbandits.rules import entrywise

    rng = np.random.default_rng(41)
    L, K, d = 8, 5, 3
    X = jnp.asarray(rng.normal(size=(K, d)))
    x = jnp.asarray(rng.dirichlet(np.ones(K), size=L))
    counts = jnp.asarray(rng.integers(1, 20, size=(L, K)).astype(float))
    theta = jnp.asarray(rng.normal(size=(L, d)))
    best = jnp.argmax(theta @ X.T, axis=1).astype(jnp.int32)
    t = jnp.asarray(counts.sum(1), jnp.int32)

    def step(iters, kernels):
        def one(x, n, th, b, t):
            return entrywise.fw_step(X, X, x, n, th, b, jnp.ones(K, bool), t, 1.0, 0.05, jnp.zeros((), bool), iters)
        with batching.policy(batching.SolvePolicy(batched=True, capacity=L, kernels=kernels)):
            return jax.jit(jax.vmap(one))(x, counts, theta, best, t)

    for iters in (64, 8):
        want, got = step(iters, "xla"), step(iters, "interpret")
        for a, b in zip(want, got):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
