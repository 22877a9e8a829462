"""Fused loops (:mod:`jaxbandits.design.kernels`): the Pallas kernel of a fixed-trip loop, run by
Pallas's interpreter on the CPU, computes the XLA loop's bits; Peace's released Frank-Wolfe, one
fused kernel a design on a GPU, gives the CPU program's replications under the accelerator policy
with the kernel interpreted; XY-adaptive's fused pulls are the rows form's; the small-matrix
arithmetic and the threefry of kernel bodies; bad inputs.  (Top Two's and FWS's fused loops
through simulate: tests/test_entrywise_kernels.py; XY-adaptive's fused steps against the CPU's:
tests/test_xy.py.)
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbandits  # noqa: F401  (float64)
from jaxbandits import batching
from jaxbandits.design import kernels
from jaxbandits.design.minimax import xy_fixed_iterations
from jaxbandits.instances import seeds
from test_entrywise_kernels import _primitives


def test_small_matrix_arithmetic():
    """Gauss-Jordan without pivoting inverts symmetric positive-definite matrices to LAPACK's
    accuracy (condition numbers to 1e8); the products by outer products and the extractions are
    exact against NumPy on integers."""
    rng = np.random.default_rng(0)
    for n, cond in ((4, 10.0), (16, 1e4), (16, 1e8)):
        Q, _ = np.linalg.qr(rng.normal(size=(n, n)))
        A = (Q * np.geomspace(1.0, 1.0 / cond, n)) @ Q.T
        inv = np.asarray(jax.jit(kernels.gauss_jordan_inverse)(jnp.asarray(A)))
        ref = np.linalg.inv(A)
        assert np.abs(inv - ref).max() <= 1e-12 * cond * np.abs(ref).max()
    A, B = rng.integers(-9, 9, size=(8, 16)).astype(float), rng.integers(-9, 9, size=(16, 4)).astype(float)
    np.testing.assert_array_equal(np.asarray(kernels.matmul(jnp.asarray(A), jnp.asarray(B))), A @ B)
    np.testing.assert_array_equal(np.asarray(kernels.matmul_t(jnp.asarray(A), jnp.asarray(B.T))), A @ B)
    np.testing.assert_array_equal(np.asarray(kernels.column(jnp.asarray(A), 3)), A[:, 3])
    np.testing.assert_array_equal(np.asarray(kernels.row(jnp.asarray(A), 5)), A[5])
    assert [kernels.power_of_two(n) for n in (1, 2, 3, 11, 16, 17)] == [1, 2, 4, 16, 16, 32]


def test_fused_loop_rejects_what_triton_cannot_hold():
    carry = (jnp.zeros(16), jnp.zeros(()))
    body = lambda i, c: c  # noqa: E731
    with pytest.raises(ValueError, match="kernels must be one of"):
        kernels.fused_fori_loop(3, body, carry, kernels="cuda")
    with pytest.raises(ValueError, match=r"power of two, got a carry array of shape \(11,\)"):
        kernels.fused_fori_loop(3, body, (jnp.zeros(11),), kernels="interpret")
    with pytest.raises(TypeError, match="boolean consts"):
        kernels.fused_fori_loop(3, lambda i, c, m: c, carry, (jnp.ones(16, bool),), kernels="interpret")
    with pytest.raises(ValueError, match="kernels must be one of"):
        batching.SolvePolicy(batched=True, capacity=8, kernels="pallas")
    assert batching.solve_for("gpu", 8).kernels == "triton" and batching.solve_for("cpu", 8).kernels == "xla"


@pytest.mark.parametrize("which", ["static d=16", "Soare d=10 (padded)"])
def test_xy_fixed_iterations_kernel_interpreted_is_the_xla_loop(which):
    """The released Frank-Wolfe's design and rho: the Pallas kernel (interpreted on the CPU, arms,
    items and coordinates padded to powers of two for Soare's K = 11, d = 10) gives the XLA loop's
    bits on random item subsets, under vmap as the engine runs it."""
    X = jnp.asarray(seeds.static_basis(0.3, d=16).arms if which == "static d=16"
                    else seeds.soare_benchmark(10, omega=0.1).arms)
    masks = jnp.asarray(np.random.default_rng(1).random((6, X.shape[0])) < 0.6)
    out = {k: jax.jit(jax.vmap(lambda m, k=k: xy_fixed_iterations(X, X, item_mask=m, iters=300, kernels=k)))(masks)
           for k in ("xla", "interpret")}
    np.testing.assert_array_equal(np.asarray(out["interpret"][0]), np.asarray(out["xla"][0]))
    np.testing.assert_array_equal(np.asarray(out["interpret"][1]), np.asarray(out["xla"][1]))


def test_peace_design_is_one_kernel_with_no_solver_call():
    """On a GPU the released Frank-Wolfe is one Pallas kernel (inversions included: Gauss-Jordan
    in the kernel); on every backend the design makes no solver library call."""
    X = jnp.asarray(seeds.static_basis(0.3, d=16).arms)
    for kern in ("xla", "triton"):
        jaxpr = jax.make_jaxpr(lambda m, k=kern: xy_fixed_iterations(X, X, item_mask=m, iters=1000, kernels=k))(
            jnp.ones(16, bool))
        prims = _primitives(jaxpr.jaxpr)
        assert not prims & {"lu", "triangular_solve", "cholesky", "eigh", "svd"}, prims
        calls = [e for e in jaxpr.jaxpr.eqns if e.primitive.name == "pallas_call"]
        assert len(calls) == (1 if kern == "triton" else 0)


@pytest.mark.parametrize("name", ["Peace", "GSE", "ODLinBAI"])
def test_fixed_budget_accelerator_program_gives_the_cpu_program_s_replications(name, monkeypatch):
    """Peace (the released design), GSE and OD-LinBAI (the G-optimal Frank-Wolfe) through
    simulate: the accelerator program with its fused kernels interpreted on the CPU against the
    CPU program, every replication's answer and pulls equal (static d = 16, B = 320; a Peace run
    stops early with one survivor)."""
    from jaxbandits import algorithms as A
    from jaxbandits.engine import simulate

    inst = seeds.static_basis(0.3, d=16, noise=np.sqrt(10.0))
    alg = {"Peace": A.Peace(budget=320, design_iters=200), "GSE": A.GSE(budget=320),
           "ODLinBAI": A.ODLinBAI(budget=320)}[name]
    cpu = simulate(alg, inst, jax.random.key(5), 32, alg.steps_needed(inst))
    with monkeypatch.context() as mp:
        mp.setattr(batching, "solve_for", lambda platform, lanes: batching.SolvePolicy(
            batched=True, capacity=max(1, int(lanes)), kernels="interpret"))
        acc = simulate(alg, inst, jax.random.key(5), 32, alg.steps_needed(inst))
        assert acc.layout.batched_solve and not cpu.layout.batched_solve
    np.testing.assert_array_equal(acc.answer, cpu.answer)
    np.testing.assert_array_equal(acc.pulls, cpu.pulls)
    np.testing.assert_array_equal(acc.samples, cpu.samples)
    assert np.all(cpu.samples <= 320) and cpu.correct.mean() > 0


def test_fused_loop_runs_each_lane_s_own_trips():
    """A traced trip count: under vmap each lane's program runs its own trips (none where its
    result is not needed); the XLA loop refuses one (it would wait on the lanes' largest count)."""
    body = lambda i, c: (c[0] * 2.0 + i.astype(c[0].dtype),)  # noqa: E731
    trips = jnp.array([0, 3, 7, 1], jnp.int32)
    got = jax.jit(jax.vmap(lambda t: kernels.fused_fori_loop(t, body, (jnp.ones(2),), kernels="interpret",
                                                             max_trips=8)[0]))(trips)
    want = np.stack([np.asarray(kernels.fused_fori_loop(int(t), body, (jnp.ones(2),))[0]) for t in trips])
    np.testing.assert_array_equal(np.asarray(got), want)
    with pytest.raises(TypeError, match="traced trip count needs a fused kernel"):
        kernels.fused_fori_loop(jnp.int32(3), body, (jnp.ones(2),), kernels="xla")


def test_elementwise_loop_interpreted_is_the_xla_loop():
    """A loop on scalars in a ``fused_entries`` kernel (lanes in blocks of LANE_BLOCK, padded): the
    c-optimal design's iterates under vmap, interpreted, equal the XLA loop's on 130 lanes (two blocks) of random problems
    (K = 10, d = 6: a body of divisions, square roots and sums that round alike in both)."""
    from jaxbandits.design import copt

    rng = np.random.default_rng(3)
    L, K, d = 130, 10, 6
    X, y = jnp.asarray(rng.normal(size=(L, K, d))), jnp.asarray(rng.normal(size=(L, d)))
    m = jnp.asarray(rng.random((L, K)) < 0.8).at[:, 0].set(True)
    lam0 = jnp.where(m, 1.0, 0.0) / jnp.sum(m, axis=1, keepdims=True)
    out = {k: jax.jit(jax.vmap(lambda X, y, m, l, k=k: copt._tiny_solve(X, y, m, l, 16, k)))(X, y, m, lam0)
           for k in ("xla", "interpret")}
    for a, b in zip(out["xla"], out["interpret"]):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_threefry_written_out_is_jax_s():
    """The tie-breaking uniforms inside a fused kernel: threefry2x32 in uint32 arithmetic gives
    JAX's primitive's words, and uniform_at_words uniform_at's floats, bit for bit."""
    from jax.extend.random import threefry2x32_p

    from jaxbandits import environment as E

    key = jax.random.key(123)
    kd = jax.random.key_data(key)
    x0 = jnp.asarray(np.random.default_rng(0).integers(0, 2**32, 2000), jnp.uint32)
    for a, b in zip(threefry2x32_p.bind(kd[0], kd[1], x0, x0[::-1]), E.threefry2x32(kd[0], kd[1], x0, x0[::-1])):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    idx = jnp.arange(5000, dtype=jnp.uint32)
    np.testing.assert_array_equal(np.asarray(E.uniform_at(key, idx, jnp.float64)),
                                  np.asarray(jax.jit(E.uniform_at_words, static_argnums=3)(kd[0], kd[1], idx, jnp.float64)))


def test_xy_adaptive_fused_pulls_are_the_rows_form_pulls():
    """XY-adaptive's step of greedy pulls as one kernel (interpreted): on 64 lanes of random H,
    active pairs, padded arms and thresholds, 32 pulls each with random ties, the counts, n, rho
    and the going flag equal the rows form's bit for bit (H padded to [8, 8] and [8, 16])."""
    from jaxbandits.algorithms.fixed_confidence import xy

    rng = np.random.default_rng(0)
    L, K, P, S = 64, 6, 15, 32

    def one():
        X, Y = rng.normal(size=(5, K)), rng.normal(size=(5, P))
        G, C = 2.0 * X.T @ X, 2.0 * X.T @ Y
        return np.block([[G, C], [np.diag(G)[None], 2.0 * np.sum(Y * Y, 0)[None]]])

    H = jnp.asarray(np.stack([one() for _ in range(L)]))
    pair_on = jnp.asarray(rng.random((L, P)) < 0.7).at[:, 0].set(True)
    arm_ok = jnp.ones((L, K), bool).at[:, 5].set(jnp.asarray(rng.random(L) < 0.5))
    bar = jnp.asarray(rng.random(L) * 0.1)
    counts = jnp.asarray(rng.integers(1, 5, (L, K)).astype(float))
    carry = (counts, counts.sum(1), jnp.full(L, 10.0), jnp.ones(L, bool))
    keys = jax.random.split(jax.random.key(7), L)
    rows = jax.jit(jax.vmap(lambda H, po, b, ao, c, k: xy._greedy_pulls_rows(H, po, b, ao, c, k, S)))
    fused = jax.jit(jax.vmap(lambda H, po, b, ao, c, k: xy._greedy_pulls_fused(H, po, b, ao, c, k, S, "interpret")))
    a, b = rows(H, pair_on, bar, arm_ok, carry, keys), fused(H, pair_on, bar, arm_ok, carry, keys)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    assert float(jnp.sum(a[0] - counts)) > L * S / 2   # pulls were made


def test_g_optimal_fused_kernel_is_the_xla_loop():
    """G-optimal Frank-Wolfe (ALBA's design) as the GPU's fused kernel, interpreted, against the XLA
    loop: the same iterations and designs to 1e-14 on random arm sets (rank-deficient ones and
    masked arms among them, K and d padded to powers of two); ``needed`` False returns the
    starting design with no iteration; a wrong ``kernels`` is refused."""
    from jaxbandits.design.gopt import g_optimal

    rng = np.random.default_rng(0)
    X = rng.normal(size=(16, 9, 5))
    X[::4, :, -1] = 2.0 * X[::4, :, 0]            # rank 4
    M = rng.random((16, 9)) < 0.8
    M[:, :2] = True
    need = np.arange(16) % 5 != 0
    solve = lambda kernels: jax.jit(jax.vmap(lambda x, m, n: g_optimal(  # noqa: E731
        x, arm_mask=m, fixed_trips=True, max_iters=2000, kernels=kernels, needed=n)))(X, M, need)
    a, b = solve("xla"), solve("interpret")
    np.testing.assert_array_equal(np.asarray(a.iterations), np.asarray(b.iterations))
    assert float(jnp.max(jnp.abs(a.allocation - b.allocation))) <= 1e-14
    assert np.asarray(a.converged)[need].all() and int(jnp.max(a.iterations)) > 10
    uniform = M[~need] / M[~need].sum(1, keepdims=True)
    np.testing.assert_allclose(np.asarray(b.allocation)[~need], uniform, rtol=0, atol=1e-15)
    assert np.all(np.asarray(b.iterations)[~need] == 0)
    with pytest.raises(ValueError, match="kernels must be one of"):
        g_optimal(X[0], kernels="cuda")


def test_round_allocation_fused_kernel_gives_the_while_loop_s_counts():
    """The efficient rounding's corrections as one fused kernel (interpreted) give the
    ``while_loop``'s counts bit for bit: K not a power of two, designs with ties and off-support
    arms, masked arms, budgets from 1 to 400."""
    from jaxbandits.algorithms.stages import round_allocation

    rng = np.random.default_rng(0)
    for K in (3, 7, 21):
        lam = rng.dirichlet(np.ones(K), 200)
        lam[::5, :K // 2] = 0.0
        lam[::7] = np.round(lam[::7] * 8) / 8
        mask = rng.random((200, K)) < 0.9
        n = rng.integers(1, 400, 200).astype(float)
        run = lambda kernels: jax.jit(jax.vmap(lambda l, b, m: round_allocation(l, b, m, kernels)))(lam, n, mask)  # noqa: E731
        loop, fused = np.asarray(run("xla")), np.asarray(run("interpret"))
        np.testing.assert_array_equal(fused, loop)
        assert (loop.sum(1) == n).mean() > 0.9


def test_app_f_fused_trips_are_the_xla_iterations(trips=8):
    """LT&S's paused App F iterations as one fused kernel (interpreted): from uniform and from a
    carried run, on random plug-in parameters with masked (padded) arms and items, d = 2 (K = 13)
    and d = 3 (K = 20): the weights v, the scale c and the iteration counts are the XLA loop's bit
    for bit, ||lambda||^2, A, A^-1 and the relative change equal to rounding; a lane with
    ``go`` False is returned as it came, and the kernel has no matrix product or gather."""
    from jaxbandits.design import app_f

    rng = np.random.default_rng(4)
    for K, d in ((13, 2), (20, 3)):
        X = rng.normal(size=(K, d))
        arm_mask = jnp.asarray(np.arange(K) < K - 2)
        item_mask = jnp.asarray(np.arange(K) < K - 1)
        thetas = jnp.asarray(rng.normal(size=(6, d)))
        go = jnp.asarray([True, True, True, True, True, False])
        X = jnp.asarray(X)

        def run(theta, g, kern):
            st = app_f.incremental_start(X, None, arm_mask)
            outs = []
            for _ in range(4):  # four steps of a paused run (past a refactorisation at trips = 8)
                if kern == "xla":
                    Y, Yq, ym = app_f.oracle_fw_directions(X, theta, item_mask, X.dtype)
                    new = app_f.incremental_trips(X, Y, Yq, ym, arm_mask, st, 1000, trips)
                    st = tuple(jnp.where(g, a, b) for a, b in zip(new, st))
                else:
                    st = app_f.incremental_trips_fused(X, X, theta, item_mask, arm_mask, st, g, 1000, trips, kern)
                outs.append(st)
            return outs

        ref = jax.jit(jax.vmap(lambda t, g: run(t, g, "xla")))(thetas, go)
        got = jax.jit(jax.vmap(lambda t, g: run(t, g, "interpret")))(thetas, go)
        for a, b in zip(ref, got):
            for i in (0, 1, 5):   # v, c, k
                np.testing.assert_array_equal(np.asarray(b[i]), np.asarray(a[i]))
            for i in (2, 3, 4, 6):
                np.testing.assert_allclose(np.asarray(b[i]), np.asarray(a[i]), rtol=1e-12, atol=1e-14)
        start = app_f.incremental_start(X, None, arm_mask)
        for i in range(7):  # the lane with go False: untouched
            np.testing.assert_array_equal(np.asarray(got[-1][i][-1]), np.asarray(start[i]))
        assert np.all(np.asarray(got[-1][5][:5]) > min(4 * trips, 40) - 1)
        assert np.all(np.asarray(got[-1][0])[:, -2:] == 0.0)   # masked arms never get weight
        jaxpr = jax.make_jaxpr(lambda t: app_f.incremental_trips_fused(X, X, t, item_mask, arm_mask, start, True,
                                                                       1000, trips, "triton"))(thetas[0])
        kernel = [e for e in jaxpr.jaxpr.eqns if e.primitive.name == "pallas_call"]
        assert len(kernel) == 1
        inner = _primitives(kernel[0].params["jaxpr"])
        assert not inner & {"dot_general", "gather", "scatter", "scatter-add", "dynamic_slice"}, inner
    with pytest.raises(ValueError, match="kernels must be 'triton' or 'interpret'"):
        app_f.incremental_trips_fused(X, X, thetas[0], None, None, start, True, 1000, 8, "xla")
    with pytest.raises(ValueError, match=r"d <= 8, got d = 9"):
        app_f.incremental_trips_fused(jnp.ones((4, 9)), jnp.ones((4, 9)), jnp.ones(9), None, None,
                                      app_f.incremental_start(jnp.eye(9)[:4], None, None), True, 1000, 8, "triton")


def test_xy_paper_run_fused_is_the_xla_run():
    """RAGE's App F run over the pairs of items as one fused kernel (interpreted) against the XLA
    iterations with the same trip bound: the designs and iteration counts bit for bit, on random
    arms and items with masked (padded) items and arms, d = 5 (Soare's K = 6, M = 6) and d = 3
    (K = 10, M = 12); a lane with ``go`` False is returned as it came."""
    from jaxbandits.design import app_f, minimax

    rng = np.random.default_rng(0)
    for K, d, M in ((6, 5, 6), (10, 3, 12)):
        L = 12
        X = jnp.asarray(rng.normal(size=(K, d)))
        Zs = jnp.asarray(rng.normal(size=(L, M, d)))
        ims = jnp.asarray(rng.random((L, M)) < 0.8)
        am = jnp.asarray(np.arange(K) < K - 1)
        go = jnp.asarray(np.arange(L) < L - 1)
        trips = min(1000, app_f.trip_bound(K))
        start = lambda Z, im: minimax.xy_paper_start(X, Z, item_mask=im, arm_mask=am)  # noqa: E731
        ref = jax.jit(jax.vmap(lambda Z, im: minimax.xy_paper_iterate(
            X, Z, start(Z, im), item_mask=im, arm_mask=am, max_iters=1000, trips=trips)))(Zs, ims)
        got = jax.jit(jax.vmap(lambda Z, im, g: minimax.xy_paper_run_fused(
            X, Z, start(Z, im), g, item_mask=im, arm_mask=am, max_iters=1000, trips=trips,
            kernels="interpret")))(Zs, ims, go)
        np.testing.assert_array_equal(np.asarray(got.lam)[:-1], np.asarray(ref.lam)[:-1])
        np.testing.assert_array_equal(np.asarray(got.k)[:-1], np.asarray(ref.k)[:-1])
        assert np.all(np.asarray(got.k)[:-1] > 50) and int(got.k[-1]) == 0
        np.testing.assert_array_equal(np.asarray(got.lam)[-1], np.asarray(start(Zs[-1], ims[-1]).lam))
        assert np.all(np.asarray(got.lam)[:, -1] == 0.0)  # the masked arm
    with pytest.raises(ValueError, match="kernels must be 'triton' or 'interpret'"):
        minimax.xy_paper_run_fused(X, Zs[0], start(Zs[0], ims[0]), True, max_iters=10, trips=10, kernels="xla")


def test_rage_accelerator_program_with_its_fused_run_gives_the_cpu_program_s_replications(monkeypatch):
    """RAGE through simulate on Soare's d = 5 instance (omega = 0.1): the accelerator program with
    App F's runs as fused kernels, interpreted on the CPU, against the CPU program, every
    replication's answer, samples and pulls equal."""
    from jaxbandits import algorithms as A
    from jaxbandits.engine import simulate

    inst = seeds.soare_benchmark(5, omega=0.1)
    cpu = simulate(A.RAGE(), inst, jax.random.key(11), 24, 10**7, record_pulls=True, lanes=24)
    with monkeypatch.context() as mp:
        mp.setattr(batching, "solve_for", lambda platform, lanes: batching.SolvePolicy(
            batched=True, capacity=max(1, int(lanes)), kernels="interpret"))
        acc = simulate(A.RAGE(), inst, jax.random.key(11), 24, 10**7, record_pulls=True, lanes=24)
        assert acc.layout.batched_solve and not cpu.layout.batched_solve
    np.testing.assert_array_equal(acc.answer, cpu.answer)
    np.testing.assert_array_equal(acc.pulls, cpu.pulls)
    np.testing.assert_array_equal(acc.samples, cpu.samples)
    assert cpu.correct.mean() > 0.9


def test_xy_adaptive_tables_kernel_builds_the_step_table_and_pulls():
    """XY-adaptive's step with its table H built inside the pulls' kernel (interpreted): on 64 lanes
    of random arms, pairs, counts, active pairs, padded arms and thresholds, 32 pulls each, the
    counts, n and the going flag equal those of the same pulls on the table XLA builds, and rho
    agrees to 1e-12 relative (the kernel sums A, L^-1 X^T and the products in its own order)."""
    from jaxbandits.algorithms import common
    from jaxbandits.algorithms.elimination import gram_from_counts, whiten_items
    from jaxbandits.algorithms.fixed_confidence import xy

    rng = np.random.default_rng(1)
    L, K, P, d, S = 64, 6, 15, 5, 32
    X = jnp.asarray(rng.normal(size=(L, K, d)))
    Y = jnp.asarray(rng.normal(size=(L, P, d)))
    counts = jnp.asarray(rng.integers(0, 4, (L, K)).astype(float))

    def table(X, Y, c):  # the XLA step's H (XYAdaptive.step)
        Lf = common.cholesky(jnp.eye(d) + gram_from_counts(X, c))
        Xw, Yw = whiten_items(Lf, X), whiten_items(Lf, Y)
        G = Xw.T @ Xw
        G = jnp.where(jnp.arange(K)[:, None] <= jnp.arange(K)[None, :], G, G.T)
        return jnp.block([[G, Xw.T @ Yw], [jnp.diagonal(G)[None], jnp.sum(Yw * Yw, 0)[None]]])

    pair_on = jnp.asarray(rng.random((L, P)) < 0.7).at[:, 0].set(True)
    arm_ok = jnp.ones((L, K), bool).at[:, 5].set(jnp.asarray(rng.random(L) < 0.5))
    bar = jnp.asarray(rng.random(L) * 0.01)
    carry = (counts, counts.sum(1) + d, jnp.full(L, 10.0), jnp.ones(L, bool))
    keys = jax.random.split(jax.random.key(7), L)
    xla = jax.jit(jax.vmap(lambda X, Y, po, b, ao, c, k: xy._greedy_pulls_fused(
        table(X, Y, c[0]), po, b, ao, c, k, S, "interpret")))
    fused = jax.jit(jax.vmap(lambda X, Y, po, b, ao, c, k: xy._greedy_pulls_tables(X, Y, po, b, ao, c, k, S,
                                                                                     "interpret")))
    a = xla(X, Y, pair_on, bar, arm_ok, carry, keys)
    b = fused(X, Y, pair_on, bar, arm_ok, carry, keys)
    for i in (0, 1, 3):   # counts, n, going
        np.testing.assert_array_equal(np.asarray(a[i]), np.asarray(b[i]))
    np.testing.assert_allclose(np.asarray(b[2]), np.asarray(a[2]), rtol=1e-12)
    assert float(jnp.sum(a[0] - counts)) > L * S / 4   # pulls were made
