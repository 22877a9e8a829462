"""Integers that grow (steps, task ids, budgets, pulls, samples, integer hyperparameters) either fit
their 32-bit type for every value the validation accepts, or are refused before anything compiles
with an error naming the argument, its value and the limit 2**31 - 1."""
from __future__ import annotations

import contextlib
import dataclasses
import io
from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbandits as jb
from jaxbandits import engine, programs, validation
from jaxbandits.algorithms import (GSE, LUCB, RAGE, UCBGLM, BayesGap, BudgetCapped, LazyTrackAndStop, LinGapE,
                                   LinUCB, MLinGapE, ODLinBAI, Peace, UniformGLR, XYAdaptive)
from jaxbandits.algorithms.base import Algorithm, Outcome, answer_mask
from jaxbandits.algorithms.fixed_confidence.td_variants import GlobalXYAdaptive
from jaxbandits.engine import RESULTS, simulate
from jaxbandits.engine.results import _counts

LIMIT = 2**31 - 1
ABOVE = (2**31, 2**63)


def inst(K=4):
    return jb.make_instance(np.eye(K), np.linspace(1.0, 0.2, K))


def sim(alg=None, n_reps=2, max_steps=100, instances=None, **kw):
    return lambda: simulate(alg or UniformGLR(), inst() if instances is None else instances, 0, n_reps, max_steps,
                            progress=False, **kw)


def refused(thunk, name: str, value, limit: str = "2147483647") -> str:
    """The thunk raises ValueError naming ``name``, ``value`` and the limit, before compiling."""
    before = (engine.programs_compiled(), len(programs.PREPARED))
    with pytest.raises(ValueError) as info:
        thunk()
    msg = str(info.value)
    assert name in msg and str(value) in msg and limit in msg, msg
    assert (engine.programs_compiled(), len(programs.PREPARED)) == before
    return msg


BUDGETED = {
    "GSE": lambda b: GSE(budget=b),
    "Peace": lambda b: Peace(budget=b),
    "ODLinBAI": lambda b: ODLinBAI(budget=b),
    "BayesGap": lambda b: BayesGap(budget=b),
    "LinUCB": lambda b: LinUCB(budget=b),
    "UCBGLM": lambda b: UCBGLM(budget=b),
    "BudgetCapped": lambda b: BudgetCapped(LinGapE(0.1), b),
}


@pytest.mark.parametrize("name", sorted(BUDGETED))
def test_budget_limit(name):
    """A budget is a number of pulls; pull and sample counts are 32-bit: 1e12 used to run and report
    every replication at 2147483647 samples (a saturated count, with no result code)."""
    for budget in (2**31, 2**63, 10**12, 1e12, 3e9):
        msg = refused(sim(BUDGETED[name](budget)), f"{name}.budget", budget)
        assert msg.startswith(f"{name}.budget must be at most 2**31 - 1")
    validation.check_algorithm(BUDGETED[name](LIMIT))


def test_budget_at_the_limit_runs_exactly():
    """B = 2**31 - 1 is accepted, and its runs spend and report exactly B pulls (no count saturates):
    GSE's sample count is the sum of its per-stage allocations, cast to int32 at the end."""
    refused(sim(GSE(budget=LIMIT + 1, design="uniform")), "GSE.budget", LIMIT + 1)
    res = simulate(GSE(budget=LIMIT, design="uniform"), inst(), 0, 2, 10, progress=False)
    assert (res.samples == LIMIT).all() and (res.pulls.sum(-1) == LIMIT).all()
    assert (res.result == RESULTS.STOPPED).all()


@pytest.mark.parametrize("arg", ["max_steps", "n_reps", "lanes", "chunk_size", "refill_min", "block_steps"])
def test_run_argument_limits(arg):
    for value in ABOVE:
        msg = refused(sim(**{arg: value}), arg, value)
        assert msg.startswith(f"{arg} must be an integer in [1, 2**31 - 1 = 2147483647]")
    if arg != "block_steps":  # simulate's own check (a static trip count), not check_simulate's
        kw = dict(n_reps=2, max_steps=10)
        kw[arg] = LIMIT
        validation.check_simulate(UniformGLR(), inst(), kw.pop("n_reps"), kw.pop("max_steps"), **kw)


def test_max_steps_at_the_limit_runs():
    """The largest step cap accepted runs (steps are int32 and compared with it, never past it); one
    more is refused (it used to be clamped silently)."""
    refused(sim(max_steps=LIMIT + 1), "max_steps", LIMIT + 1)
    res = simulate(UniformGLR(), inst(), 0, 2, LIMIT, progress=False)
    assert res.stopped.all() and (res.result == RESULTS.STOPPED).all()


def test_replication_count_past_int32_task_ids_is_refused():
    """Task ids are int32: n_instances * n_reps must stay within 2**31 - 1 (it used to be refused only
    after ``prepare`` had compiled its programs)."""
    two = jb.stack([inst(), inst()])
    msg = refused(sim(instances=two, n_reps=2**30), "n_reps", 2**30)
    assert "at most 1073741823 with 2 instances" in msg  # the largest n_reps for 2 instances
    validation.check_simulate(UniformGLR(), two, 2**30 - 1, 10)


@pytest.mark.parametrize("alg, field", [
    (lambda v: RAGE(design_iters=v), "RAGE.design_iters"),
    (lambda v: LazyTrackAndStop(period=v), "LazyTrackAndStop.period"),
    (lambda v: LazyTrackAndStop(first_update=v), "LazyTrackAndStop.first_update"),
    (lambda v: LazyTrackAndStop(pause_trips=v if v > LIMIT else 2**31 - 32), "LazyTrackAndStop.pause_trips"),
    (lambda v: XYAdaptive(pulls_per_step=v), "XYAdaptive.pulls_per_step"),
    (lambda v: GlobalXYAdaptive(block=v), "GlobalXYAdaptive.block"),
    (lambda v: UCBGLM(budget=100, tau=v), "UCBGLM.tau"),
    (lambda v: LUCB(m=v), "LUCB.m"),
])
@pytest.mark.parametrize("value", ABOVE)
def test_integer_hyperparameters_past_int32_are_refused(alg, field, value):
    try:
        a = alg(value)
    except ValueError as e:  # refused by the configuration itself: it must say the same
        msg = str(e)
        assert field.split(".")[1] in msg and str(value) in msg, msg
        return
    refused(lambda: validation.check_algorithm(a), field, value)
    validation.check_algorithm(alg(LIMIT))  # the largest value the field accepts (a multiple of 32 for pause_trips)


def test_xy_adaptive_tie_counters_fit_32_bits():
    """XY-adaptive numbers a step's tie-breaking draws k * pulls_per_step + i in uint32: K times
    pulls_per_step past 2**32 would give two arms the same draws, so it is refused."""
    i = inst(4)
    refused(sim(XYAdaptive(pulls_per_step=2**30 + 1), instances=i), "pulls_per_step", 2**30 + 1,
            limit="at most 2**32 / K = 1073741824 with K = 4")
    XYAdaptive(pulls_per_step=2**30).validate(i)


def test_sweep_counts_past_int32_are_refused():
    from jaxbandits.instances import seeds

    gen = jb.Generator("sphere", seeds.unit_sphere, {"dim": [2], "num_arms": [4]})
    for arg in ("n_reps", "max_steps"):
        kw = dict(n_reps=2, max_steps=100, progress=False)
        kw[arg] = 2**31
        refused(lambda: jb.sweep({"U": UniformGLR()}, gen, **kw), arg, 2**31)


@pytest.mark.parametrize("value", [str(2**31), str(2**63)])
def test_cli_reps_past_int32_are_refused(value):
    from experiments._runner import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit):
        main(["seed000_table1", "--reps", value])
    last = err.getvalue().strip().splitlines()[-1]
    assert "--reps" in last and value in last and "2**31" in last, last


# -- counts that could still grow past 2**31 - 1 are reported as lost, never as a wrong number --------
@dataclasses.dataclass(frozen=True)
class Int32Counter(Algorithm):
    """Never stops; an int32 sample count one pull a step, started just below 2**31 - 1 so that a few
    steps wrap it (as a fully sequential algorithm's would after 2**31 steps)."""

    needs_span: ClassVar[bool] = False

    class State(NamedTuple):
        t: jnp.ndarray

    def init(self, key, instance):
        return self.State(jnp.asarray(LIMIT - 2, jnp.int32))

    def step(self, key, state, instance):
        return self.State(state.t + 1)

    def done(self, state):
        return jnp.asarray(False)

    def outcome(self, state, instance):
        return Outcome(answer_mask(0, instance.num_items), state.t, jnp.zeros(instance.num_arms, jnp.int32))


def test_wrapped_int32_count_is_reported_lost():
    """A 32-bit counter that wraps reads negative: reported NON_FINITE at COUNT_LIMIT (it used to be
    clamped to a sample count of 0)."""
    fits = simulate(Int32Counter(), inst(), 0, 2, 2, progress=False)
    assert (fits.samples == LIMIT).all() and (fits.result == RESULTS.CAPPED).all()
    wrapped = simulate(Int32Counter(), inst(), 0, 2, 5, progress=False)
    assert (wrapped.samples == engine.COUNT_LIMIT).all() and (wrapped.result == RESULTS.NON_FINITE).all()
    assert wrapped.summary()["results"]["non_finite"] == 2


def test_counts_host_side():
    x = np.array([0, 5, LIMIT, -(2**31), -1], np.int32)
    np.testing.assert_array_equal(_counts(x), [0, 5, LIMIT, engine.COUNT_LIMIT, engine.COUNT_LIMIT])
    f = np.array([-0.0, 3e9, np.nan, np.inf, 2.0**62])
    np.testing.assert_array_equal(_counts(f), [0, 3_000_000_000] + [engine.COUNT_LIMIT] * 3)


def test_gifa_counts_past_int32_are_not_clamped():
    """GIFA counts pulls in floats (two a step with selection "both"): its outcome keeps them, so a
    count past 2**31 - 1 is reported as it is (it used to be cast to int32, clamped at 2147483647)."""
    i = inst()
    alg = MLinGapE(m=1)
    st = alg.init(jax.random.key(0), i)
    b = st.belief
    b = b._replace(t=jnp.asarray(3e9, b.t.dtype), stats=b.stats._replace(counts=b.stats.counts.at[0].set(3e9)))
    out = alg.outcome(st._replace(belief=b), i)
    assert _counts(out.samples) == 3_000_000_000 and _counts(out.pulls)[0] == 3_000_000_000


def test_global_xy_count_does_not_wrap():
    """GlobalXYAdaptive adds ``block`` pulls a step: its count is a float, so it can pass 2**31 - 1
    without wrapping (an int32 count adding 10 a step could wrap back to a positive number)."""
    i = inst()
    alg = GlobalXYAdaptive(delta=0.1)
    st = alg.init(jax.random.key(0), i)
    st = st._replace(t=jnp.asarray(LIMIT - 5, st.t.dtype))
    st = alg.step(jax.random.key(1), st, i)
    assert _counts(alg.outcome(st, i).samples) == LIMIT - 5 + alg.block


def test_rounded_phase_past_int32_keeps_its_size():
    """RAGE's and XY's phases round n pulls to the arms (``round_design``): in int32 a phase of 3e9
    pulls came out as 2,147,483,647 without a word; the counts are now the default integer (int64
    under x64), exact, and capped at COUNT_LIMIT, where the engine reports the count as lost."""
    from jaxbandits.design import round_design

    lam = jnp.array([0.5, 0.3, 0.2])
    assert round_design(lam, 3e9).tolist() == [1_500_000_000, 900_000_000, 600_000_000]
    assert int(round_design(lam, LIMIT).sum()) == LIMIT
    assert int(round_design(lam, 1e49).sum()) == engine.COUNT_LIMIT
    assert _counts(np.float64(engine.COUNT_LIMIT)) == engine.COUNT_LIMIT
