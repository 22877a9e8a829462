"""Algorithms composed from rules (:mod:`jaxbandits.rules`): the named compositions are their rules,
elimination is one piece whichever way it is attached, a new sampling rule is a few lines, a cross
of rules is one sweep, rule hyperparameters are traced and checked before anything compiles."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbandits as jb
from jaxbandits.algorithms import RAGE, Eliminate, TopTwo, UniformGLR
from jaxbandits.algorithms.fixed_confidence.fixed_weights import FixedWeightsOracle
from jaxbandits import engine
from jaxbandits.engine import programs_compiled, simulate
from jaxbandits.rules import Elimination, compose, recommend, sampling, stopping
from jaxbandits.rules.core import SamplingRule
from jaxbandits.rules.elimination import LinearStatistics, MaskedSampling
from jaxbandits.stats import binomial_test_upper

ROOT = Path(__file__).resolve().parent.parent
X = np.array([[1.0, 0.0], [0.0, 1.0], [0.7, 0.7], [-0.3, 0.9]])


def _inst(theta=(1.0, 0.2), noise=0.5):
    return jb.make_instance(X, np.array(theta), noise)


def _same(a, b):
    for f in ("samples", "answer", "pulls"):
        np.testing.assert_array_equal(np.asarray(getattr(a, f)), np.asarray(getattr(b, f)), err_msg=f)


def _run(alg, inst, n=16, seed=3):
    return simulate(alg, inst, seed, n_reps=n, max_steps=5_000, record_pulls=True)


# -- the named compositions are their rules ---------------------------------------------------------
@pytest.mark.parametrize("alg", [UniformGLR(u=0.5), TopTwo(leader="TS", allocation="greedy"),
                                 TopTwo(initial="spanning", answer="best", threshold="lts"),
                                 jb.algorithms.LinGame(tracking="D", learners="single"),
                                 FixedWeightsOracle(delta=0.1), jb.algorithms.LazyTrackAndStop(delta=0.1)],
                         ids=["uniform", "top-two-ts-greedy", "top-two-spanning", "lingame", "fixed-weights-oracle",
                              "lts"])
def test_named_composition_is_its_rules(alg):
    """A named algorithm and the composition its options make give the same replications."""
    inst = _inst()
    comp = alg.rules()
    assert isinstance(comp, jb.rules.Composition)
    _same(_run(alg, inst), _run(dataclasses.replace(comp, name="mine"), inst))


def test_top_two_written_out():
    """TopTwo's defaults, written out rule by rule: the same replications."""
    inst = _inst()
    mine = compose(sampling.Initial(sampling.TopTwo(sampling.EBLeader(), sampling.PairDesign(iters=16)), first="all"),
                   stopping.TransportGLR(threshold="heuristic", reg=0.0,
                                         recommend=recommend.FurthestAnswer(candidates=16)),
                   delta=0.05)
    _same(_run(TopTwo(), inst), _run(mine, inst))


def test_lingame_top_m_written_out_and_top_m_elimination_refused():
    """LinGame for Top-m (m = 2) written out rule by rule (each arm once before the first step,
    the game, LinGame's GLR): the same replications, answers of two items; elimination (m = 1
    only) is refused with a message before anything compiles."""
    inst = jb.seeds.topm_classic()
    mine = compose(sampling.Initial(sampling.Game(m=2, reg=1.0), first="batch"), stopping.GameGLR(m=2, reg=1.0), delta=0.05)
    ours = _run(jb.algorithms.LinGame(m=2), inst)
    _same(ours, _run(mine, inst))
    assert np.all(np.asarray(ours.answer).sum(-1) == 2)
    bad = compose(sampling.Initial(sampling.Game(m=2), first="batch"), stopping.GameGLR(m=2), eliminate=Elimination())
    with pytest.raises(ValueError, match="m = 1"):
        simulate(bad, inst, 0, n_reps=2, max_steps=10)


@pytest.mark.parametrize("at_sampling", [False, True])
def test_elimination_piece_and_wrapper_agree(at_sampling):
    """compose(..., eliminate=Elimination(...)) and Eliminate(base) run the same piece: the same
    replications, and answers are eliminated before the stop."""
    inst = _inst()
    base = TopTwo(leader="TS").rules()
    wrapped = _run(Eliminate(base, at_sampling=at_sampling), inst)
    composed = dataclasses.replace(base, eliminate=Elimination(at_sampling=at_sampling))
    _same(wrapped, _run(composed, inst))
    states = engine.final_states(composed, inst, jax.random.key(0), 8, 5_000)
    et = np.asarray(states.elimination.elim_time)
    samples = np.asarray(states.belief.t)[:, None]
    assert np.any((et > 0) & (et < samples))  # some answer eliminated before the last pull


def test_lts_written_out_with_its_rules_recombined():
    """LT&S written out (seed 000's sampling rule and stopping rule (8)): the same replications;
    with the composition's own elimination at sampling, those of the elimination wrapper; its
    stopping rule with another sampling rule runs; its sampling rule, which reads the stopping
    rule's spanning set, is refused with another stopping rule before anything compiles."""
    from jaxbandits.rules.lazy import LazyTracking, SpanningGLR

    inst = _inst()
    lts = jb.algorithms.LazyTrackAndStop.released_code(delta=0.1)
    mine = compose(LazyTracking(warm_start=False), SpanningGLR(a0_prior=True, u=0.1, anytime=False), delta=0.1)
    _same(_run(lts, inst), _run(mine, inst))
    wrapped = _run(Eliminate(lts, at_sampling=True), inst)
    _same(wrapped, _run(dataclasses.replace(mine, eliminate=Elimination(at_sampling=True)), inst))
    robin = _run(compose(sampling.RoundRobin(), SpanningGLR(threshold="log_t"), delta=0.1), inst)
    assert np.all(np.asarray(robin.stopped))
    with pytest.raises(TypeError, match="SpanningGLR"):
        simulate(compose(LazyTracking(), stopping.GLR()), inst, 0, n_reps=2, max_steps=10)


def test_protocols_are_declared():
    """Elimination needs the declared protocols; an algorithm without them is refused by name."""
    assert isinstance(TopTwo(), LinearStatistics) and isinstance(TopTwo(), MaskedSampling)
    assert isinstance(UniformGLR().rules(), LinearStatistics)
    assert not isinstance(RAGE(), LinearStatistics)
    with pytest.raises(TypeError, match="LinearStatistics"):
        simulate(Eliminate(RAGE()), _inst(), 0, n_reps=2, max_steps=10)


# -- a new rule, and a cross of rules ---------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class MostUncertain(SamplingRule):
    """Pull the arm whose mean is least known, argmax_k ||x_k||^2_{V^-1} (greedy G-optimal design)."""

    def update(self, keys, state, belief, ctx):
        X = ctx.instance.arms
        widths = jnp.sum((X @ belief.inverse()) * X, axis=-1)
        return jnp.argmax(widths), state


def _checks(alg, inst, delta, n=200):
    """(p-value of "error rate <= delta", z of the mean stopping time against the lower bound
    sigma^2 T* kl(delta, 1 - delta), every run stopped): the calibration suite's two checks."""
    res = simulate(alg, inst, 0, n_reps=n, max_steps=20_000)
    samples = np.asarray(res.samples).ravel().astype(float)
    errors = int(np.sum(~np.asarray(res.correct).ravel()))
    z = (samples.mean() - float(jb.lower_bound(inst, delta))) / (samples.std(ddof=1) / np.sqrt(n))
    return binomial_test_upper(errors, n, delta), z, bool(np.asarray(res.stopped).all())


@dataclasses.dataclass(frozen=True)
class ShrunkGLR(stopping.GLR):
    """Seed 000's GLR rule with its threshold divided by ``factor`` (a mutation)."""

    factor: float = 3.0

    def beta(self, stats, t, ctx):
        b, ready = super().beta(stats, t, ctx)
        return b / self.factor, ready

    def decide(self, stats, t, ctx):
        d = super().decide(stats, t, ctx)
        return d._replace(beta=d.beta / self.factor)


def test_a_new_sampling_rule_is_delta_correct():
    """A user's sampling rule composed with seed 000's GLR stopping rule (delta-correct under any
    sampling rule, Prop 2), on an instance with a small gap (0.16 at noise 0.5), 200 replications:
    every run stops, the error rate is not above delta (binomial test at level 1e-3) and the mean
    stopping time is not below the lower bound (z > -3).  The checks have power: with the threshold
    divided by 3 the runs stop below the lower bound (mean 18 pulls against 24.5), divided by 10
    they err too often (about 20 % at delta = 0.1)."""
    delta, inst = 0.1, _inst()
    p_err, z, stopped = _checks(compose(sampling.Initial(MostUncertain()), stopping.GLR(), delta=delta), inst, delta)
    assert stopped and p_err > 1e-3 and z > -3, (p_err, z)
    _, z3, _ = _checks(compose(sampling.Initial(MostUncertain()), ShrunkGLR(factor=3.0), delta=delta), inst, delta)
    assert z3 < -3, z3
    p10, _, _ = _checks(compose(sampling.Initial(MostUncertain()), ShrunkGLR(factor=10.0), delta=delta), inst, delta)
    assert p10 < 1e-3, p10
    # the rule matters: it pulls the informative arms, not the arms in turn
    alg = compose(sampling.Initial(MostUncertain()), stopping.GLR(), delta=delta)
    pulls = np.asarray(simulate(alg, inst, 0, n_reps=4, max_steps=20_000, record_pulls=True).pulls)
    assert pulls.reshape(-1, 4).std(axis=1).min() > 1.0


def _example():
    """docs/examples/compose_rules.py, loaded from its file as a user's would be."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("compose_rules", ROOT / "docs" / "examples" / "compose_rules.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cross_of_rules_is_one_sweep():
    """The tutorial's cross (three sampling rules x two thresholds x with and without
    elimination): one sweep of 12 compositions; every configuration stops, is recorded under its
    own label, and elimination at stopping is never later than the same run without it (paired
    keys; at sampling it changes the run, so only stopping is compared here)."""
    ex = _example()
    algs = ex.cross()
    assert len(algs) == 12
    df = jb.sweep(algs, jb.Generator("four arms", lambda key: _inst(theta=(1.0, 0.0), noise=0.3)),
                  deltas=[0.1], n_reps=4, max_steps=5_000, lower_bound=False, paired=True)
    assert set(df["algorithm"]) == set(algs)
    assert df.groupby("algorithm")["stopped"].all().all()
    rule = algs["Top Two | log((t + 1)/delta) | no elimination"]
    plain = _run(rule, _inst(), n=32)
    at_stopping = _run(dataclasses.replace(rule, eliminate=Elimination()), _inst(), n=32)
    assert np.all(np.asarray(at_stopping.samples) <= np.asarray(plain.samples))


def test_tutorial_algorithm_runs():
    """The tutorial's new algorithm (its code blocks are checked against the file in
    tests/test_byo.py) stops on every replication."""
    res = simulate(_example().most_uncertain_glr, _inst(), 0, n_reps=8, max_steps=20_000)
    assert np.asarray(res.stopped).all()


# -- traced hyperparameters, checks before compiling ----------------------------------------------
def test_rule_hyperparameters_are_traced():
    """A sweep over a rule's numeric hyperparameter (the leader's probability) and over delta
    compiles one program."""
    inst = jb.make_instance(np.eye(3), np.array([1.0, 0.8, 0.3]), 0.5)

    def alg(beta, delta):
        return compose(sampling.Initial(sampling.TopTwo(allocation=sampling.LeaderCoin(beta=beta))),
                       stopping.TransportGLR(), delta=delta)

    simulate(alg(0.5, 0.05), inst, 0, n_reps=2, max_steps=50)
    before = programs_compiled()
    for beta, delta in ((0.3, 0.05), (0.7, 0.01)):
        simulate(alg(beta, delta), inst, 0, n_reps=2, max_steps=50)
    assert programs_compiled() == before


@pytest.mark.parametrize("make, exc, shown", [
    (lambda: compose(sampling.Initial(sampling.TopTwo(allocation=sampling.LeaderCoin(beta=1.5))), stopping.TransportGLR()),
     ValueError, "Composition.sampling.then.allocation.beta must be a number in (0, 1), got 1.5"),
    (lambda: compose(sampling.Initial(sampling.TopTwo(allocation=sampling.PairDesign(iters=0))), stopping.TransportGLR()),
     ValueError, "Composition.sampling.then.allocation.iters must be an integer"),
    (lambda: compose(sampling.RoundRobin(), stopping.GLR(u=-1.0)), ValueError, "Composition.stopping.u must be"),
    (lambda: compose(sampling.RoundRobin(), stopping.GLR(), epsilon=0.1), ValueError,
     "needs a stopping rule that certifies epsilon-best answers"),
    (lambda: compose(sampling.Initial(sampling.TopTwo(allocation=sampling.LeaderCoin())), stopping.TransportGLR(),
                     name="coin"), ValueError, "needs arms = items"),
    (lambda: compose(stopping.GLR(), stopping.GLR()), TypeError, "sampling must be a SamplingRule"),
    (lambda: sampling.Initial(sampling.RoundRobin(), first="some"), ValueError, "Initial.first must be one of"),
    (lambda: stopping.TransportGLR(threshold="lucb1"), ValueError, "threshold must be one of"),
])
def test_bad_rules_refused_before_compiling(make, exc, shown):
    before = programs_compiled()
    transductive = jb.make_instance(X, np.array([1.0, 0.2]), 0.5, items=X[:3])
    with pytest.raises(exc) as info:
        simulate(make(), transductive, 0, n_reps=2, max_steps=10)
    assert shown in str(info.value)
    assert programs_compiled() == before


def test_front_door():
    assert jb.compose is compose
    assert "compose" in dir(jb)
    assert jb.rules.sampling.RoundRobin is sampling.RoundRobin


# -- tracking of a per-instance allocation -----------------------------------------------------------
def test_oracle_tracking_follows_w_star_and_is_delta_correct():
    """D-tracking of the true optimal allocation with seed 000's GLR stop: every run stops, the
    error rate is not above delta (binomial test), the pulls follow w* (within 0.05 per arm on runs
    of about a thousand pulls; forced exploration takes about sqrt(t) pulls per arm), and it needs
    fewer pulls than round robin on the same keys."""
    delta, n = 0.1, 100
    inst = _inst(theta=(1.0, 0.5), noise=0.5)
    oracle = compose(sampling.Tracking(sampling.OracleWeights()), stopping.GLR(), delta=delta)
    res = simulate(oracle, inst, 0, n_reps=n, max_steps=100_000, record_pulls=True)
    assert np.asarray(res.stopped).all()
    assert binomial_test_upper(int(np.sum(~np.asarray(res.correct))), n, delta) > 1e-3
    w_star = np.asarray(jb.design.oracle_allocation(inst.arms, inst.items, inst.theta).allocation)
    pulls = np.asarray(res.pulls).reshape(n, -1).astype(float)
    frac = pulls.sum(0) / pulls.sum()
    assert np.abs(frac - w_star).max() < 0.05, (frac, w_star)
    uniform = simulate(UniformGLR(delta=delta), inst, 0, n_reps=n, max_steps=100_000)
    assert np.mean(np.asarray(res.samples)) < np.mean(np.asarray(uniform.samples))


def test_tracking_computes_its_allocation_once_per_instance():
    """The allocation is solved in prepare (once per instance, not per replication), and a
    G-optimal design needs no parameter: the same pulls on two instances that differ only in theta
    until the stop."""
    inst = _inst()
    alg = compose(sampling.Tracking(sampling.GOptimal(), forced=False), stopping.GLR(), delta=0.1)
    prepared = alg.prepare(jb.stack([inst, inst.replace(theta=inst.theta * 2.0)]))
    w = np.asarray(prepared.cache)
    np.testing.assert_allclose(w[0], w[1])
    np.testing.assert_allclose(w[0], np.asarray(jb.design.g_optimal(inst.arms).allocation), atol=1e-12)
    assert np.asarray(simulate(alg, inst, 0, n_reps=8, max_steps=20_000).stopped).all()


@pytest.mark.parametrize("rule", [sampling.GreedyG(), sampling.GreedyXY()], ids=["G", "XY"])
def test_greedy_design_pulls_with_glr_stop(rule):
    """The greedy G and XY pulls, after one pull of each arm, with seed 000's GLR stop: every run
    stops and the error rate is not above delta (binomial test, 100 replications)."""
    delta, n = 0.1, 100
    inst = jb.seeds.soare_benchmark(2, omega=0.3, theta_scale=1.0)
    res = simulate(compose(sampling.Initial(rule), stopping.GLR(), delta=delta), inst, 0, n_reps=n,
                   max_steps=100_000)
    assert np.asarray(res.stopped).all()
    assert binomial_test_upper(int(np.sum(~np.asarray(res.correct))), n, delta) > 1e-3


def test_greedy_pulls_are_the_brute_force_argmins():
    """At random data, GreedyG's arm is argmax_k ||x_k||^2 in V^-1 and GreedyXY's is
    argmin_x max_j ||z_best - z_j||^2 in (V + x x^T)^-1 over the active j, both computed here
    with explicit inverses (the rules use V^-1 and Sherman-Morrison)."""
    from jaxbandits.algorithms import common
    from jaxbandits.rules.core import Belief, Context

    rng = np.random.default_rng(0)
    X = rng.normal(size=(7, 3))
    Z = rng.normal(size=(5, 3))
    inst = jb.make_instance(X, rng.normal(size=3), 1.0, items=Z)
    for trial in range(6):
        counts = rng.integers(1, 9, size=7).astype(float)
        stats = common.add_counts(common.init_stats(inst), inst, counts, jnp.zeros(7))
        V = np.asarray(stats.gram)
        theta = rng.normal(size=3)
        best = int(np.argmax(Z @ theta))
        active = np.ones(5, bool)
        active[(best + 1 + trial % 4) % 5] = trial % 2 == 0    # a masked challenger half the time
        belief = Belief(stats, jnp.asarray(int(counts.sum()), jnp.int32), jnp.asarray(theta), None,
                        jnp.asarray(np.linalg.inv(V)), jnp.asarray(best, jnp.int32))
        ctx = Context(inst, 0.1, 0.0, 1.0, jnp.asarray(active))
        g, _ = sampling.GreedyG().update((), (), belief, ctx)
        assert int(g) == int(np.argmax(np.einsum("kd,de,ke->k", X, np.linalg.inv(V), X)))
        xy, _ = sampling.GreedyXY().update((), (), belief, ctx)
        Y = [Z[best] - Z[j] for j in range(5) if j != best and active[j]]
        worst = [max(y @ np.linalg.inv(V + np.outer(x, x)) @ y for y in Y) for x in X]
        assert int(xy) == int(np.argmin(worst))


def test_game_rule_with_glr_stop():
    """LinGame's game (AdaHedge against nature's best response, C-tracked) as a rule, after one pull
    of each arm, with seed 000's GLR stop: every run stops and the error rate is not above delta
    (binomial test); without optimism the pulls follow w* = (0.079, 0, 0, 0.921) (within 0.06 per
    arm, as LinGame's own class does on the same keys) and it needs fewer pulls than round robin."""
    delta, n = 0.1, 100
    inst = _inst(theta=(1.0, 0.5), noise=0.5)
    for rule in (sampling.Game(), sampling.Game(optimism=False, clip=False)):
        res = simulate(compose(sampling.Initial(rule), stopping.GLR(), delta=delta), inst, 0, n_reps=n,
                       max_steps=100_000, record_pulls=True)
        assert np.asarray(res.stopped).all()
        assert binomial_test_upper(int(np.sum(~np.asarray(res.correct))), n, delta) > 1e-3
    w_star = np.asarray(jb.design.oracle_allocation(inst.arms, inst.items, inst.theta).allocation)
    pulls = np.asarray(res.pulls).reshape(n, -1).sum(0)
    assert np.abs(pulls / pulls.sum() - w_star).max() < 0.06, (pulls / pulls.sum(), w_star)
    uniform = simulate(UniformGLR(delta=delta), inst, 0, n_reps=n, max_steps=100_000)
    assert np.mean(np.asarray(res.samples)) < 0.7 * np.mean(np.asarray(uniform.samples))
