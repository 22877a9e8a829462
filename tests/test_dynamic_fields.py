"""Hyperparameters as traced arguments: a sweep over delta, epsilon, sigma or a
tolerance, a change of n_reps, a resumed task list and more chunks all reuse one compiled program,
and a traced field gives exactly the results of the same value baked into the program."""
import dataclasses
import functools

import jax
import numpy as np
import pytest

import jaxbandits  # noqa: F401
from jaxbandits import engine
from jaxbandits.algorithms import LinUCB, SphereBAI, UniformGLR, XYStatic
from jaxbandits.algorithms.fixed_budget.budget_capped import lingape_budgeted
from jaxbandits.algorithms.fixed_confidence.sphere import sphere_instance
from jaxbandits.algorithms.top_m.gifa import MLinGapE
from jaxbandits.instances import seeds


def static_twin(alg):
    """The same configuration with every field baked into the compiled program (no dynamic
    fields, also in a wrapped algorithm): the reference a traced field must reproduce bit for bit."""
    cls = type(alg)
    twin = dataclasses.dataclass(frozen=True)(type("Static" + cls.__name__, (cls,), {"dynamic_fields": ()}))
    kw = {f.name: getattr(alg, f.name) for f in dataclasses.fields(alg)}
    kw = {k: static_twin(v) if isinstance(v, engine.Algorithm) else v for k, v in kw.items()}
    return twin(**kw)


def _soare():
    return seeds.soare_benchmark(2, omega=0.3)


def _sphere():
    return sphere_instance(jax.random.key(2), jax.numpy.array([1.0, 0.5, 0.2]), num_items=40)


def test_split_dynamic_keeps_none_static_and_nests_wrapped_algorithms():
    static, values = UniformGLR(delta=0.1, sigma=None, u=1).split_dynamic()
    assert set(values) == {"delta", "u"} and static.sigma is None and static.delta is None
    assert values["u"].dtype == np.float64  # u=1 and u=1.0 share a program
    s1, _ = UniformGLR(delta=0.1, sigma=0.5).split_dynamic()
    s2, _ = UniformGLR(delta=0.2, sigma=0.7).split_dynamic()
    assert s1 == s2 and hash(s1) == hash(s2)
    capped = lingape_budgeted(100, 0.1)
    static, values = capped.split_dynamic()
    assert static.inner.delta is None and float(values["inner"]["delta"]) == 0.1
    assert static.with_dynamic(values) == dataclasses.replace(
        capped, budget=values["budget"], inner=dataclasses.replace(capped.inner, **values["inner"]))


def test_delta_epsilon_sigma_sweep_compiles_once():
    inst = _sphere()
    key = jax.random.key(0)
    n0 = engine.programs_compiled()
    stops = {}
    for delta, eps, sigma in [(0.1, 0.3, 0.8), (0.05, 0.35, 0.7), (0.2, 0.4, 0.6), (0.1, 0.3, 0.6)]:
        r = engine.simulate(SphereBAI(epsilon=eps, delta=delta, sigma=sigma), inst, key, 8, 3000)
        assert r.stopped.all()
        stops[delta, eps, sigma] = int(r.samples.max())
    assert engine.programs_compiled() - n0 <= 1  # 0 when an earlier test compiled this program
    assert len(set(stops.values())) == len(stops)  # every traced value reached the kernel
    n1 = engine.programs_compiled()
    engine.simulate(SphereBAI(epsilon=0.25, delta=0.2, sigma=0.9), inst, key, 8, 3000)
    assert engine.programs_compiled() == n1


def test_n_reps_resume_and_chunks_never_recompile():
    inst = _soare()
    alg = UniformGLR(delta=0.2, u=0.7, sigma=0.9)  # the program of the next test's first case
    key = jax.random.key(1)
    kw = dict(chunk_size=32)  # a fixed chunk: 101 replications make four chunks
    full = engine.simulate(alg, inst, key, 16, 3000, **kw)
    n = engine.programs_compiled()
    more = engine.simulate(alg, inst, key, 17, 3000, **kw)
    assert engine.programs_compiled() == n  # n_reps 16 -> 17
    resumed = engine.simulate(alg, inst, key, 40, 3000, tasks=np.arange(30, 40), **kw)
    assert engine.programs_compiled() == n  # a resumed task list
    many = engine.simulate(alg, inst, key, 3 * full.chunk_size + 5, 3000, **kw)
    assert engine.programs_compiled() == n  # four chunks instead of one
    engine.simulate(alg, inst, jax.random.key(5), 16, 3000, **kw)
    assert engine.programs_compiled() == n  # another key
    default = engine.simulate(alg, inst, key, 16, 3000)
    n = engine.programs_compiled()
    engine.simulate(alg, inst, key, 17, 3000)
    engine.simulate(alg, inst, key, 40, 3000, tasks=np.arange(30, 40))
    assert engine.programs_compiled() == n  # the default layout does not follow the task count
    np.testing.assert_array_equal(default.samples, full.samples)
    assert full.lanes == more.lanes == resumed.lanes == many.lanes
    # replication i is the same whatever n_reps, chunk or task list it ran in
    np.testing.assert_array_equal(more.samples[0, :16], full.samples[0])
    np.testing.assert_array_equal(many.samples[0, :17], more.samples[0])
    np.testing.assert_array_equal(resumed.samples[0, 30:40], many.samples[0, 30:40])
    assert resumed.ran.sum() == 10


@pytest.mark.parametrize("alg, make, max_steps", [
    (UniformGLR(delta=0.1, u=0.5, sigma=0.8), _soare, 3000),
    (SphereBAI(epsilon=0.3, delta=0.1, sigma=0.8), _sphere, 3000),
    (MLinGapE(2, delta=0.1, epsilon=0.02, sigma=0.8, reg=0.3), lambda: seeds.topm_classic(omega=1.0), 20000),
    # prepare() solves the design through map_instances, jitted on the static part
    (XYStatic(delta=0.1, sigma=0.8, gamma=1.2, design_tol=1e-3, design_method="paper"), _soare, 80),
    (LinUCB(budget=60, reg=2.0, delta=0.1, theta_norm=1.5), lambda: seeds.static_basis(0.5, d=6), 60),
    (lingape_budgeted(80, 0.1), lambda: seeds.static_basis(0.5, d=6), 80),
], ids=["uniform", "sphere", "m-lingape", "xy-static", "linucb", "capped-lingape"])
def test_traced_fields_reproduce_baked_in_values(alg, make, max_steps):
    """Same key and configuration: the traced program returns bit for bit what a program with the
    values baked in returns (which is what the library computed before they were traced)."""
    inst = make()
    key = jax.random.key(7)
    traced = engine.simulate(alg, inst, key, 12, max_steps)
    baked = engine.simulate(static_twin(alg), inst, key, 12, max_steps)
    assert traced.stopped.any()
    for f in ("samples", "steps", "answer", "pulls", "correct", "stopped"):
        np.testing.assert_array_equal(getattr(traced, f), getattr(baked, f), err_msg=f)


def test_sweep_algorithms_deltas_K_compiles_once_per_algorithm_and_K():
    """3 algorithms x 4 deltas x 2 values of K compile at most 3 x 2
    programs, and running the sweep again compiles none.  (At K = 3, d = 2, the shapes of the
    Soare instance above, the uniform GLR and XY-static are configured as in the tests above, so
    their programs may be compiled already.)"""
    algs = [functools.partial(UniformGLR, u=0.5, sigma=0.8), functools.partial(LinUCB, budget=30),
            functools.partial(XYStatic, sigma=0.8, design_method="paper")]  # the cheapest kernels to compile
    deltas = [0.2, 0.1, 0.05, 0.01]
    insts = {K: seeds.unit_sphere(jax.random.key(K), K, 2) for K in (3, 5)}

    def sweep():
        for make in algs:
            for K, inst in insts.items():
                for delta in deltas:
                    engine.simulate(make(delta=delta), inst, jax.random.key(0), 4, 30)

    from jaxbandits import programs

    # a process deep into the suite may be near the memory-mapping limit, where the engine drops
    # its programs before compiling (jaxbandits.programs): drop them first when the six programs
    # (~1,000 mappings each) could take the process there, and check no release happened in
    # between, so a recompilation here can only be a cache miss
    programs.release_if_high(0.3)
    releases = programs.releases()
    n0 = engine.programs_compiled()
    sweep()
    assert engine.programs_compiled() - n0 <= len(algs) * len(insts)
    n1 = engine.programs_compiled()
    sweep()
    assert programs.releases() == releases
    assert engine.programs_compiled() == n1
