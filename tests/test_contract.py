"""Every algorithm the package exports follows the contract of :mod:`jaxbandits.algorithms.base`.

The algorithms are found, not listed: every :class:`Algorithm` subclass that
``jaxbandits.algorithms`` exports is checked, so the one line that exports a new algorithm also
puts it under these tests (a class whose constructor needs arguments this file cannot guess fails
:func:`test_every_export_is_configured` until :data:`CONFIGS` gets a line).  Each algorithm runs on
a tiny instance of its family (4 arms in R^2; the sphere algorithm on a basis, the logistic ones on
Bernoulli rewards): ``validate`` on the host, then ``prepare``, ``init``, a few ``step``,
``done`` and ``outcome`` vmapped over keys and lowered by ``jit`` (the shapes and dtypes of the
outcome), and the declarations and static/dynamic split the engine compiles with.  Renaming a
configuration does not recompile the engine's program.
"""
from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import pytest

import jaxbandits.algorithms as algorithms_package
from jaxbandits.algorithms.base import Algorithm, Outcome, Wrapper
from jaxbandits.algorithms.fixed_confidence.sphere import sphere_instance
from jaxbandits.instances.base import as_batch, make_instance

X = jnp.array([[1.0, 0.0], [0.0, 1.0], [0.7, 0.7], [-0.3, 0.9]])
GAUSSIAN = make_instance(X, jnp.array([1.0, 0.4]), 0.5)
BERNOULLI = make_instance(X, jnp.array([0.8, 0.3]), 1.0, model="bernoulli")
SPHERE = sphere_instance(jax.random.PRNGKey(0), jnp.array([1.0, 0.3]), num_items=6)
BUDGET = 40
STEPS = 3

#: configurations for the exported algorithms whose constructor needs arguments (the rest run
#: with their defaults), and the instance of their family
CONFIGS = {
    "GIFA": lambda: algorithms_package.GIFA(m=2),
    "LUCB": lambda: algorithms_package.LUCB(2),
    "UGapE": lambda: algorithms_package.UGapE(2),
    "MLinGapE": lambda: algorithms_package.MLinGapE(2),
    "LinGIFA": lambda: algorithms_package.LinGIFA(2),
    "Eliminate": lambda: algorithms_package.Eliminate(algorithms_package.LazyTrackAndStop()),
    "BudgetCapped": lambda: algorithms_package.BudgetCapped(algorithms_package.MLinGapE(2), BUDGET),
}
INSTANCES = {"UCBGLM": BERNOULLI, "SphereBAI": SPHERE}
#: K-armed algorithms run on a K-armed bandit (arms = items = the identity)
KARMED = make_instance(jnp.eye(4), jnp.array([0.8, 0.3, 0.5, 0.2]), 1.0, model="bernoulli")
INSTANCES.update({"KArmedTrackAndStop": KARMED, "SuccessiveElimination": KARMED, "KArmedTopTwo": KARMED, "KArmedKLLUCB": KARMED, "KArmedLUCB1": KARMED, "KArmedLilUCB": KARMED, "SuccessiveRejects": KARMED, "SequentialHalving": KARMED})
#: Gaussian arms only (EB-TCε)
INSTANCES["KArmedEBTCEpsilon"] = make_instance(jnp.eye(4), jnp.array([0.8, 0.3, 0.5, 0.2]), 1.0)


def exported() -> dict[str, type]:
    """Every concrete algorithm class the package exports, by name."""
    return {name: v for name, v in sorted(vars(algorithms_package).items())
            if isinstance(v, type) and issubclass(v, Algorithm) and v not in (Algorithm, Wrapper)}


def configure(cls: type) -> Algorithm:
    if cls.__name__ in CONFIGS:
        return CONFIGS[cls.__name__]()
    required = {f.name for f in dataclasses.fields(cls) if f.init and f.default is dataclasses.MISSING
                and f.default_factory is dataclasses.MISSING}
    return cls(**({"budget": BUDGET} if required == {"budget"} else {}))


def test_every_export_is_configured():
    names = exported()
    assert {"LazyTrackAndStop", "LinGapE", "GIFA", "GSE", "Eliminate", "BudgetCapped"} <= set(names)
    for cls in names.values():
        assert isinstance(configure(cls), cls)


@pytest.mark.parametrize("name", sorted(exported()))
def test_declarations(name):
    """Declared, not guessed: dynamic and integer fields are fields, sigma (where an algorithm has
    it) reaches the kernels traced, display names stay out of the compile key, and the static /
    dynamic split puts the configuration back together."""
    alg = configure(exported()[name])
    fields = {f.name for f in dataclasses.fields(alg)}
    assert set(alg.dynamic_fields) <= fields and set(alg.integer_fields) <= set(alg.dynamic_fields)
    if "sigma" in fields:
        assert "sigma" in alg.dynamic_fields
    if "name" in fields:
        renamed = dataclasses.replace(alg, name=alg.name + " (renamed)")
        assert renamed == alg and hash(renamed) == hash(alg)
    static, values = alg.split_dynamic()
    assert static.with_dynamic(values) == alg
    own = alg.wrapped if isinstance(alg, Wrapper) else alg
    assert alg.top_m == getattr(own, "m", 1) and float(alg.slack) == float(getattr(own, "epsilon", 0.0) or 0.0)
    if alg.released_settings is not None:
        released = alg.released_code()
        assert type(released) is type(alg)
        assert all(getattr(released, k) == v for k, v in alg.released_settings.items())
    if isinstance(alg, Wrapper):
        assert alg.correct_by_construction == alg.wrapped.correct_by_construction


@pytest.mark.parametrize("name", sorted(exported()))
def test_kernels_under_jit_and_vmap(name):
    """``validate`` on the host, then ``prepare``, and ``init``, ``STEPS`` steps, ``done`` and
    ``outcome`` vmapped over keys, lowered by ``jit`` with the dynamic fields as arguments, as the
    engine's program has them (traced and lowered to XLA, not compiled: the compiled runs are the
    engine tests' work): the outcome's shapes and dtypes."""
    alg = configure(exported()[name])
    inst = INSTANCES.get(name, GAUSSIAN)
    alg.validate(inst)
    static, values = alg.split_dynamic()

    def program(keys, values):
        a = static.with_dynamic(values)
        prepared = jax.tree.map(lambda x: x[0], a.prepare(as_batch(inst)))

        def run(key):
            k0, k1 = jax.random.split(key)
            state = a.init(k0, prepared)
            state = jax.lax.fori_loop(0, STEPS, lambda i, s: a.step(jax.random.fold_in(k1, i), s, prepared), state)
            return a.done(state), a.outcome(state, prepared)

        return jax.vmap(run)(keys)

    n = 2
    keys = jax.random.split(jax.random.PRNGKey(1), n)
    done, out = jax.jit(program).lower(keys, values).out_info
    K, M = inst.num_arms, inst.num_items
    assert isinstance(out, Outcome)
    assert done.shape == (n,) and done.dtype == jnp.bool_
    assert out.answer.shape == (n, M) and out.answer.dtype == jnp.bool_
    assert out.samples.shape == (n,) and jnp.issubdtype(out.samples.dtype, jnp.number)
    assert out.pulls.shape == (n, K) and jnp.issubdtype(out.pulls.dtype, jnp.number)


def test_renaming_does_not_recompile():
    """A display name is no part of the engine's compile key: the renamed configuration runs on the
    program compiled for the first (no release of compiled programs in between)."""
    from jaxbandits import engine, programs

    alg = algorithms_package.LinGapE(0.1, name="LinGapE, first name")
    first = engine.simulate(alg, GAUSSIAN, 0, 2, 30)
    releases, n = programs.releases(), engine.programs_compiled()
    second = engine.simulate(dataclasses.replace(alg, name="LinGapE, renamed"), GAUSSIAN, 0, 2, 30)
    assert programs.releases() == releases
    assert engine.programs_compiled() == n
    assert (second.samples == first.samples).all()


def test_result_codes():
    """Every replication gets one code: STOPPED, CAPPED (hit max_steps), NON_FINITE (count lost),
    NOT_CONVERGED (stopped on an uncertified fixed-trip solve), counted in the summary."""
    from jaxbandits import engine

    res = engine.simulate(algorithms_package.LinGapE(0.1), GAUSSIAN, 0, 5, 30)
    assert res.converged.all()                         # LinGapE has no fixed-trip solver
    res.stopped[0, :2] = True
    res.stopped[0, 2:] = False
    res.stopped[0, 4] = True
    res.samples[0, 1] = engine.COUNT_LIMIT
    res.converged[0, 1] = res.converged[0, 2] = res.converged[0, 4] = False
    assert res.result.tolist() == [[engine.RESULTS.STOPPED, engine.RESULTS.NON_FINITE,
                                    engine.RESULTS.CAPPED, engine.RESULTS.CAPPED,
                                    engine.RESULTS.NOT_CONVERGED]]
    assert res.summary()["results"] == {"stopped": 1, "capped": 2, "non_finite": 1, "not_converged": 1}


def test_not_converged_reaches_the_results():
    """FWS's exact matrix game with a one-pivot cap leaves duality gaps: those replications that
    stop are NOT_CONVERGED (Outcome.converged through the engine's lane buffers), and no capped
    or converged one is."""
    from jaxbandits import engine
    from jaxbandits.algorithms.fixed_confidence.fws import EXACT_GAME_GAP

    X5 = jnp.array([[1.0, 0.0], [0.0, 1.0], [0.8, 0.6], [0.6, 0.8], [-0.5, 0.5]])
    inst = make_instance(X5, jnp.array([1.0, 0.9]), 1.0)
    alg = algorithms_package.FWS(delta=0.1, game="exact", game_iters=1, max_active=8)
    res = engine.simulate(alg, inst, 0, 8, 3000)
    states = engine.final_states(alg, inst, jax.random.fold_in(jax.random.key(0), 0), 8, 3000)
    unsolved = jnp.asarray(states.sampling.then.game_gap > EXACT_GAME_GAP)
    assert (res.converged[0] == ~unsolved).all()
    assert ((res.result[0] == engine.RESULTS.NOT_CONVERGED) == (unsolved & res.stopped[0])).all()
    assert (res.result[0] == engine.RESULTS.NOT_CONVERGED).sum() >= 2
