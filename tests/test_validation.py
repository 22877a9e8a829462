"""Every bad input is refused with a clear error (naming the argument) before anything compiles."""
from __future__ import annotations

import contextlib
import io
import math

import jax
import numpy as np
import pytest

import jaxbandits as jb
from jaxbandits import engine, programs
from jaxbandits.algorithms import FWS, GSE, RAGE, LazyTrackAndStop, LinUCB, MLinGapE, Oracle, TopTwo, UniformGLR
from jaxbandits.engine import simulate
from jaxbandits.instances.base import Instance

ARMS = np.array([[1.0, 0.0], [0.0, 1.0], [0.7071, 0.7071]])
GOOD = dict(arms=ARMS, theta=np.array([1.0, 0.5]))


def inst(theta=(1.0, 0.5), model="gaussian", arms=ARMS):
    return jb.make_instance(arms, theta, model=model)


def raw_instance(theta, model):
    """An instance built without make_instance's checks (as a user's own pytree code could)."""
    a = jax.numpy.asarray(ARMS)
    return Instance(arms=a, items=a, theta=jax.numpy.asarray(theta), noise=jax.numpy.asarray(1.0), model=model)


def sim(alg=None, instances=None, key=0, n_reps=4, max_steps=100, **kw):
    return lambda: simulate(alg or UniformGLR(), inst() if instances is None else instances, key, n_reps,
                            max_steps, **kw)


def tiny_gen(**kw):
    from jaxbandits.instances import seeds

    return jb.Generator("sphere", seeds.unit_sphere, {"dim": [2], "num_arms": [4]}, **kw)


def swp(**kw):
    args = dict(algorithms={"U": UniformGLR()}, generators=tiny_gen(), n_reps=2, progress=False)
    args.update(kw)
    return lambda: jb.sweep(args.pop("algorithms"), args.pop("generators"), **args)


def cli(*argv):
    def run():
        from experiments._runner import main

        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            try:
                main(["seed000_table1", *argv])
            except SystemExit as e:
                raise ValueError(err.getvalue().strip().splitlines()[-1]) from e
        raise AssertionError("the command line accepted " + " ".join(argv))
    return run


def jb_cli(*argv):
    """The jaxbandits command's calibrate subcommand (argparse reports the bad argument and exits)."""
    def run():
        from jaxbandits import cli

        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            try:
                cli.main(["calibrate", "docs/examples/gopt_tracking.py:GOptTracking", *argv])
            except SystemExit as e:
                raise ValueError(err.getvalue().strip().splitlines()[-1]) from e
        raise AssertionError("the jaxbandits command accepted " + " ".join(argv))
    return run


@pytest.fixture(scope="module")
def a_file(tmp_path_factory):
    p = tmp_path_factory.mktemp("v") / "a_file.txt"
    p.write_text("x")
    return str(p)


# (case id, thunk factory taking the temporary file's path, exception type, the argument's name[, the
# value as the message shows it])
CASES = [
    # simulate: the run's own arguments
    ("n_reps negative", lambda f: sim(n_reps=-3), ValueError, "n_reps"),
    ("n_reps zero", lambda f: sim(n_reps=0), ValueError, "n_reps"),
    ("n_reps float", lambda f: sim(n_reps=2.5), TypeError, "n_reps"),
    ("n_reps string", lambda f: sim(n_reps="10"), TypeError, "n_reps"),
    ("max_steps zero", lambda f: sim(max_steps=0), ValueError, "max_steps"),
    ("max_steps float", lambda f: sim(max_steps=1e6), TypeError, "max_steps"),
    ("key string", lambda f: sim(key="0"), TypeError, "key"),
    ("key float", lambda f: sim(key=1.5), TypeError, "key"),
    ("key bool", lambda f: sim(key=True), TypeError, "key"),
    ("key batch of keys", lambda f: sim(key=jax.random.split(jax.random.key(0), 3)), ValueError, "key"),
    ("key seed too large", lambda f: sim(key=2**63), ValueError, "key", str(2**63)),
    ("key wrong array", lambda f: sim(key=np.zeros(3, np.float32)), TypeError, "key"),
    ("lanes zero", lambda f: sim(lanes=0), ValueError, "lanes"),
    ("chunk_size negative", lambda f: sim(chunk_size=-1), ValueError, "chunk_size"),
    ("refill_min zero", lambda f: sim(refill_min=0), ValueError, "refill_min"),
    ("devices empty", lambda f: sim(devices=[]), ValueError, "devices"),
    ("devices not devices", lambda f: sim(devices=["cpu"]), TypeError, "devices"),
    ("devices repeated", lambda f: sim(devices=jax.devices() * 4), ValueError, "devices",
     f"{4 * len(jax.devices())} entries for {len(jax.devices())} distinct"),
    ("tasks out of range", lambda f: sim(tasks=np.array([0, 99])), ValueError, "tasks"),
    ("tasks floats", lambda f: sim(tasks=np.array([0.5])), TypeError, "tasks"),
    ("progress string", lambda f: sim(progress="yes"), TypeError, "progress"),
    ("stall_timeout negative", lambda f: sim(stall_timeout=-1), ValueError, "stall_timeout"),
    ("precision unknown", lambda f: sim(precision="float16"), ValueError, "precision"),
    ("buckets string", lambda f: sim(buckets="pow2"), TypeError, "buckets"),
    ("record_pulls string", lambda f: sim(record_pulls="no"), TypeError, "record_pulls"),
    ("allow_ties string", lambda f: sim(allow_ties="yes"), TypeError, "allow_ties"),
    # simulate: the algorithm
    ("algorithm class", lambda f: sim(alg=UniformGLR), TypeError, "algorithm"),
    ("algorithm string", lambda f: lambda: simulate("RAGE", inst(), 0, 4, 100), TypeError, "algorithm"),
    ("delta string", lambda f: sim(alg=UniformGLR(delta="0.05")), TypeError, "delta"),
    ("delta zero", lambda f: sim(alg=UniformGLR(delta=0.0)), ValueError, "delta"),
    ("delta above one", lambda f: sim(alg=UniformGLR(delta=1.5)), ValueError, "delta"),
    ("delta nan", lambda f: sim(alg=UniformGLR(delta=math.nan)), ValueError, "delta"),
    ("sigma negative", lambda f: sim(alg=UniformGLR(sigma=-1.0)), ValueError, "sigma"),
    ("sigma zero", lambda f: sim(alg=UniformGLR(sigma=0.0)), ValueError, "sigma"),
    ("dynamic field string", lambda f: sim(alg=UniformGLR(u="1")), TypeError, "u"),
    ("budget negative", lambda f: sim(alg=GSE(budget=-10)), ValueError, "budget"),
    ("budget fractional", lambda f: sim(alg=GSE(budget=100.5)), ValueError, "budget"),
    ("m too large", lambda f: sim(alg=MLinGapE(m=5)), ValueError, "m"),
    ("epsilon negative", lambda f: lambda: simulate(MLinGapE(m=1, epsilon=-0.1), inst(), 0, 4, 100),
     ValueError, "epsilon", "-0.1"),
    ("GIFA epsilon negative", lambda f: lambda: MLinGapE(m=2, epsilon=-1e-3), ValueError, "epsilon", "-0.001"),
    ("FWS game_iters zero", lambda f: lambda: FWS(game_iters=0), ValueError, "game_iters", "got 0"),
    ("design_iters zero", lambda f: sim(alg=RAGE(design_iters=0)), ValueError, "design_iters", "got 0"),
    ("design_iters float", lambda f: sim(alg=RAGE(design_iters=2.5)), TypeError, "design_iters", "2.5"),
    ("design_tol negative", lambda f: sim(alg=RAGE(design_tol=-1.0)), ValueError, "design_tol", "-1.0"),
    ("period zero", lambda f: sim(alg=LazyTrackAndStop(period=0)), ValueError, "period", "got 0"),
    ("max_iters negative", lambda f: sim(alg=LazyTrackAndStop(max_iters=-5)), ValueError, "max_iters", "-5"),
    ("u zero", lambda f: sim(alg=UniformGLR(u=0.0)), ValueError, "u must", "0.0"),
    ("S negative", lambda f: sim(alg=MLinGapE(m=1, S=-1.0)), ValueError, "S must", "-1.0"),
    ("max_support zero", lambda f: sim(alg=Oracle(max_support=0)), ValueError, "max_support", "got 0"),
    ("TopTwo beta above one", lambda f: sim(alg=TopTwo(beta=1.5)), ValueError, "beta", "1.5"),
    ("reg negative", lambda f: sim(alg=LinUCB(budget=100, reg=-1.0)), ValueError, "reg", "-1.0"),
    # V_0 = lambda I must be invertible (LinUCB carries V_t^-1; the OFUL radius divides by lambda)
    ("reg zero", lambda f: sim(alg=LinUCB(budget=100, reg=0.0)), ValueError, "reg", "0.0"),
    # simulate: the instances
    ("instances array", lambda f: sim(instances=ARMS), TypeError, "instances"),
    ("bernoulli means outside [0, 1]", lambda f: sim(instances=raw_instance([2.0, -0.5], "bernoulli")),
     ValueError, "instances"),
    ("tied best arms", lambda f: sim(instances=inst(theta=(1.0, 1.0), arms=ARMS[:2])), ValueError, "allow_ties"),
    ("top-m tie at the boundary", lambda f: sim(alg=MLinGapE(m=2), instances=jb.make_instance(
        np.eye(3), [1.0, 0.5, 0.5])), ValueError, "allow_ties"),
    # make_instance
    ("theta of the wrong dimension", lambda f: lambda: jb.make_instance(ARMS, [1.0, 0.0, 0.0]), ValueError, "theta"),
    ("items of the wrong dimension", lambda f: lambda: jb.make_instance(ARMS, [1.0, 0.0], items=np.eye(3)),
     ValueError, "items"),
    ("arms a vector", lambda f: lambda: jb.make_instance([1.0, 2.0], [1.0]), ValueError, "arms"),
    ("noise negative", lambda f: lambda: jb.make_instance(ARMS, [1.0, 0.5], noise=-1.0), ValueError, "noise"),
    ("noise a string", lambda f: lambda: jb.make_instance(ARMS, [1.0, 0.5], noise="1"), TypeError, "noise", "'1'"),
    ("theta with NaN", lambda f: lambda: jb.make_instance(ARMS, [math.nan, 0.5]), ValueError, "theta", "nan"),
    ("arms with inf", lambda f: lambda: jb.make_instance(np.array([[math.inf, 0.0], [0.0, 1.0]]), [1.0, 0.5]),
     ValueError, "arms", "inf"),
    ("items empty", lambda f: lambda: jb.make_instance(ARMS, [1.0, 0.5], items=np.zeros((0, 2))), ValueError,
     "items", "(0, 2)"),
    ("model misspelt", lambda f: lambda: jb.make_instance(ARMS, [1.0, 0.5], model="gausian"), ValueError, "model",
     "'gausian'"),
    ("bernoulli built by make_instance", lambda f: sim(instances=jb.make_instance(ARMS, [2.0, -0.5],
                                                                                  model="bernoulli")),
     ValueError, "instances"),
    # sweep and Generator
    ("sweep n_reps zero", lambda f: swp(n_reps=0), ValueError, "n_reps"),
    ("sweep deltas out of range", lambda f: swp(deltas=[0.05, 2.0]), ValueError, "deltas"),
    ("sweep deltas a number", lambda f: swp(deltas=0.05), TypeError, "deltas"),
    ("sweep key string", lambda f: swp(key="0"), TypeError, "key"),
    ("sweep algorithms empty", lambda f: swp(algorithms={}), TypeError, "algorithms"),
    ("sweep algorithm with bad sigma", lambda f: swp(algorithms={"U": UniformGLR(sigma=-1.0)}), ValueError, "sigma"),
    ("sweep generators wrong type", lambda f: swp(generators="sphere"), TypeError, "generators"),
    ("sweep max_steps zero", lambda f: swp(max_steps=0), ValueError, "max_steps"),
    ("sweep out is a file", lambda f: swp(out=f), ValueError, "out"),
    ("sweep where not callable", lambda f: swp(where=5), TypeError, "where", "5"),
    ("sweep paired a string", lambda f: swp(paired="yes"), TypeError, "paired", "'yes'"),
    ("sweep lower_bound None", lambda f: swp(lower_bound=None), TypeError, "lower_bound", "None"),
    ("Generator n_instances zero", lambda f: lambda: tiny_gen(n_instances=0), ValueError, "n_instances"),
    ("Generator grid not lists", lambda f: lambda: jb.Generator("g", lambda k: None, {"dim": 5}), TypeError, "grid"),
    # the command line
    ("--reps negative", lambda f: cli("--reps", "-3"), ValueError, "--reps"),
    ("--reps zero", lambda f: cli("--reps", "0"), ValueError, "--reps"),
    ("--seed negative", lambda f: cli("--seed", "-1"), ValueError, "--seed"),
    ("--seed not a number", lambda f: cli("--seed", "abc"), ValueError, "--seed"),
    ("--seed too large", lambda f: cli("--seed", str(2**63)), ValueError, "--seed", "2**63"),
    ("--devices zero", lambda f: cli("--devices", "0"), ValueError, "--devices"),
    ("--out is a file", lambda f: cli("--out", f), ValueError, "--out"),
    ("jaxbandits calibrate --reps negative", lambda f: jb_cli("--reps", "-3"), ValueError, "--reps", "-3"),
    ("jaxbandits calibrate --seed not a number", lambda f: jb_cli("--seed", "x"), ValueError, "--seed", "'x'"),
    ("jaxbandits calibrate --max-steps zero", lambda f: jb_cli("--max-steps", "0"), ValueError, "--max-steps", "0"),
    ("jaxbandits calibrate --out is a file", lambda f: jb_cli("--out", f), ValueError, "--out", "a file"),
]


def test_enough_cases():
    assert len(CASES) >= 30
    assert len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_refused_before_compiling(case, a_file):
    _, make, exc, name, *shown = case
    thunk = make(a_file)
    before = (engine.programs_compiled(), len(programs.PREPARED))
    with pytest.raises(exc) as info:
        thunk()
    first = str(info.value).splitlines()[0]
    assert name in first, first
    for value in shown:
        assert value in first, first
    assert (engine.programs_compiled(), len(programs.PREPARED)) == before


def test_int_seed_and_key_give_the_same_run():
    a = simulate(UniformGLR(), inst(), 3, 4, 10_000, progress=False)
    b = simulate(UniformGLR(), inst(), jax.random.key(3), 4, 10_000, progress=False)
    np.testing.assert_array_equal(a.samples, b.samples)


def test_ties_run_when_allowed():
    # two identical best arms; three arms in d = 2, so the program of the test above is reused
    tied = inst(theta=(1.0, 0.5), arms=np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="allow_ties"):
        simulate(UniformGLR(), tied, 0, 2, 50, progress=False)
    res = simulate(UniformGLR(), tied, 0, 2, 50, allow_ties=True, progress=False)
    assert res.samples.shape == (1, 2)


def test_cpu_device_count_is_bounded_by_the_cores():
    """More XLA CPU devices than cores is refused, naming the cores available and what it costs."""
    from jaxbandits import validation

    cores = validation.available_cores()
    assert validation.check_cpu_device_count(cores) == cores
    with pytest.raises(ValueError) as info:
        validation.check_cpu_device_count(cores + 1, override="pass --oversubscribe to run it anyway")
    msg = str(info.value)
    assert msg.startswith(f"--devices must be at most the {cores} CPU core(s)") and f"got {cores + 1}" in msg
    assert "270 s" in msg and msg.endswith("pass --oversubscribe to run it anyway")
    with pytest.raises(ValueError, match="--devices"):
        validation.check_cpu_device_count(0)


def test_a_simulate_call_checks_each_hyperparameter_once(monkeypatch):
    """One implementation (jaxbandits.arguments.check_fields), run once per simulate call: by the
    algorithm's validate; and it names a composition's rule fields by their path."""
    from jaxbandits import arguments
    from jaxbandits.algorithms import base as algorithms_base
    from jaxbandits.algorithms import UniformGLR

    calls = []
    original = arguments.check_fields

    def counting(obj, *args, **kwargs):
        calls.append(type(obj).__name__)
        return original(obj, *args, **kwargs)

    monkeypatch.setattr(algorithms_base, "check_fields", counting)
    from jaxbandits import validation

    monkeypatch.setattr(validation, "check_fields", counting)
    jb.simulate(UniformGLR(delta=0.1), inst(), 0, n_reps=2, max_steps=5)
    assert calls == ["UniformGLR"]
    with pytest.raises(ValueError, match=r"UniformGLR.delta must be a number in \(0, 1\), got 1.5"):
        jb.simulate(UniformGLR(delta=1.5), inst(), 0, n_reps=2, max_steps=5)
