"""The settings of Tirinzoni & Degenne, "On elimination strategies for bandit fixed-confidence
identification", NeurIPS 2022, as options and ``tirinzoni_degenne()`` presets: the threshold
log((t + 1) / delta), LinGapE's sampling constant and the GLR stop of GIFA, single-learner LinGame
without optimism, FWS's ridge GLR and exact (and certified) matrix game, LT&S's threshold, the
fixed-weights Oracle, cumulative-estimate RAGE and global-estimate XY-adaptive; and the elimination
wrapper eliminating for LinGame.  Small d = 2 instances, each test well under a minute."""
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbandits  # noqa: F401  (float64)
from jaxbandits import engine
from jaxbandits.algorithms import FWS, GIFA, Eliminate, LazyTrackAndStop, LinGame
from jaxbandits.algorithms import glr
from jaxbandits.algorithms.fixed_confidence.fixed_weights import FixedWeightsOracle
from jaxbandits.algorithms.fixed_confidence.fws import matrix_game_certified, matrix_game_exact
from jaxbandits.algorithms.fixed_confidence.td_variants import CumulativeRAGE, GlobalXYAdaptive
from jaxbandits.algorithms.base import is_correct
from jaxbandits.instances.base import make_instance

KEY = jax.random.key(2022)


def easy(sigma=1.0):
    """d = 2: e_1 (best), a close arm at angle 0.3 (gap 0.045), e_2 and -e_1 (far: gap 1 and 2)."""
    ang = np.array([0.0, 0.3, math.pi / 2, math.pi])
    X = np.stack([np.cos(ang), np.sin(ang)], -1)
    return make_instance(X, np.array([1.0, 0.0]) * sigma, sigma)


def topm_easy():
    X = np.eye(4)
    return make_instance(X, np.array([1.0, 0.8, 0.3, 0.0]), 1.0)


def final_states(alg, inst, n, key=KEY, cap=100_000):
    """Final states of ``n`` runs, stepped as the engine does."""
    return engine.final_states(alg, inst, key, n, cap)


def run(alg, inst, n, cap=200_000, key=KEY, states=False):
    """(samples, correct, stopped) of ``n`` runs (the engine's per-run logic without its program),
    and their final states with ``states=True``."""
    st = final_states(alg, inst, n, key, cap)
    prepared = jax.tree.map(lambda a: a[0], alg.prepare(jax.tree.map(lambda a: a[None], inst)))
    oc = jax.vmap(alg.outcome, in_axes=(0, None))(st, prepared)
    correct = jax.vmap(lambda a: is_correct(a, inst, alg.top_m))(oc.answer)
    out = np.asarray(oc.samples), np.asarray(correct), np.asarray(jax.vmap(alg.done)(st))
    return out + (st,) if states else out


# -- the threshold -----------------------------------------------------------------------------------
def test_log_t_threshold_values():
    t = jnp.asarray([1.0, 99.0, 1e4])
    got = glr.stopping_threshold("log_t", jnp.eye(2), t, 0.01, 2.0, 1.0)
    np.testing.assert_allclose(got, 4.0 * np.log((np.asarray(t) + 1.0) / 0.01), rtol=1e-12)
    with pytest.raises(ValueError):
        glr.check_threshold("log t")


# -- elimination for LinGame -------------------------------------------------------------------------
@pytest.mark.parametrize("preset", [False, True], ids=["defaults", "tirinzoni_degenne"])
def test_eliminate_lingame_eliminates_before_stopping(preset):
    """On ``easy`` the far arms (gaps 1 and 2) are separated long before the close one (gap 0.045):
    the wrapper must eliminate them strictly before the run stops.  Fails if nothing is ever
    eliminated (all elimination times 0), as with a threshold more conservative than LinGame's."""
    base = LinGame.tirinzoni_degenne(delta=0.05) if preset else LinGame(delta=0.05)
    inst = easy()
    st = final_states(Eliminate(base, at_sampling=True), inst, 8)
    t_stop = np.asarray(st.base.t)
    elim = np.asarray(st.elim_time)                     # [runs, M], 0 = never eliminated
    assert np.all(np.asarray(st.stopped) | np.asarray(st.base.stopped))
    early = (elim[:, 2:] > 0) & (elim[:, 2:] < t_stop[:, None])
    assert early.all(), (elim, t_stop)                  # both far arms, in every run, before the stop
    assert np.all(elim[:, 0] == 0)                      # the best arm never


def test_eliminate_refuses_a_base_without_stopping_threshold():
    class NoThreshold(LinGame):
        stopping_threshold = None

    with pytest.raises(TypeError, match="stopping_threshold"):
        Eliminate(NoThreshold(delta=0.1)).validate(easy())


def test_lingame_stopping_threshold_is_its_stopping_rule():
    inst = easy(3.0)
    for alg in (LinGame(delta=0.1), LinGame.tirinzoni_degenne(delta=0.1, sigma=3.0)):
        st = jax.jit(alg.init)(KEY, inst)
        step = jax.jit(alg.step)
        for i in range(5):
            st = step(jax.random.fold_in(KEY, i), st, inst)
        beta, ready = alg.stopping_threshold(st, inst)
        tf = float(st.t)
        want = (math.log((math.log(tf) + 1) / 0.1) if alg.threshold == "heuristic" else math.log((tf + 1) / 0.1))
        assert bool(ready) and float(beta) == pytest.approx(9.0 * want, rel=1e-12)


# -- LinGame / MisLid: one learner, no optimism -------------------------------------------------------
def test_single_learner_uses_one_slot():
    """The preset keeps one learner (keyed 0) where plain LinGame keeps one per answer visited."""
    inst = make_instance(np.eye(4), np.array([1.0, 0.9, 0.85, 0.8]), 1.0)  # hard: the answer changes
    single = LinGame.tirinzoni_degenne(m=2, delta=0.1)
    per = LinGame(m=2, delta=0.1)
    s1, s2 = final_states(single, inst, 4, cap=300), final_states(per, inst, 4, cap=300)
    k1, k2 = s1.sampling.then.keys, s2.sampling.then.keys      # the game's learner slots
    assert np.all((np.asarray(k1) >= 0).sum(1) == 1)   # one learner, keyed 0
    assert np.all((np.asarray(k2) >= 0).sum(1) >= 2)   # one per answer visited (several here)


def test_no_optimism_changes_the_gains():
    """Without optimism the gains are 1/2 (x^T (theta_hat - lambda))^2: compare one step's learner
    losses with and without it from the same state."""
    inst = make_instance(np.eye(4), np.array([1.0, 0.9, 0.85, 0.8]), 1.0)
    plain = LinGame.tirinzoni_degenne(m=2, delta=0.1)
    opt = LinGame.tirinzoni_degenne(m=2, delta=0.1, optimism=True)
    st = jax.jit(plain.init)(KEY, inst)
    a = jax.jit(plain.step)(KEY, st, inst)
    b = jax.jit(opt.step)(KEY, st, inst)
    la, lb = np.asarray(a.sampling.then.losses[0]), np.asarray(b.sampling.then.losses[0])
    assert np.all(lb <= la - 1e-6)   # optimistic gains are larger (losses are -gains)


def test_lingame_preset_correct_on_easy_instances():
    """The best-arm preset stops and is correct on ``easy``.  (The Top-m preset's single learner is
    exercised in test_single_learner_uses_one_slot; Top-m LinGame's correctness on an easy
    instance is tests/test_lingame.py::test_topm_m2_on_seed003_classic_instance.)"""
    s, c, st = run(LinGame.tirinzoni_degenne(delta=0.05), easy(), 16)
    assert st.all() and c.all()


# -- GIFA: LinGapE's C_t and the GLR stop --------------------------------------------------------------
def _check_glr_against_ridge_solve(alg, inst, st, runs):
    """The GLR statistic of the final states of ``runs`` against a direct ridge solve (lambda = 1)."""
    X = np.asarray(inst.arms)
    K, d = X.shape
    m = alg.m
    for r in runs:
        counts, sums = np.asarray(GIFA.view(st).counts[r]), np.asarray(GIFA.view(st).sums[r])
        V = np.eye(d) + (X.T * counts) @ X
        Vi = np.linalg.inv(V)
        mu = X @ (Vi @ (X.T @ sums))
        top = np.argsort(-mu, kind="stable")[:m]
        z = min((mu[i] - mu[j]) ** 2 / (2 * (X[i] - X[j]) @ Vi @ (X[i] - X[j]))
                for i in top for j in range(K) if j not in top)
        sub = jax.tree.map(lambda a: a[r], st)
        got, J = alg.glr_statistic(sub, inst)
        assert float(got) == pytest.approx(z, rel=1e-8)
        assert set(np.flatnonzero(np.asarray(J))) == set(top)


def test_gifa_presets_glr_lingape_constant_and_correct():
    """LinGapE (m = 1, on ``easy``) and LinGIFA (m = 2, on ``topm_easy``) presets: every run stops
    on the GLR and is correct; at the final states the GLR statistic equals a direct ridge solve's
    and LinGapE's C_t is sqrt(2 (log(1/delta) + 2 log(t + 2)))."""
    delta = 0.05
    for alg, inst in ((GIFA.tirinzoni_degenne("LinGapE", delta=delta), easy()),
                      (GIFA.tirinzoni_degenne("LinGIFA", m=2, delta=delta), topm_easy())):
        s, c, stp, st = run(alg, inst, 16, states=True)
        assert stp.all() and c.all()
        _check_glr_against_ridge_solve(alg, inst, st, (0, 1))
        if alg.m == 1:
            sub = jax.tree.map(lambda a: a[0], st)
            t = float(GIFA.view(sub).t)
            assert float(alg.confidence(sub, inst)) == pytest.approx(
                math.sqrt(2 * (math.log(1 / delta) + 2 * math.log(t + 2))), rel=1e-12)
    with pytest.raises(ValueError):
        GIFA(stopping="glr", epsilon=0.1)


# -- FWS ------------------------------------------------------------------------------------------
def test_certified_game_gap_bounds_the_value():
    """2 x 2 game [[1, 0], [0, 1]] (rows: pieces to minimise over): value 1/2 at z = (1/2, 1/2)."""
    G = jnp.array([[1.0, 0.0], [0.0, 1.0], [5.0, 5.0]])
    rows = jnp.array([True, True, False])
    game = jax.jit(matrix_game_certified, static_argnums=2)  # one program per iteration count
    for iters, tol in ((16, 0.5), (512, 0.1)):
        z, gap = game(G, rows, iters)
        val = float(jnp.min((G @ z)[:2]))
        assert 0.0 <= float(gap) <= tol
        assert val <= 0.5 + 1e-12 and val >= 0.5 - float(gap) - 1e-12   # weak duality: within the gap
    z, gap = game(G, jnp.array([True, False, False]), 16)
    assert float(gap) == 0.0 and np.asarray(z).tolist() == [1.0, 0.0]


def test_exact_game_is_the_linear_programs_optimum():
    """The simplex solve against scipy's LP solver on random games (rows partly inactive, one game
    with many zero columns as FWS's are), its certificate at rounding level, the vertex for a single
    row, no pivot when not needed, and a pivot cap that stops early shows in the certificate."""
    from scipy.optimize import linprog

    rng = np.random.default_rng(5)
    solve = jax.jit(matrix_game_exact)  # the pivot cap and ``needed`` traced: one program per shape
    for trial in range(6):
        G = rng.standard_normal((8, 12)) if trial % 2 else rng.exponential(1.0, (8, 12)) ** 3 * (np.arange(12) >= 4)
        rows = rng.random(8) < 0.7
        rows[:2] = True
        z, gap, piv = solve(jnp.asarray(G), jnp.asarray(rows), 200, True)
        Ga = G[rows]
        n = Ga.shape[0]
        lp = linprog(np.r_[np.zeros(12), -1.0], A_ub=np.c_[-Ga, np.ones(n)], b_ub=np.zeros(n),
                     A_eq=np.r_[np.ones(12), 0.0][None], b_eq=[1.0], bounds=[(0, None)] * 12 + [(None, None)])
        z = np.asarray(z)
        assert z.min() >= 0 and z.sum() == pytest.approx(1.0, abs=1e-12)
        assert (Ga @ z).min() == pytest.approx(-lp.fun, abs=1e-9 * np.ptp(Ga))
        assert 0.0 <= float(gap) < 1e-9 and 1 <= int(piv) < 200
    G = jnp.array([[1.0, 0.0, -1.0], [0.0, 1.0, -1.0], [5.0, 5.0, 5.0]])
    z, gap, _ = solve(G, jnp.array([True, True, False]), 10, True)
    np.testing.assert_allclose(np.asarray(z), [0.5, 0.5, 0.0], atol=1e-12)
    z, gap, piv = solve(G, jnp.array([True, False, False]), 10, True)
    assert np.asarray(z).tolist() == [1.0, 0.0, 0.0] and float(gap) == 0.0 and int(piv) == 0
    z, gap, piv = solve(G, jnp.array([True, True, False]), 10, False)
    assert int(piv) == 0
    rps = jnp.array([[0.0, -1.0, 1.0], [1.0, 0.0, -1.0], [-1.0, 1.0, 0.0]])  # value 0 at uniform
    z, gap, piv = solve(rps, jnp.ones(3, bool), 1, True)
    assert int(piv) == 1 and float(gap) > 0.1                                  # capped: shown, not hidden
    z, gap, _ = solve(rps, jnp.ones(3, bool), 50, True)
    np.testing.assert_allclose(np.asarray(z), [1 / 3] * 3, atol=1e-12)
    assert float(gap) < 1e-12


def test_fws_preset_ridge_glr_and_correct():
    alg = FWS.tirinzoni_degenne(delta=0.05)
    fs = final_states(alg, easy(), 8)
    assert np.all(np.asarray(fs.stopped)) and np.all(np.asarray(fs.belief.answer) == 0)
    assert np.all(np.asarray(fs.sampling.then.game_gap) >= 0.0) and np.all(np.asarray(fs.sampling.then.game_gap) < 1e-9)  # exact game
    with pytest.raises(ValueError):
        FWS(glr_form="exact")


# -- LT&S, Oracle, RAGE, XY-adaptive ------------------------------------------------------------------
def test_lts_log_t_threshold():
    """LT&S's preset threshold is sigma^2 log((t + 1) / delta) (checked at noise 2 on a final
    state), and the preset stops and is correct on ``easy``."""
    alg = LazyTrackAndStop.tirinzoni_degenne(delta=0.1)
    s, c, stp, st = run(alg, easy(), 8, states=True)
    assert stp.all() and c.all()
    sub = jax.tree.map(lambda a: a[0], st)
    inst2 = easy(2.0)  # same arms, noise 2: the threshold reads sigma from the instance
    beta, _ = alg.stopping_threshold(sub, inst2)
    assert float(beta) == pytest.approx(4.0 * math.log((float(sub.t) + 1) / 0.1), rel=1e-12)


def test_fixed_weights_oracle_tracks_w_star():
    alg = FixedWeightsOracle(delta=0.05)
    inst = easy()
    st = final_states(alg, inst, 8)
    w = np.asarray(alg.prepare(jax.tree.map(lambda a: a[None], inst)).cache[0])
    counts = np.asarray(st.stats.counts)
    t = counts.sum(1, keepdims=True)
    # D-tracking: N_k(t) >= t w_k - (K - 1) and N_k <= max(1, t w_k) + 1 (Garivier & Kaufmann 2016, Lemma 7)
    assert np.all(counts >= t * w - 4) and np.all(counts <= np.maximum(1, t * w) + 2)
    assert np.all(np.asarray(st.stopped)) and np.all(np.asarray(st.belief.answer) == 0)


def test_cumulative_rage_and_global_xy():
    for alg in (CumulativeRAGE(delta=0.05), GlobalXYAdaptive(delta=0.05)):
        s, c, st = run(alg, easy(), 8, cap=20_000)
        assert st.all() and c.all()
        assert np.all(s >= 4)  # every arm once first


# -- the Table 1 instance (package data) and the experiment's quick mode ------------------------------
def test_table1_instance_is_shipped_package_data():
    """``seeds.tirinzoni_degenne_table1`` loads the npz inside the installed package (no path outside
    it), the file is listed as package data in pyproject.toml, and it is the paper's instance:
    e_1..e_10 first, theta = (1, 0.9 x 4, 0.8 x 5, ...), best arm e_1 (gap 0.1), top-5 e_1..e_5."""
    import fnmatch
    import pathlib
    import tomllib

    import jaxbandits
    from jaxbandits.instances import seeds

    pkg = pathlib.Path(jaxbandits.__file__).parent
    path = pathlib.Path(str(seeds._data_file("td_linear_d20_k50.npz")))
    assert path.is_file() and pkg in path.parents
    rel = path.relative_to(pkg / "instances").as_posix()
    conf = tomllib.loads((pkg.parent / "pyproject.toml").read_text())
    globs = conf["tool"]["setuptools"]["package-data"]["jaxbandits.instances"]
    assert any(fnmatch.fnmatch(rel, g) for g in globs), (rel, globs)

    inst = seeds.tirinzoni_degenne_table1()
    X, theta = np.asarray(inst.arms), np.asarray(inst.theta)
    assert X.shape == (50, 20) and theta.shape == (20,) and X.dtype == np.float64 and float(inst.noise) == 1.0
    np.testing.assert_array_equal(X[:10], np.eye(20)[:10])
    np.testing.assert_array_equal(theta[:10], [1.0] + [0.9] * 4 + [0.8] * 5)
    mu = X @ theta
    order = np.argsort(-mu, kind="stable")
    assert order[0] == 0 and mu[0] - mu[order[1]] == pytest.approx(0.1)
    assert set(order[:5]) == set(range(5)) and mu[4] - mu[order[5]] == pytest.approx(0.1)
    assert np.all(mu[10:] <= 0.5 + 1e-12)   # the random arms were kept while v^T theta <= 0.5
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0, rtol=1e-12)
    assert float(seeds.tirinzoni_degenne_table1(noise=2.0).noise) == 2.0


def test_no_code_reads_a_file_outside_the_package():
    """Nothing in jaxbandits/ or experiments/ reads the instance from a shared folder outside the
    package (a user's clone has none)."""
    import pathlib

    root = pathlib.Path(__file__).resolve().parent.parent
    hits = [f"{p.relative_to(root)}: {line.strip()}"
            for d in ("jaxbandits", "experiments") for p in (root / d).rglob("*.py")
            for line in p.read_text().splitlines()
            if "shared/data" in line or "JAXBANDITS_SHARED" in line or "/work/shared" in line]
    assert not hits, hits


class _FakeResults:
    """What ``summarise`` reads of a run: n stopped, correct runs with the given samples."""

    def __init__(self, samples):
        s = np.asarray(samples, np.int64)[None]
        self.samples, self.ran = s, np.ones(s.shape, bool)
        self.stopped, self.correct = np.ones(s.shape, bool), np.ones(s.shape, bool)


def test_quick_covers_every_row_prints_once_and_draws_a_figure(tmp_path, monkeypatch):
    """--quick: every row of Table 1 (preset, ``QUICK_REPS`` runs), the table printed once (with the
    paper checks under it), and table1.png written.  The engine is replaced by fixed results (the
    paper's mean, or 3x it for LinGapE, which must then be flagged with its cause statement)."""
    from experiments import tirinzoni_degenne_table1 as td
    from experiments._runner import Context

    for k in ("TD_TABLE1_ROWS", "TD_TABLE1_WAYS"):
        monkeypatch.delenv(k, raising=False)
    ctx = Context(td.NAME, None, 0, tmp_path, quick=True)
    asked = []

    def simulate(label, alg, inst, n_reps, max_steps, **kw):
        asked.append((label["row"], label["way"], n_reps))
        m = (td.PAPER.get(label["row"]) or (50_000, 0))[0] * (3 if label["row"] == "LinGapE" else 1)
        return _FakeResults(np.round(m + np.linspace(-500, 500, n_reps)))

    monkeypatch.setattr(ctx, "simulate", simulate)
    printed = []
    monkeypatch.setattr(ctx, "log", printed.append)
    td.run(ctx)
    assert [a[0] for a in asked] == td.ORDER and {a[1:] for a in asked} == {("preset", td.QUICK_REPS)}
    out = "\n".join(printed)
    assert out.count("### Tirinzoni & Degenne 2022, Table 1") == 1
    summary = (tmp_path / "summary.md").read_text()
    assert all(f"| {k} |" in summary for k in td.ORDER)
    flags = [line for line in summary.splitlines() if line.startswith("* DISAGREES") and "[preset]" in line]
    assert len(flags) == 1 and flags[0].startswith("* DISAGREES with the published number: LinGapE [preset]")
    # the defaults measured earlier (not rerun at --quick) are printed, and checked, too
    assert "* DISAGREES with the published number: LT&S [defaults]: ours 521,413" in summary
    assert "No cause is known." in flags[0] and f"our SE from {td.QUICK_REPS} runs only" in flags[0]
    assert (tmp_path / "table1.png").stat().st_size > 10_000


def test_figure_layout_and_defaults_cause():
    """The figure of a full table (both ways, every row; one row flagged) passes the layout check of
    tests/test_figures.py; a defaults row far from the paper is flagged with the settings that
    differ and the preset's agreement as its measured cause."""
    from experiments import tirinzoni_degenne_table1 as td
    from test_figures import layout_problems

    rng = np.random.default_rng(0)
    out = []
    for way in ("preset", "defaults"):
        for k in td.ORDER:
            m = (td.PAPER.get(k) or (54_000, 0))[0] * (0.4 if (way, k) == ("defaults", "LinGapE") else 1)
            out.append(dict(row=k, way=way, n=100, mean=m * rng.uniform(0.95, 1.05), se=0.03 * m))
    fig = td.figure(out)
    try:
        assert layout_problems(fig) == []
        labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
        assert labels[0] == "LinGapE  [|z| > 3: defaults]" and "Oracle" in labels
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)
    c = td.check("LinGapE", "defaults", 14069.0, 1111.0, 30)
    assert c.disagrees and "Known cause: the library's defaults are not the authors' settings" in c.flag
    assert "the preset, which takes the authors' settings, measured 34,024 +- 961" in c.flag and "z = +0.6" in c.flag
