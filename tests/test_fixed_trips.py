"""Solvers with a trip count known at compile time give the results of their data-dependent loops.

Under an accelerator policy ALBA's G-optimal design, RAGE's App F Frank-Wolfe and the efficient
rounding run as loops of a fixed number of iterations (the iterations after the stopping test
holds leave the iterate unchanged); the trip counts are bounds the data-dependent loops never
exceed, so the results are the same, bit for bit.
"""
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxbandits.design import app_f, minimax
from jaxbandits.design.gopt import g_optimal
from jaxbandits.design.rounding import round_design

jax.config.update("jax_enable_x64", True)


def test_g_optimal_fixed_trips_is_the_while_loop_result():
    rng = np.random.default_rng(0)
    for K, d, it in ((6, 3, 2000), (20, 4, 50)):   # 2000: the tolerance stops it; 50: the cap binds
        X = jnp.asarray(rng.normal(size=(K, d)))
        mask = jnp.asarray(rng.random(K) < 0.8).at[:d].set(True)
        a = g_optimal(X, arm_mask=mask, tol=1e-6, max_iters=it)
        b = g_optimal(X, arm_mask=mask, tol=1e-6, max_iters=it, fixed_trips=True)
        np.testing.assert_array_equal(np.asarray(a.allocation), np.asarray(b.allocation))
        assert int(a.iterations) == int(b.iterations) and float(a.gap) == float(b.gap)
    assert "while" not in str(jax.make_jaxpr(lambda X: g_optimal(X, max_iters=100, fixed_trips=True))(X))


def test_round_design_fixed_trips_is_the_while_loop_result():
    rng = np.random.default_rng(1)
    f = jax.jit(jax.vmap(lambda lam, n: round_design(lam, n)))
    g = jax.jit(jax.vmap(lambda lam, n: round_design(lam, n, fixed_trips=True)))
    K = 12
    lam = rng.dirichlet(np.full(K, 0.3), size=400) * (rng.random((400, K)) < 0.7)
    lam[:, 0] += 1e-3
    lam = jnp.asarray(lam / lam.sum(1, keepdims=True))
    n = jnp.asarray(rng.integers(1, 200, size=400))
    a, b = f(lam, n), g(lam, n)
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    counts0 = jnp.ceil((n[:, None] - 0.5 * jnp.sum(lam > 0, 1, keepdims=True)) * lam)
    assert int(jnp.max(jnp.abs(jnp.maximum(counts0, 0).sum(1) - n))) >= 3   # corrections were needed


_paper_start = jax.jit(minimax.xy_paper_start)
_paper_iterate = jax.jit(minimax.xy_paper_iterate, static_argnames=("max_iters", "trips"))


def test_paper_frank_wolfe_stops_within_its_trip_bound_and_fixed_trips_agree():
    """More items than arms (K = 12, M = 30, d = 3) and more arms than items (K = 30, M = 6, d = 5)."""
    rng = np.random.default_rng(2)
    for K, M, d in ((12, 30, 3), (30, 6, 5)):
        X = jnp.asarray(rng.normal(size=(K, d)))
        Z = jnp.asarray(rng.normal(size=(M, d)))
        st = _paper_start(X, Z)
        bound = app_f.trip_bound(K)
        a = _paper_iterate(X, Z, st, max_iters=5000)
        b = _paper_iterate(X, Z, st, max_iters=5000, trips=min(5000, bound))
        assert 1 < int(a.k) < min(5000, bound) and int(a.k) == int(b.k)
        # the same iterations (XLA may fuse the two programs' arithmetic differently: last bits)
        np.testing.assert_allclose(np.asarray(a.lam), np.asarray(b.lam), rtol=1e-13, atol=1e-16)
        # fewer trips than the run needs give another iterate: the comparison can fail
        c = _paper_iterate(X, Z, st, max_iters=5000, trips=int(a.k) - 1)
        assert int(c.k) == int(a.k) - 1


def test_lts_frank_wolfe_fixed_trips_is_the_while_loop_result():
    """LT&S's plug-in allocation under the accelerator policy (fixed trips on every lane, then the
    runs still going continued through solve_where) equals the CPU's while loops, App F's
    Frank-Wolfe (``paper_frank_wolfe``) and the certified smooth solver, with no ``while`` left;
    and ``paper_frank_wolfe`` on the CPU gives the allocation of the general solver,
    ``oracle_allocation(method="paper")``, on every run that stops before the cap."""
    from jaxbandits import batching
    from jaxbandits.algorithms.fixed_confidence.track_and_stop import paper_frank_wolfe, plug_in_allocation
    from jaxbandits.design import oracle_allocation

    key = jax.random.PRNGKey(3)
    K, d, n = 40, 3, 6
    X = jax.random.normal(key, (K, d))
    th = jax.random.normal(jax.random.fold_in(key, 1), (n, d))
    warm = jax.random.dirichlet(jax.random.fold_in(key, 2), 0.3 * jnp.ones(K), (n,))
    gpu = batching.solve_for("gpu", n)
    ref = jax.jit(jax.vmap(lambda t, w: oracle_allocation(X, X, t, init=w, max_iters=300, method="paper")))(th, warm)
    its = np.asarray(ref.iterations)
    # App F with a cap of 300 and the first 128 trips, continued in stages to 256 and 320 trips:
    # runs stop in both continuation stages, one at the cap
    assert its.min() > 128 and np.any(its < 256) and np.any((its > 256) & (its < 300)) and its.max() == 300

    def solver(method, max_iters):  # a new function per policy: traces are cached by function
        return jax.vmap(lambda t, w: plug_in_allocation(X, X, t, w, method=method, tol=1e-3, max_iters=max_iters))

    cpu = jax.jit(jax.vmap(lambda t, w: paper_frank_wolfe(X, X, t, w, 300, first_trips=128)))(th, warm)
    with batching.policy(gpu):
        f = jax.vmap(lambda t, w: paper_frank_wolfe(X, X, t, w, 300, first_trips=128))
        assert "while" not in str(jax.make_jaxpr(f)(th, warm))
        fixed = jax.jit(f)(th, warm)
        # the smooth solver's chunks: a fixed-trip loop too (``fixed_trip_while``, tested)
        assert "while" not in str(jax.make_jaxpr(solver("smooth", 100))(th, warm))
    np.testing.assert_allclose(np.asarray(fixed), np.asarray(cpu), rtol=0, atol=1e-14)
    # the fast Frank-Wolfe of LT&S gives the iterates of the general solver (same stopping
    # iteration, same thresholded allocation) from a warm start, d = 3
    done = its < 300
    np.testing.assert_allclose(np.asarray(cpu)[done], np.asarray(ref.allocation)[done], atol=1e-10)
    np.testing.assert_allclose(np.asarray(cpu).sum(1), 1.0, atol=1e-12)
    assert float(jnp.max(jnp.abs(cpu - warm))) > 1e-3   # the solves moved the allocation


def test_fws_exact_matrix_game_fixed_trips_is_the_while_loop_result():
    """FWS's exact matrix game (the simplex method) under the accelerator policy: the same pivots as
    masked trips on the lanes that need the game, the while loop's z, gap and pivot count; lanes
    whose game is not needed skip it; a cap that binds stops both at the same pivot."""
    from jaxbandits import batching
    from jaxbandits.algorithms.fixed_confidence.fws import matrix_game_exact

    rng = np.random.default_rng(4)
    L, P, K = 16, 7, 5
    G = jnp.asarray(rng.normal(size=(L, P, K)))
    rows = jnp.asarray(rng.random((L, P)) < 0.8).at[:, 0].set(True)
    needed = jnp.asarray(rng.random(L) < 0.6)
    cap = 5  # these games need 0 (not needed) to 8 pivots: the cap binds on some lanes only
    # a new function per policy: JAX's trace cache does not see the policy
    game = lambda: jax.vmap(lambda g, r, n: matrix_game_exact(g, r, cap, needed=n))  # noqa: E731
    ref = jax.jit(game())(G, rows, needed)
    with batching.policy(batching.solve_for("gpu", L)):
        got = jax.jit(game())(G, rows, needed)
        assert "while" not in str(jax.make_jaxpr(game())(G, rows, needed))
    for a, b in zip(ref, got):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    pivots = np.asarray(ref[2])
    assert (pivots == cap).any() and ((0 < pivots) & (pivots < cap)).any()
    assert not pivots[~np.asarray(needed)].any()  # no pivot where the game is not needed
    assert len(set(np.asarray(ref[2]).tolist())) > 1  # the lanes needed different pivot counts


def test_fixed_trips_below_the_iteration_cap_is_refused():
    import pytest

    X, theta = jnp.eye(2), jnp.array([1.0, 0.5])
    for bad in (0, True, 2.5):
        with pytest.raises(ValueError, match="fixed_trips must be None or an integer >= max_iters"):
            minimax.oracle_allocation(X, X, theta, max_iters=20, fixed_trips=bad)
    with pytest.raises(ValueError, match="got 10"):   # below the default cap of 2,000 iterations
        minimax.oracle_allocation(X, X, theta, fixed_trips=10)


def test_lts_fused_solves_give_the_one_step_update_runs(monkeypatch):
    """The GPU program's paused solves as one fused kernel a step
    (:func:`jaxbandits.design.app_f.incremental_trips_fused`, interpreted on the CPU): the pulls,
    stopping times and answers of the CPU's one-step update, replication by replication, on the
    paper's text and on the released code with a padded instance (K = 13 in the bucket 16); the
    steps those of the XLA form of the same program."""
    from jaxbandits import batching, engine
    from jaxbandits.algorithms import LazyTrackAndStop
    from jaxbandits.instances.base import Buckets
    from jaxbandits.instances import seeds

    solve_for = batching.solve_for
    key = jax.random.key(0)
    cases = [(LazyTrackAndStop.paper(delta=0.1), seeds.many_arms_code(key, 12), None),
             (LazyTrackAndStop.released_code(delta=0.1, averaging=False), seeds.many_arms_code(key, 13), Buckets())]
    for alg, inst, buckets in cases:
        runs = {}
        for platform, kernels in (("cpu", "xla"), ("gpu", "xla"), ("gpu", "interpret")):
            monkeypatch.setattr(batching, "solve_for", lambda _, lanes, p=platform, k=kernels: dataclasses.replace(
                solve_for(p, lanes), kernels=k))
            runs[platform, kernels] = engine.simulate(alg, inst, jax.random.key(3), 16, 10**6, record_pulls=True,
                                                      lanes=8, buckets=buckets)
        cpu, xla, fused = runs["cpu", "xla"], runs["gpu", "xla"], runs["gpu", "interpret"]
        np.testing.assert_array_equal(fused.samples, cpu.samples)
        np.testing.assert_array_equal(fused.answer, cpu.answer)
        np.testing.assert_array_equal(fused.pulls, cpu.pulls)
        np.testing.assert_array_equal(fused.steps, xla.steps)
        assert np.all(fused.steps > fused.samples)


def test_lts_paused_solves_give_the_one_step_update_runs(monkeypatch):
    """Under the accelerator policy an LT&S lane pauses for its allocation update
    (``pause_trips`` Frank-Wolfe iterations per step, no round played until the run ends)
    instead of solving within the step: the pulls, stopping times and answers are those of the
    CPU's one-step update, replication by replication, for the paper's text, the released code
    and elimination at sampling, and on a padded instance (K = 13 in the bucket 16);
    only the engine's step counts grow, by the paused steps."""
    from jaxbandits import batching, engine
    from jaxbandits.algorithms import Eliminate, LazyTrackAndStop
    from jaxbandits.instances.base import Buckets
    from jaxbandits.instances import seeds

    solve_for = batching.solve_for  # the XLA form of the accelerator program (its fused kernels: the test below)
    real = lambda p, lanes: dataclasses.replace(solve_for(p, lanes), kernels="xla")  # noqa: E731
    key = jax.random.key(0)
    cases = [(LazyTrackAndStop.paper(delta=0.1), seeds.many_arms_code(key, 12), None),
             (LazyTrackAndStop.released_code(delta=0.1), seeds.many_arms_code(key, 13), Buckets()),
             (Eliminate(LazyTrackAndStop(delta=0.1), at_sampling=True), seeds.many_arms_code(key, 12), None)]
    for alg, inst, buckets in cases:
        runs = {}
        for platform in ("cpu", "gpu"):
            monkeypatch.setattr(batching, "solve_for", lambda _, lanes, p=platform: real(p, lanes))
            runs[platform] = engine.simulate(alg, inst, jax.random.key(1), 16, 10**6, record_pulls=True, lanes=8,
                                             buckets=buckets)
        cpu, gpu = runs["cpu"], runs["gpu"]
        assert not cpu.layout.batched_solve and gpu.layout.batched_solve
        np.testing.assert_array_equal(gpu.samples, cpu.samples)
        np.testing.assert_array_equal(gpu.answer, cpu.answer)
        np.testing.assert_array_equal(gpu.pulls, cpu.pulls)
        np.testing.assert_array_equal(cpu.steps, cpu.samples)
        # every run pauses: several updates per run, each solve longer than one step's iterations
        assert np.all(gpu.steps > gpu.samples), (gpu.steps - gpu.samples)
        if buckets is None and isinstance(alg, LazyTrackAndStop) and alg.averaging and not alg.a0_prior:
            # other lanes and steps per block: other buffers of paused lanes, the same runs
            other = engine.simulate(alg, inst, jax.random.key(1), 16, 10**6, record_pulls=True, lanes=3,
                                    block_steps=5)
            np.testing.assert_array_equal(other.pulls, gpu.pulls)
            np.testing.assert_array_equal(other.steps, gpu.steps)
            # 32 iterations per paused step (one refactorisation block; the default 8 refactorises
            # inside a step): the same runs in fewer steps
            long = engine.simulate(dataclasses.replace(alg, pause_trips=32), inst, jax.random.key(1), 16, 10**6,
                                   record_pulls=True, lanes=8)
            np.testing.assert_array_equal(long.pulls, gpu.pulls)
            assert np.all(long.steps <= gpu.steps) and np.any(long.steps < gpu.steps)
            assert np.all(long.steps > long.samples)
    # max_steps caps rounds, not steps: capped runs end at the same round under both policies
    alg, inst, _ = cases[1]
    capped = {}
    for platform in ("cpu", "gpu"):
        monkeypatch.setattr(batching, "solve_for", lambda _, lanes, p=platform: real(p, lanes))
        capped[platform] = engine.simulate(alg, inst, jax.random.key(1), 16, 150, record_pulls=True, lanes=8)
    assert not np.all(capped["cpu"].stopped) and np.all(capped["cpu"].samples <= 150)
    np.testing.assert_array_equal(capped["gpu"].samples, capped["cpu"].samples)
    np.testing.assert_array_equal(capped["gpu"].pulls, capped["cpu"].pulls)


def test_split_chain_is_the_python_chain():
    """``batching.split_chain`` gives the keys of the unrolled Python loop, bit for bit, for both
    chains of ``jax.random.binomial``'s loops (carry 1 of 2, carry 0 of 3), typed and raw keys,
    under ``vmap`` too, and for n not a multiple of the block."""
    from jaxbandits.batching import split_chain

    def python_chain(key, n, parts, carry):
        outs = [[] for _ in range(parts - 1)]
        for _ in range(n):
            ks = jax.random.split(key, parts)
            key = ks[carry]
            for o, i in zip(outs, [i for i in range(parts) if i != carry]):
                o.append(ks[i])
        return [jnp.stack(o) for o in outs]

    data = lambda k: k if k.dtype == jnp.uint32 else jax.random.key_data(k)  # noqa: E731
    for key in (jax.random.key(5), jax.random.PRNGKey(7)):
        for n, parts, carry in ((64, 2, 1), (64, 3, 0), (13, 3, 0), (5, 2, 1)):
            a = python_chain(key, n, parts, carry)
            b = split_chain(key, n, parts, carry)
            assert len(a) == len(b) == parts - 1
            for x, y in zip(a, b):
                np.testing.assert_array_equal(np.asarray(data(x)), np.asarray(data(y)))
    keys = jax.random.split(jax.random.key(9), 4)
    a = jax.vmap(lambda k: python_chain(k, 64, 3, 0))(keys)
    b = jax.jit(jax.vmap(lambda k: split_chain(k, 64, 3, 0)))(keys)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(np.asarray(data(x)), np.asarray(data(y)))


def test_lts_without_averaging_keeps_no_sum_of_allocations_on_an_accelerator():
    """Without averaging, sum_s w(s) is a diagnostic the tracking rule does not read: the
    accelerator program's state drops it ([0]) and ``cumulative_allocation`` says so; with
    averaging, or under the CPU policy, it is kept ([K])."""
    from jaxbandits import batching
    from jaxbandits.algorithms import LazyTrackAndStop
    from jaxbandits.algorithms.base import with_batching
    from jaxbandits.instances import seeds

    inst = seeds.many_arms_code(jax.random.key(0), 12)
    shapes = {}
    for name, pol in (("cpu", batching.SolvePolicy()), ("gpu", batching.SolvePolicy(batched=True, capacity=8))):
        for av in (True, False):
            st = with_batching(LazyTrackAndStop(averaging=av), pol).init(jax.random.key(1), inst)
            shapes[name, av] = st.sampling.cum_base.shape
            if shapes[name, av] == (0,):
                with pytest.raises(ValueError, match="keeps no sum of the allocations"):
                    LazyTrackAndStop.cumulative_allocation(st)
            else:
                assert LazyTrackAndStop.cumulative_allocation(st).shape == (12,)
    assert shapes == {("cpu", True): (12,), ("cpu", False): (12,), ("gpu", True): (12,), ("gpu", False): (0,)}


def test_lts_in_place_step_leaves_held_lanes_alone_bit_for_bit():
    """Under the accelerator policy with fused kernels LT&S keeps its state in place
    (:meth:`jaxbandits.rules.lazy.LazyTracking.in_place`): ``step_where`` on a lane that the
    engine holds returns its state bit for bit (no select over its arrays: the held update's
    kernel reads and writes nothing for it, the pull adds nothing to the counts), and on a live
    lane the step itself, in the middle of held solves; the allocation is held padded to a power
    of two (zeros), and ``cumulative_allocation`` still gives K entries.  With XLA kernels (or
    on a CPU) the engine selects as before."""
    from jaxbandits import batching
    from jaxbandits.algorithms import LazyTrackAndStop
    from jaxbandits.algorithms.base import with_batching
    from jaxbandits.instances import seeds

    K, lanes = 12, 6
    inst = seeds.many_arms_code(jax.random.key(0), K)
    acc = lambda kernels: batching.SolvePolicy(batched=True, capacity=lanes, kernels=kernels)  # noqa: E731
    for av in (True, False):
        alg = with_batching(LazyTrackAndStop(averaging=av, pause_trips=4), acc("interpret"))
        assert alg.holds_in_place(inst)
        assert not with_batching(LazyTrackAndStop(averaging=av), acc("xla")).holds_in_place(inst)
        assert not with_batching(LazyTrackAndStop(averaging=av), batching.SolvePolicy()).holds_in_place(inst)
        keys = jax.random.split(jax.random.key(2), lanes)
        state = jax.vmap(lambda k: alg.init(k, inst))(keys)
        assert state.sampling.w.shape == (lanes, 16) and not np.any(np.asarray(state.sampling.w[:, K:]))
        if av:
            assert LazyTrackAndStop.cumulative_allocation(state).shape == (lanes, K)
        step = jax.jit(jax.vmap(alg.step, in_axes=(0, 0, None)))
        where = jax.jit(jax.vmap(alg.step_where, in_axes=(0, 0, None, 0)))
        live = jnp.arange(lanes) % 2 == 0
        held_seen = 0
        for t in range(40):
            ks = jax.vmap(lambda k: jax.random.fold_in(k, t))(keys)
            new, part = step(ks, state, inst), where(ks, state, inst, live)
            held_seen += int(np.sum(np.asarray(new.sampling.solve.on)))
            for a, b, c in zip(jax.tree.leaves(part), jax.tree.leaves(new), jax.tree.leaves(state)):
                a, b, c = np.asarray(a), np.asarray(b), np.asarray(c)
                np.testing.assert_array_equal(a[np.asarray(live)], b[np.asarray(live)])
                np.testing.assert_array_equal(a[~np.asarray(live)], c[~np.asarray(live)])
            state = new
        assert held_seen > 0   # the steps went through held solves
        assert not np.any(np.asarray(state.sampling.w[:, K:]))
        if av:
            assert LazyTrackAndStop.cumulative_allocation(state).shape == (lanes, K)
